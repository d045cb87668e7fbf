package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/schollz/progressbar/v3"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// Request asks for one plugin (and its dependency closure).
type Request struct {
	ID    plugin.ID
	Scope settings.Scope // user (default), project or local
	// Force refetches versions that are already cached.
	Force bool
	// AllowDowngrade lets the install replace an installed plugin with a
	// lower version, or with one that cannot be ordered against it (the
	// rule of Update; see UpdateOptions).
	AllowDowngrade bool
}

// Installed is one plugin an operation put into the registry.
type Installed struct {
	ID          plugin.ID `json:"id"`
	Version     string    `json:"version"`
	InstallPath string    `json:"installPath"`
	Digest      string    `json:"digest"`
	Auto        bool      `json:"auto,omitempty"`
	Origin      string    `json:"origin"` // cache, seed or fill
	Commit      string    `json:"gitCommitSha,omitempty"`
	Role        string    `json:"role"` // root, dependency or installed
	Signatures  []string  `json:"signatures,omitempty"`
	// Already is set when this very version was installed before: the
	// install only recorded and enabled it again.
	Already bool `json:"alreadyInstalled,omitempty"`
	// From is the version installed before, when the install replaced
	// another one; Downgrade is set when that was a move down that
	// AllowDowngrade permitted.
	From      string `json:"from,omitempty"`
	Downgrade bool   `json:"downgrade,omitempty"`
}

// Result is what Install did.
type Result struct {
	Plan      *resolver.Plan `json:"plan"`
	Installed []Installed    `json:"installed"`
	Enabled   []plugin.ID    `json:"enabled"`
	Settings  string         `json:"settingsFile,omitempty"`
	Warnings  []string       `json:"warnings,omitempty"`
}

// maxReplans bounds how often a closure is recomputed after fetched
// manifests reveal dependencies their marketplace entries did not list.
const maxReplans = 8

// Plan computes the install plan of id without changing anything.
func (in *Installer) Plan(ctx context.Context, id plugin.ID) (*resolver.Plan, error) {
	g, _, err := in.graph()
	if err != nil {
		return nil, err
	}
	return in.resolver(g).Closure(id)
}

func (in *Installer) graph() (*graph, []cache.Record, error) {
	cat, err := in.o.Marketplaces.Catalog()
	if err != nil {
		return nil, nil, err
	}
	recs, err := in.o.Cache.List()
	if err != nil {
		return nil, nil, err
	}
	return newGraph(cat, recs), recs, nil
}

func (in *Installer) resolver(g *graph) *resolver.Resolver {
	var inst []resolver.Installed
	for _, r := range g.installed {
		inst = append(inst, resolver.Installed{ID: r.ID, Auto: r.Auto})
	}
	var cp resolver.CrossPolicy
	if in.o.Policy != nil {
		cp = allowCross{in.o.Policy}
	}
	return resolver.New(g, inst, cp)
}

