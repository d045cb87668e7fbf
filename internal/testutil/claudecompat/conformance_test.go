package claudecompat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/claudetest"
	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
)

// deliberate lists the plugins where wharf differs from Claude Code on
// purpose, each with the reason docs/claude-compat.md gives. The test fails
// on any other difference, and on an entry here that no longer differs.
var deliberate = map[string]string{
	"shared-link@compat-cases":         "a symlink out of the plugin folder: wharf refuses the plugin, claude copies the target (docs/claude-compat.md)",
	"hooks-bare@compat-cases":          "hook events at the top of hooks.json: wharf reads and runs them, claude refuses the plugin (docs/claude-compat.md)",
	"matcher-object-stop@compat-cases": "a matcher group wharf cannot read is left out and its event is not listed; claude lists the event (docs/claude-compat.md)",
	"command-object@compat-cases":      "an inline command (content): wharf reads commands from files and lists it as failed (docs/claude-compat.md)",
	// wshobson-agents' pptx-deck-creation names a directory in agents.
	"pptx-deck-creation@rw4": "an agents path that is a directory: wharf loads the agents in it, claude refuses the plugin (docs/claude-compat.md)",
}

// TestClaudeConformanceLoad installs every plugin of the minimal cases in
// testdata/cases (a git checkout, as many directory marketplaces are) with
// the real claude CLI and with wharf, and compares what each loads: whether
// it loads, its version, and its commands, skills, agents, hook events, MCP
// and LSP servers by name.
func TestClaudeConformanceLoad(t *testing.T) {
	claude := claudetest.Find(t).Bin
	claudetest.Lock(t, false)
	conform(t, claude, []market{copyMarket(t, filepath.Join("testdata", "cases"), "compat-cases", true)})
}

// TestClaudeConformanceLoadRealWorld does the same for every plugin with a relative
// source of the real-world marketplaces beside the repository (the others
// need the network), each copied under a neutral name.
func TestClaudeConformanceLoadRealWorld(t *testing.T) {
	claude := claudetest.Find(t).Bin
	rw := sharedtest.RealWorldDir(t)
	claudetest.Lock(t, false)
	dirs, err := os.ReadDir(rw)
	if err != nil {
		t.Fatal(err)
	}
	var markets []market
	for _, d := range dirs {
		if d.IsDir() {
			markets = append(markets, copyMarket(t, filepath.Join(rw, d.Name()), fmt.Sprintf("rw%d", len(markets)+1), false))
		}
	}
	conform(t, claude, markets)
}

func buildWharf(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wharf")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/wharfhq/wharf/cmd/wharf").CombinedOutput(); err != nil {
		t.Fatalf("go build wharf: %v\n%s", err, out)
	}
	return bin
}

func conform(t *testing.T, claude string, markets []market) {
	bin := buildWharf(t)
	type row struct{ id, verdict, detail string }
	var rows []row
	agree, differ := 0, 0
	for _, m := range markets {
		c := claudeLoads(t, newClaude(t, claude), m)
		w := wharfLoads(t, newWharf(t, bin), m)
		ids := make([]string, 0, len(c))
		for id := range c {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			d := diff(c[id], w[id])
			reason, isDeliberate := deliberate[id]
			switch {
			case len(d) == 0 && isDeliberate:
				t.Errorf("%s: listed as a deliberate difference (%s) but claude and wharf now agree; remove it from the list and the docs", id, reason)
				agree++
			case len(d) == 0:
				agree++
			case isDeliberate:
				differ++
				rows = append(rows, row{id, "deliberate", reason + ": " + strings.Join(d, "; ")})
			default:
				differ++
				rows = append(rows, row{id, "DIFFERS", strings.Join(d, "; ")})
				t.Errorf("%s: claude and wharf load it differently:\n\t%s", id, strings.Join(d, "\n\t"))
			}
		}
		for id := range deliberate {
			if _, ok := c[id]; !ok && strings.HasSuffix(id, "@"+m.Name) {
				t.Errorf("%s: listed as a deliberate difference but not among the plugins compared", id)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| cases | agree | differ |\n|---|---|---|\n| %d | %d | %d |\n", agree+differ, agree, differ)
	if len(rows) > 0 {
		b.WriteString("\n| plugin | verdict | difference |\n|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", r.id, r.verdict, strings.ReplaceAll(r.detail, "|", "\\|"))
		}
	}
	t.Log(b.String())
}
