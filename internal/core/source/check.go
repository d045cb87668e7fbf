package source

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/wharfhq/wharf/plugin"
)

// Check runs Fetch on a relative source without keeping the tree: it
// returns what Fetch would return for req (the same refusals, entries,
// bytes and content hashes) and leaves nothing behind. req.Dest, Durable
// and ReadOnly are not used. `wharf validate` asks it, for every plugin a
// marketplace stores, whether install would take the plugin.
//
// Where it can, Check runs Fetch's walk and tree code over a memory of the
// entries made instead of a directory on disk: each file is still opened
// and read to its end, but nothing is created, so a check costs about a
// read of the tree. A directory on disk answers for itself where the
// memory could not stand in for it, and Check then fetches the tree into a
// scratch directory, as Fetch would, and removes it: when the tree holds a
// symlink (whether a chain of links stays inside the plugin is read from
// the file system once the tree is complete), when a name is not plain
// ASCII or two names differ only in ASCII case (file systems that fold
// case or normalize Unicode would see one entry where the memory sees
// two), and on systems other than unix ones, whose file systems refuse
// names unix ones take.
//
// A source other than relative is an error: Check fetches nothing.
func (f *Fetcher) Check(ctx context.Context, req Request) (*Result, error) {
	if req.Source.Kind != plugin.SourceRelative {
		return nil, failf(&req, "check a plugin stored in the marketplace", "%w: Check reads only relative sources, not %s", ErrUnsupported, req.Source.Kind)
	}
	req.Dest, req.Durable, req.ReadOnly = "", false, false
	if memoryCheck {
		t := &tree{fs: newMemFS(), limits: f.Limits.withDefaults(), dirs: map[string]bool{}, written: map[string]WrittenFile{}}
		res, err := f.fetch(ctx, req, t)
		if !errors.Is(err, errNeedsDisk) {
			return res, err
		}
	}
	return f.fetchScratch(ctx, req)
}

// fetchScratch is Fetch into a scratch directory that is removed after.
func (f *Fetcher) fetchScratch(ctx context.Context, req Request) (*Result, error) {
	dir, err := os.MkdirTemp("", "wharf-check-")
	if err != nil {
		return nil, fail(&req, "check the temporary directory (TMPDIR) and its permissions", err)
	}
	defer os.RemoveAll(dir)
	req.Dest = dir
	return f.Fetch(ctx, req)
}

// errNeedsDisk is memFS's answer where only a directory on disk can say
// what Fetch would do; Check then fetches into one. It never leaves Check.
var errNeedsDisk = errors.New("the tree must be written to disk to be checked")

// memFS is a treeFS that keeps only the type of each entry made, by exact
// name, answering as an empty directory on a case-sensitive file system
// that keeps names as given would: fs.ErrExist for a name already made
// (the tree then asks lstatMode what is there), and the mode of what was
// made. Symlinks, names with a byte outside ASCII and a name that differs
// from one already made only in ASCII case are errNeedsDisk.
type memFS struct {
	made   map[string]fs.FileMode // slash path → fs.ModeDir or 0 (a regular file)
	folded map[string]string      // ASCII-lowercased path → the path made
}

func newMemFS() *memFS {
	return &memFS{made: map[string]fs.FileMode{".": fs.ModeDir}, folded: map[string]string{".": "."}}
}

// make records name as mode, or says why it cannot: fs.ErrExist when the
// name is taken, errNeedsDisk when a disk could disagree with the memory.
func (m *memFS) make(op, name string, mode fs.FileMode) error {
	if _, ok := m.made[name]; ok {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrExist}
	}
	key, ok := foldASCII(name)
	if !ok {
		return errNeedsDisk
	}
	if prev, ok := m.folded[key]; ok && prev != name {
		return errNeedsDisk
	}
	m.made[name], m.folded[key] = mode, name
	return nil
}

// foldASCII lowercases the ASCII letters of name; false when name has a
// byte outside ASCII.
func foldASCII(name string) (string, bool) {
	var b []byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 0x80:
			return "", false
		case 'A' <= c && c <= 'Z':
			if b == nil {
				b = []byte(name)
			}
			b[i] = c + 'a' - 'A'
		}
	}
	if b == nil {
		return name, true
	}
	return string(b), true
}

func (m *memFS) mkdir(name string) error { return m.make("mkdir", name, fs.ModeDir) }

func (m *memFS) lstatMode(name string) (fs.FileMode, error) {
	mode, ok := m.made[name]
	if !ok {
		return 0, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
	}
	return mode, nil
}

func (m *memFS) create(name string, _ fs.FileMode) (treeFile, error) {
	if err := m.make("open", name, 0); err != nil {
		return nil, err
	}
	return memFile{}, nil
}

func (m *memFS) symlink(string, string) error { return errNeedsDisk }

func (m *memFS) finishDir(string, bool, bool) error { return nil }

func (m *memFS) syncAllChosen(SyncMode) bool { return false }

func (m *memFS) syncAll() error { return nil }

func (m *memFS) close() {}

// memFile takes a file's bytes and keeps none.
type memFile struct{}

func (memFile) Write(p []byte) (int, error) { return len(p), nil }

func (memFile) finish(bool) error { return nil }
func (memFile) close() error      { return nil }

var _ io.Writer = memFile{}
