package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/server/catalog"
)

// wharfServers are the scripts' running wharf servers, for
// stopwharfserver: the last one each script started.
var wharfServers sync.Map // *testscript.TestScript → *httptest.Server

// scriptServerToken is the admin token of every wharfserver, so that one
// WHARF_TOKEN reaches them all.
const scriptServerToken = "wharf_script_admin_0123456789abcdef"

// cmdWharfServer starts a real wharf server (the API over a bbolt file in
// the script's work dir, with the marketplace manager and no marketplace)
// on 127.0.0.1, and sets $WHARF_SERVER_URL and $ADMIN_TOKEN (the same for
// every wharfserver of the script). With <settings.json>, its policy
// layer "org" holds those settings. Its GitHub host is $GIT_URL when a
// gitserver runs, so that owner/repo reaches the repositories served there.
//
//	wharfserver [settings.json]
func cmdWharfServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: wharfserver [settings.json]")
	}
	var settings []byte
	if len(args) == 1 {
		var err error
		settings, err = os.ReadFile(ts.MkAbs(args[0]))
		ts.Check(err)
	}
	dir, err := os.MkdirTemp(ts.MkAbs("."), "wharf-server-")
	ts.Check(err)
	st, err := store.OpenBolt(filepath.Join(dir, "state.db"), store.Options{})
	ts.Check(err)
	ts.Defer(func() { st.Close() })
	cfg := fetch.Config{AllowPrivate: true, GitHubHost: ts.Getenv("GIT_URL")}
	mgr := marketplace.NewManager(st, marketplace.Options{Dir: filepath.Join(dir, "marketplaces"), Fetch: cfg})
	srv, err := api.New(api.Deps{Store: st, Policy: api.PolicyEngine, Catalog: catalog.New(mgr), RateLimit: -1})
	ts.Check(err)
	_, _, err = api.EnsureAdminToken(st, scriptServerToken, time.Now())
	ts.Check(err)
	hs := httptest.NewServer(srv.Handler())
	ts.Defer(hs.Close)
	wharfServers.Store(ts, hs)
	if settings != nil {
		c, err := apiclient.New(hs.URL, scriptServerToken, nil)
		ts.Check(err)
		_, err = c.Send(context.Background(), apiclient.Request{
			Method: http.MethodPut, Path: "/v1/policy/layers/org",
			Header: http.Header{"If-None-Match": {"*"}},
			JSON:   map[string]any{"rank": 10, "settings": json.RawMessage(settings)},
		})
		ts.Check(err)
	}
	ts.Setenv("WHARF_SERVER_URL", hs.URL)
	ts.Setenv("ADMIN_TOKEN", scriptServerToken)
}

// cmdStopWharfServer stops the last wharfserver of the script: it no
// longer answers.
func cmdStopWharfServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: stopwharfserver")
	}
	v, ok := wharfServers.LoadAndDelete(ts)
	if !ok {
		ts.Fatalf("no wharfserver running")
	}
	v.(*httptest.Server).Close()
}
