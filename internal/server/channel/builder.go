package channel

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// Branch is the branch a channel's repository serves (HEAD points at it).
const Branch = "refs/heads/main"

// Author is the author and committer of every channel commit.
var Author = object.Signature{Name: "wharf", Email: "wharf@localhost"}

// Epoch is the time of a channel's first commit; the commit of generation
// n is n seconds later, so a commit's time follows from its history alone.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Head is a channel's current build, as recorded in the store.
type Head struct {
	Channel     string `json:"channel"`
	Commit      string `json:"commit"`
	Tree        string `json:"tree"`
	Parent      string `json:"parent,omitempty"`
	Generation  int    `json:"generation"`
	Fingerprint string `json:"fingerprint"` // of the inputs it was built from
	Revision    int    `json:"revision"`    // of the definition
	// PolicyRevision is the server's policy revision it was built from.
	PolicyRevision uint64    `json:"policyRevision,omitempty"`
	Built          time.Time `json:"built"`   // when this commit was first built
	Checked        time.Time `json:"checked"` // when the inputs were last found to give it
	Changes        []string  `json:"changes,omitempty"`
	Plan           Plan      `json:"plan"`
}

// Builder builds channels into git repositories under Dir and records
// their heads and objects in Store. Safe for concurrent use; several
// Builders (replicas) may share one Store, each with its own Dir.
type Builder struct {
	Dir    string
	Store  store.Store
	Vendor *Vendor
	Now    func() time.Time

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// NewBuilder returns a Builder keeping repositories and vendored trees in dir.
func NewBuilder(dir string, st store.Store, v *Vendor) *Builder {
	if v == nil {
		v = &Vendor{}
	}
	if v.Dir == "" {
		v.Dir = filepath.Join(dir, "vendor")
	}
	return &Builder{Dir: dir, Store: st, Vendor: v}
}

func (b *Builder) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Builder) lock(name string) func() {
	b.mu.Lock()
	if b.locks == nil {
		b.locks = map[string]*sync.Mutex{}
	}
	l := b.locks[name]
	if l == nil {
		l = &sync.Mutex{}
		b.locks[name] = l
	}
	b.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// ReadHead returns the recorded head of a channel (ok false before its
// first build).
func ReadHead(r store.Reader, name string) (Head, bool, error) {
	v, err := r.Get(bucketHeads, name)
	if errors.Is(err, store.ErrNotFound) {
		return Head{}, false, nil
	}
	if err != nil {
		return Head{}, false, err
	}
	var h Head
	if err := json.Unmarshal(v, &h); err != nil {
		return Head{}, false, fmt.Errorf("channel %q: stored head is damaged: %w", name, err)
	}
	return h, true, nil
}

// Builds returns a channel's builds, oldest first.
func Builds(r store.Reader, name string) ([]Head, error) {
	return store.DecodeList[Head](r, bucketBuilds, name+"/", func(key string, err error) error {
		return fmt.Errorf("channel build %q: damaged: %w", key, err)
	})
}

// Result is what Ensure did.
type Result struct {
	Head    Head
	Rebuilt bool // a new commit was made by this call
	// Pruned is how many vendored copies unused for Vendor.Keep the
	// computation removed afterwards (at most once an hour); PruneErr is
	// what stopped it. Neither affects the build.
	Pruned   int
	PruneErr error
}

// Ensure makes the channel's repository serve the build of the inputs whose
// fingerprint is given: when the store's head was built from them, it is
// synced from the store without computing anything; else the channel is
// computed and, if its tree changed, committed as a child of the head.
func (b *Builder) Ensure(ctx context.Context, in Input, fingerprint string) (Result, error) {
	name := in.Definition.Name
	defer b.lock(name)()
	var h Head
	var ok bool
	if err := b.Store.View(func(r store.Reader) (err error) {
		h, ok, err = ReadHead(r, name)
		return err
	}); err != nil {
		return Result{}, err
	}
	if ok && (h.Fingerprint == fingerprint || newerInputs(h, in)) {
		return Result{Head: h}, b.sync(name, h)
	}
	res, err := b.build(ctx, in, fingerprint)
	if err == nil && in.Vendor != nil {
		// Builds are what vendors copies: they also clear out the unused.
		res.Pruned, res.PruneErr = in.Vendor.pruneSometimes(b.now())
	}
	return res, err
}

// newerInputs reports whether head was built from a later policy or
// definition than in holds: in comes from a replica that has not seen the
// latest change yet, and its build would take the channel back.
func newerInputs(h Head, in Input) bool {
	return h.PolicyRevision > in.PolicyRevision || h.Revision > in.Definition.Revision
}

func (b *Builder) repoDir(name string) string { return filepath.Join(b.Dir, "repos", name+".git") }

// Storer opens the repository of a channel built on this Builder.
func (b *Builder) Storer(name string) (storage.Storer, error) {
	dir := b.repoDir(name)
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return nil, fmt.Errorf("channel %q has no repository here yet: %w", name, ErrNotFound)
	}
	return filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault()), nil
}

