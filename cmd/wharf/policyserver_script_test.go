package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/api"
)

// policyServers are the scripts' running wharf servers (policyserver),
// for stoppolicyserver: the last one started.
var policyServers sync.Map // *testscript.TestScript → *httptest.Server

// scriptServerToken is the admin token of every policyserver, so that one
// WHARF_TOKEN reaches them all.
const scriptServerToken = "wharf_script_admin_0123456789abcdef"

// cmdPolicyServer starts a real wharf API server on 127.0.0.1 over a
// bbolt file in the script's work dir, with layer "org" holding the
// settings in <file>, and sets $WHARF_URL and $SERVER_TOKEN (its admin
// token, the same for every policyserver of the script).
//
//	policyserver <settings.json>
func cmdPolicyServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: policyserver <settings.json>")
	}
	settings, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	dir, err := os.MkdirTemp(ts.MkAbs("."), "policyserver-")
	ts.Check(err)
	st, err := store.OpenBolt(filepath.Join(dir, "state.db"), store.Options{})
	ts.Check(err)
	ts.Defer(func() { st.Close() })
	srv, err := api.New(api.Deps{Store: st, Policy: api.PolicyEngine, RateLimit: -1})
	ts.Check(err)
	admin := scriptServerToken
	_, _, err = api.EnsureAdminToken(st, admin, time.Now())
	ts.Check(err)
	hs := httptest.NewServer(srv.Handler())
	ts.Defer(hs.Close)
	policyServers.Store(ts, hs)
	call := func(method, path string, header http.Header, body any, want int, out any) {
		raw, err := json.Marshal(body)
		ts.Check(err)
		req, err := http.NewRequest(method, hs.URL+path, bytes.NewReader(raw))
		ts.Check(err)
		req.Header = header
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		ts.Check(err)
		defer res.Body.Close()
		if res.StatusCode != want {
			ts.Fatalf("%s %s: %s", method, path, res.Status)
		}
		if out != nil {
			ts.Check(json.NewDecoder(res.Body).Decode(out))
		}
	}
	call(http.MethodPut, "/v1/policy/layers/org", http.Header{"If-None-Match": {"*"}},
		map[string]any{"rank": 10, "settings": json.RawMessage(settings)}, http.StatusCreated, nil)
	ts.Setenv("WHARF_URL", hs.URL)
	ts.Setenv("SERVER_TOKEN", admin)
}

// cmdStopPolicyServer stops the script's policyserver: it no longer
// answers.
func cmdStopPolicyServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: stoppolicyserver")
	}
	v, ok := policyServers.LoadAndDelete(ts)
	if !ok {
		ts.Fatalf("%s", fmt.Sprint("no policyserver running"))
	}
	v.(*httptest.Server).Close()
}
