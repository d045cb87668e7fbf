package marketplace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrUnsafeTreePath is the error of a checkout whose commit names a path
// that must not be written into a work tree: a .git directory (or a name
// a filesystem takes for one), "." or "..", a control character, a
// Windows device name, a name given twice in one directory, or a
// .gitmodules symlink. git and go-git refuse the same paths.
var ErrUnsafeTreePath = errors.New("unsafe path in the repository")

// checkoutWorkers is how many goroutines read blobs and write files,
// each through its own object storage, while one walks the trees.
const checkoutWorkers = 4

// checkoutFresh writes the tree of commit into dir, an empty work tree, and
// returns the index that records it (what go-git's checkout of a new clone
// writes, and what a later hard reset compares the work tree against).
// open opens the clone's object storage; each worker opens its own, as a
// storage reads its pack through one file position.
//
// It is go-git's checkout of a fresh clone without what only matters when
// the work tree already has files: go-git looks every path up from the root
// tree and lstats each of its leading directories before writing it, which
// at 30,000 files costs most of a clone. Here each tree is read once, each
// directory made once (only a directory may stand where one goes), and each
// file created anew, so nothing is written through a link; names are
// checked as go-git checks them.
func checkoutFresh(open func() (objectReader, func(), error), commit plumbing.Hash, dir string) (*index.Index, error) {
	objs, done, err := open()
	if err != nil {
		return nil, err
	}
	defer done()
	co, err := objs.EncodedObject(plumbing.CommitObject, commit)
	if err != nil {
		return nil, err
	}
	var c object.Commit
	if err := c.Decode(co); err != nil {
		return nil, err
	}
	root, err := getTree(objs, c.TreeHash)
	if err != nil {
		return nil, err
	}
	w := &checkout{objs: objs, dir: dir, jobs: make(chan fileJob, 256), abort: make(chan struct{})}
	written, err := w.run(checkoutWorkers, open, func() error { return w.walk(root, "") })
	if err != nil {
		return nil, err
	}
	idx := &index.Index{Version: 2}
	idx.Entries = append(idx.Entries, w.entries...)
	idx.Entries = append(idx.Entries, written...)
	return idx, nil
}

// run writes the jobs feed queues with n workers, each reading blobs
// through its own open, and returns the index entries they wrote. A
// worker's failure closes w.abort, which feed should watch; the first
// error of feed, then of the workers in order, is returned.
func (w *checkout) run(n int, open func() (objectReader, func(), error), feed func() error) ([]*index.Entry, error) {
	results := make([][]*index.Entry, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			objs, done, err := open()
			if err != nil {
				errs[i] = err
				w.once.Do(func() { close(w.abort) })
				for range w.jobs {
				}
				return
			}
			defer done()
			results[i], errs[i] = w.write(objs)
		}()
	}
	feedErr := feed()
	close(w.jobs)
	wg.Wait()
	if feedErr != nil {
		return nil, feedErr
	}
	var out []*index.Entry
	for i := range n {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out = append(out, results[i]...)
	}
	return out, nil
}

type checkout struct {
	objs    objectReader // the walk's
	dir     string
	jobs    chan fileJob
	abort   chan struct{} // closed when a worker fails
	once    sync.Once
	entries []*index.Entry // submodules, written by walk
}

// fileJob is one file (or symlink) to write.
type fileJob struct {
	name string // slash-separated, relative to the work tree
	hash plumbing.Hash
	mode filemode.FileMode
}

// walk makes the directories of t under prefix and queues its files.
func (w *checkout) walk(t *object.Tree, prefix string) error {
	if err := checkTree(t, prefix); err != nil {
		return err
	}
	for _, e := range t.Entries {
		name := prefix + e.Name
		switch e.Mode {
		case filemode.Dir:
			if err := w.mkdir(name); err != nil {
				return err
			}
			sub, err := getTree(w.objs, e.Hash)
			if err != nil {
				return fmt.Errorf("read tree %s (%s): %w", name, e.Hash, err)
			}
			if err := w.walk(sub, name+"/"); err != nil {
				return err
			}
		case filemode.Submodule:
			// As go-git: an empty directory, and the commit in the index.
			if err := w.mkdir(name); err != nil {
				return err
			}
			w.entries = append(w.entries, &index.Entry{Name: name, Hash: e.Hash, Mode: filemode.Submodule})
		default:
			select {
			case w.jobs <- fileJob{name: name, hash: e.Hash, mode: e.Mode}:
			case <-w.abort:
				return nil // the writer's error is the checkout's
			}
		}
	}
	return nil
}

