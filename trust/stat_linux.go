//go:build linux

package trust

import (
	"io/fs"
	"syscall"
)

// statBuf stats paths with syscall.Lstat into one reused buffer and compares
// without building an os.FileInfo: this is the cache-only startup path.
type statBuf struct{ st syscall.Stat_t }

func (b *statBuf) same(p string, e *FPEntry) bool {
	if err := syscall.Lstat(p, &b.st); err != nil {
		return false
	}
	st := &b.st
	return st.Size == e.Size && st.Mtim.Sec*1e9+st.Mtim.Nsec == e.Mtime && unixMode(st.Mode) == e.Mode
}

// unixMode converts st_mode to fs.FileMode the way package os does.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFBLK:
		mode |= fs.ModeDevice
	case syscall.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		mode |= fs.ModeDir
	case syscall.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		mode |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&syscall.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&syscall.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
