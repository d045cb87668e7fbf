package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/fleet"
)

type storeReader = store.Reader

// Buckets and keys of the server's state.
const (
	bucketTokens     = "api-tokens"      // id → tokenRecord
	bucketTokenIndex = "api-token-index" // hex sha256(secret) → id
	bucketLayers     = "api-policy-layers"
	bucketHistory    = "api-policy-history"
	bucketAudit      = "api-audit"
	bucketSettings   = "api-settings"

	keySigningKey = "bundle-signing-key"
	keyPolicyHead = "policy-head"
)

// Token is a token's stored record. The secret itself is never stored: only
// its sha256.
type Token struct {
	ID        string    `json:"id"`
	Role      Role      `json:"role"`
	Hash      string    `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy"`
	Note      string    `json:"note,omitempty"`
	// ExpiresAt is when the token stops being accepted; absent: never.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// MaxMachines and MaxPlugins are the token's inventory quota: the
	// machine ids it may report, and the plugin ids their reports may list
	// together (tokenRecord.quota).
	MaxMachines int `json:"maxMachines"`
	MaxPlugins  int `json:"maxPlugins"`
}

// Defaults of a token's inventory quota, when the admin set none.
const (
	// An agent token is one machine.
	defaultAgentMachines = 1
	// A developer's, CI's or admin's token: a person's few machines.
	defaultMachines = 10
	// Plugin ids per machine of the quota (and at least one full report).
	defaultPluginsPerMachine = 100
	// The largest quota an admin may give one token.
	maxQuotaMachines = 1_000_000
	maxQuotaPlugins  = 100_000_000
)

