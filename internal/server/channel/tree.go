package channel

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// file is one file of a channel's tree, in memory.
type file struct {
	path string // "/" separated, relative to the repository root
	mode filemode.FileMode
	data []byte // content, or the link target
}

// maxTreeBytes bounds one plugin's vendored tree as read into memory.
const maxTreeBytes = 256 << 20

// readTree reads a vendored plugin tree (regular files and symlinks; .git
// at its root skipped) in path order.
func readTree(root string) ([]file, error) {
	var out []file
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode().IsRegular():
			total += info.Size()
			if total > maxTreeBytes {
				return fmt.Errorf("%s: the plugin tree is larger than %d bytes", root, maxTreeBytes)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m := filemode.Regular
			if info.Mode().Perm()&0o100 != 0 {
				m = filemode.Executable
			}
			out = append(out, file{path: rel, mode: m, data: b})
		case info.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, file{path: rel, mode: filemode.Symlink, data: []byte(filepath.ToSlash(t))})
		default:
			return fmt.Errorf("%s: %s is not a regular file or symlink", root, rel)
		}
		return nil
	})
	return out, err
}

// digestFiles is the w1: digest (FORMATS.md) of files as a plugin root.
func digestFiles(files []file) string {
	type line struct{ path, text string }
	var ls []line
	for _, f := range files {
		if f.path == trust.SignaturesFile {
			continue
		}
		k := "f"
		switch f.mode {
		case filemode.Executable:
			k = "x"
		case filemode.Symlink:
			k = "l"
		}
		sum := sha256.Sum256(f.data)
		ls = append(ls, line{f.path, k + " " + hex.EncodeToString(sum[:]) + " " + f.path + "\n"})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].path < ls[j].path })
	h := sha256.New()
	for _, l := range ls {
		io.WriteString(h, l.text)
	}
	return trust.DigestPrefix + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// rewriteManifest points the dependencies of a plugin.json at the channel's
// names when Claude Code would not resolve them there as written. It
// returns the files unchanged when no rewrite is needed.
func rewriteManifest(files []file, e *Entry) ([]file, error) {
	mf := ".claude-plugin/plugin.json"
	i := sort.Search(len(files), func(i int) bool { return files[i].path >= mf })
	if i == len(files) || files[i].path != mf {
		return files, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(files[i].data, &m); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", e.Origin, mf, err)
	}
	raw, ok := m["dependencies"]
	if !ok {
		return files, nil
	}
	var declared []plugin.Dependency
	if err := json.Unmarshal(raw, &declared); err != nil {
		return nil, fmt.Errorf("%s: %s: dependencies: %w", e.Origin, mf, err)
	}
	same := len(declared) == len(e.Dependencies)
	if same {
		names := map[string]bool{}
		for _, n := range e.Dependencies {
			names[n] = true
		}
		for _, d := range declared {
			if d.Marketplace != "" || !names[d.Name] {
				same = false
			}
		}
	}
	if same {
		return files, nil
	}
	nd, _ := json.Marshal(e.Dependencies)
	m["dependencies"] = nd
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	out := append([]file(nil), files...)
	out[i] = file{path: mf, mode: files[i].mode, data: append(b, '\n')}
	return out, nil
}

// treeWriter writes blobs and trees into a git object store.
type treeWriter struct {
	s       storer.EncodedObjectStorer
	written []plumbing.Hash // every object written, in write order
}

func (w *treeWriter) put(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	o := w.s.NewEncodedObject()
	o.SetType(t)
	o.SetSize(int64(len(data)))
	wr, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := wr.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := wr.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := w.s.SetEncodedObject(o)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	w.written = append(w.written, h)
	return h, nil
}

type dirNode struct {
	files map[string]file
	dirs  map[string]*dirNode
}

func newDir() *dirNode { return &dirNode{files: map[string]file{}, dirs: map[string]*dirNode{}} }

func (n *dirNode) add(f file) {
	dir, base := path.Split(f.path)
	cur := n
	if dir != "" {
		for _, el := range splitPath(dir) {
			nx := cur.dirs[el]
			if nx == nil {
				nx = newDir()
				cur.dirs[el] = nx
			}
			cur = nx
		}
	}
	cur.files[base] = f
}

func splitPath(p string) []string {
	var out []string
	for _, el := range bytes.Split([]byte(path.Clean(p)), []byte("/")) {
		if len(el) > 0 {
			out = append(out, string(el))
		}
	}
	return out
}

// write stores n and everything under it; the same files give the same hash.
func (w *treeWriter) write(n *dirNode) (plumbing.Hash, error) {
	t := &object.Tree{}
	for name, f := range n.files {
		h, err := w.put(plumbing.BlobObject, f.data)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: f.mode, Hash: h})
	}
	for name, d := range n.dirs {
		h, err := w.write(d)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	sort.Sort(object.TreeEntrySorter(t.Entries))
	o := w.s.NewEncodedObject()
	if err := t.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := w.s.SetEncodedObject(o)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	w.written = append(w.written, h)
	return h, nil
}
