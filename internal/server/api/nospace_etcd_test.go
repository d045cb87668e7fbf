package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// An etcd cluster over its space quota (--quota-backend-bytes) refuses
// writes with "mvcc: database space exceeded": the API answers 507 with
// what frees space, as it does for a full disk under bbolt; the refused
// change is not stored, every change answered as done is, and reads go on.
func TestEtcdSpaceQuotaIs507(t *testing.T) {
	c := etcdtest.StartQuota(t, 1, 1<<20)
	st, err := etcdstore.Open(c.Endpoints(), etcdstore.Options{Prefix: "/wharf", RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := New(Deps{Store: st, Policy: PolicyEngine, RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	admin, _, err := EnsureAdminToken(st, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: t.TempDir(), srv: srv, hs: httptest.NewServer(specCheck(t, srv.Handler())), tokens: map[Role]string{RoleAdmin: admin}}
	t.Cleanup(e.stop)
	big := strings.Repeat("x", 100<<10)
	var full resp
	var name string
	var created []string
	for i := 0; i < 64; i++ {
		name = fmt.Sprintf("fill_%d", i)
		res := e.putLayer(name, "*new", map[string]any{"rank": 10 + i, "settings": map[string]any{"env": map[string]string{"FILL": big}}})
		if res.status == http.StatusInsufficientStorage {
			full = res
			break
		}
		if res.status != http.StatusCreated {
			t.Fatalf("put layer %s: %d %s", name, res.status, res.body)
		}
		created = append(created, name)
	}
	if full.status == 0 {
		t.Fatal("64 layers of 100 KiB fit in a 1 MiB quota")
	}
	ae := full.apiError(t)
	if ae.Code != CodeNoSpace || !strings.Contains(ae.Message, "space quota") || !strings.Contains(ae.Message, "not saved") ||
		!strings.Contains(ae.Hint, "etcdctl defrag") || !strings.Contains(ae.Hint, "--quota-backend-bytes") {
		t.Fatalf("507: %+v", ae)
	}
	if res := e.do("GET", "/v1/policy/layers/"+name, e.tokens[RoleAdmin], nil); res.status != http.StatusNotFound {
		t.Fatalf("the refused layer: %d %s", res.status, res.body)
	}
	// etcd applies a write it admitted below the quota even when that
	// write took it over; such a write is answered as done. Every layer
	// answered 201 is there.
	for _, n := range created {
		if res := e.do("GET", "/v1/policy/layers/"+n, e.tokens[RoleAdmin], nil); res.status != http.StatusOK {
			t.Fatalf("layer %s, answered 201: %d %.200s", n, res.status, res.body)
		}
	}
	if res := e.do("GET", "/v1/policy", e.tokens[RoleAdmin], nil); res.status != http.StatusOK {
		t.Fatalf("a read of a full cluster: %d %s", res.status, res.body)
	}
}
