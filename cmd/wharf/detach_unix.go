//go:build !windows

package main

import (
	"os/exec"
	"syscall"
)

// detach makes cmd a process of its own session: a terminal's signals
// (Ctrl-C, hang-up) that end the command do not end it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
