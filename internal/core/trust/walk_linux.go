//go:build linux

package trust

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
)

// walkAt turns walkDirAt on; the tests turn it off to compare it with
// walked.dir.
var walkAt = true

// maxDepthAt bounds the directory descriptors walkDirAt holds open at once
// (one per level); deeper directories are walked by path (walked.dir).
const maxDepthAt = 32

// walkTree lists the entries below root into w: walked.dir through
// directory descriptors, each entry stat'ed relative to its directory's
// descriptor (fstatat), so that no path is resolved from the root again
// and no *os.File is made per directory but the one that reads it. It
// records what walked.dir records, in the same order, with the same
// errors but for paths changed while they are walked (a directory swapped
// for a symlink is refused here, followed there).
func (w *walked) walkTree(root string) error {
	if !walkAt {
		return w.dir(root, "")
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return w.dir(root, "") // its own error
	}
	var b [pathBuf]byte
	return w.dirAt(fd, root, root, "", 0, &b)
}

// dirAt is walked.dir of rel (at path abs) for the directory open as fd,
// depth levels below the root; it closes fd.
func (w *walked) dirAt(fd int, root, abs, rel string, depth int, buf *[pathBuf]byte) error {
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return ioError(root, rel, err)
	}
	var st unix.Stat_t
	for _, d := range ents {
		name := d.Name()
		p := name
		if rel != "" {
			p = rel + "/" + name
		} else if slices.Contains(w.omit, name) {
			continue
		}
		if err := fstatatRel(fd, name, buf, &st); err != nil {
			return ioError(root, p, &fs.PathError{Op: "lstat", Path: abs + "/" + name, Err: err})
		}
		mode := unixMode(st.Mode)
		mtime := time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec))
		ctime := int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec)
		switch {
		case mode.IsDir():
			if p == ".git" {
				continue
			}
			w.dirs = append(w.dirs, Entry{Path: p, Size: st.Size, ModTime: mtime, Mode: mode})
			if depth+1 >= maxDepthAt {
				if err := w.dir(root, p); err != nil {
					return err
				}
				continue
			}
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return ioError(root, p, &fs.PathError{Op: "open", Path: filepath.Join(root, filepath.FromSlash(p)), Err: err})
			}
			if err := w.dirAt(sub, root, filepath.Join(abs, name), p, depth+1, buf); err != nil {
				return err
			}
		default:
			if err := w.leaf(root, p, mode, st.Size, mtime, ctime, func() (string, error) {
				target, err := atomicfile.ReadlinkAt(fd, name)
				if err != nil {
					return "", &fs.PathError{Op: "readlink", Path: filepath.Join(abs, name), Err: err}
				}
				return target, nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}
