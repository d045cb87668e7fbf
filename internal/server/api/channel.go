package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/storage"
	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/server/gitserver"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// Audit actions of channels.
const (
	ActionChannelCreate  = "channel.create"
	ActionChannelEdit    = "channel.edit"
	ActionChannelDelete  = "channel.delete"
	ActionChannelRebuild = channel.ActionRebuild
)

// loadedCatalog is a Catalog that can hand out the parsed marketplaces
// (with their local roots) that channels are built from.
type loadedCatalog interface {
	Loaded() (*marketplace.Catalog, error)
}

func (s *Server) channels() (*channel.Builder, loadedCatalog, error) {
	if s.chans == nil {
		return nil, nil, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "this server has no channel directory configured (Deps.ChannelDir)"}
	}
	lc, ok := s.deps.Catalog.(loadedCatalog)
	if !ok {
		return nil, nil, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "this server has no marketplace catalog to build channels from"}
	}
	return s.chans, lc, nil
}

// revocations are what channels leave out: the server's own active
// revocations (POST /v1/revocations), unless Deps.Revocations says
// otherwise.
func (s *Server) revocations(ctx context.Context) (policy.Revocations, error) {
	if s.deps.Revocations != nil {
		return s.deps.Revocations(ctx)
	}
	var revs policy.Revocations
	err := s.deps.Store.View(func(r store.Reader) (err error) {
		revs, err = readRevocations(r)
		return err
	})
	return revs, err
}

// channelDecider asks the server's current policy about channel candidates,
// as GET /v1/plugins does, without auditing each denial (a rebuild is
// audited once, with what changed). The gate is the same policy's decision
// on plugin sources and redirect targets (fetch_source), nil when the
// policy has none.
func (s *Server) channelDecider(ctx context.Context) (channel.Decider, source.Gate, policyHead, error) {
	d, head, err := s.deciderHead(ctx)
	if err != nil {
		return nil, nil, policyHead{}, err
	}
	gate, _ := d.(source.Gate)
	return func(ctx context.Context, c channel.Candidate) (channel.Verdict, error) {
		in := DecisionInput{Plugin: c.ID, MarketplaceSource: c.MarketplaceSource, Dependencies: c.Dependencies, RequiredBy: c.RequiredBy, Content: c.Content}
		if det, err := s.deps.Catalog.Plugin(ctx, c.ID); err == nil {
			in.Components = det.Components
		}
		dec, err := d.Decide(ctx, in)
		if err != nil {
			return channel.Verdict{}, err
		}
		v := channel.Verdict{Allowed: dec.Allowed, Forced: dec.Forced}
		for _, r := range dec.Reasons {
			v.Reasons = append(v.Reasons, channel.Reason{Layer: r.Layer, Rule: r.Rule, Message: r.Message})
		}
		return v, nil
	}, gate, head, nil
}

// requestedChannel is the channel the request's {name} names, built up to
// date (ensureChannel), or the API error that says why not.
func (s *Server) requestedChannel(c echo.Context) (channel.Definition, channel.Head, error) {
	name, err := channelParam(c)
	if err != nil {
		return channel.Definition{}, channel.Head{}, err
	}
	def, h, err := s.ensureChannel(c.Request().Context(), name)
	if err != nil {
		return channel.Definition{}, channel.Head{}, s.channelErr(err)
	}
	return def, h, nil
}

