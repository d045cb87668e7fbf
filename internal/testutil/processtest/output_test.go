package processtest

import (
	"context"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

func TestOutputExitCodeAndStreams(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	script := "echo out; echo err >&2; exit 3"
	build := func(ctx context.Context) *exec.Cmd { return exec.CommandContext(ctx, "sh", "-c", script) }
	out, code := Output(t, time.Minute, false, build)
	if code != 3 || out != "out\n" {
		t.Errorf("stdout only: %q exit %d, want \"out\\n\" exit 3", out, code)
	}
	out, code = Output(t, time.Minute, true, build)
	if code != 3 || out != "out\nerr\n" {
		t.Errorf("with stderr: %q exit %d", out, code)
	}
}
