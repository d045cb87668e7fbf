package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
)

// The server's inventory lives in four buckets of a store.Store (bbolt or
// etcd), so that every replica over one store sees the same fleet:
//
//	inventory-machines   machine id → the current report, its hash and owner
//	inventory-by-plugin/<plugin id>   machine id → that machine's installs
//	inventory-counts     "<plugin id>|<shard>" → counts of one shard of machines
//	inventory-seen       machine id → {when it last reported, the hash of its
//	                     indexed report, its owner}: what an unchanged report reads
//	inventory-usage      token id → {machines it reported, plugin ids their
//	                     current reports list}: what its Quota is checked against
//
// "Who has X" is a range read of X's own bucket: it reads X's machines and
// nothing else, however large the fleet (a bucket per plugin, rather than
// a key prefix in one bucket, so that a paged read's range ends where X's
// machines end: etcd walks a range's whole extent to count it). The counts are
// kept incrementally in the transaction that changes the index, split into
// Shards keys per plugin so that machines reporting at once through several
// replicas rarely touch the same key.
const (
	BucketMachines = "inventory-machines"
	BucketByPlugin = "inventory-by-plugin" // + "/" + plugin id: one bucket per plugin
	BucketCounts   = "inventory-counts"
	BucketSeen     = "inventory-seen"
	BucketUsage    = "inventory-usage"
)

// keySep separates a plugin id from a shard in count keys; it cannot
// appear in a plugin id.
const keySep = "|"

// IndexBucket is the bucket of plugin id's machines.
func IndexBucket(id string) string { return BucketByPlugin + "/" + id }

// OwnerError is a report for a machine whose record belongs to another
// token: the first report binds a machine id to the token that sent it.
type OwnerError struct {
	Machine string
	Owner   string // the token id the machine is bound to
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("machine %s is bound to another token (%s): a token writes only the machines it reported first; report with that token (a new home creates a new machine id)", e.Machine, e.Owner)
}

// Quota bounds what one token may put in the inventory. Zero fields are
// no bound.
type Quota struct {
	// Machines is how many machine ids the token may report (each id
	// counts from its first report on).
	Machines int
	// Plugins is how many plugin ids the current reports of all the
	// token's machines may list together (a plugin on two machines counts
	// twice).
	Plugins int
}

// QuotaError is a report that would take its token past its Quota; nothing
// was stored.
type QuotaError struct {
	Token string
	What  string // "machines" or "plugins"
	Limit int
	// Have is what the token has now; Want what the report would make it.
	Have, Want int
}

func (e *QuotaError) Error() string {
	if e.What == "machines" {
		return fmt.Sprintf("token %s may report %d machine(s) and has reported %d; a new machine needs an admin to create a token for it, or one with a larger maxMachines",
			e.Token, e.Limit, e.Have)
	}
	return fmt.Sprintf("token %s may report %d plugin ids across its machines; this report would make it %d (now %d): report only installed plugins, or ask an admin for a token with a larger maxPlugins",
		e.Token, e.Limit, e.Want, e.Have)
}

// Usage is what a token has in the inventory (its value in BucketUsage).
type Usage struct {
	Machines int `json:"m"`
	Plugins  int `json:"p"`
}

// NotFoundError is a machine or plugin the inventory has no record of.
type NotFoundError struct {
	What string // "machine" or "plugin"
	ID   string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no %s %s in the inventory; it appears once a client reports it", e.What, e.ID)
}

