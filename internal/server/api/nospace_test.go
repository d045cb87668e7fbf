package api

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/wharfhq/wharf/internal/core/store"
)

// fullStore fails every write as a full disk does.
type fullStore struct {
	store.Store
	full bool
}

func (f *fullStore) Update(fn func(store.Tx) error) error {
	if f.full {
		return fmt.Errorf("store: commit: %w", &os.PathError{Op: "write", Path: "/srv/wharf/server.db", Err: syscall.ENOSPC})
	}
	return f.Store.Update(fn)
}

// The same mapping with the store's failure injected (runs without root),
// through the API and the console.
func TestFullDiskIs507Injected(t *testing.T) {
	fs := &fullStore{}
	e := newEnv(t, func(d *Deps) { fs.Store = d.Store; d.Store = fs; d.DataDir = "/srv/wharf" })
	u := signedIn(t, e, RoleAdmin)
	u.get("/ui/admin/audit")
	fs.full = true
	res := e.do("POST", "/v1/tokens", e.tokens[RoleAdmin], map[string]string{"role": "developer"})
	if res.status != http.StatusInsufficientStorage {
		t.Fatalf("create token on a full disk: %d %s", res.status, res.body)
	}
	if ae := res.apiError(t); ae.Code != CodeNoSpace || !strings.Contains(ae.Message, "/srv/wharf") {
		t.Fatalf("507: %+v", ae)
	}
	p := u.post("/ui/signout", url.Values{})
	if p.status != http.StatusInsufficientStorage || !strings.Contains(p.body, "Out of disk space") || !strings.Contains(p.body, "/srv/wharf") {
		t.Fatalf("console on a full disk: %d %s", p.status, p.body)
	}
}