// ensureChannel brings a channel's build up to date with the current
// definition, policy, revocations and marketplaces (channel.Builder.Refresh
// rebuilds and audits when they changed since its last build) and returns
// its head.
func (s *Server) ensureChannel(ctx context.Context, name string) (channel.Definition, channel.Head, error) {
	b, lc, err := s.channels()
	if err != nil {
		return channel.Definition{}, channel.Head{}, err
	}
	def, res, err := b.Refresh(ctx, name, func(ctx context.Context) (channel.Env, error) {
		decide, gate, pol, err := s.channelDecider(ctx)
		if err != nil {
			return channel.Env{}, err
		}
		revs, err := s.revocations(ctx)
		if err != nil {
			return channel.Env{}, fmt.Errorf("read revocations: %w", err)
		}
		cat, err := lc.Loaded()
		if err != nil {
			return channel.Env{}, err
		}
		return channel.Env{Catalog: cat, Decide: decide, Sources: gate, Revocations: revs, Admit: s.admitter(),
			PolicyVersion: pol.Version, PolicyRevision: pol.Revision}, nil
	}, s.now())
	if res.PruneErr != nil {
		s.log.Warn("channel: removing unused vendored copies", slog.String("channel", name), slog.String("error", res.PruneErr.Error()))
	} else if res.Pruned > 0 {
		s.log.Info("channel: removed unused vendored copies", slog.String("channel", name), slog.Int("removed", res.Pruned))
	}
	return def, res.Head, err
}

// ChannelSummary is one row of GET /v1/channels.
type ChannelSummary struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	URL         string    `json:"url"`
	Commit      string    `json:"commit"`
	Plugins     int       `json:"plugins"`
	Updated     time.Time `json:"updated"`
	Public      bool      `json:"public"`
	// Command is what a developer runs to add the channel to Claude Code.
	Command string `json:"command"`
	// Target is who sees the channel besides admins; absent: everyone.
	Target *channel.Target `json:"target,omitempty"`
}

// ChannelView is GET /v1/channels/{name}.
type ChannelView struct {
	ChannelSummary
	Definition channel.Definition `json:"definition"`
	Entries    []channel.Entry    `json:"entries"`
	LeftOut    []channel.LeftOut  `json:"leftOut"`
	Changes    []string           `json:"changes"` // of the last rebuild
}

// view is a channel as GET /v1/channels/{name} shows it: its lists are
// arrays, empty rather than null.
func (s *Server) view(r *http.Request, def channel.Definition, h channel.Head) ChannelView {
	v := ChannelView{ChannelSummary: s.summary(r, def, h), Definition: def, Entries: h.Plan.Entries, LeftOut: h.Plan.LeftOut, Changes: h.Changes}
	if v.Entries == nil {
		v.Entries = []channel.Entry{}
	}
	if v.LeftOut == nil {
		v.LeftOut = []channel.LeftOut{}
	}
	if v.Changes == nil {
		v.Changes = []string{}
	}
	return v
}