// Options tune a Store. Zero values take the documented defaults.
type Options struct {
	// Shards is how many count keys each plugin is split into (default 32).
	// All replicas over one store must use the same value.
	Shards int
	// PersistSeenEvery is how often, at most, an unchanged report writes
	// the machine's last-seen time to the store (default 5 minutes).
	// Between writes a replica keeps it in memory.
	PersistSeenEvery time.Duration
	// BatchPlugins is how many plugins one transaction re-indexes (default
	// 24: within etcd's default of 128 operations per transaction).
	BatchPlugins int
	// MaxCached bounds the machines a replica remembers (default 1<<20).
	MaxCached int
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Store is the server side of the inventory: one current report per
// machine over a store.Store. It is safe for concurrent use; several
// replicas may share one store.
//
// An unchanged report (same Hash as the stored one) is a touch: it reads
// one small key (the machine's seen record: last-seen time, hash of the
// stored report, owner) and writes nothing, except the last-seen time at
// most once every PersistSeenEvery. The replica that received it keeps the
// latest last-seen time in memory meanwhile. Reading the hash from the
// store rather than trusting a replica's memory keeps a report that returns
// to an earlier inventory through another replica from being taken for
// unchanged.
type Store struct {
	st   store.Store
	opts Options

	mu     sync.Mutex
	cached map[string]time.Time // machine → latest report received here

	histMu   sync.Mutex
	recorded map[string]time.Time // plugin → when this replica last recorded its day (history.go)

	stats struct {
		reports, changed, touches, seenWrites, txs atomic.Int64
	}
}

// seenRecord is a machine's value in BucketSeen.
type seenRecord struct {
	Time time.Time `json:"t"`
	// Hash is the hash of the stored report once it is fully indexed;
	// empty while it is being indexed.
	Hash  string `json:"h,omitempty"`
	Owner string `json:"o,omitempty"`
	// Kind is the client kind of the machine's current report (Client.Kind;
	// the report's hash covers it, so a touch keeps it).
	Kind string `json:"k,omitempty"`
}

func parseSeen(raw []byte) (seenRecord, error) {
	var sr seenRecord
	err := json.Unmarshal(raw, &sr)
	return sr, err
}

// Open returns the inventory kept in st.
func Open(st store.Store, opts Options) *Store {
	if opts.Shards <= 0 {
		opts.Shards = 32
	}
	if opts.PersistSeenEvery <= 0 {
		opts.PersistSeenEvery = 5 * time.Minute
	}
	if opts.BatchPlugins <= 0 {
		opts.BatchPlugins = 24
	}
	if opts.MaxCached <= 0 {
		opts.MaxCached = 1 << 20
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{st: st, opts: opts, cached: map[string]time.Time{}}
}

// Stats counts what a Store did since Open.
type Stats struct {
	Reports    int64 // Put calls that passed the owner check
	Changed    int64 // reports that replaced the stored one
	Touches    int64 // unchanged reports
	SeenWrites int64 // last-seen times persisted for unchanged reports
	Txs        int64 // read-write transactions committed
}

// Stats returns the counters.
func (s *Store) Stats() Stats {
	return Stats{Reports: s.stats.reports.Load(), Changed: s.stats.changed.Load(), Touches: s.stats.touches.Load(),
		SeenWrites: s.stats.seenWrites.Load(), Txs: s.stats.txs.Load()}
}

// Install is one installation of a plugin on a machine, as indexed.
type Install struct {
	Version string `json:"v,omitempty"`
	Digest  string `json:"d,omitempty"`
	Scope   string `json:"sc"`
	Install string `json:"i"`
	Enabled bool   `json:"e,omitempty"`
	State   string `json:"st"`
	Reason  string `json:"r,omitempty"`
}

func installOf(p inventory.Plugin) Install {
	return Install{Version: p.Version, Digest: p.Digest, Scope: p.Scope, Install: p.Install, Enabled: p.Enabled, State: p.State, Reason: p.Reason}
}

// record is a machine's stored inventory.
type record struct {
	Token string `json:"token"`
	Hash  string `json:"hash"`
	// Indexed is the hash whose index entries are all written; it differs
	// from Hash only while a report too large for one transaction is being
	// indexed (or was interrupted: the next report finishes it).
	Indexed string `json:"indexed"`
	// Pending lists plugins whose entries a partly indexed report may have
	// to remove.
	Pending  []string         `json:"pending,omitempty"`
	Received time.Time        `json:"received"`
	Report   inventory.Report `json:"report"`
}

// Counts is what the fleet has of one plugin.
type Counts struct {
	Plugin   string         `json:"plugin"`
	Machines int            `json:"machines"`
	Versions map[string]int `json:"versions"`
	Digests  map[string]int `json:"digests"`
	States   map[string]int `json:"states"`
	Installs map[string]int `json:"installs"`
}

func newCounts(id string) Counts {
	return Counts{Plugin: id, Versions: map[string]int{}, Digests: map[string]int{}, States: map[string]int{}, Installs: map[string]int{}}
}

func bump(m map[string]int, k string, d int) {
	if m[k] += d; m[k] == 0 {
		delete(m, k)
	}
}

// add counts one machine's installs of the plugin, d = +1 or -1.
func (c *Counts) add(ins []Install, d int) {
	if len(ins) == 0 {
		return
	}
	c.Machines += d
	for _, in := range ins {
		bump(c.Versions, in.Version, d)
		bump(c.Digests, in.Digest, d)
		bump(c.States, in.State, d)
		bump(c.Installs, in.Install, d)
	}
}

func (c *Counts) merge(o Counts) {
	c.Machines += o.Machines
	for _, p := range []struct{ to, from map[string]int }{{c.Versions, o.Versions}, {c.Digests, o.Digests}, {c.States, o.States}, {c.Installs, o.Installs}} {
		for k, v := range p.from {
			bump(p.to, k, v)
		}
	}
}

func (c *Counts) empty() bool {
	return c.Machines == 0 && len(c.Versions) == 0 && len(c.Digests) == 0 && len(c.States) == 0 && len(c.Installs) == 0
}

func (s *Store) shard(machine string) string {
	h := fnv.New32a()
	h.Write([]byte(machine))
	return fmt.Sprintf("%03d", h.Sum32()%uint32(s.opts.Shards))
}

// group returns the report's installs by plugin id.
func group(r inventory.Report) map[string][]Install {
	out := map[string][]Install{}
	for _, p := range r.Plugins {
		out[p.ID] = append(out[p.ID], installOf(p))
	}
	return out
}

// seenHere returns the latest report of machine this replica received.
func (s *Store) seenHere(machine string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cached[machine]
}

func (s *Store) remember(machine string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cached[machine]; !ok && len(s.cached) >= s.opts.MaxCached {
		clear(s.cached) // only the in-memory last-seen times are lost
	}
	if t.After(s.cached[machine]) {
		s.cached[machine] = t
	}
}

func (s *Store) readSeen(id string) (seenRecord, bool, error) {
	var sr seenRecord
	found := false
	err := s.st.View(func(r store.Reader) error {
		raw, err := r.Get(BucketSeen, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if sr, err = parseSeen(raw); err != nil {
			return fmt.Errorf("inventory: seen record of %s: corrupt: %w", id, err)
		}
		return nil
	})
	return sr, found, err
}

// Put stores r, validated, as machine r.Machine.ID's current inventory for
// token, with no quota. It reports whether the stored inventory changed. A
// machine bound to another token gives *OwnerError and changes nothing.
func (s *Store) Put(token string, r inventory.Report) (bool, error) {
	return s.PutWithin(token, Quota{}, r)
}

// PutWithin is Put within token's quota q: a report that would take the
// token past it gives *QuotaError and changes nothing. The token's usage
// is kept in the transaction that stores the report, so replicas agree on
// it.
func (s *Store) PutWithin(token string, q Quota, r inventory.Report) (bool, error) {
	if err := inventory.Validate(&r); err != nil {
		return false, err
	}
	id := r.Machine.ID
	h := inventory.Hash(r)
	now := s.opts.Now().UTC()
	sr, known, err := s.readSeen(id)
	if err != nil {
		return false, err
	}
	if known && sr.Owner != "" && sr.Owner != token {
		return false, &OwnerError{Machine: id, Owner: sr.Owner}
	}
	if known && sr.Hash == h {
		s.stats.reports.Add(1)
		return false, s.touch(id, h, token, r.Client.Kind, sr, now)
	}
	var old record
	var found, unchanged bool
	var seen time.Time
	var done bool
	groups := group(r)
	err = s.st.Update(func(tx store.Tx) error {
		old, found, unchanged, done = record{}, false, false, false
		// One read for the machine's record and, when the report fits in
		// this transaction, the counts of the plugins it reports; a second
		// only for what the old record adds.
		keys := []store.BucketKey{{Bucket: BucketMachines, Key: id}, {Bucket: BucketUsage, Key: token}}
		if len(groups) <= s.opts.BatchPlugins {
			for p := range groups {
				keys = append(keys, s.countsKey(p, id))
			}
		}
		vals, err := store.GetMany(tx, keys)
		if err != nil {
			return err
		}
		if vals[0] != nil {
			if err := json.Unmarshal(vals[0], &old); err != nil {
				return fmt.Errorf("inventory: machine %s: corrupt record: %w", id, err)
			}
			found = true
		}
		if found && old.Token != token {
			return &OwnerError{Machine: id, Owner: old.Token}
		}
		if found && old.Hash == h && old.Indexed == h {
			// The seen record lacked the hash (it was being indexed, or
			// was lost): put it back, so the next report is a touch.
			unchanged, seen = true, now
			return putJSON(tx, BucketSeen, id, seenRecord{Time: now, Hash: h, Owner: token, Kind: r.Client.Kind})
		}
		var use Usage
		if vals[1] != nil {
			if err := json.Unmarshal(vals[1], &use); err != nil {
				return fmt.Errorf("inventory: usage of token %s: corrupt: %w", token, err)
			}
		}
		next := use
		if !found {
			next.Machines++
		}
		var oldIDs int
		if found {
			oldIDs = len(group(old.Report))
		}
		next.Plugins = max(0, next.Plugins+len(groups)-oldIDs)
		if q.Machines > 0 && !found && next.Machines > q.Machines {
			return &QuotaError{Token: token, What: "machines", Limit: q.Machines, Have: use.Machines, Want: next.Machines}
		}
		if q.Plugins > 0 && next.Plugins > q.Plugins && next.Plugins > use.Plugins {
			return &QuotaError{Token: token, What: "plugins", Limit: q.Plugins, Have: use.Plugins, Want: next.Plugins}
		}
		if next != use {
			if err := putJSON(tx, BucketUsage, token, next); err != nil {
				return err
			}
		}
		touched := map[string]bool{}
		for p := range groups {
			touched[p] = true
		}
		oldGroups := map[string][]Install{}
		if found {
			oldGroups = group(old.Report)
			for p := range oldGroups {
				touched[p] = true
			}
			for _, p := range old.Pending {
				touched[p] = true
			}
		}
		rec := record{Token: token, Hash: h, Indexed: h, Received: now, Report: r}
		if len(touched) <= s.opts.BatchPlugins {
			// A machine with no record has no index entries (the record is
			// written first, or with them); a fully indexed record names
			// its entries; otherwise they are read.
			var prev map[string][]Install
			if !found || old.Hash == old.Indexed {
				prev = oldGroups
			}
			counts := map[string][]byte{}
			for i, k := range keys[2:] {
				counts[k.Key] = vals[i+2]
			}
			if err := s.indexAll(tx, id, slices.Sorted(maps.Keys(touched)), prev, groups, counts); err != nil {
				return err
			}
			done = true
		} else {
			// Too many for one transaction: write the record first, with
			// what is still to remove, then index in batches.
			rec.Indexed = old.Indexed
			for p := range touched {
				if _, ok := groups[p]; !ok {
					rec.Pending = append(rec.Pending, p)
				}
			}
			slices.Sort(rec.Pending)
		}
		if err := putJSON(tx, BucketMachines, id, rec); err != nil {
			return err
		}
		sr := seenRecord{Time: now, Owner: token, Kind: r.Client.Kind}
		if done {
			sr.Hash = h
		}
		return putJSON(tx, BucketSeen, id, sr)
	})
	if err != nil {
		return false, err
	}
	s.stats.reports.Add(1)
	if unchanged {
		s.stats.txs.Add(1)
		s.remember(id, seen)
		return false, nil
	}
	s.stats.txs.Add(1)
	if !done {
		if err := s.indexInBatches(id, h, groups, old, found); err != nil {
			return true, err
		}
	}
	s.stats.changed.Add(1)
	s.remember(id, now)
	return true, nil
}

// indexInBatches re-indexes a large report's plugins, BatchPlugins per
// transaction, then marks the record indexed. Each batch reads the index
// entries it replaces, so a batch applied twice counts once.
func (s *Store) indexInBatches(id, h string, groups map[string][]Install, old record, found bool) error {
	var ids []string
	seen := map[string]bool{}
	for p := range groups {
		ids, seen[p] = append(ids, p), true
	}
	if found {
		for _, p := range old.Report.Plugins {
			if !seen[p.ID] {
				ids, seen[p.ID] = append(ids, p.ID), true
			}
		}
		for _, p := range old.Pending {
			if !seen[p] {
				ids, seen[p] = append(ids, p), true
			}
		}
	}
	slices.Sort(ids)
	for chunk := range slices.Chunk(ids, s.opts.BatchPlugins) {
		if err := s.st.Update(func(tx store.Tx) error {
			return s.indexAll(tx, id, chunk, nil, groups, map[string][]byte{})
		}); err != nil {
			return fmt.Errorf("inventory: machine %s: indexing its report (the next report finishes it): %w", id, err)
		}
		s.stats.txs.Add(1)
	}
	err := s.st.Update(func(tx store.Tx) error {
		raw, err := tx.Get(BucketMachines, id)
		if err != nil {
			return err
		}
		var rec record
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("inventory: machine %s: corrupt record: %w", id, err)
		}
		if rec.Hash != h {
			return nil // a later report took over; it finishes the index
		}
		rec.Indexed, rec.Pending = h, nil
		if err := putJSON(tx, BucketMachines, id, rec); err != nil {
			return err
		}
		return putJSON(tx, BucketSeen, id, seenRecord{Time: s.opts.Now().UTC(), Hash: h, Owner: rec.Token, Kind: rec.Report.Client.Kind})
	})
	if err == nil {
		s.stats.txs.Add(1)
	}
	return err
}

// countsKey is the counts key of plugin p that machine's installs count in.
func (s *Store) countsKey(p, machine string) store.BucketKey {
	return store.BucketKey{Bucket: BucketCounts, Key: p + keySep + s.shard(machine)}
}

// indexAll replaces machine's index entries for plugins ps by next's and
// moves the counts with them. prev holds the entries being replaced when
// they are known (nil: read them); counts holds count values already read,
// by key. What is still missing is read in one request.
func (s *Store) indexAll(tx store.Tx, machine string, ps []string, prev, next map[string][]Install, counts map[string][]byte) error {
	var keys []store.BucketKey
	for _, p := range ps {
		if ck := s.countsKey(p, machine); !hasKey(counts, ck.Key) {
			keys = append(keys, ck)
		}
		if prev == nil {
			keys = append(keys, store.BucketKey{Bucket: IndexBucket(p), Key: machine})
		}
	}
	vals, err := store.GetMany(tx, keys)
	if err != nil {
		return err
	}
	entries := map[string][]byte{}
	for i, k := range keys {
		if k.Bucket == BucketCounts {
			counts[k.Key] = vals[i]
		} else {
			entries[k.Bucket] = vals[i]
		}
	}
	for _, p := range ps {
		var before []Install
		if prev != nil {
			before = prev[p]
		} else if raw := entries[IndexBucket(p)]; raw != nil {
			if err := json.Unmarshal(raw, &before); err != nil {
				return fmt.Errorf("inventory: index entry %s of %s: corrupt: %w", machine, p, err)
			}
		}
		if err := s.index(tx, p, machine, before, next[p], counts); err != nil {
			return err
		}
	}
	return nil
}

func hasKey(m map[string][]byte, k string) bool {
	_, ok := m[k]
	return ok
}

// index replaces machine's entry for plugin p, prev, by next (nil: none)
// and moves the counts with it; counts holds the plugin's count value as
// read (nil: none yet) and takes the new one.
func (s *Store) index(tx store.Tx, p, machine string, prev, next []Install, counts map[string][]byte) error {
	if slices.Equal(prev, next) {
		return nil
	}
	ck := s.countsKey(p, machine)
	c := newCounts(p)
	if raw := counts[ck.Key]; raw != nil {
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("inventory: counts %s: corrupt: %w", ck.Key, err)
		}
		c.fill()
	}
	c.add(prev, -1)
	c.add(next, +1)
	var err error
	if c.empty() {
		counts[ck.Key] = nil
		err = tx.Delete(BucketCounts, ck.Key)
	} else {
		raw, merr := json.Marshal(c)
		if merr != nil {
			return merr
		}
		counts[ck.Key] = raw
		err = tx.Put(BucketCounts, ck.Key, raw)
	}
	if err != nil {
		return err
	}
	if len(next) == 0 {
		return tx.Delete(IndexBucket(p), machine)
	}
	return putJSON(tx, IndexBucket(p), machine, next)
}

func (c *Counts) fill() {
	for _, m := range []*map[string]int{&c.Versions, &c.Digests, &c.States, &c.Installs} {
		if *m == nil {
			*m = map[string]int{}
		}
	}
}

func putJSON(tx store.Tx, bucket, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Put(bucket, key, raw)
}

// touch records an unchanged report: in memory, and in the store only when
// the persisted last-seen time (persisted) is PersistSeenEvery old, and then
// only if the seen record still names the same report and owner.
// A seen record without the client kind (written by an older server) is
// completed at once.
func (s *Store) touch(id, h, token, kind string, persisted seenRecord, now time.Time) error {
	s.stats.touches.Add(1)
	s.remember(id, now)
	if now.Sub(persisted.Time) < s.opts.PersistSeenEvery && persisted.Kind == kind {
		return nil
	}
	wrote := false
	if err := s.st.Update(func(tx store.Tx) error {
		wrote = false
		raw, err := tx.Get(BucketSeen, id)
		if err != nil {
			return err
		}
		cur, err := parseSeen(raw)
		if err != nil || cur.Hash != h || cur.Owner != token || (!cur.Time.Before(now) && cur.Kind == kind) {
			return nil // another report moved it meanwhile
		}
		wrote = true
		return putJSON(tx, BucketSeen, id, seenRecord{Time: latest(cur.Time, now), Hash: h, Owner: token, Kind: kind})
	}); err != nil {
		return err
	}
	if wrote {
		s.stats.seenWrites.Add(1)
		s.stats.txs.Add(1)
	}
	return nil
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// MachineInfo is one machine's current inventory.
type MachineInfo struct {
	Report   inventory.Report `json:"report"`
	Token    string           `json:"token"`    // the token the machine is bound to
	Received time.Time        `json:"received"` // when this inventory arrived
	// LastSeen is the latest report the store or this replica knows of;
	// another replica's may be up to PersistSeenEvery later.
	LastSeen time.Time `json:"lastSeen"`
	// Indexing is true while a large report's index is incomplete.
	Indexing bool `json:"indexing,omitempty"`
}

// Machine returns machine id's current inventory, or *NotFoundError.
func (s *Store) Machine(id string) (MachineInfo, error) {
	var mi MachineInfo
	err := s.st.View(func(r store.Reader) error {
		raw, err := r.Get(BucketMachines, id)
		if errors.Is(err, store.ErrNotFound) {
			return &NotFoundError{What: "machine", ID: id}
		}
		if err != nil {
			return err
		}
		var rec record
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("inventory: machine %s: corrupt record: %w", id, err)
		}
		mi = MachineInfo{Report: rec.Report, Token: rec.Token, Received: rec.Received, LastSeen: rec.Received, Indexing: rec.Indexed != rec.Hash}
		if v, err := r.Get(BucketSeen, id); err == nil {
			if sr, err := parseSeen(v); err == nil && sr.Time.After(mi.LastSeen) {
				mi.LastSeen = sr.Time
			}
		}
		return nil
	})
	if err != nil {
		return MachineInfo{}, err
	}
	mi.LastSeen = s.lastSeen(id, mi.LastSeen)
	return mi, nil
}

func (s *Store) lastSeen(id string, stored time.Time) time.Time {
	if t := s.seenHere(id); t.After(stored) {
		return t
	}
	return stored
}

// Plugins returns the counts of every plugin in the fleet, in PluginsPage
// order. It reads the whole fleet: servers page with PluginsPage.
func (s *Store) Plugins() ([]Counts, error) {
	var out []Counts
	after := ""
	for {
		page, next, err := s.PluginsPage(after, 1000)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		after = next
	}
}

// PluginsPage returns the counts of at most limit plugins after plugin id
// after ("" for the first), and the cursor of the next page ("" on the
// last). Plugins come in the order of their count keys (by id, an id
// sorting before any longer id it begins, with "|" as its end); the read
// stops at the page's end.
func (s *Store) PluginsPage(after string, limit int) ([]Counts, string, error) {
	if limit <= 0 {
		limit = 100
	}
	from := ""
	if after != "" {
		// Past every shard key of after ("<id>|000"...): no plugin id
		// holds keySep, so "<id>|\x7f" sorts after them and before the
		// next plugin's keys.
		from = after + keySep + "\x7f"
	}
	step := min(4096, (limit+1)*s.opts.Shards)
	var out []Counts
	next := ""
	err := s.st.View(func(r store.Reader) error {
		out, next = []Counts{}, ""
		cur := from
		for {
			kvs, err := r.ListAfter(BucketCounts, cur, step)
			if err != nil {
				return err
			}
			for _, kv := range kvs {
				p, _, _ := strings.Cut(kv.Key, keySep)
				if len(out) == 0 || out[len(out)-1].Plugin != p {
					if len(out) == limit {
						next = out[limit-1].Plugin
						return nil
					}
					out = append(out, newCounts(p))
				}
				var c Counts
				if err := json.Unmarshal(kv.Value, &c); err != nil {
					return fmt.Errorf("inventory: counts %s: corrupt: %w", kv.Key, err)
				}
				out[len(out)-1].merge(c)
			}
			if len(kvs) < step {
				return nil
			}
			cur = kvs[len(kvs)-1].Key
		}
	})
	return out, next, err
}

// TokenUsage returns what token has in the inventory: the machines it
// reported and the plugin ids their current reports list.
func (s *Store) TokenUsage(token string) (Usage, error) {
	var u Usage
	err := s.st.View(func(r store.Reader) error {
		raw, err := r.Get(BucketUsage, token)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return fmt.Errorf("inventory: usage of token %s: corrupt: %w", token, err)
		}
		return nil
	})
	return u, err
}

