package capability

import (
	"io/fs"
	"os"
	"path/filepath"
)

// walkDir is filepath.WalkDir listing each directory with readDir
// instead of os.ReadDir: the same calls of fn in the same order, with
// the same paths, entries and errors, when readDir gives what os.ReadDir
// gives (TestWalkDirEqualsFilepath checks both).
func walkDir(root string, fn fs.WalkDirFunc, readDir func(string) ([]fs.DirEntry, error)) error {
	info, err := os.Lstat(root)
	if err != nil {
		err = fn(root, nil, err)
	} else {
		err = walkDirIn(root, fs.FileInfoToDirEntry(info), fn, readDir)
	}
	if err == filepath.SkipDir || err == filepath.SkipAll {
		return nil
	}
	return err
}

func walkDirIn(path string, d fs.DirEntry, fn fs.WalkDirFunc, readDir func(string) ([]fs.DirEntry, error)) error {
	if err := fn(path, d, nil); err != nil || !d.IsDir() {
		if err == filepath.SkipDir && d.IsDir() {
			err = nil
		}
		return err
	}
	dirs, err := readDir(path)
	if err != nil {
		// Second call, to report the listing's error.
		err = fn(path, d, err)
		if err != nil {
			if err == filepath.SkipDir && d.IsDir() {
				err = nil
			}
			return err
		}
	}
	for _, d1 := range dirs {
		if err := walkDirIn(filepath.Join(path, d1.Name()), d1, fn, readDir); err != nil {
			if err == filepath.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
