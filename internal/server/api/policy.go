package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/plugin"
)

// Limits on policy documents (they are distributed to every agent).
const (
	maxLayers        = 64
	maxModules       = 64
	defaultLayerRank = 100
)

// Layer is a stored policy layer. Layers apply in (Rank, Name) order, lowest
// rank first = highest authority (org 10, department 20, project 30...).
type Layer struct {
	Name      string            `json:"name"`
	Rank      int               `json:"rank"`
	Version   uint64            `json:"version"`
	Settings  json.RawMessage   `json:"settings"`
	Modules   map[string]string `json:"modules"`
	UpdatedAt time.Time         `json:"updatedAt"`
	UpdatedBy string            `json:"updatedBy"`
}

// policyHead is the current effective policy's identity.
type policyHead struct {
	Revision uint64 `json:"revision"`
	Version  string `json:"version"`
}

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
type HistoryEntry struct {
	Seq           uint64    `json:"seq"`
	Time          time.Time `json:"time"`
	Action        string    `json:"action"` // create, update, delete
	Layer         string    `json:"layer"`
	LayerVersion  uint64    `json:"layerVersion"`
	PolicyVersion string    `json:"policyVersion"`
	Revision      uint64    `json:"revision"`
	Actor         string    `json:"actor"`
	Document      *Layer    `json:"document,omitempty"`
}

func sortLayers(ls []Layer) {
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].Rank != ls[j].Rank {
			return ls[i].Rank < ls[j].Rank
		}
		return ls[i].Name < ls[j].Name
	})
}

// readLayers returns every layer in authority order.
func readLayers(r store.Reader) ([]Layer, error) {
	kvs, err := r.List(bucketLayers, "")
	if err != nil {
		return nil, err
	}
	out := make([]Layer, 0, len(kvs))
	for _, kv := range kvs {
		var l Layer
		if err := json.Unmarshal(kv.Value, &l); err != nil {
			return nil, fmt.Errorf("policy layer %s: corrupt record: %w", kv.Key, err)
		}
		out = append(out, l)
	}
	sortLayers(out)
	return out, nil
}

func readHead(r store.Reader) (policyHead, error) {
	raw, err := r.Get(bucketSettings, keyPolicyHead)
	if errors.Is(err, store.ErrNotFound) {
		return policyHead{Version: policyVersion(nil)}, nil
	}
	if err != nil {
		return policyHead{}, err
	}
	var h policyHead
	if err := json.Unmarshal(raw, &h); err != nil {
		return policyHead{}, fmt.Errorf("policy head: corrupt record: %w", err)
	}
	return h, nil
}

// currentHead returns the policy head: from memory while the store's watch
// proves itself current (it reports every change), else for up to
// StateCacheTTL (see fresh).
func (s *Server) currentHead() (policyHead, error) {
	return s.currentHeadAt(time.Now())
}

// currentHeadAt is currentHead with the caller's clock reading.
func (s *Server) currentHeadAt(now time.Time) (policyHead, error) {
	if e := s.headSnap.Load(); e != nil && s.fresh(e.exp, now) {
		return e.head, nil
	}
	return s.readHead(now)
}

// readHead reads the head from the store and caches it.
func (s *Server) readHead(now time.Time) (policyHead, error) {
	var h policyHead
	gen := s.rep.headGen.Load() // a head seen by the watch while reading wins (replica.go)
	if err := s.deps.Store.View(func(r store.Reader) (err error) { h, err = readHead(r); return }); err != nil {
		return policyHead{}, err
	}
	if s.deps.StateCacheTTL > 0 {
		s.headMu.Lock()
		if s.rep.headGen.Load() == gen {
			s.headVal, s.headExp = h, now.Add(s.deps.StateCacheTTL)
			s.publishHead()
		}
		s.headMu.Unlock()
	}
	return h, nil
}

// headEntry is the cached policy head as readers see it.
type headEntry struct {
	head policyHead
	exp  time.Time // zero: no head cached
}

// publishHead makes headVal and headExp what readers see; s.headMu is held.
func (s *Server) publishHead() {
	s.headSnap.Store(&headEntry{head: s.headVal, exp: s.headExp})
}

