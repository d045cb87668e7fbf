// Package toolpins is the server's store of pinned MCP tool definitions:
// the pins an administrator approved (per plugin and server, the hash of
// the server's tool names, descriptions and input schemas; package
// internal/core/toolpin), and what each machine last reported its plugin
// servers listing, from which the drift (definitions no pin approves) is
// read. Pins are part of the policy: the server changes them in the
// transaction that advances the policy head and appends the audit entry,
// and the signed bundle carries them (data.json: wharf.toolPins). The
// contract test runs on bbolt and on etcd.
package toolpins

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
)

// Buckets.
const (
	Bucket         = "api-toolpins"          // "<plugin> <server>" → Record
	ObservedBucket = "api-toolpins-observed" // machine id → []Observation
)

// Bounds.
const (
	Max        = 10000 // pins
	MaxNoteLen = 1024  // bytes of an approval's note
)

// Record is one pin as the server keeps it.
type Record struct {
	Plugin string `json:"plugin"`
	Server string `json:"server"`
	Hash   string `json:"hash"`
	// By is the admin token that approved it, Approved when.
	By       string    `json:"by"`
	Approved time.Time `json:"approved"`
	Note     string    `json:"note,omitempty"`
}

// Pin is what the bundle carries of r.
func (r Record) Pin() toolpin.Pin {
	return toolpin.Pin{Plugin: r.Plugin, Server: r.Server, Hash: r.Hash}
}

// Observation is one plugin server's definitions as one machine reported
// them.
type Observation struct {
	Plugin    string    `json:"plugin"`
	Server    string    `json:"server"`
	ToolsHash string    `json:"toolsHash"`
	Seen      time.Time `json:"seen"`
}

// Drift is a set of definitions that machines report and no pin approves:
// Pinned is the hash approved for that server ("" when none is).
type Drift struct {
	Plugin   string    `json:"plugin"`
	Server   string    `json:"server"`
	Observed string    `json:"observed"`
	Pinned   string    `json:"pinned,omitempty"`
	Machines int       `json:"machines"`
	LastSeen time.Time `json:"lastSeen"`
	// Changes say how the observed definitions differ from the pinned
	// ones (from no tools when nothing is pinned), when reports carried
	// both; Known says they did.
	Changes []toolpin.Change `json:"changes,omitempty"`
	Known   bool             `json:"known"`
}

