package githttp

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

// plan computes the objects to send for wants, given the commits the
// client has (common) and its shallow boundary, deepening to depth
// commits from the wants when depth > 0.
func (w *walker) plan(wants, common, clientShallow []plumbing.Hash, depth int) (*plan, error) {
	shallowSet := map[plumbing.Hash]bool{}
	for _, h := range clientShallow {
		shallowSet[h] = true
	}

	// Commits the client has: the ancestry of the common haves, stopping
	// at its shallow boundary (it lacks what lies beyond).
	have := map[plumbing.Hash]bool{}
	queue := append([]plumbing.Hash(nil), common...)
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if have[h] {
			continue
		}
		have[h] = true
		if shallowSet[h] {
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
	for h := range shallowSet {
		if w.s.HasEncodedObject(h) == nil {
			have[h] = true
		}
	}

	p := &plan{}
	send := map[plumbing.Hash]bool{}
	var sendTrees []plumbing.Hash
	edge := map[plumbing.Hash]bool{} // commits the client has, next to what is sent
	for _, h := range common {
		edge[h] = true
	}

	type item struct {
		h plumbing.Hash
		d int
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
					cq = append(cq, item{h, 1})
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
			if depth == 0 {
				// The client has it and everything below it that it
				// wants; only a deepening walks further.
				continue
			}
		}
		c, err := w.commit(it.h)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", it.h, err)
		}
		if !have[it.h] {
			send[it.h] = true
			sendTrees = append(sendTrees, c.TreeHash)
		}
		if depth > 0 && it.d >= depth {
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
		for _, ph := range c.ParentHashes {
			cq = append(cq, item{ph, it.d + 1})
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
