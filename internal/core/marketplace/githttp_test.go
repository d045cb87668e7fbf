package marketplace

import (
	"net/http"
	"net/http/cgi"
	"testing"
)

// gitHTTPBackend serves the bare repositories under root with git's own
// smart HTTP server, after authorize approves the request.
func gitHTTPBackend(t *testing.T, backend, root string, authorize func(*http.Request) bool) http.Handler {
	t.Helper()
	h := &cgi.Handler{
		Path: backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorize(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
