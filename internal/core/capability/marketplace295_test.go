package capability

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
	"github.com/wharfhq/wharf/plugin"
)

// build295 writes under dst the marketplace bench/capability.sh times:
// n plugins named p000, p001..., cycling through every relative plugin of
// the real marketplaces (each copied with its entry, .git left out).
func build295(t *testing.T, realworld, dst string, n int) {
	t.Helper()
	type src struct {
		dir   string
		entry json.RawMessage
	}
	var srcs []src
	dirs, err := os.ReadDir(realworld)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		root := filepath.Join(realworld, d.Name())
		m, _, err := plugin.ReadMarketplace(root)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(root, ".claude-plugin", "marketplace.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Plugins []json.RawMessage `json:"plugins"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for i := range m.Plugins {
			e := &m.Plugins[i]
			if e.Source.Kind != plugin.SourceRelative {
				continue
			}
			dir, err := e.LocalDir(root)
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, src{dir, doc.Plugins[i]})
		}
	}
	var entries []map[string]any
	for i := 0; i < n; i++ {
		s := srcs[i%len(srcs)]
		name := fmt.Sprintf("p%03d", i)
		to := filepath.Join(dst, "plugins", name)
		err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(s.dir, p)
			if d.IsDir() {
				if d.Name() == ".git" {
					return filepath.SkipDir
				}
				return os.MkdirAll(filepath.Join(to, rel), 0o755)
			}
			if !d.Type().IsRegular() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(to, rel), data, fi.Mode().Perm())
		})
		if err != nil {
			t.Fatal(err)
		}
		var e map[string]any
		if err := json.Unmarshal(s.entry, &e); err != nil {
			t.Fatal(err)
		}
		e["name"], e["source"] = name, "./plugins/"+name
		entries = append(entries, e)
	}
	mk, _ := json.MarshalIndent(map[string]any{"name": "bench", "owner": map[string]string{"name": "bench"}, "plugins": entries}, "", " ")
	if err := os.MkdirAll(filepath.Join(dst, ".claude-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, ".claude-plugin", "marketplace.json"), mk, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMarketplace295Golden: the capability set and findings of every
// plugin of the marketplace bench/capability.sh times (295 plugins built
// from ../shared/realworld) are what testdata/golden/marketplace295.txt
// records, one line per plugin: its name, the sha256 of its report's JSON,
// and how many hooks, servers, executables and findings it has. The
// golden was written before the pass was made faster, so a faster pass
// that found anything else, or anything less, fails here. Read and the
// plain path (plugin.Load, then Of) are both checked.
func TestMarketplace295Golden(t *testing.T) {
	realworld := sharedtest.RealWorldDir(t)
	root := t.TempDir()
	build295(t, realworld, root, 295)
	m, _, err := plugin.ReadMarketplace(root)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	reports := map[string][]byte{}
	for i := range m.Plugins {
		e := &m.Plugins[i]
		dir, err := e.LocalDir(root)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Read(dir, e)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		j := marshal(t, r)
		p, _, err := plugin.Load(dir, e)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		rp, err := Of(p)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if jp := marshal(t, rp); !bytes.Equal(j, jp) {
			t.Errorf("%s: Read and plugin.Load + Of differ:\n%s\n%s", e.Name, j, jp)
		}
		sum := sha256.Sum256(j)
		c := r.Capabilities
		fmt.Fprintf(&got, "%s %s hooks=%d mcp=%d lsp=%d executables=%d hosts=%d findings=%d\n", e.Name, hex.EncodeToString(sum[:]),
			len(c.Hooks), len(c.MCPServers), len(c.LSPServers), len(c.Executables), len(c.Hosts), len(r.Findings))
		reports[e.Name] = j
	}
	golden := filepath.Join("testdata", "golden", "marketplace295.txt")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got.String(), "\n")
	if len(wl) != len(gl) {
		t.Fatalf("%d plugins, the golden has %d", len(gl)-1, len(wl)-1)
	}
	bad := 0
	for i := range wl {
		if wl[i] == gl[i] {
			continue
		}
		if bad++; bad <= 3 {
			name, _, _ := strings.Cut(gl[i], " ")
			t.Errorf("plugin %d differs from the golden:\n got %s\nwant %s\nreport:\n%s", i, gl[i], wl[i], reports[name])
		}
	}
	if bad > 3 {
		t.Errorf("%d plugins differ from the golden in all", bad)
	}
}
