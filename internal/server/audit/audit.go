// Package audit is the server's append-only audit log, and the reading of
// any append-only log keyed by sequence number (the policy's and the
// revocations' histories are such logs too). It keeps everything in a
// store.Store (bbolt or etcd); an entry is appended inside the
// transaction of the change it records, so that it commits with it or not
// at all. The contract test runs on both backends.
package audit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// Bucket holds the audit log: SeqKey(seq) → Entry.
const Bucket = "api-audit"

// Actions.
const (
	ActionPolicyPut         = "policy.layer.put"
	ActionPolicyDelete      = "policy.layer.delete"
	ActionDecisionDeny      = "decision.deny"
	ActionTokenCreate       = "token.create"
	ActionTokenDelete       = "token.delete"
	ActionMarketplaceAdd    = "marketplace.add"
	ActionMarketplaceUpdate = "marketplace.update"
	ActionMarketplaceRemove = "marketplace.remove"
	// ActionAuthRefused is a request refused with 401 or 403 (the server
	// writes them rate-limited per client address and route).
	ActionAuthRefused = "auth.refused"
	// ActionAuthLogin is a sign-in through the identity provider (console
	// or wharf login) that issued a token; ActionAuthLogout its end.
	ActionAuthLogin  = "auth.login"
	ActionAuthLogout = "auth.logout"
)

// Entry is one line of the audit log.
type Entry struct {
	Seq    uint64      `json:"seq"`
	Time   time.Time   `json:"time"`
	Action string      `json:"action"`
	Actor  string      `json:"actor"` // token id, or "bootstrap"
	Role   tokens.Role `json:"role,omitempty"`
	// Subject and Email name the person the actor's token speaks for (an
	// OpenID Connect sign-in or login); absent for machine tokens.
	Subject string         `json:"subject,omitempty"`
	Email   string         `json:"email,omitempty"`
	Object  string         `json:"object"`
	Detail  map[string]any `json:"detail,omitempty"`
}

// SeqKey is the key of sequence number n in an append-only log: keys sort
// as their numbers do.
func SeqKey(n uint64) string { return fmt.Sprintf("%020d", n) }

// Append appends e inside tx, under the log's next sequence number, so the
// entry commits with the change it records or not at all. When e names no
// person and its actor is a token, the person comes from the token's
// identity as it stands in tx: every entry names the user as well as the
// token, whichever code path appends it.
func Append(tx store.Tx, e Entry) error {
	if e.Subject == "" && e.Email == "" && e.Actor != "" {
		if t, err := tokens.Get(tx, e.Actor); err == nil {
			e.Subject, e.Email = t.Subject, t.Email
		}
	}
	n, err := tx.NextSequence(Bucket)
	if err != nil {
		return err
	}
	e.Seq = n
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return tx.Put(Bucket, SeqKey(n), raw)
}

// Filter selects entries; zero fields select everything.
type Filter struct {
	Action string
	Actor  string
	Since  time.Time // entries at or after
}

func (f Filter) keep(e Entry) bool {
	return (f.Action == "" || e.Action == f.Action) && (f.Actor == "" || e.Actor == f.Actor) && (f.Since.IsZero() || !e.Time.Before(f.Since))
}

// Page reads at most limit entries that f selects after sequence number
// after (0: from the start), oldest first, and the cursor of the next page
// ("" at the end).
func Page(st store.Store, f Filter, after uint64, limit int) ([]Entry, string, error) {
	return ReadLog(st, Bucket, "audit entry", after, limit, f.keep, func(e Entry) uint64 { return e.Seq })
}

// ReadLog reads one page of an append-only log whose keys are SeqKey
// numbers: the entries after the cursor that keep accepts, at most limit,
// and the cursor of the next page ("" at the end). what names an entry in
// the error of a corrupt one.
func ReadLog[T any](st store.Store, bucket, what string, after uint64, limit int, keep func(T) bool, seq func(T) uint64) ([]T, string, error) {
	var out []T
	next := ""
	err := st.View(func(r store.Reader) error {
		out, next = []T{}, ""
		from := ""
		if after > 0 {
			from = SeqKey(after)
		}
		// Read in steps from the cursor on: a page costs the entries up to
		// its end (more when a filter skips many), never the whole log.
		step := max(limit+1, 64)
		for {
			kvs, err := r.ListAfter(bucket, from, step)
			if err != nil {
				return err
			}
			for _, kv := range kvs {
				n, err := strconv.ParseUint(kv.Key, 10, 64)
				if err != nil || n <= after {
					continue
				}
				var e T
				if err := json.Unmarshal(kv.Value, &e); err != nil {
					return fmt.Errorf("%s %s: corrupt: %w", what, kv.Key, err)
				}
				if !keep(e) {
					continue
				}
				if len(out) == limit {
					next = strconv.FormatUint(seq(out[limit-1]), 10)
					return nil
				}
				out = append(out, e)
			}
			if len(kvs) < step {
				return nil
			}
			from = kvs[len(kvs)-1].Key
		}
	})
	return out, next, err
}
