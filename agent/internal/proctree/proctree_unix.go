//go:build unix

package proctree

import (
	"os/exec"
	"syscall"
)

// Tree is a command and the processes it starts.
type Tree struct {
	cmd *exec.Cmd
}

// New prepares cmd, not yet started, to run as the leader of its own
// process group. It replaces cmd.SysProcAttr.
func New(cmd *exec.Cmd) *Tree {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return &Tree{cmd: cmd}
}

// Start starts the command (cmd.Start).
func (t *Tree) Start() error { return t.cmd.Start() }

// Run starts the command and waits for it (cmd.Run).
func (t *Tree) Run() error { return t.cmd.Run() }

// Wait waits for the command (cmd.Wait). What it started and left running
// in its group runs on until Kill.
func (t *Tree) Wait() error { return t.cmd.Wait() }

// Terminate asks every process of the group to stop (SIGTERM).
func (t *Tree) Terminate() error { return t.signal(syscall.SIGTERM) }

// Kill kills every process of the group (SIGKILL).
func (t *Tree) Kill() error { return t.signal(syscall.SIGKILL) }

func (t *Tree) signal(sig syscall.Signal) error {
	if t.cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-t.cmd.Process.Pid, sig)
}
