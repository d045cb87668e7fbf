package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/plugin"
)

// Limits on policy documents (they are distributed to every agent).
const (
	maxLayers        = policystate.MaxLayers
	maxModules       = 64
	defaultLayerRank = policystate.DefaultLayerRank
)

// Layer is a stored policy layer (policystate.Layer). Layers apply in
// (Rank, Name) order, lowest rank first = highest authority (org 10,
// department 20, project 30...).
type Layer = policystate.Layer

// policyHead is the current effective policy's identity.
type policyHead = policystate.Head

// EffectivePolicy is GET /v1/policy.
type EffectivePolicy struct {
	// Version is derived from the content of every layer (sha256), so every
	// replica computes the same version for the same policy.
	Version string `json:"version"`
	// Revision counts the changes made through this store.
	Revision uint64  `json:"revision"`
	Layers   []Layer `json:"layers"`
	// BundleKeyID names the key the policy bundle is signed with.
	BundleKeyID string `json:"bundleKeyId"`
	// Warnings are the engine's findings on the layers: unknown keys,
	// invalid values that fail closed.
	Warnings []string `json:"warnings"`
}

// HistoryEntry records one change of one layer, with the layer as written
// (nil for a deletion), so any past state can be reconstructed.
type HistoryEntry = policystate.HistoryEntry

func toPolicyLayers(ls []Layer) []PolicyLayer {
	out := make([]PolicyLayer, len(ls))
	for i, l := range ls {
		out[i] = PolicyLayer{Name: l.Name, Settings: l.Settings, Modules: l.Modules}
	}
	return out
}

// precondition is what a PUT/DELETE requires of the current layer.
type precondition struct {
	mustNotExist bool
	anyVersion   bool   // If-Match: *
	version      uint64 // expected version when neither of the above
}

// parsePrecondition reads If-Match / If-None-Match. Creating a layer uses
// If-None-Match: * (or If-Match: "0"); changing one uses If-Match: "<version>"
// with the version from GET (its ETag).
func parsePrecondition(h http.Header) (precondition, error) {
	inm := strings.TrimSpace(h.Get("If-None-Match"))
	im := strings.TrimSpace(h.Get("If-Match"))
	if inm != "" && im != "" {
		return precondition{}, apiErr(http.StatusBadRequest, CodeBadRequest, "If-Match",
			"send either If-Match (to change) or If-None-Match: * (to create), not both")
	}
	if inm != "" {
		if inm != "*" {
			return precondition{}, apiErr(http.StatusBadRequest, CodeBadRequest, "If-None-Match",
				"If-None-Match on a layer write must be *, meaning create only if absent")
		}
		return precondition{mustNotExist: true}, nil
	}
	if im == "" {
		return precondition{}, apiErr(http.StatusPreconditionRequired, CodePreconditionNeeded, "If-Match",
			"send If-Match: \"<version>\" with the version you read (GET returns it as ETag), or If-None-Match: * to create the layer")
	}
	if im == "*" {
		return precondition{anyVersion: true}, nil
	}
	v := strings.TrimPrefix(im, "W/")
	v = strings.Trim(v, `"`)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return precondition{}, apiErr(http.StatusBadRequest, CodeBadRequest, "If-Match",
			"If-Match %q is not a layer version; send the ETag from GET /v1/policy/layers/{layer}, e.g. \"3\"", im)
	}
	if n == 0 {
		return precondition{mustNotExist: true}, nil
	}
	return precondition{version: n}, nil
}

// check compares the precondition with the current version (0 = absent).
func (p precondition) check(current uint64) error {
	switch {
	case p.mustNotExist && current == 0, p.anyVersion && current != 0, !p.mustNotExist && !p.anyVersion && p.version == current:
		return nil
	case p.anyVersion:
		return apiErr(http.StatusNotFound, CodeNotFound, "If-Match", "the layer does not exist; create it with If-None-Match: *")
	}
	// RFC 9110 13.1.1: a false If-Match (or If-None-Match: *) on a PUT or
	// DELETE is 412 Precondition Failed.
	return &APIError{Status: http.StatusPreconditionFailed, Code: CodeVersionConflict, Field: "If-Match",
		Current: strconv.FormatUint(current, 10),
		Message: fmt.Sprintf("the layer is at version %d, not the one you sent; GET it again, reapply your change and send If-Match: \"%d\"", current, current)}
}

