package resolver

import (
	"hash/maphash"
	"slices"

	"github.com/wharfhq/wharf/plugin"
)

// idTable interns plugin IDs to dense int32 indexes (0, 1, 2, ... in order of
// first insertion). It is the resolver's hot path: on 100k plugins a Go map
// keyed by plugin.ID spends its time growing, rehashing and being scanned by
// the garbage collector (its keys hold pointers), and on every lookup touches
// a 40-byte slot far from the last one. This table keeps one pointer-free
// 8-byte slot per entry (32 bits of hash, 32 bits of index) with linear
// probing, and interns marketplace names first (there are few), so that a
// plugin hashes only its name and a lookup in an unknown marketplace costs
// nothing.
//
// An idTable is not safe for concurrent writes; the resolver only shares
// tables that are no longer written.
type idTable struct {
	seed   maphash.Seed
	slots  []uint64 // 0: empty; else hash>>32<<32 | index+1
	hashes []uint64 // by index, to grow without rehashing strings
	ids    []plugin.ID
	mkts   []string          // marketplace names by index
	mktMap map[string]uint32 // only once there are many marketplaces
}

const linearMarkets = 16

func newIDTable(hint int) *idTable {
	size := 16
	for size < 2*hint {
		size <<= 1
	}
	return &idTable{
		seed:   maphash.MakeSeed(),
		slots:  make([]uint64, size),
		hashes: make([]uint64, 0, hint),
		ids:    make([]plugin.ID, 0, hint),
	}
}

func (t *idTable) len() int { return len(t.ids) }

// market returns the index of a marketplace name, adding it if add is set.
func (t *idTable) market(name string, add bool) (uint32, bool) {
	if t.mktMap != nil {
		m, ok := t.mktMap[name]
		if !ok && add {
			m, ok = uint32(len(t.mkts)), true
			t.mkts = append(t.mkts, name)
			t.mktMap[name] = m
		}
		return m, ok
	}
	for i, s := range t.mkts {
		if s == name {
			return uint32(i), true
		}
	}
	if !add {
		return 0, false
	}
	t.mkts = append(t.mkts, name)
	if len(t.mkts) > linearMarkets {
		t.mktMap = make(map[string]uint32, 2*len(t.mkts))
		for i, s := range t.mkts {
			t.mktMap[s] = uint32(i)
		}
	}
	return uint32(len(t.mkts) - 1), true
}

func (t *idTable) hash(name string, mkt uint32) uint64 {
	// A slot is never 0 whatever the hash: it stores index+1.
	return maphash.String(t.seed, name) ^ (uint64(mkt)+1)*0x9E3779B97F4A7C15
}

// find returns the index of id, or false.
func (t *idTable) find(id plugin.ID) (int32, bool) {
	m, ok := t.market(id.Source, false)
	if !ok {
		return -1, false
	}
	i, _ := t.probe(id, t.hash(id.Name, m))
	return i, i >= 0
}

// intern returns the index of id, adding it if it is new (added).
func (t *idTable) intern(id plugin.ID) (idx int32, added bool) {
	m, _ := t.market(id.Source, true)
	return t.internIn(id, m)
}

// internIn is intern when the caller already has mkt = market(id.Source).
func (t *idTable) internIn(id plugin.ID, mkt uint32) (idx int32, added bool) {
	h := t.hash(id.Name, mkt)
	i, slot := t.probe(id, h)
	if i >= 0 {
		return i, false
	}
	idx = int32(len(t.ids))
	t.ids = append(grow2(t.ids), id)
	t.hashes = append(grow2(t.hashes), h)
	t.slots[slot] = h>>32<<32 | uint64(idx+1)
	if 2*len(t.ids) > len(t.slots) {
		t.grow()
	}
	return idx, true
}

// probe returns the index of id with hash h, or -1 and the empty slot where
// it would go.
func (t *idTable) probe(id plugin.ID, h uint64) (int32, int) {
	mask := uint64(len(t.slots) - 1)
	tag := h >> 32
	for s := h & mask; ; s = (s + 1) & mask {
		v := t.slots[s]
		if v == 0 {
			return -1, int(s)
		}
		if v>>32 == tag {
			if i := int32(uint32(v)) - 1; t.ids[i] == id {
				return i, int(s)
			}
		}
	}
}

func (t *idTable) grow() {
	size := len(t.slots) << 1
	t.slots = make([]uint64, size)
	mask := uint64(size - 1)
	for i, h := range t.hashes {
		s := h & mask
		for t.slots[s] != 0 {
			s = (s + 1) & mask
		}
		t.slots[s] = h>>32<<32 | uint64(i+1)
	}
}

// grow2 makes room for one more element by doubling the capacity when the
// slice is full. append alone grows large slices by 1.25x, which on 100k
// plugins allocates (and makes the collector scan) about five times the
// final size.
func grow2[S ~[]E, E any](s S) S {
	if len(s) < cap(s) {
		return s
	}
	return slices.Grow(s, max(len(s), 8))
}
