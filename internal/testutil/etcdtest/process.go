package etcdtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// memberEnv names the environment variable that turns a test binary into
// one etcd member (see ServeMember).
const memberEnv = "WHARF_ETCDTEST_MEMBER"

// ServeMember makes the calling test a host for one etcd member when the
// test binary was started by StartProcesses, and skips it otherwise. A test
// package that uses StartProcesses declares one such test:
//
//	func TestEtcdMemberProcess(t *testing.T) { etcdtest.ServeMember(t) }
//
// The member runs until the process is killed or its parent goes away
// (its standard input closes).
func ServeMember(t *testing.T) {
	spec := os.Getenv(memberEnv)
	if spec == "" {
		t.Skip("runs only as an etcd member started by etcdtest.StartProcesses")
	}
	var mc memberConfig
	if err := json.Unmarshal([]byte(spec), &mc); err != nil {
		t.Fatalf("etcdtest: member config: %v", err)
	}
	e, err := embed.StartEtcd(mc.embedConfig())
	if err != nil {
		t.Fatalf("etcdtest: member %s: %v", mc.Name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcdtest: member %s: %v", mc.Name, err)
	case <-time.After(startWait):
		t.Fatalf("etcdtest: member %s not ready after %s", mc.Name, startWait)
	}
	fmt.Println("etcdtest-member-ready")
	// Serve until killed, or until the parent is gone.
	io.Copy(io.Discard, os.Stdin)
	e.Close()
}

type process struct {
	cmd   *exec.Cmd
	stdin io.Closer
	done  chan struct{}
}

func (p *process) kill() {
	p.cmd.Process.Kill()
	<-p.done
	p.stdin.Close()
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec.
type syncBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

// StartProcesses starts an n-member cluster, each member in a child process
// running this test binary's hostTest (a test that calls ServeMember), so
// that Stop can kill a member with SIGKILL. Members keep fsync on.
func StartProcesses(t *testing.T, n int, hostTest string) *Cluster {
	t.Helper()
	var lastErr error
	for try := 0; try < 3; try++ {
		c, err := startProcesses(t, n, hostTest)
		if err == nil {
			return c
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("etcdtest: start %d member processes: %v", n, lastErr)
	return nil
}

func startProcesses(t *testing.T, n int, hostTest string) (*Cluster, error) {
	c, cfgs, err := layout(t, n)
	if err != nil {
		return nil, err
	}
	c.hostTest = hostTest
	ready := make(chan error, n)
	for i, m := range c.Members {
		m.cfg = cfgs[i]
		if err := m.spawn(hostTest, ready); err != nil {
			c.stopAll()
			return nil, err
		}
	}
	t.Cleanup(c.stopAll)
	deadline := time.After(startWait)
	for range n {
		select {
		case err := <-ready:
			if err != nil {
				c.stopAll()
				return nil, err
			}
		case <-deadline:
			c.stopAll()
			return nil, fmt.Errorf("members not ready after %s", startWait)
		}
	}
	return c, nil
}

// spawn starts the member's process; ready gets nil once it serves, or an
// error with its output if it exits before.
func (m *Member) spawn(hostTest string, ready chan<- error) error {
	spec, err := json.Marshal(m.cfg)
	if err != nil {
		return err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+hostTest+"$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), memberEnv+"="+string(spec))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("member %s: %w", m.Name, err)
	}
	p := &process{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	m.proc = p
	name := m.Name
	go func() {
		sc := bufio.NewScanner(stdout)
		var out strings.Builder
		seen := false
		for sc.Scan() {
			if !seen && sc.Text() == "etcdtest-member-ready" {
				seen = true
				ready <- nil
			}
			out.WriteString(sc.Text() + "\n")
		}
		err := cmd.Wait()
		close(p.done)
		if !seen {
			stderr.mu.Lock()
			ready <- fmt.Errorf("member %s exited before it was ready (%v):\n%s%s", name, err, out.String(), stderr.String())
			stderr.mu.Unlock()
		}
	}()
	return nil
}

// Restart starts a stopped member of a StartProcesses cluster again on its
// data and ports, and waits until it serves (which needs a quorum).
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	m := c.Members[i]
	if m.Running() {
		c.t.Fatalf("etcdtest: restart %s: it is running", m.Name)
	}
	if c.hostTest == "" {
		c.t.Fatalf("etcdtest: restart %s: only members started by StartProcesses can restart", m.Name)
	}
	ready := make(chan error, 1)
	if err := m.spawn(c.hostTest, ready); err != nil {
		c.t.Fatalf("etcdtest: restart: %v", err)
	}
	select {
	case err := <-ready:
		if err != nil {
			c.t.Fatalf("etcdtest: restart: %v", err)
		}
	case <-time.After(startWait):
		c.t.Fatalf("etcdtest: restart %s: not ready after %s", m.Name, startWait)
	}
}
