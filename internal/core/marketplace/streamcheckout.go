package marketplace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// streamCheckout checks a new clone out while its pack arrives: it is the
// objectSink of the clone's indexer. The commit of a shallow clone's pack
// comes first and each tree before what it holds (git's pack order); so
// as each object is decoded, its place in the work tree is mostly known,
// and a blob is written then, from the content the indexer holds, rather
// than inflated from the pack again afterwards. A blob that comes before
// its path is known is read from the pack at the end (finish), as
// checkoutFresh reads every blob.
//
// Names are checked as checkoutFresh checks them (checkTree). Anything
// unexpected (a second commit in the pack, a tree refused, a write that
// failed, an object missing, a commit that is not the clone's HEAD) makes
// finish empty the work tree and check it out with checkoutFresh, which
// then reports what is wrong as it always has.
//
// object is called from the indexer's goroutine only; finish and stop
// after the pack is done.
type streamCheckout struct {
	dir      string
	given    bool // streaming given up: finish checks out afresh
	commit   plumbing.Hash
	trees    map[plumbing.Hash][]byte   // every tree of the pack
	wantTree map[plumbing.Hash][]string // trees not come yet: their prefixes
	wantBlob map[plumbing.Hash][]fileJob
	w        *checkout // its mkdir and submodule entries
	jobs     chan blobJob
	wg       sync.WaitGroup
	results  [][]*index.Entry
	errs     []error
	stopped  bool
}

// blobJob is a file to write with its blob's content.
type blobJob struct {
	fileJob
	content []byte
}

func newStreamCheckout(dir string) *streamCheckout {
	c := &streamCheckout{
		dir:      dir,
		trees:    map[plumbing.Hash][]byte{},
		wantTree: map[plumbing.Hash][]string{},
		wantBlob: map[plumbing.Hash][]fileJob{},
		w:        &checkout{dir: dir},
		jobs:     make(chan blobJob, 256),
		results:  make([][]*index.Entry, streamWorkers),
		errs:     make([]error, streamWorkers),
	}
	for i := range streamWorkers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for j := range c.jobs {
				if c.errs[i] != nil {
					continue
				}
				e, err := writeContent(dir, j.fileJob, j.content)
				if err != nil {
					c.errs[i] = fmt.Errorf("check out %s: %w", j.name, err)
					continue
				}
				c.results[i] = append(c.results[i], e)
			}
		}()
	}
	return c
}

func (c *streamCheckout) object(h plumbing.Hash, t plumbing.ObjectType, content []byte) error {
	if c.given {
		return nil
	}
	switch t {
	case plumbing.CommitObject:
		if !c.commit.IsZero() {
			c.given = true // not a shallow clone's pack
			return nil
		}
		c.commit = h
		var co object.Commit
		if err := co.Decode(memoryObject(t, content)); err != nil {
			c.given = true
			return nil
		}
		c.want(co.TreeHash, "")
	case plumbing.TreeObject:
		c.trees[h] = bytes.Clone(content)
		prefixes := c.wantTree[h]
		delete(c.wantTree, h)
		for _, p := range prefixes {
			c.expand(h, p)
		}
	case plumbing.BlobObject:
		jobs, ok := c.wantBlob[h]
		if !ok {
			return nil
		}
		delete(c.wantBlob, h)
		for _, j := range jobs {
			c.jobs <- blobJob{fileJob: j, content: content}
		}
	}
	return nil
}

// want places tree h at prefix, now or when it comes.
func (c *streamCheckout) want(h plumbing.Hash, prefix string) {
	if _, ok := c.trees[h]; ok {
		c.expand(h, prefix)
		return
	}
	c.wantTree[h] = append(c.wantTree[h], prefix)
}

// expand makes the directories of tree h at prefix and places its files.
func (c *streamCheckout) expand(h plumbing.Hash, prefix string) {
	if c.given {
		return
	}
	var t object.Tree
	if err := t.Decode(memoryObject(plumbing.TreeObject, c.trees[h])); err != nil {
		c.given = true
		return
	}
	if err := checkTree(&t, prefix); err != nil {
		c.given = true
		return
	}
	for _, e := range t.Entries {
		name := prefix + e.Name
		switch e.Mode {
		case filemode.Dir:
			if err := c.w.mkdir(name); err != nil {
				c.given = true
				return
			}
			c.want(e.Hash, name+"/")
		case filemode.Submodule:
			if err := c.w.mkdir(name); err != nil {
				c.given = true
				return
			}
			c.w.entries = append(c.w.entries, &index.Entry{Name: name, Hash: e.Hash, Mode: filemode.Submodule})
		default:
			// Written when the blob comes; if it came already, at the end.
			c.wantBlob[e.Hash] = append(c.wantBlob[e.Hash], fileJob{name: name, hash: e.Hash, mode: e.Mode})
		}
		if c.given {
			return
		}
	}
}

// stop ends the writers (after a failed clone).
func (c *streamCheckout) stop() {
	if !c.stopped {
		c.stopped = true
		close(c.jobs)
		c.wg.Wait()
	}
}

// finish completes the checkout of head and returns its index; see
// streamCheckout.
func (c *streamCheckout) finish(open func() (objectReader, func(), error), head plumbing.Hash) (*index.Index, error) {
	c.stop()
	for _, err := range c.errs {
		if err != nil {
			c.given = true
		}
	}
	if c.given || c.commit != head || len(c.wantTree) > 0 {
		if err := emptyWorkTree(c.dir); err != nil {
			return nil, err
		}
		return checkoutFresh(open, head, c.dir)
	}
	// The blobs that came before their path (the sink keeps no blob), or
	// never (which then fails as checkoutFresh fails on a missing blob).
	var late []fileJob
	for _, jobs := range c.wantBlob {
		late = append(late, jobs...)
	}
	idx := &index.Index{Version: 2}
	idx.Entries = append(idx.Entries, c.w.entries...)
	for _, r := range c.results {
		idx.Entries = append(idx.Entries, r...)
	}
	if len(late) > 0 {
		entries, err := writeLate(open, c.dir, late)
		if err != nil {
			return nil, err
		}
		idx.Entries = append(idx.Entries, entries...)
	}
	return idx, nil
}

// writeLate writes files by reading their blobs from the clone's packs.
func writeLate(open func() (objectReader, func(), error), dir string, files []fileJob) ([]*index.Entry, error) {
	w := &checkout{dir: dir, jobs: make(chan fileJob, 256), abort: make(chan struct{})}
	return w.run(min(checkoutWorkers, len(files)), open, func() error {
		for _, j := range files {
			select {
			case w.jobs <- j:
			case <-w.abort:
				return nil // the worker's error is returned
			}
		}
		return nil
	})
}

// emptyWorkTree removes everything in dir but .git.
func emptyWorkTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == git.GitDirName {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func memoryObject(t plumbing.ObjectType, content []byte) plumbing.EncodedObject {
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	_, _ = o.Write(content)
	return o
}

// streamWorkers is how many goroutines write the files of a streamed
// checkout. One: the files come one at a time from the indexer anyway, and
// with more, the handing over between goroutines (futex wake-ups) cost
// more system time than the writes gained (31,001 files, same run: 17.6
// and 18.3 s of CPU with one writer, 25.4 and 23.7 s with four).
const streamWorkers = 1
