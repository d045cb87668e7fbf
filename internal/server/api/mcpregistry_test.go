package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The published MCP registry API v0.1 document (testdata/mcp-registry,
// with its source and license), read as a client of the registry reads it.
var registrySpec struct {
	once   sync.Once
	router routers.Router
	err    error
}

func registryRouter(t *testing.T) routers.Router {
	t.Helper()
	registrySpec.once.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join("testdata", "mcp-registry", "openapi.yaml"))
		if err != nil {
			registrySpec.err = err
			return
		}
		// The document carries a top-level $id, which OpenAPI 3.1 allows.
		if err := doc.Validate(context.Background(), openapi3.AllowExtraSiblingFields("$id")); err != nil {
			registrySpec.err = err
			return
		}
		doc.Servers = openapi3.Servers{{URL: "/"}}
		registrySpec.router, registrySpec.err = gorillamux.NewRouter(doc)
	})
	if registrySpec.err != nil {
		t.Fatalf("the published registry spec: %v", registrySpec.err)
	}
	return registrySpec.router
}

// registryGet sends a registry request and validates the response against
// the published v0.1 document.
func (e *env) registryGet(t *testing.T, path string, want int) resp {
	t.Helper()
	res := e.do("GET", path, "", nil)
	if res.status != want {
		t.Fatalf("GET %s: %d, want %d: %s", path, res.status, want, res.body)
	}
	if res.status != http.StatusOK && res.status != http.StatusNotFound {
		return res
	}
	req, err := http.NewRequest("GET", "http://wharf.test"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	route, params, err := registryRouter(t).FindRoute(req)
	if err != nil {
		t.Fatalf("GET %s is no operation of the published registry API: %v", path, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 res.status, Header: res.header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(res.body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Fatalf("GET %s → %d does not match the published registry API v0.1: %v\n%s", path, res.status, err, res.body)
	}
	return res
}

// newRegistryEnv is a catalog env whose marketplace also has dbtools, a
// plugin with three MCP servers: one fetched from npm, one remote, one
// run from the plugin's own files.
func newRegistryEnv(t *testing.T) *env {
	f := newFixture(t)
	p := func(rel, content string) { writeFile(t, filepath.Join(f.root, rel), content) }
	p("plugins/dbtools/.claude-plugin/plugin.json", `{"name": "dbtools", "version": "2.1.0", "description": "Database tools"}`)
	p("plugins/dbtools/.mcp.json", `{"mcpServers": {
		"pg": {"command": "npx", "args": ["-y", "@corp/pg-mcp@1.4.0"]},
		"web": {"type": "http", "url": "https://mcp.corp.example/${TENANT}/mcp"},
		"local": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/server", "args": ["--stdio"]}}}`)
	p("plugins/dbtools/bin/server", "#!/bin/sh\n")
	raw, err := os.ReadFile(filepath.Join(f.root, ".claude-plugin/marketplace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mkt map[string]any
	if err := json.Unmarshal(raw, &mkt); err != nil {
		t.Fatal(err)
	}
	mkt["plugins"] = append(mkt["plugins"].([]any), map[string]any{"name": "dbtools", "source": "./plugins/dbtools", "category": "data"})
	raw, _ = json.Marshal(mkt)
	p(".claude-plugin/marketplace.json", string(raw))
	e := newEnv(t, withCatalog(f, t.TempDir()))
	if res := e.do("POST", "/v1/marketplaces", e.tokens[RoleAdmin], map[string]any{
		"name": "corp", "source": map[string]string{"source": "directory", "path": f.root}}); res.status != 201 {
		t.Fatalf("add marketplace: %d %s", res.status, res.body)
	}
	return e
}

func registryNames(t *testing.T, res resp) []string {
	t.Helper()
	var l RegistryServerList
	res.json(t, &l)
	var names []string
	for _, s := range l.Servers {
		names = append(names, s.Server.Name+"@"+s.Server.Version)
	}
	sort.Strings(names)
	return names
}

func enc(name string) string { return url.PathEscape(name) }

func TestMCPRegistry(t *testing.T) {
	needGit(t)
	e := newRegistryEnv(t)
	const pg, web, local = "io.wharf.corp/dbtools-pg", "io.wharf.corp/dbtools-web", "io.wharf.corp/dbtools-local"

	// The first request names another Host: its answer does not stay
	// for the next client.
	hreq, _ := http.NewRequest("GET", e.hs.URL+"/v0.1/servers/"+enc(pg)+"/versions/latest", nil)
	hreq.Host = "evil.example"
	if hres, err := http.DefaultClient.Do(hreq); err != nil {
		t.Fatal(err)
	} else {
		hres.Body.Close()
	}
	var first RegistryServerResponse
	e.registryGet(t, "/v0.1/servers/"+enc(pg)+"/versions/latest", 200).json(t, &first)
	if first.Server.Repository == nil || strings.Contains(first.Server.Repository.URL, "evil.example") {
		t.Fatalf("one request's Host shows in another's answer: %+v", first.Server.Repository)
	}
	// The approved plugin's servers, listed without a token.
	got := registryNames(t, e.registryGet(t, "/v0.1/servers", 200))
	want := []string{local + "@2.1.0", pg + "@2.1.0", web + "@2.1.0"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("servers = %v, want %v", got, want)
	}
	var one RegistryServerResponse
	e.registryGet(t, "/v0.1/servers/"+enc(pg)+"/versions/latest", 200).json(t, &one)
	if len(one.Server.Packages) != 1 || one.Server.Packages[0].RegistryType != "npm" || one.Server.Packages[0].Identifier != "@corp/pg-mcp" || one.Server.Packages[0].Version != "1.4.0" {
		t.Fatalf("pg's package: %+v", one.Server.Packages)
	}
	if one.Server.Repository == nil || !strings.HasSuffix(one.Server.Repository.URL, "/git/approved.git") || one.Server.Repository.Subfolder != "plugins/dbtools" {
		t.Fatalf("pg's repository: %+v", one.Server.Repository)
	}
	e.registryGet(t, "/v0.1/servers/"+enc(web)+"/versions/2.1.0", 200).json(t, &one)
	if len(one.Server.Remotes) != 1 || one.Server.Remotes[0].URL != "https://mcp.corp.example/{TENANT}/mcp" || one.Server.Remotes[0].Variables["TENANT"].IsRequired != true {
		t.Fatalf("web's remote: %+v", one.Server.Remotes)
	}
	e.registryGet(t, "/v0.1/servers/"+enc(web)+"/versions", 200)

	// Paging: one at a time, the cursors walk the whole list once.
	var walked []string
	cursor := ""
	for i := 0; i < 10; i++ {
		path := "/v0.1/servers?limit=1"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var l RegistryServerList
		e.registryGet(t, path, 200).json(t, &l)
		for _, s := range l.Servers {
			walked = append(walked, s.Server.Name+"@"+s.Server.Version)
		}
		if cursor = l.Metadata.NextCursor; cursor == "" {
			break
		}
	}
	if strings.Join(walked, " ") != strings.Join(want, " ") {
		t.Fatalf("paged = %v, want %v", walked, want)
	}
	if got := registryNames(t, e.registryGet(t, "/v0.1/servers?search=PG&version=latest", 200)); len(got) != 1 || got[0] != pg+"@2.1.0" {
		t.Fatalf("search=PG: %v", got)
	}

	// An admin adds a server; it is listed with the plugins' servers.
	weather := map[string]any{"name": "com.example/weather", "description": "Weather forecasts", "version": "1.0.0",
		"remotes": []any{map[string]any{"type": "streamable-http", "url": "https://weather.example.com/mcp"}}}
	if res := e.do("POST", "/v1/mcp-registry", e.tokens[RoleDeveloper], weather); res.status != 403 {
		t.Fatalf("a developer added a server: %d %s", res.status, res.body)
	}
	if res := e.do("POST", "/v1/mcp-registry", e.tokens[RoleAdmin], weather); res.status != 201 {
		t.Fatalf("add: %d %s", res.status, res.body)
	}
	if res := e.do("POST", "/v1/mcp-registry", e.tokens[RoleAdmin], weather); res.status != 409 {
		t.Fatalf("the same version again: %d %s", res.status, res.body)
	}
	weather["version"] = "1.1.0"
	if res := e.do("POST", "/v1/mcp-registry", e.tokens[RoleAdmin], weather); res.status != 201 {
		t.Fatalf("add 1.1.0: %d %s", res.status, res.body)
	}
	e.registryGet(t, "/v0.1/servers/"+enc("com.example/weather")+"/versions/latest", 200).json(t, &one)
	if one.Server.Version != "1.1.0" {
		t.Fatalf("latest weather = %s", one.Server.Version)
	}
	if got := registryNames(t, e.registryGet(t, "/v0.1/servers/"+enc("com.example/weather")+"/versions", 200)); len(got) != 2 {
		t.Fatalf("weather versions: %v", got)
	}
	if res := e.do("POST", "/v1/mcp-registry", e.tokens[RoleAdmin], map[string]any{"name": "io.wharf.corp/fake", "description": "x", "version": "1.0.0"}); res.status != 400 || res.apiError(t).Field != "name" {
		t.Fatalf("an added server in the plugins' namespace: %d %s", res.status, res.body)
	}
	var audited struct {
		Entries []AuditEntry `json:"entries"`
	}
	e.do("GET", "/v1/audit", e.tokens[RoleAdmin], nil).json(t, &audited)
	adds := 0
	for _, a := range audited.Entries {
		if a.Action == ActionMCPRegistryAdd {
			adds++
		}
	}
	if adds != 2 {
		t.Fatalf("audit has %d registry additions, want 2", adds)
	}

	// The policy denies pg by its name and weather by its URL: both are
	// gone from every endpoint.
	if res := e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"deniedMcpServers": []any{
		map[string]string{"serverName": "pg"}, map[string]string{"serverUrl": "https://weather.example.com/*"}}}}); res.status >= 300 {
		t.Fatalf("put layer: %d %s", res.status, res.body)
	}
	got = registryNames(t, e.registryGet(t, "/v0.1/servers", 200))
	if strings.Join(got, " ") != local+"@2.1.0 "+web+"@2.1.0" {
		t.Fatalf("after the denial: %v", got)
	}
	for _, name := range []string{pg, "com.example/weather"} {
		e.registryGet(t, "/v0.1/servers/"+enc(name)+"/versions/latest", 404)
		e.registryGet(t, "/v0.1/servers/"+enc(name)+"/versions", 404)
	}
	e.registryGet(t, "/v0.1/servers/"+enc(pg)+"/versions/2.1.0", 404)
	var added MCPRegistryAdded
	e.do("GET", "/v1/mcp-registry", e.tokens[RoleAdmin], nil).json(t, &added)
	if len(added.Servers) != 2 || added.Servers[0].Listed {
		t.Fatalf("the admin's list: %+v", added.Servers)
	}

	// An allowlist that names only web leaves web alone.
	if res := e.putLayer("team", "*new", map[string]any{"settings": map[string]any{"allowedMcpServers": []any{map[string]string{"serverName": "web"}}}}); res.status >= 300 {
		t.Fatalf("put layer: %d %s", res.status, res.body)
	}
	if got := registryNames(t, e.registryGet(t, "/v0.1/servers", 200)); strings.Join(got, " ") != web+"@2.1.0" {
		t.Fatalf("under the allowlist: %v", got)
	}

	// A plugin the policy forces off takes all its servers with it.
	if res := e.putLayer("plugins", "*new", map[string]any{"settings": map[string]any{"enabledPlugins": map[string]bool{"dbtools@corp": false}}}); res.status >= 300 {
		t.Fatalf("put layer: %d %s", res.status, res.body)
	}
	if got := registryNames(t, e.registryGet(t, "/v0.1/servers", 200)); len(got) != 0 {
		t.Fatalf("with dbtools forced off: %v", got)
	}
	e.registryGet(t, "/v0.1/servers/"+enc(web)+"/versions/latest", 404)

	// Delete: gone from the admin's list, audited.
	if res := e.do("DELETE", "/v1/mcp-registry/"+enc("com.example/weather")+"/versions/1.0.0", e.tokens[RoleAdmin], nil); res.status != 204 {
		t.Fatalf("delete: %d %s", res.status, res.body)
	}
	if res := e.do("DELETE", "/v1/mcp-registry/"+enc("com.example/weather")+"/versions/1.0.0", e.tokens[RoleAdmin], nil); res.status != 404 {
		t.Fatalf("delete again: %d %s", res.status, res.body)
	}
	e.do("GET", "/v1/mcp-registry", e.tokens[RoleAdmin], nil).json(t, &added)
	if len(added.Servers) != 1 || added.Servers[0].Server.Version != "1.1.0" {
		t.Fatalf("after delete: %+v", added.Servers)
	}
}

// Hostile names, versions, cursors and parameters are refused with an
// error that names the parameter.
func TestMCPRegistryRefusesHostileInput(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ path, field string }{
		{"/v0.1/servers?cursor=" + url.QueryEscape("not base64!"), "cursor"},
		{"/v0.1/servers?cursor=" + url.QueryEscape(strings.Repeat("A", 5000)), "cursor"},
		{"/v0.1/servers?cursor=bm9zbGFzaAo", "cursor"}, // "noslash\n"
		{"/v0.1/servers?limit=0", "limit"},
		{"/v0.1/servers?limit=abc", "limit"},
		{"/v0.1/servers?limit=100000", "limit"},
		{"/v0.1/servers?version=" + url.QueryEscape("^1.0.0"), "version"},
		{"/v0.1/servers?updated_since=yesterday", "updated_since"},
		{"/v0.1/servers?include_deleted=maybe", "include_deleted"},
		{"/v0.1/servers?search=" + strings.Repeat("x", 300), "search"},
		{"/v0.1/servers/noslash/versions", "serverName"},
		{"/v0.1/servers/" + enc("a/b/c") + "/versions/latest", "serverName"},
		{"/v0.1/servers/" + enc("com.example/x") + "/versions/" + enc("1.0 0"), "version"},
		{"/v0.1/servers/" + enc("com.example/x") + "/versions/" + enc(">=1"), "version"},
		{"/v0.1/servers/" + enc("com.ex\x00ample/x") + "/versions", "serverName"},
		{"/v0.1/servers/" + enc("..com/x") + "/versions", "serverName"},
	} {
		res := e.do("GET", c.path, "", nil)
		var body struct{ Error, Field string }
		_ = json.Unmarshal(res.body, &body)
		if res.status != 400 || body.Field != c.field || body.Error == "" {
			t.Errorf("GET %s: %d %s, want 400 naming %s", c.path, res.status, res.body, c.field)
		}
	}
	admin := e.tokens[RoleAdmin]
	for name, c := range map[string]struct{ body, field string }{
		"unknown field":    {`{"name": "com.example/x", "description": "d", "version": "1.0.0", "pacakges": []}`, "body"},
		"range":            {`{"name": "com.example/x", "description": "d", "version": "^1.0.0"}`, "version"},
		"latest":           {`{"name": "com.example/x", "description": "d", "version": "latest"}`, "version"},
		"no description":   {`{"name": "com.example/x", "version": "1.0.0"}`, "description"},
		"long description": {`{"name": "com.example/x", "description": "` + strings.Repeat("d", 101) + `", "version": "1.0.0"}`, "description"},
		"bad name":         {`{"name": "example", "description": "d", "version": "1.0.0"}`, "name"},
		"remote creds":     {`{"name": "com.example/x", "description": "d", "version": "1.0.0", "remotes": [{"type": "sse", "url": "https://u:p@x.example/sse"}]}`, "remotes[0].url"},
		"remote stdio":     {`{"name": "com.example/x", "description": "d", "version": "1.0.0", "remotes": [{"type": "stdio"}]}`, "remotes[0].type"},
		"pkg no transport": {`{"name": "com.example/x", "description": "d", "version": "1.0.0", "packages": [{"registryType": "npm", "identifier": "x"}]}`, "packages[0].transport.type"},
		"two values":       {`{"name": "com.example/x", "description": "d", "version": "1.0.0"} {}`, "body"},
	} {
		res := e.do("POST", "/v1/mcp-registry", admin, c.body)
		if res.status != 400 || res.apiError(t).Field != c.field {
			t.Errorf("%s: %d %s, want 400 naming %s", name, res.status, res.body, c.field)
		}
	}
	if res := e.do("DELETE", "/v1/mcp-registry/"+enc("com.example/x")+"/versions/latest", admin, nil); res.status != 400 {
		t.Errorf("delete latest: %d %s", res.status, res.body)
	}
	if res := e.do("DELETE", "/v1/mcp-registry/"+enc("com.example/x")+"/versions/1.0.0", admin, nil); res.status != 404 || res.apiError(t).Code != CodeNotFound {
		t.Errorf("delete a server never added: %d %s", res.status, res.body)
	}
}

// The client check itself refuses a document the published API does not
// allow.
func TestRegistrySpecRefusesBadDocument(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://wharf.test/v0.1/servers/com.example%2Fx/versions/latest", nil)
	route, params, err := registryRouter(t).FindRoute(req)
	if err != nil {
		t.Fatal(err)
	}
	for body, ok := range map[string]bool{
		`{"server": {"name": "com.example/x", "description": "d", "version": "1.0.0"}}`:                                                                              true,
		`{"server": {"name": "no-slash", "description": "d", "version": "1.0.0"}}`:                                                                                   false,
		`{"server": {"name": "com.example/x", "version": "1.0.0"}}`:                                                                                                  false,
		`{"server": {"name": "com.example/x", "description": "d", "version": "1.0.0"}, "_meta": {"io.modelcontextprotocol.registry/official": {"isLatest": "yes"}}}`: false,
	} {
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
			Status:                 200, Header: http.Header{"Content-Type": {"application/json"}},
			Options: &openapi3filter.Options{IncludeResponseStatus: true},
		}
		in.SetBodyBytes([]byte(body))
		if err := openapi3filter.ValidateResponse(context.Background(), in); (err == nil) != ok {
			t.Errorf("%s: valid=%v, err %v", body, ok, err)
		}
	}
}

// A revoked plugin's servers leave the registry with it.
func TestMCPRegistryDropsRevokedPlugin(t *testing.T) {
	needGit(t)
	e := newRegistryEnv(t)
	if got := registryNames(t, e.registryGet(t, "/v0.1/servers", 200)); len(got) != 3 {
		t.Fatalf("before: %v", got)
	}
	if res := e.do("POST", "/v1/revocations", e.tokens[RoleAdmin], map[string]string{"plugin": "dbtools@corp", "version": "2.1.0", "reason": "leaks tokens"}); res.status != 201 {
		t.Fatalf("revoke: %d %s", res.status, res.body)
	}
	if got := registryNames(t, e.registryGet(t, "/v0.1/servers", 200)); len(got) != 0 {
		t.Fatalf("a revoked plugin's servers are listed: %v", got)
	}
	e.registryGet(t, "/v0.1/servers/"+enc("io.wharf.corp/dbtools-pg")+"/versions/latest", 404)
}
