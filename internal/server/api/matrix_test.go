package api

import (
	"net/http"
	"sort"
	"strings"
	"testing"
)

// wantMatrix is the authorization matrix as the documentation promises it,
// written apart from routes.go so that a change there must be made here too.
// "public" means no token is needed.
var wantMatrix = map[string]string{
	"GET /healthz":                                          "public",
	"GET /readyz":                                           "public",
	"GET /metrics":                                          "admin",
	"GET /v1/auth/config":                                   "public",
	"POST /v1/auth/login":                                   "public",
	"POST /v1/auth/logout":                                  "admin developer ci agent",
	"GET /v1/auth/whoami":                                   "admin developer ci agent",
	"GET /v1/marketplaces":                                  "admin developer ci agent",
	"POST /v1/marketplaces":                                 "admin",
	"POST /v1/marketplaces/:name/update":                    "admin",
	"DELETE /v1/marketplaces/:name":                         "admin",
	"GET /v1/plugins":                                       "admin developer ci agent",
	"GET /v1/plugins/:marketplace/:name":                    "admin developer ci agent",
	"POST /v1/resolve":                                      "admin developer ci agent",
	"POST /v1/verify":                                       "admin developer ci agent",
	"GET /v1/policy":                                        "admin developer ci agent",
	"GET /v1/policy/layers/:layer":                          "admin developer ci",
	"PUT /v1/policy/layers/:layer":                          "admin",
	"DELETE /v1/policy/layers/:layer":                       "admin",
	"GET /v1/policy/history":                                "admin",
	"GET /v1/policy/bundle":                                 "admin developer ci agent",
	"GET /v1/policy/bundle/key":                             "admin developer ci agent",
	"GET /v1/audit":                                         "admin",
	"PUT /v1/inventory/machines/:id":                        "admin developer ci agent",
	"GET /v1/inventory/machines/:id":                        "admin ci",
	"GET /v1/inventory/plugins":                             "admin ci",
	"GET /v1/inventory/plugins/:marketplace/:name":          "admin ci",
	"GET /v1/inventory/stale":                               "admin ci",
	"GET /v1/approvals":                                     "admin",
	"GET /v1/approvals/pending":                             "admin",
	"POST /v1/approvals/decisions":                          "admin",
	"POST /v1/approvals/scan":                               "admin",
	"GET /v1/approvals/modes":                               "admin",
	"PUT /v1/approvals/modes":                               "admin",
	"GET /v1/revocations":                                   "admin developer ci agent",
	"POST /v1/revocations":                                  "admin",
	"GET /v1/revocations/history":                           "admin",
	"GET /v1/revocations/:id":                               "admin ci",
	"DELETE /v1/revocations/:id":                            "admin",
	"GET /v1/toolpins":                                      "admin",
	"POST /v1/toolpins":                                     "admin",
	"GET /v1/toolpins/drift":                                "admin",
	"GET /v1/toolpins/definitions":                          "admin",
	"GET /v1/toolpins/auto":                                 "admin",
	"PUT /v1/toolpins/auto":                                 "admin",
	"POST /v1/requests":                                     "admin developer ci agent",
	"GET /v1/requests/mine":                                 "admin developer ci agent",
	"GET /v1/requests":                                      "admin",
	"POST /v1/requests/:id/approve":                         "admin",
	"POST /v1/requests/:id/deny":                            "admin",
	"GET /v1/tokens":                                        "admin",
	"POST /v1/tokens":                                       "admin",
	"DELETE /v1/tokens/:id":                                 "admin",
	"GET /v1/channels":                                      "admin developer ci agent",
	"POST /v1/channels":                                     "admin",
	"GET /v1/channels/:name":                                "admin developer ci agent",
	"PUT /v1/channels/:name":                                "admin",
	"DELETE /v1/channels/:name":                             "admin",
	"GET /v1/channels/:name/history":                        "admin developer ci",
	"GET /v1/channels/:name/claude-managed-settings":        "admin developer ci agent",
	"GET /v1/channels/:name/copilot-managed-settings":       "admin developer ci agent",
	"GET /v1/channels/:name/codex-managed-settings":         "admin developer ci agent",
	"GET /v1/channels/:name/gemini-managed-settings":        "admin developer ci agent",
	"GET /v1/channels/:name/opencode-managed-settings":      "admin developer ci agent",
	"GET /v0.1/servers":                                     "public",
	"GET /v0.1/servers/:serverName/versions":                "public",
	"GET /v0.1/servers/:serverName/versions/:version":       "public",
	"GET /v1/mcp-registry":                                  "admin",
	"POST /v1/mcp-registry":                                 "admin",
	"DELETE /v1/mcp-registry/:serverName/versions/:version": "admin",
}

