package trust

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wharfhq/wharf/plugin"
)

// FP is a stat-only fingerprint of a plugin tree, recorded at install and
// checked on the cache-only load path instead of re-hashing every file.
//
// It lists every directory (the root as ".") and every entry of the digest
// with size, modification time and mode. Checking it costs one lstat per
// recorded path and no directory reads: a file added to or removed from a
// directory changes that directory's mtime, and only then is the directory
// read to name what changed. A single hash of the stat list would be smaller
// but would need the directories read again to know what to stat, and could
// not say which file changed.
//
// Files and symlinks also record their inode change time (ctime), which no
// system call can set back: an edit that restores the size and the mtime
// (touch -r, cp --preserve) still moves it. A file whose size and mode match
// but whose times moved is re-hashed and compared with the recorded hash, so
// a touch, a chown or a restore from backup costs a re-hash of that file,
// not a false alarm. Only someone who can change the clock or write the
// block device defeats it, which is why `wharf verify` re-hashes everything.
type FP struct {
	Entries []FPEntry `json:"entries"`
}

// FPEntry is one recorded path. Hash is the hex content hash when the
// fingerprint was derived from a digested Tree; it is never checked on the
// fast path but lets a later full check name the file whose content changed.
type FPEntry struct {
	Path  string      `json:"path"`
	Kind  string      `json:"kind"` // "d", "f", "x" or "l"
	Size  int64       `json:"size"`
	Mtime int64       `json:"mtime"`           // Unix nanoseconds
	Ctime int64       `json:"ctime,omitempty"` // Unix nanoseconds; 0 (directories, old records) is not checked
	Mode  fs.FileMode `json:"mode"`
	Hash  string      `json:"hash,omitempty"`
}

// IsZero reports whether no fingerprint was recorded.
func (fp FP) IsZero() bool { return len(fp.Entries) == 0 }

// FingerprintError says which recorded paths no longer match the tree.
type FingerprintError struct {
	Root    string
	Changed []Change
}

func (e *FingerprintError) Error() string {
	return fmt.Sprintf("%s changed since it was installed: %s", e.Root, joinChanges(e.Changed))
}

// Paths names the changed paths.
func (e *FingerprintError) Paths() []string {
	out := make([]string, len(e.Changed))
	for i, c := range e.Changed {
		out[i] = c.Path
	}
	return out
}

func joinChanges(cs []Change) string {
	const max = 20
	var b strings.Builder
	for i, c := range cs {
		if i == max {
			fmt.Fprintf(&b, ", and %d more", len(cs)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.String())
	}
	return b.String()
}

// Fingerprint walks root reading only directory listings, stats and symlink
// targets (never file contents) and returns its fingerprint. It applies the
// same rules as Digest, so a tree Digest refuses is refused here too.
func Fingerprint(root string) (FP, error) {
	w, err := walk(root, true)
	if err != nil {
		return FP{}, err
	}
	return fingerprintOf(w.dirs, w.entries, false), nil
}

// Fingerprint derives the tree's fingerprint from the stats taken while it
// was digested, with content hashes, without walking it again.
func (t *Tree) Fingerprint() FP { return fingerprintOf(t.Dirs, t.Entries, true) }

func fingerprintOf(dirs, entries []Entry, withHash bool) FP {
	fp := FP{Entries: make([]FPEntry, 0, len(dirs)+len(entries))}
	for _, d := range dirs {
		fp.Entries = append(fp.Entries, FPEntry{Path: d.Path, Kind: "d", Size: d.Size, Mtime: d.ModTime.UnixNano(), Mode: d.Mode})
	}
	for _, e := range entries {
		fe := FPEntry{Path: e.Path, Kind: e.Kind.String(), Size: e.Size, Mtime: e.ModTime.UnixNano(), Ctime: e.Ctime, Mode: e.Mode}
		if withHash {
			fe.Hash = e.HexHash()
		}
		fp.Entries = append(fp.Entries, fe)
	}
	return fp
}

// Uncovered names what root holds that its w1: digest does not cover and
// that an installed tree therefore never has: a top-level .git directory.
// Installs drop it; one found later was added (a hook could run it, yet no
// digest, pin or signature would notice its content). The detached
// signatures file is expected and not listed.
func Uncovered(root string) []string {
	if fi, err := os.Lstat(filepath.Join(root, ".git")); err == nil && fi.IsDir() {
		return []string{".git"}
	}
	return nil
}

// CheckFingerprint stats every path recorded in fp under root and fails with
// a *plugin.Error (trust layer, trust-rejected) wrapping a *FingerprintError
// naming each changed, added or removed path, and anything Uncovered (an
// installed tree is checked: nothing in it may be outside its digest).
func CheckFingerprint(root string, fp FP) error {
	if fp.IsZero() {
		return &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: root,
			Err:  errors.New("no fingerprint was recorded for this tree"),
			Hint: "reinstall the plugin to record one"}
	}
	var st statBuf
	if err := st.open(root); err != nil {
		return ioError(root, "", err)
	}
	var bad []int
	for i := range fp.Entries {
		if !st.same(fp.Entries[i].Path, &fp.Entries[i]) {
			bad = append(bad, i)
		}
	}
	st.close()
	uncovered := Uncovered(root)
	if len(bad) == 0 && len(uncovered) == 0 {
		return nil
	}
	changes := explain(root, fp, bad)
	for _, p := range uncovered {
		if !slices.ContainsFunc(changes, func(c Change) bool { return c.Path == p }) {
			changes = append(changes, Change{p, "added"})
		}
	}
	sortChanges(changes)
	if len(changes) == 0 {
		// Only directory times moved (an entry created and removed, or a
		// skipped file such as the detached signatures written): the listing
		// is what was recorded.
		return nil
	}
	return &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: root,
		Err:  &FingerprintError{Root: root, Changed: changes},
		Hint: "run: wharf verify " + root + " (full re-hash); reinstall the plugin to restore it"}
}

