package policyremote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/testutil/testapi"
	"github.com/wharfhq/wharf/plugin"
)

// policyServer is a real wharf API server on 127.0.0.1 over a real bbolt
// store, counting the bundle requests that reach it.
type policyServer struct {
	t       *testing.T
	srv     *testapi.Server
	hs      *httptest.Server
	admin   string
	bundles atomic.Int64
	status  atomic.Int64 // when non-zero, every request is answered with it
	// replay, when set, is served as the bundle (200, its own ETag)
	// whatever the store holds: an older bundle served again.
	replay atomic.Pointer[[]byte]
}

func newPolicyServer(t *testing.T) *policyServer {
	t.Helper()
	p := &policyServer{t: t}
	p.srv = testapi.New(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s := p.status.Load(); s != 0 {
				http.Error(w, "injected failure", int(s))
				return
			}
			if r.URL.Path == "/v1/policy/bundle" {
				p.bundles.Add(1)
				if b := p.replay.Load(); b != nil {
					w.Header().Set("ETag", `"replayed"`)
					w.Write(*b)
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	p.hs, p.admin = p.srv.HS, p.srv.Admin
	return p
}

// put writes a layer as admin; version is the layer's current version (0 to create).
func (p *policyServer) put(name string, version int, body any) {
	p.t.Helper()
	p.srv.PutLayer(name, version, body)
}

func (p *policyServer) options(dir string) Options {
	return Options{URL: p.hs.URL, Token: p.admin, CacheDir: dir}
}

func layerOf(err error) (plugin.Layer, string) {
	var e *plugin.Error
	if errors.As(err, &e) {
		return e.Layer, e.Type
	}
	return "", ""
}

const blockEvil = `{"blockedMarketplaces":[{"source":"github","repo":"evil/market"}]}`

func TestFetchCachesThenRevalidatesWith304(t *testing.T) {
	p := newPolicyServer(t)
	p.put("org", 0, map[string]any{"rank": 10, "settings": json.RawMessage(blockEvil)})
	dir := filepath.Join(t.TempDir(), "policy", "h")
	o := p.options(dir)

	r, err := o.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.From != "network" || r.Status != 200 || r.KeySource != "first-use" || len(r.Layers) != 1 || r.Layers[0].Name != "org" {
		t.Fatalf("first pull: %+v", r)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], r.KeyID) || !strings.Contains(r.Warnings[0], "first use") {
		t.Fatalf("first pull must name the key trusted on first use: %q", r.Warnings)
	}
	if r.ETag == "" || !strings.Contains(r.ETag, strings.TrimPrefix(r.Info.Version, "sha256:")) {
		t.Fatalf("ETag %q, version %q", r.ETag, r.Info.Version)
	}
	for _, f := range []string{BundleFile, MetaFile, KeyFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("cache file %s: %v", f, err)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*")); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
	e, err := policy.NewEngine(r.Layers)
	if err != nil {
		t.Fatal(err)
	}
	err = e.AllowAdd(context.Background(), "evil", mustSource(t, `{"source":"github","repo":"evil/market"}`))
	if l, _ := layerOf(err); l != plugin.LayerPolicy || !strings.Contains(err.Error(), "org") {
		t.Fatalf("the pulled policy must block evil/market, naming layer org: %v", err)
	}

	before, _ := os.ReadFile(filepath.Join(dir, BundleFile))
	r2, err := o.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r2.Status != 304 || r2.From != "cache" || r2.ETag != r.ETag || r2.KeySource != "stored" || len(r2.Warnings) != 0 {
		t.Fatalf("unchanged policy: %+v", r2)
	}
	after, _ := os.ReadFile(filepath.Join(dir, BundleFile))
	if !bytes.Equal(before, after) || p.bundles.Load() != 2 {
		t.Fatalf("304 must leave the bundle alone (%d bundle requests)", p.bundles.Load())
	}

	p.put("org", 1, map[string]any{"rank": 10, "settings": map[string]any{}})
	r3, err := o.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r3.Status != 200 || r3.ETag == r.ETag || r3.Info.Revision <= r.Info.Revision {
		t.Fatalf("after a change: %+v (was %s)", r3, r.ETag)
	}
}

func mustSource(t *testing.T, s string) plugin.MarketplaceSource {
	t.Helper()
	out, err := plugin.DecodeMarketplaceSource([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFetchOfflineUsesCacheAndSaysHowOld(t *testing.T) {
	p := newPolicyServer(t)
	p.put("org", 0, map[string]any{"settings": json.RawMessage(blockEvil)})
	dir := t.TempDir()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	o := p.options(dir)
	o.Now = func() time.Time { return t0 }
	first, err := o.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	// A server error: the cache still holds.
	p.status.Store(503)
	o.Now = func() time.Time { return t0.Add(90 * time.Minute) }
	r, err := o.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.From != "cache" || r.Info.Version != first.Info.Version || len(r.Layers) != 1 {
		t.Fatalf("5xx: %+v", r)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "1h30m0s ago") || !strings.Contains(r.Warnings[0], "503") {
		t.Fatalf("5xx warning: %q", r.Warnings)
	}

	// The server gone: the same.
	p.status.Store(0)
	p.hs.Close()
	o.Now = func() time.Time { return t0.Add(3 * time.Hour) }
	r, err = o.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.From != "cache" || r.Status != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "3h0m0s ago") || !strings.Contains(r.Warnings[0], "unreachable") {
		t.Fatalf("offline: %+v", r)
	}

	// A tampered cache is refused, not enforced and not ignored.
	path := filepath.Join(dir, BundleFile)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = o.Fetch(context.Background())
	if l, _ := layerOf(err); l != plugin.LayerTrust || !strings.Contains(err.Error(), BundleFile) {
		t.Fatalf("tampered cache offline: %v", err)
	}
}

func TestFetchFailsClosedWithoutCache(t *testing.T) {
	p := newPolicyServer(t)
	url := p.hs.URL
	p.hs.Close()
	_, err := Fetch(context.Background(), url, "t", t.TempDir(), nil)
	if l, typ := layerOf(err); l != plugin.LayerPolicy || typ != TypeUnavailable || !strings.Contains(err.Error(), "failing closed") {
		t.Fatalf("no server, no cache: %v", err)
	}
	if plugin.HintOf(err) == "" {
		t.Fatal("no hint")
	}
}

func TestFetchBadTokenIsRefused(t *testing.T) {
	p := newPolicyServer(t)
	o := p.options(t.TempDir())
	o.Token = "wrong"
	_, err := o.Fetch(context.Background())
	if l, typ := layerOf(err); l != plugin.LayerPolicy || typ != TypeUnavailable || !strings.Contains(err.Error(), "401") || !strings.Contains(plugin.HintOf(err), "--token") {
		t.Fatalf("bad token: %v (hint %q)", err, plugin.HintOf(err))
	}
}

func TestFetchRefusesBundleOfAnotherKey(t *testing.T) {
	p := newPolicyServer(t)
	other := newPolicyServer(t)
	dir := t.TempDir()
	// other's key, fetched first (trust on first use), then pinned.
	if _, err := other.options(filepath.Join(dir, "other")).Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	otherKey, err := os.ReadFile(filepath.Join(dir, "other", KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	o := p.options(filepath.Join(dir, "p"))
	o.Key = otherKey
	_, err = o.Fetch(context.Background())
	if l, typ := layerOf(err); l != plugin.LayerTrust || typ != plugin.TypeTrustRejected {
		t.Fatalf("bundle signed by another key: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "p", BundleFile)); !os.IsNotExist(err) {
		t.Fatalf("a refused bundle was cached: %v", err)
	}

	// The same with a stored first-use key that the server no longer signs with.
	o.Key = nil
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(o.CacheDir, KeyFile), otherKey, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = o.Fetch(context.Background())
	if l, _ := layerOf(err); l != plugin.LayerTrust || !strings.Contains(plugin.HintOf(err), KeyFile) {
		t.Fatalf("bundle of another key than the stored one: %v (hint %q)", err, plugin.HintOf(err))
	}
}

func TestFetchHealsACacheWhoseMetaDoesNotMatch(t *testing.T) {
	p := newPolicyServer(t)
	dir := t.TempDir()
	o := p.options(dir)
	if _, err := o.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	// As after a crash between the bundle's and the meta's rename: the ETag
	// names another bundle, so it must not be sent.
	var m meta
	mb, _ := os.ReadFile(filepath.Join(dir, MetaFile))
	if err := json.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	m.SHA256 = strings.Repeat("0", 64)
	if err := os.WriteFile(filepath.Join(dir, MetaFile), mustJSON(m), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := o.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != 200 || r.From != "network" {
		t.Fatalf("a mismatched meta must not send its ETag: %+v", r)
	}
}

func TestBaseURLAndCacheDir(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:7070":                      "http://127.0.0.1:7070",
		"http://localhost:7070/":                     "http://localhost:7070",
		"https://wharf.example.com/v1/policy/bundle": "https://wharf.example.com",
		"https://wharf.example.com/base/?x=1":        "https://wharf.example.com/base",
	} {
		got, err := BaseURL(in)
		if err != nil || got != want {
			t.Fatalf("BaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "wharf.example.com", "ftp://x", "http://wharf.example.com"} {
		_, err := BaseURL(bad)
		if l, _ := layerOf(err); l != plugin.LayerIntent {
			t.Fatalf("BaseURL(%q): %v", bad, err)
		}
	}
	d, err := CacheDir("/h", "https://Wharf.Example.com:8443")
	if err != nil || d != filepath.Join("/h", "policy", "wharf.example.com_8443") {
		t.Fatalf("CacheDir = %q, %v", d, err)
	}
	d, err = CacheDir("/h", "http://[::1]:7070")
	if err != nil || d != filepath.Join("/h", "policy", "__1_7070") {
		t.Fatalf("CacheDir v6 = %q, %v", d, err)
	}
}