// cloneURL is where a channel is cloned from: PublicURL when the server
// has one, else the address the request came to.
func (s *Server) cloneURL(r *http.Request, name string) string {
	base := strings.TrimRight(s.deps.PublicURL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return base + "/git/" + name + ".git"
}

// addCommand is the one command a developer runs.
func addCommand(url string, public bool) string {
	if public {
		return "claude plugin marketplace add " + url
	}
	if i := strings.Index(url, "://"); i >= 0 {
		url = url[:i+3] + "wharf:<token>@" + url[i+3:]
	}
	return "claude plugin marketplace add " + url
}

func (s *Server) summary(r *http.Request, def channel.Definition, h channel.Head) ChannelSummary {
	u := s.cloneURL(r, def.Name)
	return ChannelSummary{Name: def.Name, Description: def.Description, URL: u, Commit: h.Commit, Plugins: len(h.Plan.Entries),
		Updated: h.Built, Public: def.Public, Command: addCommand(u, def.Public), Target: def.Target}
}

func (s *Server) listChannels(c echo.Context) error {
	if _, _, err := s.channels(); err != nil {
		return err
	}
	limit, err := parseLimitDefault(c, maxPageSize)
	if err != nil {
		return err
	}
	after, err := keyCursor(c)
	if err != nil {
		return err
	}
	var defs []channel.Definition
	if err := s.deps.Store.View(func(r store.Reader) (err error) {
		defs, err = channel.List(r)
		return err
	}); err != nil {
		return err
	}
	defs, next := pageByKey(s.visibleChannels(c, defs), func(d channel.Definition) string { return d.Name }, after, limit)
	nextLink(c, next)
	out := make([]ChannelSummary, 0, len(defs))
	for _, d := range defs {
		def, h, err := s.ensureChannel(c.Request().Context(), d.Name)
		if err != nil {
			return err
		}
		out = append(out, s.summary(c.Request(), def, h))
	}
	return c.JSON(http.StatusOK, out)
}

func channelParam(c echo.Context) (string, error) {
	name := strings.TrimSuffix(c.Param("name"), ".git")
	d := channel.Definition{Name: name}
	if err := d.Validate(); err != nil {
		return "", badField("name", "%v", err)
	}
	return name, nil
}

func (s *Server) channelErr(err error) error {
	var fe *channel.FieldError
	switch {
	case errors.As(err, &fe):
		return badField(fe.Field, "%v", fe.Err)
	case errors.Is(err, channel.ErrNotFound):
		return apiErr(http.StatusNotFound, CodeNotFound, "name", "%v", err)
	case errors.Is(err, channel.ErrConflict):
		return apiErr(http.StatusConflict, CodeConflict, "name", "%v", err)
	}
	return err
}

func (s *Server) getChannel(c echo.Context) error {
	def, h, err := s.requestedChannel(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.view(c.Request(), def, h))
}

// ChannelHistory is one page of GET /v1/channels/{name}/history: at most
// limit definitions and limit builds, oldest first.
type ChannelHistory struct {
	Definitions []channel.Definition `json:"definitions"`
	Builds      []channel.Head       `json:"builds"`
	// Next is the cursor of the following page; empty on the last.
	Next string `json:"next,omitempty"`
}

// historyCursor reads the cursor of a channel's history: how many
// definitions and builds the pages before it held ("12.40").
func historyCursor(c echo.Context) (defs, builds int, err error) {
	v := c.QueryParam("cursor")
	if v == "" {
		return 0, 0, nil
	}
	d, b, ok := strings.Cut(v, ".")
	var err1, err2 error
	defs, err1 = strconv.Atoi(d)
	builds, err2 = strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || defs < 0 || builds < 0 || defs > maxOffset || builds > maxOffset {
		return 0, 0, badField("cursor", "cursor %q is not one this server returned; start again without it", trimForMessage(v))
	}
	return defs, builds, nil
}

// window returns at most limit items of s from offset on, and whether
// more follow.
func window[T any](s []T, offset, limit int) ([]T, bool) {
	s = s[min(offset, len(s)):]
	if len(s) > limit {
		return s[:limit], true
	}
	return s, false
}

func (s *Server) channelHistory(c echo.Context) error {
	name, err := channelParam(c)
	if err != nil {
		return err
	}
	limit, err := parseLimit(c)
	if err != nil {
		return err
	}
	fromDefs, fromBuilds, err := historyCursor(c)
	if err != nil {
		return err
	}
	var out ChannelHistory
	if err := s.deps.Store.View(func(r store.Reader) (err error) {
		if out.Definitions, err = channel.History(r, name); err != nil {
			return err
		}
		out.Builds, err = channel.Builds(r, name)
		return err
	}); err != nil {
		return err
	}
	if len(out.Definitions) == 0 && len(out.Builds) == 0 && name != channel.Approved {
		return apiErr(http.StatusNotFound, CodeNotFound, "name", "channel %q has no history; see GET /v1/channels", name)
	}
	var moreDefs, moreBuilds bool
	out.Definitions, moreDefs = window(out.Definitions, fromDefs, limit)
	out.Builds, moreBuilds = window(out.Builds, fromBuilds, limit)
	if moreDefs || moreBuilds {
		out.Next = strconv.Itoa(fromDefs+len(out.Definitions)) + "." + strconv.Itoa(fromBuilds+len(out.Builds))
	}
	for i := range out.Builds {
		out.Builds[i].Plan = channel.Plan{} // the entries of every build are in GET /v1/channels/{name}; here what changed
	}
	return c.JSON(http.StatusOK, out)
}

type channelRequest struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Marketplaces []string `json:"marketplaces"`
	Plugins      []string `json:"plugins"`
	Public       bool     `json:"public"`
	// Target limits who lists and clones the channel; absent: everyone.
	Target *tokens.Target `json:"target,omitempty"`
}

