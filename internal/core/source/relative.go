package source

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
)

const relativeHint = `write the source as "./dir" inside the marketplace, without ".."`

// fetchRelative copies a directory of the marketplace clone. The path is
// hostile: it must stay inside the marketplace after resolving symlinks, and
// every symlink in the copy must resolve inside the plugin.
func (f *Fetcher) fetchRelative(req *Request, t *tree) (*Result, error) {
	if req.MarketplaceDir == "" {
		return nil, failf(req, "pass the marketplace clone directory", "%w: relative source without a marketplace directory", ErrUnsupported)
	}
	rel, err := CheckEntryPath(req.Source.Path)
	if err != nil {
		return nil, fail(req, relativeHint, err)
	}
	m := req.Marketplace
	if m == nil || m.Dir != req.MarketplaceDir {
		if m, err = ResolveMarketplace(req.MarketplaceDir); err != nil {
			return nil, failf(req, "run: wharf marketplace update", "marketplace directory: %w", err)
		}
	}
	mkt := m.Real
	src, done, err := f.copyRelativeAt(req, mkt, rel, t)
	if err != nil {
		return nil, err
	}
	if !done {
		if src, err = f.copyRelative(req, mkt, rel, t); err != nil {
			return nil, err
		}
	}
	return &Result{URL: src, Commit: m.Commit}, nil
}

// Marketplace is a marketplace directory resolved for the relative fetches
// from it.
type Marketplace struct {
	Dir string
	// Real is Dir resolved through its symlinks (filepath.EvalSymlinks).
	Real string
	// Commit is the commit checked out in the git work tree that holds
	// Real, or "" when there is none (Result.Commit of a relative fetch).
	Commit string
}

// ResolveMarketplace resolves dir as a relative fetch from it does. What it
// returns is what Fetch would find itself for as long as dir is neither
// moved nor checked out anew, as within one install.
func ResolveMarketplace(dir string) (*Marketplace, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	return &Marketplace{Dir: dir, Real: real, Commit: checkoutCommit(real)}, nil
}

// checkoutCommit returns the commit checked out in the git work tree that
// holds dir (dir or a parent of it), or "" when there is none. Claude Code
// versions a plugin without a version by it, for a marketplace added as a
// local directory as for one it cloned.
func checkoutCommit(dir string) string {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return ""
	}
	head, err := repo.Head()
	if err != nil {
		return ""
	}
	return head.Hash().String()
}

// maxDepthAt bounds the directory descriptors copyRelativeAt holds open
// at once (one per level); deeper directories are copied by path.
const maxDepthAt = 32

const offendingHint = "remove the offending entry from the plugin directory"

// copyRelative copies the plugin directory rel of mkt (the marketplace's
// real path) into t by path: the way on every system, and where
// copyRelativeAt leaves a tree to it. It returns the plugin directory's real
// path.
func (f *Fetcher) copyRelative(req *Request, mkt, rel string, t *tree) (string, error) {
	src, err := filepath.EvalSymlinks(filepath.Join(mkt, filepath.FromSlash(rel)))
	if err != nil {
		return "", failf(req, "check the plugin's source path in marketplace.json", "%w: %s does not exist in the marketplace", ErrNotFound, req.Source.Path)
	}
	if r, err := filepath.Rel(mkt, src); err != nil || r != "." && !filepath.IsLocal(r) {
		return "", failf(req, relativeHint, "%w: %s resolves outside the marketplace", ErrUnsafePath, req.Source.Path)
	}
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return "", failf(req, "point the source at the plugin's directory", "%w: %s is not a directory", ErrNotFound, req.Source.Path)
	}
	f.progressf("%s: copying %s\n", req.Plugin, req.Source.Path)
	if err := copyWalk(src, "", t); err != nil {
		return "", fail(req, offendingHint, err)
	}
	return src, nil
}

// copyWalk copies the entries below directory src into t, by path, as the
// entries below the tree's directory prefix ("" for the root: then a
// top-level .git is left out).
func copyWalk(src, prefix string, t *tree) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if r == "." {
			return nil
		}
		name := filepath.ToSlash(r)
		if prefix != "" {
			name = prefix + "/" + name
		} else if d.Name() == ".git" && !strings.Contains(name, "/") {
			t.omitted = true
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch typ := d.Type(); {
		case typ.IsDir():
			return t.mkdir(name)
		case typ&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return t.symlink(name, filepath.ToSlash(target))
		case typ.IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			fh, err := os.Open(p)
			if err != nil {
				return err
			}
			defer fh.Close()
			return t.file(name, fi.Mode()&0o100 != 0, fh)
		default:
			return fmt.Errorf("%w: %q is a %s, not a file, directory or symlink", ErrUnsupported, name, typ.Type())
		}
	})
}
