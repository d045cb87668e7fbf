package install

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/wharfhq/wharf/cache"
	"github.com/wharfhq/wharf/plugin"
	"github.com/wharfhq/wharf/resolver"
	"github.com/wharfhq/wharf/settings"
)

// Status values of `wharf list`.
const (
	StatusActive   = "active"
	StatusDemoted  = "demoted"
	StatusFailed   = "failed"
	StatusDisabled = "disabled"
)

// ErrorDetail is one typed error of a plugin's status.
type ErrorDetail struct {
	Type    string `json:"type"`
	Layer   string `json:"layer"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// PluginStatus is one row of `wharf list`.
type PluginStatus struct {
	ID           plugin.ID     `json:"id"`
	Version      string        `json:"version"`
	Scope        string        `json:"scope"`
	Enabled      bool          `json:"enabled"`
	InstallPath  string        `json:"installPath"`
	Auto         bool          `json:"auto,omitempty"`
	Status       string        `json:"status"`
	Forced       string        `json:"forced,omitempty"`
	Delisted     bool          `json:"delisted,omitempty"`
	Errors       []string      `json:"errors"`
	ErrorDetails []ErrorDetail `json:"errorDetails"`
	// Chain explains a demotion: "a@m needs b@m; b@m is disabled".
	Chain  string `json:"chain,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Failed describes each component the plugin declares that cannot be
	// used (kind, name, file, field, reason). The rest of the plugin loads.
	Failed []string `json:"failed,omitempty"`
}

// StatusOptions tune List.
type StatusOptions struct {
	// Rehash re-hashes every plugin's content (the full path) instead of the
	// cheap stat fingerprint check (the cache-only path).
	Rehash bool
}

