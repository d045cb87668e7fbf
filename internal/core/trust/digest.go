package trust

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/wharfhq/wharf/plugin"
)

// DigestPrefix starts every digest of the first (and only) digest version.
const DigestPrefix = "w1:"

// SignaturesFile is the detached signatures file, relative to a plugin root.
// The digest skips it, so signing a tree does not change its digest.
const SignaturesFile = ".claude-plugin/wharf-signatures.json"

// maxLinkHops bounds symlink resolution; a chain longer than this is treated
// as a loop, like the kernel's ELOOP.
const maxLinkHops = 40

// Reasons a tree cannot be digested. Each is wrapped in a *plugin.Error that
// names the offending path; callers branch with errors.Is.
var (
	ErrSymlinkEscape = errors.New("symlink resolves outside the plugin root")
	ErrSymlinkLoop   = errors.New("symlink loop")
	ErrSpecialFile   = errors.New("not a regular file, directory or symlink")
	ErrBadPath       = errors.New("path is not valid UTF-8 or contains a newline or carriage return")
	ErrChanged       = errors.New("file changed while it was being hashed")
)

// Kind is an entry's kind letter in the digest lines.
type Kind byte

// The kinds of FORMATS.md: a regular file, a regular file with the
// owner-execute bit, and a symlink.
const (
	KindFile    Kind = 'f'
	KindExec    Kind = 'x'
	KindSymlink Kind = 'l'
)

func (k Kind) String() string { return string(rune(k)) }

// Entry is one file or symlink of a digested tree. Size, ModTime, Ctime and
// Mode are what lstat said when the entry was hashed; they feed the
// fingerprint.
type Entry struct {
	Path    string // relative to the root, "/" separated
	Kind    Kind
	Hash    [sha256.Size]byte // of the content, or of the link target string
	Size    int64
	ModTime time.Time
	Ctime   int64 // inode change time, Unix nanoseconds; 0 where the platform has none
	Mode    fs.FileMode
}

// HexHash is the entry's hash as it appears in the digest line.
func (e Entry) HexHash() string { return hex.EncodeToString(e.Hash[:]) }

// Line is the entry's digest line, without the trailing newline.
func (e Entry) Line() string { return e.Kind.String() + " " + e.HexHash() + " " + e.Path }

// Tree is the result of Digest: the digest and the entries it covers, sorted
// bytewise by path. Dirs holds the directories walked (not part of the
// digest) so a fingerprint can be derived without a second walk.
type Tree struct {
	Root    string
	Digest  string
	Entries []Entry
	Dirs    []Entry
}

// Digest walks root and returns its canonical w1: digest (FORMATS.md) with
// the per-file entries. File contents are streamed into the hash, several
// files at a time, and the lines are assembled in canonical order.
func Digest(root string) (*Tree, error) { return DigestOmitting(root) }

// DigestOmitting is Digest of root without the entries (files or whole
// directories) at its top level named in omit: what another tool keeps in a
// plugin's directory beside the plugin, such as the lease directory
// Claude Code writes into each version of its plugin cache.
func DigestOmitting(root string, omit ...string) (*Tree, error) {
	w, err := walk(root, true, omit...)
	if err != nil {
		return nil, err
	}
	t := &Tree{Root: root, Entries: w.entries, Dirs: w.dirs}
	if err := hashFiles(root, t.Entries); err != nil {
		return nil, err
	}
	t.Digest = digestOf(t.Entries)
	return t, nil
}