// explain turns the indexes of mismatching entries into named changes; for a
// directory it compares the listing with the recorded children.
func explain(root string, fp FP, bad []int) []Change {
	var out []Change
	children := map[string]map[string]bool{}
	for _, e := range fp.Entries {
		if e.Path == "." {
			continue
		}
		dir := path.Dir(e.Path)
		if children[dir] == nil {
			children[dir] = map[string]bool{}
		}
		children[dir][path.Base(e.Path)] = true
	}
	for _, i := range bad {
		e := fp.Entries[i]
		abs := filepath.Join(root, filepath.FromSlash(e.Path))
		fi, err := os.Lstat(abs)
		if err != nil {
			out = append(out, Change{e.Path, "removed"})
			continue
		}
		if kindOf(fi.Mode()) != e.Kind {
			if e.Kind == "d" || kindOf(fi.Mode()) == "d" || e.Kind == "l" || kindOf(fi.Mode()) == "l" {
				out = append(out, Change{e.Path, "kind"})
			} else {
				out = append(out, Change{e.Path, "mode"})
			}
			continue
		}
		if e.Kind != "d" {
			switch {
			case fi.Mode() != e.Mode && fi.Size() == e.Size && fi.ModTime().UnixNano() == e.Mtime:
				out = append(out, Change{e.Path, "mode"})
			case fi.Mode() == e.Mode && fi.Size() == e.Size && sameContent(root, e):
				// Only its times moved (touch, chown, a restore): the
				// content is the one recorded.
			default:
				out = append(out, Change{e.Path, "modified"})
			}
			continue
		}
		ents, err := os.ReadDir(abs)
		if err != nil {
			out = append(out, Change{e.Path, "unreadable"})
			continue
		}
		for _, d := range ents {
			rel := d.Name()
			if e.Path != "." {
				rel = e.Path + "/" + d.Name()
			}
			if rel == SignaturesFile && d.Type().IsRegular() {
				continue
			}
			if !children[e.Path][d.Name()] {
				out = append(out, Change{rel, "added"})
			}
		}
	}
	sortChanges(out)
	return out
}

// sameContent re-hashes one recorded file or symlink and compares it with
// the hash recorded for it; without a recorded hash it reports false.
func sameContent(root string, e FPEntry) bool {
	if len(e.Hash) != 2*sha256.Size {
		return false
	}
	cur := Entry{Path: e.Path, Size: e.Size}
	if e.Kind == "l" {
		target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(e.Path)))
		if err != nil {
			return false
		}
		cur.Hash = sha256.Sum256([]byte(target))
	} else if err := hashFile(root, &cur, make([]byte, 64<<10)); err != nil {
		return false
	}
	return cur.HexHash() == e.Hash
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "d"
	case m&fs.ModeSymlink != 0:
		return "l"
	case m.IsRegular() && m.Perm()&0o100 != 0:
		return "x"
	case m.IsRegular():
		return "f"
	}
	return "?"
}

func sortChanges(cs []Change) {
	// insertion order is mostly sorted already; a simple stable sort suffices
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].Path < cs[j-1].Path; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// FPCheck is one tree to check with CheckFingerprints.
type FPCheck struct {
	Root string
	FP   FP
}

// CheckFingerprints checks many trees (the installed set at startup) on a
// bounded pool of GOMAXPROCS workers; errs[i] is CheckFingerprint's result
// for checks[i].
func CheckFingerprints(checks []FPCheck) (errs []error) {
	errs = make([]error, len(checks))
	workers := min(runtime.GOMAXPROCS(0), len(checks))
	if workers <= 1 {
		for i, c := range checks {
			errs[i] = CheckFingerprint(c.Root, c.FP)
		}
		return errs
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(checks) {
					return
				}
				errs[i] = CheckFingerprint(checks[i].Root, checks[i].FP)
			}
		}()
	}
	wg.Wait()
	return errs
}