// setHead records a head this server just committed.
func (s *Server) setHead(h policyHead) {
	s.headMu.Lock()
	defer s.headMu.Unlock()
	defer s.publishHead()
	s.rep.headGen.Add(1)
	if h.Revision < s.headVal.Revision { // the watch may have delivered a later head: read the store
		s.headExp = time.Time{}
		return
	}
	s.headVal, s.headExp = h, time.Now().Add(s.deps.StateCacheTTL)
	if s.deps.StateCacheTTL <= 0 {
		s.headExp = time.Time{}
	}
}

// policyVersion hashes exactly the fields that the bundle and the engine
// read: name, rank, settings (canonical JSON) and modules. Timestamps and
// authors are left out so that the same policy has the same version
// everywhere.
func policyVersion(ls []Layer) string {
	h := sha256.New()
	for _, l := range ls {
		fmt.Fprintf(h, "layer %q rank %d\n", l.Name, l.Rank)
		fmt.Fprintf(h, "settings %d\n", len(l.Settings))
		h.Write(l.Settings)
		names := make([]string, 0, len(l.Modules))
		for n := range l.Modules {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(h, "\nmodule %q %d\n", n, len(l.Modules[n]))
			h.Write([]byte(l.Modules[n]))
		}
		h.Write([]byte("\n"))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// canonicalJSON re-encodes a JSON object with sorted keys and no spaces, so
// that formatting never changes a policy's version. Numbers keep their text.
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

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

func (s *Server) getPolicy(c echo.Context) error {
	var ep EffectivePolicy
	err := s.deps.Store.View(func(r store.Reader) error {
		h, err := readHead(r)
		if err != nil {
			return err
		}
		ls, err := readLayers(r)
		if err != nil {
			return err
		}
		ep = EffectivePolicy{Version: h.Version, Revision: h.Revision, Layers: ls, BundleKeyID: s.signer.keyID}
		return nil
	})
	if err != nil {
		return err
	}
	ep.Warnings = []string{}
	if s.deps.Policy != nil {
		d, version, err := s.decider(c.Request().Context())
		if err != nil {
			return err
		}
		if w, ok := d.(interface{ Warnings() []string }); ok && version == ep.Version {
			ep.Warnings = append(ep.Warnings, w.Warnings()...)
		}
	}
	c.Response().Header().Set("ETag", bundleETag(ep.Version))
	return c.JSON(http.StatusOK, ep)
}

// layerNameRE is the policy engine's rule for layer names: admin modules of
// layer x live in package wharf.admin.x.
var layerNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

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
	var l Layer
	err = s.deps.Store.View(func(r store.Reader) error {
		raw, err := r.Get(bucketLayers, name)
		if errors.Is(err, store.ErrNotFound) {
			return apiErr(http.StatusNotFound, CodeNotFound, "layer", "no policy layer %q; create it with PUT and If-None-Match: *", name)
		}
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &l)
	})
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", layerETag(l.Version))
	return c.JSON(http.StatusOK, l)
}

