package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Option changes how SyncTree, SealTree, RenameDir and CommitDir make a
// tree durable.
type Option func(*options)

type options struct {
	// sync makes one file's or directory's content and entries durable.
	sync func(*os.File) error
}

// WithSync has fn make each file and directory durable in place of
// (*os.File).Sync; fn is called once per regular file and directory, in
// the order the pipeline needs (a directory after what it holds, the
// parent of a renamed tree after the rename). fn must sync f itself (or
// return an error), or the tree is not made durable.
func WithSync(fn func(f *os.File) error) Option {
	return func(o *options) { o.sync = fn }
}

func newOptions(opts []Option) options {
	o := options{sync: (*os.File).Sync}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func (o options) syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = o.sync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncTree fsyncs every regular file and every directory under root (root
// included), each directory after what it holds, so that once it returns
// the tree survives a crash as it is. Symlinks have nothing of their own to
// sync (their directory's sync keeps them); anything else (a named pipe, a
// device, a socket) is refused with an error naming it.
func SyncTree(root string, opts ...Option) error { return newOptions(opts).syncTree(root, false) }

// SealTree is SyncTree that also makes the tree read-only: files 0444
// (0555 when the owner-execute bit was set), directories 0555.
func SealTree(root string, opts ...Option) error { return newOptions(opts).syncTree(root, true) }

func (o options) syncTree(root string, seal bool) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch t := d.Type(); {
		case t.IsDir():
			dirs = append(dirs, p)
		case t.IsRegular():
			if err := o.syncPath(p); err != nil {
				return err
			}
			if !seal {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			mode := fs.FileMode(0o444)
			if fi.Mode()&0o100 != 0 {
				mode = 0o555
			}
			return os.Chmod(p, mode)
		case t&fs.ModeSymlink != 0:
		default:
			return fmt.Errorf("%s: not a file, directory or symlink", p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Deepest first: a directory's own sync (and seal) comes after its
	// children's.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := o.syncDir(dirs[i]); err != nil {
			return err
		}
		if seal {
			if err := os.Chmod(dirs[i], 0o555); err != nil {
				return err
			}
		}
	}
	return nil
}

// RenameDir moves tmp, a tree already made durable (SyncTree, SealTree),
// to final and fsyncs final's directory, so that after a crash final is
// either absent (or what it was) or the whole tree, never part of it. tmp
// and final must be on one file system; final must not be a non-empty
// directory.
func RenameDir(tmp, final string, opts ...Option) error {
	return newOptions(opts).renameDir(tmp, final)
}

func (o options) renameDir(tmp, final string) error {
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return o.syncDir(filepath.Dir(final))
}

// CommitDir is the whole pipeline for a tree filled and verified in tmp:
// SyncTree, then RenameDir.
func CommitDir(tmp, final string, opts ...Option) error {
	o := newOptions(opts)
	if err := o.syncTree(tmp, false); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	return o.renameDir(tmp, final)
}
