//go:build linux

package trust

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// statBuf stats recorded paths relative to an open descriptor of the root,
// into one reused buffer, comparing without building an os.FileInfo: this is
// the cache-only startup path, where path lookups dominate. Statting relative
// to the root saves resolving the root's own path for every entry (about
// half the cost in measurements).
type statBuf struct {
	st   unix.Stat_t
	root int
	path [pathBuf]byte
}

// pathBuf bounds the relative paths stat'ed without an allocation; longer
// ones are stat'ed the ordinary way.
const pathBuf = 512

func (b *statBuf) open(root string) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	b.root = fd
	return nil
}

func (b *statBuf) close() { unix.Close(b.root) }

func (b *statBuf) same(rel string, e *FPEntry) bool {
	if err := fstatatRel(b.root, rel, &b.path, &b.st); err != nil {
		return false
	}
	st := &b.st
	return int64(st.Size) == e.Size && int64(st.Mtim.Sec)*1e9+int64(st.Mtim.Nsec) == e.Mtime && unixMode(st.Mode) == e.Mode &&
		(e.Ctime == 0 || int64(st.Ctim.Sec)*1e9+int64(st.Ctim.Nsec) == e.Ctime)
}

// ctimeOf is the inode change time of an lstat result, in Unix nanoseconds.
func ctimeOf(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec)
	}
	return 0
}

// unixMode converts st_mode to fs.FileMode the way package os does.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
