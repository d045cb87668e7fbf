package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// releaseOnce builds wharf as a release is built: without the
// wharf_testhooks tag.
var releaseOnce struct {
	sync.Once
	bin string
	err error
}

func releaseBinary(t *testing.T) string {
	t.Helper()
	releaseOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wharf-release-")
		if err != nil {
			releaseOnce.err = err
			return
		}
		releaseOnce.bin = filepath.Join(dir, "wharf")
		out, err := exec.Command("go", "build", "-o", releaseOnce.bin, ".").CombinedOutput()
		if err != nil {
			releaseOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if releaseOnce.err != nil {
		t.Fatal(releaseOnce.err)
	}
	return releaseOnce.bin
}

// In a release build nothing a user controls moves the system managed
// directory: not the variable the test builds read
// (WHARF_TEST_SYSTEM_MANAGED_DIR), not a look-alike variable, not a key in
// $WHARF_HOME/config.json. Pointed at an empty directory, any of them would
// drop the administrator's policy. The same inputs given to a binary built
// with the test hooks do move it, so the test sees the difference.
func TestReleaseBuildManagedDirCannotBeMoved(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the wharf binary twice")
	}
	rel := releaseBinary(t)
	elsewhere := t.TempDir()
	writeFile(t, filepath.Join(elsewhere, "managed-settings.json"), `{"blockedMarketplaces":[{"source":"pathPattern","pathPattern":".*/corp$"}]}`)
	corp := localMarketplace(t, t.TempDir(), "corp")
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.json"), `{"managed-dir": "`+elsewhere+`", "system-managed-dir": "`+elsewhere+`", "managedDir": "`+elsewhere+`"}`)
	env := []string{"WHARF_HOME=" + home, "HOME=" + filepath.Join(home, "userhome"), "WHARF_INVENTORY_INTERVAL=off",
		"WHARF_TEST_SYSTEM_MANAGED_DIR=" + elsewhere, "WHARF_SYSTEM_MANAGED_DIR=" + elsewhere, "WHARF_MANAGED_DIR=", "WHARF_POLICY_URL=", "WHARF_TOKEN="}
	runBin := func(bin string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	check := []string{"policy", "check", "--source", `{"source":"directory","path":"` + corp + `"}`, "tool@corp"}

	code, out := runBin(wharfBinary(t), check...)
	if code != 3 || !strings.Contains(out, "managed ("+elsewhere+")") {
		t.Fatalf("control: the test build did not read the directory it was pointed at: exit %d\n%s", code, out)
	}

	code, out = runBin(rel, check...)
	if strings.Contains(out, elsewhere) {
		t.Fatalf("a release build read the managed directory a user named: exit %d\n%s", code, out)
	}
	code, out = runBin(rel, "policy", "--help")
	if runtime.GOOS == "linux" && (code != 0 || !strings.Contains(out, "system managed directory (/etc/wharf)")) {
		t.Fatalf("a release build's system managed directory is not /etc/wharf: exit %d\n%s", code, out)
	}
}
