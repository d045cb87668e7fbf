package cache

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// DefaultGrace is how long an orphaned version is kept before GC removes it.
const DefaultGrace = 7 * 24 * time.Hour

// Sentinel errors, wrapped by the *plugin.Error values this package returns.
var (
	// ErrLocked: another wharf process holds $WHARF_HOME/.lock.
	ErrLocked = errors.New("cache is locked")
	// ErrInvalid: a plugin id, version or install path that cannot name a
	// cache directory.
	ErrInvalid = errors.New("invalid cache key")
	// ErrConflict: the version directory already holds different content.
	ErrConflict = errors.New("version already cached with different content")
	// ErrNotInstalled: the registry has no record for the plugin.
	ErrNotInstalled = errors.New("not installed")
	// ErrRecordCorrupt: the plugin's registry record does not decode.
	ErrRecordCorrupt = errors.New("installed registry record is damaged")
)

// Options configure New.
type Options struct {
	// Home is WHARF_HOME; required.
	Home string
	// Store holds the installed registry; required for the registry, GC
	// and orphan tracking.
	Store store.Store
	// SeedDirs are read-only directories laid out like cache/ (see
	// SeedDirsFromEnv).
	SeedDirs []string
	// Grace is how long an orphaned version is kept (default 7 days).
	Grace time.Duration
	// Now is the clock used to stamp records and orphans (default time.Now).
	Now func() time.Time
}

// Cache is one home's plugin cache. It is safe for concurrent use; writers
// serialize on the home's lock file.
type Cache struct {
	home  string
	root  string
	st    store.Store
	seeds []string
	grace time.Duration
	now   func() time.Time
}

// New returns the cache of opts.Home. It creates nothing until a write.
func New(opts Options) (*Cache, error) {
	if opts.Home == "" {
		return nil, errf(plugin.TypeSource, "WHARF_HOME", "set WHARF_HOME or pass a home directory", "%w: no home directory", ErrInvalid)
	}
	home, err := filepath.Abs(opts.Home)
	if err != nil {
		return nil, errf(plugin.TypeSource, opts.Home, "", "%w", err)
	}
	c := &Cache{home: home, root: layout.New(home).Cache(), st: opts.Store, grace: opts.Grace, now: opts.Now}
	if c.grace <= 0 {
		c.grace = DefaultGrace
	}
	if c.now == nil {
		c.now = time.Now
	}
	for _, s := range opts.SeedDirs {
		if s == "" {
			continue
		}
		a, err := filepath.Abs(s)
		if err != nil {
			return nil, errf(plugin.TypeSource, s, "fix WHARF_SEED_DIRS", "seed directory: %w", err)
		}
		c.seeds = append(c.seeds, a)
	}
	return c, nil
}

