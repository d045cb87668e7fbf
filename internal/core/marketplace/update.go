package marketplace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// checkoutUpdate moves the work tree and index of the clone at dir from
// commit from to commit to, touching only the paths the two trees differ
// in, and then points HEAD (or the branch it names) at to. It is go-git's
// hard reset for the case an update meets: a work tree that is what its
// index says, an index that is commit from. go-git's reset reads every
// directory and stats every file of both, and compares every index entry
// with the new tree; here only the changed subtrees are read.
//
// It returns false, having changed nothing, when the clone is not in that
// state (a file edited, added to or missing from the work tree, an index
// that does not record from, a submodule, a file written in the same
// instant as the index): the caller then runs go-git's reset.
func checkoutUpdate(s *filesystem.Storage, dir string, from, to plumbing.Hash) (bool, error) {
	idx, err := s.Index()
	if err != nil {
		return false, nil
	}
	ixInfo, err := os.Stat(filepath.Join(dir, ".git", "index"))
	if err != nil {
		return false, nil
	}
	byName := make(map[string]*index.Entry, len(idx.Entries))
	for _, e := range idx.Entries {
		if e.Stage != 0 || e.Mode == filemode.Submodule {
			return false, nil
		}
		p := filepath.Join(dir, filepath.FromSlash(e.Name))
		fi, err := os.Lstat(p)
		if err != nil || !sameStat(e, fi) {
			return false, nil
		}
		// A file written in the same clock tick as the index may have
		// changed since without its time or size showing it (git's "racy"
		// entries): its content is compared instead.
		if !e.ModifiedAt.Before(ixInfo.ModTime()) && !sameContent(e, p) {
			return false, nil
		}
		byName[e.Name] = e
	}

	ps, err := openPackSet(s.Filesystem())
	if err != nil {
		return false, err
	}
	objs, err := ps.reader(checkoutCacheBytes)
	if err != nil {
		return false, err
	}
	defer objs.Close()
	fromTree, err := commitTree(objs, from)
	if err != nil {
		return false, nil
	}
	toTree, err := commitTree(objs, to)
	if err != nil {
		return false, err
	}
	d := &treeDiff{objs: objs, index: byName}
	if err := d.diff(fromTree, toTree, ""); err != nil {
		if errors.Is(err, errNotClean) {
			return false, nil
		}
		return false, err
	}

	// Nothing has changed yet; from here on, a failure leaves a work tree
	// that no longer matches its index, which the next update's check
	// sees, so that go-git's reset repairs it.
	w := &checkout{dir: dir}
	for _, name := range d.deletes {
		if err := removeFileAndEmptyDirs(dir, name); err != nil {
			return false, fmt.Errorf("update %s: %w", name, err)
		}
		delete(byName, name)
	}
	for _, j := range d.writes {
		if err := w.mkdirAll(path.Dir(j.name)); err != nil {
			return false, err
		}
		p := filepath.Join(dir, filepath.FromSlash(j.name))
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("update %s: %w", j.name, err)
		}
		e, err := w.writeFile(objs, j)
		if err != nil {
			return false, fmt.Errorf("update %s: %w", j.name, err)
		}
		byName[j.name] = e
	}
	idx.Entries = idx.Entries[:0]
	for _, e := range byName {
		idx.Entries = append(idx.Entries, e)
	}
	if err := s.SetIndex(idx); err != nil {
		return false, err
	}
	return true, setHead(s, to)
}

// errNotClean stops a diff whose clone is not in the state checkoutUpdate
// handles.
var errNotClean = errors.New("the index does not record the checked-out commit")

// sameStat reports whether fi is the file e records: kind, size and time.
func sameStat(e *index.Entry, fi os.FileInfo) bool {
	switch e.Mode {
	case filemode.Symlink:
		if fi.Mode()&os.ModeSymlink == 0 {
			return false
		}
	case filemode.Executable:
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o100 == 0 {
			return false
		}
	case filemode.Regular, filemode.Deprecated:
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o100 != 0 {
			return false
		}
	default:
		return false
	}
	return fi.Size() == int64(e.Size) && fi.ModTime().Equal(e.ModifiedAt)
}

// sameContent reports whether the file (or link) at p holds the blob e
// records.
func sameContent(e *index.Entry, p string) bool {
	var b []byte
	var err error
	if e.Mode == filemode.Symlink {
		var target string
		target, err = os.Readlink(p)
		b = []byte(target)
	} else {
		b, err = os.ReadFile(p)
	}
	return err == nil && plumbing.ComputeHash(plumbing.BlobObject, b) == e.Hash
}

