package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	netfetch "github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
	"github.com/wharfhq/wharf/internal/testutil/netnstest"
	"github.com/wharfhq/wharf/plugin"
)

// A plugin's git URL on a public host that redirects to a repository on
// 127.0.0.1 is refused: the redirect passes the same private-address guard
// as the URL itself, and the internal server is never asked. The public
// host is an address on lo inside a network namespace of the test's own.
func TestGitRedirectToPrivateAddressRefused(t *testing.T) {
	if !netnstest.Enter(t) {
		return
	}
	root := t.TempDir()
	repo := newTestRepo(t, filepath.Join(root, "corp", "internal.git"))
	internal := gitserve.Start(t, root, gitserve.Options{})
	public := gitserve.Start(t, t.TempDir(), gitserve.Options{Addr: netnstest.PublicAddr + ":0", Redirect: internal.URL})
	if !strings.Contains(public.URL, netnstest.PublicAddr) {
		t.Fatalf("public server at %s", public.URL)
	}
	ca := append(append([]byte{}, internal.CA...), public.CA...)
	src := plugin.Source{Kind: plugin.SourceURL, URL: public.URL + "/corp/internal.git"}

	refusePrivate(t)
	parent, dest := sandbox(t)
	_, err := fetchTo(t, &Fetcher{Net: netfetch.Config{CABundle: ca}}, src, dest)
	wantPrivateRefusal(t, err)
	if !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("error does not name the private host: %v", err)
	}
	if n := len(internal.Requests()); n != 0 {
		t.Errorf("the internal server got %d requests; a refused redirect must not reach it", n)
	}
	if ents, _ := os.ReadDir(dest); len(ents) != 0 {
		t.Errorf("the refused fetch wrote %d entries", len(ents))
	}
	assertOnlyDest(t, parent)

	// The same fetch with private sources allowed follows the redirect:
	// what was refused above is the redirect, nothing else.
	t.Setenv(AllowPrivateEnv, "1")
	_, dest = sandbox(t)
	res, err := fetchTo(t, &Fetcher{Net: netfetch.Config{CABundle: ca}}, src, dest)
	if err != nil {
		t.Fatalf("with %s=1: %v", AllowPrivateEnv, err)
	}
	if res.Commit != repo.second {
		t.Fatalf("with %s=1: commit %s, want %s", AllowPrivateEnv, res.Commit, repo.second)
	}
}

// recordingGate refuses sources whose URL contains a blocked part and
// records every source it was asked about.
type recordingGate struct {
	mu      sync.Mutex
	asked   []plugin.Source
	blocked string
}

var errBlocked = errors.New("blocked by the test's gate")

func (g *recordingGate) AllowFetch(_ context.Context, id string, src plugin.Source) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, src)
	if strings.Contains(src.URL, g.blocked) {
		return fmt.Errorf("%s from %s: %w", id, src.URL, errBlocked)
	}
	return nil
}

// The gate is asked about the source as written and about the repository
// a redirect leads to, before the redirect is followed; its refusal is the
// fetch's error, as is, and nothing of the target is fetched.
func TestGateDecidesRedirectTargets(t *testing.T) {
	root := t.TempDir()
	newTestRepo(t, filepath.Join(root, "r", "tools.git"))
	target := gitserve.Start(t, root, gitserve.Options{HTTP: true})
	front := gitserve.Start(t, t.TempDir(), gitserve.Options{HTTP: true, Redirect: target.URL})
	src := plugin.Source{Kind: plugin.SourceURL, URL: front.URL + "/r/tools.git", Ref: "main"}

	g := &recordingGate{blocked: "/r/tools.git-never"}
	_, dest := sandbox(t)
	if _, err := fetchTo(t, &Fetcher{Gate: g}, src, dest); err != nil {
		t.Fatalf("allowed redirect: %v", err)
	}
	if len(g.asked) < 2 || g.asked[0].URL != src.URL {
		t.Fatalf("gate asked %+v; want the source, then the redirect target", g.asked)
	}
	hop := g.asked[1]
	if want := target.URL + "/r/tools.git"; hop.URL != want || hop.Kind != plugin.SourceURL || hop.Ref != "main" {
		t.Fatalf("redirect asked as %+v; want a url source %s at ref main", hop, want)
	}

	// Block the target's host and port: the source as written passes, the
	// redirect does not.
	g = &recordingGate{blocked: target.URL}
	before := len(target.Requests())
	parent, dest := sandbox(t)
	_, err := fetchTo(t, &Fetcher{Gate: g}, src, dest)
	if !errors.Is(err, errBlocked) {
		t.Fatalf("redirect to a blocked repository: %v, want the gate's refusal", err)
	}
	var pe *plugin.Error
	if errors.As(err, &pe) {
		t.Errorf("the gate's refusal was wrapped in a %s error: %v", pe.Layer, err)
	}
	if n := len(target.Requests()) - before; n != 0 {
		t.Errorf("the blocked target got %d requests", n)
	}
	assertOnlyDest(t, parent)
}

// A source the gate refuses is not fetched at all.
func TestGateRefusesSourceBeforeFetch(t *testing.T) {
	root := t.TempDir()
	newTestRepo(t, filepath.Join(root, "git", "tools.git"))
	srv := gitserve.Start(t, root, gitserve.Options{HTTP: true})
	g := &recordingGate{blocked: "/git/tools"}
	_, dest := sandbox(t)
	_, err := fetchTo(t, &Fetcher{Gate: g}, plugin.Source{Kind: plugin.SourceURL, URL: srv.URL + "/git/tools.git"}, dest)
	if !errors.Is(err, errBlocked) {
		t.Fatalf("blocked source: %v, want the gate's refusal", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the server of a refused source got %d requests", n)
	}
}
