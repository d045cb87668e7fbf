package api

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
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

// Every JSON response the tests of this package produce is checked against
// docs/openapi.yaml (kin-openapi's response validation): the env's server
// is wrapped in specCheck, so a field the spec does not document, a
// required field that is missing, or a value of the wrong type fails the
// test that produced it. The spec is read strictly: an object schema that
// lists properties and says nothing of additionalProperties admits no
// other property (an allOf is merged first, so that its parts together
// describe the object).
//
// specCheck also records each documented operation that answered with
// success (a status below 400), and TestMain fails a run of the whole
// package in which one never did: every operation the spec documents is
// exercised here, so none is documented from memory. (TestOpenAPIMatchesRoutes
// checks the other direction: every route the server registers is
// documented.)

var spec struct {
	once   sync.Once
	router routers.Router
	err    error
}

func specRouter() (routers.Router, error) {
	spec.once.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile(filepath.Join("..", "..", "..", "docs", "openapi.yaml"))
		if err != nil {
			spec.err = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			spec.err = err
			return
		}
		strictSpec(doc)
		doc.Servers = openapi3.Servers{{URL: "/"}}
		spec.router, spec.err = gorillamux.NewRouter(doc)
	})
	return spec.router, spec.err
}

// strictSpec merges every allOf into one object schema, then closes every
// object schema that lists properties and leaves additionalProperties
// unsaid.
func strictSpec(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(s *openapi3.Schema)
	walk = func(s *openapi3.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if len(s.AllOf) > 0 {
			merged := openapi3.Schemas{}
			var required []string
			for _, part := range s.AllOf {
				if part.Value == nil {
					continue
				}
				for k, v := range part.Value.Properties {
					merged[k] = v
				}
				required = append(required, part.Value.Required...)
			}
			for k, v := range s.Properties {
				merged[k] = v
			}
			s.AllOf = nil
			s.Type = &openapi3.Types{openapi3.TypeObject}
			s.Properties = merged
			s.Required = append(s.Required, required...)
		}
		if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			s.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(false)}
		}
		for _, p := range s.Properties {
			walk(p.Value)
		}
		if s.Items != nil {
			walk(s.Items.Value)
		}
		if s.AdditionalProperties.Schema != nil {
			walk(s.AdditionalProperties.Schema.Value)
		}
		for _, alt := range append(append(openapi3.SchemaRefs{}, s.OneOf...), s.AnyOf...) {
			walk(alt.Value)
		}
	}
	for _, s := range doc.Components.Schemas {
		walk(s.Value)
	}
	for _, r := range doc.Components.Responses {
		if r.Value != nil {
			for _, mt := range r.Value.Content {
				walk(mt.Schema.Value)
			}
		}
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for _, mt := range r.Value.Content {
					if mt.Schema != nil {
						walk(mt.Schema.Value)
					}
				}
			}
		}
	}
}

// exercised is the documented operations ("GET /v1/tokens/{id}", the
// spec's path) that answered a test with success.
var exercised struct {
	sync.Mutex
	ops map[string]bool
}

// recordExercised notes req's operation as exercised when status is a
// success; a request no documented operation matches is not recorded.
func recordExercised(req *http.Request, status int) {
	if status >= 400 {
		return
	}
	router, err := specRouter()
	if err != nil {
		return // checkResponse reports it
	}
	route, _, err := router.FindRoute(req)
	if err != nil {
		return
	}
	exercised.Lock()
	defer exercised.Unlock()
	if exercised.ops == nil {
		exercised.ops = map[string]bool{}
	}
	exercised.ops[route.Method+" "+route.Path] = true
}

// unexercised is the operations docs/openapi.yaml documents that no test
// of this run answered with success, sorted.
func unexercised() ([]string, error) {
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join("..", "..", "..", "docs", "openapi.yaml"))
	if err != nil {
		return nil, err
	}
	exercised.Lock()
	defer exercised.Unlock()
	var missing []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if key := method + " " + path; !exercised.ops[key] {
				missing = append(missing, key)
			}
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// wholePackageRan reports whether this run ran every test of the package:
// no -run, -skip, -short or -list narrowed it.
func wholePackageRan() bool {
	for _, name := range []string{"test.run", "test.skip", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}

// TestMain runs the package's tests, then, when they all ran, fails the
// run if an operation docs/openapi.yaml documents was never
// answered with success by one of them.
func TestMain(m *testing.M) {
	code := m.Run()
	if wholePackageRan() {
		missing, err := unexercised()
		if err != nil {
			fmt.Fprintf(os.Stderr, "--- FAIL: docs/openapi.yaml: %v\n", err)
			code = 1
		} else if len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "--- FAIL: docs/openapi.yaml documents operations no test of this package answered with success "+
				"(exercise each in a test whose server is wrapped in specCheck):\n\t%s\n", strings.Join(missing, "\n\t"))
			code = 1
		}
	}
	os.Exit(code)
}

// checkResponse validates one JSON response of the API against the spec;
// responses that are not JSON, or not of an API route the spec documents
// (the console, the channels' git repositories), are not its concern.
func checkResponse(req *http.Request, status int, header http.Header, body []byte) error {
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if ct != "application/json" || !isAPIPath(req.URL.Path) || req.Method == http.MethodHead {
		return nil
	}
	router, err := specRouter()
	if err != nil {
		return err
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
			return nil // not an API route: its 404/405 has no operation to match
		}
		return err
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(req.Context(), in)
}

// isAPIPath reports whether path is one of the API's (wharf's /v1 and the
// MCP registry's /v0.1), not the console's or a channel repository's.
func isAPIPath(path string) bool {
	return strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/v0.1/")
}

// specCheck serves h and fails t on any response checkResponse refuses.
func specCheck(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		res := rec.Result()
		body, _ := io.ReadAll(res.Body)
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(body)
		req := r.Clone(context.Background())
		req.Body = io.NopCloser(bytes.NewReader(nil))
		recordExercised(req, res.StatusCode)
		if err := checkResponse(req, res.StatusCode, res.Header, body); err != nil {
			t.Errorf("%s %s → %d does not match docs/openapi.yaml: %v\nbody: %.2000s", r.Method, r.URL.Path, res.StatusCode, err, body)
		}
	})
}

// The check itself: a response with a field the spec does not document,
// or without one it requires, is refused; the documented one passes.
func TestSpecCheckRefusesUndocumentedFields(t *testing.T) {
	req := httptest.NewRequest("GET", "/v1/inventory/plugins/corp/deploy", nil)
	h := http.Header{"Content-Type": {"application/json"}}
	good := `{"plugin": {"plugin": "deploy@corp", "machines": 1, "versions": {}, "digests": {}, "states": {}, "installs": {}, "unknownDigests": 0},
		"machines": [{"machine": "m-1", "clientKind": "wharf", "lastSeen": "2026-01-02T03:04:05Z",
		"installs": [{"version": "1.0.0", "scope": "user", "install": "git", "enabled": true, "state": "active"}]}]}`
	if err := checkResponse(req, 200, h, []byte(good)); err != nil {
		t.Fatalf("documented response refused: %v", err)
	}
	for name, body := range map[string]string{
		"storage key": strings.Replace(good, `"version": "1.0.0"`, `"v": "1.0.0"`, 1),
		"extra field": strings.Replace(good, `"machine": "m-1"`, `"machine": "m-1", "owner": "tok_1"`, 1),
		"missing":     strings.Replace(good, `"clientKind": "wharf", `, ``, 1),
	} {
		if err := checkResponse(req, 200, h, []byte(body)); err == nil {
			t.Errorf("%s: accepted %s", name, body)
		}
	}
}
