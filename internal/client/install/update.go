package install

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// Updated is the outcome for one plugin of Update.
type Updated struct {
	ID      plugin.ID `json:"id"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Path    string    `json:"installPath"`
	Changed bool      `json:"changed"`
	Note    string    `json:"note,omitempty"`
	// Downgrade is set when the update went to a lower version (or one
	// that cannot be ordered), which only AllowDowngrade permits.
	Downgrade bool     `json:"downgrade,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// UpdateOptions tune Update.
type UpdateOptions struct {
	// AllowDowngrade lets an update go to a lower version than the one
	// installed, or to one whose order cannot be told (a version that is
	// not semver). Without it such an update is refused.
	AllowDowngrade bool
	// Accept takes a version that adds capabilities over the installed
	// one, on a client without a policy server, and records it
	// (admission.go). It never overrides a policy server's admissions.
	Accept bool
}

// TypeDowngrade is the error type of an update refused because it would
// go to a lower version, or to one that cannot be ordered.
const TypeDowngrade = "downgrade-refused"

// Update moves the given installed plugins (all of them when ids is empty)
// to the version their marketplace lists now. The new version goes into its
// own directory; the old one stays for running sessions until garbage
// collection. Agents see the new version after their next reload.
//
// An update never goes to a lower version unless opts.AllowDowngrade: a
// marketplace pointing back at an old, validly signed tree would otherwise
// roll the plugin back without a word. Versions are compared by semver
// precedence; when either is not a semantic version the order cannot be
// told, and the update is refused the same way: that plugin is kept (its
// Updated says why), the others are updated, and the first refusal is
// returned with the results. The new content's signatures are checked as
// on install.
func (in *Installer) Update(ctx context.Context, ids []plugin.ID, opts UpdateOptions) ([]Updated, error) {
	g, recs, err := in.graph()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
	}
	var out []Updated
	var refused error // the first update refused as a downgrade
	for _, id := range ids {
		old, ok := g.installed[id]
		if !ok {
			return out, plugin.Errorf(plugin.LayerIntent, plugin.TypeNotFound, id.String(), "install it first: wharf install "+id.String(),
				"%s is not installed", id)
		}
		if _, err := g.cat.Lookup(id); err != nil {
			out = append(out, Updated{ID: id, From: old.Version, To: old.Version, Path: old.InstallPath,
				Note: "no longer listed by its marketplace; kept as installed"})
			continue
		}
		plan, err := in.resolver(g).Closure(id)
		if err != nil {
			return out, err
		}
		if err := in.checkPolicy(ctx, g, plan.ToInstall()[len(plan.ToInstall())-1:], nil, nil); err != nil {
			return out, err
		}
		sv, err := in.materialize(ctx, g, id, true)
		if err != nil {
			return out, err
		}
		u := Updated{ID: id, From: old.Version, To: sv.v.Version, Path: sv.v.Path}
		if sv.v.Path == old.InstallPath && sv.v.Digest == old.Digest {
			u.Note = "already up to date"
			sv.cleanup()
			out = append(out, u)
			continue
		}
		if err := checkMove(id, old.Version, sv.v.Version, opts, &u); err != nil {
			// The others still update; the refusal is reported at the end.
			sv.cleanup()
			u.To, u.Path = old.Version, old.InstallPath
			u.Note = "kept: " + errors.Unwrap(err).Error()
			out = append(out, u)
			if refused == nil {
				refused = err
			}
			continue
		}
		_, keys, warns, err := in.verifiedSignatures(g, id, sv.v)
		if err != nil {
			sv.cleanup()
			return out, err
		}
		u.Warnings = warns
		contents, err := in.contentsOf(g, id, sv.v)
		if err != nil {
			sv.cleanup()
			return out, err
		}
		if err := in.checkPolicy(ctx, g, plan.ToInstall()[len(plan.ToInstall())-1:], map[plugin.ID][]string{id: keys}, contents); err != nil {
			sv.cleanup()
			return out, err
		}
		if err := in.checkRevoked(id, sv.v); err != nil {
			sv.cleanup()
			return out, err
		}
		if err := in.checkAdmitted(ctx, g, id, &old, sv.v, opts.Accept); err != nil {
			// Held or not accepted: the installed version stays, the
			// others still update, the refusal is reported at the end.
			sv.cleanup()
			var pe *plugin.Error
			if !errors.As(err, &pe) {
				return out, err
			}
			u.To, u.Path = old.Version, old.InstallPath
			u.Note = "kept: " + pe.Err.Error()
			out = append(out, u)
			if refused == nil {
				refused = err
			}
			continue
		}
		err = in.o.Cache.WithLock(ctx, func(ctx context.Context) error {
			cur, err := in.o.Cache.Get(id)
			if err != nil {
				return err
			}
			rec := cache.RecordFor(sv.v, cur.Scope)
			rec.Auto, rec.ProjectPath, rec.GitCommitSha = cur.Auto, cur.ProjectPath, sv.commit
			rec.Source = entrySource(g, id)
			return in.o.Cache.Put(ctx, rec)
		})
		sv.cleanup()
		if err != nil {
			return out, err
		}
		u.Changed = true
		u.Note = "reload running agents to use the new version"
		if u.Downgrade {
			u.Note = "downgraded as allowed by --allow-downgrade; " + u.Note
		}
		out = append(out, u)
	}
	in.collect(ctx)
	return out, refused
}