func layerETag(v uint64) string { return `"` + strconv.FormatUint(v, 10) + `"` }

// getPolicy is the policy as the caller sees it: an admin every layer,
// under the policy version; anyone else the layers that apply to their
// token (the organization's and those targeted to them), under the
// version of their bundle.
func (s *Server) getPolicy(c echo.Context) error {
	h, ls, err := s.pol.Current()
	if err != nil {
		return err
	}
	p := s.caller(c)
	version := h.Version
	if p.Role != RoleAdmin {
		mine := policystate.Applying(ls, p.Who)
		version, ls = policystate.AppliedVersion(h.Version, ls, mine), mine
	}
	ep := EffectivePolicy{Version: version, Revision: h.Revision, Layers: ls, BundleKeyID: s.pol.KeyID(), Warnings: []string{}}
	if s.deps.Policy != nil {
		ctx := c.Request().Context()
		d, _, applied, err := s.pol.DeciderFor(ctx, p.Who)
		if err != nil {
			return policyError(err)
		}
		if applied != ep.Version {
			// An admin with targeted layers that do not all apply to the
			// admin's own token: the warnings of the whole set.
			w, err := s.checkCompiles(ctx, ls)
			if err != nil {
				return err
			}
			ep.Warnings = append(ep.Warnings, w...)
		} else if w, ok := d.(interface{ Warnings() []string }); ok {
			ep.Warnings = append(ep.Warnings, w.Warnings()...)
		}
	}
	c.Response().Header().Set("ETag", bundleETag(ep.Version))
	return c.JSON(http.StatusOK, ep)
}

// layerNameRE is the policy engine's rule for layer names: admin modules of
// layer x live in package wharf.admin.x.
var layerNameRE = lazyre.New(`^[a-z][a-z0-9_]{0,62}$`)

func layerParam(c echo.Context) (string, error) {
	name := c.Param("layer")
	if !layerNameRE.MatchString(name) {
		return "", badField("layer", "layer name %q must be lower-case letters, digits and _, starting with a letter (its Rego package is wharf.admin.<layer>)", name)
	}
	return name, nil
}

func (s *Server) getLayer(c echo.Context) error {
	name, err := layerParam(c)
	if err != nil {
		return err
	}
	l, err := s.pol.Layer(name)
	if err != nil {
		return err
	}
	if p := s.caller(c); l != nil && p.Role != RoleAdmin && !l.Target.Matches(p.Who) {
		l = nil // another group's layer: as if there were none
	}
	if l == nil {
		return apiErr(http.StatusNotFound, CodeNotFound, "layer", "no policy layer %q; create it with PUT and If-None-Match: *", name)
	}
	c.Response().Header().Set("ETag", layerETag(l.Version))
	return c.JSON(http.StatusOK, l)
}

type layerBody struct {
	Rank *int `json:"rank"`
	// Target is who the layer applies to; absent: unchanged (the
	// organization for a new layer); {}: the organization.
	Target   *tokens.Target    `json:"target,omitempty"`
	Settings json.RawMessage   `json:"settings"`
	Modules  map[string]string `json:"modules"`
}

// LayerWriteResult is the response of PUT/DELETE on a layer.
type LayerWriteResult struct {
	Layer         *Layer   `json:"layer,omitempty"`
	PolicyVersion string   `json:"policyVersion"`
	Revision      uint64   `json:"revision"`
	Warnings      []string `json:"warnings"`
}

