// Package tokens is the server's bearer tokens: their roles, their stored
// records (never the secret: only its sha256), the rules of creating and
// deleting them, and the in-memory cache of known tokens the server's
// authentication reads on every request. Everything is kept in a
// store.Store (bbolt or etcd), so that every replica over one store knows
// the same tokens; the contract test runs on both.
package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/fleet"
)

// Role is what a token may do. A token has exactly one.
type Role string

// The roles.
const (
	RoleAdmin     Role = "admin"     // IT admin: policy, marketplaces, tokens, audit
	RoleDeveloper Role = "developer" // browses the catalog, resolves, reads policy
	RoleCI        Role = "ci"        // verifies digests and signatures
	RoleAgent     Role = "agent"     // pulls the policy bundle, reads the catalog
)

// Roles lists every role, in a stable order.
var Roles = []Role{RoleAdmin, RoleDeveloper, RoleCI, RoleAgent}

// ValidRole reports whether r names a role.
func ValidRole(r string) bool {
	for _, x := range Roles {
		if string(x) == r {
			return true
		}
	}
	return false
}

// The buckets of the tokens' state.
const (
	Bucket      = "api-tokens"      // id → Record
	IndexBucket = "api-token-index" // hex sha256(secret) → id
)

// Defaults and bounds of a token's inventory quota.
const (
	// An agent token is one machine.
	DefaultAgentMachines = 1
	// A developer's, CI's or admin's token: a person's few machines.
	DefaultMachines = 10
	// Plugin ids per machine of the quota (and at least one full report).
	DefaultPluginsPerMachine = 100
	// The largest quota an admin may give one token.
	MaxQuotaMachines = 1_000_000
	MaxQuotaPlugins  = 100_000_000
)

// Identity is who a token speaks for and what targets it: the person an
// OpenID Connect sign-in named (Subject, Email), the groups from the
// identity provider's claims or given by an admin, and a machine's labels.
// Groups and labels select the policy layers and channels that apply.
type Identity struct {
	Subject string   `json:"subject,omitempty"`
	Email   string   `json:"email,omitempty"`
	Groups  []string `json:"groups,omitempty"`
	Labels  []string `json:"labels,omitempty"`
}

// Record is a token as stored.
type Record struct {
	ID   string `json:"id"`
	Role Role   `json:"role"`
	Identity
	Hash      string     `json:"hash"` // hex sha256 of the secret
	CreatedAt time.Time  `json:"createdAt"`
	CreatedBy string     `json:"createdBy"`
	Note      string     `json:"note,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// MaxMachines, MaxPlugins: 0 is the role's default (Quota).
	MaxMachines int `json:"maxMachines,omitempty"`
	MaxPlugins  int `json:"maxPlugins,omitempty"`
}

// Token is a token as the API shows it: never the secret nor its hash,
// with its quota in force.
type Token struct {
	ID   string `json:"id"`
	Role Role   `json:"role"`
	Identity
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy"`
	Note      string    `json:"note,omitempty"`
	// ExpiresAt is when the token stops being accepted; absent: never.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// MaxMachines and MaxPlugins are the token's inventory quota: the
	// machine ids it may report, and the plugin ids their reports may list
	// together (Record.Quota).
	MaxMachines int `json:"maxMachines"`
	MaxPlugins  int `json:"maxPlugins"`
	// LastUsed is the token's last recorded use (lastused.go: at most
	// DefaultLastUsedEvery stale); absent: never used. Only lists fill it.
	LastUsed *time.Time `json:"lastUsed,omitempty"`
}

// Quota is the token's inventory quota: what the admin set, else the
// role's default.
func (t *Record) Quota() fleet.Quota {
	m := t.MaxMachines
	if m <= 0 {
		m = DefaultMachines
		if t.Role == RoleAgent {
			m = DefaultAgentMachines
		}
	}
	p := t.MaxPlugins
	if p <= 0 {
		p = max(inventory.MaxPlugins, m*DefaultPluginsPerMachine)
	}
	return fleet.Quota{Machines: m, Plugins: p}
}

