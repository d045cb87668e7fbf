// Package serverhome is wharf-server's composition root: Open turns a
// resolved configuration into a running server's parts (the store, bbolt
// in the data directory or a shared etcd cluster; the keyring trusted for
// plugin signatures; the fetch configuration; the marketplace manager; the
// API) and Close releases them. The command keeps only what a command
// owns: flags, logging set-up, the listener, signals and exit codes.
package serverhome

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/internal/server/identity"
	"github.com/wharfhq/wharf/plugin"
)

// typeUsage marks configuration mistakes (exit 2).
const typeUsage = shell.TypeUsage

// TypeStoreDamaged is a damaged server.db.
const TypeStoreDamaged = "store-damaged"

// Config is a resolved server configuration. Each field is a key of the
// command's configuration; a bad value is an error naming that key.
type Config struct {
	// Home is WHARF_HOME (absolute); keys/*.pub under it are trusted for
	// plugin signatures.
	Home string
	// Data is the server's data directory; "" means <Home>/server.
	Data string
	// Store chooses bbolt in Data (URL "") or an etcd cluster.
	Store StoreConfig
	// LockTimeout is how long to wait for the bbolt file's lock.
	LockTimeout time.Duration
	// GitTimeout and NetIdle bound the server's fetches.
	GitTimeout time.Duration
	NetIdle    time.Duration
	// GitHubHost is the configured github-host (policy and fetches).
	GitHubHost string
	// Getenv reads the environment (fetch proxies and CA, etcd
	// credentials); nil means os.Getenv. WHARF_GITHUB_HOST is GitHubHost.
	Getenv func(string) string
	// TrustedKeys are PEM public key files trusted in addition to
	// <Home>/keys/*.pub (--trusted-key).
	TrustedKeys []string
	// BootstrapToken is the admin token to create on first start
	// (WHARF_BOOTSTRAP_TOKEN); "" has one made.
	BootstrapToken string
	// Logger receives the API's request log; nil discards it.
	Logger *slog.Logger
	// BodyLimit is the largest request body in bytes (must be positive).
	BodyLimit int64
	// RequestTimeout is the longest a request may take.
	RequestTimeout time.Duration
	// RateLimit and RateBurst bound requests per token.
	RateLimit float64
	RateBurst int
	// TrustedProxies are CIDR ranges or addresses of reverse proxies.
	TrustedProxies []string
	// Identity turns on single sign-on through an OpenID Connect provider
	// (validated); nil: tokens only.
	Identity *identity.Config
}

// Server is an opened server: its store and API. Close releases the store
// (and with it bbolt's file lock).
type Server struct {
	// API is the HTTP API and console.
	API *api.Server
	// Catalog is the marketplace catalog the API serves.
	Catalog *catalog.Marketplaces
	// Store is the opened store.
	Store store.Store
	// Data is the absolute data directory; Where describes the store
	// ("bolt:<path>" or "etcd://...").
	Data, Where string
	// FirstStart is true when Open created the admin token; AdminToken is
	// that token when it was made here (not given as BootstrapToken).
	FirstStart bool
	AdminToken string
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.API.Handler() }

// Close releases the store; calling it again does nothing.
func (s *Server) Close() error {
	if s == nil || s.Store == nil {
		return nil
	}
	err := s.Store.Close()
	s.Store = nil
	return err
}

// BoltPath is the bbolt store's file in the data directory.
func BoltPath(data string) string { return filepath.Join(data, "server.db") }

// DataDir is the absolute data directory: data, or <home>/server.
func DataDir(home, data string) (string, error) {
	if data == "" {
		data = layout.New(home).Server()
	}
	return filepath.Abs(data)
}

// RepairHint is the next step for a damaged server.db in dir.
func RepairHint(dir string) string {
	return "stop wharf-server, then run: wharf-server repair --data " + dir + " (it keeps the damaged file aside and rebuilds server.db from what can be read)"
}

// Open checks cfg, opens the store and builds the API. On error nothing
// stays open.
func Open(cfg Config) (*Server, error) {
	if cfg.Home == "" || !filepath.IsAbs(cfg.Home) {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "home",
			Err: fmt.Errorf("home %q is not an absolute path", cfg.Home), Hint: "set WHARF_HOME (or --home) to wharf's state directory"}
	}
	if cfg.BodyLimit <= 0 {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--body-limit",
			Err: fmt.Errorf("--body-limit must be positive (got %d)", cfg.BodyLimit), Hint: "e.g. --body-limit 1048576"}
	}
	proxies, err := api.ParseTrustedProxies(cfg.TrustedProxies)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--trusted-proxy", Err: err,
			Hint: "pass the proxy's range, e.g. --trusted-proxy 10.0.0.0/8, or its address"}
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	env := func(k string) string {
		if k == "WHARF_GITHUB_HOST" {
			return cfg.GitHubHost
		}
		return getenv(k)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	data, err := DataDir(cfg.Home, cfg.Data)
	if err != nil {
		return nil, err
	}
	// Everything read from files and the environment is checked before
	// the store is opened, so a mistake leaves no lock behind.
	kr, err := shell.TrustedKeys(layout.New(cfg.Home).Keys())
	if err != nil {
		return nil, err
	}
	for _, f := range cfg.TrustedKeys {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: f, Err: err, Hint: "pass a PEM public key file made by wharf keygen"}
		}
		if err := kr.AddPEM(b); err != nil {
			return nil, &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: f, Err: err, Hint: "pass a PEM public key file made by wharf keygen"}
		}
	}
	// One fetch configuration for the server's marketplace clones and the
	// plugin trees its channels vendor.
	fc, err := fetch.FromEnv(env)
	if err != nil {
		return nil, err
	}
	fc.Timeout, fc.IdleTimeout = cfg.GitTimeout, cfg.NetIdle

	st, where, err := openStore(cfg.Store, data, cfg.LockTimeout, env)
	if err != nil {
		return nil, err
	}
	s := &Server{Store: st, Data: data, Where: where}
	fail := func(err error) (*Server, error) {
		_ = s.Close()
		return nil, err
	}
	secret, first, err := api.EnsureAdminToken(st, cfg.BootstrapToken, time.Now())
	if err != nil {
		return fail(&plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "WHARF_BOOTSTRAP_TOKEN", Err: err,
			Hint: "set WHARF_BOOTSTRAP_TOKEN to a long random string, or unset it to have one made"})
	}
	s.FirstStart = first
	if first && cfg.BootstrapToken == "" {
		s.AdminToken = secret
	}
	var sso *identity.Provider
	if cfg.Identity != nil {
		if sso, err = identity.New(*cfg.Identity, st, nil); err != nil {
			return fail(err)
		}
	}
	mgr := marketplace.NewManager(st, marketplace.Options{Dir: filepath.Join(data, "marketplaces"), Fetch: fc})
	s.Catalog = catalog.New(mgr)
	s.API, err = api.New(api.Deps{
		Store: st, Catalog: s.Catalog, Policy: api.PolicyEngineOn(cfg.GitHubHost), Verifier: api.TrustVerifier{Keyring: kr}, Logger: logger,
		BodyLimit: cfg.BodyLimit, RequestTimeout: cfg.RequestTimeout, RateLimit: cfg.RateLimit, RateBurst: cfg.RateBurst,
		TrustedProxies: proxies, ChannelDir: filepath.Join(data, "channels"), Fetcher: source.NewFetcher(fc),
		DataDir: data, Identity: sso,
	})
	if err != nil {
		return fail(err)
	}
	return s, nil
}
