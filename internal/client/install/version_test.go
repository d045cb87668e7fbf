package install

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A plugin without a version, stored in a git marketplace, is versioned by
// the marketplace's 12-digit commit, as Claude Code versions it: the cache
// path, the installed version and the update message all carry it.
func TestVersionlessPluginTakesShortCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	write(t, filepath.Join(repo, ".claude-plugin", "marketplace.json"),
		`{"name": "corp", "owner": {"name": "t"}, "plugins": [{"name": "fmt", "source": "./plugins/fmt"}, {"name": "lint", "source": "./plugins/lint", "version": "2.0.0"}]}`)
	write(t, filepath.Join(repo, "plugins", "fmt", "commands", "fmt.md"), "Format.\n")
	write(t, filepath.Join(repo, "plugins", "lint", "commands", "lint.md"), "Lint.\n")
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "one")
	first := gitIn(t, repo, "rev-parse", "HEAD")

	tw := testworld.New(t)
	c := tw.Cache
	mgr, in := newInstaller(t, tw)
	src, err := plugin.ParseMarketplaceSource("file://" + repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Add(bg, src, ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"fmt@corp", "lint@corp"} {
		if _, err := in.Install(bg, Request{ID: plugin.MustParseID(id)}); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := c.Get(plugin.MustParseID("fmt@corp"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != first[:12] || filepath.Base(rec.InstallPath) != first[:12] {
		t.Fatalf("versionless plugin: version %q at %s; want %s", rec.Version, rec.InstallPath, first[:12])
	}
	if lint, _ := c.Get(plugin.MustParseID("lint@corp")); lint.Version != "2.0.0" {
		t.Errorf("entry version: got %q, want 2.0.0", lint.Version)
	}

	write(t, filepath.Join(repo, "plugins", "fmt", "commands", "fmt.md"), "Format better.\n")
	gitIn(t, repo, "commit", "-q", "-am", "two")
	second := gitIn(t, repo, "rev-parse", "HEAD")
	if _, err := mgr.Update(bg, "corp"); err != nil {
		t.Fatal(err)
	}
	ups, err := in.Update(bg, []plugin.ID{plugin.MustParseID("fmt@corp")}, UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 1 || ups[0].From != first[:12] || ups[0].To != second[:12] || !ups[0].Changed {
		t.Fatalf("update = %+v; want %s -> %s", ups, first[:12], second[:12])
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     versionMove
	}{
		{"1.0.0", "1.0.0", moveSame},
		{"1.0.0", "1.0.0+3f2a9c1b0d4e", moveSame},
		{"1.0.0", "1.0.1", moveUp},
		{"1.9.0", "1.10.0", moveUp},
		{"2.0.0", "1.0.0", moveDown},
		{"2.0.0", "10.0.0", moveUp},
		{"v1.2.3", "1.2.4", moveUp},
		{"1.0.0-rc.1", "1.0.0", moveUp},
		{"1.0.0", "1.0.0-rc.1", moveDown},
		{"1.0.0-alpha", "1.0.0-alpha.1", moveUp},
		{"1.0.0-alpha.beta", "1.0.0-alpha.1", moveDown},
		{"1.0.0-rc.2", "1.0.0-rc.10", moveUp},
		{"1.0.0-beta", "1.0.0-alpha", moveDown},
		{"abc1234", "def5678", moveUnordered},
		{"1.0.0", "abc1234", moveUnordered},
		{"1.0", "1.1", moveUnordered},
		{"01.0.0", "1.0.1", moveUnordered},
		{"1.0.0-", "1.0.1", moveUnordered},
		{"1.0.0+", "1.0.1", moveUnordered},
		{"1.0.0-01", "1.0.1", moveUnordered},
	} {
		if got := compareVersions(tc.from, tc.to); got != tc.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.from, tc.to, got, tc.want)
		}
	}
}

// Parsing a hostile version string never panics, and ordering is
// antisymmetric for whatever parses.
func FuzzCompareVersions(f *testing.F) {
	for _, s := range []string{"1.0.0", "v2.3.4-rc.1+build.5", "1.0.0-alpha.beta", "0.0.0-0", "1..0", "18446744073709551616.0.0"} {
		f.Add(s, "1.0.0")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ab, ba := compareVersions(a, b), compareVersions(b, a)
		switch ab {
		case moveUp:
			if ba != moveDown {
				t.Fatalf("%q<%q but %q vs %q = %d", a, b, b, a, ba)
			}
		case moveDown:
			if ba != moveUp {
				t.Fatalf("%q>%q but %q vs %q = %d", a, b, b, a, ba)
			}
		case moveSame, moveUnordered:
			if ba != ab {
				t.Fatalf("%q vs %q = %d, reverse %d", a, b, ab, ba)
			}
		}
	})
}
