package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// Store buckets owned by this package.
const (
	BucketInstalled = "installed"
	bucketOrphans   = "cache-orphans"
)

// Record is one installed plugin in the registry. Its JSON uses the field
// names of a Claude Code installed_plugins.json entry, plus id, digest and
// fingerprint (ignored by Claude Code). The registry stores it in a compact
// binary encoding (see recordMagic) and still reads records stored as JSON.
type Record struct {
	ID           plugin.ID `json:"id"`
	Version      string    `json:"version"`
	Scope        string    `json:"scope"`
	ProjectPath  string    `json:"projectPath,omitempty"`
	InstallPath  string    `json:"installPath"`
	GitCommitSha string    `json:"gitCommitSha,omitempty"`
	InstalledAt  time.Time `json:"installedAt"`
	LastUpdated  time.Time `json:"lastUpdated"`
	// Auto marks a plugin installed only as a dependency.
	Auto        bool     `json:"auto,omitempty"`
	Digest      string   `json:"digest,omitempty"`
	Fingerprint trust.FP `json:"fingerprint,omitzero"`
	// Source is the source the marketplace entry named when this version
	// was installed, which policy decides at every load
	// (blockedMarketplaces holds for a plugin's own repository); nil for a
	// record that did not keep it (an earlier wharf, a rebuilt registry).
	Source *plugin.Source `json:"source,omitempty"`
}

// Pin returns the trust pin the record carries.
func (r Record) Pin() trust.Pin {
	return trust.Pin{ID: r.ID, Version: r.Version, Digest: r.Digest, FP: r.Fingerprint}
}

// Scopes a record may have; nobody installs into managed.
var validScopes = map[string]bool{"user": true, "project": true, "local": true}

// RecordFor builds the record that makes v the installed version.
func RecordFor(v *Version, scope string) Record {
	return Record{ID: v.ID, Version: v.Version, Scope: scope, InstallPath: v.Path, Digest: v.Digest, Fingerprint: v.FP}
}

func (c *Cache) needStore() error {
	if c.st == nil {
		return errf(plugin.TypeSource, c.home, "open the state store before using the registry", "%w: no store configured", ErrInvalid)
	}
	return nil
}

// Put records rec as the installed version of rec.ID, under the lock. The
// install path must be the complete version directory of rec.ID and
// rec.Version in this cache. InstalledAt is kept from an earlier record and
// LastUpdated is set now. A version directory the plugin no longer uses
// becomes an orphan (collected by GC after the grace period).
func (c *Cache) Put(ctx context.Context, rec Record) error {
	return c.PutAll(ctx, []Record{rec})
}