// Install installs req.ID and every dependency it needs, dependencies first,
// then enables them in req.Scope. Policy is asked for every plugin of the
// closure before anything is fetched, and again with the signatures that
// verified once the content is known.
func (in *Installer) Install(ctx context.Context, req Request) (*Result, error) {
	scope := req.Scope
	if scope == "" {
		scope = settings.ScopeUser
	}
	if scope != settings.ScopeUser && scope != settings.ScopeProject && scope != settings.ScopeLocal {
		return nil, plugin.Errorf(plugin.LayerIntent, "usage", string(scope), "use --scope user, project or local",
			"cannot install into scope %q", scope)
	}
	if (scope == settings.ScopeProject || scope == settings.ScopeLocal) && in.o.Settings.Project == "" {
		return nil, plugin.Errorf(plugin.LayerIntent, "usage", string(scope), "run the command inside a project, or use --scope user",
			"scope %s needs a project directory", scope)
	}
	g, _, err := in.graph()
	if err != nil {
		return nil, err
	}
	res := &Result{}
	done := map[plugin.ID]*stagedVersion{}
	defer func() {
		for _, sv := range done {
			sv.cleanup()
		}
	}()
	var plan *resolver.Plan
	for round := 0; ; round++ {
		plan, err = in.resolver(g).Closure(req.ID)
		if err != nil {
			return nil, err
		}
		todo := plan.ToInstall()
		if err := in.checkPolicy(ctx, g, todo, nil, nil); err != nil {
			return nil, err
		}
		var need []plugin.ID
		for _, st := range todo {
			if _, ok := done[st.ID]; !ok {
				need = append(need, st.ID)
			}
		}
		got, err := in.materializeAll(ctx, g, need, req.Force)
		for id, sv := range got {
			done[id] = sv
			g.setFetched(id, sv.v.Path)
		}
		if err != nil {
			return nil, err
		}
		if len(need) == 0 {
			break
		}
		if round == maxReplans {
			return nil, plugin.Errorf(plugin.LayerDependency, plugin.TypeDependencyUnsatisfied, req.ID.String(),
				"check the dependencies the plugins' manifests declare", "dependencies kept changing after %d fetches", maxReplans)
		}
	}
	res.Plan = plan
	res.Warnings = append(res.Warnings, plan.Warnings...)
	todo := plan.ToInstall()
	// Policy again, now with the signatures that verified over the fetched
	// content and what that content can do (its capability set).
	verified, policyKeys := map[plugin.ID][]string{}, map[plugin.ID][]string{}
	contents := map[plugin.ID]*policy.Content{}
	for _, st := range todo {
		ids, keys, warns, err := in.verifiedSignatures(g, st.ID, done[st.ID].v)
		if err != nil {
			return nil, err
		}
		verified[st.ID], policyKeys[st.ID] = ids, keys
		res.Warnings = append(res.Warnings, warns...)
		if contents[st.ID], err = in.contentOf(g, st.ID, done[st.ID].v); err != nil {
			return nil, err
		}
	}
	if err := in.checkPolicy(ctx, g, todo, policyKeys, contents); err != nil {
		return nil, err
	}
	for _, st := range todo {
		if err := in.checkRevoked(st.ID, done[st.ID].v); err != nil {
			return nil, err
		}
		var old *cache.Record
		if r, ok := g.installed[st.ID]; ok {
			old = &r
		}
		if err := in.checkAdmitted(ctx, g, st.ID, old, done[st.ID].v, false); err != nil {
			return nil, err
		}
	}
	err = in.o.Cache.WithLock(ctx, func(ctx context.Context) error {
		// Re-read the registry under the lock: another process may have
		// installed or removed plugins since the plan was made.
		current := map[plugin.ID]cache.Record{}
		recs, err := in.o.Cache.List()
		if err != nil {
			return err
		}
		for _, r := range recs {
			current[r.ID] = r
		}
		recsToPut := make([]cache.Record, 0, len(todo))
		for _, st := range todo {
			sv := done[st.ID]
			rec := cache.RecordFor(sv.v, string(scope))
			rec.GitCommitSha = sv.commit
			rec.Source = entrySource(g, st.ID)
			old, had := current[st.ID]
			var moved Updated
			if had && old.Version != sv.v.Version {
				// One rule with Update: an install never silently replaces
				// a plugin with a lower version.
				if err := checkMove(st.ID, old.Version, sv.v.Version, UpdateOptions{AllowDowngrade: req.AllowDowngrade}, &moved); err != nil {
					return installDowngradeError(err, st.ID)
				}
			}
			switch {
			case st.Role == resolver.RoleRoot:
				rec.Auto = false
			case had:
				rec.Auto = old.Auto
				rec.Scope = old.Scope
			default:
				rec.Auto = true
			}
			recsToPut = append(recsToPut, rec)
			res.Installed = append(res.Installed, Installed{ID: st.ID, Version: sv.v.Version, InstallPath: sv.v.Path, Digest: sv.v.Digest,
				Auto: rec.Auto, Origin: sv.v.Origin, Commit: sv.commit, Role: st.Role.String(), Signatures: verified[st.ID],
				Already: had && old.InstallPath == rec.InstallPath && old.Digest == rec.Digest, Downgrade: moved.Downgrade})
			if had && old.Version != sv.v.Version {
				res.Installed[len(res.Installed)-1].From = old.Version
			}
		}
		// The whole closure is recorded in one transaction: the registry
		// never holds a plugin without the dependencies it was installed with.
		if err := in.o.Cache.PutAll(ctx, recsToPut); err != nil {
			return err
		}
		// Enabled under the same lock: an enable, disable or uninstall of
		// another process lands wholly before or wholly after this
		// install, never between its registry write and its settings
		// write, and none of them rewrites the file from an old read.
		enable := make(map[plugin.ID]bool, len(todo))
		for _, st := range todo {
			enable[st.ID] = true
			res.Enabled = append(res.Enabled, st.ID)
		}
		// A dependency already in the registry that no settings scope
		// mentions was left so by an install killed between its registry
		// write and its settings write: enable it, as that install would
		// have. One a user disabled keeps its entry and stays off.
		snap, err := settings.Load(in.o.Settings, in.o.FlagSettings)
		if err != nil {
			return err
		}
		for _, st := range plan.Steps {
			if _, decided := snap.Merged.EnabledPlugins[st.ID]; st.Role == resolver.RoleInstalled && !decided {
				enable[st.ID] = true
				res.Enabled = append(res.Enabled, st.ID)
			}
		}
		file, err := settings.SetEnabledAll(in.o.Settings, scope, enable)
		res.Settings = file
		return err
	})
	if err != nil {
		if len(res.Enabled) > 0 {
			return res, err
		}
		return nil, err
	}
	in.collect(ctx)
	return res, nil
}

