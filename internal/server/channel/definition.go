package channel

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// Approved is the channel every server has: every plugin of every known
// marketplace that the policy allows, whose dependency closure is allowed
// and available.
const Approved = "approved"

// Store buckets.
const (
	bucketDefs    = "channels"        // name → Definition
	bucketHistory = "channel-history" // name/<revision %08d> → Definition
	bucketHeads   = "channel-heads"   // name → Head
	bucketObjects = "channel-objects" // <hex hash>[.<chunk>] → git object (type byte + content)
	bucketBuilds  = "channel-builds"  // name/<generation %08d> → Head (every build)
)

// Definition is what an admin says a channel holds.
type Definition struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Marketplaces limits the channel to these known marketplaces; empty:
	// every known marketplace.
	Marketplaces []string `json:"marketplaces,omitempty"`
	// Plugins limits the channel to these plugins (name@marketplace) and
	// their dependency closures; empty: every plugin of the marketplaces.
	Plugins []string `json:"plugins,omitempty"`
	// Public channels can be cloned without a token.
	Public bool `json:"public,omitempty"`
	// Target limits who sees the channel (target.go); absent: everyone.
	Target *Target `json:"target,omitempty"`

	Revision int       `json:"revision"`
	Updated  time.Time `json:"updated"`
	By       string    `json:"by,omitempty"`
	Deleted  bool      `json:"deleted,omitempty"` // in history only
}

// DefaultApproved is the approved channel before an admin edits it.
func DefaultApproved() Definition {
	return Definition{Name: Approved, Description: "every plugin the server's policy allows"}
}

// Limits of a definition.
const (
	maxListed      = 1000
	maxDescription = 1024
)

// Validate checks a definition from outside; errors name the field and
// the fix.
func (d *Definition) Validate() error {
	if err := plugin.ValidateName(d.Name); err != nil {
		return &FieldError{Field: "name", Err: fmt.Errorf("channel name: %w", err)}
	}
	if len(d.Description) > maxDescription {
		return &FieldError{Field: "description", Err: fmt.Errorf("%d bytes; the limit is %d", len(d.Description), maxDescription)}
	}
	if len(d.Marketplaces) > maxListed || len(d.Plugins) > maxListed {
		return &FieldError{Field: "plugins", Err: fmt.Errorf("more than %d marketplaces or plugins", maxListed)}
	}
	for i, m := range d.Marketplaces {
		if err := plugin.ValidateName(m); err != nil {
			return &FieldError{Field: fmt.Sprintf("marketplaces[%d]", i), Err: fmt.Errorf("marketplace name: %w", err)}
		}
	}
	for i, p := range d.Plugins {
		if _, err := plugin.ParseID(p); err != nil {
			return &FieldError{Field: fmt.Sprintf("plugins[%d]", i), Err: fmt.Errorf("%w (write plugins as name@marketplace)", err)}
		}
	}
	if err := d.validateTarget(); err != nil {
		return err
	}
	d.Marketplaces = sortedUnique(d.Marketplaces)
	d.Plugins = sortedUnique(d.Plugins)
	return nil
}

func sortedUnique(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	out := slices.Clone(ss)
	sort.Strings(out)
	return slices.Compact(out)
}

// inScope reports whether id is one of the definition's roots.
func (d *Definition) inScope(id plugin.ID) bool {
	if len(d.Marketplaces) > 0 && !slices.Contains(d.Marketplaces, id.Source) {
		return false
	}
	if len(d.Plugins) > 0 && !slices.Contains(d.Plugins, id.String()) {
		return false
	}
	return true
}

// FieldError is a definition field that is not acceptable.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// ErrNotFound is a channel nobody defined.
var ErrNotFound = errors.New("channel not found")

// ErrConflict is a create of a channel that exists, or a delete of approved.
var ErrConflict = errors.New("channel conflict")

// Get returns the definition of name; the approved channel exists even
// when nobody stored it.
func Get(r store.Reader, name string) (Definition, error) {
	b, err := r.Get(bucketDefs, name)
	if errors.Is(err, store.ErrNotFound) {
		if name == Approved {
			return DefaultApproved(), nil
		}
		return Definition{}, fmt.Errorf("channel %q: %w (see the channels with GET /v1/channels)", name, ErrNotFound)
	}
	if err != nil {
		return Definition{}, err
	}
	var d Definition
	if err := json.Unmarshal(b, &d); err != nil {
		return Definition{}, fmt.Errorf("channel %q: stored definition is damaged: %w", name, err)
	}
	return d, nil
}

// List returns every channel's definition in name order, approved included.
func List(r store.Reader) ([]Definition, error) {
	kvs, err := r.List(bucketDefs, "")
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	var out []Definition
	seenApproved := false
	for _, kv := range kvs {
		var d Definition
		if err := json.Unmarshal(kv.Value, &d); err != nil {
			return nil, fmt.Errorf("channel %q: stored definition is damaged: %w", kv.Key, err)
		}
		if d.Name == Approved {
			seenApproved = true
		}
		out = append(out, d)
	}
	if !seenApproved {
		out = append(out, DefaultApproved())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Put stores d as the next revision of its channel (create when create is
// set: an existing channel is ErrConflict; else edit: a missing one is
// ErrNotFound, except approved), and appends it to the channel's history.
func Put(tx store.Tx, d Definition, create bool, now time.Time, by string) (Definition, error) {
	if err := d.Validate(); err != nil {
		return Definition{}, err
	}
	cur, err := Get(tx, d.Name)
	exists := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Definition{}, err
	}
	_, stored := tx.Get(bucketDefs, d.Name)
	if create && (stored == nil || d.Name == Approved) {
		return Definition{}, fmt.Errorf("channel %q exists; edit it with PUT /v1/channels/%s: %w", d.Name, d.Name, ErrConflict)
	}
	if !create && !exists {
		return Definition{}, fmt.Errorf("channel %q: %w (create it with POST /v1/channels)", d.Name, ErrNotFound)
	}
	d.Revision = cur.Revision + 1
	d.Updated, d.By, d.Deleted = now.UTC(), by, false
	return d, writeRevision(tx, d)
}

// Delete removes a channel (approved cannot be removed) and records the
// deletion in its history.
func Delete(tx store.Tx, name string, now time.Time, by string) error {
	if name == Approved {
		return fmt.Errorf("channel %q cannot be deleted; limit it with PUT /v1/channels/%s instead: %w", name, name, ErrConflict)
	}
	if _, err := tx.Get(bucketDefs, name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("channel %q: %w", name, ErrNotFound)
		}
		return err
	}
	cur, err := Get(tx, name)
	if err != nil {
		return err
	}
	d := Definition{Name: name, Revision: cur.Revision + 1, Updated: now.UTC(), By: by, Deleted: true}
	b, _ := json.Marshal(d)
	if err := tx.Put(bucketHistory, historyKey(name, d.Revision), b); err != nil {
		return err
	}
	if err := tx.Delete(bucketHeads, name); err != nil {
		return err
	}
	return tx.Delete(bucketDefs, name)
}

func writeRevision(tx store.Tx, d Definition) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if err := tx.Put(bucketDefs, d.Name, b); err != nil {
		return err
	}
	return tx.Put(bucketHistory, historyKey(d.Name, d.Revision), b)
}

func historyKey(name string, rev int) string { return fmt.Sprintf("%s/%08d", name, rev) }

// History returns the channel's revisions, oldest first.
func History(r store.Reader, name string) ([]Definition, error) {
	return store.DecodeList[Definition](r, bucketHistory, name+"/", func(key string, err error) error {
		return fmt.Errorf("channel history %q: damaged: %w", key, err)
	})
}