// concrete turns a route pattern into a request that passes authorization
// and then fails or succeeds harmlessly (unknown names, invalid bodies), so
// that every role can call every route without changing the state the next
// call sees.
func concrete(method, pattern string) (string, any) {
	path := strings.NewReplacer(":serverName", "com.example%2Fnosuch", ":version", "1.0.0", ":marketplace", "corp", ":name", "nosuch", ":layer", "nosuch", ":id", "tok_nosuch").Replace(pattern)
	if pattern == "/v1/plugins/:marketplace/:name" {
		path = "/v1/plugins/corp/lint"
	}
	switch method {
	case "POST", "PUT":
		return path, `{"unknownField": true}`
	}
	return path, nil
}

func TestAuthorizationMatrix(t *testing.T) {
	e, _ := newCatalogEnv(t)

	got := map[string]string{}
	for _, r := range e.srv.Routes() {
		roles := "public"
		if r.Roles != nil {
			roles = joinRolesSpace(r.Roles)
		}
		got[r.Method+" "+r.Path] = roles
	}
	for k, v := range wantMatrix {
		if got[k] != v {
			t.Errorf("matrix %s: server allows %q, documented %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := wantMatrix[k]; !ok {
			t.Errorf("route %s is served but missing from the documented matrix", k)
		}
	}
	// Every route echo serves is a row of the matrix (nothing is registered
	// around the table).
	for _, r := range e.srv.e.Routes() {
		if r.Path == gitRoute {
			continue // git's smart HTTP, authorized per channel (serveGit; git_middleware_test.go)
		}
		if _, ok := got[r.Method+" "+r.Path]; !ok {
			t.Errorf("echo serves %s %s outside the matrix", r.Method, r.Path)
		}
	}

	keys := make([]string, 0, len(wantMatrix))
	for k := range wantMatrix {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	callers := append([]Role{""}, Roles...)
	for _, k := range keys {
		method, pattern, _ := strings.Cut(k, " ")
		allowed := strings.Fields(wantMatrix[k])
		for _, role := range callers {
			name := k + " as " + string(role)
			if role == "" {
				name = k + " without token"
			}
			t.Run(name, func(t *testing.T) {
				path, body := concrete(method, pattern)
				tok := e.tokens[role]
				if k == "POST /v1/auth/logout" && role != "" && role != RoleAdmin {
					tok = e.createToken(role) // logging out revokes the caller's token
				}
				res := e.do(method, path, tok, body)
				public := wantMatrix[k] == "public"
				switch {
				case public && strings.HasPrefix(k, "GET /v1/auth/") || public && strings.HasPrefix(k, "POST /v1/auth/"):
					// Without single sign-on configured (as here) they say so.
					if res.status != http.StatusNotFound || !strings.Contains(string(res.body), "no single sign-on") {
						t.Fatalf("sign-in route without single sign-on: %d %s", res.status, res.body)
					}
				case public:
					// A registry server nobody added is not found, to anyone.
					if res.status != http.StatusOK && !(strings.HasPrefix(pattern, "/v0.1/servers/") && res.status == http.StatusNotFound) {
						t.Fatalf("public route: %d %s", res.status, res.body)
					}
				case role == "":
					if res.status != http.StatusUnauthorized || res.apiError(t).Code != CodeUnauthorized {
						t.Fatalf("no token: want 401 unauthorized, got %d %s", res.status, res.body)
					}
					if res.header.Get("WWW-Authenticate") == "" {
						t.Fatal("401 without WWW-Authenticate")
					}
				case !contains(allowed, string(role)):
					if res.status != http.StatusForbidden || res.apiError(t).Code != CodeForbidden {
						t.Fatalf("role %s: want 403, got %d %s", role, res.status, res.body)
					}
				default:
					if res.status == http.StatusUnauthorized || res.status == http.StatusForbidden ||
						res.status == http.StatusMethodNotAllowed || res.status >= 500 {
						t.Fatalf("role %s is allowed: got %d %s", role, res.status, res.body)
					}
					if res.status == http.StatusNotFound && res.apiError(t).Message == "no such route; see /v1 routes in docs/openapi.yaml" {
						t.Fatalf("route not served: %s", res.body)
					}
				}
			})
		}
	}
}

func joinRolesSpace(rs []Role) string {
	ss := make([]string, len(rs))
	for i, r := range rs {
		ss[i] = string(r)
	}
	return strings.Join(ss, " ")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