// installDowngradeError turns checkMove's refusal into the one an install
// gives: the same type and reason, with the install's way out.
func installDowngradeError(err error, id plugin.ID) error {
	var pe *plugin.Error
	if !errors.As(err, &pe) {
		return err
	}
	return &plugin.Error{Layer: pe.Layer, Type: pe.Type, Object: pe.Object,
		Err:  fmt.Errorf("install refused: %s", strings.TrimPrefix(pe.Err.Error(), "update refused: ")),
		Hint: "an older version may bring back what a newer one fixed; if you mean it, run: wharf install " + id.String() + " --allow-downgrade"}
}

// entrySource is the source id's marketplace entry names, kept in its
// registry record so that policy decides it at every load even after the
// marketplace no longer lists the plugin.
func entrySource(g *graph, id plugin.ID) *plugin.Source {
	e, _ := g.entry(id)
	if e == nil {
		return nil
	}
	src := e.Source
	return &src
}

// checkPolicy asks policy about every plugin of an install closure. verified
// (Request.Signatures per plugin) is nil before fetching: then every trusted
// key stands in for the verified ones, so a plugin that no trusted key can
// make satisfy requireSignatures is refused before any download. contents
// (each fetched tree's capability set, Request.Content) is nil before
// fetching too.
func (in *Installer) checkPolicy(ctx context.Context, g *graph, steps []resolver.Step, verified map[plugin.ID][]string, contents map[plugin.ID]*policy.Content) error {
	if in.o.Policy == nil {
		return nil
	}
	items := make([]policy.InstallItem, 0, len(steps))
	for _, st := range steps {
		it := policy.InstallItem{Plugin: st.ID, RequiredBy: st.RequiredBy, DeclaredCross: g.declaredCross(st.RequiredBy.Source)}
		if k, ok := g.known(st.ID.Source); ok {
			it.Source = marketSource(k)
		}
		if verified != nil {
			it.Signatures = verified[st.ID]
		} else {
			// Before fetching, the detached signatures file is not seen:
			// any key trusted here might have signed the plugin, so only a
			// plugin no trusted key could sign well enough is refused now.
			it.Signatures = in.o.Keys.IDs()
		}
		it.Content = contents[st.ID]
		items = append(items, it)
	}
	errs := []error{in.o.Policy.AllowInstall(ctx, items)}
	// Each plugin's own source too: a version already in the cache (or a
	// seed) is never fetched, so the fetch's own check would not run.
	dec := load.NewDecider(in.o.Policy)
	for _, st := range steps {
		errs = append(errs, load.CheckSource(ctx, dec, st.ID, entrySource(g, st.ID)))
	}
	return errors.Join(errs...)
}

// contentOf is the capability set and findings of v, fetched for id and
// verified against its digest, as policy reads them; it is kept by
// digest, so the next load reads it back instead of the tree. Without a
// policy that reads content nothing is computed.
func (in *Installer) contentOf(g *graph, id plugin.ID, v *cache.Version) (*policy.Content, error) {
	if in.o.Policy == nil || !load.ReadsContent(in.o.Policy) {
		return nil, nil
	}
	e, _ := g.entry(id)
	c, err := in.contents.Of(cache.Record{ID: id, Version: v.Version, Digest: v.Digest, InstallPath: v.Path}, e)
	if err != nil {
		return nil, load.ContentError(id, v.Version, err)
	}
	return c, nil
}

// contentsOf is contentOf as the contents argument of checkPolicy.
func (in *Installer) contentsOf(g *graph, id plugin.ID, v *cache.Version) (map[plugin.ID]*policy.Content, error) {
	c, err := in.contentOf(g, id, v)
	if err != nil {
		return nil, err
	}
	return map[plugin.ID]*policy.Content{id: c}, nil
}

// revocationSource is a Policy that carries the revocations of the policy
// bundle in force (*policy.Engine).
type revocationSource interface {
	Revocations() policy.Revocations
}