// Remove deletes a channel's repository (after the channel was deleted).
func (b *Builder) Remove(name string) error {
	defer b.lock(name)()
	return os.RemoveAll(b.repoDir(name))
}

func (b *Builder) open(name string) (*filesystem.Storage, error) {
	dir := b.repoDir(name)
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		if _, err := git.PlainInit(dir, true); err != nil && !errors.Is(err, git.ErrRepositoryAlreadyExists) {
			return nil, fmt.Errorf("channel %q: create repository: %w", name, err)
		}
		s := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
		if err := s.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, Branch)); err != nil {
			return nil, err
		}
		return s, nil
	}
	return filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault()), nil
}

func (b *Builder) build(ctx context.Context, in Input, fingerprint string) (Result, error) {
	name := in.Definition.Name
	plan, err := Compute(ctx, in)
	if err != nil {
		return Result{}, err
	}
	s, err := b.open(name)
	if err != nil {
		return Result{}, err
	}
	tw := &treeWriter{s: s}
	root := newDir()
	trees := map[string][]file{} // for the flattened copies (flat.go)
	for i := range plan.Entries {
		e := &plan.Entries[i]
		files, err := readTree(e.vendored.Dir)
		if err != nil {
			return Result{}, fmt.Errorf("channel %s: read the copy of %s: %w", name, e.Origin, err)
		}
		if d := digestFiles(files); d != e.vendored.Digest {
			return Result{}, fmt.Errorf("channel %s: the copy of %s changed since it was verified (%s, recorded %s); remove %s and rebuild",
				name, e.Origin, d, e.vendored.Digest, e.vendored.Dir)
		}
		files, err = rewriteManifest(files, e)
		if err != nil {
			return Result{}, err
		}
		if d := digestFiles(files); d != e.Digest {
			e.OriginDigest, e.Digest = e.Digest, d
		}
		trees[e.Name] = files
		for _, f := range files {
			f.path = "plugins/" + e.Name + "/" + f.path
			root.add(f)
		}
	}
	mj, err := MarketplaceJSON(in.Definition, plan.Entries)
	if err != nil {
		return Result{}, err
	}
	root.add(file{path: ".claude-plugin/marketplace.json", mode: 0o100644, data: mj})
	pj, err := PinsJSON(in.Definition, plan.Entries)
	if err != nil {
		return Result{}, err
	}
	root.add(file{path: ".claude-plugin/" + plugin.PinsFileName, mode: 0o100644, data: pj})
	flat, err := flatFiles(in.Definition, plan.Entries, trees)
	if err != nil {
		return Result{}, err
	}
	for _, f := range flat {
		root.add(f)
	}
	tree, err := tw.write(root)
	if err != nil {
		return Result{}, fmt.Errorf("channel %s: write tree: %w", name, err)
	}
	if err := b.putObjects(s, tw.written); err != nil {
		return Result{}, err
	}
	now := b.now().UTC()
	for attempt := 0; attempt < 5; attempt++ {
		var h Head
		var ok bool
		if err := b.Store.View(func(r store.Reader) (err error) {
			h, ok, err = ReadHead(r, name)
			return err
		}); err != nil {
			return Result{}, err
		}
		if ok && newerInputs(h, in) {
			// Another replica committed a build of later inputs meanwhile.
			return Result{Head: h}, b.sync(name, h)
		}
		next := Head{Channel: name, Tree: tree.String(), Fingerprint: fingerprint, Revision: in.Definition.Revision,
			PolicyRevision: in.PolicyRevision, Checked: now, Plan: *plan}
		rebuilt := false
		if ok && h.Tree == tree.String() {
			if err := b.sync(name, h); err != nil {
				return Result{}, err
			}
			next.Commit, next.Parent, next.Generation, next.Built, next.Changes = h.Commit, h.Parent, h.Generation, h.Built, h.Changes
		} else {
			var parent []plumbing.Hash
			var prev *Plan
			if ok {
				if err := b.sync(name, h); err != nil {
					return Result{}, err
				}
				parent = []plumbing.Hash{plumbing.NewHash(h.Commit)}
				prev = &h.Plan
				next.Parent = h.Commit
			}
			next.Generation = h.Generation + 1
			next.Changes = changes(prev, plan)
			sig := Author
			sig.When = Epoch.Add(time.Duration(next.Generation) * time.Second)
			c := &object.Commit{Author: sig, Committer: sig, TreeHash: tree, ParentHashes: parent,
				Message: commitMessage(name, plan, next.Changes)}
			o := s.NewEncodedObject()
			if err := c.Encode(o); err != nil {
				return Result{}, err
			}
			ch, err := s.SetEncodedObject(o)
			if err != nil {
				return Result{}, err
			}
			if err := b.putObjects(s, []plumbing.Hash{ch}); err != nil {
				return Result{}, err
			}
			next.Commit, next.Built, rebuilt = ch.String(), now, true
		}
		hv, _ := json.Marshal(next)
		err := b.Store.Update(func(tx store.Tx) error {
			cur, cok, err := ReadHead(tx, name)
			if err != nil {
				return err
			}
			if cok != ok || cur.Commit != h.Commit {
				return errRaced
			}
			if _, err := Get(tx, name); err != nil {
				return err // deleted meanwhile
			}
			if err := tx.Put(bucketHeads, name, hv); err != nil {
				return err
			}
			if rebuilt {
				return tx.Put(bucketBuilds, fmt.Sprintf("%s/%08d", name, next.Generation), hv)
			}
			return nil
		})
		if errors.Is(err, errRaced) {
			continue
		}
		if err != nil {
			return Result{}, err
		}
		if err := s.SetReference(plumbing.NewHashReference(Branch, plumbing.NewHash(next.Commit))); err != nil {
			return Result{}, err
		}
		return Result{Head: next, Rebuilt: rebuilt}, nil
	}
	return Result{}, fmt.Errorf("channel %s: other replicas kept changing its head; retry", name)
}

