//go:build unix

package home

import "golang.org/x/sys/unix"

// writable reports whether this process may write path, as the kernel
// decides it (owner, group, mode, a read-only mount).
func writable(path string) bool {
	return unix.Access(path, unix.W_OK) == nil
}
