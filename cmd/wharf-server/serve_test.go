package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type servedWharf struct {
	cmd    *exec.Cmd
	info   serveInfo
	stderr *lockedBuffer
}

// lockedBuffer is the server's stderr as exec copies it, in a goroutine of
// its own, while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// stderrHas reports whether the server wrote sub on stderr. The server
// writes stderr before the line on stdout that launch waits for, but the
// two pipes are copied apart, so the text may still be on its way.
func (s *servedWharf) stderrHas(sub string) bool {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if strings.Contains(s.stderr.String(), sub) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// startServe runs wharf-server as a real process on a free loopback port
// and waits for the line it prints once it listens.
func startServe(t *testing.T, home string, env ...string) *servedWharf {
	t.Helper()
	demo, err := filepath.Abs(filepath.Join("..", "..", "testdata", "demo-marketplace"))
	if err != nil {
		t.Fatal(err)
	}
	return launch(t, home, []string{"--demo", demo}, env)
}

// launch runs wharf-server with args and env on a free loopback port, and
// waits for the line it prints once it listens.
func launch(t *testing.T, home string, args, env []string) *servedWharf {
	t.Helper()
	cmd := exec.Command(serverBinary(t), append([]string{"--json", "--addr", "127.0.0.1:0", "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), append([]string{"WHARF_HOME=" + home, "WHARF_BOOTSTRAP_TOKEN="}, env...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &servedWharf{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	if err := json.NewDecoder(bufio.NewReader(stdout)).Decode(&s.info); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("wharf-server did not start: %v\n%s", err, s.stderr)
	}
	go io.Copy(io.Discard, stdout)
	return s
}

// stop sends SIGTERM and requires a clean exit.
func (s *servedWharf) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wharf-server after SIGTERM: %v\n%s", err, s.stderr)
		}
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Fatal("wharf-server did not stop after SIGTERM")
	}
}

func httpGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// runServer runs wharf-server with args to its end.
func runServer(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	return runBinary(t, serverBinary(t), home, args...)
}

// runWharf runs the client, wharf, as an admin would against the server.
func runWharf(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	return runBinary(t, clientBinary(t), home, args...)
}

func runBinary(t *testing.T, bin, home string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "WHARF_HOME="+home, "WHARF_TOKEN=", "WHARF_SERVER=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestServeFirstStartTokensAndRestart(t *testing.T) {
	home := t.TempDir()
	s := startServe(t, home)
	admin := s.info.AdminToken
	if admin == "" || !s.stderrHas(admin) {
		t.Fatalf("first start must show the admin token once: %+v\n%s", s.info, s.stderr)
	}
	if s.info.Demo != "demo" {
		t.Fatalf("demo marketplace not registered: %+v\n%s", s.info, s.stderr)
	}
	code, body := httpGet(t, s.info.URL+"/v1/plugins?q=deploy", admin)
	if code != 200 || !strings.Contains(body, "@demo") {
		t.Fatalf("catalog after first start: %d %s", code, body)
	}

	// wharf token create, as a CLI user would.
	code, out, errOut := runWharf(t, home, "token", "create", "--role", "agent", "--server", s.info.URL, "--token", admin, "--json")
	var created struct {
		ID    string `json:"id"`
		Role  string `json:"role"`
		Token string `json:"token"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.Role != "agent" || created.Token == "" {
		t.Fatalf("token create: %d %s %s", code, out, errOut)
	}
	if code, _ := httpGet(t, s.info.URL+"/v1/policy/bundle", created.Token); code != 200 {
		t.Fatalf("agent token on the bundle: %d", code)
	}
	if code, _ := httpGet(t, s.info.URL+"/v1/audit", created.Token); code != 403 {
		t.Fatalf("agent token on the audit log: %d", code)
	}
	// An agent token cannot create tokens: the server refuses the
	// credentials (exit 6).
	code, _, errOut = runWharf(t, home, "token", "create", "--role", "admin", "--server", s.info.URL, "--token", created.Token)
	if code != 6 || !strings.Contains(errOut, "403") {
		t.Fatalf("token create with an agent token: exit %d %s", code, errOut)
	}
	code, _, errOut = runWharf(t, home, "token", "create", "--role", "ci", "--server", s.info.URL)
	if code != 2 || !strings.Contains(errOut, "WHARF_TOKEN") {
		t.Fatalf("token create without a token: exit %d %s", code, errOut)
	}

	s.stop(t)

	// A restart keeps tokens and the catalog, shows no token, adds no
	// second demo.
	s = startServe(t, home)
	if s.info.AdminToken != "" || strings.Contains(s.stderr.String(), "wharf_") || s.info.Demo != "" {
		t.Fatalf("second start revealed or re-created state: %+v\n%s", s.info, s.stderr)
	}
	if code, _ := httpGet(t, s.info.URL+"/v1/policy", created.Token); code != 200 {
		t.Fatalf("agent token after restart: %d", code)
	}
	code, body = httpGet(t, s.info.URL+"/v1/marketplaces", admin)
	if code != 200 || strings.Count(body, `"name":"demo"`) != 1 {
		t.Fatalf("marketplaces after restart: %d %s", code, body)
	}
	s.stop(t)
}

func TestServeBootstrapTokenFromEnv(t *testing.T) {
	secret := "env-bootstrap-token-0123456789"
	s := startServe(t, t.TempDir(), "WHARF_BOOTSTRAP_TOKEN="+secret)
	if s.info.AdminToken != "" || strings.Contains(s.stderr.String(), secret) {
		t.Fatalf("a bootstrap token from the environment must not be printed: %+v", s.info)
	}
	if code, _ := httpGet(t, s.info.URL+"/v1/tokens", secret); code != 200 {
		t.Fatalf("bootstrap token: %d", code)
	}
	s.stop(t)
}