// GC removes orphaned versions past their grace period, and the kept
// capability sets no installed version can ask for again.
func (in *Installer) GC(ctx context.Context) (*cache.GCReport, error) {
	rep, err := in.o.Cache.GC(ctx, in.o.Now())
	if err != nil {
		return rep, err
	}
	rep.CapabilitySets, err = in.retainContents(ctx)
	return rep, err
}

// retainContents removes the kept capability sets of versions and
// marketplace entries no installed plugin has any more, under the home's
// lock (load.Contents.Retain).
func (in *Installer) retainContents(ctx context.Context) ([]string, error) {
	var removed []string
	err := in.o.Cache.WithLock(ctx, func(context.Context) error {
		g, _, err := in.graph()
		if err != nil {
			return err
		}
		recs, _, err := in.o.Cache.Scan()
		if err != nil {
			return err
		}
		removed, err = in.contents.Retain(recs, func(id plugin.ID) *plugin.Entry { e, _ := g.entry(id); return e })
		return err
	})
	return removed, err
}

// checkMove refuses an update from one version to a lower one, or to one
// that cannot be ordered, unless opts allow it; then u is marked.
func checkMove(id plugin.ID, from, to string, opts UpdateOptions, u *Updated) error {
	var why string
	switch compareVersions(from, to) {
	case moveSame, moveUp:
		return nil
	case moveUnordered:
		// Neither side is a semantic version (commit-derived versions of
		// versionless plugins, dist-tags): there is no order to go down in,
		// and refusing would leave such plugins with no update at all.
		if !isSemver(from) && !isSemver(to) {
			return nil
		}
		why = fmt.Sprintf("cannot tell whether %s is newer than the installed %s: only one of them is a semantic version (MAJOR.MINOR.PATCH)", to, from)
	default:
		why = fmt.Sprintf("%s is lower than the installed %s: the marketplace now lists an older version", to, from)
	}
	if opts.AllowDowngrade {
		u.Downgrade = true
		return nil
	}
	return &plugin.Error{Layer: plugin.LayerTrust, Type: TypeDowngrade, Object: id.String(), Err: fmt.Errorf("update refused: %s", why),
		Hint: "an older version may bring back what a newer one fixed; if you mean it, run: wharf update " + id.String() + " --allow-downgrade"}
}

