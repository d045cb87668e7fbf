package source

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
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

// maxHeldDirs bounds the directory descriptors a tree keeps open (on
// systems where it writes through them); a tree with more directories
// opens the others again when it needs them.
const maxHeldDirs = 64

// treeFS is where a tree makes its entries: a directory on disk (dirFS)
// or, for Fetcher.Check, the memory of what was made (memFS). Names are
// slash paths relative to the root; the tree makes each parent before its
// entries. Not safe for concurrent use.
type treeFS interface {
	// mkdir makes directory name; fs.ErrExist when something is there.
	mkdir(name string) error
	// lstatMode is the type of name, without following it.
	lstatMode(name string) (fs.FileMode, error)
	// create makes the regular file name exclusively with mode
	// (fs.ErrExist when anything is there).
	create(name string, mode fs.FileMode) (treeFile, error)
	symlink(target, name string) error
	// finishDir seals (mode 0555) and fsyncs directory name, as asked.
	finishDir(name string, seal, sync bool) error
	// syncAllChosen says whether a durable tree is made durable, under
	// mode, by one syncAll in place of an fsync per file and directory.
	syncAllChosen(mode SyncMode) bool
	// syncAll makes everything written below the root durable at once.
	syncAll() error
	close()
}

// treeFile is a file create made; it is written once, front to back.
type treeFile interface {
	io.Writer
	// finish sets the file's mode and fsyncs it, as asked.
	finish(sync bool) error
	close() error
}

// tree writes entries under one root directory. Every name goes through
// CheckEntryPath, no entry is written through a symlink, files are created
// exclusively (a duplicate entry is an error) and the actual bytes written
// are counted against the limits. Each file's content is hashed as it is
// written (written), so that the caller need not read the tree again to
// know it.
type tree struct {
	fs      treeFS
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
	// durable fsyncs each file once written and each directory in finish;
	// syncAll, in its place, syncs the root's whole file system once in
	// finish; readOnly creates files read-only and makes directories 0555
	// in finish.
	durable, syncAll, readOnly bool
	written                    map[string]WrittenFile
	buf                        []byte
	// omitted is set when an entry given to the tree was left out, as
	// every entry of a .git directory is (Result.Omitted).
	omitted bool
}

// WrittenFile is what Fetch wrote to one regular file: its size and the
// SHA-256 of its content.
type WrittenFile struct {
	Size   int64
	SHA256 [sha256.Size]byte
}

func newTree(dir string, limits Limits) (*tree, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(ents) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotEmpty, dir)
	}
	d, err := openDirFS(dir)
	if err != nil {
		return nil, err
	}
	return &tree{fs: d, dir: dir, limits: limits.withDefaults(), dirs: map[string]bool{}, written: map[string]WrittenFile{}}, nil
}

func (t *tree) close() { t.fs.close() }

// finish makes the complete tree read-only and durable, as the tree was
// asked to: every directory, deepest first and the root last, is sealed and
// then fsynced, after every file in it was (when it was written); or, with
// syncAll, sealed, and then the whole file system synced once.
func (t *tree) finish() error {
	if err := t.finishDirs(); err != nil {
		return err
	}
	if t.syncAll {
		return t.fs.syncAll()
	}
	return nil
}

func (t *tree) finishDirs() error {
	if !t.durable && !t.readOnly {
		return nil
	}
	names := make([]string, 0, len(t.dirs)+1)
	for d := range t.dirs {
		names = append(names, d)
	}
	// A longer path is never an ancestor of a shorter one: deepest first.
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	names = append(names, ".")
	for _, d := range names {
		if err := t.fs.finishDir(d, t.readOnly, t.durable); err != nil {
			return err
		}
	}
	return nil
}

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
		if err := t.makeDir(name, cur); err != nil {
			return err
		}
	}
	return nil
}

// makeDir makes directory cur (on the way to entry name), or accepts the
// real directory already there; a symlink or a file there is refused.
func (t *tree) makeDir(name, cur string) error {
	err := t.fs.mkdir(cur)
	if err == nil {
		t.dirs[cur] = true
		return t.count(cur)
	}
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	mode, err := t.fs.lstatMode(cur)
	switch {
	case err != nil:
		return err
	case mode.IsDir():
	case name == cur:
		return fmt.Errorf("%w: directory %q is also a file or link", ErrUnsafePath, name)
	case mode&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %q is written through symlink %q", ErrLink, name, cur)
	default:
		return fmt.Errorf("%w: %q is written below file %q", ErrUnsafePath, name, cur)
	}
	t.dirs[cur] = true
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
	if err != nil || name == "" {
		return err
	}
	if inGitDir(name, true) {
		t.omitted = true
		return nil
	}
	if err := t.parents(name); err != nil {
		return err
	}
	if t.dirs[name] {
		return nil
	}
	return t.makeDir(name, name)
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
		t.omitted = true
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
	if t.readOnly {
		mode &^= 0o222
	}
	f, err := t.fs.create(name, mode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: duplicate entry %q", ErrUnsafePath, name)
		}
		return err
	}
	if t.buf == nil {
		t.buf = make([]byte, 32<<10)
	}
	h := sha256.New()
	budget := t.limits.MaxBytes - t.bytes
	n, err := io.CopyBuffer(io.MultiWriter(f, h), io.LimitReader(r, budget+1), t.buf)
	t.bytes += n
	if err == nil && n <= budget {
		err = f.finish(t.durable)
	}
	if cerr := f.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q: %w", name, err)
	}
	if n > budget {
		return fmt.Errorf("%w: more than %d bytes uncompressed (at %q)", ErrTooLarge, t.limits.MaxBytes, name)
	}
	w := WrittenFile{Size: n}
	h.Sum(w.SHA256[:0])
	t.written[name] = w
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
		t.omitted = true
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
	if err := t.fs.symlink(target, name); err != nil {
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
