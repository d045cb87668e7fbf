package load

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// Mode selects the trust check of a pass.
type Mode int

// The trust checks.
const (
	// Fast checks each plugin's stat fingerprint (no content read); a
	// record without a fingerprint is re-hashed.
	Fast Mode = iota + 1
	// Full re-hashes every plugin tree against its pin.
	Full
)

// TypeRevoked is the *plugin.Error type (layer policy, exit code 3) of a
// plugin that an active revocation withdraws.
const TypeRevoked = policy.TypeRevoked

// Options configure a pass.
type Options struct {
	// Decider asks policy (nil allows everything).
	Decider *Decider
	// Revocations are the revocations in force (those the signed policy
	// bundle carries); a plugin one matches (by id and version, or by its
	// w1: content digest) is failed and not read. Default: none.
	Revocations policy.Revocations
	// Mode is the trust check (default Fast).
	Mode Mode
	// MarketplaceSource returns a known marketplace's source for policy
	// (strictKnownMarketplaces, blockedMarketplaces), or nil.
	MarketplaceSource func(name string) *plugin.MarketplaceSource
	// Entries returns a plugin's marketplace entry (for entries that define
	// components, strict: false), or nil.
	Entries func(plugin.ID) *plugin.Entry
	// Workers bounds the plugins read in parallel (default GOMAXPROCS).
	Workers int
	// Contents keeps the capability sets of trees policy decides on
	// (see Contents); nil computes each set from its tree at every pass.
	Contents *Contents
}

// TypeNotInstalled is the *plugin.Error type (layer intent) of a plugin
// that settings enable (or managed settings force on) but that is not
// installed: its row is failed, with the install command as the hint.
const TypeNotInstalled = "not-installed"

// Input is what a pass reads besides the filesystem: the installed
// registry (with the records that do not decode), the merged
// enabledPlugins of the settings and the settings documents they were
// merged from (which name the scope that enables a plugin that is not
// installed).
type Input struct {
	Records []cache.Record
	Broken  []cache.BrokenRecord
	Enabled map[plugin.ID]bool
	Docs    []settings.Document
}

// Reader reads what an admitted plugin contributes (its manifest and
// components, see ReadManifest): it records failures on u with AddError,
// sets u.Deps, and may keep its own results under index i (the record's).
// Readers run concurrently, one call per admitted record.
type Reader func(ctx context.Context, i int, r cache.Record, entry *plugin.Entry, u *Unit)

