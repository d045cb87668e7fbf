package marketplace

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
	"github.com/wharfhq/wharf/internal/testutil/netnstest"
	"github.com/wharfhq/wharf/plugin"
)

// bareRepo makes root/<rel> a bare clone of a marketplace repository.
func bareRepo(t *testing.T, root, rel, name string) {
	t.Helper()
	r := newGitRepo(t, marketFiles(name, "deploy"))
	dst := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	r.git("clone", "-q", "--bare", r.dir, dst)
}

// A marketplace the user adds from a public host is trusted as named, not
// the host it redirects to: a redirect to 127.0.0.1 is refused, the
// internal server is never asked, and nothing is recorded. The public host
// is an address on lo inside the test's own network namespace.
func TestAddRedirectToPrivateAddressRefused(t *testing.T) {
	if !netnstest.Enter(t) {
		return
	}
	t.Setenv(fetch.AllowPrivateEnv, "")
	root := t.TempDir()
	bareRepo(t, root, "corp/internal.git", "internal")
	internal := gitserve.Start(t, root, gitserve.Options{})
	public := gitserve.Start(t, t.TempDir(), gitserve.Options{Addr: netnstest.PublicAddr + ":0", Redirect: internal.URL})
	ca := append(append([]byte{}, internal.CA...), public.CA...)
	src := plugin.MarketplaceSource{Kind: plugin.MktGit, URL: public.URL + "/corp/internal.git"}

	m, _ := newTestManager(t, Options{Fetch: fetch.Config{CABundle: ca}})
	_, err := m.Add(context.Background(), src, "")
	if !errors.Is(err, fetch.ErrPrivateAddress) {
		t.Fatalf("add through a redirect to 127.0.0.1: %v, want ErrPrivateAddress", err)
	}
	if n := len(internal.Requests()); n != 0 {
		t.Errorf("the internal server got %d requests", n)
	}
	if ks, _ := m.List(); len(ks) != 0 {
		t.Errorf("recorded %+v", ks)
	}

	// With private sources allowed the redirect is followed: what was
	// refused is the redirect.
	t.Setenv(fetch.AllowPrivateEnv, "1")
	k, err := m.Add(context.Background(), src, "")
	if err != nil || k.Name != "internal" {
		t.Fatalf("with %s=1: %+v, %v", fetch.AllowPrivateEnv, k, err)
	}
}

// pathGate refuses sources whose URL contains blocked.
type pathGate struct {
	mu      sync.Mutex
	blocked string
	asked   []plugin.MarketplaceSource
}

var errGateBlocked = errors.New("blocked by the test's gate")

func (g *pathGate) AllowAdd(src plugin.MarketplaceSource) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, src)
	if g.blocked != "" && strings.Contains(src.URL, g.blocked) {
		return &plugin.Error{Layer: plugin.LayerPolicy, Type: plugin.TypePolicyDenied, Object: src.String(), Err: errGateBlocked}
	}
	return nil
}

// The gate decides the repository a redirect leads to, before it is
// followed, on add and on update; its refusal is returned as is.
func TestRedirectTargetAskedOfGate(t *testing.T) {
	root := t.TempDir()
	bareRepo(t, root, "r/tools.git", "tools")
	target := gitserve.Start(t, root, gitserve.Options{HTTP: true})
	front := gitserve.Start(t, t.TempDir(), gitserve.Options{HTTP: true, Redirect: target.URL})
	src := plugin.MarketplaceSource{Kind: plugin.MktGit, URL: front.URL + "/r/tools.git", Ref: "main"}

	g := &pathGate{blocked: target.URL}
	m, _ := newTestManager(t, Options{Gate: g})
	_, err := m.Add(context.Background(), src, "")
	if !errors.Is(err, errGateBlocked) || plugin.LayerOf(err) != plugin.LayerPolicy {
		t.Fatalf("add through a redirect to a blocked repository: %v, want the gate's policy error", err)
	}
	if len(g.asked) != 2 || g.asked[1].Kind != plugin.MktGit || g.asked[1].URL != target.URL+"/r/tools.git" || g.asked[1].Ref != "main" {
		t.Fatalf("gate asked %+v; want the source, then the redirect target as a git source at ref main", g.asked)
	}
	if ks, _ := m.List(); len(ks) != 0 {
		t.Fatalf("recorded %+v", ks)
	}

	// Allowed first; the block arrives before the update.
	g.blocked = ""
	if _, err := m.Add(context.Background(), src, ""); err != nil {
		t.Fatal(err)
	}
	g.blocked = target.URL
	if _, err := m.Update(context.Background(), "tools"); !errors.Is(err, errGateBlocked) {
		t.Fatalf("update through a redirect to a blocked repository: %v", err)
	}
}

// A marketplace.json URL that redirects is decided again on the URL it
// redirects to, before the redirect is followed.
func TestURLRedirectTargetAskedOfGate(t *testing.T) {
	var served []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served = append(served, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/a.json" {
			http.Redirect(w, r, "/b.json", http.StatusFound)
			return
		}
		w.Write([]byte(manifestJSON("tools")))
	}))
	defer srv.Close()
	g := &pathGate{blocked: "/b.json"}
	m, _ := newTestManager(t, Options{Gate: g})
	_, err := m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktURL, URL: srv.URL + "/a.json"}, "")
	if !errors.Is(err, errGateBlocked) || plugin.LayerOf(err) != plugin.LayerPolicy {
		t.Fatalf("marketplace.json redirecting to a blocked URL: %v, want the gate's policy error", err)
	}
	if len(g.asked) != 2 || g.asked[1].Kind != plugin.MktURL || g.asked[1].URL != srv.URL+"/b.json" {
		t.Fatalf("gate asked %+v", g.asked)
	}
	if len(served) != 1 {
		t.Errorf("served %v; the blocked target must not be requested", served)
	}
	if ks, _ := m.List(); len(ks) != 0 {
		t.Fatalf("recorded %+v", ks)
	}
}
