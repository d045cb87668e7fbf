package gitserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// plan is what a fetch sends: the objects of the pack and the shallow
// boundary updates.
type plan struct {
	objects   []plumbing.Hash
	shallow   []plumbing.Hash // commits the client must now treat as shallow
	unshallow []plumbing.Hash // client shallow commits whose parents are now sent
	commits   int             // commits among objects
}

// walker computes plans over one object store.
type walker struct {
	ctx context.Context
	s   storer.EncodedObjectStorer
	n   int // objects visited, to check ctx now and then
}

func (w *walker) tick() error {
	w.n++
	if w.n&1023 == 0 {
		return w.ctx.Err()
	}
	return nil
}

func (w *walker) commit(h plumbing.Hash) (*object.Commit, error) {
	if err := w.tick(); err != nil {
		return nil, err
	}
	return object.GetCommit(w.s, h)
}

// hasCommit reports whether h names a commit in the store.
func (w *walker) hasCommit(h plumbing.Hash) bool {
	return w.s.HasEncodedObject(h) == nil && objType(w.s, h) == plumbing.CommitObject
}

func objType(s storer.EncodedObjectStorer, h plumbing.Hash) plumbing.ObjectType {
	o, err := s.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return plumbing.InvalidObject
	}
	return o.Type()
}

// cut says where a shallow fetch cuts history: depth commits below each
// want (or below the client's shallow boundary when relative), or at the
// commits older than since or reachable from not.
type cut struct {
	depth    int
	relative bool
	since    int64 // unix seconds; 0: none
	not      []plumbing.Hash
}

func (c cut) deepens() bool { return c.depth > 0 || c.byRevs() }
func (c cut) byRevs() bool  { return c.since > 0 || len(c.not) > 0 }