// Outdated is what Update would do for one installed plugin, judged from the
// marketplace copies on disk without fetching any plugin.
type Outdated struct {
	ID        plugin.ID `json:"id"`
	Installed string    `json:"installed"`
	// Available is the version the marketplace lists now ("" when it lists
	// none and the content cannot be compared without fetching).
	Available string `json:"available,omitempty"`
	// Status is "update" (update would install another version), "current",
	// "delisted" (no longer listed; update keeps it) or "unknown" (only a
	// fetch can tell: the marketplace names no version).
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
}

// Outdated statuses.
const (
	OutdatedUpdate   = "update"
	OutdatedCurrent  = "current"
	OutdatedDelisted = "delisted"
	OutdatedUnknown  = "unknown"
)

// Outdated reports, for the given installed plugins (all when ids is empty),
// what Update would do. It changes nothing and fetches nothing: a plugin
// stored in its marketplace is compared by content digest, others by the
// version or commit their entry names.
func (in *Installer) Outdated(ids []plugin.ID) ([]Outdated, error) {
	g, recs, err := in.graph()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
	}
	out := []Outdated{}
	for _, id := range ids {
		rec, ok := g.installed[id]
		if !ok {
			return nil, plugin.Errorf(plugin.LayerIntent, plugin.TypeNotFound, id.String(), "install it first: wharf install "+id.String(),
				"%s is not installed", id)
		}
		out = append(out, outdatedOf(g, rec))
	}
	return out, nil
}

func outdatedOf(g *graph, rec cache.Record) Outdated {
	o := Outdated{ID: rec.ID, Installed: rec.Version}
	hit, err := g.cat.Lookup(rec.ID)
	if err != nil {
		o.Status, o.Note = OutdatedDelisted, "no longer listed by its marketplace; update keeps it"
		return o
	}
	o.Available = hit.Version()
	baseVersion := rec.Version
	if i := strings.IndexByte(baseVersion, '+'); i > 0 {
		baseVersion = baseVersion[:i]
	}
	// A plugin stored in the marketplace: its content decides.
	if hit.Entry.Source.Kind == plugin.SourceRelative && hit.Root != "" {
		if dir, err := g.localDir(hit.Entry, hit.Root); err == nil {
			if tree, err := trust.Digest(dir); err == nil && rec.Digest != "" {
				if tree.Digest == rec.Digest {
					o.Status = OutdatedCurrent
					return o
				}
				o.Status = OutdatedUpdate
				if o.Available == "" || o.Available == baseVersion {
					o.Note = "the plugin's files changed in its marketplace"
				}
				return o
			}
		}
	}
	if sha := hit.Entry.Source.SHA; sha != "" && rec.GitCommitSha != "" {
		if strings.HasPrefix(rec.GitCommitSha, sha) || strings.HasPrefix(sha, rec.GitCommitSha) {
			o.Status = OutdatedCurrent
		} else {
			o.Status, o.Note = OutdatedUpdate, "the marketplace pins commit "+sha
		}
		return o
	}
	switch {
	case o.Available == "":
		o.Status, o.Note = OutdatedUnknown, "the marketplace names no version; wharf update fetches it to compare"
	case o.Available == baseVersion:
		o.Status = OutdatedCurrent
	default:
		o.Status = OutdatedUpdate
	}
	return o
}

// MarketplacesOf names, sorted, the marketplaces the given plugins come
// from; every installed plugin's when ids is empty. Update refreshes these
// before it compares versions.
func (in *Installer) MarketplacesOf(ids []plugin.ID) ([]string, error) {
	if len(ids) == 0 {
		recs, err := in.o.Cache.List()
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
	}
	seen := map[string]bool{}
	var names []string
	for _, id := range ids {
		if !seen[id.Source] {
			seen[id.Source] = true
			names = append(names, id.Source)
		}
	}
	sort.Strings(names)
	return names, nil
}

// InstalledIDs lists the installed plugins, in registry order.
func (in *Installer) InstalledIDs() ([]plugin.ID, error) {
	recs, err := in.o.Cache.List()
	if err != nil {
		return nil, err
	}
	ids := make([]plugin.ID, 0, len(recs))
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	return ids, nil
}