// Plugin returns one plugin's counts (all zero when no machine has it).
func (s *Store) Plugin(id string) (Counts, error) {
	c := newCounts(id)
	err := s.st.View(func(r store.Reader) error {
		kvs, err := r.List(BucketCounts, id+keySep)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var sc Counts
			if err := json.Unmarshal(kv.Value, &sc); err != nil {
				return fmt.Errorf("inventory: counts %s: corrupt: %w", kv.Key, err)
			}
			c.merge(sc)
		}
		return nil
	})
	return c, err
}

// Holder is one machine that has a plugin.
type Holder struct {
	Machine string `json:"machine"`
	// ClientKind is the client kind of the machine's current report
	// (KindWharf, KindWharfAgent, KindClaudeCode).
	ClientKind string    `json:"clientKind"`
	Installs   []Install `json:"installs"`
	LastSeen   time.Time `json:"lastSeen"`
}

// Holders returns, in machine id order, at most limit machines after
// machine id after ("" for the first) that have plugin id, and the cursor
// of the next page ("" on the last). It reads only that plugin's entries
// (and each returned machine's last-seen time).
func (s *Store) Holders(id, after string, limit int) ([]Holder, string, error) {
	if limit <= 0 {
		limit = 100
	}
	var out []Holder
	next := ""
	err := s.st.View(func(r store.Reader) error {
		out, next = []Holder{}, ""
		kvs, err := r.ListAfter(IndexBucket(id), after, limit+1)
		if err != nil {
			return err
		}
		if len(kvs) > limit {
			kvs = kvs[:limit]
			next = kvs[limit-1].Key
		}
		seen := make([]store.BucketKey, len(kvs))
		for i, kv := range kvs {
			seen[i] = store.BucketKey{Bucket: BucketSeen, Key: kv.Key}
		}
		// The page's last-seen times in one read.
		times, err := store.GetMany(r, seen)
		if err != nil {
			return err
		}
		for i, kv := range kvs {
			h := Holder{Machine: kv.Key}
			if err := json.Unmarshal(kv.Value, &h.Installs); err != nil {
				return fmt.Errorf("inventory: index entry %s of %s: corrupt: %w", kv.Key, id, err)
			}
			if times[i] != nil {
				if sr, err := parseSeen(times[i]); err == nil {
					h.LastSeen, h.ClientKind = sr.Time, sr.Kind
				}
			}
			out = append(out, h)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	for i := range out {
		out[i].LastSeen = s.lastSeen(out[i].Machine, out[i].LastSeen)
	}
	return out, next, nil
}

// Seen is a machine and when it last reported.
type Seen struct {
	Machine  string    `json:"machine"`
	LastSeen time.Time `json:"lastSeen"`
}

// Stale returns machines not seen since before, in machine id order, at
// most limit after the cursor, and the next cursor. It reads the last-seen
// times of the machines (an admin's occasional query), never the reports,
// by machine id prefix ("m-00" to "m-ff", every id has one): each read is
// a range bounded by its prefix, so that etcd, which counts the rest of a
// range on every limited read, walks each record once and the query costs
// the fleet rather than its square.
func (s *Store) Stale(before time.Time, after string, limit int) ([]Seen, string, error) {
	if limit <= 0 {
		limit = 100
	}
	first := 0
	if rest, ok := strings.CutPrefix(after, "m-"); ok && len(rest) >= 2 {
		if n, err := strconv.ParseUint(rest[:2], 16, 8); err == nil {
			first = int(n)
		}
	}
	var out []Seen
	next := ""
	err := s.st.View(func(r store.Reader) error {
		out, next = []Seen{}, ""
		for p := first; p < 256; p++ {
			kvs, err := r.List(BucketSeen, fmt.Sprintf("m-%02x", p))
			if err != nil {
				return err
			}
			for _, kv := range kvs {
				if kv.Key <= after {
					continue
				}
				sr, err := parseSeen(kv.Value)
				if err != nil {
					return fmt.Errorf("inventory: seen record of %s: corrupt: %w", kv.Key, err)
				}
				t := s.lastSeen(kv.Key, sr.Time)
				if !t.Before(before) {
					continue
				}
				if len(out) == limit {
					next = out[len(out)-1].Machine
					return nil
				}
				out = append(out, Seen{Machine: kv.Key, LastSeen: t})
			}
		}
		return nil
	})
	return out, next, err
}
