// Package approvals is the server's store of plugin version approvals: each
// version of a plugin the server has seen, by version and content digest,
// with its capability set, whether it is approved, held for review or
// denied, who decided and why; and the admission mode set per marketplace
// or per plugin (auto, review, open). Judge is the one rule of what a new
// version's state is. Approvals are part of the policy: the server changes
// them in the transaction that advances the policy head and appends the
// audit entry, and the signed bundle carries them (Admissions). The
// contract test runs on bbolt and etcd.
package approvals

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// Buckets.
const (
	Bucket      = "api-approvals"      // Key(plugin, version, digest) → Record
	ModesBucket = "api-approval-modes" // "marketplace/<name>" or "plugin/<id>" → mode
)

// Bounds.
const (
	MaxNoteLen   = 1024 // bytes of a decision's note
	MaxFileNames = 200  // paths listed per kind in a FileDiff
)

// AutoActor is who decided a version approved without a person.
const AutoActor = "wharf"

// Record is one version of a plugin the server has seen.
type Record struct {
	Plugin  string `json:"plugin"` // name@marketplace
	Version string `json:"version"`
	Digest  string `json:"digest"` // w1: of the plugin's tree
	State   string `json:"state"`  // policy.StateApproved, StateHeld or StateDenied
	// Capabilities is the version's capability set.
	Capabilities capability.Set `json:"capabilities"`
	// Findings are the version's content findings, shown in review (nil
	// in a record kept before they were).
	Findings []capability.Finding `json:"findings"`
	// Adds is what the version adds over Base, the approved version it
	// was compared with when it was seen (nil Base: none was approved).
	Adds  []capability.Change `json:"adds"`
	Base  *Ref                `json:"base,omitempty"`
	Files *FileDiff           `json:"files,omitempty"` // against Base
	Seen  time.Time           `json:"seen"`
	// Decided, By and Note say who approved or denied it, when and why;
	// Auto marks a version approved without a person (By is AutoActor).
	Decided time.Time `json:"decided,omitzero"`
	By      string    `json:"by,omitempty"`
	Note    string    `json:"note,omitempty"`
	Auto    bool      `json:"auto,omitempty"`
}

// Ref names one version of a plugin.
type Ref struct {
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

// FileDiff summarizes how a version's files differ from another's: the
// paths added, removed and changed (content or executable bit), at most
// MaxFileNames each (Truncated says more were left out).
type FileDiff struct {
	Added     []string `json:"added"`
	Removed   []string `json:"removed"`
	Changed   []string `json:"changed"`
	Truncated bool     `json:"truncated,omitempty"`
}

// Key is the store key of a version.
func Key(pluginID, version, digest string) string { return pluginID + " " + version + " " + digest }

// Get returns the record of a version, or *NotFoundError.
func Get(r store.Reader, pluginID, version, digest string) (Record, error) {
	var rec Record
	raw, err := r.Get(Bucket, Key(pluginID, version, digest))
	if errors.Is(err, store.ErrNotFound) {
		return rec, &NotFoundError{Plugin: pluginID, Version: version, Digest: digest}
	}
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, fmt.Errorf("approval %s %s: corrupt record: %w", pluginID, version, err)
	}
	return rec, nil
}