// List returns every installed plugin with its status for a session started
// now: active, demoted (with the dependency chain), failed (with the typed
// error) or disabled. Nothing is written: a demoted plugin stays enabled.
func (in *Installer) List(ctx context.Context, opts StatusOptions) ([]PluginStatus, error) {
	g, recs, err := in.graph()
	if err != nil {
		return nil, err
	}
	snap, err := settings.Load(in.o.Settings, in.o.FlagSettings)
	if err != nil {
		return nil, err
	}
	enabled := map[plugin.ID]bool{}
	for id, on := range snap.Merged.EnabledPlugins {
		enabled[id] = on
	}
	// Each plugin's row is independent work (its tree, its policy
	// decisions, its fingerprint; mostly system calls), done on all CPUs.
	out := make([]PluginStatus, len(recs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(recs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(recs); i = int(next.Add(1)) - 1 {
				out[i] = in.status(ctx, g, recs[i], enabled[recs[i].ID], opts)
			}
		}()
	}
	wg.Wait()
	inst := make([]resolver.Installed, len(recs))
	for i, r := range recs {
		inst[i] = resolver.Installed{ID: r.ID, Auto: r.Auto, Enabled: out[i].Enabled && len(out[i].Errors) == 0}
	}
	// A plugin whose registry record is damaged is failed, with the way
	// out; every other plugin is listed as usual.
	_, broken, err := in.o.Cache.Scan()
	if err != nil {
		return nil, err
	}
	for _, b := range broken {
		if b.ID.IsZero() {
			continue // not a plugin id: wharf doctor reports it
		}
		st := PluginStatus{ID: b.ID, Enabled: enabled[b.ID], Errors: []string{}, ErrorDetails: []ErrorDetail{}}
		st.AddError(b.Err)
		out = append(out, st)
	}
	Classify(out, resolver.New(g, inst, nil).DemoteInstalled())
	sort.Slice(out, func(i, j int) bool { return out[i].ID.String() < out[j].ID.String() })
	return out, nil
}

// status is r's row of List before demotion: enabled (settings, or forced
// by policy), delisted, and the errors of its load-time checks. It loads
// r's tree whatever the state, for the dependency graph List demotes with.
func (in *Installer) status(ctx context.Context, g *graph, r cache.Record, enabled bool, opts StatusOptions) PluginStatus {
	entry, _ := g.entry(r.ID)
	p, _ := g.load(r.InstallPath, entry)
	st := PluginStatus{ID: r.ID, Version: r.Version, Scope: r.Scope, InstallPath: r.InstallPath, Auto: r.Auto,
		Enabled: enabled, Digest: r.Digest, Errors: []string{}, ErrorDetails: []ErrorDetail{}}
	if p != nil {
		for _, f := range p.Failed {
			st.Failed = append(st.Failed, f.String())
		}
	}
	if in.o.Policy != nil {
		if forced, err := in.o.Policy.Forced(ctx, r.ID); err == nil {
			st.Forced = forced
			switch forced {
			case "on":
				st.Enabled = true
			case "off":
				st.Enabled = false
			}
		}
	}
	if _, err := g.cat.Lookup(r.ID); err != nil && g.KnownMarketplace(r.ID.Source) {
		st.Delisted = true
	}
	if st.Enabled {
		for _, err := range in.check(ctx, g, r, opts) {
			st.AddError(err)
		}
	}
	return st
}

// check runs the load-time checks of one installed plugin: policy, trust
// (fingerprint or full re-hash) and the manifest.
func (in *Installer) check(ctx context.Context, g *graph, r cache.Record, opts StatusOptions) []error {
	var errs []error
	if in.o.Policy != nil {
		var src = marketSourceOf(g, r.ID.Source)
		if err := in.o.Policy.AllowLoad(ctx, r.ID, src); err != nil {
			errs = append(errs, err)
		}
	}
	pin := r.Pin()
	if opts.Rehash || r.Fingerprint.IsZero() {
		if _, err := pin.Check(r.InstallPath); err != nil {
			errs = append(errs, err)
		}
	} else if err := pin.CheckFast(r.InstallPath); err != nil {
		errs = append(errs, err)
	}
	entry, _ := g.entry(r.ID)
	if _, err := g.load(r.InstallPath, entry); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func marketSourceOf(g *graph, mkt string) *settings.MarketplaceSource {
	if k, ok := g.known(mkt); ok {
		return marketSource(k)
	}
	return nil
}

// AddError records err on the row with its type, layer and hint.
func (st *PluginStatus) AddError(err error) {
	d := ErrorDetail{Type: "error", Message: err.Error(), Hint: plugin.HintOf(err)}
	var pe *plugin.Error
	if errors.As(err, &pe) {
		d.Type, d.Layer = pe.Type, string(pe.Layer)
	}
	st.Errors = append(st.Errors, d.Message)
	st.ErrorDetails = append(st.ErrorDetails, d)
}

// Classify sets the Status of every row: failed when it has errors, disabled
// when it is not enabled, demoted (with the chain, as a dependency error)
// when act demoted it, else active. `wharf list` and the agent's loader both
// classify with it, so the two always agree on a plugin's state.
func Classify(rows []PluginStatus, act *resolver.Activation) {
	for i := range rows {
		st := &rows[i]
		switch {
		case len(st.Errors) > 0:
			st.Status = StatusFailed
		case !st.Enabled:
			st.Status = StatusDisabled
		case act.Status(st.ID) == resolver.StatusDemoted:
			st.Status = StatusDemoted
			if why, ok := act.Why(st.ID); ok {
				st.Chain = explain(why, rows)
				st.AddError(plugin.Errorf(plugin.LayerDependency, plugin.TypeDependencyUnsatisfied, st.ID.String(),
					"enable or install the missing dependency, then reload", "%s", st.Chain))
			}
		default:
			st.Status = StatusActive
		}
	}
}

// explain renders a demotion chain, naming a failed plugin at its end as
// failed rather than disabled (the user enabled it; a check refused it).
func explain(why resolver.Reason, all []PluginStatus) string {
	s := why.String()
	if len(why.Chain) == 0 {
		return s
	}
	last := why.Chain[len(why.Chain)-1]
	for _, st := range all {
		if st.ID == last && st.Enabled && len(st.Errors) > 0 {
			return s + " (it is enabled but failed: " + st.ErrorDetails[0].Type + ")"
		}
	}
	return s
}
