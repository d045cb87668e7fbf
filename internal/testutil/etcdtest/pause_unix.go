//go:build unix

package etcdtest

import "syscall"

// Pause stops member i's process with SIGSTOP: its connections stay open
// and it answers nothing, as a hung machine or a stalled disk would leave
// it. Resume continues it; a paused member is killed like any other when
// the test ends. Only members of a StartProcesses cluster can be paused.
func (c *Cluster) Pause(i int) { c.signal(i, syscall.SIGSTOP) }

// Resume continues a member stopped by Pause.
func (c *Cluster) Resume(i int) { c.signal(i, syscall.SIGCONT) }

func (c *Cluster) signal(i int, sig syscall.Signal) {
	c.t.Helper()
	m := c.Members[i]
	if m.proc == nil {
		c.t.Fatalf("etcdtest: signal %s: only a running member of StartProcesses has a process", m.Name)
	}
	if err := m.proc.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("etcdtest: signal %s: %v", m.Name, err)
	}
}
