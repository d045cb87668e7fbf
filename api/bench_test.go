package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
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
