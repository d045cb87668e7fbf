package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/plugin"
)

func (s *Server) catalog() (Catalog, error) {
	if s.deps.Catalog == nil {
		return nil, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "this server has no marketplace catalog configured"}
	}
	return s.deps.Catalog, nil
}

func (s *Server) listMarketplaces(c echo.Context) error {
	cat, err := s.catalog()
	if err != nil {
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
	ms, err := cat.Marketplaces(c.Request().Context())
	if err != nil {
		return err
	}
	ms, next := pageByKey(ms, func(m Marketplace) string { return m.Name }, after, limit)
	if ms == nil {
		ms = []Marketplace{}
	}
	nextLink(c, next)
	return c.JSON(http.StatusOK, ms)
}

type addMarketplaceRequest struct {
	Name   string          `json:"name"`
	Source json.RawMessage `json:"source"`
}

func (s *Server) addMarketplace(c echo.Context) error {
	cat, err := s.catalog()
	if err != nil {
		return err
	}
	var req addMarketplaceRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if err := plugin.ValidateName(req.Name); err != nil {
		return badField("name", "marketplace name: %v", err)
	}
	if t := bytes.TrimSpace(req.Source); len(t) == 0 || t[0] != '{' {
		return badField("source", "source must be an object such as {\"source\": \"github\", \"repo\": \"owner/repo\"}")
	}
	if err := s.gateMarketplace(c, req.Name, req.Source, false); err != nil {
		return err
	}
	ctx, audit := s.auditWithChange(c, ActionMarketplaceAdd, req.Name, map[string]any{"source": json.RawMessage(req.Source)})
	m, err := cat.AddMarketplace(ctx, req.Name, req.Source)
	var fe *catalog.FieldError
	if errors.As(err, &fe) {
		return badField(fe.Field, "%v", fe)
	}
	if err != nil {
		return err
	}
	if err := audit(); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, m)
}

func mustList(c echo.Context, cat Catalog) []Marketplace {
	ms, _ := cat.Marketplaces(c.Request().Context())
	return ms
}

// gateMarketplace asks the policy whether the marketplace may be added or
// refreshed; a denial is a 403 naming the layer and rule, and is audited.
func (s *Server) gateMarketplace(c echo.Context, name string, source json.RawMessage, update bool) error {
	if s.deps.Policy == nil {
		return nil
	}
	ctx := c.Request().Context()
	d, version, err := s.decider(ctx)
	if err != nil {
		return err
	}
	md, ok := d.(MarketplaceDecider)
	if !ok {
		return nil
	}
	dec, err := md.DecideMarketplace(ctx, name, source, update)
	if err != nil {
		return fmt.Errorf("policy decision for marketplace %s: %w", name, err)
	}
	if dec.Allowed {
		s.metrics.decisions.WithLabelValues("allowed").Inc()
		return nil
	}
	s.metrics.decisions.WithLabelValues("denied").Inc()
	var msgs, reasons []string
	for _, r := range dec.Reasons {
		msgs = append(msgs, r.Message+" (policy layer "+r.Layer+", rule "+r.Rule+")")
		reasons = append(reasons, r.Layer+"/"+r.Rule+": "+r.Message)
	}
	p := s.caller(c)
	if err := s.deps.Store.Update(func(tx store.Tx) error {
		return audit.Append(tx, AuditEntry{Time: s.now().UTC(), Action: ActionDecisionDeny, Actor: p.TokenID, Role: p.Role,
			Object: "marketplace " + name, Detail: map[string]any{"policyVersion": version, "reasons": reasons}})
	}); err != nil {
		return err
	}
	return apiErr(http.StatusForbidden, plugin.TypePolicyDenied, "source",
		"policy denies marketplace %s: %s; change the policy layer named above", name, strings.Join(msgs, "; "))
}

// auditWithChange returns the request's context with a marketplace
// transaction hook that appends the audit entry in the transaction that
// records the change, so that the change and its entry commit together.
// Call done after the change: it appends the entry on its own only when
// the Catalog recorded the change without that hook (a Catalog not backed
// by a marketplace.Manager).
func (s *Server) auditWithChange(c echo.Context, action, object string, detail map[string]any) (ctx context.Context, done func() error) {
	p := s.caller(c)
	entry := AuditEntry{Time: s.now().UTC(), Action: action, Actor: p.TokenID, Role: p.Role, Object: object, Detail: detail}
	var hooked atomic.Bool
	ctx = marketplace.WithTxHook(c.Request().Context(), func(tx store.Tx, _ marketplace.Change) error {
		hooked.Store(true)
		return audit.Append(tx, entry)
	})
	return ctx, func() error {
		if hooked.Load() {
			return nil
		}
		return s.deps.Store.Update(func(tx store.Tx) error { return audit.Append(tx, entry) })
	}
}

