package api

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"github.com/wharfhq/wharf/internal/core/store"
)

// The bundle of a policy version is built once and kept in the store: a
// restarted server (or another replica) sends the very same bytes, although
// a fresh ECDSA signature would differ; bundles of old versions are pruned.
func TestStoredBundleIsReusedAndPruned(t *testing.T) {
	e := newEnv(t)
	get := func() []byte {
		t.Helper()
		res := e.do("GET", "/v1/policy/bundle", e.tokens[RoleAgent], nil)
		if res.status != http.StatusOK {
			t.Fatalf("bundle: %d %s", res.status, res.body)
		}
		return res.body
	}
	ifMatch := "*new"
	var first []byte
	for i := range keptBundles + 6 {
		res := e.putLayer("org", ifMatch, map[string]any{"settings": map[string]any{
			"blockedMarketplaces": []map[string]string{{"source": "directory", "path": fmt.Sprintf("/blocked/%d", i)}}}})
		if res.status/100 != 2 {
			t.Fatalf("put %d: %d %s", i, res.status, res.body)
		}
		ifMatch = res.header.Get("ETag")
		b := get()
		if i == 0 {
			first = b
		}
	}
	last := get()
	e.restart()
	if again := get(); !bytes.Equal(again, last) {
		t.Fatal("after a restart the same policy version is sent with other bytes")
	}
	var kept int
	if err := e.st.View(func(r store.Reader) error {
		kvs, err := r.List(bucketBundle, "")
		kept = len(kvs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if kept == 0 || kept > keptBundles+1 {
		t.Fatalf("%d bundles kept in the store after %d policy versions; want 1 to %d", kept, keptBundles+6, keptBundles+1)
	}
	if bytes.Equal(first, last) {
		t.Fatal("different policies gave the same bundle")
	}
}
