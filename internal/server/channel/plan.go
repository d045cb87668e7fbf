package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/plugin"
)

// Candidate is what the policy is asked about one plugin.
type Candidate struct {
	ID                plugin.ID
	Entry             *plugin.Entry
	MarketplaceSource json.RawMessage
	Dependencies      []plugin.ID
	// RequiredBy is the channel plugin that brought this one in as a
	// dependency (zero for a plugin the definition names or covers).
	RequiredBy plugin.ID
	// Content is the vendored tree's capability set and findings: a
	// plugin is asked about once without it, before its tree is fetched,
	// and once with it (deniedCapabilities, Rego rules on
	// input.capabilities).
	Content *policy.Content
}

// Verdict is the policy's answer about a Candidate.
type Verdict struct {
	Allowed bool
	Forced  string // "on", "off" or ""
	Reasons []Reason
}

// Reason names the policy layer and rule behind a verdict.
type Reason struct {
	Layer   string `json:"layer"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// Decider asks the server's policy whether a plugin may be installed.
type Decider func(ctx context.Context, c Candidate) (Verdict, error)

// Input is everything a channel's entries are computed from.
type Input struct {
	Definition  Definition
	Catalog     *marketplace.Catalog
	Decide      Decider
	Revocations policy.Revocations
	// Admit decides, for every version vendored, whether the server's
	// approvals let the channel serve it; a held version is replaced by
	// the approved one. nil serves every version.
	Admit  Admitter
	Vendor *Vendor
	// Sources decides every source a plugin's tree comes from: the one its
	// marketplace entry names, at every build (a vendored copy is not
	// fetched again), and every URL a fetch of it is redirected to (the
	// server's policy, fetch_source: managed blockedMarketplaces). A
	// plugin it refuses is left out as denied. nil allows every source.
	Sources source.Gate
	// PolicyRevision orders the policy Decide answers for in time (the
	// server's policy revision). A replica whose view of the policy is
	// older than the one the stored head was built from serves that head
	// and never commits a build of the older policy over it.
	PolicyRevision uint64
}

// Entry is one plugin of a channel.
type Entry struct {
	// Name is the plugin's name in the channel (distinct from every other
	// entry's; the origin's name unless two marketplaces publish it).
	Name         string   `json:"name"`
	Origin       string   `json:"origin"` // name@marketplace
	Source       string   `json:"source"` // the origin source, described
	Commit       string   `json:"commit,omitempty"`
	Version      string   `json:"version,omitempty"`
	Digest       string   `json:"digest"`                 // w1: of the tree the channel serves
	OriginDigest string   `json:"originDigest,omitempty"` // w1: of the origin's tree, when the channel rewrote its plugin.json
	Dependencies []string `json:"dependencies"`           // channel names
	Forced       string   `json:"forced,omitempty"`       // "on" or "off" by policy
	Dependency   bool     `json:"dependency,omitempty"`   // in the channel only as another entry's dependency
	Description  string   `json:"description,omitempty"`
	Category     string   `json:"category,omitempty"`
	// ClaudeName says why Claude Code's validator refuses the entry's name
	// (it passes as Anthropic's own); Claude Code still installs it. The
	// channel keeps it, and says so here and in its pins file.
	ClaudeName string `json:"claudeName,omitempty"`
	// Held is why the version the marketplace lists now is not served:
	// it waits for approval, and the entry is the approved version.
	Held string `json:"held,omitempty"`

	id       plugin.ID
	hit      marketplace.Hit
	vendored *Vendored
	deps     []plugin.ID
}

// Left-out kinds.
const (
	LeftDenied      = "denied"      // the policy denies it
	LeftDependency  = "dependency"  // a dependency is left out
	LeftUnavailable = "unavailable" // its source could not be fetched or verified
	LeftRevoked     = "revoked"     // a revocation matches it
	LeftNotFound    = "not-found"   // named by the definition or a dependency, but no known marketplace has it
)

// LeftOut is a plugin the channel does not carry, and why.
type LeftOut struct {
	Plugin     string   `json:"plugin"` // name@marketplace
	Kind       string   `json:"kind"`
	Reason     string   `json:"reason"`
	Reasons    []Reason `json:"reasons,omitempty"`    // denied: the policy's layers and rules
	Dependency string   `json:"dependency,omitempty"` // dependency: which one
	Forced     string   `json:"forced,omitempty"`     // denied: "off" when the policy forces it off
}

// Plan is a channel's computed content.
type Plan struct {
	Entries []Entry   `json:"entries"`
	LeftOut []LeftOut `json:"leftOut"`
}

type planState struct {
	in      Input
	kept    map[plugin.ID]*Entry
	left    map[plugin.ID]*LeftOut
	mkts    map[string]marketplace.Loaded
	visited map[plugin.ID]bool
}

// Compute decides a channel's entries and what it leaves out. Plugins are
// fetched (once per marketplace revision, see Vendor) only when the policy
// allows them.
func Compute(ctx context.Context, in Input) (*Plan, error) {
	st := &planState{in: in, kept: map[plugin.ID]*Entry{}, left: map[plugin.ID]*LeftOut{}, mkts: map[string]marketplace.Loaded{}, visited: map[plugin.ID]bool{}}
	for _, l := range in.Catalog.Marketplaces() {
		st.mkts[l.Known.Name] = l
	}
	type item struct {
		id         plugin.ID
		requiredBy plugin.ID
	}
	var queue []item
	for _, h := range in.Catalog.All() {
		if in.Definition.inScope(h.ID) {
			queue = append(queue, item{id: h.ID})
		}
	}
	for _, p := range in.Definition.Plugins {
		id, _ := plugin.ParseID(p)
		if _, err := in.Catalog.Lookup(id); err != nil {
			st.left[id] = &LeftOut{Plugin: p, Kind: LeftNotFound, Reason: "the channel names it, but " + err.Error()}
		}
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if st.visited[it.id] {
			continue
		}
		st.visited[it.id] = true
		deps, err := st.one(ctx, it.id, it.requiredBy)
		if err != nil {
			return nil, err
		}
		for _, d := range deps {
			queue = append(queue, item{id: d, requiredBy: it.id})
		}
	}
	// A plugin stays only while every dependency stays.
	for changed := true; changed; {
		changed = false
		ids := sortedIDs(st.kept)
		for _, id := range ids {
			e := st.kept[id]
			for _, d := range e.deps {
				if _, ok := st.kept[d]; ok {
					continue
				}
				why := "it is not in the channel"
				if lo := st.left[d]; lo != nil {
					why = lo.Kind + ": " + lo.Reason
				}
				st.left[id] = &LeftOut{Plugin: id.String(), Kind: LeftDependency, Dependency: d.String(),
					Reason: fmt.Sprintf("depends on %s, which is left out (%s)", d, why)}
				delete(st.kept, id)
				changed = true
				break
			}
		}
	}
	st.name()
	p := &Plan{Entries: []Entry{}, LeftOut: []LeftOut{}}
	for _, id := range sortedIDs(st.kept) {
		e := *st.kept[id]
		if v, msg := plugin.ClaudePluginName(e.Name); v == plugin.NameImitation {
			e.ClaudeName = msg
		}
		p.Entries = append(p.Entries, e)
	}
	sort.Slice(p.Entries, func(i, j int) bool { return p.Entries[i].Name < p.Entries[j].Name })
	for _, lo := range st.left {
		p.LeftOut = append(p.LeftOut, *lo)
	}
	sort.Slice(p.LeftOut, func(i, j int) bool { return p.LeftOut[i].Plugin < p.LeftOut[j].Plugin })
	return p, nil
}

func sortedIDs[V any](m map[plugin.ID]V) []plugin.ID {
	ids := make([]plugin.ID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	return ids
}

// one decides one plugin and returns the dependencies to look at next.
func (st *planState) one(ctx context.Context, id plugin.ID, requiredBy plugin.ID) ([]plugin.ID, error) {
	h, err := st.in.Catalog.Lookup(id)
	if err != nil {
		what := "no known marketplace has it"
		if !requiredBy.IsZero() {
			what = "required by " + requiredBy.String() + ", but " + err.Error()
		} else {
			what = err.Error()
		}
		st.left[id] = &LeftOut{Plugin: id.String(), Kind: LeftNotFound, Reason: what}
		return nil, nil
	}
	entryDeps := resolveDeps(id, h.Entry.Dependencies)
	msrc, _ := json.Marshal(h.Known.Source)
	c := Candidate{ID: id, Entry: h.Entry, MarketplaceSource: msrc, Dependencies: entryDeps, RequiredBy: requiredBy}
	v, err := st.in.Decide(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("policy decision for %s: %w", id, err)
	}
	if !v.Allowed || v.Forced == "off" {
		st.left[id] = deniedOut(id, v)
		return nil, nil
	}
	// The plugin's own source: an allowed marketplace does not carry a
	// plugin from a blocked repository into a channel.
	if st.in.Sources != nil && h.Entry.Source.Kind != plugin.SourceRelative {
		if err := st.in.Sources.AllowFetch(ctx, id.String(), h.Entry.Source); err != nil {
			if lo := sourceDenied(id, err); lo != nil {
				st.left[id] = lo
				return nil, nil
			}
			return nil, fmt.Errorf("policy decision for the source of %s: %w", id, err)
		}
	}
	vd, err := st.in.Vendor.Get(ctx, h, st.in.Sources)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if lo := sourceDenied(id, err); lo != nil {
			// A redirect to a refused source, on this fetch or on the
			// one that made the vendored copy.
			st.left[id] = lo
			return nil, nil
		}
		st.left[id] = &LeftOut{Plugin: id.String(), Kind: LeftUnavailable, Reason: err.Error()}
		return nil, nil
	}
	if r, ok := st.in.Revocations.Match(id, vd.Version, vd.Digest); ok {
		st.left[id] = &LeftOut{Plugin: id.String(), Kind: LeftRevoked,
			Reason: policy.RevokedReason(r)}
		return nil, nil
	}
	vd, held, lo, err := st.admit(ctx, id, h, vd)
	if err != nil {
		return nil, err
	}
	if lo != nil {
		st.left[id] = lo
		return nil, nil
	}
	if held != "" {
		// The approved copy is served with the entry it came with.
		if vd.Entry != nil {
			h.Entry = vd.Entry
		} else {
			// A copy made before copies kept their entry: only the name
			// and source, so nothing of the held entry comes along.
			e := &plugin.Entry{Source: h.Entry.Source}
			e.Name = h.Entry.Name
			h.Entry = e
		}
		entryDeps = resolveDeps(id, h.Entry.Dependencies)
		if r, ok := st.in.Revocations.Match(id, vd.Version, vd.Digest); ok {
			st.left[id] = &LeftOut{Plugin: id.String(), Kind: LeftRevoked, Reason: policy.RevokedReason(r)}
			return nil, nil
		}
	}
	// Policy again, on what the vendored tree can do.
	rep, err := capability.Read(vd.Dir, h.Entry)
	if err != nil {
		st.left[id] = &LeftOut{Plugin: id.String(), Kind: LeftDenied,
			Reason: fmt.Sprintf("the capability set policy decides on cannot be computed: %v", err)}
		return nil, nil
	}
	c.Content = policy.ContentOf(rep)
	if v, err = st.in.Decide(ctx, c); err != nil {
		return nil, fmt.Errorf("policy decision for %s: %w", id, err)
	}
	if !v.Allowed || v.Forced == "off" {
		st.left[id] = deniedOut(id, v)
		return nil, nil
	}
	deps := entryDeps
	if p, _, err := plugin.Load(vd.Dir, h.Entry); err == nil && len(p.Manifest.Dependencies) > 0 {
		deps = resolveDeps(id, p.Manifest.Dependencies)
	}
	for _, d := range deps {
		if d.Source != id.Source && !st.allowsCross(id.Source, d.Source) {
			st.left[id] = &LeftOut{Plugin: id.String(), Kind: LeftDependency, Dependency: d.String(),
				Reason: fmt.Sprintf("depends on %s in another marketplace, and marketplace %s does not allow dependencies on %s (allowCrossMarketplaceDependenciesOn)", d, id.Source, d.Source)}
			return nil, nil
		}
	}
	e := &Entry{Origin: id.String(), Source: vd.Source, Commit: vd.Commit, Version: vd.Version, Digest: vd.Digest,
		Forced: v.Forced, Dependency: !requiredBy.IsZero() && !st.in.Definition.inScope(id),
		Description: h.Entry.Description, Category: h.Entry.Category, Held: held, id: id, hit: h, vendored: vd, deps: deps}
	st.kept[id] = e
	return deps, nil
}

// deniedOut is the left-out record of a plugin the policy refuses.
func deniedOut(id plugin.ID, v Verdict) *LeftOut {
	var msgs []string
	for _, r := range v.Reasons {
		msgs = append(msgs, fmt.Sprintf("%s (policy layer %s, rule %s)", r.Message, r.Layer, r.Rule))
	}
	if len(msgs) == 0 {
		msgs = append(msgs, "the policy does not allow it")
	}
	return &LeftOut{Plugin: id.String(), Kind: LeftDenied, Reason: strings.Join(msgs, "; "), Reasons: v.Reasons, Forced: v.Forced}
}

// sourceDenied is the left-out record of a plugin whose source policy
// refuses (err is a policy denial), nil for any other error.
func sourceDenied(id plugin.ID, err error) *LeftOut {
	var d *policy.Denial
	if !errors.As(err, &d) {
		return nil
	}
	lo := &LeftOut{Plugin: id.String(), Kind: LeftDenied}
	var msgs []string
	for _, r := range d.Decision.Reasons {
		lo.Reasons = append(lo.Reasons, Reason{Layer: r.Layer, Rule: r.Rule, Message: r.Message})
		msgs = append(msgs, fmt.Sprintf("%s (policy layer %s, rule %s)", r.Message, r.Layer, r.Rule))
	}
	if len(msgs) == 0 {
		msgs = append(msgs, "the policy does not allow its source")
	}
	lo.Reason = strings.Join(msgs, "; ")
	return lo
}

func resolveDeps(id plugin.ID, ds []plugin.Dependency) []plugin.ID {
	var out []plugin.ID
	seen := map[plugin.ID]bool{}
	for _, d := range ds {
		r := d.Resolve(id.Source)
		if r == id || seen[r] {
			continue
		}
		seen[r] = true
		out = append(out, r)
	}
	return out
}

func (st *planState) allowsCross(from, to string) bool {
	l, ok := st.mkts[from]
	if !ok || l.Marketplace == nil {
		return false
	}
	return resolver.CrossAllowed(l.Marketplace.AllowCrossMarketplaceDependenciesOn, from, to)
}

// name gives every kept entry its channel name: the origin's name, or,
// when more than one marketplace publishes that name, name-marketplace
// for each of them (with a number after it should that collide too).
func (st *planState) name() {
	byName := map[string][]plugin.ID{}
	for _, id := range sortedIDs(st.kept) {
		byName[id.Name] = append(byName[id.Name], id)
	}
	taken := map[string]bool{}
	for n, ids := range byName {
		if len(ids) == 1 {
			taken[n] = true
		}
	}
	for _, id := range sortedIDs(st.kept) {
		e := st.kept[id]
		if len(byName[id.Name]) == 1 {
			e.Name = id.Name
			continue
		}
		n := id.Name + "-" + id.Source
		if len(n) > 128 {
			n = n[:128]
		}
		for i := 2; taken[n]; i++ {
			n = fmt.Sprintf("%s-%s-%d", id.Name, id.Source, i)
		}
		taken[n] = true
		e.Name = n
	}
	for _, e := range st.kept {
		e.Dependencies = []string{}
		for _, d := range e.deps {
			e.Dependencies = append(e.Dependencies, st.kept[d].Name)
		}
		sort.Strings(e.Dependencies)
	}
}