func marketplaceParam(c echo.Context, param string) (string, error) {
	name := c.Param(param)
	if err := plugin.ValidateName(name); err != nil {
		return "", badField(param, "marketplace name: %v", err)
	}
	return name, nil
}

func (s *Server) updateMarketplace(c echo.Context) error {
	cat, err := s.catalog()
	if err != nil {
		return err
	}
	name, err := marketplaceParam(c, "name")
	if err != nil {
		return err
	}
	for _, m := range mustList(c, cat) {
		if m.Name == name {
			if err := s.gateMarketplace(c, name, m.Source, true); err != nil {
				return err
			}
		}
	}
	ctx, audit := s.auditWithChange(c, ActionMarketplaceUpdate, name, nil)
	m, err := cat.UpdateMarketplace(ctx, name)
	if err != nil {
		return err
	}
	if err := audit(); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, m)
}

func (s *Server) removeMarketplace(c echo.Context) error {
	cat, err := s.catalog()
	if err != nil {
		return err
	}
	name, err := marketplaceParam(c, "name")
	if err != nil {
		return err
	}
	ctx, audit := s.auditWithChange(c, ActionMarketplaceRemove, name, nil)
	if err := cat.RemoveMarketplace(ctx, name); err != nil {
		return err
	}
	if err := audit(); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) searchPlugins(c echo.Context) error {
	cat, err := s.catalog()
	if err != nil {
		return err
	}
	q := SearchQuery{Text: c.QueryParam("q"), Marketplace: c.QueryParam("marketplace"), Category: c.QueryParam("category")}
	if len(q.Text) > 256 {
		return badField("q", "q is %d bytes; the limit is 256", len(q.Text))
	}
	if q.Marketplace != "" {
		if err := plugin.ValidateName(q.Marketplace); err != nil {
			return badField("marketplace", "marketplace: %v", err)
		}
	}
	limit, err := parseLimit(c)
	if err != nil {
		return err
	}
	offset, err := offsetCursor(c)
	if err != nil {
		return err
	}
	// Hits are ranked: the cursor is a position in the ranking.
	q.Limit = offset + limit + 1
	hits, err := cat.Search(c.Request().Context(), q)
	if err != nil {
		return err
	}
	hits = hits[min(offset, len(hits)):]
	if len(hits) > limit {
		hits = hits[:limit]
		nextLink(c, strconv.Itoa(offset+limit))
	}
	if hits == nil {
		hits = []PluginSummary{}
	}
	return c.JSON(http.StatusOK, hits)
}

// PluginView is GET /v1/plugins/{marketplace}/{name}: the entry and what the
// policy says about it for the caller.
type PluginView struct {
	PluginDetail
	Decision *Decision `json:"decision"`
}

// pluginAt returns the catalog and its entry for the path's {marketplace}
// and {name}, after checking both.
func (s *Server) pluginAt(c echo.Context) (Catalog, plugin.ID, PluginDetail, error) {
	cat, err := s.catalog()
	if err != nil {
		return nil, plugin.ID{}, PluginDetail{}, err
	}
	mkt, err := marketplaceParam(c, "marketplace")
	if err != nil {
		return nil, plugin.ID{}, PluginDetail{}, err
	}
	name := c.Param("name")
	if err := plugin.ValidateName(name); err != nil {
		return nil, plugin.ID{}, PluginDetail{}, badField("name", "plugin name: %v", err)
	}
	id := plugin.ID{Name: name, Source: mkt}
	d, err := cat.Plugin(c.Request().Context(), id)
	return cat, id, d, err
}

