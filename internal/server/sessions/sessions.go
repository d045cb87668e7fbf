// Package sessions is the server's store of web console sessions, over a
// store.Store (bbolt or etcd). Signing in with a token creates a session:
// a random id, sent to the browser as the session cookie, and a record in
// the store under the id's sha256 (so that replicas over one store share
// it, and reading the store does not give a live cookie). The cookie never
// holds the token. A session ends at its expiry, when it is ended
// (sign-out deletes the record), or when its token is revoked or expires.
// The contract test runs on both backends.
package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

const (
	// Bucket holds the sessions: hex sha256(session id) → record.
	Bucket = "api-sessions"

	// Lifetime is how long a session lasts from sign-in (less when its
	// token expires sooner).
	Lifetime = 12 * time.Hour
	// MaxPerToken bounds the live sessions of one token; a new sign-in
	// beyond it ends the oldest.
	MaxPerToken = 32

	// IDPrefix starts every session id.
	IDPrefix = "wsess_"
	maxIDLen = 128
)

type record struct {
	TokenID string    `json:"token"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

func key(id string) string { return tokens.HashSecret(id) }

// Start stores a new session of tok at now and returns its id. In the
// same transaction it drops expired sessions (and records that do not
// decode), and the oldest of tok's when it has MaxPerToken.
func Start(st store.Store, tok *tokens.Record, now time.Time) (string, error) {
	id, err := tokens.RandomSecret(IDPrefix)
	if err != nil {
		return "", err
	}
	now = now.UTC()
	rec := record{TokenID: tok.ID, Created: now, Expires: now.Add(Lifetime)}
	if tok.ExpiresAt != nil && tok.ExpiresAt.Before(rec.Expires) {
		rec.Expires = tok.ExpiresAt.UTC()
	}
	err = st.Update(func(tx store.Tx) error {
		kvs, err := tx.List(Bucket, "")
		if err != nil {
			return err
		}
		type live struct {
			key     string
			created time.Time
		}
		var mine []live
		for _, kv := range kvs {
			var sr record
			if json.Unmarshal(kv.Value, &sr) != nil || !now.Before(sr.Expires) {
				if err := tx.Delete(Bucket, kv.Key); err != nil {
					return err
				}
				continue
			}
			if sr.TokenID == tok.ID {
				mine = append(mine, live{kv.Key, sr.Created})
			}
		}
		slices.SortFunc(mine, func(a, b live) int { return a.created.Compare(b.created) })
		for len(mine) >= MaxPerToken {
			if err := tx.Delete(Bucket, mine[0].key); err != nil {
				return err
			}
			mine = mine[1:]
		}
		raw, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return tx.Put(Bucket, key(id), raw)
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// Token returns the token of session id at now, or nil when the session
// is unknown, ended or expired, or its token was revoked. An expired token
// is returned: the caller says so.
func Token(st store.Store, id string, now time.Time) (*tokens.Record, error) {
	if !strings.HasPrefix(id, IDPrefix) || len(id) > maxIDLen {
		return nil, nil
	}
	var tok *tokens.Record
	err := st.View(func(r store.Reader) error {
		raw, err := r.Get(Bucket, key(id))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var sr record
		if err := json.Unmarshal(raw, &sr); err != nil {
			return fmt.Errorf("console session: corrupt record: %w", err)
		}
		if !now.Before(sr.Expires) {
			return nil
		}
		t, err := tokens.Get(r, sr.TokenID)
		var nf *tokens.NotFoundError
		if errors.As(err, &nf) {
			return nil // the token was revoked
		}
		if err != nil {
			return err
		}
		tok = &t
		return nil
	})
	return tok, err
}

// End deletes session id.
func End(st store.Store, id string) error {
	return st.Update(func(tx store.Tx) error { return tx.Delete(Bucket, key(id)) })
}