// checkTree refuses a tree (at prefix) whose entries a checkout must not
// write: an unsafe name, a name given twice, an unknown mode.
func checkTree(t *object.Tree, prefix string) error {
	seen := make(map[string]bool, len(t.Entries))
	for _, e := range t.Entries {
		name := prefix + e.Name
		if err := checkTreeName(e.Name, e.Mode); err != nil {
			return fmt.Errorf("%w: %q: %v", ErrUnsafeTreePath, name, err)
		}
		if seen[e.Name] {
			return fmt.Errorf("%w: %q: named twice in its directory", ErrUnsafeTreePath, name)
		}
		seen[e.Name] = true
		switch e.Mode {
		case filemode.Dir, filemode.Submodule, filemode.Regular, filemode.Executable, filemode.Deprecated, filemode.Symlink:
		default:
			return fmt.Errorf("%w: %q: unknown file mode %o", ErrUnsafeTreePath, name, uint32(e.Mode))
		}
	}
	return nil
}

// mkdir makes the directory name. Only a directory (two names that one
// filesystem takes for the same, "A" and "a") may be there already, never
// a link or a file.
func (w *checkout) mkdir(name string) error {
	p := filepath.Join(w.dir, filepath.FromSlash(name))
	err := os.Mkdir(p, 0o755)
	if errors.Is(err, fs.ErrExist) {
		if fi, lerr := os.Lstat(p); lerr == nil && fi.IsDir() {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("check out %s: %w", name, err)
	}
	return nil
}

// write writes queued files until the queue closes, and returns their
// index entries. After a failure it drains the queue.
func (w *checkout) write(objs objectReader) ([]*index.Entry, error) {
	var out []*index.Entry
	var first error
	for j := range w.jobs {
		if first != nil {
			continue
		}
		e, err := w.writeFile(objs, j)
		if err != nil {
			first = fmt.Errorf("check out %s: %w", j.name, err)
			w.once.Do(func() { close(w.abort) })
			continue
		}
		out = append(out, e)
	}
	return out, first
}

func (w *checkout) writeFile(objs objectReader, j fileJob) (*index.Entry, error) {
	o, err := objs.EncodedObject(plumbing.BlobObject, j.hash)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", j.hash, err)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", j.hash, err)
	}
	defer r.Close()
	return writeBlob(w.dir, j, r, o.Size())
}

