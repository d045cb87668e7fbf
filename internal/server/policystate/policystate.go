// Package policystate is the server's policy state over a store.Store
// (bbolt or etcd): the policy layers, the history of their changes (who,
// when, the layer as written), the policy head (the current version and
// revision) with its cache and freshness rule across replicas, the cache
// of the compiled policy, and the signed policy bundle shared by every
// replica through the store. The contract test runs on both backends.
//
// The stored records and functions over a store.Reader or store.Tx are in
// this file; State (state.go) is one server's view of them, with its
// caches; the bundle and its signing key are in bundle.go.
package policystate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/approvals"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/requests"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/server/toolpins"
)

// Buckets and keys.
const (
	LayersBucket   = "api-policy-layers"  // layer name → Layer
	HistoryBucket  = "api-policy-history" // audit.SeqKey(seq) → HistoryEntry
	SettingsBucket = "api-settings"       // HeadKey, SigningKeyKey
	BundleBucket   = "api-bundle"         // policy version → the signed bundle first built for it

	HeadKey       = "policy-head"
	SigningKeyKey = "bundle-signing-key"
)

// Bounds of the layer set (it is distributed to every agent).
const (
	MaxLayers        = 64
	DefaultLayerRank = 100
)

// Actions of the history.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
)

// Layer is a stored policy layer. Layers apply in (Rank, Name) order, lowest
// rank first = highest authority (org 10, department 20, project 30...).
type Layer struct {
	Name     string            `json:"name"`
	Rank     int               `json:"rank"`
	Version  uint64            `json:"version"`
	Settings json.RawMessage   `json:"settings"`
	Modules  map[string]string `json:"modules"`
	// Target is who the layer applies to: absent, everyone (an
	// organization layer); else the tokens with one of its groups or
	// labels (a targeted layer). A targeted layer always comes after
	// every organization layer, whatever its rank: it can only tighten.
	Target    *tokens.Target `json:"target,omitempty"`
	UpdatedAt time.Time      `json:"updatedAt"`
	UpdatedBy string         `json:"updatedBy"`
}

// Head is the current effective policy's identity: its version (a hash of
// its content, the same on every replica) and its revision (how many
// changes were made through the store; it only moves forward).
type Head struct {
	Revision uint64 `json:"revision"`
	Version  string `json:"version"`
}

// HistoryEntry records one change of one layer, with the layer as written
// (nil for a deletion), so any past state can be reconstructed.
type HistoryEntry struct {
	Seq           uint64    `json:"seq"`
	Time          time.Time `json:"time"`
	Action        string    `json:"action"` // create, update, delete
	Layer         string    `json:"layer"`
	LayerVersion  uint64    `json:"layerVersion"`
	PolicyVersion string    `json:"policyVersion"`
	Revision      uint64    `json:"revision"`
	Actor         string    `json:"actor"`
	Document      *Layer    `json:"document,omitempty"`
}

// Actor is who makes a change: a token and its role.
type Actor struct {
	ID   string
	Role tokens.Role
}

// SortLayers puts layers in authority order: the organization's layers
// before the targeted ones, then by rank, then name.
func SortLayers(ls []Layer) {
	sort.Slice(ls, func(i, j int) bool {
		if ti, tj := !ls[i].Target.Empty(), !ls[j].Target.Empty(); ti != tj {
			return tj
		}
		if ls[i].Rank != ls[j].Rank {
			return ls[i].Rank < ls[j].Rank
		}
		return ls[i].Name < ls[j].Name
	})
}

// ReadLayers returns every layer in authority order.
func ReadLayers(r store.Reader) ([]Layer, error) {
	out, err := store.DecodeList[Layer](r, LayersBucket, "", func(key string, err error) error {
		return fmt.Errorf("policy layer %s: corrupt record: %w", key, err)
	})
	if err != nil {
		return nil, err
	}
	SortLayers(out)
	return out, nil
}

// ReadLayer returns the layer name, or nil when there is none.
func ReadLayer(r store.Reader, name string) (*Layer, error) {
	raw, err := r.Get(LayersBucket, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var l Layer
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("policy layer %s: corrupt record: %w", name, err)
	}
	return &l, nil
}

// ReadHead returns the stored head; before any change, revision 0 with the
// version of no layer.
func ReadHead(r store.Reader) (Head, error) {
	raw, err := r.Get(SettingsBucket, HeadKey)
	if errors.Is(err, store.ErrNotFound) {
		return Head{Version: Version(nil)}, nil
	}
	if err != nil {
		return Head{}, err
	}
	var h Head
	if err := json.Unmarshal(raw, &h); err != nil {
		return Head{}, fmt.Errorf("policy head: corrupt record: %w", err)
	}
	return h, nil
}

