package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
)

// env is a real server on 127.0.0.1 over a real bbolt file, with one token
// per role.
type env struct {
	t      testing.TB
	dir    string
	st     *store.Bolt
	srv    *Server
	hs     *httptest.Server
	tokens map[Role]string
	deps   Deps
}

type envOption func(*Deps)

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), tokens: map[Role]string{}}
	e.start(opts...)
	admin, created, err := EnsureAdminToken(e.st, "", time.Now())
	if err != nil || !created {
		t.Fatalf("EnsureAdminToken: %v created=%v", err, created)
	}
	e.tokens[RoleAdmin] = admin
	for _, r := range Roles[1:] {
		e.tokens[r] = e.createToken(r)
	}
	return e
}

// start opens the store and starts a server over it (used again by restart).
func (e *env) start(opts ...envOption) {
	t := e.t
	st, err := store.OpenBolt(filepath.Join(e.dir, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.st = st
	d := Deps{Store: st, Policy: PolicyEngine, RateLimit: -1}
	for _, o := range opts {
		o(&d)
	}
	e.deps = d
	srv, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	e.hs = httptest.NewServer(specCheck(t, srv.Handler()))
	t.Cleanup(e.stop)
}

func (e *env) stop() {
	if e.hs != nil {
		e.hs.Close()
		e.hs = nil
	}
	if e.st != nil {
		e.st.Close()
		e.st = nil
	}
}

func httptestServer(t testing.TB, s *Server) *httptest.Server {
	hs := httptest.NewServer(specCheck(t, s.Handler()))
	t.Cleanup(hs.Close)
	return hs
}

// restart closes the server and the store and starts fresh ones over the
// same file.
func (e *env) restart(opts ...envOption) {
	e.stop()
	e.start(opts...)
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (r resp) apiError(t testing.TB) APIError {
	t.Helper()
	var w struct {
		Error APIError `json:"error"`
	}
	r.json(t, &w)
	return w.Error
}

// do sends a request; body may be nil, a string (sent as is) or a value
// (JSON encoded). headers are "Name: value" pairs.
func (e *env) do(method, path, token string, body any, headers ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.hs.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: raw}
}

func (e *env) createToken(r Role) string {
	e.t.Helper()
	res := e.do("POST", "/v1/tokens", e.tokens[RoleAdmin], map[string]string{"role": string(r)})
	if res.status != http.StatusCreated {
		e.t.Fatalf("create %s token: %d %s", r, res.status, res.body)
	}
	var out struct {
		Token string `json:"token"`
	}
	res.json(e.t, &out)
	return out.Token
}

// putLayer writes a layer as admin and returns its new ETag.
func (e *env) putLayer(name, ifMatch string, body any) resp {
	e.t.Helper()
	h := "If-Match: " + ifMatch
	if ifMatch == "*new" {
		h = "If-None-Match: *"
	}
	return e.do("PUT", "/v1/policy/layers/"+name, e.tokens[RoleAdmin], body, h)
}