// writeBlob writes the file (or symlink) j under dir from r, its blob of
// size bytes, and returns its index entry.
func writeBlob(dir string, j fileJob, r io.Reader, size int64) (*index.Entry, error) {
	p := filepath.Join(dir, filepath.FromSlash(j.name))
	var fi os.FileInfo
	if j.mode == filemode.Symlink && !(runtime.GOOS == "windows" && symlinkUnsupported(p)) {
		target, err := io.ReadAll(io.LimitReader(r, maxLinkTarget+1))
		if err != nil {
			return nil, fmt.Errorf("read blob %s: %w", j.hash, err)
		}
		if len(target) > maxLinkTarget {
			return nil, fmt.Errorf("%w: %q: a symlink to a target longer than %d bytes", ErrUnsafeTreePath, j.name, maxLinkTarget)
		}
		if err := os.Symlink(string(target), p); err != nil {
			return nil, err
		}
		if fi, err = os.Lstat(p); err != nil {
			return nil, err
		}
	} else {
		perm := os.FileMode(0o644)
		if j.mode == filemode.Executable {
			perm = 0o755
		}
		f, err := createFile(p, perm)
		if err != nil {
			return nil, err
		}
		n, err := io.Copy(f, r)
		if err == nil && n != size {
			err = fmt.Errorf("blob %s: %d bytes, its header says %d", j.hash, n, size)
		}
		if err == nil {
			fi, err = f.Stat()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	mode := j.mode
	if mode == filemode.Deprecated {
		mode = filemode.Regular
	}
	e := &index.Entry{Hash: j.hash, Name: j.name, Mode: mode, ModifiedAt: fi.ModTime(), Size: uint32(fi.Size())}
	fillStat(e, fi)
	return e, nil
}

// writeContent writes the file (or symlink) j under dir with content, its
// blob, and returns its index entry: what writeBlob does, for a blob in
// memory.
func writeContent(dir string, j fileJob, content []byte) (*index.Entry, error) {
	if j.mode == filemode.Symlink {
		return writeBlob(dir, j, bytes.NewReader(content), int64(len(content)))
	}
	perm := os.FileMode(0o644)
	if j.mode == filemode.Executable {
		perm = 0o755
	}
	mode := j.mode
	if mode == filemode.Deprecated {
		mode = filemode.Regular
	}
	e := &index.Entry{Hash: j.hash, Name: j.name, Mode: mode}
	if err := writeNewFile(filepath.Join(dir, filepath.FromSlash(j.name)), perm, content, e); err != nil {
		return nil, err
	}
	return e, nil
}

// writeNewFileOS is writeNewFile through package os.
func writeNewFileOS(p string, perm os.FileMode, content []byte, e *index.Entry) error {
	f, err := createFile(p, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	e.ModifiedAt = fi.ModTime()
	e.Size = uint32(fi.Size())
	fillStat(e, fi)
	return nil
}

func getTree(objs objectReader, h plumbing.Hash) (*object.Tree, error) {
	o, err := objs.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	var t object.Tree
	if err := t.Decode(o); err != nil {
		return nil, err
	}
	return &t, nil
}

// maxLinkTarget bounds a symlink's target (Linux's PATH_MAX).
const maxLinkTarget = 4096

// createFile creates the file p. It is a new file (O_EXCL: never a link's
// target), or a regular file another name of the tree already made there
// on a filesystem that takes both names for one ("README.md" and
// "readme.md"), which is then overwritten, as git does.
func createFile(p string, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode().IsRegular() {
			return os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, perm)
		}
	}
	return f, err
}

// symlinkUnsupported reports whether symlinks cannot be made next to p
// (Windows without the privilege); git then writes the link's target as
// a file, as go-git does.
func symlinkUnsupported(p string) bool {
	probe := p + ".wharf-link-probe"
	err := os.Symlink("x", probe)
	_ = os.Remove(probe)
	return err != nil
}

// hfsIgnored are the code points HFS+ drops from names, so that a name
// holding them can stand for .git there.
var hfsIgnored = strings.NewReplacer(
	"\u200c", "", "\u200d", "", "\u200e", "", "\u200f", "",
	"\u202a", "", "\u202b", "", "\u202c", "", "\u202d", "", "\u202e", "",
	"\u206a", "", "\u206b", "", "\u206c", "", "\u206d", "", "\u206e", "", "\u206f", "",
	"\ufeff", "")

// windowsDevices are names Windows takes for devices, whatever follows a
// dot, a space or a colon.
var windowsDevices = []string{"con", "prn", "aux", "nul",
	"com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8", "com9",
	"lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
	"conin$", "conout$"}

// checkTreeName refuses a tree entry name that a checkout must not write:
// what go-git's work tree refuses (with protectNTFS on, its default, and
// protectHFS on), or stricter.
func checkTreeName(name string, mode filemode.FileMode) error {
	if name == "" || name == "." || name == ".." {
		return errors.New("not a file name")
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c < 0x20 || c == 0x7f:
			return errors.New("holds a control character")
		case c == '/' || c == '\\':
			return errors.New("holds a path separator")
		}
	}
	if filepath.VolumeName(name) != "" || (len(name) >= 2 && name[1] == ':') {
		return errors.New("names a drive")
	}
	// What NTFS and HFS+ make of the name: without ignored code points,
	// trailing dots and spaces, and an alternate data stream (":...").
	n := strings.ToLower(hfsIgnored.Replace(name))
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimRight(n, ". ")
	if n == ".git" || n == "git~1" {
		return errors.New("is (or stands for) .git")
	}
	base := n
	if i := strings.IndexAny(base, ". "); i >= 0 {
		base = base[:i]
	}
	for _, d := range windowsDevices {
		if base == d {
			return errors.New("is a Windows device name")
		}
	}
	if mode == filemode.Symlink && (n == ".gitmodules" || strings.HasPrefix(n, "gi7eba~")) {
		return errors.New("a .gitmodules symlink")
	}
	return nil
}