// checkRevoked refuses v, fetched for id, when a revocation withdraws its
// version or its content digest (policy layer: exit 3).
func (in *Installer) checkRevoked(id plugin.ID, v *cache.Version) error {
	rs, ok := in.o.Policy.(revocationSource)
	if !ok {
		return nil
	}
	if r, hit := rs.Revocations().Match(id, v.Version, v.Digest); hit {
		return policy.RevokedError(plugin.LayerPolicy, r, id, v.Version, v.Digest)
	}
	return nil
}

// verifiedSignatures checks the signatures of v, fetched for id (its
// marketplace entry's and its detached file's), by trust's one rule
// (trust.CheckSignatures, which wharf verify applies too). It returns the
// key ids of trusted keys whose signature is valid, the Request.Signatures
// policy's requireSignatures reads (an old-form signature counts only where
// a layer opts its key in), and warnings naming old-form signatures. A
// signature present that does not cover v as published (a trusted key's on
// other content or on this content under another plugin name, marketplace
// or version, or one recorded over another digest) is a trust error.
func (in *Installer) verifiedSignatures(g *graph, id plugin.ID, v *cache.Version) (ids, policyKeys, warnings []string, err error) {
	var entrySigs []trust.Signature
	entryVersion := ""
	if e, _ := g.entry(id); e != nil {
		entryVersion = e.Version
		entrySigs = e.Signatures
	}
	sigs, err := trust.PluginSignatures(v.Path, entrySigs)
	if err != nil {
		return nil, nil, nil, err
	}
	c := trust.CheckSignatures(sigs, trust.NewStatement(id, trust.DeclaredVersion(v.Path, entryVersion), v.Digest), in.o.Keys)
	if err := c.Err(); err != nil {
		return nil, nil, nil, err
	}
	for _, w := range c.Warnings() {
		warnings = append(warnings, id.String()+": "+w)
	}
	return c.Verified(), policy.SignatureKeys(c.Keys, c.LegacyKeys, c.LegacyFingerprints), warnings, nil
}

// fetchWorkers bounds how many plugins of a closure are fetched and
// materialized at once: most of the time goes to fsync and network waits,
// which overlap well.
const fetchWorkers = 4

