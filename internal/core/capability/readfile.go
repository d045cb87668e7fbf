package capability

import (
	"io"
	"os"
)

// fileText is what opening, stating and reading one file found.
type fileText struct {
	// openErr is the error opening the file; nothing else is set then.
	openErr error
	// statErr is the error of the stat of the open file; nothing
	// after it is set then.
	statErr error
	regular bool  // a regular file when it was opened
	exec    bool  // any execute bit set
	size    int64 // its size, from the stat of the open file
	// read: the file is regular, at most max bytes, and data holds it
	// (in a buffer from alloc); readErr is the error reading it.
	read    bool
	readErr error
	data    []byte
}

// readFilePlain opens name, stats and reads it on one descriptor through
// package os. readFile (raw system calls where there are) gives the same
// fileText for every file; TestReadFileEqualsPlain* check it.
func readFilePlain(name string, max int64, alloc func(int) []byte) fileText {
	var ft fileText
	f, err := os.Open(name)
	if err != nil {
		ft.openErr = err
		return ft
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		ft.statErr = err
		return ft
	}
	ft.regular, ft.exec, ft.size = fi.Mode().IsRegular(), fi.Mode()&0o111 != 0, fi.Size()
	if !ft.regular || ft.size > max {
		return ft
	}
	data := alloc(int(ft.size))
	if _, err := io.ReadFull(f, data); err != nil {
		ft.readErr = err
		return ft
	}
	ft.read, ft.data = true, data
	return ft
}