// PutAll records several plugins in one registry transaction (all or none),
// under the lock, with the same rules as Put. An install of a closure uses it
// so that the registry never holds half of a closure.
func (c *Cache) PutAll(ctx context.Context, recs []Record) error {
	if err := c.needStore(); err != nil {
		return err
	}
	recs = append([]Record(nil), recs...)
	for i := range recs {
		rec := &recs[i]
		want, err := c.Dir(rec.ID, rec.Version)
		if err != nil {
			return err
		}
		if rec.InstallPath == "" {
			rec.InstallPath = want
		}
		if rec.InstallPath != want {
			return errf(plugin.TypeConflict, rec.ID.String(), "materialize the version first and record its path",
				"%w: installPath %s is not the cache directory %s", ErrInvalid, rec.InstallPath, want)
		}
		if rec.Scope == "" {
			rec.Scope = "user"
		}
		if !validScopes[rec.Scope] {
			return errf(plugin.TypeInvalidID, rec.ID.String(), "use scope user, project or local",
				"%w: scope %q", ErrInvalid, rec.Scope)
		}
	}
	return c.WithLock(ctx, func(ctx context.Context) error {
		for _, rec := range recs {
			if fi, err := os.Stat(rec.InstallPath); err != nil || !fi.IsDir() {
				return errf(plugin.TypeNotFound, rec.ID.String()+" "+rec.Version, "materialize the version before recording it",
					"%w: %s does not exist", ErrInvalid, rec.InstallPath)
			}
		}
		now := c.now().UTC()
		return c.st.Update(func(tx store.Tx) error {
			for _, rec := range recs {
				if err := c.putRecord(tx, rec, now); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

func (c *Cache) putRecord(tx store.Tx, rec Record, now time.Time) error {
	old, err := c.getRecord(tx, rec.ID)
	switch {
	case errors.Is(err, ErrNotInstalled):
	case errors.Is(err, ErrRecordCorrupt):
		// Writing a good record over a damaged one is its repair.
	case err != nil:
		return err
	default:
		if rec.InstalledAt.IsZero() {
			rec.InstalledAt = old.InstalledAt
		}
		if old.InstallPath != rec.InstallPath {
			if err := markOrphan(tx, c, old.InstallPath, now); err != nil {
				return err
			}
		}
	}
	if rec.InstalledAt.IsZero() {
		rec.InstalledAt = now
	}
	rec.LastUpdated = now
	if rel, ok := c.inCache(rec.InstallPath); ok {
		if err := tx.Delete(bucketOrphans, rel); err != nil {
			return err
		}
	}
	b, err := encodeRecord(c.storedForm(rec))
	if err != nil {
		return err
	}
	return tx.Put(BucketInstalled, rec.ID.String(), b)
}

// Get returns the record of id, or an error wrapping ErrNotInstalled.
func (c *Cache) Get(id plugin.ID) (Record, error) {
	if err := c.needStore(); err != nil {
		return Record{}, err
	}
	var rec Record
	err := c.st.View(func(r store.Reader) error {
		var err error
		rec, err = c.getRecord(r, id)
		return err
	})
	return rec, err
}

// TypeRecordCorrupt is the *plugin.Error type of a registry record that
// does not decode: that one plugin is failed, the rest of the registry is
// usable.
const TypeRecordCorrupt = "registry-record-corrupt"

// BrokenRecord is a registry record that does not decode. ID is the zero
// ID when even its key is not a plugin id.
type BrokenRecord struct {
	Key string
	ID  plugin.ID
	// Err is a *plugin.Error of type TypeRecordCorrupt naming the plugin
	// and the commands that repair it.
	Err error
}

// List returns every record that decodes, in id order. A record that does
// not decode is left out (see Scan): one damaged record must not make every
// command fail, and a plugin whose record cannot be read is not loaded.
func (c *Cache) List() ([]Record, error) {
	recs, _, err := c.Scan()
	return recs, err
}

// Scan returns every record that decodes, in id order, and the ones that
// do not.
func (c *Cache) Scan() ([]Record, []BrokenRecord, error) {
	if err := c.needStore(); err != nil {
		return nil, nil, err
	}
	var out []Record
	var broken []BrokenRecord
	err := c.st.View(func(r store.Reader) error {
		out, broken = nil, nil
		// decodeRecord copies what it keeps: the values need no copy.
		return store.Each(r, BucketInstalled, "", func(key string, v []byte) error {
			rec, err := decodeRecord(v)
			if err == nil && rec.ID.String() != key {
				err = fmt.Errorf("%w: the record of %s is stored under the key %q", errRecord, rec.ID, key)
			}
			if err != nil {
				broken = append(broken, brokenRecord(key, err))
				return nil
			}
			out = append(out, c.located(rec))
			return nil
		})
	})
	return out, broken, err
}

func brokenRecord(key string, err error) BrokenRecord {
	id, _ := plugin.ParseID(key)
	return BrokenRecord{Key: key, ID: id, Err: recordError(key, err)}
}

// recordError is the error of the registry record stored under key that
// does not decode.
func recordError(key string, err error) error {
	return errf(TypeRecordCorrupt, key,
		"reinstall it: wharf install "+key+" --force (or rebuild the registry from the cache: wharf doctor --repair)",
		"%w: %w", ErrRecordCorrupt, err)
}

// Delete removes id's record; its version directory becomes an orphan.
// Deleting a plugin that is not installed is not an error.
func (c *Cache) Delete(ctx context.Context, id plugin.ID) error {
	if err := c.needStore(); err != nil {
		return err
	}
	return c.WithLock(ctx, func(ctx context.Context) error {
		now := c.now().UTC()
		return c.st.Update(func(tx store.Tx) error {
			old, err := c.getRecord(tx, id)
			switch {
			case errors.Is(err, ErrNotInstalled):
				return nil
			case errors.Is(err, ErrRecordCorrupt):
				// Its install path is unknown: GC finds the version
				// directories unreferenced and starts their grace then.
			case err != nil:
				return err
			default:
				if err := markOrphan(tx, c, old.InstallPath, now); err != nil {
					return err
				}
			}
			return tx.Delete(BucketInstalled, id.String())
		})
	})
}

// storedForm is rec as the store keeps it: the install path relative to
// the home, "/"-separated ("cache/<marketplace>/<plugin>/<version>"), so
// that a home moved or copied elsewhere still finds its versions.
func (c *Cache) storedForm(rec Record) Record {
	if rel, err := filepath.Rel(c.home, rec.InstallPath); err == nil && filepath.IsLocal(rel) {
		rec.InstallPath = filepath.ToSlash(rel)
	}
	return rec
}

// located resolves the install path of a record as stored. The relative
// form is joined to the home. An absolute path (what earlier versions
// stored) outside this home that names the version directory of the
// record's plugin and version in a cache/ directory is read as this
// cache's directory of that version: it was the cache of the home that
// wrote the record, and the home has since moved. Any other path is kept
// as it is; CheckRecordPath reports it.
func (c *Cache) located(rec Record) Record {
	p := rec.InstallPath
	switch {
	case p == "":
	case !filepath.IsAbs(p) && !strings.HasPrefix(p, "/"):
		rec.InstallPath = filepath.Join(c.home, filepath.FromSlash(p))
	default:
		if rel, err := filepath.Rel(c.home, p); err == nil && filepath.IsLocal(rel) {
			return rec
		}
		want, err := c.Dir(rec.ID, rec.Version)
		if err != nil {
			return rec
		}
		version := filepath.Clean(filepath.FromSlash(p))
		pluginDir := filepath.Dir(version)
		mktDir := filepath.Dir(pluginDir)
		if filepath.Base(version) == filepath.Base(want) && filepath.Base(pluginDir) == rec.ID.Name &&
			filepath.Base(mktDir) == rec.ID.Source && filepath.Base(filepath.Dir(mktDir)) == filepath.Base(c.root) {
			rec.InstallPath = want
		}
	}
	return rec
}

// CheckRecordPath returns the error (a TypeRecordCorrupt *plugin.Error) of
// a record, as Scan or Get return it, whose install path is not this
// home's version directory of its plugin and version: a path outside the
// home would make the plugin's content whatever lies there.
func (c *Cache) CheckRecordPath(rec Record) error {
	want, err := c.Dir(rec.ID, rec.Version)
	if err != nil {
		return recordError(rec.ID.String(), err)
	}
	if rec.InstallPath != want {
		return recordError(rec.ID.String(), fmt.Errorf("%w: its install path %s is not this home's version directory %s", errRecord, rec.InstallPath, want))
	}
	return nil
}

func (c *Cache) getRecord(r store.Reader, id plugin.ID) (Record, error) {
	rec, err := getRecord(r, id)
	if err != nil {
		return rec, err
	}
	return c.located(rec), nil
}

func getRecord(r store.Reader, id plugin.ID) (Record, error) {
	b, err := r.Get(BucketInstalled, id.String())
	if errors.Is(err, store.ErrNotFound) {
		return Record{}, errf(plugin.TypeNotFound, id.String(), "install it: wharf install "+id.String(), "%w", ErrNotInstalled)
	}
	if err != nil {
		return Record{}, err
	}
	rec, err := decodeRecord(b)
	if err == nil && rec.ID != id {
		err = fmt.Errorf("%w: the record of %s is stored under the key %q", errRecord, rec.ID, id)
	}
	if err != nil {
		return Record{}, recordError(id.String(), err)
	}
	return rec, nil
}

type orphan struct {
	Since time.Time `json:"since"`
}

// markOrphan records when a version dir stopped being referenced, unless it
// is already marked (the earlier time wins).
func markOrphan(tx store.Tx, c *Cache, path string, now time.Time) error {
	rel, ok := c.inCache(path)
	if !ok {
		return nil
	}
	if _, err := tx.Get(bucketOrphans, rel); err == nil {
		return nil
	}
	b, _ := json.Marshal(orphan{Since: now})
	return tx.Put(bucketOrphans, rel, b)
}
