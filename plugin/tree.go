package plugin

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Tree is what a caller has already seen of a plugin directory in one
// walk, for LoadTree. Every path is filepath.Join(dir, rel) of the dir
// given to LoadTree (filepath.Clean(dir) for the root itself). What the
// tree does not hold is read from disk, as Load reads it.
type Tree struct {
	// Files are file contents, as LoadFiles takes them: what each file
	// holds now.
	Files map[string][]byte
	// Dirs are complete directory listings, each in name order as
	// os.ReadDir returns them. A path in a listed directory that the
	// listing does not name does not exist. A symlink in a listing is
	// followed on disk. The root's listing (filepath.Clean(dir)) also
	// says that the root is a directory.
	Dirs map[string][]fs.DirEntry
	// FrontMatter, when not nil, receives the front matter the loader
	// parses (the YAML header of agents and of skills named by it), so
	// that the caller need not parse it again.
	FrontMatter map[string]FrontMatter
}

// FrontMatter is one Markdown file's front matter as ParseFrontMatter
// reads it: Meta (read leniently when Lenient) or Err.
type FrontMatter struct {
	Meta    map[string]any
	Lenient bool
	Err     error
}

// LoadTree is LoadFiles for a caller that has also listed the tree: the
// loader takes the layout from t.Dirs instead of listing and stat'ing the
// directories again, and files from t.Files. It loads what Load loads
// when t is what the tree holds now (a test keeps the two in step).
func LoadTree(dir string, entry *Entry, t *Tree) (*Plugin, []Diagnostic, error) {
	return loadWith(dir, entry, t)
}

// dirs is t.Dirs, nil for a nil tree.
func (t *Tree) dirs() map[string][]fs.DirEntry {
	if t == nil {
		return nil
	}
	return t.Dirs
}

// entryInfo is the fs.FileInfo of a listed entry: its name and type
// (the loader uses nothing else of a listed path).
type entryInfo struct{ d fs.DirEntry }

func (e entryInfo) Name() string       { return e.d.Name() }
func (e entryInfo) Size() int64        { return 0 }
func (e entryInfo) Mode() fs.FileMode  { return e.d.Type() }
func (e entryInfo) ModTime() time.Time { return time.Time{} }
func (e entryInfo) IsDir() bool        { return e.d.IsDir() }
func (e entryInfo) Sys() any           { return nil }

// listed looks p up in its directory's listing: found, or known absent
// (ok), or not known (!ok).
func (l *loader) listed(p string) (d fs.DirEntry, ok bool) {
	if l.tree == nil || l.tree.Dirs == nil {
		return nil, false
	}
	ents, ok := l.tree.Dirs[filepath.Dir(p)]
	if !ok {
		return nil, false
	}
	name := filepath.Base(p)
	i := sort.Search(len(ents), func(i int) bool { return ents[i].Name() >= name })
	if i < len(ents) && ents[i].Name() == name {
		return ents[i], true
	}
	return nil, true
}

// lstat is os.Lstat, from the tree's listing when it has one.
func (l *loader) lstat(p string) (fs.FileInfo, error) {
	if d, ok := l.listed(p); ok {
		if d == nil {
			return nil, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
		}
		return entryInfo{d}, nil
	}
	return os.Lstat(p)
}

// statPath is os.Stat, from the tree's listing for a path that is not a
// symlink.
func (l *loader) statPath(p string) (fs.FileInfo, error) {
	if d, ok := l.listed(p); ok {
		if d == nil {
			return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return entryInfo{d}, nil
		}
	}
	return os.Stat(p)
}

// readDir is os.ReadDir, from the tree's listing when it has one.
func (l *loader) readDir(p string) ([]fs.DirEntry, error) {
	if l.tree != nil && l.tree.Dirs != nil {
		if ents, ok := l.tree.Dirs[p]; ok {
			return ents, nil
		}
	}
	return os.ReadDir(p)
}

// walkDir is filepath.WalkDir over the loader's view of the tree.
func (l *loader) walkDir(root string, fn fs.WalkDirFunc) error {
	info, err := l.lstat(root)
	if err != nil {
		err = fn(root, nil, err)
	} else {
		err = l.walkIn(root, fs.FileInfoToDirEntry(info), fn)
	}
	if err == filepath.SkipDir || err == filepath.SkipAll {
		return nil
	}
	return err
}

func (l *loader) walkIn(p string, d fs.DirEntry, fn fs.WalkDirFunc) error {
	if err := fn(p, d, nil); err != nil || !d.IsDir() {
		if err == filepath.SkipDir && d.IsDir() {
			err = nil
		}
		return err
	}
	ents, err := l.readDir(p)
	if err != nil {
		if err = fn(p, d, err); err != nil {
			if err == filepath.SkipDir && d.IsDir() {
				err = nil
			}
			return err
		}
	}
	for _, e := range ents {
		if err := l.walkIn(filepath.Join(p, e.Name()), e, fn); err != nil {
			if err == filepath.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