// Put stores rec in tx.
func Put(tx store.Tx, rec Record) error {
	if err := checkRecord(rec); err != nil {
		return err
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Put(Bucket, Key(rec.Plugin, rec.Version, rec.Digest), raw)
}

func checkRecord(rec Record) error {
	if id, err := plugin.ParseID(rec.Plugin); err != nil || id.String() != rec.Plugin {
		return fmt.Errorf("approval: %q is not a plugin id (name@marketplace)", rec.Plugin)
	}
	if rec.Version == "" || len(rec.Version) > 128 || strings.ContainsAny(rec.Version, " \t\r\n") {
		return fmt.Errorf("approval %s: %q is not a version", rec.Plugin, rec.Version)
	}
	if !trust.ValidDigest(rec.Digest) {
		return fmt.Errorf("approval %s %s: %q is not a w1: digest", rec.Plugin, rec.Version, rec.Digest)
	}
	switch rec.State {
	case policy.StateApproved, policy.StateHeld, policy.StateDenied:
	default:
		return fmt.Errorf("approval %s %s: state %q is not approved, held or denied", rec.Plugin, rec.Version, rec.State)
	}
	if len(rec.Note) > MaxNoteLen {
		return &NoteTooLongError{Len: len(rec.Note)}
	}
	return nil
}

// List returns every record, by plugin, then oldest seen first.
func List(r store.Reader) ([]Record, error) {
	out, err := store.DecodeList[Record](r, Bucket, "", func(key string, err error) error {
		return fmt.Errorf("approval %q: corrupt record: %w", key, err)
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Plugin != out[j].Plugin {
			return out[i].Plugin < out[j].Plugin
		}
		if !out[i].Seen.Equal(out[j].Seen) {
			return out[i].Seen.Before(out[j].Seen)
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

// ForPlugin returns the records of one plugin, oldest seen first.
func ForPlugin(r store.Reader, pluginID string) ([]Record, error) {
	out, err := store.DecodeList[Record](r, Bucket, pluginID+" ", func(key string, err error) error {
		return fmt.Errorf("approval %q: corrupt record: %w", key, err)
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seen.Before(out[j].Seen) })
	return out, nil
}

// LastApproved is the approved record decided last among recs (nil when
// none is approved).
func LastApproved(recs []Record) *Record {
	var last *Record
	for i := range recs {
		r := &recs[i]
		if r.State != policy.StateApproved {
			continue
		}
		if last == nil || !r.Decided.Before(last.Decided) {
			last = r
		}
	}
	return last
}

// Judge is the one rule of a new version's state under mode, given the
// last approved version of its plugin (nil when none is) and the new
// version's capability set: in open mode it is approved; in auto mode it
// is approved when no version was approved before (the first one seen is
// the baseline) or when it adds nothing over the last approved one, else
// held; in review mode it is held. adds is what it adds over last.
func Judge(mode string, last *Record, set capability.Set) (state string, adds []capability.Change) {
	if last != nil {
		adds = capability.Diff(&last.Capabilities, &set)
	} else {
		adds = capability.Diff(&capability.Set{}, &set)
	}
	switch mode {
	case policy.ModeOpen:
		return policy.StateApproved, adds
	case policy.ModeReview:
		return policy.StateHeld, adds
	default:
		if last == nil {
			return policy.StateApproved, nil
		}
		if len(adds) == 0 {
			return policy.StateApproved, nil
		}
		return policy.StateHeld, adds
	}
}

// Decide sets the state of a held, denied or approved version to state
// (approved or denied), with who decided, when and why. Deciding a version
// to the state it already has is a *ConflictError.
func Decide(tx store.Tx, pluginID, version, digest, state, by, note string, now time.Time) (Record, error) {
	rec, err := Get(tx, pluginID, version, digest)
	if err != nil {
		return rec, err
	}
	if state != policy.StateApproved && state != policy.StateDenied {
		return rec, fmt.Errorf("approval: a decision is approved or denied, not %q", state)
	}
	if rec.State == state && !rec.Auto {
		return rec, &ConflictError{Plugin: pluginID, Version: version, State: state}
	}
	rec.State, rec.By, rec.Note, rec.Decided, rec.Auto = state, by, note, now.UTC(), false
	return rec, Put(tx, rec)
}

// Modes are the admission modes set.
type Modes struct {
	Marketplaces map[string]string `json:"marketplaces"`
	Plugins      map[string]string `json:"plugins"`
}

// Mode is id's mode: its own, else its marketplace's, else the default.
func (m Modes) Mode(id plugin.ID) string {
	if x, ok := m.Plugins[id.String()]; ok {
		return x
	}
	if x, ok := m.Marketplaces[id.Source]; ok {
		return x
	}
	return policy.DefaultMode
}

// Scope kinds of a mode.
const (
	ScopeMarketplace = "marketplace"
	ScopePlugin      = "plugin"
)

// SetMode sets the mode of a marketplace (kind ScopeMarketplace) or a
// plugin (ScopePlugin); mode "" removes it, so the default or the
// marketplace's applies. A mode that is not auto, review or open is a
// *ModeError.
func SetMode(tx store.Tx, kind, name, mode string) error {
	switch kind {
	case ScopeMarketplace:
		if name == "" || len(name) > 128 || strings.ContainsAny(name, "@/ \t\r\n") {
			return fmt.Errorf("approval mode: %q is not a marketplace name", name)
		}
	case ScopePlugin:
		if id, err := plugin.ParseID(name); err != nil || id.String() != name {
			return fmt.Errorf("approval mode: %q is not a plugin id (name@marketplace)", name)
		}
	default:
		return fmt.Errorf("approval mode: scope %q is not marketplace or plugin", kind)
	}
	if mode == "" {
		return tx.Delete(ModesBucket, kind+"/"+name)
	}
	if !policy.ValidMode(mode) {
		return &ModeError{Mode: mode}
	}
	return tx.Put(ModesBucket, kind+"/"+name, []byte(mode))
}

// ReadModes returns the modes set.
func ReadModes(r store.Reader) (Modes, error) {
	m := Modes{Marketplaces: map[string]string{}, Plugins: map[string]string{}}
	kvs, err := r.List(ModesBucket, "")
	if err != nil {
		return m, err
	}
	for _, kv := range kvs {
		kind, name, _ := strings.Cut(kv.Key, "/")
		mode := string(kv.Value)
		if !policy.ValidMode(mode) {
			return m, fmt.Errorf("approval mode %q: corrupt record %q", kv.Key, mode)
		}
		switch kind {
		case ScopeMarketplace:
			m.Marketplaces[name] = mode
		case ScopePlugin:
			m.Plugins[name] = mode
		default:
			return m, fmt.Errorf("approval mode %q: corrupt key", kv.Key)
		}
	}
	return m, nil
}

// Admissions is what the signed bundle carries of the approvals: the modes
// and every version's state with what it adds; nil when there is nothing.
func Admissions(r store.Reader) (*policy.Admissions, error) {
	modes, err := ReadModes(r)
	if err != nil {
		return nil, err
	}
	recs, err := List(r)
	if err != nil {
		return nil, err
	}
	a := &policy.Admissions{}
	if len(modes.Marketplaces) > 0 {
		a.MarketplaceModes = modes.Marketplaces
	}
	if len(modes.Plugins) > 0 {
		a.PluginModes = modes.Plugins
	}
	for _, rec := range recs {
		v := policy.AdmittedVersion{Plugin: rec.Plugin, Version: rec.Version, Digest: rec.Digest, State: rec.State, Note: rec.Note}
		if rec.State != policy.StateApproved {
			for _, c := range rec.Adds {
				v.Adds = append(v.Adds, c.Message)
			}
		}
		a.Versions = append(a.Versions, v)
	}
	if a.Empty() {
		return nil, nil
	}
	a.Sort()
	return a, nil
}

// Files compares the trees in oldDir and newDir.
func Files(oldDir, newDir string) (*FileDiff, error) {
	o, err := trust.Digest(oldDir)
	if err != nil {
		return nil, err
	}
	n, err := trust.Digest(newDir)
	if err != nil {
		return nil, err
	}
	old := map[string]trust.Entry{}
	for _, e := range o.Entries {
		old[e.Path] = e
	}
	d := &FileDiff{Added: []string{}, Removed: []string{}, Changed: []string{}}
	add := func(list *[]string, p string) {
		if len(*list) >= MaxFileNames {
			d.Truncated = true
			return
		}
		*list = append(*list, p)
	}
	for _, e := range n.Entries {
		oe, ok := old[e.Path]
		switch {
		case !ok:
			add(&d.Added, e.Path)
		case oe.Kind != e.Kind || oe.Hash != e.Hash:
			add(&d.Changed, e.Path)
		}
		delete(old, e.Path)
	}
	for _, e := range o.Entries {
		if _, ok := old[e.Path]; ok {
			add(&d.Removed, e.Path)
		}
	}
	return d, nil
}

// NotFoundError is a version the server has no record of.
type NotFoundError struct{ Plugin, Version, Digest string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no approval record of %s %s (%s); GET /v1/approvals lists the versions the server has seen", e.Plugin, e.Version, e.Digest)
}

// ConflictError is a decision that changes nothing.
type ConflictError struct{ Plugin, Version, State string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %s is already %s", e.Plugin, e.Version, e.State)
}

// ModeError is a mode that is not auto, review or open.
type ModeError struct{ Mode string }

func (e *ModeError) Error() string {
	return fmt.Sprintf("%q is not an admission mode; use auto, review or open", e.Mode)
}

// NoteTooLongError is a note over MaxNoteLen bytes.
type NoteTooLongError struct{ Len int }

func (e *NoteTooLongError) Error() string {
	return fmt.Sprintf("the note is %d bytes; the limit is %d", e.Len, MaxNoteLen)
}
