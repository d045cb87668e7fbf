package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/claudetest"
)

// costCases are the plugins of testdata/tokencost with the always-on
// estimate `claude plugin details` 2.1.332 prints for each.
var costCases = map[string]int{"basic": 23, "big": 3202, "fallback": 56, "unicode": 19, "whenquoted": 218}

func loadCostCase(t *testing.T, dir string) *Plugin {
	t.Helper()
	p, _, err := Load(dir, nil)
	if err != nil {
		t.Fatalf("Load %s: %v", dir, err)
	}
	return p
}

func TestAlwaysOnTokens(t *testing.T) {
	for name, want := range costCases {
		if got := loadCostCase(t, filepath.Join("testdata/tokencost", name)).AlwaysOnTokens(); got != want {
			t.Errorf("%s: AlwaysOnTokens = %d; want %d", name, got, want)
		}
	}
	// A plugin with no skills, commands or agents costs nothing; a longer
	// description costs more.
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{".claude-plugin/plugin.json": `{"name":"p"}`, "hooks/hooks.json": `{"hooks":{}}`})
	if got := loadCostCase(t, dir).AlwaysOnTokens(); got != 0 {
		t.Errorf("hooks only: AlwaysOnTokens = %d; want 0", got)
	}
	writeTree(t, dir, map[string]string{"agents/a.md": "---\ndescription: " + strings.Repeat("x", 398) + "\n---\nbody"})
	if got := loadCostCase(t, dir).AlwaysOnTokens(); got != 100 {
		t.Errorf("one agent \"a \" + 398 characters: AlwaysOnTokens = %d; want 100", got)
	}
}

var alwaysOnRe = regexp.MustCompile(`Always-on:\s+~([0-9,]+) tok`)

// TestClaudeCompatTokenCost installs every plugin of testdata/tokencost
// with the real claude and compares the always-on estimate `claude plugin
// details` prints with AlwaysOnTokens.
func TestClaudeCompatTokenCost(t *testing.T) {
	cli := claudetest.Find(t)
	claudetest.Lock(t, false)
	mkt := t.TempDir()
	entries, err := os.ReadDir("testdata/tokencost")
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		dir  string
		name string
	}
	var cases []tc
	var listed []string
	for _, e := range entries {
		dst := filepath.Join(mkt, e.Name())
		if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata/tokencost", e.Name()))); err != nil {
			t.Fatal(err)
		}
		p := loadCostCase(t, dst)
		cases = append(cases, tc{dst, p.Manifest.Name})
		listed = append(listed, fmt.Sprintf(`{"name": %q, "source": "./%s"}`, p.Manifest.Name, e.Name()))
	}
	doc := `{"name": "costs", "owner": {"name": "x"}, "plugins": [` + strings.Join(listed, ",") + `]}`
	writeTree(t, mkt, map[string]string{".claude-plugin/marketplace.json": doc})
	home := t.TempDir()
	if out, code := cli.Run(t, home, mkt, "plugin", "marketplace", "add", mkt); code != 0 {
		t.Fatalf("claude plugin marketplace add: %s", out)
	}
	for _, c := range cases {
		if out, code := cli.Run(t, home, mkt, "plugin", "install", c.name+"@costs"); code != 0 {
			t.Fatalf("claude plugin install %s: %s", c.name, out)
		}
		out, code := cli.Run(t, home, mkt, "plugin", "details", c.name+"@costs")
		m := alwaysOnRe.FindStringSubmatch(out)
		if code != 0 || m == nil {
			t.Fatalf("claude plugin details %s: exit %d\n%s", c.name, code, out)
		}
		claude, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		if got := loadCostCase(t, c.dir).AlwaysOnTokens(); got != claude {
			t.Errorf("%s: wharf estimates %d always-on tokens, claude %s %d", c.name, got, cli.Version(t), claude)
		}
	}
}
