// Command channelrepo supports bench/channel.sh: it builds a git repository
// laid out like a wharf channel (.claude-plugin/marketplace.json and each
// plugin's tree under plugins/<name>/) from the marketplaces under
// ../shared/realworld, and serves repositories with package gitserver.
//
//	channelrepo build -realworld DIR -out REPO.git   prints the commit id
//	channelrepo serve -root DIR -addr 127.0.0.1:0     prints the base URL
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/wharfhq/wharf/internal/server/gitserver"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: channelrepo build|serve [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "serve":
		err = serve(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "channelrepo: unknown command %q (build or serve)\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "channelrepo:", err)
		os.Exit(1)
	}
}

type entry struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// node is a directory being assembled into a git tree.
type node struct {
	files map[string]plumbing.Hash
	exec  map[string]bool
	dirs  map[string]*node
}

func newNode() *node {
	return &node{files: map[string]plumbing.Hash{}, exec: map[string]bool{}, dirs: map[string]*node{}}
}

func (n *node) dir(p string) *node {
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." {
			continue
		}
		c, ok := n.dirs[part]
		if !ok {
			c = newNode()
			n.dirs[part] = c
		}
		n = c
	}
	return n
}

func build(args []string) error {
	fl := flag.NewFlagSet("build", flag.ContinueOnError)
	rw := fl.String("realworld", "", "the realworld marketplaces folder")
	out := fl.String("out", "", "bare repository to create")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *rw == "" || *out == "" {
		return errors.New("build needs -realworld and -out")
	}
	repo, err := git.PlainInit(*out, true)
	if err != nil {
		return fmt.Errorf("creating %s: %w", *out, err)
	}
	st := repo.Storer
	root := newNode()
	var entries []entry
	taken := map[string]bool{}
	mkts, _ := filepath.Glob(filepath.Join(*rw, "*", ".claude-plugin", "marketplace.json"))
	sort.Strings(mkts)
	for _, mf := range mkts {
		mdir := filepath.Dir(filepath.Dir(mf))
		mname := filepath.Base(mdir)
		var m struct {
			Plugins []struct {
				Name   string          `json:"name"`
				Source json.RawMessage `json:"source"`
				Skills []string        `json:"skills"`
			} `json:"plugins"`
		}
		b, err := os.ReadFile(mf)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", mf, err)
		}
		for _, p := range m.Plugins {
			var src string
			if json.Unmarshal(p.Source, &src) != nil || !strings.HasPrefix(src, "./") {
				continue // external sources are not available offline
			}
			name := p.Name
			if taken[name] {
				name = p.Name + "-" + mname
			}
			taken[name] = true
			dst := root.dir("plugins/" + name)
			var dirs []string
			if path.Clean(src) == "." {
				dirs = p.Skills // strict:false entries list their skills
			} else {
				dirs = []string{"."}
			}
			base := filepath.Join(mdir, filepath.FromSlash(src))
			for _, d := range dirs {
				if err := addTree(st, dst.dir(path.Clean(d)), filepath.Join(base, filepath.FromSlash(d))); err != nil {
					return err
				}
			}
			entries = append(entries, entry{Name: name, Source: "./plugins/" + name})
		}
	}
	mj, err := json.MarshalIndent(map[string]any{"name": "approved", "owner": map[string]string{"name": "wharf"}, "plugins": entries}, "", "  ")
	if err != nil {
		return err
	}
	h, err := putBlob(st, append(mj, '\n'))
	if err != nil {
		return err
	}
	root.dir(".claude-plugin").files["marketplace.json"] = h
	tree, err := writeTree(st, root)
	if err != nil {
		return err
	}
	sig := object.Signature{Name: "wharf", Email: "wharf@localhost", When: time.Unix(1700000000, 0).UTC()}
	c := &object.Commit{Author: sig, Committer: sig, Message: "channel approved\n", TreeHash: tree}
	o := st.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return err
	}
	ch, err := st.SetEncodedObject(o)
	if err != nil {
		return err
	}
	if err := st.SetReference(plumbing.NewHashReference("refs/heads/main", ch)); err != nil {
		return err
	}
	if err := st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main")); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "channelrepo: %d plugins\n", len(entries))
	fmt.Println(ch)
	return nil
}

func putBlob(st storage.Storer, b []byte) (plumbing.Hash, error) {
	o := st.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	w, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(b); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(o)
}

// addTree stores the regular files under dir as blobs in n.
func addTree(st storage.Storer, n *node, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h, err := putBlob(st, b)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		parent := n.dir(path.Dir(rel))
		parent.files[path.Base(rel)] = h
		parent.exec[path.Base(rel)] = info.Mode()&0o111 != 0
		return nil
	})
}

func writeTree(st storage.Storer, n *node) (plumbing.Hash, error) {
	t := &object.Tree{}
	for name, h := range n.files {
		mode := filemode.Regular
		if n.exec[name] {
			mode = filemode.Executable
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: mode, Hash: h})
	}
	for name, c := range n.dirs {
		h, err := writeTree(st, c)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	// git's order: byte order, directories compared as if ending in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(t.Entries, func(i, j int) bool { return key(t.Entries[i]) < key(t.Entries[j]) })
	o := st.NewEncodedObject()
	if err := t.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(o)
}

func serve(args []string) error {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	root := fl.String("root", "", "folder holding <name>.git repositories")
	addr := fl.String("addr", "127.0.0.1:0", "listen address")
	if err := fl.Parse(args); err != nil {
		return err
	}
	srv := &gitserver.Server{Open: func(ctx context.Context, name string) (storage.Storer, error) {
		dir := filepath.Join(*root, name+".git")
		if strings.ContainsAny(name, `/\`) {
			return nil, gitserver.ErrNotFound
		}
		if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, gitserver.ErrNotFound)
		}
		return filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault()), nil
	}}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s\n", ln.Addr())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	return hs.Serve(ln)
}
