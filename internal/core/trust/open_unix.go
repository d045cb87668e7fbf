//go:build unix

package trust

import (
	"os"
	"syscall"
)

// openNoFollow opens a file for reading without following a final symlink and
// without blocking on a FIFO swapped in after the walk.
func openNoFollow(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