// materializeAll materializes ids concurrently. It returns every version it
// produced (so the caller can clean them up) and the first error, in ids'
// order.
func (in *Installer) materializeAll(ctx context.Context, g *graph, ids []plugin.ID, force bool) (map[plugin.ID]*stagedVersion, error) {
	out := make(map[plugin.ID]*stagedVersion, len(ids))
	errs := make([]error, len(ids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, fetchWorkers)
	var bar *progressbar.ProgressBar
	if in.o.ProgressBar != nil && len(ids) > 1 {
		bar = progressbar.NewOptions(len(ids),
			progressbar.OptionSetWriter(in.o.ProgressBar),
			progressbar.OptionSetDescription("plugins"),
			progressbar.OptionShowCount(),
			progressbar.OptionClearOnFinish())
		defer bar.Exit()
	}
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sv, err := in.materialize(ctx, g, id, force)
			if bar != nil {
				bar.Add(1)
			}
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			out[id] = sv
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// stagedVersion is a version materialized in the cache (not yet registered).
type stagedVersion struct {
	v      *cache.Version
	commit string
	stage  string
}

func (sv *stagedVersion) cleanup() {
	if sv.stage != "" {
		cache.RemoveStage(sv.stage)
	}
}

// checkBeforeFetch makes materialize load a plugin stored in the
// marketplace from there before anything else, as it does for one with an
// integrity; the tests set it to compare that way with the usual one.
var checkBeforeFetch = false

// materialize makes id's current catalog version present in the cache: an
// existing version dir or a seed when the catalog names the version, else a
// fresh fetch staged next to the cache dir.
func (in *Installer) materialize(ctx context.Context, g *graph, id plugin.ID, force bool) (_ *stagedVersion, err error) {
	hit, err := g.cat.Lookup(id)
	if err != nil {
		return nil, err
	}
	entry := hit.Entry
	// A plugin stored in the marketplace is checked where it lives, so that
	// errors name the file the user can fix: a refusal there comes before
	// any other error of this plugin. That load is made before anything
	// else only when a cached or seeded copy may answer instead of a fetch
	// (the entry has an integrity). A fetched copy of it holding every
	// entry of the plugin directory (Result.Omitted unset) loads as it
	// does, so once that copy loads the check is not made again; when
	// anything fails, it is made first and its refusal given.
	check := func() error { return nil }
	if entry.Source.Kind == plugin.SourceRelative && hit.Root != "" {
		if dir, derr := g.localDir(entry, hit.Root); derr == nil {
			check = func() error { // g.load loads dir once per graph
				if _, err := g.load(dir, entry); err != nil {
					return &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeManifestInvalid, Object: id.String(), Err: err,
						Hint: plugin.HintOf(err)}
				}
				return nil
			}
		}
	}
	defer func() {
		if err != nil {
			if cerr := check(); cerr != nil {
				err = cerr
			}
		}
	}()
	if entry.Integrity != "" || checkBeforeFetch {
		if err := check(); err != nil {
			return nil, err
		}
	}
	if v := hit.Version(); v != "" && !force {
		if _, err := plugin.SanitizeVersion(v); err == nil {
			cv, err := in.o.Cache.Ensure(ctx, cache.Request{ID: id, Version: v, Digest: entry.Integrity})
			if err == nil {
				in.progress("%s %s: using %s copy", id, v, cv.Origin)
				return &stagedVersion{v: cv}, nil
			}
			if !errors.Is(err, cache.ErrNotInstalled) {
				return nil, err
			}
		}
	}
	stage, err := in.o.Cache.StageDir(id, "stage")
	if err != nil {
		return nil, err
	}
	sv := &stagedVersion{stage: stage}
	ok := false
	defer func() {
		if !ok {
			sv.cleanup()
		}
	}()
	in.progress("%s: fetching %s", id, source.Describe(entry.Source))
	// The stage becomes the version directory itself: written read-only
	// and durable as it is fetched, it is renamed into place without a
	// second copy or a second pass over its files.
	req := source.Request{Plugin: id.String(), Source: entry.Source, MarketplaceDir: hit.Root, Dest: stage, Durable: true, ReadOnly: true}
	if entry.Source.Kind == plugin.SourceRelative && hit.Root != "" {
		req.Marketplace, _ = g.marketplaceAt(hit.Root) // nil on error: Fetch gives it
	}
	fr, err := in.o.Fetcher.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	p, _, err := plugin.Load(stage, entry)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeManifestInvalid, Object: id.String(), Err: err,
			Hint: "the fetched plugin is invalid; report it to the marketplace's owner (" + source.Describe(entry.Source) + ")"}
	}
	if fr.Omitted {
		if err := check(); err != nil {
			return nil, err
		}
	}
	// A plugin without a version is versioned as Claude Code versions it:
	// by the 12-digit commit of its git source, else of the git
	// marketplace it is stored in.
	version := plugin.VersionOf(plugin.VersionSources{Manifest: p.Manifest.Version, Entry: entry.Version, Fetched: fr.Version,
		SourceCommit: fr.Commit, MarketplaceCommit: hit.Known.Commit})
	if version == "" {
		version = plugin.UnknownVersion
	}
	if _, err := plugin.SanitizeVersion(version); err != nil {
		return nil, plugin.Errorf(plugin.LayerMaterialization, plugin.TypeManifestInvalid, id.String(),
			"ask the plugin's authors to use a plain version like 1.2.0", "version: %w", err)
	}
	// Ensure checks the entry's integrity while it seals the new version.
	want := entry.Integrity
	// A version dir is never replaced: the same version with other content
	// (a plugin changed without a version bump) gets its own dir. Only then
	// is the staged tree hashed here.
	if final, err := in.o.Cache.Dir(id, version); err == nil {
		if _, err := os.Lstat(final); err == nil {
			tree, err := trust.CheckIntegrity(id, version, entry.Integrity, stage)
			if err != nil {
				return nil, err
			}
			want = tree.Digest
			if have, err := trust.Digest(final); err == nil && have.Digest != tree.Digest {
				version = version + "+" + shortHash(tree.Digest)
			}
		}
	}
	cv, err := in.o.Cache.Ensure(ctx, cache.Request{ID: id, Version: version, Digest: want, Staged: stage, Known: knownHashes(fr.Written)})
	if err != nil {
		return nil, err
	}
	sv.stage = "" // Ensure took it: renamed into place, or removed
	sv.v, sv.commit = cv, fr.Commit
	if cv.Origin != "seed" { // a seed's copy may differ from what was fetched
		g.moved(p, cv.Path)
	}
	ok = true
	in.progress("%s %s: %s", id, version, cv.Path)
	return sv, nil
}

// knownHashes offers the hashes Fetch took of the files it wrote.
func knownHashes(written map[string]source.WrittenFile) trust.KnownHash {
	return func(path string, size int64) ([sha256.Size]byte, bool) {
		w, ok := written[path]
		return w.SHA256, ok && w.Size == size
	}
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// collect runs the cache's garbage collection opportunistically; it only
// removes versions past their grace period and never fails the operation.
func (in *Installer) collect(ctx context.Context) {
	if _, err := in.GC(ctx); err != nil {
		in.progress("warning: garbage collection: %v", err)
	}
}