var errRaced = errors.New("channel head changed meanwhile")

// commitMessage is a pure function of the plan and the changes.
func commitMessage(name string, p *Plan, ch []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "channel %s: %d plugins\n", name, len(p.Entries))
	if len(ch) > 0 {
		sb.WriteString("\n")
		for _, c := range ch {
			sb.WriteString(c + "\n")
		}
	}
	return sb.String()
}

// changes lists what differs between two plans' entries.
func changes(prev, next *Plan) []string {
	old := map[string]Entry{}
	if prev != nil {
		for _, e := range prev.Entries {
			old[e.Name] = e
		}
	}
	var out []string
	for _, e := range next.Entries {
		o, ok := old[e.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("added %s (%s %s, %s)", e.Name, e.Origin, e.Version, e.Digest))
		case o.Digest != e.Digest || o.Version != e.Version || o.Origin != e.Origin:
			out = append(out, fmt.Sprintf("changed %s (%s %s → %s %s, %s)", e.Name, o.Origin, o.Version, e.Origin, e.Version, e.Digest))
		}
		delete(old, e.Name)
	}
	var gone []string
	for n, e := range old {
		gone = append(gone, fmt.Sprintf("removed %s (%s)", n, e.Origin))
	}
	sort.Strings(gone)
	return append(out, gone...)
}

// Objects are kept in the store as their type byte, the number of chunks
// (2 bytes, big endian) and the first chunk; further chunks under
// <hash>.<n>. Chunks keep every value under etcd's request size limit.
const objectChunk = 512 << 10