// Pass runs the checks of every installed plugin in parallel and returns one
// unit per record, in order, then one failed unit per broken record (a
// damaged registry record, with the way out). A plugin is admitted, and
// read, only when it is enabled (in settings, or forced on by policy),
// policy allows it, no revocation withdraws it and its tree passes the
// trust check. Last come the plugins that are enabled but not installed,
// one failed unit each (type TypeNotInstalled), in id order, unless policy
// forces them off. The units are not classified yet: call Demote once
// every unit of the session (session plugin dirs too) is there.
func Pass(ctx context.Context, o Options, in Input, read Reader) ([]*Unit, error) {
	units := make([]*Unit, len(in.Records), len(in.Records)+len(in.Broken))
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(in.Records)))
	if read == nil {
		read = func(_ context.Context, _ int, r cache.Record, entry *plugin.Entry, u *Unit) {
			ReadManifest(u, r.InstallPath, entry)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers && len(in.Records) > 0; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(in.Records); i = int(next.Add(1)) - 1 {
				r := in.Records[i]
				u := &Unit{Row: NewRow(r.ID)}
				units[i] = u
				var entry *plugin.Entry
				if o.Entries != nil {
					entry = o.Entries(r.ID)
				}
				if !o.admit(ctx, r, in.Enabled[r.ID], &u.Row, entry) {
					continue
				}
				read(ctx, i, r, entry, u)
				if len(u.Errors) == 0 {
					u.Path = r.InstallPath
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, b := range in.Broken {
		if b.ID.IsZero() {
			continue // not a plugin id: wharf doctor reports it
		}
		u := &Unit{Row: NewRow(b.ID)}
		u.Enabled = in.Enabled[b.ID]
		u.AddError(b.Err)
		units = append(units, u)
	}
	missing, err := o.notInstalled(ctx, in)
	if err != nil {
		return nil, err
	}
	return append(units, missing...), nil
}

// notInstalled is one failed unit per plugin that in.Enabled enables and
// the registry does not hold (as a record or a broken one), name@inline
// plugins aside. Policy may
// force such a plugin off (then it is not enabled: no unit) or on (the row
// says so); the row's scope is that of the highest settings document that
// names it.
func (o *Options) notInstalled(ctx context.Context, in Input) ([]*Unit, error) {
	installed := make(map[plugin.ID]bool, len(in.Records)+len(in.Broken))
	for _, r := range in.Records {
		installed[r.ID] = true
	}
	for _, b := range in.Broken {
		installed[b.ID] = true
	}
	var ids []plugin.ID
	for id, on := range in.Enabled {
		// A name@inline plugin comes from a session's --plugin-dir, never
		// from the registry: it is not "not installed".
		if on && !installed[id] && !id.IsZero() && id.Source != plugin.SourceInline {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	var units []*Unit
	for _, id := range ids {
		var src *plugin.MarketplaceSource
		if o.MarketplaceSource != nil {
			src = o.MarketplaceSource(id.Source)
		}
		dec, err := o.Decider.Decide(ctx, policy.Request{Action: policy.ActionLoad, Plugin: id,
			Marketplace: policy.Marketplace{Name: id.Source, Source: src}})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			dec = policy.Decision{} // the install command decides again and says why
		}
		if dec.Forced == "off" {
			continue
		}
		u := &Unit{Row: NewRow(id), missing: true}
		u.Enabled, u.Forced, u.Scope = true, dec.Forced, enabledScope(in.Docs, id)
		u.AddError(NotInstalledError(id))
		units = append(units, u)
	}
	return units, nil
}

// NotInstalledError is the error of a plugin that is enabled but not
// installed, with the command that installs it.
func NotInstalledError(id plugin.ID) error {
	return plugin.Errorf(plugin.LayerIntent, TypeNotInstalled, id.String(),
		"install it with: wharf install "+id.String(),
		"%s is enabled but not installed", id)
}

// enabledScope is the scope of the settings document of highest precedence
// whose enabledPlugins names id ("" when none does: none was given). One
// file read as two scopes (a home inside the project) counts as the lower.
func enabledScope(docs []settings.Document, id plugin.ID) string {
	best, bestName := "", ""
	rank := -1
	for _, d := range docs {
		if d.Missing {
			continue
		}
		r := slices.Index(settings.Precedence, d.Scope)
		if r < rank || d.Name == bestName {
			continue
		}
		s, err := settings.Parse(d.Name, d.Data)
		if err != nil {
			continue
		}
		if _, ok := s.EnabledPlugins[id]; ok {
			best, bestName, rank = string(d.Scope), d.Name, r
		}
	}
	return best
}

// Admit fills st (a NewRow) from r and runs the checks that decide
// whether r's content may be read at all: policy (which may force the
// plugin on or off, and which decides the plugin's own source as well as
// its marketplace), the revocations and trust. It reports whether r is
// enabled and passed them; a failure is recorded on st.
func (o *Options) Admit(ctx context.Context, r cache.Record, enabled bool, st *Row) bool {
	var entry *plugin.Entry
	if o.Entries != nil {
		entry = o.Entries(r.ID)
	}
	return o.admit(ctx, r, enabled, st, entry)
}

func (o *Options) admit(ctx context.Context, r cache.Record, enabled bool, st *Row, entry *plugin.Entry) bool {
	st.Version, st.Scope, st.InstallPath, st.Auto, st.Digest = r.Version, r.Scope, r.InstallPath, r.Auto, r.Digest
	st.Enabled = enabled
	var src *plugin.MarketplaceSource
	if o.MarketplaceSource != nil {
		src = o.MarketplaceSource(r.ID.Source)
	}
	req := policy.Request{Action: policy.ActionLoad, Plugin: r.ID, Marketplace: policy.Marketplace{Name: r.ID.Source, Source: src}}
	dec, err := o.Decider.Decide(ctx, req)
	if err == nil {
		st.Forced = dec.Forced
		switch dec.Forced {
		case "on":
			st.Enabled = true
		case "off":
			st.Enabled = false
		}
		err = dec.Err(req)
	}
	if !st.Enabled {
		return false
	}
	if err != nil {
		// A plugin policy refuses is not read at all.
		st.AddError(err)
		return false
	}
	// The source the version was installed from, which the record keeps;
	// a record that kept none is decided on its marketplace entry's.
	from := r.Source
	if from == nil && entry != nil {
		from = &entry.Source
	}
	if err := CheckSource(ctx, o.Decider, r.ID, from); err != nil {
		st.AddError(err)
		return false
	}
	if rv, ok := o.Revocations.Match(r.ID, r.Version, r.Digest); ok {
		st.AddError(policy.RevokedError(plugin.LayerPolicy, rv, r.ID, r.Version, r.Digest))
		return false
	}
	if err := o.CheckTrust(r); err != nil {
		// A tree trust refuses is not read either.
		st.AddError(err)
		return false
	}
	if ReadsContent(o.Decider.Policy()) {
		// Policy again, now with what the checked tree can do: its
		// capability set and findings (deniedCapabilities, Rego rules
		// on input.capabilities).
		content, err := o.Contents.Of(r, entry)
		if err != nil {
			if pe := (*plugin.Error)(nil); errors.As(err, &pe) {
				// The tree does not load as a plugin (an invalid
				// manifest): the read fails it with that error, from
				// the same files, and nothing of it becomes active.
				return true
			}
			st.AddError(ContentError(r.ID, r.Version, err))
			return false
		}
		req.Content = content
		if err := o.Decider.Check(ctx, req); err != nil {
			st.AddError(err)
			return false
		}
	}
	return true
}

// CheckSource asks policy whether the tree of id may come from src, the
// source its marketplace entry names or named when it was installed
// (fetch_source: managed blockedMarketplaces holds for a plugin's own
// repository, not only for its marketplace). A fetch asks the same before
// it runs; a version already in the cache (there before the block, or
// copied from a seed) is never fetched again, so the load pass and install
// ask here too. The policy's memo keeps the decision under a key that
// carries the source. A nil src, or one that names no repository (relative
// to its marketplace, npm), is not decided: the marketplace's own decision
// covers a relative source.
func CheckSource(ctx context.Context, d *Decider, id plugin.ID, src *plugin.Source) error {
	if src == nil {
		return nil
	}
	req, ok := policy.FetchSourceRequest(id.String(), *src)
	if !ok {
		return nil
	}
	return d.Check(ctx, req)
}

// CheckTrust checks r's tree against its pin: the stat fingerprint in Fast
// mode, a full re-hash in Full mode or when no fingerprint was recorded.
// Both errors name the plugin, its version and its dir, and the changed
// paths.
func (o *Options) CheckTrust(r cache.Record) error {
	pin := r.Pin()
	if o.Mode == Full || r.Fingerprint.IsZero() {
		_, err := pin.Check(r.InstallPath)
		return err
	}
	return pin.CheckFast(r.InstallPath)
}

// ReadManifest reads the manifest and components of the plugin at root
// (with its marketplace entry, which may define components): a manifest
// that cannot be read or is invalid is recorded on u, components that
// cannot be used are listed in u.Failed, and u.Deps is set. It returns the
// plugin (nil on error) and the diagnostics of the read.
func ReadManifest(u *Unit, root string, entry *plugin.Entry) (*plugin.Plugin, []plugin.Diagnostic) {
	p, diags, err := plugin.Load(root, entry)
	if err != nil {
		u.AddError(err)
		return nil, diags
	}
	for _, f := range p.Failed {
		u.Failed = append(u.Failed, f.String())
	}
	u.Deps = p.Manifest.Dependencies
	if len(u.Deps) == 0 {
		u.Deps = nil
	}
	return p, diags
}

// List is the whole pass of `wharf list`: every installed plugin's row,
// read with ReadManifest, classified, in id order.
func List(ctx context.Context, o Options, in Input) ([]Row, error) {
	// The always-on token estimate reads every skill, command and agent
	// file, so only `wharf list` pays for it, not a session's load.
	units, err := Pass(ctx, o, in, func(_ context.Context, _ int, r cache.Record, entry *plugin.Entry, u *Unit) {
		if p, _ := ReadManifest(u, r.InstallPath, entry); p != nil {
			cost := p.AlwaysOnTokens()
			u.AlwaysOnTokens = &cost
		}
	})
	if err != nil {
		return nil, err
	}
	Demote(units)
	out := make([]Row, len(units))
	for i, u := range units {
		out[i] = u.Row
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID.String() < out[j].ID.String() })
	return out, nil
}
