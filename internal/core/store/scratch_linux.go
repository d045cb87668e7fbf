package store

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// scratchFile returns the path of an empty file that Salvage copies a
// store into: on Linux a memory file (memfd) reached through /proc, so
// that reading a store writes nothing to any file system (a read-only or
// full disk works); elsewhere, or without /proc, a file in the system's
// temporary directory. cleanup releases it.
func scratchFile() (path string, cleanup func(), err error) {
	fd, err := unix.MemfdCreate("wharf-salvage", unix.MFD_CLOEXEC)
	if err == nil {
		f := os.NewFile(uintptr(fd), "wharf-salvage")
		p := fmt.Sprintf("/proc/self/fd/%d", fd)
		if _, err := os.Stat(p); err == nil {
			return p, func() { f.Close() }, nil
		}
		f.Close()
	}
	return tempScratch()
}