func commitTree(objs objectReader, h plumbing.Hash) (*object.Tree, error) {
	co, err := objs.EncodedObject(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	var c object.Commit
	if err := c.Decode(co); err != nil {
		return nil, err
	}
	return getTree(objs, c.TreeHash)
}

// treeDiff collects what changes between two trees: the files to delete
// and the files to write, each checked against the index first.
type treeDiff struct {
	objs    objectReader
	index   map[string]*index.Entry
	deletes []string
	writes  []fileJob
}

// diff compares the trees from (nil: none) and to under prefix. Subtrees
// of equal hash are skipped unread.
func (d *treeDiff) diff(from, to *object.Tree, prefix string) error {
	old := map[string]object.TreeEntry{}
	if from != nil {
		for _, e := range from.Entries {
			old[e.Name] = e
		}
	}
	// The new tree is refused as a fresh checkout refuses it: unsafe
	// names, a name given twice, unknown modes.
	if err := checkTree(to, prefix); err != nil {
		return err
	}
	seen := make(map[string]bool, len(to.Entries))
	for _, e := range to.Entries {
		name := prefix + e.Name
		seen[e.Name] = true
		o, had := old[e.Name]
		if had && o.Hash == e.Hash && o.Mode == e.Mode {
			continue
		}
		bothDirs := had && o.Mode == filemode.Dir && e.Mode == filemode.Dir
		if had && !bothDirs {
			if err := d.remove(o, name); err != nil {
				return err
			}
		}
		switch e.Mode {
		case filemode.Dir:
			var ot *object.Tree
			if bothDirs {
				t, err := getTree(d.objs, o.Hash)
				if err != nil {
					return fmt.Errorf("read tree %s (%s): %w", name, o.Hash, err)
				}
				ot = t
			}
			sub, err := getTree(d.objs, e.Hash)
			if err != nil {
				return fmt.Errorf("read tree %s (%s): %w", name, e.Hash, err)
			}
			if err := d.diff(ot, sub, name+"/"); err != nil {
				return err
			}
		case filemode.Regular, filemode.Executable, filemode.Deprecated, filemode.Symlink:
			if _, tracked := d.index[name]; tracked && !had {
				return errNotClean
			}
			d.writes = append(d.writes, fileJob{name: name, hash: e.Hash, mode: e.Mode})
		case filemode.Submodule:
			return errNotClean
		}
	}
	if from != nil {
		for _, o := range from.Entries {
			if !seen[o.Name] {
				if err := d.remove(o, prefix+o.Name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// remove queues the deletion of the old entry o at name: a file, or every
// file of a directory. Each must be in the index as the old tree has it.
func (d *treeDiff) remove(o object.TreeEntry, name string) error {
	if o.Mode != filemode.Dir {
		if ie, ok := d.index[name]; !ok || ie.Hash != o.Hash {
			return errNotClean
		}
		d.deletes = append(d.deletes, name)
		return nil
	}
	t, err := getTree(d.objs, o.Hash)
	if err != nil {
		return fmt.Errorf("read tree %s (%s): %w", name, o.Hash, err)
	}
	for _, e := range t.Entries {
		if err := d.remove(e, name+"/"+e.Name); err != nil {
			return err
		}
	}
	return nil
}

// mkdirAll makes the directory name and those above it, each a real
// directory (never through a link).
func (w *checkout) mkdirAll(name string) error {
	if name == "." || name == "" {
		return nil
	}
	if fi, err := os.Lstat(filepath.Join(w.dir, filepath.FromSlash(name))); err == nil && fi.IsDir() {
		return nil
	}
	if err := w.mkdirAll(path.Dir(name)); err != nil {
		return err
	}
	return w.mkdir(name)
}

// removeFileAndEmptyDirs removes the file name and then each directory
// above it that the removal left empty, as go-git's reset does.
func removeFileAndEmptyDirs(dir, name string) error {
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for d := path.Dir(name); d != "." && d != "/" && d != ""; d = path.Dir(d) {
		p := filepath.Join(dir, filepath.FromSlash(d))
		ents, err := os.ReadDir(p)
		if err != nil || len(ents) > 0 {
			return nil
		}
		if err := os.Remove(p); err != nil {
			return nil
		}
	}
	return nil
}

// setHead points HEAD at h: the branch HEAD names, or HEAD itself when
// detached (go-git's reset does the same).
func setHead(s *filesystem.Storage, h plumbing.Hash) error {
	head, err := s.Reference(plumbing.HEAD)
	if err != nil {
		return err
	}
	if head.Type() == plumbing.HashReference {
		return s.SetReference(plumbing.NewHashReference(plumbing.HEAD, h))
	}
	if !head.Target().IsBranch() {
		return fmt.Errorf("HEAD names %s, not a branch", head.Target())
	}
	return s.SetReference(plumbing.NewHashReference(head.Target(), h))
}