// CorruptError is a stored record that cannot be read.
type CorruptError struct {
	Bucket, Key string
	Err         error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("tool pins: record %q of bucket %s is corrupt (%v); remove it from the store and approve the server's definitions again", e.Key, e.Bucket, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

func key(pluginID, server string) string { return pluginID + " " + server }

// All returns every pin, by plugin then server.
func All(r store.Reader) ([]Record, error) {
	out, err := store.DecodeList[Record](r, Bucket, "", func(key string, err error) error {
		return &CorruptError{Bucket: Bucket, Key: key, Err: err}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Plugin != out[j].Plugin {
			return out[i].Plugin < out[j].Plugin
		}
		return out[i].Server < out[j].Server
	})
	return out, nil
}

// Get returns the pin of one server, if there is one.
func Get(r store.Reader, pluginID, server string) (Record, bool, error) {
	raw, err := r.Get(Bucket, key(pluginID, server))
	if errors.Is(err, store.ErrNotFound) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, err
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return Record{}, false, &CorruptError{Bucket: Bucket, Key: key(pluginID, server), Err: err}
	}
	return rec, true, nil
}

// Put sets the pin of rec's server in tx, replacing any other. The record
// is checked as the bundle's readers check it.
func Put(tx store.Tx, rec Record) error {
	if err := rec.Pin().Validate(); err != nil {
		return err
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Put(Bucket, key(rec.Plugin, rec.Server), raw)
}

// Pins is what the bundle carries of recs.
func Pins(recs []Record) []toolpin.Pin {
	out := make([]toolpin.Pin, len(recs))
	for i, r := range recs {
		out[i] = r.Pin()
	}
	return out
}

// Version folds pins into a policy version: with no pin it is base
// itself, so a server that never pinned keeps the versions it had.
func Version(base string, recs []Record) string {
	if len(recs) == 0 {
		return base
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", base)
	for _, r := range recs {
		// What a client acts on; who approved and when are left out.
		fmt.Fprintf(h, "toolpin %q %q %q\n", r.Plugin, r.Server, r.Hash)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Observe replaces what machine last reported of its plugin servers'
// definitions (a report without any removes it), and keeps the
// definitions the report carries (GetDefinitions).
func Observe(tx store.Tx, machine string, servers []inventory.MCPServer, now time.Time) error {
	if len(servers) == 0 {
		return tx.Delete(ObservedBucket, machine)
	}
	obs := make([]Observation, len(servers))
	for i, s := range servers {
		obs[i] = Observation{Plugin: s.Plugin, Server: s.Server, ToolsHash: s.ToolsHash, Seen: now}
		if err := keepDefinitions(tx, s, now); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(obs)
	if err != nil {
		return err
	}
	return tx.Put(ObservedBucket, machine, raw)
}

// observations calls fn with every machine's reported definitions.
func observations(r store.Reader, fn func(machine string, o Observation)) error {
	kvs, err := r.List(ObservedBucket, "")
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		var obs []Observation
		if err := json.Unmarshal(kv.Value, &obs); err != nil {
			return &CorruptError{Bucket: ObservedBucket, Key: kv.Key, Err: err}
		}
		for _, o := range obs {
			fn(kv.Key, o)
		}
	}
	return nil
}

// Reported reports whether some machine's last report has the server
// listing definitions with hash.
func Reported(r store.Reader, pluginID, server, hash string) (bool, error) {
	found := false
	err := observations(r, func(_ string, o Observation) {
		found = found || o.Plugin == pluginID && o.Server == server && o.ToolsHash == hash
	})
	return found, err
}

// Drifts lists the definitions machines report that no pin approves:
// those of a pinned server that differ from its pin, and those of a server
// nothing pins (Pinned ""), with how many machines report each; by
// plugin, server, then observed hash.
func Drifts(r store.Reader) ([]Drift, error) {
	recs, err := All(r)
	if err != nil {
		return nil, err
	}
	pinned := map[string]string{}
	for _, rec := range recs {
		pinned[key(rec.Plugin, rec.Server)] = rec.Hash
	}
	agg := map[string]*Drift{}
	err = observations(r, func(_ string, o Observation) {
		p := pinned[key(o.Plugin, o.Server)]
		if p == o.ToolsHash {
			return
		}
		k := strings.Join([]string{o.Plugin, o.Server, o.ToolsHash}, "\x00")
		d := agg[k]
		if d == nil {
			d = &Drift{Plugin: o.Plugin, Server: o.Server, Observed: o.ToolsHash, Pinned: p}
			agg[k] = d
		}
		d.Machines++
		if o.Seen.After(d.LastSeen) {
			d.LastSeen = o.Seen
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]Drift, 0, len(agg))
	for _, d := range agg {
		if err := diffDrift(r, d); err != nil {
			return nil, err
		}
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Plugin != b.Plugin {
			return a.Plugin < b.Plugin
		}
		if a.Server != b.Server {
			return a.Server < b.Server
		}
		return a.Observed < b.Observed
	})
	return out, nil
}

// diffDrift fills d's changes from the definitions reports carried.
func diffDrift(r store.Reader, d *Drift) error {
	obs, ok, err := GetDefinitions(r, d.Plugin, d.Server, d.Observed)
	if err != nil || !ok {
		return err
	}
	var base []inventory.Tool
	if d.Pinned != "" {
		pinned, ok, err := GetDefinitions(r, d.Plugin, d.Server, d.Pinned)
		if err != nil || !ok {
			return err
		}
		base = pinned.Tools
	}
	d.Known = true
	d.Changes = toolpin.Diff(inventory.ToolDefinitions(base), inventory.ToolDefinitions(obs.Tools))
	return nil
}
