package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/crypto/ssh"

	"github.com/wharfhq/wharf/internal/core/store"
)

// TestMain lets scripts run `wharf` as a real subprocess of this binary.
func TestMain(m *testing.M) {
	os.Exit(testscript.RunMain(cleanupRun{m}, map[string]func() int{
		"wharf": func() int { return runInTest(os.Args[1:], os.Stdout, os.Stderr) },
	}))
}

// runInTest runs one wharf invocation in this test binary: it never starts
// the binary as a background report. Its system managed directory is
// WHARF_TEST_SYSTEM_MANAGED_DIR, else one that does not exist, as in every
// Go test binary (settings.SystemManagedDir).
func runInTest(args []string, stdout, stderr io.Writer) int {
	return runIn(process{noBackgroundReports: true}, args, stdout, stderr)
}

// cleanupRun runs the tests, then removes the binaries built once for the
// whole run, which live outside any test's TempDir.
type cleanupRun struct{ m *testing.M }

func (c cleanupRun) Run() int {
	code := c.m.Run()
	for _, bin := range []string{buildOnce.bin, releaseOnce.bin, mcpServerOnce.bin} {
		if bin != "" {
			os.RemoveAll(filepath.Dir(bin))
		}
	}
	return code
}

// TestScripts runs the CLI flows in testdata/script/*.txtar.
//
// Extra script commands:
//
//	mkgitrepo <dir>          make <dir> a git repository and commit all of it
//	gitcommit <dir> <msg>    commit every change in <dir>
//	serve <dir>              serve <dir> over HTTP on 127.0.0.1; sets $SERVER_URL
//	holdstore                hold $WHARF_HOME/state.db locked until the script ends
//	exitcode <n> <cmd> ...   run <cmd> and require exit code <n>; stdout/stderr are kept for checks
//	gitserver <dir>          serve the bare repositories under <dir> over git's HTTP protocol on 127.0.0.1, /r/X redirecting to /git/X; sets $GIT_URL
//	bareclone <src> <dst>    make <dst> a bare clone of the repository <src>
//	expandenv <file>         replace $VAR and ${VAR} in <file> with the script's environment
//	silentserver             a TCP server on 127.0.0.1 that accepts and never answers; sets $SILENT_ADDR
//	stallserver              an HTTP server on 127.0.0.1 that sends headers, then stalls; sets $STALL_URL
//	sshkey                   a throwaway ssh key in $HOME/.ssh/id_ed25519 and an empty $HOME/.ssh/known_hosts
//	html404server            an HTTP server on 127.0.0.1 that answers every request with a 404 HTML page; sets $HTML404_URL
//	wharfserver [<file>]     a real wharf server on 127.0.0.1 with no marketplace (GitHub host: $GIT_URL) whose layer "org" holds the settings in <file>, if named; sets $WHARF_SERVER_URL and $ADMIN_TOKEN
//	stopwharfserver          stop the last one started: it no longer answers
//
// Scripts see $DEMO, the repository's demo marketplace.
func TestScripts(t *testing.T) {
	demo, err := filepath.Abs(filepath.Join("..", "..", "testdata", "demo-marketplace"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: false,
		Setup: func(env *testscript.Env) error {
			env.Setenv("WHARF_HOME", filepath.Join(env.WorkDir, ".wharf"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "userhome"))
			env.Setenv("DEMO", demo)
			env.Setenv("WHARF_MANAGED_DIR", filepath.Join(env.WorkDir, "managed"))
			env.Setenv("GITHUB_TOKEN", "")
			env.Setenv("GH_TOKEN", "")
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("GIT_AUTHOR_NAME", "wharf test")
			env.Setenv("GIT_AUTHOR_EMAIL", "test@wharf.example")
			env.Setenv("GIT_COMMITTER_NAME", "wharf test")
			env.Setenv("GIT_COMMITTER_EMAIL", "test@wharf.example")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkgitrepo":       cmdMkGitRepo,
			"gitcommit":       cmdGitCommit,
			"serve":           cmdServe,
			"holdstore":       cmdHoldStore,
			"exitcode":        cmdExitCode,
			"silentserver":    cmdSilentServer,
			"stallserver":     cmdStallServer,
			"html404server":   cmdHTML404Server,
			"sshkey":          cmdSSHKey,
			"gitserver":       cmdGitServer,
			"bareclone":       cmdBareClone,
			"expandenv":       cmdExpandEnv,
			"wharfserver":     cmdWharfServer,     // wharfserver_script_test.go
			"stopwharfserver": cmdStopWharfServer, // wharfserver_script_test.go
		},
	})
}

func gitIn(ts *testscript.TestScript, dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HOME="+ts.Getenv("HOME"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=wharf test", "GIT_AUTHOR_EMAIL=test@wharf.example",
		"GIT_COMMITTER_NAME=wharf test", "GIT_COMMITTER_EMAIL=test@wharf.example")
	out, err := cmd.CombinedOutput()
	if err != nil {
		ts.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func cmdMkGitRepo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkgitrepo <dir>")
	}
	dir := ts.MkAbs(args[0])
	gitIn(ts, dir, "init", "-q", "-b", "main")
	gitIn(ts, dir, "add", "-A")
	gitIn(ts, dir, "commit", "-q", "-m", "initial")
}

func cmdGitCommit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: gitcommit <dir> <message>")
	}
	dir := ts.MkAbs(args[0])
	gitIn(ts, dir, "add", "-A")
	gitIn(ts, dir, "commit", "-q", "-m", args[1])
}

func cmdServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: serve <dir>")
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(ts.MkAbs(args[0]))))
	ts.Defer(srv.Close)
	ts.Setenv("SERVER_URL", srv.URL)
}

func cmdHoldStore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: holdstore")
	}
	b, err := store.OpenBolt(filepath.Join(ts.Getenv("WHARF_HOME"), "state.db"), store.Options{LockTimeout: 10 * time.Second})
	ts.Check(err)
	ts.Defer(func() { b.Close() })
}

func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode <n> <command> [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

func cmdSSHKey(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: sshkey")
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	ts.Check(err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	ts.Check(err)
	dir := filepath.Join(ts.Getenv("HOME"), ".ssh")
	ts.Check(os.MkdirAll(dir, 0o700))
	ts.Check(os.WriteFile(filepath.Join(dir, "id_ed25519"), pem.EncodeToMemory(block), 0o600))
	ts.Check(os.WriteFile(filepath.Join(dir, "known_hosts"), nil, 0o600))
}

func cmdSilentServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: silentserver")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or written
			mu.Unlock()
		}
	}()
	ts.Defer(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	ts.Setenv("SILENT_ADDR", ln.Addr().String())
}

func cmdStallServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: stallserver")
	}
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", "1000000")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("PK"))
		w.(http.Flusher).Flush()
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	ts.Defer(func() {
		close(done)
		srv.Close()
	})
	ts.Setenv("STALL_URL", srv.URL)
}

func cmdHTML404Server(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: html404server")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("<!DOCTYPE html>\n<html><head><title>Page not found</title><style>body{font:14px sans-serif}</style></head>\n<body><h1>404</h1><p>This is not the page you are looking for.</p></body></html>\n"))
	}))
	ts.Defer(srv.Close)
	ts.Setenv("HTML404_URL", srv.URL)
}
