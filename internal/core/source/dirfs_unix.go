//go:build unix

package source

import (
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// memoryCheck: Check may stand a memory of the entries in for a directory
// on disk; on unix systems a name that is plain ASCII and unique but for
// ASCII case is taken as given by every file system.
const memoryCheck = true

// dirFS writes below one root directory through descriptors of the
// directories it made: every entry is created with one *at call relative to
// its parent's descriptor, by its last path element, never following a
// symlink. Nothing is resolved by path from outside the root, so a
// directory replaced by a link meanwhile cannot redirect a write.
type dirFS struct {
	root int
	fds  map[string]int // directory (slash path, "." for the root) → descriptor
}

func openDirFS(dir string) (*dirFS, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &dirFS{root: fd, fds: map[string]int{".": fd}}, nil
}

func (d *dirFS) close() {
	for _, fd := range d.fds {
		unix.Close(fd)
	}
	d.fds = nil
}

// dir returns a descriptor of the directory name (a directory this dirFS
// made or found), and whether the caller must close it.
func (d *dirFS) dir(name string) (int, bool, error) {
	if fd, ok := d.fds[name]; ok {
		return fd, false, nil
	}
	parent, closeParent, err := d.dir(path.Dir(name))
	if err != nil {
		return -1, false, err
	}
	fd, err := unix.Openat(parent, path.Base(name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if closeParent {
		unix.Close(parent)
	}
	if err != nil {
		return -1, false, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if len(d.fds) < maxHeldDirs {
		d.fds[name] = fd
		return fd, false, nil
	}
	return fd, true, nil
}

// at runs fn with the descriptor of name's parent directory and name's
// last element.
func (d *dirFS) at(name string, fn func(dirfd int, base string) error) error {
	fd, closeIt, err := d.dir(path.Dir(name))
	if err != nil {
		return err
	}
	err = fn(fd, path.Base(name))
	if closeIt {
		unix.Close(fd)
	}
	return err
}

// mkdir makes directory name; fs.ErrExist when something is there.
func (d *dirFS) mkdir(name string) error {
	return d.at(name, func(dirfd int, base string) error {
		if err := unix.Mkdirat(dirfd, base, 0o755); err != nil {
			return &fs.PathError{Op: "mkdir", Path: name, Err: err}
		}
		return nil
	})
}

// lstatMode is the type and permission bits of name, without following it.
func (d *dirFS) lstatMode(name string) (fs.FileMode, error) {
	var st unix.Stat_t
	err := d.at(name, func(dirfd int, base string) error {
		if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &fs.PathError{Op: "lstat", Path: name, Err: err}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir, nil
	case unix.S_IFLNK:
		return fs.ModeSymlink, nil
	case unix.S_IFREG:
		return 0, nil
	}
	return fs.ModeIrregular, nil
}

// create makes the regular file name exclusively with mode (fs.ErrExist
// when anything, a symlink included, is there).
func (d *dirFS) create(name string, mode fs.FileMode) (treeFile, error) {
	var fd int
	err := d.at(name, func(dirfd int, base string) error {
		var err error
		fd, err = unix.Openat(dirfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode.Perm()))
		if err != nil {
			return &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &newFile{fd: fd, name: name, mode: mode}, nil
}

func (d *dirFS) symlink(target, name string) error {
	return d.at(name, func(dirfd int, base string) error {
		if err := unix.Symlinkat(target, dirfd, base); err != nil {
			return &os.LinkError{Op: "symlink", Old: target, New: name, Err: err}
		}
		return nil
	})
}

// finishDir seals (mode 0555) and fsyncs directory name, as asked.
func (d *dirFS) finishDir(name string, seal, sync bool) error {
	fd, closeIt, err := d.dir(name)
	if err != nil {
		return err
	}
	if closeIt {
		defer unix.Close(fd)
	}
	if seal {
		if err := unix.Fchmod(fd, 0o555); err != nil {
			return &fs.PathError{Op: "chmod", Path: name, Err: err}
		}
	}
	if sync {
		if err := unix.Fsync(fd); err != nil {
			return &fs.PathError{Op: "fsync", Path: name, Err: err}
		}
	}
	return nil
}

// newFile is a file create made; it is written once, front to back.
type newFile struct {
	fd   int
	name string
	mode fs.FileMode
}

func (f *newFile) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Write(f.fd, p[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "write", Path: f.name, Err: err}
		}
		n += m
	}
	return n, nil
}

// finish sets the mode the umask may have narrowed and fsyncs, as asked.
func (f *newFile) finish(sync bool) error {
	if f.mode.Perm()&^processUmask() != f.mode.Perm() {
		if err := unix.Fchmod(f.fd, uint32(f.mode.Perm())); err != nil {
			return &fs.PathError{Op: "chmod", Path: f.name, Err: err}
		}
	}
	if sync {
		if err := unix.Fsync(f.fd); err != nil {
			return &fs.PathError{Op: "fsync", Path: f.name, Err: err}
		}
	}
	return nil
}

func (f *newFile) close() error {
	if err := unix.Close(f.fd); err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// processUmask is the process's file mode creation mask, read once from
// /proc/self/status where the kernel shows it; elsewhere (or when it does
// not show it) it is taken to mask everything, so every file has its mode
// set explicitly after it is created.
var processUmask = sync.OnceValue(func() fs.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0o777
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				return 0o777
			}
			return fs.FileMode(m) & 0o777
		}
	}
	return 0o777
})