type layerBody struct {
	Rank     *int              `json:"rank"`
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
	if len(b.Settings) == 0 || string(b.Settings) == "null" {
		b.Settings = json.RawMessage(`{}`)
	}
	if t := bytes.TrimSpace(b.Settings); len(t) == 0 || t[0] != '{' {
		return badField("settings", "settings must be a JSON object of policy keys, e.g. {\"blockedMarketplaces\": []}")
	}
	canon, err := canonicalJSON(b.Settings)
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
	p := s.caller(c)
	ctx := c.Request().Context()
	var res LayerWriteResult
	var compiledVersion string
	var compiledWarnings []string
	err = s.deps.Store.Update(func(tx store.Tx) error {
		layers, err := readLayers(tx)
		if err != nil {
			return err
		}
		idx := -1
		var current uint64
		for i, l := range layers {
			if l.Name == name {
				idx, current = i, l.Version
			}
		}
		if err := pre.check(current); err != nil {
			return err
		}
		nl := Layer{Name: name, Rank: defaultLayerRank, Version: current + 1, Settings: body.Settings,
			Modules: body.Modules, UpdatedAt: s.now().UTC(), UpdatedBy: p.TokenID}
		action := "create"
		if idx >= 0 {
			nl.Rank = layers[idx].Rank
			layers[idx] = nl
			action = "update"
		} else {
			if len(layers) >= maxLayers {
				return badField("layer", "there are already %d layers, the limit", maxLayers)
			}
			layers = append(layers, nl)
		}
		if body.Rank != nil {
			nl.Rank = *body.Rank
			for i := range layers {
				if layers[i].Name == name {
					layers[i].Rank = nl.Rank
				}
			}
		}
		sortLayers(layers)
		// A shared store runs fn again when a concurrent commit (often an
		// unrelated audit entry) touched what it read: compile each
		// candidate layer set once, not once per attempt.
		v := policyVersion(layers)
		if v != compiledVersion {
			if compiledWarnings, err = s.checkCompiles(ctx, layers); err != nil {
				return err
			}
			compiledVersion = v
		}
		warnings := compiledWarnings
		head, err := s.commitLayers(tx, layers, name, &nl, action, p)
		if err != nil {
			return err
		}
		res = LayerWriteResult{Layer: &nl, PolicyVersion: head.Version, Revision: head.Revision, Warnings: warnings}
		return nil
	})
	if err != nil {
		return err
	}
	s.setHead(policyHead{Revision: res.Revision, Version: res.PolicyVersion})
	status := http.StatusOK
	if res.Layer.Version == 1 {
		status = http.StatusCreated
	}
	c.Response().Header().Set("ETag", layerETag(res.Layer.Version))
	return c.JSON(status, res)
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
	p := s.caller(c)
	var res LayerWriteResult
	err = s.deps.Store.Update(func(tx store.Tx) error {
		layers, err := readLayers(tx)
		if err != nil {
			return err
		}
		kept := layers[:0:0]
		var current uint64
		for _, l := range layers {
			if l.Name == name {
				current = l.Version
				continue
			}
			kept = append(kept, l)
		}
		if current == 0 {
			return apiErr(http.StatusNotFound, CodeNotFound, "layer", "no policy layer %q", name)
		}
		if err := pre.check(current); err != nil {
			return err
		}
		warnings, err := s.checkCompiles(c.Request().Context(), kept)
		if err != nil {
			return err
		}
		head, err := s.commitLayers(tx, kept, name, nil, "delete", p)
		if err != nil {
			return err
		}
		res = LayerWriteResult{PolicyVersion: head.Version, Revision: head.Revision, Warnings: warnings}
		return nil
	})
	if err != nil {
		return err
	}
	s.setHead(policyHead{Revision: res.Revision, Version: res.PolicyVersion})
	return c.JSON(http.StatusOK, res)
}

// checkCompiles refuses a layer set the engine cannot compile, before
// anything is written.
func (s *Server) checkCompiles(ctx context.Context, layers []Layer) ([]string, error) {
	warnings := []string{}
	if s.deps.Policy == nil {
		return warnings, nil
	}
	d, err := s.deps.Policy(ctx, toPolicyLayers(layers))
	if err != nil {
		return nil, &APIError{Status: http.StatusUnprocessableEntity, Code: "policy-invalid", Field: "modules",
			Message: "the policy does not compile with this layer: " + err.Error(), cause: err}
	}
	if w, ok := d.(interface{ Warnings() []string }); ok {
		warnings = append(warnings, w.Warnings()...)
	}
	return warnings, nil
}

// advanceHead writes the policy head that follows the stored one: the next
// revision, with the version of layers and revs. Every policy change (a
// layer, a revocation) goes through it, so revisions only move forward.
func advanceHead(tx store.Tx, layers []Layer, revs policy.Revocations) (policyHead, error) {
	old, err := readHead(tx)
	if err != nil {
		return policyHead{}, err
	}
	v, err := withToolPins(tx, fullPolicyVersion(layers, revs))
	if err != nil {
		return policyHead{}, err
	}
	head := policyHead{Revision: old.Revision + 1, Version: v}
	raw, err := json.Marshal(head)
	if err != nil {
		return head, err
	}
	return head, tx.Put(bucketSettings, keyPolicyHead, raw)
}

