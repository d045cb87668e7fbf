//go:build windows

package proctree

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Tree is a command and the processes it starts.
type Tree struct {
	cmd *exec.Cmd

	mu sync.Mutex
	// job holds the command's processes from Start until Wait; it is 0
	// otherwise, and when the command could not be put in a job (then Kill
	// ends the command alone).
	job windows.Handle
}

// New prepares cmd, not yet started, to be created suspended, so that Start
// puts it in its job before it can start anything that would escape it.
func New(cmd *exec.Cmd) *Tree {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
	return &Tree{cmd: cmd}
}

// Start starts the command suspended, puts it in a new job object whose
// processes all end when the job's last handle is closed
// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE), and lets it run. A process that
// cannot be put in a job (a job that forbids it) runs without one, and
// Kill then ends it alone.
func (t *Tree) Start() error {
	job, err := newJob()
	if err != nil {
		return fmt.Errorf("create a job object for %s: %w", t.cmd.Path, err)
	}
	t.mu.Lock()
	if err := t.cmd.Start(); err != nil {
		t.mu.Unlock()
		windows.CloseHandle(job)
		return err
	}
	pid := uint32(t.cmd.Process.Pid)
	if err := assign(job, pid); err != nil {
		windows.CloseHandle(job)
		job = 0
	}
	t.job = job
	err = resume(pid)
	if err != nil {
		t.kill()
	}
	t.mu.Unlock()
	if err != nil {
		t.Wait()
		return fmt.Errorf("resume %s after putting it in its job: %w", t.cmd.Path, err)
	}
	return nil
}

// Run starts the command and waits for it.
func (t *Tree) Run() error {
	if err := t.Start(); err != nil {
		return err
	}
	return t.Wait()
}

// Wait waits for the command, then closes its job, which ends every process
// the command left running in it.
func (t *Tree) Wait() error {
	err := t.cmd.Wait()
	t.mu.Lock()
	if t.job != 0 {
		windows.CloseHandle(t.job)
		t.job = 0
	}
	t.mu.Unlock()
	return err
}

// Terminate is Kill: Windows has no signal that asks a whole tree to stop.
func (t *Tree) Terminate() error { return t.Kill() }

// Kill ends every process of the job (TerminateJobObject).
func (t *Tree) Kill() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.kill()
}

func (t *Tree) kill() error {
	switch {
	case t.job != 0:
		return windows.TerminateJobObject(t.job, 1)
	case t.cmd.Process != nil:
		return t.cmd.Process.Kill()
	}
	return nil
}

// newJob creates an unnamed job object whose processes are all ended when
// its last handle is closed, so not even a crash of wharf leaves them.
func newJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

// assign puts the process pid in job. The process is suspended and this
// process holds a handle to it (in exec.Cmd), so pid names it still.
func assign(job windows.Handle, pid uint32) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.AssignProcessToJobObject(job, h)
}

// resume resumes the threads of the suspended process pid: its one main
// thread (os/exec closes the thread handle CreateProcess returns, so the
// thread is found in a snapshot of the system's threads).
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return err
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return err
	}
	if resumed == 0 {
		return fmt.Errorf("no thread of process %d found", pid)
	}
	return nil
}
