package home

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/install"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

// testConfig is the configuration a command builds: Default, then Parse
// over a viper with nothing set, then the fetch switch that lets plugin
// and marketplace fetches reach the git server on 127.0.0.1.
func testConfig(t *testing.T) Config {
	t.Helper()
	v := viper.New()
	cfg := Default()
	cfg.SetDefaults(v)
	if err := cfg.Parse(v); err != nil {
		t.Fatal(err)
	}
	cfg.Fetch.AllowPrivate = true
	cfg.LockTimeout = 300 * time.Millisecond
	return cfg
}

// noSystemPolicy points the system managed directory of this test binary
// at an empty directory (settings.SystemManagedDir reads
// WHARF_TEST_SYSTEM_MANAGED_DIR in test binaries only) and returns it.
func noSystemPolicy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("WHARF_TEST_SYSTEM_MANAGED_DIR", dir)
	return dir
}

func openHome(t *testing.T, dir string, cfg Config) *Home {
	t.Helper()
	var warnings []string
	h, err := Open(Options{Paths: layout.New(dir), Config: cfg, Project: t.TempDir(), Warn: func(m string) { warnings = append(warnings, m) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return h
}

// gitMarketplace serves a marketplace "corp" with the plugin tool 1.0.0
// from a bare git repository over git's HTTP protocol on 127.0.0.1 and
// returns its source.
func gitMarketplace(t *testing.T) plugin.MarketplaceSource {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	work := testworld.Marketplace(t, t.TempDir(), "corp", map[string]map[string]string{
		"tool": {".claude-plugin/plugin.json": testworld.Manifest("tool", "1.0.0"), "commands/hello.md": "# hello\n"},
	})
	git := func(dir string, args ...string) {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(work, "init", "-q", "-b", "main")
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "corp")
	root := t.TempDir()
	git(work, "clone", "-q", "--bare", work, filepath.Join(root, "corp", "plugins.git"))
	srv := gitserve.Start(t, root, gitserve.Options{HTTP: true})
	src, err := plugin.ParseMarketplaceSource(srv.URL + "/corp/plugins.git")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// addMarketplace adds src through h as `wharf marketplace add` does.
func addMarketplace(t *testing.T, h *Home, src plugin.MarketplaceSource) error {
	t.Helper()
	mgr, err := h.MarketplaceWriter()
	if err != nil {
		t.Fatal(err)
	}
	return h.WithMarketplaceLock(context.Background(), func(ctx context.Context) error {
		_, err := mgr.Add(ctx, src, "")
		return err
	})
}

var toolID = plugin.ID{Name: "tool", Source: "corp"}

// Two Homes over one directory are two commands: each has its own store
// handle and policy engine, readers do not wait for each other, what one
// writes the other reads, and closing one leaves the other working.
func TestOpenTwiceSharesNothingWrong(t *testing.T) {
	noSystemPolicy(t)
	dir := t.TempDir()
	src := gitMarketplace(t)
	cfg := testConfig(t)
	h1, h2 := openHome(t, dir, cfg), openHome(t, dir, cfg)

	if err := addMarketplace(t, h1, src); err != nil {
		t.Fatal(err)
	}
	if err := h1.DoneWriting(); err != nil {
		t.Fatal(err)
	}
	in1, err := h1.Installer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in1.Install(context.Background(), install.Request{ID: toolID}); err != nil {
		t.Fatal(err)
	}

	// h1 holds the marketplace lock shared; h2, another reader, takes it
	// too without waiting out its lock timeout.
	in2, err := h2.Installer()
	if err != nil {
		t.Fatalf("a second reader could not open the marketplaces: %v", err)
	}
	rows, err := in2.List(context.Background(), install.StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ID != toolID || rows[0].Version != "1.0.0" {
		t.Fatalf("the second home does not see what the first installed: %+v", rows)
	}

	p1, err := h1.Policy()
	if err != nil {
		t.Fatal(err)
	}
	p2, err := h2.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if p1 == p2 {
		t.Fatal("two homes share one policy engine")
	}
	s1, _ := h1.Store()
	s2, _ := h2.Store()
	if s1 == s2 {
		t.Fatal("two homes share one store handle")
	}

	if err := h1.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err = in2.List(context.Background(), install.StatusOptions{})
	if err != nil || len(rows) != 1 {
		t.Fatalf("closing one home broke the other: %v %+v", err, rows)
	}
	// A closed Home opens again what a command asks of it.
	if _, err := h1.Marketplaces(); err != nil {
		t.Fatalf("a closed home did not reopen: %v", err)
	}
	r, err := h1.Runtime(context.Background(), RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	set, err := r.Load(context.Background(), agent.CacheOnly)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(set.Plugins()); n != 1 {
		t.Fatalf("runtime over the reopened home loads %d plugins, want 1", n)
	}
}

// flockTaken reports whether another process (flock(1)) can take path's
// lock exclusively right now.
func flockTaken(t *testing.T, path string) bool {
	t.Helper()
	err := exec.Command("flock", "--nonblock", "--exclusive", path, "true").Run()
	if err == nil {
		return true
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("flock: %v", err)
	}
	return false
}

// A reading command holds the marketplace lock shared until Close: a
// writer (another process, another Home) waits for it and times out with
// the lock error; after Close both take it.
func TestCloseReleasesTheLocks(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed")
	}
	noSystemPolicy(t)
	dir := t.TempDir()
	cfg := testConfig(t)
	h := openHome(t, dir, cfg)
	if _, err := h.Installer(); err != nil {
		t.Fatal(err)
	}
	lock := layout.New(dir).MarketplacesLock()
	if flockTaken(t, lock) {
		t.Fatal("another process took the marketplace lock while a reading command holds it")
	}
	writer := openHome(t, dir, cfg)
	if _, err := writer.MarketplaceWriter(); err != nil {
		t.Fatal(err)
	}
	err := writer.WithMarketplaceLock(context.Background(), func(context.Context) error { return nil })
	if !errors.Is(err, cache.ErrLocked) {
		t.Fatalf("a writer got the marketplace lock a reader holds: %v", err)
	}

	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if !flockTaken(t, lock) {
		t.Fatal("Close did not release the marketplace lock")
	}
	if err := writer.WithMarketplaceLock(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatalf("after Close the writer still cannot take the lock: %v", err)
	}
	// state.db is free for an exclusive open too.
	b, err := store.OpenBolt(layout.New(dir).StateDB(), store.Options{LockTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("state.db still held after Close: %v", err)
	}
	b.Close()
}

// The system managed directory's layer applies whatever the caller puts
// in the Config: a --policy layer that allows everything and a further
// managed directory that is empty do not drop it, and nothing in the
// Config can name another system directory.
func TestManagedLayerIsAlwaysApplied(t *testing.T) {
	sys := noSystemPolicy(t)
	src := gitMarketplace(t)
	permissive := filepath.Join(t.TempDir(), "allow.json")
	if err := os.WriteFile(permissive, []byte(`{"enabledPlugins": {"tool@corp": true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.Policy = PolicyConfig{Paths: []string{permissive}, ExtraManagedDir: t.TempDir()}

	// Without a managed rule the marketplace adds: the refusal below is
	// the managed layer's.
	if err := addMarketplace(t, openHome(t, t.TempDir(), cfg), src); err != nil {
		t.Fatalf("control: %v", err)
	}

	if err := os.WriteFile(filepath.Join(sys, "managed-settings.json"), []byte(`{"blockedMarketplaces": [{"source": "hostPattern", "hostPattern": "^127\\.0\\.0\\.1$"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := openHome(t, t.TempDir(), cfg)
	if got := h.PolicySources().ManagedDir; got != sys {
		t.Fatalf("system managed directory = %q, want %q", got, sys)
	}
	if got := h.SettingsPaths().ManagedDir; got != sys {
		t.Fatalf("settings managed scope = %q, want %q", got, sys)
	}
	err := addMarketplace(t, h, src)
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy || !strings.Contains(err.Error(), "blockedMarketplaces") {
		t.Fatalf("the managed block did not apply: %v", err)
	}
	e, err := h.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if names := e.LayerNames(); len(names) == 0 || names[0] != "managed" {
		t.Fatalf("layers %v: the managed layer is not first", names)
	}
	if err := e.AllowAdd(context.Background(), "corp", src); err == nil {
		t.Fatal("the home's engine allows what the managed layer blocks")
	}
}

// A configuration that cannot work is refused when the home opens, with
// an error naming the key and the way to set it.
func TestBadConfigNamesTheKey(t *testing.T) {
	dir := t.TempDir()
	v := viper.New()
	cfg := Default()
	cfg.SetDefaults(v)
	v.Set("lock-timeout", "banana")
	err := cfg.Parse(v)
	if err == nil || !strings.Contains(err.Error(), "lock-timeout") || !strings.Contains(plugin.HintOf(err), "WHARF_LOCK_TIMEOUT") {
		t.Fatalf("unparsable lock-timeout: %v (hint %q)", err, plugin.HintOf(err))
	}

	for _, tc := range []struct {
		key    string
		break_ func(*Config)
	}{
		{"lock-timeout", func(c *Config) { c.LockTimeout = 0 }},
		{"git-timeout", func(c *Config) { c.GitTimeout = -time.Second }},
		{"net-idle-timeout", func(c *Config) { c.NetIdle = 0 }},
		{"max-download-bytes", func(c *Config) { c.Fetch.MaxDownloadBytes = -1 }},
	} {
		c := testConfig(t)
		tc.break_(&c)
		_, err := Open(Options{Paths: layout.New(dir), Config: c})
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Object != tc.key || pe.Layer != plugin.LayerIntent || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: %v", tc.key, err)
		}
	}
	for _, home := range []string{"", "relative/home"} {
		_, err := Open(Options{Paths: layout.New(home), Config: testConfig(t)})
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Object != "home" || !strings.Contains(plugin.HintOf(err), "WHARF_HOME") {
			t.Errorf("home %q: %v", home, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused configuration left state.db behind: %v", err)
	}
}
