package source

import (
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// syncAllChosen says whether the tree is made durable by one syncfs of
// its file system (mode SyncFileSystem, or SyncAuto where syncAllPays).
func (d *dirFS) syncAllChosen(mode SyncMode) bool {
	switch mode {
	case SyncFileSystem:
		return true
	case SyncEachFile:
		return false
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(d.root, &st); err != nil {
		return false
	}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return false
	}
	return syncAllPays(int64(st.Type), kernelRelease(), meminfo)
}

// kernelRelease is uname's release ("" when unknown), read once: it does
// not change while wharf runs.
var kernelRelease = sync.OnceValue(func() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
})

// syncAll syncs the file system that holds the root: every file and
// directory written below it is then on disk.
func (d *dirFS) syncAll() error {
	if err := unix.Syncfs(d.root); err != nil {
		return &fs.PathError{Op: "syncfs", Path: ".", Err: err}
	}
	return nil
}
