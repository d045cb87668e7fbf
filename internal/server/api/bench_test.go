package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// benchRequest measures the server's own cost per request (no network).
func benchRequest(b *testing.B, e *env, method, path, token string, want int, headers ...string) {
	b.Helper()
	h := e.srv.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(method, path, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			for i := 0; i+1 < len(headers); i += 2 {
				req.Header.Set(headers[i], headers[i+1])
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != want {
				b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
			}
		}
	})
}

func BenchmarkSearch(b *testing.B) {
	e, _ := newCatalogEnv(b)
	benchRequest(b, e, "GET", "/v1/plugins?q=deploy", e.tokens[RoleAgent], http.StatusOK)
}

func BenchmarkBundle304(b *testing.B) {
	e, _ := newCatalogEnv(b)
	e.putLayer("org", "*new", map[string]any{"modules": map[string]string{"risky.rego": denyRiskyModule}})
	res := e.do("GET", "/v1/policy/bundle", e.tokens[RoleAgent], nil)
	benchRequest(b, e, "GET", "/v1/policy/bundle", e.tokens[RoleAgent], http.StatusNotModified, "If-None-Match", res.header.Get("ETag"))
}

// discardWriter is a ResponseWriter that keeps the status and headers only.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// benchHandler1 measures one request through h on one goroutine, the
// request prepared once: the handler's own CPU and allocations.
func benchHandler1(b *testing.B, h http.Handler, req *http.Request, want int) {
	b.Helper()
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		w.code = 0
		h.ServeHTTP(w, req)
		if w.code != want {
			b.Fatalf("status %d, want %d", w.code, want)
		}
	}
}

// BenchmarkBundle304Handler is the bundle poll's 304 through the whole
// server (console dispatch, middleware, token, rate limit, metrics, ETag);
// BenchmarkBundle304Static is net/http answering the same poll for a file
// (bench/staticbundle), the floor it is compared with.
func BenchmarkBundle304Handler(b *testing.B) {
	e := newEnv(b, func(d *Deps) { d.RateLimit = 1e6 })
	e.putLayer("org", "*new", map[string]any{"modules": map[string]string{"risky.rego": denyRiskyModule}})
	etag := e.do("GET", "/v1/policy/bundle", e.tokens[RoleAgent], nil).header.Get("ETag")
	req := httptest.NewRequest("GET", "/v1/policy/bundle", nil)
	req.Header.Set("Authorization", "Bearer "+e.tokens[RoleAgent])
	req.Header.Set("If-None-Match", etag)
	benchHandler1(b, e.srv.Handler(), req, http.StatusNotModified)
}

func BenchmarkBundle304Static(b *testing.B) {
	body := bytes.Repeat([]byte{0x1f}, 1000)
	etag := `"0123456789abcdef0123456789abcdef"`
	mod := time.Now()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		http.ServeContent(w, r, "bundle.tar.gz", mod, bytes.NewReader(body))
	})
	req := httptest.NewRequest("GET", "/bundle.tar.gz", nil)
	req.Header.Set("If-None-Match", etag)
	benchHandler1(b, h, req, http.StatusNotModified)
}
