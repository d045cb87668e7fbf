package main

import (
	"net/http/httptest"
	"path/filepath"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/api"
)

// cmdWharfServer starts a real wharf server (the API over a bbolt file,
// with the marketplace manager) on 127.0.0.1, with no marketplace, and
// sets $WHARF_SERVER_URL and $ADMIN_TOKEN (the admin token a first start
// prints). Its GitHub host is $GIT_URL when a gitserver runs, so that
// owner/repo reaches the repositories served there.
func cmdWharfServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: wharfserver")
	}
	dir := ts.MkAbs("wharf-server-data")
	st, err := store.OpenBolt(filepath.Join(dir, "state.db"), store.Options{})
	ts.Check(err)
	ts.Defer(func() { st.Close() })
	cfg := fetch.Config{AllowPrivate: true, GitHubHost: ts.Getenv("GIT_URL")}
	mgr := marketplace.NewManager(st, marketplace.Options{Dir: filepath.Join(dir, "marketplaces"), Fetch: cfg})
	srv, err := api.New(api.Deps{Store: st, Policy: api.PolicyEngine, Catalog: api.NewMarketplaceCatalog(mgr), RateLimit: -1})
	ts.Check(err)
	admin, _, err := api.EnsureAdminToken(st, "", time.Now())
	ts.Check(err)
	hs := httptest.NewServer(srv.Handler())
	ts.Defer(hs.Close)
	ts.Setenv("WHARF_SERVER_URL", hs.URL)
	ts.Setenv("ADMIN_TOKEN", admin)
}