func validateLayerBody(b *layerBody) error {
	if b.Rank != nil && (*b.Rank < 0 || *b.Rank > 1000000) {
		return badField("rank", "rank %d must be between 0 and 1000000 (lower = higher authority)", *b.Rank)
	}
	if b.Target != nil {
		if err := b.Target.Validate("target"); err != nil {
			return targetErr(err)
		}
	}
	if len(b.Settings) == 0 || string(b.Settings) == "null" {
		b.Settings = json.RawMessage(`{}`)
	}
	if t := bytes.TrimSpace(b.Settings); len(t) == 0 || t[0] != '{' {
		return badField("settings", "settings must be a JSON object of policy keys, e.g. {\"blockedMarketplaces\": []}")
	}
	canon, err := policystate.CanonicalJSON(b.Settings)
	if err != nil {
		return badField("settings", "settings: %v", err)
	}
	b.Settings = canon
	if len(b.Modules) > maxModules {
		return badField("modules", "%d modules; the limit is %d per layer", len(b.Modules), maxModules)
	}
	if b.Modules == nil {
		b.Modules = map[string]string{}
	}
	for name, src := range b.Modules {
		field := "modules." + name
		base, ok := strings.CutSuffix(name, ".rego")
		if !ok || plugin.ValidateName(base) != nil {
			return badField(field, "module name %q must be <name>.rego with letters, digits, '.', '_' or '-'", name)
		}
		if _, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1}); err != nil {
			return badField(field, "module %s does not parse as Rego v1: %v", name, err)
		}
	}
	return nil
}

func (s *Server) putLayer(c echo.Context) error {
	name, err := layerParam(c)
	if err != nil {
		return err
	}
	pre, err := parsePrecondition(c.Request().Header)
	if err != nil {
		return err
	}
	var body layerBody
	if err := decodeBody(c, &body); err != nil {
		return err
	}
	if err := validateLayerBody(&body); err != nil {
		return err
	}
	res, err := s.pol.Put(c.Request().Context(), body.change(name), pre.check, s.actor(c))
	if err != nil {
		return policyError(err)
	}
	status := http.StatusOK
	if res.Layer.Version == 1 {
		status = http.StatusCreated
	}
	c.Response().Header().Set("ETag", layerETag(res.Layer.Version))
	return c.JSON(status, layerWriteResult(res))
}

// change is the write of body to layer name.
func (b layerBody) change(name string) policystate.Change {
	return policystate.Change{Name: name, Rank: b.Rank, Target: b.Target, Settings: b.Settings, Modules: b.Modules}
}

func layerWriteResult(r policystate.Result) LayerWriteResult {
	return LayerWriteResult{Layer: r.Layer, PolicyVersion: r.Head.Version, Revision: r.Head.Revision, Warnings: r.Warnings}
}

// actor is the caller of c as the author of a change.
func (s *Server) actor(c echo.Context) policystate.Actor {
	p := s.caller(c)
	return policystate.Actor{ID: p.TokenID, Role: p.Role}
}

func (s *Server) deleteLayer(c echo.Context) error {
	name, err := layerParam(c)
	if err != nil {
		return err
	}
	pre, err := parsePrecondition(c.Request().Header)
	if err != nil {
		return err
	}
	if pre.mustNotExist {
		return apiErr(http.StatusBadRequest, CodeBadRequest, "If-Match", "deleting a layer needs If-Match: \"<version>\" (or *), not a create precondition")
	}
	res, err := s.pol.Delete(c.Request().Context(), name, pre.check, s.actor(c))
	if err != nil {
		return policyError(err)
	}
	return c.JSON(http.StatusOK, layerWriteResult(res))
}

// targetErr is a target or a token's groups or labels that are not
// acceptable, as a 400 naming the field.
func targetErr(err error) error {
	var te *tokens.TargetError
	if errors.As(err, &te) {
		return badField(te.Field, "%s", te.Msg)
	}
	return err
}

// policyError maps the policy state's errors to the API's.
func policyError(err error) error {
	var ce *policystate.CompileError
	var nf *policystate.NotFoundError
	var tm *policystate.TooManyLayersError
	var ar *policystate.AlreadyRevokedError
	var tr *policystate.TooManyRevocationsError
	var rnf *revocations.NotFoundError
	switch {
	case errors.As(err, &ar):
		return &APIError{Status: http.StatusConflict, Code: CodeConflict, Field: "revocation", Message: ar.Error()}
	case errors.As(err, &tr):
		return badField("revocation", "%s", tr.Error())
	case errors.As(err, &rnf):
		return apiErr(http.StatusNotFound, CodeNotFound, "id", "%s", rnf.Error())
	case errors.As(err, &ce):
		return &APIError{Status: http.StatusUnprocessableEntity, Code: "policy-invalid", Field: "modules",
			Message: ce.Error(), cause: ce.Err}
	case errors.As(err, &nf):
		return apiErr(http.StatusNotFound, CodeNotFound, "layer", "%s", nf.Error())
	case errors.As(err, &tm):
		return badField("layer", "%s", tm.Error())
	case errors.Is(err, policystate.ErrNoCompiler):
		return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: err.Error()}
	}
	return err
}

