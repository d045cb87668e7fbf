package cache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/wharfhq/wharf/internal/core/trust"
)

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeTree removes a (possibly read-only) tree: directories are made
// writable first, without following symlinks.
func removeTree(root string) error {
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(root)
}

// unsealDirs makes every directory of a tree writable again (0755),
// without following symlinks.
func unsealDirs(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return nil
	})
}

// dropUncovered removes from a version tree what its w1: digest does not
// cover (trust.Uncovered: a top-level .git directory), so that nothing in
// an installed tree is outside what its pin and signatures vouch for. The
// directory keeps its mode.
func dropUncovered(dir string) error {
	un := trust.Uncovered(dir)
	if len(un) == 0 {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	for _, u := range un {
		if err := removeTree(filepath.Join(dir, u)); err != nil {
			return err
		}
	}
	if err := os.Chmod(dir, fi.Mode().Perm()); err != nil {
		return err
	}
	return syncPath(dir)
}

// plainSignatures keeps the detached signatures file of a new version (the
// one file of it the digest does not cover) as data only: a file that does
// not parse as a signatures list (a script, a symlink) is removed, and one
// that does is written again in wharf's own encoding with only the
// signatures whose key id and value are plain tokens (hex, base64). Whatever
// else the file held, nothing vouched for it, yet a hook could run it.
func plainSignatures(dir string) error {
	p := filepath.Join(dir, filepath.FromSlash(trust.SignaturesFile))
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	sigs, err := trust.ReadSignatures(dir)
	if err != nil {
		return os.RemoveAll(p)
	}
	kept := sigs[:0]
	for _, s := range sigs {
		if plainToken(s.KeyID) && plainToken(s.Sig) {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return os.Remove(p)
	}
	return trust.WriteSignatures(dir, kept)
}

// plainToken reports whether s is a short run of the characters of hex and
// base64 (and of key ids' separators): nothing a shell would expand.
func plainToken(s string) bool {
	if s == "" || len(s) > 8192 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("+/=_.:-", c) >= 0) {
			return false
		}
	}
	return true
}

// copyTree copies a seed version into dst (an empty directory): regular
// files with their exec bit, directories, and symlinks as they are (the
// digest check that follows refuses one that leaves the tree), leaving out
// the top-level entries named in omit.
func copyTree(src, dst string, omit ...string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if slices.Contains(omit, rel) {
			// Left out, with everything under it.
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		out := filepath.Join(dst, rel)
		switch t := d.Type(); {
		case t.IsDir():
			return os.Mkdir(out, 0o755)
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case t.IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			mode := fs.FileMode(0o644)
			if fi.Mode()&0o100 != 0 {
				mode = 0o755
			}
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			w, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(w, in)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			return os.Chmod(out, mode)
		default:
			return fmt.Errorf("seed %s: %s is not a file, directory or symlink", src, rel)
		}
	})
}

const tmpPrefix = ".tmp-"

// tmpOwner parses the PID out of ".tmp-<version>-<pid>-<random>".
func tmpOwner(name string) (int, bool) {
	if !strings.HasPrefix(name, tmpPrefix) {
		return 0, false
	}
	rest := name[len(tmpPrefix):]
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return 0, false
	}
	rest = rest[:i]
	j := strings.LastIndexByte(rest, '-')
	if j < 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(rest[j+1:])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// cleanStaleTemps removes temporary version dirs in parent whose owning
// process is gone (a crash or kill during a fill) and returns their names.
func cleanStaleTemps(parent string) ([]string, error) {
	ents, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		pid, ok := tmpOwner(e.Name())
		if !ok || pidAlive(pid) {
			continue
		}
		if err := removeTree(filepath.Join(parent, e.Name())); err != nil {
			return removed, err
		}
		removed = append(removed, filepath.Join(parent, e.Name()))
	}
	return removed, nil
}

// mkdirTempIn makes a temporary directory in dir, making dir (and its
// parents) first. GC in another process removes the plugin and marketplace
// directories it finds empty; when it does so between the two steps, they
// are tried again.
func mkdirTempIn(dir, pattern string) (string, error) {
	var err error
	for range 20 {
		if err = os.MkdirAll(dir, 0o755); err == nil {
			var tmp string
			if tmp, err = os.MkdirTemp(dir, pattern); err == nil {
				return tmp, nil
			}
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", err
}
