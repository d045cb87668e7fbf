package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// BucketOrphans is the store bucket of orphaned version directories
// (relative path → since when), exported for a rebuild of the store.
const BucketOrphans = bucketOrphans

// CheckRecord returns the error (a TypeRecordCorrupt *plugin.Error) of a
// registry record, as read from the installed bucket, that does not decode
// or is stored under another plugin's key; nil for a good record.
func CheckRecord(kv store.KV) error {
	rec, err := decodeRecord(kv.Value)
	if err == nil && rec.ID.String() != kv.Key {
		err = fmt.Errorf("%w: the record of %s is stored under the key %q", errRecord, rec.ID, kv.Key)
	}
	if err != nil {
		return recordError(kv.Key, err)
	}
	return nil
}

// CheckStoredRecord is CheckRecord plus CheckRecordPath: a record that
// decodes but whose install path (once located) is not this home's
// version directory is damaged too.
func (c *Cache) CheckStoredRecord(kv store.KV) error {
	if err := CheckRecord(kv); err != nil {
		return err
	}
	rec, _ := decodeRecord(kv.Value)
	return c.CheckRecordPath(c.located(rec))
}

// Restored is one plugin of a rebuilt registry.
type Restored struct {
	Record Record `json:"record"`
	// From is "registry" (the record read from the damaged store) or
	// "cache" (re-derived from a sealed version directory).
	From string `json:"from"`
}

// RebuildRegistry decides the registry of a store rebuilt after damage.
// installed is what could be read of the installed bucket; readable is
// false when the bucket could not be read at all, and then every plugin
// found in the cache is restored. orphans is what could be read of the
// orphan bucket: a version directory marked there was not in use and is
// not chosen while another version is.
//
// A record that decodes is kept as it was (its digest is the pin taken at
// install time). A plugin whose record does not decode, or every plugin
// when none could be read, is re-derived from its version directory: the
// newest one not marked orphaned, which must still be sealed (read-only,
// as the cache leaves it); its digest and fingerprint are computed from
// its content now, with scope user, as a manual install. problems says
// what could not be restored and what to do about it.
func (c *Cache) RebuildRegistry(installed []store.KV, readable bool, orphans []store.KV) (out []Restored, problems []string) {
	kept := map[plugin.ID]bool{}
	need := map[plugin.ID]bool{}
	for _, kv := range installed {
		if c.CheckStoredRecord(kv) == nil {
			rec, _ := decodeRecord(kv.Value)
			out = append(out, Restored{Record: c.located(rec), From: "registry"})
			kept[rec.ID] = true
			continue
		}
		id, perr := plugin.ParseID(kv.Key)
		if perr != nil {
			problems = append(problems, fmt.Sprintf("a damaged record under the key %q, not a plugin id, is dropped", kv.Key))
			continue
		}
		need[id] = true
	}
	versions, err := c.cachedVersions()
	if err != nil {
		problems = append(problems, fmt.Sprintf("reading the cache %s: %v", c.root, err))
	}
	if !readable {
		for id := range versions {
			need[id] = true
		}
	}
	orphaned := map[string]bool{}
	for _, kv := range orphans {
		orphaned[kv.Key] = true
	}
	ids := make([]plugin.ID, 0, len(need))
	for id := range need {
		if !kept[id] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	for _, id := range ids {
		rec, why := c.derive(id, versions[id], orphaned)
		if why != "" {
			problems = append(problems, fmt.Sprintf("%s: %s; reinstall it: wharf install %s", id, why, id))
			continue
		}
		out = append(out, Restored{Record: rec, From: "cache"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Record.ID.String() < out[j].Record.ID.String() })
	return out, problems
}

// cachedVersion is one version directory of the cache.
type cachedVersion struct {
	version string
	path    string
	rel     string
	mtime   int64
}

// cachedVersions lists the version directories of the cache by plugin,
// newest first (the directory's modification time is when its tree was
// written, just before it was renamed into place).
func (c *Cache) cachedVersions() (map[plugin.ID][]cachedVersion, error) {
	out := map[plugin.ID][]cachedVersion{}
	mkts, err := os.ReadDir(c.root)
	if err != nil {
		if isNotExist(err) {
			return out, nil
		}
		return out, err
	}
	for _, m := range mkts {
		if !m.IsDir() {
			continue
		}
		plugins, err := os.ReadDir(filepath.Join(c.root, m.Name()))
		if err != nil {
			return out, err
		}
		for _, p := range plugins {
			if !p.IsDir() {
				continue
			}
			pdir := filepath.Join(c.root, m.Name(), p.Name())
			vs, err := os.ReadDir(pdir)
			if err != nil {
				return out, err
			}
			id := plugin.ID{Source: m.Name(), Name: p.Name()}
			for _, v := range vs {
				if !v.IsDir() || strings.HasPrefix(v.Name(), tmpPrefix) {
					continue
				}
				path := filepath.Join(pdir, v.Name())
				rel, ok := c.inCache(path)
				if !ok {
					continue
				}
				fi, err := v.Info()
				if err != nil {
					continue
				}
				out[id] = append(out[id], cachedVersion{version: v.Name(), path: path, rel: rel, mtime: fi.ModTime().UnixNano()})
			}
		}
	}
	for id := range out {
		vs := out[id]
		sort.Slice(vs, func(i, j int) bool {
			if vs[i].mtime != vs[j].mtime {
				return vs[i].mtime > vs[j].mtime
			}
			return vs[i].version > vs[j].version
		})
	}
	return out, nil
}

// derive builds the record of id from the best of its version
// directories, or says why none will do.
func (c *Cache) derive(id plugin.ID, vs []cachedVersion, orphaned map[string]bool) (Record, string) {
	if len(vs) == 0 {
		return Record{}, "no version of it is in the cache"
	}
	cands := make([]cachedVersion, 0, len(vs))
	for _, v := range vs {
		if !orphaned[v.rel] {
			cands = append(cands, v)
		}
	}
	if len(cands) == 0 {
		cands = vs // every version was orphaned: the newest is the best guess
	}
	var why []string
	for _, v := range cands {
		want, err := c.Dir(id, v.version)
		if err != nil || want != v.path {
			why = append(why, v.version+": not a version directory name")
			continue
		}
		tree, err := trust.Digest(v.path)
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v", v.version, err))
			continue
		}
		fp := tree.Fingerprint()
		if w := writable(fp); w != "" {
			why = append(why, fmt.Sprintf("%s: not sealed (%s is writable), so its content cannot be trusted as installed", v.version, w))
			continue
		}
		return Record{ID: id, Version: v.version, Scope: "user", InstallPath: v.path, Digest: tree.Digest, Fingerprint: fp}, ""
	}
	return Record{}, strings.Join(why, "; ")
}

// writable returns the first entry of fp that has a write bit, or "".
func writable(fp trust.FP) string {
	for _, e := range fp.Entries {
		if e.Kind != "l" && e.Mode.Perm()&0o222 != 0 {
			return e.Path
		}
	}
	return ""
}