// putObjects records objects of the local repository in the store (those
// it does not have yet), in batches.
func (b *Builder) putObjects(s *filesystem.Storage, hs []plumbing.Hash) error {
	seen := map[plumbing.Hash]bool{}
	var todo []plumbing.Hash
	for _, h := range hs {
		if !seen[h] {
			seen[h] = true
			todo = append(todo, h)
		}
	}
	for len(todo) > 0 {
		n := min(len(todo), 50)
		batch := todo[:n]
		todo = todo[n:]
		var missing []plumbing.Hash
		if err := b.Store.View(func(r store.Reader) error {
			for _, h := range batch {
				if _, err := r.Get(bucketObjects, h.String()); errors.Is(err, store.ErrNotFound) {
					missing = append(missing, h)
				} else if err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if len(missing) == 0 {
			continue
		}
		if err := b.Store.Update(func(tx store.Tx) error {
			for _, h := range missing {
				o, err := s.EncodedObject(plumbing.AnyObject, h)
				if err != nil {
					return err
				}
				rd, err := o.Reader()
				if err != nil {
					return err
				}
				data, err := io.ReadAll(rd)
				rd.Close()
				if err != nil {
					return err
				}
				chunks := (len(data) + objectChunk - 1) / objectChunk
				if chunks == 0 {
					chunks = 1
				}
				for i := 0; i < chunks; i++ {
					part := data[i*objectChunk : min(len(data), (i+1)*objectChunk)]
					key := h.String()
					var v []byte
					if i == 0 {
						v = make([]byte, 3, 3+len(part))
						v[0] = byte(o.Type())
						binary.BigEndian.PutUint16(v[1:], uint16(chunks))
					} else {
						key = fmt.Sprintf("%s.%d", key, i)
					}
					if err := tx.Put(bucketObjects, key, append(v, part...)); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// sync makes the local repository hold h's commit and everything it
// reaches (copied from the store), and point the branch at it.
func (b *Builder) sync(name string, h Head) error {
	s, err := b.open(name)
	if err != nil {
		return err
	}
	c := plumbing.NewHash(h.Commit)
	if ref, err := s.Reference(Branch); err == nil && ref.Hash() == c {
		return nil // up to date: the common case of every clone and fetch
	}
	if err := b.fetchObject(s, c); err != nil {
		return fmt.Errorf("channel %s: copy commit %s from the store: %w", name, h.Commit, err)
	}
	return s.SetReference(plumbing.NewHashReference(Branch, c))
}

func (b *Builder) has(s *filesystem.Storage, h plumbing.Hash) bool {
	return s.HasEncodedObject(h) == nil
}

// fetchObject copies h and everything it reaches from the store into s,
// writing each object only after what it points at, so that a present
// commit always means a complete history.
func (b *Builder) fetchObject(s *filesystem.Storage, h plumbing.Hash) error {
	if b.has(s, h) {
		return nil
	}
	// Commits: walk the missing ancestors first, oldest written first.
	var chain []plumbing.Hash
	for cur := h; !cur.IsZero() && !b.has(s, cur); {
		chain = append(chain, cur)
		t, data, err := b.readObject(cur)
		if err != nil {
			return err
		}
		if t != plumbing.CommitObject {
			return b.fetchTree(s, cur, t, data)
		}
		c, err := decodeCommit(s, data)
		if err != nil {
			return err
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		cur = c.ParentHashes[0]
	}
	for i := len(chain) - 1; i >= 0; i-- {
		t, data, err := b.readObject(chain[i])
		if err != nil {
			return err
		}
		c, err := decodeCommit(s, data)
		if err != nil {
			return err
		}
		if err := b.fetchObject(s, c.TreeHash); err != nil {
			return err
		}
		if err := b.write(s, chain[i], t, data); err != nil {
			return err
		}
	}
	return nil
}

func (b *Builder) fetchTree(s *filesystem.Storage, h plumbing.Hash, t plumbing.ObjectType, data []byte) error {
	if t == plumbing.TreeObject {
		o := s.NewEncodedObject()
		o.SetType(t)
		w, _ := o.Writer()
		w.Write(data)
		w.Close()
		var tr object.Tree
		if err := tr.Decode(o); err != nil {
			return err
		}
		for _, e := range tr.Entries {
			if b.has(s, e.Hash) {
				continue
			}
			et, edata, err := b.readObject(e.Hash)
			if err != nil {
				return err
			}
			if err := b.fetchTree(s, e.Hash, et, edata); err != nil {
				return err
			}
		}
	}
	return b.write(s, h, t, data)
}

func (b *Builder) write(s *filesystem.Storage, h plumbing.Hash, t plumbing.ObjectType, data []byte) error {
	o := s.NewEncodedObject()
	o.SetType(t)
	o.SetSize(int64(len(data)))
	w, err := o.Writer()
	if err != nil {
		return err
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		return err
	}
	got, err := s.SetEncodedObject(o)
	if err != nil {
		return err
	}
	if got != h {
		return fmt.Errorf("object %s from the store hashes to %s; the store is damaged", h, got)
	}
	return nil
}

func decodeCommit(s *filesystem.Storage, data []byte) (*object.Commit, error) {
	o := s.NewEncodedObject()
	o.SetType(plumbing.CommitObject)
	w, _ := o.Writer()
	w.Write(data)
	w.Close()
	var c object.Commit
	if err := c.Decode(o); err != nil {
		return nil, err
	}
	return &c, nil
}

func (b *Builder) readObject(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	var t plumbing.ObjectType
	var data []byte
	err := b.Store.View(func(r store.Reader) error {
		v, err := r.Get(bucketObjects, h.String())
		if err != nil {
			return err
		}
		if len(v) < 3 {
			return fmt.Errorf("object %s: stored record too short", h)
		}
		t = plumbing.ObjectType(v[0])
		n := int(binary.BigEndian.Uint16(v[1:3]))
		data = append(data, v[3:]...)
		for i := 1; i < n; i++ {
			p, err := r.Get(bucketObjects, fmt.Sprintf("%s.%d", h, i))
			if err != nil {
				return err
			}
			data = append(data, p...)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("read object %s from the store: %w", h, err)
	}
	return t, data, nil
}
