package api

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestBadInput(t *testing.T) {
	e, _ := newCatalogEnv(t, func(d *Deps) { d.BodyLimit = 4096 })
	admin := e.tokens[RoleAdmin]
	e.putLayer("org", "*new", map[string]any{})
	big := `{"role": "developer", "note": "` + strings.Repeat("x", 5000) + `"}`

	cases := []struct {
		name                 string
		method, path, token  string
		body                 string
		headers              []string
		status               int
		code, field, message string // message: a substring
	}{
		{"malformed JSON names line and column", "POST", "/v1/tokens", admin, "{\n  \"role\": \"ci\",\n  oops\n}", nil, 400, CodeMalformedJSON, "", "line 3, column 3"},
		{"truncated JSON", "POST", "/v1/tokens", admin, `{"role": "ci"`, nil, 400, CodeMalformedJSON, "", "ends early"},
		{"empty body", "POST", "/v1/tokens", admin, ``, nil, 400, CodeMalformedJSON, "", "empty"},
		{"trailing data", "POST", "/v1/tokens", admin, `{"role": "ci"} {}`, nil, 400, CodeMalformedJSON, "", "after the JSON value"},
		{"unknown field", "POST", "/v1/tokens", admin, `{"role": "ci", "admin": true}`, nil, 400, CodeUnknownField, "admin", `unknown field "admin"`},
		{"wrong type names the field", "POST", "/v1/tokens", admin, `{"role": 7}`, nil, 400, CodeInvalidField, "role", "expected string"},
		{"nested field path", "PUT", "/v1/policy/layers/org", admin, `{"modules": {"a.rego": 5}}`, []string{`If-Match: "1"`}, 400, CodeInvalidField, "modules", "expected string"},
		{"bad role value", "POST", "/v1/tokens", admin, `{"role": "root"}`, nil, 400, CodeInvalidField, "role", `"root" is not one of`},
		{"bad plugin id in resolve", "POST", "/v1/resolve", admin, `{"plugins": ["deploy"]}`, nil, 400, CodeInvalidField, "", "no @marketplace"},
		{"empty resolve", "POST", "/v1/resolve", admin, `{"plugins": []}`, nil, 400, CodeInvalidField, "plugins", "empty"},
		{"bad digest", "POST", "/v1/verify", admin, `{"digest": "sha256:abc"}`, nil, 400, CodeInvalidField, "digest", "w1:"},
		{"settings not an object", "PUT", "/v1/policy/layers/org", admin, `{"settings": [1]}`, []string{`If-Match: "1"`}, 400, CodeInvalidField, "settings", "JSON object"},
		{"bad module name", "PUT", "/v1/policy/layers/org", admin, `{"modules": {"../x.rego": "package a"}}`, []string{`If-Match: "1"`}, 400, CodeInvalidField, "modules.../x.rego", "<name>.rego"},
		{"bad layer name", "PUT", "/v1/policy/layers/..", admin, `{}`, []string{`If-None-Match: *`}, 400, CodeInvalidField, "layer", ""},
		{"not JSON content type", "POST", "/v1/tokens", admin, `role=ci`, []string{"Content-Type: application/x-www-form-urlencoded"}, 415, CodeUnsupportedMedia, "Content-Type", ""},
		{"body over limit", "POST", "/v1/tokens", admin, big, nil, 413, CodeTooLarge, "", "limit is 4096"},
		{"no token", "POST", "/v1/tokens", "", `{"role": "ci"}`, nil, 401, CodeUnauthorized, "Authorization", "no bearer token"},
		{"unknown token", "POST", "/v1/tokens", "wharf_not-a-real-token", `{"role": "ci"}`, nil, 401, CodeUnauthorized, "Authorization", "unknown or was revoked"},
		{"not bearer", "GET", "/v1/policy", "", ``, []string{"Authorization: Basic YWRtaW46YWRtaW4="}, 401, CodeUnauthorized, "Authorization", "Bearer"},
		{"wrong role", "POST", "/v1/tokens", e.tokens[RoleDeveloper], `{"role": "ci"}`, nil, 403, CodeForbidden, "", `role "developer" may not`},
		{"stale version", "PUT", "/v1/policy/layers/org", admin, `{}`, []string{`If-Match: "7"`}, 412, CodeVersionConflict, "If-Match", "version 1"},
		{"garbage If-Match", "PUT", "/v1/policy/layers/org", admin, `{}`, []string{`If-Match: "abc"`}, 400, CodeBadRequest, "If-Match", ""},
		{"no precondition", "PUT", "/v1/policy/layers/org", admin, `{}`, nil, 428, CodePreconditionNeeded, "If-Match", "If-None-Match: *"},
		{"bad limit", "GET", "/v1/audit?limit=0", admin, ``, nil, 400, CodeInvalidField, "limit", ""},
		{"bad since", "GET", "/v1/audit?since=yesterday", admin, ``, nil, 400, CodeInvalidField, "since", "RFC 3339"},
		{"bad cursor", "GET", "/v1/audit?cursor=xyz", admin, ``, nil, 400, CodeInvalidField, "cursor", ""},
		{"unknown plugin", "GET", "/v1/plugins/corp/nosuch", admin, ``, nil, 404, "not-found", "nosuch@corp", "has no plugin"},
		{"unknown marketplace", "POST", "/v1/marketplaces/nosuch/update", admin, ``, nil, 404, "not-found", "nosuch", "unknown marketplace"},
		{"unknown route", "GET", "/v1/nothing", admin, ``, nil, 404, CodeNotFound, "", "no such route"},
		{"wrong method", "PATCH", "/v1/tokens", admin, `{}`, nil, 405, CodeMethodNotAllowed, "", ""},
		{"duplicate marketplace", "POST", "/v1/marketplaces", admin, `{"name": "corp", "source": {"source": "directory", "path": "/nonexistent"}}`, nil, 409, "conflict", "corp", "already known"},
		{"marketplace source not object", "POST", "/v1/marketplaces", admin, `{"name": "x", "source": "github"}`, nil, 400, CodeInvalidField, "source", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshotState(e)
			var body any
			if tc.body != "" {
				body = tc.body
			}
			res := e.do(tc.method, tc.path, tc.token, body, tc.headers...)
			if res.status != tc.status {
				t.Fatalf("status %d, want %d: %s", res.status, tc.status, res.body)
			}
			ae := res.apiError(t)
			if ae.Status != tc.status || ae.Code != tc.code || ae.Field != tc.field || !strings.Contains(ae.Message, tc.message) {
				t.Fatalf("error %+v, want code %q field %q message containing %q", ae, tc.code, tc.field, tc.message)
			}
			if after := snapshotState(e); after != before {
				t.Fatalf("a refused request changed state")
			}
		})
	}
}

// A body over the limit without Content-Length (chunked) is stopped while
// reading, also with 413.
func TestBodyLimitChunked(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.BodyLimit = 1024 })
	body := io.MultiReader(strings.NewReader(`{"role": "ci", "note": "`), bytes.NewReader(bytes.Repeat([]byte("y"), 4096)), strings.NewReader(`"}`))
	req, _ := http.NewRequest("POST", e.hs.URL+"/v1/tokens", io.NopCloser(body))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+e.tokens[RoleAdmin])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 413 || !strings.Contains(string(raw), CodeTooLarge) {
		t.Fatalf("chunked over limit: %d %s", res.StatusCode, raw)
	}
}
