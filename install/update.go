package install

import (
	"context"

	"github.com/wharfhq/wharf/cache"
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
}

// Update moves the given installed plugins (all of them when ids is empty)
// to the version their marketplace lists now. The new version goes into its
// own directory; the old one stays for running sessions until garbage
// collection. Agents see the new version after their next reload.
func (in *Installer) Update(ctx context.Context, ids []plugin.ID) ([]Updated, error) {
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
	for _, id := range ids {
		old, ok := g.installed[id]
		if !ok {
			return out, plugin.Errorf(plugin.LayerMaterialization, plugin.TypeNotFound, id.String(), "install it first: wharf install "+id.String(),
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
		if err := in.checkPolicy(ctx, g, plan.ToInstall()[len(plan.ToInstall())-1:], nil); err != nil {
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
		err = in.o.Cache.WithLock(ctx, func(ctx context.Context) error {
			cur, err := in.o.Cache.Get(id)
			if err != nil {
				return err
			}
			rec := cache.RecordFor(sv.v, cur.Scope)
			rec.Auto, rec.ProjectPath, rec.GitCommitSha = cur.Auto, cur.ProjectPath, sv.commit
			return in.o.Cache.Put(ctx, rec)
		})
		sv.cleanup()
		if err != nil {
			return out, err
		}
		u.Changed = true
		u.Note = "reload running agents to use the new version"
		out = append(out, u)
	}
	in.collect(ctx)
	return out, nil
}

// GC removes orphaned versions past their grace period.
func (in *Installer) GC(ctx context.Context) (*cache.GCReport, error) {
	return in.o.Cache.GC(ctx, in.o.Now())
}
