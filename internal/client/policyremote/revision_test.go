package policyremote

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

// rawBundle is the server's current bundle as served.
func (p *policyServer) rawBundle() []byte {
	p.t.Helper()
	req, _ := http.NewRequest("GET", p.hs.URL+"/v1/policy/bundle", nil)
	req.Header.Set("Authorization", "Bearer "+p.admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		p.t.Fatalf("GET bundle: %d %v", res.StatusCode, err)
	}
	return b
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range []string{BundleFile, MetaFile, KeyFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	return out
}

// An older bundle, validly signed by the same key, served again at the
// same URL is refused (trust layer, exit 4) and the cache keeps the newer
// one: a replay cannot turn a denial back into an allow.
func TestFetchRefusesReplayedOlderBundle(t *testing.T) {
	p := newPolicyServer(t)
	p.put("org", 0, map[string]any{"rank": 10, "settings": json.RawMessage(`{}`)})
	old := p.rawBundle() // allows evil/market
	p.put("org", 1, map[string]any{"rank": 10, "settings": json.RawMessage(blockEvil)})
	dir := filepath.Join(t.TempDir(), "policy", "h")
	o := p.options(dir)
	r, err := o.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	newRev := r.Info.Revision
	if newRev < 2 {
		t.Fatalf("the server's bundle has revision %d, want it to count the changes", newRev)
	}
	before := readAll(t, dir)

	p.replay.Store(&old)
	_, err = o.Fetch(context.Background())
	if l, typ := layerOf(err); l != plugin.LayerTrust || typ != TypeRollback {
		t.Fatalf("replayed bundle: err = %v (%s/%s), want a %s trust error", err, l, typ, TypeRollback)
	}
	after := readAll(t, dir)
	for f, b := range before {
		if !bytes.Equal(b, after[f]) {
			t.Errorf("%s was changed by the refused bundle", f)
		}
	}
	// Offline, the newer cached bundle is still the one enforced.
	p.replay.Store(nil)
	p.status.Store(503)
	r, err = o.Fetch(context.Background())
	if err != nil || r.Info.Revision != newRev || r.From != "cache" {
		t.Fatalf("offline after the replay: %+v %v, want revision %d from the cache", r, err, newRev)
	}

	// The same revision with other content is refused as well.
	p.status.Store(0)
	p.put("org", 2, map[string]any{"rank": 10, "settings": json.RawMessage(`{"disableSideloadFlags": true}`)})
	forked := p.rawBundle()
	var m meta
	mb, _ := os.ReadFile(filepath.Join(dir, MetaFile))
	if err := json.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	// Pretend the cache holds that revision under other content.
	m.Revision = newRev + 1
	m.Version = "sha256:other"
	m.ETag = ""
	if err := os.WriteFile(filepath.Join(dir, MetaFile), mustJSON(m), 0o644); err != nil {
		t.Fatal(err)
	}
	p.replay.Store(&forked)
	if _, err := o.Fetch(context.Background()); !isType(err, TypeRollback) {
		t.Fatalf("same revision, other policy: %v", err)
	}
}

func isType(err error, typ string) bool {
	_, t := layerOf(err)
	return t == typ
}

// With maxAge, an offline client enforces its cached bundle only while it
// is younger than maxAge; past it, every pull fails closed.
func TestFetchOfflineFailsClosedPastMaxAge(t *testing.T) {
	p := newPolicyServer(t)
	p.put("org", 0, map[string]any{"rank": 10, "settings": json.RawMessage(blockEvil)})
	dir := filepath.Join(t.TempDir(), "policy", "h")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := p.options(dir)
	o.Now = func() time.Time { return now }
	o.MaxAge = 24 * time.Hour
	if _, err := o.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.status.Store(503)
	now = now.Add(23 * time.Hour)
	if r, err := o.Fetch(context.Background()); err != nil || r.From != "cache" {
		t.Fatalf("within maxAge: %+v %v", r, err)
	}
	now = now.Add(2 * time.Hour)
	_, err := o.Fetch(context.Background())
	if l, typ := layerOf(err); l != plugin.LayerPolicy || typ != TypeStale {
		t.Fatalf("past maxAge: %v (%s/%s), want %s", err, l, typ, TypeStale)
	}
	// Without maxAge the cache holds however old it is.
	o.MaxAge = 0
	if _, err := o.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Reaching the server again confirms the bundle and lifts the limit.
	o.MaxAge = 24 * time.Hour
	p.status.Store(0)
	if r, err := o.Fetch(context.Background()); err != nil || r.Status != 304 {
		t.Fatalf("server back: %+v %v", r, err)
	}
	p.status.Store(503)
	if _, err := o.Fetch(context.Background()); err != nil {
		t.Fatalf("just confirmed: %v", err)
	}
}

// A key pinned by id (managed policyKey) refuses a server whose key is
// another, and a stored key that is not the pinned one is not used.
func TestFetchKeyIDPin(t *testing.T) {
	p := newPolicyServer(t)
	p.put("org", 0, map[string]any{"rank": 10, "settings": json.RawMessage(blockEvil)})
	dir := filepath.Join(t.TempDir(), "policy", "h")
	o := p.options(dir)
	r, err := o.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o.KeyID = r.KeyID
	if r, err := o.Fetch(context.Background()); err != nil || r.KeySource != "pinned" {
		t.Fatalf("right pin: %+v %v", r, err)
	}
	o.KeyID = "wharf-0000000000000000"
	if _, err := o.Fetch(context.Background()); !isType(err, plugin.TypeTrustRejected) {
		t.Fatalf("wrong pin: %v", err)
	}
}