func (s *Server) putChannel(c echo.Context, create bool) error {
	if _, _, err := s.channels(); err != nil {
		return err
	}
	var req channelRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if !create {
		name, err := channelParam(c)
		if err != nil {
			return err
		}
		if req.Name != "" && req.Name != name {
			return badField("name", "the body names channel %q but the path %q; a channel cannot be renamed", req.Name, name)
		}
		req.Name = name
	}
	target, err := channelTarget(req.Target)
	if err != nil {
		return err
	}
	p := s.caller(c)
	action := ActionChannelEdit
	if create {
		action = ActionChannelCreate
	}
	var def channel.Definition
	err = s.deps.Store.Update(func(tx store.Tx) (err error) {
		def, err = channel.Put(tx, channel.Definition{Name: req.Name, Description: req.Description, Marketplaces: req.Marketplaces,
			Plugins: req.Plugins, Public: req.Public, Target: target}, create, s.now(), p.TokenID)
		if err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: s.now().UTC(), Action: action, Actor: p.TokenID, Role: p.Role, Object: "channel " + def.Name,
			Detail: map[string]any{"revision": def.Revision, "marketplaces": def.Marketplaces, "plugins": def.Plugins, "public": def.Public, "target": def.Target}})
	})
	if err != nil {
		return s.channelErr(err)
	}
	def, h, err := s.ensureChannel(c.Request().Context(), def.Name)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if create {
		status = http.StatusCreated
	}
	return c.JSON(status, s.view(c.Request(), def, h))
}

func (s *Server) createChannel(c echo.Context) error { return s.putChannel(c, true) }
func (s *Server) editChannel(c echo.Context) error   { return s.putChannel(c, false) }