// Expired reports whether the token is past its expiry at now.
func (t *Record) Expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

// ExpiredMessage is what a request with the expired token is told.
func (t *Record) ExpiredMessage() string {
	return fmt.Sprintf("the bearer token %s expired at %s; ask an admin for a new one (wharf token create --role %s --expires 30d)",
		t.ID, t.ExpiresAt.UTC().Format(time.RFC3339), t.Role)
}

// Public is the record as the API shows it.
func (t Record) Public() Token {
	q := t.Quota()
	return Token{ID: t.ID, Role: t.Role, Identity: t.Identity, CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy, Note: t.Note, ExpiresAt: t.ExpiresAt,
		MaxMachines: q.Machines, MaxPlugins: q.Plugins}
}

// HashSecret is the hex sha256 of a secret: what the store keeps of it.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewSecret is a new token secret.
func NewSecret() (string, error) { return RandomSecret("wharf_") }

// RandomSecret is prefix and 256 random bits: a token's secret, a console
// session's id. The store keeps only its hash (HashSecret).
func RandomSecret(prefix string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// NewID is a new token id.
func NewID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "tok_" + hex.EncodeToString(b[:]), nil
}

// Put writes a token and its index entry in tx.
func Put(tx store.Tx, t Record) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := tx.Put(Bucket, t.ID, raw); err != nil {
		return err
	}
	return tx.Put(IndexBucket, t.Hash, []byte(t.ID))
}

// Get returns the token with id, or *NotFoundError.
func Get(r store.Reader, id string) (Record, error) {
	raw, err := r.Get(Bucket, id)
	if errors.Is(err, store.ErrNotFound) {
		return Record{}, &NotFoundError{ID: id}
	}
	if err != nil {
		return Record{}, err
	}
	var t Record
	if err := json.Unmarshal(raw, &t); err != nil {
		return Record{}, fmt.Errorf("token %s: corrupt record: %w", id, err)
	}
	return t, nil
}

// ByHash returns the token whose secret hashes to hash (hex), or nil when
// no token has it.
func ByHash(r store.Reader, hash string) (*Record, error) {
	id, err := r.Get(IndexBucket, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t, err := Get(r, string(id))
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return nil, nil // an index entry left by a deletion in progress
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// List returns every token, in id order.
func List(r store.Reader) ([]Record, error) {
	return store.DecodeList[Record](r, Bucket, "", func(key string, err error) error {
		return fmt.Errorf("token %s: corrupt record: %w", key, err)
	})
}

// admins counts the admin tokens (records that do not decode are not
// admins).
func admins(r store.Reader) (int, error) {
	kvs, err := r.List(Bucket, "")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, kv := range kvs {
		var t Record
		if json.Unmarshal(kv.Value, &t) == nil && t.Role == RoleAdmin {
			n++
		}
	}
	return n, nil
}

// HasAdmin reports whether the store holds an admin token.
func HasAdmin(r store.Reader) (bool, error) {
	n, err := admins(r)
	return n > 0, err
}

// Delete deletes token id and its index entry in tx and returns it:
// *NotFoundError when there is no such token, *LastAdminError when it is
// the last admin token (never lock everyone out).
func Delete(tx store.Tx, id string) (Record, error) {
	t, err := Get(tx, id)
	if err != nil {
		return Record{}, err
	}
	if t.Role == RoleAdmin {
		n, err := admins(tx)
		if err != nil {
			return Record{}, err
		}
		if n <= 1 {
			return Record{}, &LastAdminError{ID: id}
		}
	}
	if err := tx.Delete(Bucket, id); err != nil {
		return Record{}, err
	}
	if err := tx.Delete(IndexBucket, t.Hash); err != nil {
		return Record{}, err
	}
	return t, nil
}

// NotFoundError is a token id the store does not have.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no token %q; list tokens with GET /v1/tokens", e.ID)
}

// LastAdminError is the deletion of the last admin token.
type LastAdminError struct{ ID string }

func (e *LastAdminError) Error() string {
	return fmt.Sprintf("token %s is the last admin token; create another admin token first", e.ID)
}
