package processtest

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Output runs the command build returns, bounded by timeout, and returns
// what it printed on stdout (with stderr when stderr is set) and its exit
// code. A command that cannot start or outlives the timeout fails the test,
// naming its arguments and what it printed.
func Output(t testing.TB, timeout time.Duration, stderr bool, build func(ctx context.Context) *exec.Cmd) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := build(ctx)
	var out strings.Builder
	cmd.Stdout = &out
	if stderr {
		cmd.Stderr = &out
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee) && ctx.Err() == nil:
		return out.String(), ee.ExitCode()
	default:
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out.String())
		return "", -1
	}
}
