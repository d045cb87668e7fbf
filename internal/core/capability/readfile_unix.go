//go:build unix

package capability

import (
	"io"
	"io/fs"
	"syscall"
)

// readFile is readFilePlain in the system calls it needs and no others:
// open, fstat, read until the size fstat gave, close. An *os.File costs
// more than its reads here: on Linux os.Open sets the descriptor
// non-blocking, tries to add it to the poller and sets it back (three
// more calls per file), and allocates the File and its finalizer. The
// errors are the ones package os would return (a *fs.PathError with the
// same operation, path and errno; io.EOF and io.ErrUnexpectedEOF for a
// file shorter than its stat said).
func readFile(name string, max int64, alloc func(int) []byte) fileText {
	var ft fileText
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		ft.openErr = &fs.PathError{Op: "open", Path: name, Err: err}
		return ft
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	for {
		err = syscall.Fstat(fd, &st)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		ft.statErr = &fs.PathError{Op: "stat", Path: name, Err: err}
		return ft
	}
	ft.regular, ft.exec, ft.size = st.Mode&syscall.S_IFMT == syscall.S_IFREG, st.Mode&0o111 != 0, st.Size
	if !ft.regular || ft.size > max {
		return ft
	}
	data := alloc(int(ft.size))
	for n := 0; n < len(data); {
		m, err := syscall.Read(fd, data[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			ft.readErr = &fs.PathError{Op: "read", Path: name, Err: err}
			return ft
		}
		if m == 0 {
			ft.readErr = io.ErrUnexpectedEOF
			if n == 0 {
				ft.readErr = io.EOF
			}
			return ft
		}
		n += m
	}
	ft.read, ft.data = true, data
	return ft
}