// digestOf assembles the canonical lines of sorted entries and hashes them.
func digestOf(entries []Entry) string {
	h := sha256.New()
	var line []byte
	var hx [sha256.Size * 2]byte
	for i := range entries {
		e := &entries[i]
		hex.Encode(hx[:], e.Hash[:])
		line = append(line[:0], byte(e.Kind), ' ')
		line = append(line, hx[:]...)
		line = append(line, ' ')
		line = append(line, e.Path...)
		line = append(line, '\n')
		h.Write(line)
	}
	return DigestPrefix + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// ValidDigest reports whether s has the form of a w1: digest.
func ValidDigest(s string) bool {
	rest, ok := strings.CutPrefix(s, DigestPrefix)
	if !ok {
		return false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(rest)
	return err == nil && len(b) == sha256.Size
}

// walked is what a walk found, sorted bytewise by path.
type walked struct {
	entries []Entry
	dirs    []Entry
	omit    []string // top-level names left out
}

// walk lists every entry under root (never following symlinks), checks the
// rules of the digest and returns the entries sorted bytewise by path.
// Symlink targets are read and hashed here; regular files are only stat'ed.
func walk(root string, withDirs bool, omit ...string) (*walked, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, ioError(root, "", err)
	}
	if !st.IsDir() {
		return nil, treeError(root, "", fmt.Errorf("%s is not a directory", root))
	}
	w := &walked{omit: omit}
	if lst, err := os.Lstat(root); err == nil && lst.IsDir() {
		// The root's own mtime moves when an entry is added at the top.
		w.dirs = append(w.dirs, Entry{Path: ".", Size: lst.Size(), ModTime: lst.ModTime(), Mode: lst.Mode()})
	}
	if err := w.walkTree(root); err != nil {
		return nil, err
	}
	slices.SortFunc(w.entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(w.dirs, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	for i := range w.entries {
		e := &w.entries[i]
		if e.Kind != KindSymlink {
			continue
		}
		if err := checkLink(root, e.Path); err != nil {
			return nil, err
		}
	}
	if !withDirs {
		w.dirs = nil
	}
	return w, nil
}

func (w *walked) dir(root, rel string) error {
	abs := root
	if rel != "" {
		abs = filepath.Join(root, filepath.FromSlash(rel))
	}
	f, err := os.Open(abs)
	if err != nil {
		return ioError(root, rel, err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return ioError(root, rel, err)
	}
	for _, d := range ents {
		name := d.Name()
		p := name
		if rel != "" {
			p = rel + "/" + name
		} else if slices.Contains(w.omit, name) {
			continue
		}
		info, err := d.Info()
		if err != nil {
			return ioError(root, p, err)
		}
		mode := info.Mode()
		switch {
		case mode.IsDir():
			if p == ".git" {
				continue
			}
			w.dirs = append(w.dirs, Entry{Path: p, Size: info.Size(), ModTime: info.ModTime(), Mode: mode})
			if err := w.dir(root, p); err != nil {
				return err
			}
			continue
		default:
			if err := w.leaf(root, p, mode, info.Size(), info.ModTime(), ctimeOf(info), func() (string, error) {
				return os.Readlink(filepath.Join(abs, name))
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// leaf records the entry at p that is not a directory: a file, or a link
// whose target readlink reads; anything else is refused.
func (w *walked) leaf(root, p string, mode fs.FileMode, size int64, mtime time.Time, ctime int64, readlink func() (string, error)) error {
	switch {
	case mode.IsRegular():
		if p == SignaturesFile {
			return nil
		}
		if err := checkPath(root, p); err != nil {
			return err
		}
		k := KindFile
		if mode.Perm()&0o100 != 0 {
			k = KindExec
		}
		w.entries = append(w.entries, Entry{Path: p, Kind: k, Size: size, ModTime: mtime, Ctime: ctime, Mode: mode})
	case mode&fs.ModeSymlink != 0:
		if err := checkPath(root, p); err != nil {
			return err
		}
		target, err := readlink()
		if err != nil {
			return ioError(root, p, err)
		}
		w.entries = append(w.entries, Entry{Path: p, Kind: KindSymlink, Hash: sha256Sum([]byte(target)),
			Size: size, ModTime: mtime, Ctime: ctime, Mode: mode})
	default:
		return treeError(root, p, specialError(p, mode))
	}
	return nil
}

func specialError(p string, mode fs.FileMode) error {
	return fmt.Errorf("%s (%s): %w", p, mode.Type(), ErrSpecialFile)
}

func sha256Sum(b []byte) [sha256.Size]byte { return sha256.Sum256(b) }

func checkPath(root, p string) error {
	if !utf8.ValidString(p) || strings.ContainsAny(p, "\n\r") {
		return treeError(root, p, fmt.Errorf("%q: %w", p, ErrBadPath))
	}
	return nil
}

// checkLink resolves the symlink at rel the way the kernel would, following
// links found on the way but never leaving root, and fails if the target
// leaves root (absolute targets count as leaving it) or loops. Components
// that do not exist are resolved lexically: a dangling link inside the root
// is allowed.
func checkLink(root, rel string) error {
	target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return ioError(root, rel, err)
	}
	escape := func() error {
		return treeError(root, rel, fmt.Errorf("%s -> %s: %w", rel, target, ErrSymlinkEscape))
	}
	if filepath.IsAbs(target) || strings.HasPrefix(target, "/") {
		return escape()
	}
	var cur []string // resolved components, each an existing dir or a lexical name
	todo := append(strings.Split(path.Dir(rel), "/"), strings.Split(filepath.ToSlash(target), "/")...)
	hops := 0
	lexical := false // once a component is missing, nothing after it exists
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return escape()
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cur = append(cur, c)
		if lexical {
			continue
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.Join(cur...)))
		if err != nil {
			lexical = true
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			hops++
			if hops > maxLinkHops {
				return treeError(root, rel, fmt.Errorf("%s -> %s: %w", rel, target, ErrSymlinkLoop))
			}
			t, err := os.Readlink(filepath.Join(root, filepath.Join(cur...)))
			if err != nil {
				return ioError(root, rel, err)
			}
			if filepath.IsAbs(t) || strings.HasPrefix(t, "/") {
				return escape()
			}
			cur = cur[:len(cur)-1]
			todo = append(strings.Split(filepath.ToSlash(t), "/"), todo...)
			continue
		}
		if !fi.IsDir() && len(todo) > 0 {
			lexical = true // ENOTDIR for the real kernel; what follows is a name
		}
	}
	return nil
}

// hashFiles fills in the content hash of every regular file, with a bounded
// pool of workers. Order does not matter: each result lands in its own slot.
func hashFiles(root string, entries []Entry) error {
	var idx []int
	for i := range entries {
		if entries[i].Kind != KindSymlink {
			idx = append(idx, i)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 8, len(idx))
	if workers <= 1 {
		buf := make([]byte, 64<<10)
		for _, i := range idx {
			if err := hashFile(root, &entries[i], buf); err != nil {
				return err
			}
		}
		return nil
	}
	next := make(chan int)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	var stop sync.Once
	done := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for i := range next {
				if err := hashFile(root, &entries[i], buf); err != nil {
					errs[w] = err
					stop.Do(func() { close(done) })
					return
				}
			}
		}()
	}
feed:
	for _, i := range idx {
		select {
		case next <- i:
		case <-done:
			break feed
		}
	}
	close(next)
	wg.Wait()
	// Report the first failing path in canonical order, not the first to fail.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errPath(err) < errPath(first)) {
			first = err
		}
	}
	return first
}

func errPath(err error) string {
	var pe *plugin.Error
	if errors.As(err, &pe) {
		return pe.Object
	}
	return ""
}

// hashFile streams one regular file into sha256. It refuses to follow a
// symlink swapped in since the walk and checks the file is still regular.
func hashFile(root string, e *Entry, buf []byte) error {
	f, err := openNoFollow(filepath.Join(root, filepath.FromSlash(e.Path)))
	if err != nil {
		return ioError(root, e.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ioError(root, e.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return treeError(root, e.Path, fmt.Errorf("%s: %w", e.Path, ErrChanged))
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, onlyReader{f}, buf)
	if err != nil {
		return ioError(root, e.Path, err)
	}
	if n != e.Size {
		return treeError(root, e.Path, fmt.Errorf("%s: %w (size %d when listed, %d bytes read)", e.Path, ErrChanged, e.Size, n))
	}
	h.Sum(e.Hash[:0])
	return nil
}

// onlyReader hides *os.File's WriterTo so io.CopyBuffer uses our buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// Diff names the paths that differ between two trees: changed content, mode
// or kind, added and removed, in bytewise order. DiffDetail says which.
func Diff(expected, actual *Tree) []string {
	var out []string
	for _, c := range DiffDetail(expected, actual) {
		out = append(out, c.Path)
	}
	return out
}

// Change is one difference between two trees.
type Change struct {
	Path string
	What string // "modified", "mode", "added", "removed", "kind"
}

func (c Change) String() string { return c.Path + " (" + c.What + ")" }

// DiffDetail is Diff with the kind of each change.
func DiffDetail(expected, actual *Tree) []Change {
	var e, a []Entry
	if expected != nil {
		e = expected.Entries
	}
	if actual != nil {
		a = actual.Entries
	}
	return diffEntries(e, a)
}

func diffEntries(e, a []Entry) []Change {
	var out []Change
	i, j := 0, 0
	for i < len(e) || j < len(a) {
		switch {
		case j >= len(a) || (i < len(e) && e[i].Path < a[j].Path):
			out = append(out, Change{e[i].Path, "removed"})
			i++
		case i >= len(e) || a[j].Path < e[i].Path:
			out = append(out, Change{a[j].Path, "added"})
			j++
		default:
			x, y := e[i], a[j]
			switch {
			case x.Kind == y.Kind && x.Hash == y.Hash:
			case (x.Kind == KindSymlink) != (y.Kind == KindSymlink):
				out = append(out, Change{x.Path, "kind"})
			case x.Hash != y.Hash:
				out = append(out, Change{x.Path, "modified"})
			default:
				out = append(out, Change{x.Path, "mode"})
			}
			i++
			j++
		}
	}
	return out
}

func treeError(root, rel string, err error) error {
	obj := root
	if rel != "" {
		obj = filepath.Join(root, filepath.FromSlash(rel))
	}
	return &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: obj, Err: err,
		Hint: "a plugin tree may hold only regular files, directories and symlinks that stay inside it, with UTF-8 names"}
}

func ioError(root, rel string, err error) error {
	obj := root
	if rel != "" {
		obj = filepath.Join(root, filepath.FromSlash(rel))
	}
	typ := plugin.TypeTrustRejected
	if errors.Is(err, fs.ErrNotExist) {
		typ = plugin.TypeNotFound
	}
	return &plugin.Error{Layer: plugin.LayerTrust, Type: typ, Object: obj, Err: err}
}