// SeedDirsFromEnv splits WHARF_SEED_DIRS (colon-separated).
func SeedDirsFromEnv() []string {
	var out []string
	for _, s := range filepath.SplitList(os.Getenv("WHARF_SEED_DIRS")) {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Home returns the home directory.
func (c *Cache) Home() string { return c.home }

// Root returns $WHARF_HOME/cache.
func (c *Cache) Root() string { return c.root }

// Dir returns the version directory of id at version, refusing names and
// versions that could not be one path element each.
func (c *Cache) Dir(id plugin.ID, version string) (string, error) {
	return versionDir(c.root, id, version)
}

// StageDir makes a new, empty temporary directory next to id's versions
// (the same filesystem, so renaming it into place is atomic), named so
// that GC and cleanups know which process owns it: ".tmp-<what>-<pid>-"
// and a random suffix. The caller removes it.
func (c *Cache) StageDir(id plugin.ID, what string) (string, error) {
	final, err := versionDir(c.root, id, "0")
	if err != nil {
		return "", err
	}
	parent := filepath.Dir(final)
	dir, err := mkdirTempIn(parent, tmpPrefix+what+"-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", errf(plugin.TypeSource, parent, "check that WHARF_HOME is writable", "%w", err)
	}
	return dir, nil
}

// RemoveStage removes a directory StageDir (or a fill) made, and the
// plugin and marketplace directories above it when that leaves them empty,
// so that a failed or interrupted install leaves the cache as it was. A
// concurrent fill that needs them again makes them again (mkdirTempIn
// retries).
func RemoveStage(dir string) {
	removeTree(dir)
	pluginDir := filepath.Dir(dir)
	if os.Remove(pluginDir) == nil {
		os.Remove(filepath.Dir(pluginDir))
	}
}

func versionDir(root string, id plugin.ID, version string) (string, error) {
	if err := plugin.ValidateName(id.Source); err != nil {
		return "", errf(plugin.TypeInvalidID, id.String(), "use a valid marketplace name", "%w: marketplace: %v", ErrInvalid, err)
	}
	if err := plugin.ValidateName(id.Name); err != nil {
		return "", errf(plugin.TypeInvalidID, id.String(), "use a valid plugin name", "%w: plugin name: %v", ErrInvalid, err)
	}
	v, err := plugin.SanitizeVersion(version)
	if err != nil {
		return "", errf(plugin.TypeManifestInvalid, id.String(), "fix the version in plugin.json or the marketplace entry",
			"%w: version: %v", ErrInvalid, err)
	}
	return filepath.Join(root, id.Source, id.Name, v), nil
}

// Version is a materialized plugin version.
type Version struct {
	ID      plugin.ID
	Version string
	Path    string
	Digest  string
	FP      trust.FP
	// Origin says where the content came from: "cache" (the version dir
	// already existed), "seed" (copied from a seed dir) or "fill".
	Origin string
	// Seed is the seed directory used, when Origin is "seed".
	Seed string
}

// Fill writes a plugin tree into dir, an empty directory. It must not keep
// dir or anything under it after returning.
type Fill func(ctx context.Context, dir string) error

// Request is one Ensure call.
type Request struct {
	ID      plugin.ID
	Version string
	// Digest is the expected w1: digest (a trust pin or the marketplace
	// entry's integrity); empty means "whatever the fill produced".
	Digest string
	Fill   Fill
	// Staged, in place of Fill, is a directory StageDir made next to the
	// version's directory and the caller filled: Ensure verifies it and
	// renames it into place instead of copying it into one of its own,
	// and removes it when it fails. A tree written durable and read-only
	// (source.Request Durable and ReadOnly) is taken as it is; any other
	// is sealed and fsynced here first, as a filled one is.
	Staged string
	// Known, with Staged, gives the content hash of each file of the
	// staged tree as its writer wrote it, so that the digest reads only
	// the files it does not know (trust.DigestKnown).
	Known trust.KnownHash
}

// Materialize fills a new version directory with fill and returns it; it
// does not consult seeds. See Ensure.
func (c *Cache) Materialize(ctx context.Context, id plugin.ID, version string, fill Fill) (*Version, error) {
	return c.ensure(ctx, Request{ID: id, Version: version, Fill: fill}, false)
}

// Ensure returns the version directory for req, producing it if needed, in
// this order: an existing version dir whose content has req.Digest; a seed
// directory's copy of the version whose content has req.Digest (never a seed
// when req.Digest is empty); req.Fill. A new
// tree is filled into a temporary sibling, fsynced, verified against
// req.Digest, made read-only and renamed into place. If the version dir
// appeared meanwhile with the same digest it is reused; with another digest
// the result is ErrConflict (a version dir is never replaced in place).
//
// Ensure does not touch the registry: call Put with the result.
func (c *Cache) Ensure(ctx context.Context, req Request) (*Version, error) {
	return c.ensure(ctx, req, true)
}

func (c *Cache) ensure(ctx context.Context, req Request, useSeeds bool) (*Version, error) {
	// keep is set once tmp (a staged tree or a new one) is in place;
	// until then, whatever the way out, it is removed.
	keep, tmp := false, req.Staged
	defer func() {
		if !keep && tmp != "" {
			RemoveStage(tmp)
		}
	}()
	final, err := c.Dir(req.ID, req.Version)
	if err != nil {
		return nil, err
	}
	if req.Digest != "" {
		if v := c.existing(req, final); v != nil {
			kept, err := c.claim(ctx, final)
			if err != nil {
				return nil, err
			}
			if kept {
				return v, nil
			}
			// GC removed it since: fill it again below.
		}
	}
	fill, origin, seed := req.Fill, "fill", ""
	if useSeeds && req.Staged == "" {
		if s := c.seedFor(req); s != "" {
			src := s
			fill = func(ctx context.Context, dir string) error {
				return copyTree(src, dir, plugin.ClaudeCacheBookkeeping...)
			}
			origin, seed = "seed", s
		}
	}
	if fill == nil && req.Staged == "" {
		return nil, errf(plugin.TypeNotFound, req.ID.String()+" "+req.Version, "fetch the plugin from its marketplace: wharf install "+req.ID.String(),
			"%w: version is not cached and no source was given", ErrNotInstalled)
	}
	parent := filepath.Dir(final)
	if _, err := cleanStaleTemps(parent); err != nil {
		return nil, errf(plugin.TypeSource, parent, "remove the .tmp-* directories by hand", "clean stale temporary dirs: %w", err)
	}
	var tree *trust.Tree
	if req.Staged != "" {
		if filepath.Dir(tmp) != parent || !strings.HasPrefix(filepath.Base(tmp), tmpPrefix) {
			bad := tmp
			tmp = "" // not ours to remove
			return nil, errf(plugin.TypeSource, bad, "stage the tree with Cache.StageDir", "%w: %s is not a staging directory of %s", ErrInvalid, bad, req.ID)
		}
	} else if tmp, err = mkdirTempIn(parent, tmpPrefix+filepath.Base(final)+"-"+strconv.Itoa(os.Getpid())+"-"); err != nil {
		return nil, errf(plugin.TypeSource, parent, "check that WHARF_HOME is writable", "%w", err)
	}
	if req.Staged != "" {
		if tree, err = c.takeStaged(req, tmp); err != nil {
			return nil, err
		}
	} else {
		if err := os.Chmod(tmp, 0o755); err != nil {
			return nil, errf(plugin.TypeSource, tmp, "", "%w", err)
		}
		if err := fill(ctx, tmp); err != nil {
			return nil, err
		}
		if tree, err = sealAndCheck(req, tmp); err != nil {
			return nil, err
		}
	}
	v := &Version{ID: req.ID, Version: req.Version, Path: final, Digest: tree.Digest, FP: tree.Fingerprint(), Origin: origin, Seed: seed}
	err = c.WithLock(ctx, func(ctx context.Context) error {
		if _, err := os.Lstat(final); err == nil {
			if err := dropUncovered(final); err != nil {
				return errf(plugin.TypeSource, final, "check WHARF_HOME permissions", "%w", err)
			}
			have, err := trust.Digest(final)
			if err != nil {
				return err
			}
			if have.Digest != tree.Digest {
				return errf(plugin.TypeConflict, req.ID.String()+" "+req.Version,
					"the source changed without a new version; ask the marketplace owner to bump the version, or run: wharf cache gc after uninstalling it",
					"%w: %s holds %s, the fetched tree is %s", ErrConflict, final, have.Digest, tree.Digest)
			}
			v.FP, v.Origin = have.Fingerprint(), "cache"
			return c.unmarkOrphan(final)
		}
		if err := atomicfile.RenameDir(tmp, final); err != nil {
			return errf(plugin.TypeSource, final, "", "install %s: %w", req.ID, err)
		}
		keep = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// sealAndCheck makes a filled tree what a version directory holds (nothing
// its digest does not cover, plain signatures), read-only and durable, and
// checks its digest against req.Digest.
func sealAndCheck(req Request, tmp string) (*trust.Tree, error) {
	// Whatever filled it (a source, a seed, an import), the version keeps
	// nothing its digest does not cover.
	if err := dropUncovered(tmp); err != nil {
		return nil, errf(plugin.TypeSource, tmp, "check the disk and WHARF_HOME permissions", "%w", err)
	}
	if err := plainSignatures(tmp); err != nil {
		return nil, errf(plugin.TypeSource, tmp, "check the disk and WHARF_HOME permissions", "%w", err)
	}
	if err := atomicfile.SealTree(tmp); err != nil {
		return nil, errf(plugin.TypeSource, tmp, "check the disk and WHARF_HOME permissions", "seal %s: %w", req.ID, err)
	}
	return trust.CheckIntegrity(req.ID, req.Version, req.Digest, tmp)
}

// takeStaged checks a staged tree. One its writer made read-only (and,
// by the contract of Request.Staged, durable), with nothing to drop or
// rewrite, is only digested: the digest's own stats show it is sealed.
// Any other is made writable again and goes the way of a filled tree.
func (c *Cache) takeStaged(req Request, tmp string) (*trust.Tree, error) {
	_, sigErr := os.Lstat(filepath.Join(tmp, filepath.FromSlash(trust.SignaturesFile)))
	if len(trust.Uncovered(tmp)) == 0 && isNotExist(sigErr) {
		tree, err := trust.CheckIntegrityKnown(req.ID, req.Version, req.Digest, tmp, req.Known)
		if err != nil || sealed(tree) {
			return tree, err
		}
	}
	if err := unsealDirs(tmp); err != nil {
		return nil, errf(plugin.TypeSource, tmp, "check the disk and WHARF_HOME permissions", "%w", err)
	}
	return sealAndCheck(req, tmp)
}

// sealed reports whether every directory and regular file of t was
// read-only when it was digested.
func sealed(t *trust.Tree) bool {
	for _, d := range t.Dirs {
		if d.Mode.Perm()&0o222 != 0 {
			return false
		}
	}
	for _, e := range t.Entries {
		if e.Kind != trust.KindSymlink && e.Mode.Perm()&0o222 != 0 {
			return false
		}
	}
	return true
}

// claim keeps a version directory that the caller is about to record from
// GC: under the lock, it checks that the directory is still there and drops
// its orphan mark, so that a GC running before the record is written counts
// the grace period from now instead of removing the directory (a version
// uninstalled long ago and installed again). It reports false when GC
// removed the directory first.
func (c *Cache) claim(ctx context.Context, dir string) (bool, error) {
	kept := false
	err := c.WithLock(ctx, func(ctx context.Context) error {
		if _, err := os.Lstat(dir); err != nil {
			return nil
		}
		kept = true
		return c.unmarkOrphan(dir)
	})
	return kept, err
}

// unmarkOrphan drops the orphan mark of a version directory (call it under
// the lock). A store write happens only when there is a mark.
func (c *Cache) unmarkOrphan(dir string) error {
	rel, ok := c.inCache(dir)
	if c.st == nil || !ok {
		return nil
	}
	marked := false
	if err := c.st.View(func(r store.Reader) error {
		_, err := r.Get(bucketOrphans, rel)
		marked = err == nil
		return nil
	}); err != nil {
		return err
	}
	if !marked {
		return nil
	}
	return c.st.Update(func(tx store.Tx) error { return tx.Delete(bucketOrphans, rel) })
}

// existing returns the version dir when it exists with req.Digest. What
// was added to it outside the digest (a .git directory) is removed first:
// the content the digest covers is then exactly the pinned one again.
func (c *Cache) existing(req Request, final string) *Version {
	if _, err := os.Lstat(final); err != nil {
		return nil
	}
	if err := dropUncovered(final); err != nil {
		return nil
	}
	t, err := trust.Digest(final)
	if err != nil || t.Digest != req.Digest {
		return nil
	}
	return &Version{ID: req.ID, Version: req.Version, Path: final, Digest: t.Digest, FP: t.Fingerprint(), Origin: "cache"}
}

// seedFor returns the first seed copy of the version whose content has
// req.Digest. Without an expected digest no seed is used: a seed is a copy
// of what a marketplace publishes, and only the digest the marketplace (or
// an earlier install's pin) names can show that it is one. Otherwise a seed
// directory, which the environment names, would decide the content of a
// plugin that policy allowed from its marketplace.
func (c *Cache) seedFor(req Request) string {
	if req.Digest == "" {
		return ""
	}
	for _, s := range c.seeds {
		dir, err := versionDir(s, req.ID, req.Version)
		if err != nil {
			return ""
		}
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		// A seed may be Claude Code's cache, which keeps its own
		// bookkeeping beside each version's files.
		t, err := trust.DigestOmitting(dir, plugin.ClaudeCacheBookkeeping...)
		if err != nil || t.Digest != req.Digest {
			continue
		}
		return dir
	}
	return ""
}

// inCache reports whether p is a version directory path under the cache and
// returns it relative to the cache root ("<mkt>/<plugin>/<version>").
func (c *Cache) inCache(p string) (string, bool) {
	rel, err := filepath.Rel(c.root, filepath.Clean(p))
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) != 3 {
		return "", false
	}
	if _, err := versionDir(c.root, plugin.ID{Source: parts[0], Name: parts[1]}, parts[2]); err != nil {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
