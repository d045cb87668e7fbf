// Package revocations is the server's store of revocations: the active
// ones (a plugin version, or a content digest, withdrawn everywhere) and
// the history of every revocation made or lifted, over a store.Store (bbolt
// or etcd). Revocations are part of the policy: the server changes them in
// the transaction that advances the policy head and appends the audit
// entry. The contract test runs on both backends.
package revocations

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
)

// Buckets.
const (
	Bucket        = "api-revocations"        // id → policy.Revocation
	HistoryBucket = "api-revocation-history" // audit.SeqKey(seq) → HistoryEntry
)

// Bounds.
const (
	Max          = 10000 // active revocations
	MaxReasonLen = 1024  // bytes of a reason
)

// Actions of the history.
const (
	ActionRevoke = "revoke"
	ActionLift   = "lift"
)

// HistoryEntry records one revocation made or lifted.
type HistoryEntry struct {
	Seq           uint64            `json:"seq"`
	Time          time.Time         `json:"time"`
	Action        string            `json:"action"` // revoke, lift
	Revocation    policy.Revocation `json:"revocation"`
	PolicyVersion string            `json:"policyVersion"`
	Revision      uint64            `json:"revision"`
	Actor         string            `json:"actor"`
}

var idRE = regexp.MustCompile(`^r-[0-9a-f]{16}$`)

// ValidID reports whether id has the form of a revocation id.
func ValidID(id string) bool { return idRE.MatchString(id) }

// NewID is a new revocation id.
func NewID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "r-" + hex.EncodeToString(b[:]), nil
}

// Active returns the active revocations, oldest first.
func Active(r store.Reader) (policy.Revocations, error) {
	recs, err := store.DecodeList[policy.Revocation](r, Bucket, "", func(key string, err error) error {
		return fmt.Errorf("revocation %s: corrupt record: %w", key, err)
	})
	if err != nil {
		return nil, err
	}
	out := policy.Revocations(recs)
	Sort(out)
	return out, nil
}

// Sort orders revocations oldest first (then by id).
func Sort(rs policy.Revocations) {
	sort.Slice(rs, func(i, j int) bool {
		if !rs[i].Created.Equal(rs[j].Created) {
			return rs[i].Created.Before(rs[j].Created)
		}
		return rs[i].ID < rs[j].ID
	})
}

// Get returns the active revocation id, or *NotFoundError.
func Get(r store.Reader, id string) (policy.Revocation, error) {
	var rv policy.Revocation
	raw, err := r.Get(Bucket, id)
	if errors.Is(err, store.ErrNotFound) {
		return rv, &NotFoundError{ID: id}
	}
	if err != nil {
		return rv, err
	}
	if err := json.Unmarshal(raw, &rv); err != nil {
		return rv, fmt.Errorf("revocation %s: corrupt record: %w", id, err)
	}
	return rv, nil
}

// Put stores rv as active in tx.
func Put(tx store.Tx, rv policy.Revocation) error {
	raw, err := json.Marshal(rv)
	if err != nil {
		return err
	}
	return tx.Put(Bucket, rv.ID, raw)
}

// Lift removes the active revocation id in tx.
func Lift(tx store.Tx, id string) error { return tx.Delete(Bucket, id) }

// AppendHistory appends e to the history in tx, under the history's next
// sequence number.
func AppendHistory(tx store.Tx, e HistoryEntry) error {
	n, err := tx.NextSequence(HistoryBucket)
	if err != nil {
		return err
	}
	e.Seq = n
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return tx.Put(HistoryBucket, audit.SeqKey(n), raw)
}

// History reads at most limit history entries after sequence number after
// (0: from the start), oldest first, and the next page's cursor.
func History(st store.Store, after uint64, limit int) ([]HistoryEntry, string, error) {
	return audit.ReadLog(st, HistoryBucket, "revocation history", after, limit,
		func(HistoryEntry) bool { return true }, func(e HistoryEntry) uint64 { return e.Seq })
}

// NotFoundError is a revocation id that is not active.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no active revocation %s; GET /v1/revocations lists them", e.ID)
}
