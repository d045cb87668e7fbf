package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits bound what one source may write.
type Limits struct {
	MaxEntries int   // files, directories and links; default 20,000
	MaxBytes   int64 // bytes actually written (and downloaded); default 256 MiB
}

// Default limits.
const (
	DefaultMaxEntries = 20000
	DefaultMaxBytes   = 256 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// tree writes entries under one root directory. Every name goes through
// CheckEntryPath, no entry is written through a symlink, files are created
// exclusively (a duplicate entry is an error) and the actual bytes written
// are counted against the limits.
type tree struct {
	root    *os.Root
	dir     string
	limits  Limits
	entries int
	bytes   int64
	links   []string
	// dirs are the directories this tree made (or found to be real
	// directories): the tree starts empty and only its own writes change
	// it, so one of these is still a directory, not a link or a file, and
	// need not be looked at again for every entry below it.
	dirs map[string]bool
}

func newTree(dir string, limits Limits) (*tree, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(ents) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotEmpty, dir)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &tree{root: r, dir: dir, limits: limits.withDefaults(), dirs: map[string]bool{}}, nil
}

func (t *tree) close() { t.root.Close() }

func (t *tree) count(name string) error {
	t.entries++
	if t.entries > t.limits.MaxEntries {
		return fmt.Errorf("%w: more than %d entries (at %q)", ErrTooManyEntries, t.limits.MaxEntries, name)
	}
	return nil
}

// parents creates the parent directories of name, refusing a parent that is
// a symlink or a file.
func (t *tree) parents(name string) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	if t.dirs[dir] {
		return nil
	}
	cur := ""
	for _, p := range strings.Split(dir, "/") {
		if cur == "" {
			cur = p
		} else {
			cur += "/" + p
		}
		if t.dirs[cur] {
			continue
		}
		fi, err := t.root.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := t.count(cur); err != nil {
				return err
			}
			if err := t.root.Mkdir(cur, 0o755); err != nil {
				return err
			}
			t.dirs[cur] = true
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%w: %q is written through symlink %q", ErrLink, name, cur)
		case !fi.IsDir():
			return fmt.Errorf("%w: %q is written below file %q", ErrUnsafePath, name, cur)
		default:
			t.dirs[cur] = true
		}
	}
	return nil
}

// inGitDir reports whether name is the top-level .git directory (dir true)
// or an entry below it. The w1: digest does not cover that directory, so a
// fetched tree never keeps it: whatever it held could not be pinned or
// signed, yet a hook could run it.
func inGitDir(name string, dir bool) bool {
	return (dir && name == ".git") || strings.HasPrefix(name, ".git/")
}

func (t *tree) mkdir(raw string) error {
	name, err := CheckEntryPath(raw)
	if err != nil || name == "" || inGitDir(name, true) {
		return err
	}
	if err := t.parents(name); err != nil {
		return err
	}
	if t.dirs[name] {
		return nil
	}
	fi, err := t.root.Lstat(name)
	if err == nil {
		if fi.IsDir() {
			t.dirs[name] = true
			return nil
		}
		return fmt.Errorf("%w: directory %q is also a file or link", ErrUnsafePath, name)
	}
	if err := t.count(name); err != nil {
		return err
	}
	if err := t.root.Mkdir(name, 0o755); err != nil {
		return err
	}
	t.dirs[name] = true
	return nil
}

// file writes one regular file; exec keeps the executable bit.
func (t *tree) file(raw string, exec bool, r io.Reader) error {
	name, err := CheckEntryPath(raw)
	if err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("%w: file entry %q names the root", ErrUnsafePath, raw)
	}
	if inGitDir(name, false) {
		return nil
	}
	if err := t.parents(name); err != nil {
		return err
	}
	if err := t.count(name); err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if exec {
		mode = 0o755
	}
	f, err := t.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: duplicate entry %q", ErrUnsafePath, name)
		}
		return err
	}
	budget := t.limits.MaxBytes - t.bytes
	n, err := io.Copy(f, io.LimitReader(r, budget+1))
	t.bytes += n
	if err == nil && n <= budget {
		// The umask may have dropped bits; set what the entry says, on
		// the open file (no second walk of the path).
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q: %w", name, err)
	}
	if n > budget {
		return fmt.Errorf("%w: more than %d bytes uncompressed (at %q)", ErrTooLarge, t.limits.MaxBytes, name)
	}
	return nil
}

// symlink writes a relative symlink whose target stays inside the root. The
// lexical check here is completed by verifyLinks once the tree is complete.
func (t *tree) symlink(raw, target string) error {
	name, err := CheckEntryPath(raw)
	if err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("%w: link entry %q names the root", ErrUnsafePath, raw)
	}
	if inGitDir(name, false) {
		return nil
	}
	if target == "" || strings.HasPrefix(target, "/") || strings.ContainsAny(target, "\\\x00") {
		return fmt.Errorf("%w: symlink %q -> %q must be a relative path inside the plugin", ErrLink, name, target)
	}
	if !filepath.IsLocal(path.Join(path.Dir(name), target)) {
		return fmt.Errorf("%w: symlink %q -> %q points outside the plugin", ErrLink, name, target)
	}
	if err := t.parents(name); err != nil {
		return err
	}
	if err := t.count(name); err != nil {
		return err
	}
	if err := t.root.Symlink(target, name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: duplicate entry %q", ErrUnsafePath, name)
		}
		return err
	}
	t.links = append(t.links, name)
	return nil
}

// verifyLinks resolves every written symlink on the real file system, now
// that the tree is complete, and refuses one that resolves outside the root,
// dangles or loops. Lexical checks alone cannot see a chain of links.
func (t *tree) verifyLinks() error {
	if len(t.links) == 0 {
		return nil
	}
	realRoot, err := filepath.EvalSymlinks(t.dir)
	if err != nil {
		return err
	}
	for _, l := range t.links {
		dst, err := filepath.EvalSymlinks(filepath.Join(t.dir, filepath.FromSlash(l)))
		if err != nil {
			return fmt.Errorf("%w: symlink %q does not resolve inside the plugin: %v", ErrLink, l, err)
		}
		rel, err := filepath.Rel(realRoot, dst)
		if err != nil || !filepath.IsLocal(rel) && rel != "." {
			return fmt.Errorf("%w: symlink %q resolves outside the plugin", ErrLink, l)
		}
	}
	return nil
}
