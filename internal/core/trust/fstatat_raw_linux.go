//go:build linux && (amd64 || arm64)

package trust

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatatRel is fstatat(dirfd, rel, st, AT_SYMLINK_NOFOLLOW) without the
// allocation unix.Fstatat makes to NUL-terminate rel: rel is copied into
// the caller's buffer instead. The check calls it once per recorded path.
func fstatatRel(dirfd int, rel string, buf *[pathBuf]byte, st *unix.Stat_t) error {
	if len(rel) >= len(buf) || strings.IndexByte(rel, 0) >= 0 {
		// A NUL would end the name early and stat another path.
		return unix.Fstatat(dirfd, rel, st, unix.AT_SYMLINK_NOFOLLOW)
	}
	copy(buf[:], rel)
	buf[len(rel)] = 0
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
