//go:build unix

package source

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
)

// relativeAt turns copyRelativeAt on; the tests turn it off to compare it
// with copyRelative.
var relativeAt = true

// copyRelativeAt is copyRelative through directory descriptors: the plugin
// directory is reached from mkt (the marketplace's real path) one
// component at a time without following a symlink, and every entry below
// it is read relative to its directory's descriptor, so that no path is
// resolved again from the root and no *os.File is made per file. Where a
// component of rel is a symlink or cannot be opened as a directory it does
// nothing and reports !done: copyRelative then resolves it and gives its
// errors. For a directory without symlinks the two copy the same entries
// in the same order (sorted by name, as filepath.WalkDir visits them) and
// return the same path.
func (f *Fetcher) copyRelativeAt(req *Request, mkt, rel string, t *tree) (src string, done bool, err error) {
	if !relativeAt || !filepath.IsAbs(mkt) || filepath.Clean(mkt) != mkt {
		return "", false, nil
	}
	fd, err := unix.Open(mkt, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false, nil
	}
	if rel != "" {
		for c := range strings.SplitSeq(rel, "/") {
			next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				return "", false, nil
			}
			fd = next
		}
	}
	// mkt has no symlink in it and no component of rel is one: this is
	// filepath.EvalSymlinks(mkt/rel), a directory inside the marketplace.
	src = filepath.Join(mkt, filepath.FromSlash(rel))
	f.progressf("%s: copying %s\n", req.Plugin, req.Source.Path)
	if err := copyDirAt(fd, src, "", 0, t); err != nil {
		return "", true, fail(req, offendingHint, err)
	}
	return src, true, nil
}

// copyDirAt copies the entries of the directory open as fd (at path abs,
// the tree's directory name; "" for the plugin root; depth levels below
// it) into t, and closes fd.
func copyDirAt(fd int, abs, name string, depth int, t *tree) error {
	d := os.NewFile(uintptr(fd), abs)
	ents, err := d.ReadDir(-1)
	if err != nil {
		d.Close()
		return err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	defer d.Close()
	for _, e := range ents {
		base := e.Name()
		child := base
		if name != "" {
			child = name + "/" + base
		}
		p := filepath.Join(abs, base)
		typ := e.Type()
		if base == ".git" && name == "" {
			t.omitted = true
			continue
		}
		switch {
		case typ.IsDir():
			if err := t.mkdir(child); err != nil {
				return err
			}
			if depth+1 >= maxDepthAt {
				if err := copyWalk(p, child, t); err != nil {
					return err
				}
				continue
			}
			sub, err := unix.Openat(fd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return &fs.PathError{Op: "open", Path: p, Err: err}
			}
			if err := copyDirAt(sub, p, child, depth+1, t); err != nil {
				return err
			}
		case typ&fs.ModeSymlink != 0:
			target, err := atomicfile.ReadlinkAt(fd, base)
			if err != nil {
				return &fs.PathError{Op: "readlink", Path: p, Err: err}
			}
			if err := t.symlink(child, filepath.ToSlash(target)); err != nil {
				return err
			}
		case typ.IsRegular():
			if err := copyFileAt(fd, base, p, child, t); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: %q is a %s, not a file, directory or symlink", ErrUnsupported, child, typ.Type())
		}
	}
	return nil
}

// copyFileAt copies the regular file base of the directory dirfd. It is
// opened without following a symlink and without blocking on a FIFO, and
// must still be a regular file once open.
func copyFileAt(dirfd int, base, p, name string, t *tree) error {
	fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: %q changed while it was copied", ErrUnsupported, name)
	}
	return t.file(name, st.Mode&0o100 != 0, fdReader{fd: fd, name: p})
}

// fdReader reads a descriptor it does not own.
type fdReader struct {
	fd   int
	name string
}

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(r.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: r.name, Err: err}
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