func (s *Server) deleteChannel(c echo.Context) error {
	b, _, err := s.channels()
	if err != nil {
		return err
	}
	name, err := channelParam(c)
	if err != nil {
		return err
	}
	p := s.caller(c)
	if err := s.deps.Store.Update(func(tx store.Tx) error {
		if err := channel.Delete(tx, name, s.now(), p.TokenID); err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: s.now().UTC(), Action: ActionChannelDelete, Actor: p.TokenID, Role: p.Role, Object: "channel " + name})
	}); err != nil {
		return s.channelErr(err)
	}
	if err := b.Remove(name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// channelSettings is GET /v1/channels/{name}/claude-managed-settings.
func (s *Server) channelSettings(c echo.Context) error {
	def, h, err := s.requestedChannel(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, channel.Settings(def.Name, s.cloneURL(c.Request(), def.Name), h.Plan.Entries, h.Plan.LeftOut))
}

// gitRoute is the route of the channels' git repositories.
const gitRoute = "/git/*"

// serveGit serves the channels' repositories under /git/ over git's smart
// HTTP protocol, inside the API's middleware (metrics by route, logs, body
// limit, deadline). A public channel needs no credentials and spends the
// client address's rate budget; any other needs a valid token as the HTTP
// basic password (any user name), or as a bearer token, and spends that
// token's budget. Refusals are audited like the API's. Answers are plain
// text, which git shows its user.
func (s *Server) serveGit(c echo.Context) error {
	w, r := c.Response(), c.Request()
	rest := strings.TrimPrefix(r.URL.Path, "/git/")
	first, _, _ := strings.Cut(rest, "/")
	name := strings.TrimSuffix(first, ".git")
	if s.chans == nil {
		return gitText(c, http.StatusServiceUnavailable, "this server has no channel directory configured", 0)
	}
	if err := (&channel.Definition{Name: name}).Validate(); err != nil {
		return gitText(c, http.StatusNotFound, "no such channel: "+err.Error(), 0)
	}
	var def channel.Definition
	if err := s.deps.Store.View(func(rd store.Reader) (err error) {
		def, err = channel.Get(rd, name)
		return err
	}); err != nil {
		if errors.Is(err, channel.ErrNotFound) {
			return gitText(c, http.StatusNotFound, err.Error(), 0)
		}
		return gitText(c, http.StatusServiceUnavailable, "store: "+err.Error(), 0)
	}
	now := s.now()
	if def.Public {
		if err := s.allowClient(c, "git"); err != nil {
			return gitErr(c, err)
		}
	} else {
		secret := ""
		if _, pw, ok := r.BasicAuth(); ok {
			secret = pw
		} else if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
			secret = strings.TrimSpace(tok)
		}
		refuse := func(actor string, role Role, reason, msg string) error {
			s.auditRefusal(c, http.StatusUnauthorized, actor, role, reason)
			w.Header().Set("WWW-Authenticate", `Basic realm="wharf"`)
			return gitText(c, http.StatusUnauthorized, msg, 0)
		}
		if secret == "" {
			return refuse("", "", "no token for channel "+name, "channel "+name+" needs a token: clone http://wharf:<token>@"+r.Host+"/git/"+name+".git")
		}
		tok, err := s.knownToken(secret, now)
		if err != nil {
			return gitText(c, http.StatusServiceUnavailable, "store: "+err.Error(), 0)
		}
		if tok.Rec == nil {
			return refuse("", "", "unknown or revoked token", "the token is unknown, revoked or expired; ask an admin for a new one")
		}
		if tok.Rec.Expired(now) {
			return refuse(tok.Rec.ID, tok.Rec.Role, "expired token", "the token is unknown, revoked or expired; ask an admin for a new one")
		}
		caller := principal{TokenID: tok.Rec.ID, Role: tok.Rec.Role, Who: tok.Rec.Identity}
		if rq, ok := c.(*request); ok {
			rq.caller, rq.authed = caller, true
		}
		if !seesChannel(caller, def) {
			s.auditRefusal(c, http.StatusNotFound, tok.Rec.ID, tok.Rec.Role, "channel "+name+" is targeted to other groups")
			return gitText(c, http.StatusNotFound, channel.ErrNotFound.Error()+": "+name, 0)
		}
		if err := s.take(tok.Val, tok.Rec.ID, now); err != nil {
			return gitErr(c, err)
		}
	}
	if _, after, _ := strings.Cut(rest, "/"); !strings.HasSuffix(first, ".git") && strings.HasPrefix(after, "gemini/") {
		s.serveGeminiExtension(w, r, name)
		return nil
	}
	if _, after, _ := strings.Cut(rest, "/"); !strings.HasSuffix(first, ".git") && strings.HasPrefix(after, "opencode/") {
		return s.serveOpenCodeSkills(c, name, strings.TrimPrefix(after, "opencode/"))
	}
	gs := &gitserver.Server{
		Timeout:         s.deps.RequestTimeout,
		MaxRequestBytes: s.deps.BodyLimit,
		Open: func(ctx context.Context, repo string) (storage.Storer, error) {
			ctx, cancel := context.WithTimeout(ctx, s.deps.RequestTimeout)
			defer cancel()
			if _, _, err := s.ensureChannel(ctx, strings.TrimSuffix(repo, ".git")); err != nil {
				if errors.Is(err, channel.ErrNotFound) {
					return nil, fmt.Errorf("%w: %v", gitserver.ErrNotFound, err)
				}
				s.log.Error("channel build failed", "channel", repo, "err", err)
				return nil, err
			}
			return s.chans.Storer(strings.TrimSuffix(repo, ".git"))
		},
	}
	http.StripPrefix("/git", gs).ServeHTTP(w, r)
	return nil
}

// gitText answers a git client in plain text; retry (seconds) sets
// Retry-After.
func gitText(c echo.Context, status int, msg string, retry int) error {
	if retry > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(retry))
	}
	return c.String(status, msg+"\n")
}

// gitErr answers err (an *APIError: a rate limit) in plain text.
func gitErr(c echo.Context, err error) error {
	ae := toAPIError(err)
	return gitText(c, ae.Status, ae.Message, ae.RetryAfter)
}
