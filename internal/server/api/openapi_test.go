package api

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var echoParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// TestOpenAPIMatchesRoutes checks docs/openapi.yaml against the server: every
// route is documented with its roles, every route echo registers is
// documented (not only the routes table's), and every documented operation
// is a route. That each documented operation is exercised by a test is
// TestMain's check (spec_conformance_test.go).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                          `yaml:"openapi"`
		Paths   map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	documented := map[string][]string{}
	for path, ops := range doc.Paths {
		for method, node := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				Roles []string `yaml:"x-wharf-roles"`
			}
			if err := node.Decode(&op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			documented[strings.ToUpper(method)+" "+path] = op.Roles
		}
	}
	st := newEnv(t).srv
	served := map[string]bool{}
	for _, r := range st.Routes() {
		key := r.Method + " " + echoParam.ReplaceAllString(r.Path, "{$1}")
		served[key] = true
		roles, ok := documented[key]
		if !ok {
			t.Errorf("route %s is not in docs/openapi.yaml", key)
			continue
		}
		want := []string{"public"}
		if r.Roles != nil {
			want = strings.Fields(joinRolesSpace(r.Roles))
		}
		sort.Strings(roles)
		sort.Strings(want)
		if strings.Join(roles, " ") != strings.Join(want, " ") {
			t.Errorf("%s: docs say roles %v, server allows %v", key, roles, want)
		}
	}
	// What echo registers, whoever registered it: a route added beside
	// the table is documented too. The channels' git repositories speak
	// git's smart HTTP protocol, not JSON, and are documented in
	// docs/server.md instead.
	notJSON := map[string]bool{"GET /git/*": false, "POST /git/*": false}
	for _, r := range st.e.Routes() {
		key := r.Method + " " + echoParam.ReplaceAllString(r.Path, "{$1}")
		if _, ok := notJSON[key]; ok {
			notJSON[key] = true
			continue
		}
		if _, ok := documented[key]; !ok {
			t.Errorf("echo serves %s, which docs/openapi.yaml does not document", key)
		}
	}
	for key, seen := range notJSON {
		if !seen {
			t.Errorf("%s is no longer served; drop it from the routes this test leaves undocumented", key)
		}
	}
	for key := range documented {
		if !served[key] {
			t.Errorf("docs/openapi.yaml documents %s, which the server does not serve", key)
		}
	}
}