// checkCompiles refuses a layer set the engine cannot compile, before
// anything is written.
func (s *Server) checkCompiles(ctx context.Context, layers []Layer) ([]string, error) {
	w, err := s.pol.Check(ctx, layers)
	return w, policyError(err)
}

// HistoryPage is one page of GET /v1/policy/history.
type HistoryPage struct {
	Entries []HistoryEntry `json:"entries"`
	Next    string         `json:"next,omitempty"`
}

func (s *Server) policyHistory(c echo.Context) error {
	limit, err := parseLimit(c)
	if err != nil {
		return err
	}
	after, err := parseCursor(c)
	if err != nil {
		return err
	}
	entries, next, err := s.pol.History(c.QueryParam("layer"), after, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, HistoryPage{Entries: entries, Next: next})
}

// decider returns the engine for the current policy, compiled once per
// version (policystate.State.Decider).
func (s *Server) decider(ctx context.Context) (Decider, string, error) {
	d, head, err := s.deciderHead(ctx)
	return d, head.Version, err
}

// deciderFor returns the engine of the policy that applies to p's token
// (the organization's layers and those targeted to its groups or labels:
// the policy of p's bundle) with that policy's version. The decisions a
// caller is shown about plugins are its own, the ones its clients enforce.
func (s *Server) deciderFor(ctx context.Context, p principal) (Decider, string, error) {
	d, _, applied, err := s.pol.DeciderFor(ctx, p.Who)
	return d, applied, policyError(err)
}

// deciderHead is decider with the whole policy head it compiled (its
// revision orders policies in time; the version only tells them apart).
func (s *Server) deciderHead(ctx context.Context) (Decider, policyHead, error) {
	d, head, err := s.pol.Decider(ctx)
	return d, head, policyError(err)
}

// decide asks the policy about one plugin and records the outcome; a denial
// is appended to the audit log.
func (s *Server) decide(ctx context.Context, d Decider, version string, in DecisionInput, p principal) (Decision, error) {
	dec, err := d.Decide(ctx, in)
	if err != nil {
		s.metrics.decisions.WithLabelValues("error").Inc()
		return Decision{}, fmt.Errorf("policy decision for %s: %w", in.Plugin, err)
	}
	// The server's version (the bundle's identity) names the policy in every
	// response, whatever the engine calls it internally.
	dec.PolicyVersion = version
	if dec.Reasons == nil {
		dec.Reasons = []Reason{}
	}
	if dec.Warnings == nil {
		dec.Warnings = []string{}
	}
	outcome := "allowed"
	switch {
	case dec.Forced == "on":
		outcome = "forced-on"
	case dec.Forced == "off":
		outcome = "forced-off"
	case !dec.Allowed:
		outcome = "denied"
	}
	s.metrics.decisions.WithLabelValues(outcome).Inc()
	if !dec.Allowed {
		reasons := make([]string, 0, len(dec.Reasons))
		for _, r := range dec.Reasons {
			reasons = append(reasons, r.Layer+"/"+r.Rule+": "+r.Message)
		}
		err := s.deps.Store.Update(func(tx store.Tx) error {
			return audit.Append(tx, AuditEntry{Time: s.now().UTC(), Action: ActionDecisionDeny, Actor: p.TokenID, Role: p.Role,
				Object: in.Plugin.String(), Detail: map[string]any{"policyVersion": dec.PolicyVersion, "reasons": reasons}})
		})
		if err != nil {
			return Decision{}, fmt.Errorf("audit denial of %s: %w", in.Plugin, err)
		}
	}
	return dec, nil
}
