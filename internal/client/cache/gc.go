package cache

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// GCReport says what GC did.
type GCReport struct {
	// Removed lists version directories removed.
	Removed []string `json:"removed"`
	// Kept lists orphaned version directories that were kept, and why.
	Kept []Kept `json:"kept"`
	// Temps lists temporary directories of dead processes removed.
	Temps []string `json:"temps"`
	// StaleLeases counts lease files of dead processes removed.
	StaleLeases int `json:"staleLeases"`
	// CapabilitySets lists the kept capability sets removed because no
	// installed version can ask for them again (filled by the installer's
	// GC, which knows the marketplace entries).
	CapabilitySets []string `json:"capabilitySets,omitempty"`
}

// Kept is an orphan GC did not remove.
type Kept struct {
	Path   string    `json:"path"`
	Reason string    `json:"reason"` // "leased" or "grace"
	Since  time.Time `json:"since"`  // orphaned since
}

// GC removes orphaned version directories (not referenced by the registry)
// whose grace period has passed at now, unless a live process leases them.
// An orphan first seen by GC (e.g. left by a crash between rename and Put)
// starts its grace period at now. It also removes temporary directories and
// lease files of dead processes, and empty plugin and marketplace dirs.
func (c *Cache) GC(ctx context.Context, now time.Time) (*GCReport, error) {
	if err := c.needStore(); err != nil {
		return nil, err
	}
	rep := &GCReport{Removed: []string{}, Kept: []Kept{}, Temps: []string{}}
	err := c.WithLock(ctx, func(ctx context.Context) error {
		recs, broken, err := c.Scan()
		if err != nil {
			return err
		}
		// The versions of a plugin whose record is damaged may be the one
		// it points to: all of them stay until the record is repaired.
		damaged := map[string]bool{}
		for _, b := range broken {
			if b.ID.IsZero() {
				return errf(TypeRecordCorrupt, b.Key, "rebuild the registry from the cache first: wharf doctor --repair",
					"gc: the registry holds a damaged record under %q, so no version can be known unused: %w", b.Key, ErrRecordCorrupt)
			}
			damaged[filepath.Join(b.ID.Source, b.ID.Name)] = true
		}
		referenced := map[string]bool{}
		for _, r := range recs {
			referenced[filepath.Clean(r.InstallPath)] = true
		}
		before := countLeaseFiles(c.leaseDir())
		leases, err := c.Leases(true)
		if err != nil {
			return err
		}
		rep.StaleLeases = before - countLeaseFiles(c.leaseDir())
		leased := map[string]bool{}
		for _, l := range leases {
			for _, p := range l.Paths {
				leased[filepath.Clean(p)] = true
			}
		}
		orphans := map[string]time.Time{}
		err = c.st.View(func(r store.Reader) error {
			kvs, err := r.List(bucketOrphans, "")
			for _, kv := range kvs {
				var o orphan
				if json.Unmarshal(kv.Value, &o) == nil {
					orphans[kv.Key] = o.Since
				}
			}
			return err
		})
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		var mark, unmark []string
		mkts, err := os.ReadDir(c.root)
		if err != nil && !isNotExist(err) {
			return err
		}
		for _, m := range mkts {
			if !m.IsDir() {
				continue
			}
			mdir := filepath.Join(c.root, m.Name())
			plugins, err := os.ReadDir(mdir)
			if err != nil {
				return err
			}
			for _, p := range plugins {
				if !p.IsDir() {
					continue
				}
				pdir := filepath.Join(mdir, p.Name())
				temps, err := cleanStaleTemps(pdir)
				rep.Temps = append(rep.Temps, temps...)
				if err != nil {
					return err
				}
				if damaged[filepath.Join(m.Name(), p.Name())] {
					for o := range orphans {
						if strings.HasPrefix(o, m.Name()+"/"+p.Name()+"/") {
							seen[o] = true // keep its mark
						}
					}
					continue
				}
				versions, err := os.ReadDir(pdir)
				if err != nil {
					return err
				}
				for _, v := range versions {
					vdir := filepath.Join(pdir, v.Name())
					rel, ok := c.inCache(vdir)
					if !ok || !v.IsDir() {
						continue // a live temp dir, or something wharf did not write
					}
					seen[rel] = true
					if referenced[vdir] {
						if _, marked := orphans[rel]; marked {
							unmark = append(unmark, rel)
						}
						continue
					}
					since, marked := orphans[rel]
					if !marked {
						since = now
						mark = append(mark, rel)
					}
					switch {
					case leased[vdir]:
						rep.Kept = append(rep.Kept, Kept{Path: vdir, Reason: "leased", Since: since})
					case now.Sub(since) < c.grace:
						rep.Kept = append(rep.Kept, Kept{Path: vdir, Reason: "grace", Since: since})
					default:
						if err := removeTree(vdir); err != nil {
							return errf(plugin.TypeSource, vdir, "remove it by hand", "gc: %w", err)
						}
						rep.Removed = append(rep.Removed, vdir)
						unmark = append(unmark, rel)
					}
				}
				os.Remove(pdir) // only succeeds when empty
			}
			os.Remove(mdir)
		}
		for rel := range orphans {
			if !seen[rel] {
				unmark = append(unmark, rel)
			}
		}
		return c.st.Update(func(tx store.Tx) error {
			for _, rel := range unmark {
				if err := tx.Delete(bucketOrphans, rel); err != nil {
					return err
				}
			}
			b, _ := json.Marshal(orphan{Since: now})
			for _, rel := range mark {
				if err := tx.Put(bucketOrphans, rel, b); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(rep.Removed)
	return rep, nil
}

func countLeaseFiles(dir string) int {
	ents, _ := os.ReadDir(dir)
	return len(ents)
}
