package marketplace

import (
	"os"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// fillStat records what git's index keeps of a file beyond its time and
// size, as go-git's checkout does.
func fillStat(e *index.Entry, fi os.FileInfo) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.CreatedAt = time.Unix(st.Ctim.Unix())
		e.Dev = uint32(st.Dev)
		e.Inode = uint32(st.Ino)
		e.UID = st.Uid
		e.GID = st.Gid
	}
}

// writeNewFile writes content to the new file p (as createFile makes it)
// and records its stat in e. A file is four system calls here (open,
// write, fstat, close): os.OpenFile adds four fcntl calls and a failed
// epoll registration to each, which at 31,000 files was a second of
// system time.
func writeNewFile(p string, perm os.FileMode, content []byte, e *index.Entry) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, uint32(perm))
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.EEXIST {
		return writeNewFileOS(p, perm, content, e) // see createFile
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: p, Err: err}
	}
	for b := content; len(b) > 0 && err == nil; {
		var n int
		n, err = syscall.Write(fd, b)
		if err == syscall.EINTR {
			err = nil
			continue
		}
		if err == nil && n <= 0 {
			err = syscall.EIO
		}
		if err == nil {
			b = b[n:]
		}
	}
	var st syscall.Stat_t
	if err == nil {
		err = syscall.Fstat(fd, &st)
	}
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: p, Err: err}
	}
	e.ModifiedAt = time.Unix(st.Mtim.Unix())
	e.Size = uint32(st.Size)
	e.CreatedAt = time.Unix(st.Ctim.Unix())
	e.Dev = uint32(st.Dev)
	e.Inode = uint32(st.Ino)
	e.UID = st.Uid
	e.GID = st.Gid
	return nil
}
