package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

type storeReader = store.Reader

// Token is a token as the API shows it.
type Token = tokens.Token

type tokenRecord = tokens.Record

// MaxTokenLifetime bounds --expires.
const MaxTokenLifetime = apiclient.MaxTokenLifetime

// ParseExpiry reads a token lifetime (see apiclient.ParseExpiry, which the
// client shares with the server).
func ParseExpiry(s string) (time.Duration, error) { return apiclient.ParseExpiry(s) }

// lookupToken returns the token for a secret, or nil when it is unknown.
func (s *Server) lookupToken(secret string) (*tokenRecord, error) {
	t, err := s.knownToken(secret, time.Now())
	return t.Rec, err
}

// knownToken returns the token for a secret (Rec nil when it is unknown)
// with its rate limiter, from the token cache (tokens.Cache): a revocation
// made through this server drops its entry at once, one made through
// another replica as soon as the store's watch reports it (replica.go).
// While a watch is down or unproven, an entry is used for at most
// StateCacheTTL (and a second over a shared store).
func (s *Server) knownToken(secret string, now time.Time) (cachedToken, error) {
	return s.toks.Lookup(secret, now)
}

// cachedToken is a known token with its rate limiter (nil when rate
// limiting is off).
type cachedToken = tokens.Entry[*rate.Limiter]

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
		has, err := tokens.HasAdmin(tx)
		if err != nil || has {
			return err
		}
		if secret == "" {
			if secret, err = tokens.NewSecret(); err != nil {
				return err
			}
		}
		id, err := tokens.NewID()
		if err != nil {
			return err
		}
		created = true
		rec := tokenRecord{ID: id, Role: RoleAdmin, Hash: tokens.HashSecret(secret), CreatedAt: now.UTC(), CreatedBy: "bootstrap", Note: "created on first start"}
		if err := tokens.Put(tx, rec); err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: now.UTC(), Action: ActionTokenCreate, Actor: "bootstrap", Object: id,
			Detail: map[string]any{"role": RoleAdmin}})
	})
	if err != nil || !created {
		return "", false, err
	}
	return secret, true, nil
}

// IssueToken creates a token of role with note in st, as actor by (e.g.
// "wharf-server admin token create", run beside the store), with its audit
// entry, and returns its secret, shown once. Nothing else is changed.
func IssueToken(st store.Store, role Role, note, by string, now time.Time) (string, Token, error) {
	if !ValidRole(string(role)) {
		return "", Token{}, fmt.Errorf("role %q is not one of: %s", role, joinRoles(Roles))
	}
	if len(note) > 200 {
		return "", Token{}, fmt.Errorf("note is %d bytes; the limit is 200", len(note))
	}
	secret, err := tokens.NewSecret()
	if err != nil {
		return "", Token{}, err
	}
	id, err := tokens.NewID()
	if err != nil {
		return "", Token{}, err
	}
	rec := tokenRecord{ID: id, Role: role, Hash: tokens.HashSecret(secret), CreatedAt: now.UTC(), CreatedBy: by, Note: note}
	err = st.Update(func(tx store.Tx) error {
		if err := tokens.Put(tx, rec); err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: rec.CreatedAt, Action: ActionTokenCreate, Actor: by, Object: id,
			Detail: map[string]any{"role": role}})
	})
	if err != nil {
		return "", Token{}, err
	}
	return secret, rec.Public(), nil
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
	// Groups and Labels (key=value) select the policy layers and channels
	// targeted to them (tokens.Target).
	Groups []string `json:"groups,omitempty"`
	Labels []string `json:"labels,omitempty"`
}

type createTokenResponse struct {
	tokens.Token
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
	if req.MaxMachines < 0 || req.MaxMachines > tokens.MaxQuotaMachines {
		return badField("maxMachines", "maxMachines %d must be from 1 to %d (leave it out for the role's default: %d for an agent token, %d for others)",
			req.MaxMachines, tokens.MaxQuotaMachines, tokens.DefaultAgentMachines, tokens.DefaultMachines)
	}
	if req.MaxPlugins < 0 || req.MaxPlugins > tokens.MaxQuotaPlugins {
		return badField("maxPlugins", "maxPlugins %d must be from 1 to %d (leave it out for the default: %d per machine, at least %d)",
			req.MaxPlugins, tokens.MaxQuotaPlugins, tokens.DefaultPluginsPerMachine, inventory.MaxPlugins)
	}
	groups, err := tokens.ValidateGroups("groups", req.Groups)
	if err != nil {
		return targetErr(err)
	}
	labels, err := tokens.ValidateLabels("labels", req.Labels)
	if err != nil {
		return targetErr(err)
	}
	var lifetime time.Duration
	if req.Expires != "" {
		d, err := ParseExpiry(req.Expires)
		if err != nil {
			return badField("expires", "%v", err)
		}
		lifetime = d
	}
	secret, err := tokens.NewSecret()
	if err != nil {
		return err
	}
	id, err := tokens.NewID()
	if err != nil {
		return err
	}
	p := s.caller(c)
	rec := tokenRecord{ID: id, Role: Role(req.Role), Hash: tokens.HashSecret(secret), CreatedAt: s.now().UTC(), CreatedBy: p.TokenID, Note: req.Note,
		MaxMachines: req.MaxMachines, MaxPlugins: req.MaxPlugins, Identity: tokens.Identity{Groups: groups, Labels: labels}}
	q := rec.Quota()
	detail := map[string]any{"role": req.Role, "maxMachines": q.Machines, "maxPlugins": q.Plugins}
	if len(groups) > 0 {
		detail["groups"] = groups
	}
	if len(labels) > 0 {
		detail["labels"] = labels
	}
	if lifetime > 0 {
		exp := rec.CreatedAt.Add(lifetime)
		rec.ExpiresAt = &exp
		detail["expiresAt"] = exp.Format(time.RFC3339)
	}
	err = s.deps.Store.Update(func(tx store.Tx) error {
		if err := tokens.Put(tx, rec); err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: rec.CreatedAt, Action: ActionTokenCreate, Actor: p.TokenID, Role: p.Role,
			Object: id, Detail: detail})
	})
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, createTokenResponse{Token: rec.Public(), Secret: secret})
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
		recs, err := tokens.List(r)
		if err != nil {
			return err
		}
		used, err := tokens.LastUsed(r)
		if err != nil {
			return err
		}
		for _, t := range recs {
			pub := t.Public()
			if at, ok := used[t.ID]; ok {
				at := at.UTC()
				pub.LastUsed = &at
			}
			out = append(out, pub)
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
		t, err := tokens.Delete(tx, id)
		var nf *tokens.NotFoundError
		var last *tokens.LastAdminError
		switch {
		case errors.As(err, &nf):
			return apiErr(http.StatusNotFound, CodeNotFound, "id", "%s", nf.Error())
		case errors.As(err, &last):
			return apiErr(http.StatusConflict, CodeConflict, "id", "%s", last.Error())
		case err != nil:
			return err
		}
		hash = t.Hash
		if err := tokens.ForgetLastUse(tx, id); err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: s.now().UTC(), Action: ActionTokenDelete, Actor: p.TokenID, Role: p.Role,
			Object: id, Detail: map[string]any{"role": t.Role}})
	})
	if err != nil {
		return err
	}
	s.toks.Drop(hash)
	s.forgetLimiter(id)
	return c.NoContent(http.StatusNoContent)
}
