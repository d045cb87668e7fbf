package trust

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A fixture tree is a txtar archive; git keeps neither modes, mtimes, empty
// directories nor (reliably) line ends, so the section name says them:
//
//	-- path --            regular file, mode 0644
//	-- path mode=0755 --  regular file with that mode
//	-- path crlf --       the content's line ends become CR LF
//	-- path -> target --  symlink (content ignored)
//	-- path/ --           empty directory
//
// The comment holds "digest: w1:..." for the golden digest.
type fixtureEntry struct {
	path, target string
	mode         os.FileMode
	dir, link    bool
	data         []byte
}

func parseFixture(t testing.TB, file string) (entries []fixtureEntry, golden string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ar := parseTxtar(data)
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		if d, ok := strings.CutPrefix(line, "digest: "); ok {
			golden = strings.TrimSpace(d)
		}
	}
	for _, f := range ar.Files {
		e := fixtureEntry{mode: 0o644, data: f.Data}
		name := f.Name
		if p, tgt, ok := strings.Cut(name, " -> "); ok {
			e.path, e.target, e.link = p, tgt, true
			entries = append(entries, e)
			continue
		}
		fields := strings.Fields(name)
		e.path = fields[0]
		for _, opt := range fields[1:] {
			switch {
			case opt == "crlf":
				e.data = bytes.ReplaceAll(e.data, []byte("\n"), []byte("\r\n"))
			case strings.HasPrefix(opt, "mode="):
				m, err := strconv.ParseUint(strings.TrimPrefix(opt, "mode="), 8, 32)
				if err != nil {
					t.Fatalf("%s: bad %q", file, opt)
				}
				e.mode = os.FileMode(m)
			default:
				t.Fatalf("%s: unknown option %q in %q", file, opt, name)
			}
		}
		if strings.HasSuffix(e.path, "/") {
			e.path, e.dir = strings.TrimSuffix(e.path, "/"), true
		}
		entries = append(entries, e)
	}
	return entries, golden
}

type buildOpts struct {
	reverse bool  // create entries in reverse order
	seed    int64 // shuffles mtimes; 0 keeps a fixed old mtime
}

// buildTree materializes entries under dir with explicit modes (independent
// of the umask) and old mtimes, so later edits always move the mtime.
func buildTree(t testing.TB, dir string, entries []fixtureEntry, o buildOpts) {
	t.Helper()
	es := slices.Clone(entries)
	if o.reverse {
		slices.Reverse(es)
	}
	rng := rand.New(rand.NewPCG(uint64(o.seed), 7))
	for _, e := range es {
		p := filepath.Join(dir, filepath.FromSlash(e.path))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		switch {
		case e.dir:
			must(t, os.MkdirAll(p, 0o755))
		case e.link:
			must(t, os.Symlink(e.target, p))
		default:
			must(t, os.WriteFile(p, e.data, 0o600))
			must(t, os.Chmod(p, e.mode))
			mt := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
			if o.seed != 0 {
				mt = mt.Add(time.Duration(rng.Int64N(int64(1000 * time.Hour))))
			}
			must(t, os.Chtimes(p, mt, mt))
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeFile writes a file (creating parents) with an explicit mode.
func writeFile(t testing.TB, root, rel, data string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(data), 0o600))
	must(t, os.Chmod(p, mode))
}

// makePlugin writes a small plugin of n files and returns its root.
func makePlugin(t testing.TB, root string, n int) string {
	t.Helper()
	writeFile(t, root, ".claude-plugin/plugin.json", `{"name":"p","version":"1.0.0"}`, 0o644)
	writeFile(t, root, "bin/run", "#!/bin/sh\necho run\n", 0o755)
	for i := range n - 2 {
		writeFile(t, root, fmt.Sprintf("commands/c%02d.md", i), fmt.Sprintf("---\ndescription: c%d\n---\nbody %d\n", i, i), 0o644)
	}
	must(t, os.Symlink("bin/run", filepath.Join(root, "run")))
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, d := range []string{".claude-plugin", "bin", "commands", "."} {
		must(t, os.Chtimes(filepath.Join(root, d), old, old))
	}
	return root
}

type txtarFile struct {
	Name string
	Data []byte
}

type txtarArchive struct {
	Comment []byte
	Files   []txtarFile
}

// parseTxtar reads the txtar format (golang.org/x/tools/txtar): a comment,
// then files introduced by "-- name --" lines.
func parseTxtar(data []byte) txtarArchive {
	var ar txtarArchive
	cur := &ar.Comment
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		if name, ok := bytes.CutPrefix(line, []byte("-- ")); ok && bytes.HasSuffix(name, []byte(" --")) {
			ar.Files = append(ar.Files, txtarFile{Name: string(bytes.TrimSpace(bytes.TrimSuffix(name, []byte(" --"))))})
			cur = &ar.Files[len(ar.Files)-1].Data
			continue
		}
		*cur = append(append(*cur, line...), '\n')
	}
	return ar
}
