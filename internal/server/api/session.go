package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// The console's sessions. Signing in with a token creates a session: a
// random id, sent to the browser as the session cookie, and a record in
// the store under the id's sha256 (so that replicas over one store share
// it, and reading the store does not give a live cookie). The cookie never
// holds the token. A session ends at its expiry, at sign-out (the record
// is deleted), or when its token is revoked or expires.
const (
	bucketSessions = "api-sessions" // hex sha256(session id) → sessionRecord

	// SessionLifetime is how long a console session lasts from sign-in
	// (less when its token expires sooner).
	SessionLifetime = 12 * time.Hour
	// maxSessionsPerToken bounds the live sessions of one token; a new
	// sign-in beyond it ends the oldest.
	maxSessionsPerToken = 32

	sessionIDPrefix = "wsess_"
)

type sessionRecord struct {
	TokenID string    `json:"token"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

func sessionKey(id string) string { return tokens.HashSecret(id) }

func newSessionID() (string, error) { return tokens.RandomSecret(sessionIDPrefix) }

// startSession stores a new session for tok and returns its id. In the
// same transaction it drops expired sessions, and the oldest of tok's when
// it has maxSessionsPerToken.
func (s *Server) startSession(tok *tokenRecord) (string, error) {
	id, err := newSessionID()
	if err != nil {
		return "", err
	}
	now := s.now().UTC()
	rec := sessionRecord{TokenID: tok.ID, Created: now, Expires: now.Add(SessionLifetime)}
	if tok.ExpiresAt != nil && tok.ExpiresAt.Before(rec.Expires) {
		rec.Expires = tok.ExpiresAt.UTC()
	}
	err = s.deps.Store.Update(func(tx store.Tx) error {
		kvs, err := tx.List(bucketSessions, "")
		if err != nil {
			return err
		}
		type live struct {
			key     string
			created time.Time
		}
		var mine []live
		for _, kv := range kvs {
			var sr sessionRecord
			if json.Unmarshal(kv.Value, &sr) != nil || !now.Before(sr.Expires) {
				if err := tx.Delete(bucketSessions, kv.Key); err != nil {
					return err
				}
				continue
			}
			if sr.TokenID == tok.ID {
				mine = append(mine, live{kv.Key, sr.Created})
			}
		}
		slices.SortFunc(mine, func(a, b live) int { return a.created.Compare(b.created) })
		for len(mine) >= maxSessionsPerToken {
			if err := tx.Delete(bucketSessions, mine[0].key); err != nil {
				return err
			}
			mine = mine[1:]
		}
		raw, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return tx.Put(bucketSessions, sessionKey(id), raw)
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// sessionToken returns the token of session id, or nil when the session
// is unknown, ended, or its token was revoked. An expired token is
// returned: the caller says so.
func (s *Server) sessionToken(id string) (*tokenRecord, error) {
	if !strings.HasPrefix(id, sessionIDPrefix) || len(id) > 128 {
		return nil, nil
	}
	var tok *tokenRecord
	err := s.deps.Store.View(func(r store.Reader) error {
		raw, err := r.Get(bucketSessions, sessionKey(id))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var sr sessionRecord
		if err := json.Unmarshal(raw, &sr); err != nil {
			return fmt.Errorf("console session: corrupt record: %w", err)
		}
		if !s.now().Before(sr.Expires) {
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

// endSession deletes session id.
func (s *Server) endSession(id string) error {
	return s.deps.Store.Update(func(tx store.Tx) error {
		return tx.Delete(bucketSessions, sessionKey(id))
	})
}

// overTLS reports whether the browser reached the server over TLS: the
// connection is TLS, the server's public URL is https, or a configured
// trusted proxy (the connection's peer) says so in X-Forwarded-Proto. The
// header from anyone else is ignored.
func (s *Server) overTLS(r *http.Request) bool {
	if r.TLS != nil || strings.HasPrefix(strings.ToLower(s.deps.PublicURL), "https://") {
		return true
	}
	if len(s.deps.TrustedProxies) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	trusted := false
	for _, n := range s.deps.TrustedProxies {
		if n.Contains(ip) {
			trusted = true
			break
		}
	}
	if !trusted {
		return false
	}
	// The proxy that terminated TLS appends its value last.
	vals := strings.Split(strings.Join(r.Header.Values("X-Forwarded-Proto"), ","), ",")
	return strings.EqualFold(strings.TrimSpace(vals[len(vals)-1]), "https")
}