func (s *Server) getPlugin(c echo.Context) error {
	_, id, d, err := s.pluginAt(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if d.Components == nil {
		d.Components = []Component{}
	}
	if d.Dependencies == nil {
		d.Dependencies = []plugin.Dependency{}
	}
	if d.Signatures == nil {
		d.Signatures = []Signature{}
	}
	view := PluginView{PluginDetail: d}
	eng, version, err := s.deciderFor(ctx, s.caller(c))
	if err != nil {
		return err
	}
	dec, err := s.decide(ctx, eng, version, decisionInput(id, d, plugin.ID{}), s.caller(c))
	if err != nil {
		return err
	}
	view.Decision = &dec
	return c.JSON(http.StatusOK, view)
}

func decisionInput(id plugin.ID, d PluginDetail, requiredBy plugin.ID) DecisionInput {
	deps := make([]plugin.ID, len(d.Dependencies))
	for i, dep := range d.Dependencies {
		deps[i] = dep.Resolve(id.Source)
	}
	return DecisionInput{Plugin: id, MarketplaceSource: d.MarketplaceSource, Dependencies: deps, Components: d.Components, RequiredBy: requiredBy}
}

type resolveRequest struct {
	Plugins []plugin.ID `json:"plugins"`
}

// ResolvedPlugin is one member of a closure with its decision.
type ResolvedPlugin struct {
	ID           string              `json:"id"`
	Version      string              `json:"version,omitempty"`
	Role         string              `json:"role"` // root or dependency
	RequiredBy   string              `json:"requiredBy,omitempty"`
	Dependencies []plugin.Dependency `json:"dependencies"`
	Digest       string              `json:"digest,omitempty"`
	Decision     Decision            `json:"decision"`
}

// ResolveResult is POST /v1/resolve: the closure of every requested plugin,
// dependencies first, each plugin once.
type ResolveResult struct {
	Plugins       []ResolvedPlugin `json:"plugins"`
	Allowed       bool             `json:"allowed"` // every member allowed
	PolicyVersion string           `json:"policyVersion"`
	Warnings      []string         `json:"warnings"`
}

const maxResolveRoots = 256

// resolverCatalog adapts the Catalog to the resolver's read-only view. The
// resolver cannot return lookup errors, so the first error that is not
// "not found" is kept and returned instead of the resolver's verdict.
type resolverCatalog struct {
	ctx     context.Context
	cat     Catalog
	mkts    map[string]Marketplace
	details map[plugin.ID]PluginDetail
	err     error
}

func (rc *resolverCatalog) Lookup(id plugin.ID) (resolver.Node, bool) {
	if d, ok := rc.details[id]; ok {
		return resolver.Node{Dependencies: d.Dependencies}, true
	}
	if rc.err != nil {
		return resolver.Node{}, false
	}
	d, err := rc.cat.Plugin(rc.ctx, id)
	if err != nil {
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Type != plugin.TypeNotFound {
			rc.err = err
		}
		return resolver.Node{}, false
	}
	rc.details[id] = d
	return resolver.Node{Dependencies: d.Dependencies}, true
}

func (rc *resolverCatalog) KnownMarketplace(name string) bool {
	_, ok := rc.mkts[name]
	return ok
}

func (rc *resolverCatalog) AllowsCross(from, to string) bool {
	return resolver.CrossAllowed(rc.mkts[from].AllowCrossMarketplaceDependenciesOn, from, to)
}

func (s *Server) resolve(c echo.Context) error {
	cat, err := s.catalog()
	if err != nil {
		return err
	}
	var req resolveRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if len(req.Plugins) == 0 {
		return badField("plugins", "plugins is empty; list plugin ids such as [\"deploy@corp\"]")
	}
	if len(req.Plugins) > maxResolveRoots {
		return badField("plugins", "%d plugins; the limit is %d per request", len(req.Plugins), maxResolveRoots)
	}
	ctx := c.Request().Context()
	ms, err := cat.Marketplaces(ctx)
	if err != nil {
		return err
	}
	rc := &resolverCatalog{ctx: ctx, cat: cat, mkts: map[string]Marketplace{}, details: map[plugin.ID]PluginDetail{}}
	for _, m := range ms {
		rc.mkts[m.Name] = m
	}
	res := ResolveResult{Plugins: []ResolvedPlugin{}, Allowed: true, Warnings: []string{}}
	r := resolver.New(rc, nil, nil)
	seen := map[plugin.ID]int{}
	var order []resolver.Step
	for _, root := range req.Plugins {
		plan, err := r.Closure(root)
		if rc.err != nil {
			return rc.err
		}
		if err != nil {
			return err
		}
		for _, w := range plan.Warnings {
			if !slices.Contains(res.Warnings, w) {
				res.Warnings = append(res.Warnings, w)
			}
		}
		for _, st := range plan.Steps {
			if i, ok := seen[st.ID]; ok {
				if st.Role == resolver.RoleRoot {
					order[i].Role = resolver.RoleRoot
				}
				continue
			}
			seen[st.ID] = len(order)
			order = append(order, st)
		}
	}
	eng, version, err := s.deciderFor(ctx, s.caller(c))
	if err != nil {
		return err
	}
	res.PolicyVersion = version
	p := s.caller(c)
	for _, st := range order {
		d := rc.details[st.ID]
		var reqBy plugin.ID
		if st.Role != resolver.RoleRoot {
			reqBy = st.RequiredBy
		}
		dec, err := s.decide(ctx, eng, version, decisionInput(st.ID, d, reqBy), p)
		if err != nil {
			return err
		}
		if !dec.Allowed {
			res.Allowed = false
		}
		deps := d.Dependencies
		if deps == nil {
			deps = []plugin.Dependency{}
		}
		rp := ResolvedPlugin{ID: st.ID.String(), Version: d.Version, Role: "dependency",
			Dependencies: deps, Digest: d.Digest, Decision: dec}
		if st.Role == resolver.RoleRoot {
			rp.Role = "root"
		}
		if !st.RequiredBy.IsZero() && st.Role != resolver.RoleRoot {
			rp.RequiredBy = st.RequiredBy.String()
		}
		res.Plugins = append(res.Plugins, rp)
	}
	return c.JSON(http.StatusOK, res)
}

// MaxVerifySignatures bounds the signatures of one POST /v1/verify: each
// costs a public-key verification, so the body limit alone would let one
// request take seconds of CPU.
const MaxVerifySignatures = 32

type verifyRequest struct {
	Plugin     *plugin.ID  `json:"plugin,omitempty"`
	Digest     string      `json:"digest"`
	Signatures []Signature `json:"signatures,omitempty"`
}

// VerifyResult is POST /v1/verify, shaped like `wharf verify --json`.
type VerifyResult struct {
	Target     string             `json:"target"`
	Digest     string             `json:"digest"`
	Expected   string             `json:"expected,omitempty"`
	OK         bool               `json:"ok"`
	Reasons    []string           `json:"reasons"`
	Signatures []SignatureVerdict `json:"signatures"`
	// Warnings name what passed but is weaker: valid signatures of the old
	// form, over the bare digest.
	Warnings []string `json:"warnings,omitempty"`
}

// verify gives a verdict on a digest: it must equal the digest the
// marketplace publishes for the plugin (when a plugin is named and its entry
// has one), and when signatures are given (or published) at least one must
// be valid and from a trusted key, and none may be invalid.
func (s *Server) verify(c echo.Context) error {
	var req verifyRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if n := len(req.Signatures); n > MaxVerifySignatures {
		return apiErr(http.StatusRequestEntityTooLarge, CodeTooLarge, "signatures",
			"%d signatures in one request; the limit is %d (a plugin needs one per trusted key): send fewer, or split them over several requests", n, MaxVerifySignatures)
	}
	if !trust.ValidDigest(req.Digest) {
		return badField("digest", "digest %q is not a w1: content digest (w1: followed by base64 of a sha256); compute it with: wharf verify --json <dir>", req.Digest)
	}
	for i, sg := range req.Signatures {
		if sg.KeyID == "" || sg.Sig == "" {
			return badField("signatures["+strconv.Itoa(i)+"]", "each signature needs keyid and sig")
		}
	}
	ctx := c.Request().Context()
	res := VerifyResult{Target: req.Digest, Digest: req.Digest, Reasons: []string{}, Signatures: []SignatureVerdict{}}
	sigs := req.Signatures
	subj := SignedSubject{Digest: req.Digest}
	if req.Plugin != nil {
		cat, err := s.catalog()
		if err != nil {
			return err
		}
		d, err := cat.Plugin(ctx, *req.Plugin)
		if err != nil {
			return err
		}
		res.Target = req.Plugin.String()
		res.Expected = d.Digest
		subj.Plugin, subj.Version = *req.Plugin, d.Version
		if len(sigs) == 0 {
			sigs = d.Signatures
		}
	} else if len(sigs) == 0 {
		return badField("plugin", "nothing to verify the digest against: name the plugin or send signatures")
	}
	res.OK = true
	if res.Expected != "" && res.Expected != req.Digest {
		res.OK = false
		res.Reasons = append(res.Reasons, "digest does not match the one the marketplace publishes ("+res.Expected+")")
	}
	if res.Expected == "" && req.Plugin != nil && len(sigs) == 0 {
		res.OK = false
		res.Reasons = append(res.Reasons, "the marketplace publishes neither a digest nor signatures for "+res.Target)
	}
	if len(sigs) > 0 {
		if s.deps.Verifier == nil {
			return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "this server has no signature verifier configured"}
		}
		verdicts, err := s.deps.Verifier.VerifySignatures(ctx, subj, sigs)
		if err != nil {
			return err
		}
		res.Signatures = verdicts
		trusted := false
		for _, v := range verdicts {
			if !v.Valid {
				res.OK = false
				res.Reasons = append(res.Reasons, "signature by "+v.KeyID+" does not verify")
			}
			if v.Valid && v.Trusted {
				trusted = true
			}
			if v.Valid && v.Legacy {
				res.Warnings = append(res.Warnings, trust.LegacyWarning(v.KeyID))
			}
		}
		if !trusted {
			res.OK = false
			res.Reasons = append(res.Reasons, "no valid signature from a trusted key")
		}
	}
	return c.JSON(http.StatusOK, res)
}
