package marketplace

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func TestIsReservedName(t *testing.T) {
	// Claude Code's verdicts (TestClaudeCompatMarketplaceNames checks them
	// against the real CLI).
	for name, want := range map[string]bool{
		"claude-code-marketplace": true, "claude-code-plugins": true, "claude-plugins-official": true,
		"anthropic-marketplace": true, "anthropic-plugins": true, "agent-skills": true,
		"knowledge-work-plugins": true, "life-sciences": true, "healthcare": true,
		// look-alikes
		"Claude-Code-Plugins": true, "official-claude-plugins": true, "claude-official": true,
		"claude-plugins-public": true, "claude-marketplace": true, "claudeplugins": true,
		// third-party names Claude Code accepts
		"claude-code-workflows": false, "superpowers-marketplace": false, "corp": false,
		"claude-ops": false, "skills": false, "official-tools": false, "sciences": false,
		"claude-skills": false, "claude-code-skills": false, "loc-claude-plugins-official": false,
		"anthropic-agent-skills-local": false, "agentskills": false, "anthropic-tools-v2": false,
	} {
		if got := IsReservedName(name); got != want {
			t.Errorf("IsReservedName(%q) = %v; want %v", name, got, want)
		}
	}
}

func TestIsOfficialSource(t *testing.T) {
	for _, tc := range []struct {
		src  plugin.MarketplaceSource
		want bool
	}{
		{plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "anthropics/claude-code"}, true},
		{plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "Anthropics/skills"}, true},
		{plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "https://github.com/anthropics/claude-plugins-official.git"}, true},
		{plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "git@github.com:anthropics/skills.git"}, true},
		{plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "ssh://git@github.com/anthropics/skills.git"}, true},
		{plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "anthropics-fan/claude-code"}, false},
		{plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "https://github.com.evil.example/anthropics/x.git"}, false},
		{plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "https://gitlab.com/anthropics/x.git"}, false},
		{plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "https://github.com:8443/anthropics/x.git"}, false},
		{plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "file:///tmp/anthropics/x"}, false},
		{plugin.MarketplaceSource{Kind: plugin.MktURL, URL: "https://github.com/anthropics/x/raw/main/marketplace.json"}, false},
		{plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: "/src/anthropics/claude-code"}, false},
	} {
		if got := IsOfficialSource(tc.src); got != tc.want {
			t.Errorf("IsOfficialSource(%s) = %v; want %v", tc.src, got, tc.want)
		}
	}
}

// A reserved name is refused from any source outside the anthropics GitHub
// organization, whether the marketplace declares it or --name asks for it;
// the same catalog added under another name works; nothing is recorded for
// a refused add.
func TestAddRefusesReservedNames(t *testing.T) {
	dir := t.TempDir()
	for name, body := range marketFiles("claude-code-plugins", "fmt") {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := newTestManager(t, Options{})
	ctx := context.Background()
	src := plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: dir}
	for _, name := range []string{"", "claude-plugins-official", "claude-plugins-public", "knowledge-work-plugins"} {
		_, err := m.Add(ctx, src, name)
		var pe *plugin.Error
		if !errors.Is(err, ErrReservedName) || !errors.As(err, &pe) || pe.Layer != plugin.LayerIntent ||
			!strings.Contains(err.Error(), "github.com/anthropics/") || !strings.Contains(plugin.HintOf(err), "--name") {
			t.Errorf("Add(name %q) = %v; want a trust error for a reserved name with a --name hint", name, err)
		}
	}
	// The name of a plugin source that is not a marketplace is refused
	// from any source.
	if _, err := m.Add(ctx, src, "builtin"); !errors.Is(err, ErrReservedName) || !strings.Contains(plugin.HintOf(err), "--name") {
		t.Errorf("Add(name builtin) = %v; want ErrReservedName with a --name hint", err)
	}
	if err := CheckName("inline", plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "anthropics/x"}); !errors.Is(err, ErrReservedName) {
		t.Errorf("CheckName(inline, anthropics/x) = %v; want ErrReservedName", err)
	}
	if ks, _ := m.List(); len(ks) != 0 {
		t.Fatalf("refused adds recorded %v", ks)
	}
	k, err := m.Add(ctx, src, "cc-demo")
	if err != nil || k.Name != "cc-demo" {
		t.Fatalf("Add --name cc-demo = %+v, %v", k, err)
	}
}

// The anthropics organization may use its names (served here by a GitHub
// stand-in on loopback).
func TestAddAllowsReservedNameFromAnthropics(t *testing.T) {
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	for _, owner := range []string{"anthropics", "someone"} {
		repo := newGitRepo(t, marketFiles("claude-code-plugins", "fmt"))
		bare := filepath.Join(root, owner, "claude-code.git")
		if out, err := exec.Command("git", "clone", "-q", "--bare", repo.dir, bare).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	srv := newGitHTTPServer(t, filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"), root)
	env := func(k string) string { return map[string]string{"WHARF_GITHUB_HOST": srv}[k] }
	m, _ := newTestManager(t, Options{Getenv: env})
	k, err := m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "anthropics/claude-code"}, "")
	if err != nil || k.Name != "claude-code-plugins" {
		t.Fatalf("Add(anthropics/claude-code) = %+v, %v", k, err)
	}
	if _, err := m.Update(context.Background(), k.Name); err != nil {
		t.Errorf("Update: %v", err)
	}
	if _, err := m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "someone/claude-code"}, ""); !errors.Is(err, ErrReservedName) {
		t.Errorf("Add(someone/claude-code) = %v; want ErrReservedName", err)
	}
}

// newGitHTTPServer serves the bare repositories under root over loopback
// HTTP and returns host:port.
func newGitHTTPServer(t *testing.T, backend, root string) string {
	srv := httptest.NewServer(gitHTTPBackend(t, backend, root, func(*http.Request) bool { return true }))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
