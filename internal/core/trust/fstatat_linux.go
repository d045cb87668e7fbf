//go:build linux && !(amd64 || arm64)

package trust

import "golang.org/x/sys/unix"

func fstatatRel(dirfd int, rel string, _ *[pathBuf]byte, st *unix.Stat_t) error {
	return unix.Fstatat(dirfd, rel, st, unix.AT_SYMLINK_NOFOLLOW)
}
