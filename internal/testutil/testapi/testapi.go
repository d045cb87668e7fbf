// Package testapi starts a real wharf API server for the tests of its
// clients (policy pulls, inventory reports): the api package's handler over
// a real bbolt store in the test's temp dir, on 127.0.0.1, with an admin
// token. Tests put their own middleware in front of it (to count or fail
// requests) and call it with Do.
package testapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/api"
)

// Server is a running API server.
type Server struct {
	TB    testing.TB
	HS    *httptest.Server
	Store *store.Bolt
	Admin string // an admin token
}

// New starts a Server, closed at cleanup. wrap, when not nil, wraps the
// API's handler (a test's middleware).
func New(tb testing.TB, wrap func(http.Handler) http.Handler) *Server {
	tb.Helper()
	return NewWith(tb, wrap, nil)
}

// NewWith is New with the server's Deps changed by configure (when not
// nil) before the server is built: Store is set, so configure can build
// what needs it (an identity provider).
func NewWith(tb testing.TB, wrap func(http.Handler) http.Handler, configure func(*api.Deps)) *Server {
	tb.Helper()
	st, err := store.OpenBolt(layout.New(tb.TempDir()).StateDB(), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	deps := api.Deps{Store: st, Policy: api.PolicyEngine, RateLimit: -1}
	if configure != nil {
		configure(&deps)
	}
	srv, err := api.New(deps)
	if err != nil {
		tb.Fatal(err)
	}
	admin, _, err := api.EnsureAdminToken(st, "", time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	h := srv.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	s := &Server{TB: tb, HS: httptest.NewServer(h), Store: st, Admin: admin}
	tb.Cleanup(s.HS.Close)
	return s
}

// Do sends body (JSON, nil for none) to path as the admin, with the extra
// headers, fails the test unless the answer has status want, and decodes
// the answer into out when out is not nil.
func (s *Server) Do(method, path string, header http.Header, body any, want int, out any) {
	s.TB.Helper()
	var rd io.Reader = http.NoBody
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			s.TB.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.HS.URL+path, rd)
	if err != nil {
		s.TB.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.Admin)
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.TB.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		s.TB.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.TB.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

// PutLayer writes policy layer name; version is the layer's current
// version (0 creates it). body is the layer ({"rank", "settings"}).
func (s *Server) PutLayer(name string, version int, body any) {
	s.TB.Helper()
	h, want := http.Header{"If-None-Match": {"*"}}, http.StatusCreated
	if version > 0 {
		raw, _ := json.Marshal(version)
		h, want = http.Header{"If-Match": {`"` + string(raw) + `"`}}, http.StatusOK
	}
	s.Do("PUT", "/v1/policy/layers/"+name, h, body, want, nil)
}