// appendHistory appends entry(seq) to bucket under its next sequence number.
func appendHistory(tx store.Tx, bucket string, entry func(seq uint64) any) error {
	n, err := tx.NextSequence(bucket)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(entry(n))
	if err != nil {
		return err
	}
	return tx.Put(bucket, audit.SeqKey(n), raw)
}

// commitLayers writes the changed layer, the new head, a history entry and
// an audit entry in tx: all of it or nothing.
func (s *Server) commitLayers(tx store.Tx, layers []Layer, name string, nl *Layer, action string, p principal) (policyHead, error) {
	revs, err := readRevocations(tx)
	if err != nil {
		return policyHead{}, err
	}
	if nl != nil {
		raw, err := json.Marshal(nl)
		if err != nil {
			return policyHead{}, err
		}
		if err := tx.Put(bucketLayers, name, raw); err != nil {
			return policyHead{}, err
		}
	} else if err := tx.Delete(bucketLayers, name); err != nil {
		return policyHead{}, err
	}
	// Rank changes of one layer reorder others; their records are unchanged.
	head, err := advanceHead(tx, layers, revs)
	if err != nil {
		return head, err
	}
	now := s.now().UTC()
	var lv uint64
	if nl != nil {
		lv = nl.Version
	}
	if err := appendHistory(tx, bucketHistory, func(n uint64) any {
		return HistoryEntry{Seq: n, Time: now, Action: action, Layer: name, LayerVersion: lv, PolicyVersion: head.Version,
			Revision: head.Revision, Actor: p.TokenID, Document: nl}
	}); err != nil {
		return head, err
	}
	auditAction := ActionPolicyPut
	if nl == nil {
		auditAction = ActionPolicyDelete
	}
	return head, audit.Append(tx, AuditEntry{Time: now, Action: auditAction, Actor: p.TokenID, Role: p.Role, Object: name,
		Detail: map[string]any{"change": action, "layerVersion": lv, "policyVersion": head.Version, "revision": head.Revision}})
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
	layer := c.QueryParam("layer")
	entries, next, err := audit.ReadLog(s.deps.Store, bucketHistory, "policy history", after, limit,
		func(e HistoryEntry) bool { return layer == "" || e.Layer == layer },
		func(e HistoryEntry) uint64 { return e.Seq })
	if err != nil {
		return err
	}
	page := HistoryPage{Entries: entries, Next: next}
	return c.JSON(http.StatusOK, page)
}

type compiledPolicy struct {
	version string
	decider Decider
}

// decider returns the engine for the current policy, compiling it once per
// version.
func (s *Server) decider(ctx context.Context) (Decider, string, error) {
	d, head, err := s.deciderHead(ctx)
	return d, head.Version, err
}

// deciderHead is decider with the whole policy head it compiled (its
// revision orders policies in time; the version only tells them apart).
func (s *Server) deciderHead(ctx context.Context) (Decider, policyHead, error) {
	if s.deps.Policy == nil {
		return nil, policyHead{}, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "this server has no policy engine configured"}
	}
	head, err := s.currentHead()
	if err != nil {
		return nil, policyHead{}, err
	}
	s.polMu.Lock()
	defer s.polMu.Unlock()
	if s.polCache != nil && s.polCache.version == head.Version {
		return s.polCache.decider, head, nil
	}
	var layers []Layer
	if err := s.deps.Store.View(func(r store.Reader) (err error) {
		if head, err = readHead(r); err != nil {
			return err
		}
		layers, err = readLayers(r)
		return err
	}); err != nil {
		return nil, policyHead{}, err
	}
	d, err := s.deps.Policy(ctx, toPolicyLayers(layers))
	if err != nil {
		return nil, policyHead{}, fmt.Errorf("compile policy %s: %w", head.Version, err)
	}
	s.polCache = &compiledPolicy{version: head.Version, decider: d}
	return d, head, nil
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