type tokenRecord struct {
	ID        string     `json:"id"`
	Role      Role       `json:"role"`
	Hash      string     `json:"hash"`
	CreatedAt time.Time  `json:"createdAt"`
	CreatedBy string     `json:"createdBy"`
	Note      string     `json:"note,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// MaxMachines, MaxPlugins: 0 is the role's default (quota).
	MaxMachines int `json:"maxMachines,omitempty"`
	MaxPlugins  int `json:"maxPlugins,omitempty"`
}

// quota is the token's inventory quota: what the admin set, else the
// role's default.
func (t *tokenRecord) quota() fleet.Quota {
	m := t.MaxMachines
	if m <= 0 {
		m = defaultMachines
		if t.Role == RoleAgent {
			m = defaultAgentMachines
		}
	}
	p := t.MaxPlugins
	if p <= 0 {
		p = max(inventory.MaxPlugins, m*defaultPluginsPerMachine)
	}
	return fleet.Quota{Machines: m, Plugins: p}
}

// expired reports whether the token is past its expiry at now.
func (t *tokenRecord) expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

// expiredMessage is the 401 message for an expired token.
func (t *tokenRecord) expiredMessage() string {
	return fmt.Sprintf("the bearer token %s expired at %s; ask an admin for a new one (wharf token create --role %s --expires 30d)",
		t.ID, t.ExpiresAt.UTC().Format(time.RFC3339), t.Role)
}

// MaxTokenLifetime bounds --expires.
const MaxTokenLifetime = apiclient.MaxTokenLifetime

// ParseExpiry reads a token lifetime (see apiclient.ParseExpiry, which the
// client shares with the server).
func ParseExpiry(s string) (time.Duration, error) { return apiclient.ParseExpiry(s) }

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func newSecret() (string, error) { return randomSecret("wharf_") }

// randomSecret is prefix and 256 random bits: a token's secret, a console
// session's id. The store keeps only its hash (hashSecret).
func randomSecret(prefix string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func newTokenID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "tok_" + hex.EncodeToString(b[:]), nil
}

// lookupToken returns the token for a secret, or nil when it is unknown.
func (s *Server) lookupToken(secret string) (*tokenRecord, error) {
	t, err := s.knownToken(secret, time.Now())
	return t.rec, err
}

// knownToken returns the token for a secret (rec nil when it is unknown)
// with its rate limiter. Known tokens are kept in memory, under the
// secret's sha256: a revocation made through this server drops its entry at
// once, one made through another replica as soon as the store's watch
// reports it (replica.go). While a watch is down or unproven, an entry is
// used for at most StateCacheTTL (and a second over a shared store). Unknown secrets are never cached, so guessing cannot
// fill the cache.
func (s *Server) knownToken(secret string, now time.Time) (cachedToken, error) {
	var buf [128]byte // a secret's bytes, without an allocation
	h := sha256.Sum256(append(buf[:0], secret...))
	s.tokMu.RLock()
	ct, ok := s.tokCache[h]
	s.tokMu.RUnlock()
	if ok && s.fresh(ct.expires, now) {
		return ct, nil
	}
	return s.readToken(h, now)
}

// readToken reads the token whose secret hashes to h from the store and
// caches it.
func (s *Server) readToken(h [sha256.Size]byte, now time.Time) (cachedToken, error) {
	var rec *tokenRecord
	gen := s.rep.tokenGen.Load() // a revocation seen while reading wins (replica.go)
	err := s.deps.Store.View(func(r store.Reader) error {
		id, err := r.Get(bucketTokenIndex, hex.EncodeToString(h[:]))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		raw, err := r.Get(bucketTokens, string(id))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var t tokenRecord
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("token %s: corrupt record: %w", id, err)
		}
		rec = &t
		return nil
	})
	if err != nil || rec == nil {
		return cachedToken{}, err
	}
	ct := cachedToken{rec: rec, limiter: s.limiter(rec.ID), expires: now.Add(s.deps.StateCacheTTL)}
	if s.deps.StateCacheTTL < 0 {
		return ct, nil
	}
	s.tokMu.Lock()
	if s.rep.tokenGen.Load() != gen {
		s.tokMu.Unlock()
		return ct, nil
	}
	if len(s.tokCache) >= maxCachedTokens {
		clear(s.tokCache)
	}
	s.tokCache[h] = ct
	s.tokMu.Unlock()
	return ct, nil
}

const maxCachedTokens = 10000

type cachedToken struct {
	rec     *tokenRecord
	limiter *rate.Limiter // the token's bucket; nil when rate limiting is off
	expires time.Time     // when the entry must be read again, unless the watch is up
}

// forgetToken drops a revoked token from the cache.
func (s *Server) forgetToken(hash string) {
	s.dropToken(hash)
}

// putToken writes a token and its index entry in tx.
func putToken(tx store.Tx, t tokenRecord) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := tx.Put(bucketTokens, t.ID, raw); err != nil {
		return err
	}
	return tx.Put(bucketTokenIndex, t.Hash, []byte(t.ID))
}

// EnsureAdminToken makes sure the store holds at least one admin token. When
// none exists it creates one, from secret when it is non-empty (e.g.
// WHARF_BOOTSTRAP_TOKEN) or else a random one, and returns the secret with
// created=true; the caller shows it once. When an admin token exists it
// returns created=false and never reveals anything.
func EnsureAdminToken(st store.Store, secret string, now time.Time) (string, bool, error) {
	if secret != "" && len(secret) < 16 {
		return "", false, fmt.Errorf("api: bootstrap token is %d characters; use at least 16 (e.g. openssl rand -hex 32)", len(secret))
	}
	created := false
	err := st.Update(func(tx store.Tx) error {
		kvs, err := tx.List(bucketTokens, "")
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var t tokenRecord
			if json.Unmarshal(kv.Value, &t) == nil && t.Role == RoleAdmin {
				return nil
			}
		}
		if secret == "" {
			if secret, err = newSecret(); err != nil {
				return err
			}
		}
		id, err := newTokenID()
		if err != nil {
			return err
		}
		created = true
		rec := tokenRecord{ID: id, Role: RoleAdmin, Hash: hashSecret(secret), CreatedAt: now.UTC(), CreatedBy: "bootstrap", Note: "created on first start"}
		if err := putToken(tx, rec); err != nil {
			return err
		}
		return appendAudit(tx, AuditEntry{Time: now.UTC(), Action: ActionTokenCreate, Actor: "bootstrap", Object: id,
			Detail: map[string]any{"role": RoleAdmin}})
	})
	if err != nil || !created {
		return "", false, err
	}
	return secret, true, nil
}

type createTokenRequest struct {
	Role string `json:"role"`
	Note string `json:"note,omitempty"`
	// Expires is the token's lifetime ("30d", "12h"); empty: no expiry.
	Expires string `json:"expires,omitempty"`
	// MaxMachines and MaxPlugins set the inventory quota; absent: the
	// role's default.
	MaxMachines int `json:"maxMachines,omitempty"`
	MaxPlugins  int `json:"maxPlugins,omitempty"`
}

type createTokenResponse struct {
	Token
	// Secret is shown only in this response.
	Secret string `json:"token"`
}

func (s *Server) createToken(c echo.Context) error {
	var req createTokenRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if !ValidRole(req.Role) {
		return badField("role", "role %q is not one of: %s", req.Role, joinRoles(Roles))
	}
	if len(req.Note) > 200 {
		return badField("note", "note is %d bytes; the limit is 200", len(req.Note))
	}
	if req.MaxMachines < 0 || req.MaxMachines > maxQuotaMachines {
		return badField("maxMachines", "maxMachines %d must be from 1 to %d (leave it out for the role's default: %d for an agent token, %d for others)",
			req.MaxMachines, maxQuotaMachines, defaultAgentMachines, defaultMachines)
	}
	if req.MaxPlugins < 0 || req.MaxPlugins > maxQuotaPlugins {
		return badField("maxPlugins", "maxPlugins %d must be from 1 to %d (leave it out for the default: %d per machine, at least %d)",
			req.MaxPlugins, maxQuotaPlugins, defaultPluginsPerMachine, inventory.MaxPlugins)
	}
	var lifetime time.Duration
	if req.Expires != "" {
		d, err := ParseExpiry(req.Expires)
		if err != nil {
			return badField("expires", "%v", err)
		}
		lifetime = d
	}
	secret, err := newSecret()
	if err != nil {
		return err
	}
	id, err := newTokenID()
	if err != nil {
		return err
	}
	p := s.caller(c)
	rec := tokenRecord{ID: id, Role: Role(req.Role), Hash: hashSecret(secret), CreatedAt: s.now().UTC(), CreatedBy: p.TokenID, Note: req.Note,
		MaxMachines: req.MaxMachines, MaxPlugins: req.MaxPlugins}
	q := rec.quota()
	detail := map[string]any{"role": req.Role, "maxMachines": q.Machines, "maxPlugins": q.Plugins}
	if lifetime > 0 {
		exp := rec.CreatedAt.Add(lifetime)
		rec.ExpiresAt = &exp
		detail["expiresAt"] = exp.Format(time.RFC3339)
	}
	err = s.deps.Store.Update(func(tx store.Tx) error {
		if err := putToken(tx, rec); err != nil {
			return err
		}
		return appendAudit(tx, AuditEntry{Time: rec.CreatedAt, Action: ActionTokenCreate, Actor: p.TokenID, Role: p.Role,
			Object: id, Detail: detail})
	})
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, createTokenResponse{Token: rec.public(), Secret: secret})
}

func (t tokenRecord) public() Token {
	q := t.quota()
	return Token{ID: t.ID, Role: t.Role, CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy, Note: t.Note, ExpiresAt: t.ExpiresAt,
		MaxMachines: q.Machines, MaxPlugins: q.Plugins}
}

func (s *Server) listTokens(c echo.Context) error {
	limit, err := parseLimitDefault(c, maxPageSize)
	if err != nil {
		return err
	}
	after, err := keyCursor(c)
	if err != nil {
		return err
	}
	var out []Token
	err = s.deps.Store.View(func(r store.Reader) error {
		kvs, err := r.List(bucketTokens, "")
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var t tokenRecord
			if err := json.Unmarshal(kv.Value, &t); err != nil {
				return fmt.Errorf("token %s: corrupt record: %w", kv.Key, err)
			}
			out = append(out, t.public())
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Oldest first.
	out, next := pageByKey(out, func(t Token) string { return timeKey(t.CreatedAt, t.ID) }, after, limit)
	if out == nil {
		out = []Token{}
	}
	nextLink(c, next)
	return c.JSON(http.StatusOK, out)
}

func (s *Server) deleteToken(c echo.Context) error {
	id := c.Param("id")
	p := s.caller(c)
	var hash string
	err := s.deps.Store.Update(func(tx store.Tx) error {
		raw, err := tx.Get(bucketTokens, id)
		if errors.Is(err, store.ErrNotFound) {
			return apiErr(http.StatusNotFound, CodeNotFound, "id", "no token %q; list tokens with GET /v1/tokens", id)
		}
		if err != nil {
			return err
		}
		var t tokenRecord
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("token %s: corrupt record: %w", id, err)
		}
		if t.Role == RoleAdmin {
			// Never lock everyone out: the last admin token stays.
			kvs, err := tx.List(bucketTokens, "")
			if err != nil {
				return err
			}
			admins := 0
			for _, kv := range kvs {
				var o tokenRecord
				if json.Unmarshal(kv.Value, &o) == nil && o.Role == RoleAdmin {
					admins++
				}
			}
			if admins <= 1 {
				return apiErr(http.StatusConflict, CodeConflict, "id",
					"token %s is the last admin token; create another admin token first", id)
			}
		}
		if err := tx.Delete(bucketTokens, id); err != nil {
			return err
		}
		if err := tx.Delete(bucketTokenIndex, t.Hash); err != nil {
			return err
		}
		hash = t.Hash
		return appendAudit(tx, AuditEntry{Time: s.now().UTC(), Action: ActionTokenDelete, Actor: p.TokenID, Role: p.Role,
			Object: id, Detail: map[string]any{"role": t.Role}})
	})
	if err != nil {
		return err
	}
	s.forgetToken(hash)
	s.forgetLimiter(id)
	return c.NoContent(http.StatusNoContent)
}