// plan computes the objects to send for wants, given the commits the
// client has (common) and its shallow boundary, deepening as cut says.
func (w *walker) plan(wants, common, clientShallow []plumbing.Hash, ct cut) (*plan, error) {
	shallowSet := map[plumbing.Hash]bool{}
	for _, h := range clientShallow {
		shallowSet[h] = true
	}

	// Commits the client has: the ancestry of the common haves, stopping
	// at its shallow boundary (it lacks what lies beyond).
	have, err := w.ancestry(common, shallowSet)
	if err != nil {
		return nil, err
	}
	for h := range shallowSet {
		if w.s.HasEncodedObject(h) == nil {
			have[h] = true
		}
	}
	// Commits deepen-not excludes.
	var notSet map[plumbing.Hash]bool
	if len(ct.not) > 0 {
		if notSet, err = w.ancestry(ct.not, nil); err != nil {
			return nil, err
		}
	}
	excluded := func(c *object.Commit) bool {
		return ct.since > 0 && c.Committer.When.Unix() < ct.since || notSet[c.Hash]
	}

	p := &plan{}
	send := map[plumbing.Hash]bool{}
	var sendTrees []plumbing.Hash
	edge := map[plumbing.Hash]bool{} // commits the client has, next to what is sent
	for _, h := range common {
		edge[h] = true
	}

	// d is a commit's depth below the wants, 1 for a want; with a
	// relative cut it counts from the client's shallow boundary instead,
	// and 0 means "above it".
	type item struct {
		h    plumbing.Hash
		d    int
		want bool
	}
	first := 1
	limit := ct.depth
	if ct.relative {
		first, limit = 0, ct.depth+1
	}
	var cq []item
	for _, h := range wants {
		// Peel tags: the tag objects are sent, their targets walked.
		for i := 0; ; i++ {
			if i > 64 {
				return nil, fmt.Errorf("tag chain at %s is longer than 64 tags", h)
			}
			o, err := w.s.EncodedObject(plumbing.AnyObject, h)
			if err != nil {
				return nil, fmt.Errorf("want %s: %w", h, err)
			}
			if o.Type() != plumbing.TagObject {
				switch o.Type() {
				case plumbing.CommitObject:
					cq = append(cq, item{h, first, true})
				case plumbing.TreeObject:
					sendTrees = append(sendTrees, h)
				case plumbing.BlobObject:
					send[h] = true
				}
				break
			}
			send[h] = true
			t, err := object.DecodeTag(w.s, o)
			if err != nil {
				return nil, err
			}
			h = t.Target
		}
	}

	visited := map[plumbing.Hash]bool{}
	for len(cq) > 0 {
		it := cq[0]
		cq = cq[1:]
		if visited[it.h] {
			continue
		}
		visited[it.h] = true
		if have[it.h] {
			edge[it.h] = true
			if !ct.deepens() {
				// The client has it and everything below it that it
				// wants; only a deepening walks further.
				continue
			}
		}
		c, err := w.commit(it.h)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", it.h, err)
		}
		if ct.byRevs() && excluded(c) {
			if it.want {
				return nil, fmt.Errorf("deepen-since/deepen-not excludes wanted commit %s itself; ask for a later time or another ref", it.h)
			}
			continue
		}
		if !have[it.h] {
			p.commits++
			send[it.h] = true
			sendTrees = append(sendTrees, c.TreeHash)
		}
		d := it.d
		if ct.relative && d == 0 && shallowSet[it.h] {
			d = 1
		}
		boundary := limit > 0 && d > 0 && d >= limit
		if ct.byRevs() {
			for _, ph := range c.ParentHashes {
				pc, err := w.commit(ph)
				if err != nil || excluded(pc) {
					boundary = true
				}
			}
		}
		if boundary {
			if !shallowSet[it.h] && len(c.ParentHashes) > 0 {
				p.shallow = append(p.shallow, it.h)
			}
			continue
		}
		if shallowSet[it.h] && len(c.ParentHashes) > 0 {
			// The client has this commit but not its parents: they
			// come now, within the requested depth.
			p.unshallow = append(p.unshallow, it.h)
		}
		next := d
		if d > 0 {
			next = d + 1
		}
		for _, ph := range c.ParentHashes {
			cq = append(cq, item{h: ph, d: next})
		}
	}

	// Trees and blobs the client has: those of the edge commits.
	seen := map[plumbing.Hash]bool{}
	for h := range edge {
		c, err := w.commit(h)
		if err != nil {
			continue
		}
		if err := w.markTree(c.TreeHash, seen, nil); err != nil {
			return nil, err
		}
	}
	for _, t := range sendTrees {
		if err := w.markTree(t, seen, send); err != nil {
			return nil, err
		}
	}

	p.objects = make([]plumbing.Hash, 0, len(send))
	for h := range send {
		p.objects = append(p.objects, h)
	}
	return p, nil
}

// markTree walks tree h, adding every object not yet seen to seen and,
// when add is non-nil, to add.
func (w *walker) markTree(h plumbing.Hash, seen, add map[plumbing.Hash]bool) error {
	if seen[h] {
		return nil
	}
	seen[h] = true
	if add != nil {
		add[h] = true
	}
	if err := w.tick(); err != nil {
		return err
	}
	t, err := object.GetTree(w.s, h)
	if err != nil {
		if add == nil && errors.Is(err, plumbing.ErrObjectNotFound) {
			return nil
		}
		return fmt.Errorf("tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		switch e.Mode {
		case filemode.Submodule:
			continue
		case filemode.Dir:
			if err := w.markTree(e.Hash, seen, add); err != nil {
				return err
			}
		default:
			if !seen[e.Hash] {
				seen[e.Hash] = true
				if add != nil {
					add[e.Hash] = true
				}
			}
		}
	}
	return nil
}

// ancestry returns the commits reachable from tips (missing ones skipped),
// not walking past the commits in stop.
func (w *walker) ancestry(tips []plumbing.Hash, stop map[plumbing.Hash]bool) (map[plumbing.Hash]bool, error) {
	seen := map[plumbing.Hash]bool{}
	queue := append([]plumbing.Hash(nil), tips...)
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		if stop[h] {
			continue
		}
		c, err := w.commit(h)
		if err != nil {
			if errors.Is(err, plumbing.ErrObjectNotFound) {
				continue
			}
			return nil, err
		}
		queue = append(queue, c.ParentHashes...)
	}
	return seen, nil
}
