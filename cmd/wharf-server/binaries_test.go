package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// binDir holds the binaries built once for the whole run.
var binDir struct {
	sync.Once
	dir string
	err error
}

// builds holds one build per package, made on first use.
var builds sync.Map // package dir → *build

type build struct {
	sync.Once
	bin string
	err error
}

// binary builds the command in pkgDir (relative to this package) once per
// test run and returns its path.
func binary(t *testing.T, pkgDir, name string) string {
	t.Helper()
	binDir.Do(func() { binDir.dir, binDir.err = os.MkdirTemp("", "wharf-server-bin-") })
	if binDir.err != nil {
		t.Fatal(binDir.err)
	}
	v, _ := builds.LoadOrStore(pkgDir, &build{})
	b := v.(*build)
	b.Do(func() {
		b.bin = filepath.Join(binDir.dir, name)
		out, err := exec.Command("go", "build", "-o", b.bin, pkgDir).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkgDir, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// serverBinary is this command, built.
func serverBinary(t *testing.T) string { return binary(t, ".", "wharf-server") }

// clientBinary is cmd/wharf, built: the admin's client of the server.
func clientBinary(t *testing.T) string { return binary(t, "../wharf", "wharf") }

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir.dir != "" {
		os.RemoveAll(binDir.dir)
	}
	os.Exit(code)
}

// The server command's help names what it serves, its flags, and where the
// client commands went; --version prints the version; an argument (such as
// the old `wharf serve`'s "serve") is a usage error that says so.
func TestServerHelpVersionAndArgs(t *testing.T) {
	code, out, errOut := runServer(t, t.TempDir(), "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"wharf-server [--addr", "web console", "--addr", "--data", "--store", "--etcd-cacert", "--trusted-key", "--home", "--json", "wharf token create", "policy pull"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %q:\n%s", want, out)
		}
	}
	code, out, _ = runServer(t, t.TempDir(), "--version")
	if code != 0 || !strings.HasPrefix(out, "wharf-server ") {
		t.Fatalf("--version: exit %d %q", code, out)
	}
	code, out, errOut = runServer(t, t.TempDir(), "serve", "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errOut, `takes no arguments`) || strings.Contains(out, "serving on") {
		t.Fatalf("wharf-server serve: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, _, errOut = runServer(t, t.TempDir(), "--json", "--log-level", "loud")
	if code != 2 || !strings.Contains(errOut, `"type":"usage"`) || !strings.Contains(errOut, "debug, info, warn or error") {
		t.Fatalf("--json with a bad --log-level: exit %d\n%s", code, errOut)
	}
}

// Boolean flags read as "--json" in the help, not "--json[=true|false]".
func TestServerHelpPlainBools(t *testing.T) {
	code, out, _ := runServer(t, t.TempDir(), "--help")
	if code != 0 || strings.Contains(out, "[=true|false]") || !strings.Contains(out, "--json ") {
		t.Fatalf("--help: exit %d\n%s", code, out)
	}
}
