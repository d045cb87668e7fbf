package marketplace

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// objectReader reads objects; what a checkout needs of a storage.
type objectReader interface {
	EncodedObject(plumbing.ObjectType, plumbing.Hash) (plumbing.EncodedObject, error)
}

// packSet is the pack indexes of a clone, read once and shared by the
// readers of a checkout (each of go-git's storages would decode its own).
type packSet struct {
	dot   billy.Filesystem
	names []string // objects/pack/pack-<hash>, without extension
	idx   []*idxfile.MemoryIndex
}

func openPackSet(dot billy.Filesystem) (*packSet, error) {
	ps := &packSet{dot: dot}
	dir := path.Join("objects", "pack")
	infos, err := dot.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, fi := range infos {
		name := fi.Name()
		if !strings.HasPrefix(name, "pack-") || !strings.HasSuffix(name, ".idx") {
			continue
		}
		f, err := dot.Open(path.Join(dir, name))
		if err != nil {
			return nil, err
		}
		idx := idxfile.NewMemoryIndex()
		err = idxfile.NewDecoder(f).Decode(idx)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		ps.names = append(ps.names, path.Join(dir, strings.TrimSuffix(name, ".idx")))
		ps.idx = append(ps.idx, idx)
	}
	return ps, nil
}

// largeObjectBytes: a blob above this is streamed from the pack rather
// than inflated into memory.
const largeObjectBytes = 1 << 20

// reader returns a reader of its own (its own file positions and a small
// cache for delta bases) over the shared indexes. Objects in no pack (loose
// ones) are read through go-git's storage of the clone.
func (ps *packSet) reader(cacheBytes int64) (*packReader, error) {
	r := &packReader{ps: ps, cacheBytes: cacheBytes}
	for i, name := range ps.names {
		f, err := ps.dot.Open(name + ".pack")
		if err != nil {
			r.Close()
			return nil, err
		}
		r.packs = append(r.packs, packfile.NewPackfileWithCache(ps.idx[i], ps.dot, f, cache.NewObjectLRU(cache.FileSize(cacheBytes)), largeObjectBytes))
	}
	return r, nil
}

type packReader struct {
	ps         *packSet
	cacheBytes int64
	packs      []*packfile.Packfile
	loose      *filesystem.Storage
}

func (r *packReader) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	for i, p := range r.packs {
		off, err := r.ps.idx[i].FindOffset(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		o, err := p.GetByOffset(off)
		if err != nil {
			break // a delta on a base elsewhere: ask the storage
		}
		if t != plumbing.AnyObject && o.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return o, nil
	}
	if r.loose == nil {
		r.loose = filesystem.NewStorageWithOptions(r.ps.dot, cache.NewObjectLRU(cache.FileSize(r.cacheBytes)), filesystem.Options{ExclusiveAccess: true, KeepDescriptors: true})
	}
	return r.loose.EncodedObject(t, h)
}

// Close closes the pack files.
func (r *packReader) Close() {
	for _, p := range r.packs {
		_ = p.Close()
	}
	if r.loose != nil {
		_ = r.loose.Close()
	}
}