// Version hashes exactly the fields that the bundle and the engine read:
// name, rank, target, settings (canonical JSON) and modules. Timestamps and authors
// are left out so that the same policy has the same version everywhere.
func Version(ls []Layer) string {
	h := sha256.New()
	for _, l := range ls {
		fmt.Fprintf(h, "layer %q rank %d\n", l.Name, l.Rank)
		if !l.Target.Empty() {
			// Only targeted layers add this line: the versions of a
			// policy without targets are the ones it always had.
			fmt.Fprintf(h, "target groups %q labels %q\n", l.Target.Groups, l.Target.Labels)
		}
		fmt.Fprintf(h, "settings %d\n", len(l.Settings))
		h.Write(l.Settings)
		names := make([]string, 0, len(l.Modules))
		for n := range l.Modules {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(h, "\nmodule %q %d\n", n, len(l.Modules[n]))
			h.Write([]byte(l.Modules[n]))
		}
		h.Write([]byte("\n"))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// FullVersion is the policy version of layers and revocations. With no
// revocation it is the layers' version alone, so a server that never
// revoked anything keeps the versions it always had.
func FullVersion(layers []Layer, revs policy.Revocations) string {
	return FullVersionWith(layers, revs, nil)
}

// FullVersionWith is the policy version of layers, revocations and the
// admissions (the approvals of plugin versions, package approvals). With
// neither revocations nor admissions it is the layers' version alone.
func FullVersionWith(layers []Layer, revs policy.Revocations, adm *policy.Admissions) string {
	v := Version(layers)
	if len(revs) == 0 && adm.Empty() {
		return v
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", v)
	for _, r := range revs {
		// What a client acts on; timestamps and authors are left out.
		fmt.Fprintf(h, "revocation %q %q %q %q %q\n", r.ID, r.Plugin, r.Version, r.Digest, r.Reason)
	}
	adm.WriteVersion(h)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// CanonicalJSON re-encodes a JSON object with sorted keys and no spaces, so
// that formatting never changes a policy's version. Numbers keep their text.
func CanonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// AdvanceHead writes the policy head that follows the stored one: the next
// revision, with the version of layers, revs, the approvals and the
// waivers in force (requests.InForce) stored in tx. Every policy change
// (a layer, a revocation, an approval, an answer that changes the
// waivers) goes through it, in the transaction of the change, so
// revisions only move forward.
func AdvanceHead(tx store.Tx, layers []Layer, revs policy.Revocations) (Head, error) {
	old, err := ReadHead(tx)
	if err != nil {
		return Head{}, err
	}
	adm, err := approvals.Admissions(tx)
	if err != nil {
		return Head{}, err
	}
	ws, err := requests.InForce(tx)
	if err != nil {
		return Head{}, err
	}
	pins, err := toolpins.All(tx)
	if err != nil {
		return Head{}, err
	}
	// Tool pins are policy too: they fold into the version (unchanged
	// while there is none).
	head := Head{Revision: old.Revision + 1, Version: toolpins.Version(requests.Version(FullVersionWith(layers, revs, adm), ws), pins)}
	raw, err := json.Marshal(head)
	if err != nil {
		return head, err
	}
	return head, tx.Put(SettingsBucket, HeadKey, raw)
}

// History reads at most limit history entries after sequence number after
// (0: from the start), oldest first, of one layer (every layer when layer
// is empty), and the next page's cursor.
func History(st store.Store, layer string, after uint64, limit int) ([]HistoryEntry, string, error) {
	return audit.ReadLog(st, HistoryBucket, "policy history", after, limit,
		func(e HistoryEntry) bool { return layer == "" || e.Layer == layer },
		func(e HistoryEntry) uint64 { return e.Seq })
}

// Proposed returns layers with c applied as a write of c would apply it:
// name's settings and modules replaced (its rank and target kept unless c
// gives them),
// or the layer added at c's rank or DefaultLayerRank, in authority order.
// Versions, times and authors are left as they are.
func Proposed(layers []Layer, c Change) []Layer {
	out := make([]Layer, 0, len(layers)+1)
	found := false
	for _, l := range layers {
		if l.Name == c.Name {
			found = true
			l.Settings, l.Modules = c.Settings, c.Modules
			if c.Rank != nil {
				l.Rank = *c.Rank
			}
			if c.Target != nil {
				l.Target = targetOf(*c.Target)
			}
		}
		out = append(out, l)
	}
	if !found {
		nl := Layer{Name: c.Name, Rank: DefaultLayerRank, Settings: c.Settings, Modules: c.Modules}
		if c.Target != nil {
			nl.Target = targetOf(*c.Target)
		}
		if c.Rank != nil {
			nl.Rank = *c.Rank
		}
		out = append(out, nl)
	}
	SortLayers(out)
	return out
}

// targetOf is t as a layer keeps it: nil for the organization.
func targetOf(t tokens.Target) *tokens.Target {
	if t.Empty() {
		return nil
	}
	return &t
}

// Applying returns the layers that apply to id, in authority order: every
// organization layer, and the targeted layers whose target matches id.
func Applying(layers []Layer, id tokens.Identity) []Layer {
	out := make([]Layer, 0, len(layers))
	for _, l := range layers {
		if l.Target.Matches(id) {
			out = append(out, l)
		}
	}
	return out
}

// AppliedVersion is the version of the policy that applies to a token:
// the head's version when every layer applies (always so without targeted
// layers), else the head's version with the names of the layers that
// apply. Tokens that the same layers apply to share it.
func AppliedVersion(headVersion string, layers, applying []Layer) string {
	if len(applying) == len(layers) {
		return headVersion
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", headVersion)
	for _, l := range applying {
		fmt.Fprintf(h, "applies %q\n", l.Name)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
