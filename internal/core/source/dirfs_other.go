//go:build !unix

package source

import (
	"io/fs"
	"os"
	"path/filepath"
)

// memoryCheck: Check always writes the tree here (Windows refuses names,
// such as CON or a:b, that a memory of the entries would take).
const memoryCheck = false

// dirFS writes below one root directory through an *os.Root, which
// refuses every path that would leave it.
type dirFS struct{ root *os.Root }

func openDirFS(dir string) (*dirFS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &dirFS{root: r}, nil
}

func (d *dirFS) close() { d.root.Close() }

func (d *dirFS) mkdir(name string) error { return d.root.Mkdir(name, 0o755) }

func (d *dirFS) lstatMode(name string) (fs.FileMode, error) {
	fi, err := d.root.Lstat(name)
	if err != nil {
		return 0, err
	}
	return fi.Mode().Type(), nil
}

func (d *dirFS) create(name string, mode fs.FileMode) (treeFile, error) {
	f, err := d.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return nil, err
	}
	return &newFile{File: f, mode: mode}, nil
}

func (d *dirFS) symlink(target, name string) error { return d.root.Symlink(target, name) }

func (d *dirFS) finishDir(name string, seal, sync bool) error {
	if seal {
		if err := d.root.Chmod(name, 0o555); err != nil {
			return err
		}
	}
	if !sync {
		return nil
	}
	f, err := d.root.Open(filepath.FromSlash(name))
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

type newFile struct {
	*os.File
	mode fs.FileMode
}

func (f *newFile) finish(sync bool) error {
	if err := f.Chmod(f.mode); err != nil {
		return err
	}
	if sync {
		return f.Sync()
	}
	return nil
}

func (f *newFile) close() error { return f.File.Close() }
