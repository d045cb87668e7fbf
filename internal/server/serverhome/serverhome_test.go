package serverhome_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/serverhome"
	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
	"github.com/wharfhq/wharf/plugin"
)

// config is a server configuration over a fresh home, as the command
// resolves it with nothing set.
func config(t *testing.T) serverhome.Config {
	t.Helper()
	return serverhome.Config{
		Home: t.TempDir(), LockTimeout: 200 * time.Millisecond, GitTimeout: time.Minute, NetIdle: time.Minute,
		Getenv:    func(string) string { return "" },
		BodyLimit: 1 << 20, RequestTimeout: 30 * time.Second, RateLimit: 50,
	}
}

func open(t *testing.T, cfg serverhome.Config) *serverhome.Server {
	t.Helper()
	s, err := serverhome.Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// get serves one request through the server's handler.
func get(t *testing.T, s *serverhome.Server, path, token string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// A bbolt server root: the first open makes the admin token and serves
// requests; Close keeps what it wrote and releases the file for the next.
func TestOpenBoltServesAndPersists(t *testing.T) {
	cfg := config(t)
	s := open(t, cfg)
	wantDB := filepath.Join(cfg.Home, "server", "server.db")
	if s.Data != filepath.Join(cfg.Home, "server") || s.Where != "bolt:"+wantDB {
		t.Fatalf("data %q, store %q", s.Data, s.Where)
	}
	if _, err := os.Stat(wantDB); err != nil {
		t.Fatalf("no store file: %v", err)
	}
	if !s.FirstStart || s.AdminToken == "" {
		t.Fatalf("first open: first=%v token=%q", s.FirstStart, s.AdminToken)
	}
	if code, body := get(t, s, "/healthz", ""); code != http.StatusOK {
		t.Fatalf("GET /healthz: %d %s", code, body)
	}
	if code, _ := get(t, s, "/v1/tokens", ""); code != http.StatusUnauthorized {
		t.Fatalf("GET /v1/tokens without a token: %d", code)
	}
	if code, body := get(t, s, "/v1/tokens", s.AdminToken); code != http.StatusOK {
		t.Fatalf("GET /v1/tokens as admin: %d %s", code, body)
	}
	admin := s.AdminToken
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	again := open(t, cfg)
	if again.FirstStart || again.AdminToken != "" {
		t.Fatalf("reopen made a new admin token: first=%v", again.FirstStart)
	}
	if code, body := get(t, again, "/v1/tokens", admin); code != http.StatusOK {
		t.Fatalf("the admin token after reopening: %d %s", code, body)
	}
}

// While one root holds the bbolt file, a second Open fails naming the data
// directory and what to do; after Close it succeeds.
func TestOpenBoltLockedUntilClose(t *testing.T) {
	cfg := config(t)
	first, err := serverhome.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = serverhome.Open(cfg)
	var pe *plugin.Error
	if !errors.Is(err, store.ErrLocked) || !errors.As(err, &pe) || pe.Object != filepath.Join(cfg.Home, "server") ||
		!strings.Contains(pe.Hint, "another wharf-server uses") {
		t.Fatalf("second Open while the first is open: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := serverhome.Open(cfg)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
}

// A bad configuration value is an error that names its key, and a failed
// Open leaves no lock behind.
func TestOpenBadConfigNamesKey(t *testing.T) {
	base := config(t)
	bad := []struct {
		name string
		edit func(*serverhome.Config)
		key  string
	}{
		{"relative home", func(c *serverhome.Config) { c.Home = "relative/home" }, "home"},
		{"body limit", func(c *serverhome.Config) { c.BodyLimit = 0 }, "--body-limit"},
		{"proxy", func(c *serverhome.Config) { c.TrustedProxies = []string{"not-a-range"} }, "--trusted-proxy"},
		{"store url", func(c *serverhome.Config) { c.Store.URL = "bolt:/var/lib/wharf/server.db" }, "--store"},
		{"etcd flag without etcd", func(c *serverhome.Config) { c.Store.CACert = "/ca.pem" }, "--etcd-cacert"},
		{"store timeout", func(c *serverhome.Config) { c.Store = serverhome.StoreConfig{URL: "etcd://127.0.0.1:2379"} }, "--store-timeout"},
		{"missing key file", func(c *serverhome.Config) { c.TrustedKeys = []string{filepath.Join(c.Home, "none.pem")} }, filepath.Join(base.Home, "none.pem")},
		{"short bootstrap token", func(c *serverhome.Config) { c.BootstrapToken = "short" }, "WHARF_BOOTSTRAP_TOKEN"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			s, err := serverhome.Open(cfg)
			var pe *plugin.Error
			if err == nil || s != nil || !errors.As(err, &pe) || pe.Object != tc.key || pe.Hint == "" {
				t.Fatalf("Open: %v (server %v); want an error naming %s", err, s, tc.key)
			}
		})
	}
	// The bootstrap token failed after the store was opened: it was closed.
	s := open(t, base)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A damaged server.db is refused with the server's own repair command.
func TestOpenDamagedBolt(t *testing.T) {
	cfg := config(t)
	data := filepath.Join(cfg.Home, "server")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "server.db"), bytes.Repeat([]byte{0xA5}, 16384), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := serverhome.Open(cfg)
	var pe *plugin.Error
	if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &pe) || pe.Type != serverhome.TypeStoreDamaged ||
		!strings.Contains(pe.Hint, "wharf-server repair --data "+data) {
		t.Fatalf("Open over a damaged store: %v", err)
	}
}

// An etcd server root: two roots share one cluster, and what one writes the
// other serves.
func TestOpenEtcdShared(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cfg := config(t)
	cfg.Store = serverhome.StoreConfig{URL: c.URL("/wharf"), DialTimeout: 10 * time.Second}
	a := open(t, cfg)
	if !strings.HasPrefix(a.Where, "etcd://") || !strings.HasSuffix(a.Where, "/wharf") {
		t.Fatalf("store %q", a.Where)
	}
	if _, err := os.Stat(filepath.Join(cfg.Home, "server", "server.db")); err == nil {
		t.Fatal("an etcd root made a bbolt file")
	}
	if !a.FirstStart || a.AdminToken == "" {
		t.Fatalf("first open: first=%v", a.FirstStart)
	}
	if code, body := get(t, a, "/healthz", ""); code != http.StatusOK {
		t.Fatalf("GET /healthz: %d %s", code, body)
	}
	other := config(t)
	other.Store = cfg.Store
	b := open(t, other)
	if b.FirstStart {
		t.Fatal("a second replica made its own admin token")
	}
	if code, body := get(t, b, "/v1/tokens", a.AdminToken); code != http.StatusOK {
		t.Fatalf("the first replica's admin token on the second: %d %s", code, body)
	}
}
