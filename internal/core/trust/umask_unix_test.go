//go:build unix

package trust

import "syscall"

// umask sets the process's file mode creation mask and returns the old one.
func umask(m int) int { return syscall.Umask(m) }
