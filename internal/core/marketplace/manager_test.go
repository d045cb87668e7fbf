package marketplace

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
	"github.com/wharfhq/wharf/plugin"
)

// gitRepo is a real git repository in a temp dir, driven with the git binary.
type gitRepo struct {
	t   testing.TB
	dir string
}

func newGitRepo(t *testing.T, files map[string]string) *gitRepo { return newGitRepoTB(t, files) }

func newGitRepoB(b *testing.B, files map[string]string) string { return newGitRepoTB(b, files).dir }

func newGitRepoTB(t testing.TB, files map[string]string) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not installed")
	}
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	r.commit("initial", files)
	return r
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+r.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *gitRepo) commit(msg string, files map[string]string) string {
	r.t.Helper()
	for name, body := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

func (r *gitRepo) url() string { return "file://" + r.dir }

func manifestJSON(name string, plugins ...string) string {
	var entries []string
	for _, p := range plugins {
		entries = append(entries, fmt.Sprintf(`{"name":%q,"source":"./plugins/%s","description":"the %s plugin","category":"dev","tags":["t-%s"]}`, p, p, p, p))
	}
	return fmt.Sprintf(`{"name":%q,"owner":{"name":"Test"},"plugins":[%s]}`, name, strings.Join(entries, ","))
}

func marketFiles(name string, plugins ...string) map[string]string {
	files := map[string]string{ManifestPath: manifestJSON(name, plugins...)}
	for _, p := range plugins {
		files["plugins/"+p+"/commands/"+p+".md"] = "---\ndescription: " + p + "\n---\nDo " + p + ".\n"
	}
	return files
}

func newTestManager(t *testing.T, opts Options) (*Manager, string) {
	t.Helper()
	home := t.TempDir()
	st, err := store.OpenBolt(filepath.Join(home, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if opts.Dir == "" {
		opts.Dir = filepath.Join(home, "marketplaces")
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	return NewManager(st, opts), home
}

func gitSource(t *testing.T, s string) plugin.MarketplaceSource {
	t.Helper()
	src, err := plugin.ParseMarketplaceSource(s)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAddGitCloneIsShallowAndRecorded(t *testing.T) {
	repo := newGitRepo(t, marketFiles("corp", "deploy"))
	repo.commit("second", map[string]string{"README.md": "two"})
	head := repo.commit("third", marketFiles("corp", "deploy", "lint"))
	m, _ := newTestManager(t, Options{})

	k, err := m.Add(context.Background(), gitSource(t, repo.url()), "")
	if err != nil {
		t.Fatal(err)
	}
	if k.Name != "corp" || k.Commit != head || k.InstallLocation != filepath.Join(m.opts.Dir, "corp") {
		t.Fatalf("Known = %+v, want corp at %s", k, head)
	}
	// Shallow: only the tip commit is present.
	out, err := exec.Command("git", "-C", k.InstallLocation, "rev-list", "--count", "HEAD").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Errorf("clone has %s commits (%v), want 1 (shallow)", out, err)
	}
	list, err := m.List()
	if err != nil || len(list) != 1 || list[0].Name != "corp" || !list[0].Source.Equal(k.Source) {
		t.Fatalf("List = %+v, %v", list, err)
	}
	// No temporary directories are left behind.
	entries, _ := os.ReadDir(m.opts.Dir)
	if len(entries) != 1 {
		t.Errorf("marketplaces dir holds %d entries, want only corp", len(entries))
	}
	c, err := m.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if hits := c.Search("LINT"); len(hits) != 1 || hits[0].ID.String() != "lint@corp" {
		t.Errorf("search LINT = %+v", hits)
	}
}

func TestAddGitRefBranchTagAndSHA(t *testing.T) {
	repo := newGitRepo(t, marketFiles("corp", "v1only"))
	first := repo.git("rev-parse", "HEAD")
	repo.git("tag", "v1")
	repo.git("checkout", "-q", "-b", "next")
	repo.commit("on next", marketFiles("corp", "nextonly"))
	repo.git("checkout", "-q", "main")
	repo.commit("on main", marketFiles("corp", "mainonly"))

	for _, tt := range []struct{ ref, plugin string }{
		{"", "mainonly"}, {"next", "nextonly"}, {"v1", "v1only"}, {first, "v1only"},
	} {
		t.Run("ref="+tt.ref, func(t *testing.T) {
			m, _ := newTestManager(t, Options{})
			s := repo.url()
			if tt.ref != "" {
				s += "#" + tt.ref
			}
			k, err := m.Add(context.Background(), gitSource(t, s), "")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(readFile(t, k.ManifestFile()), tt.plugin) {
				t.Errorf("ref %q checked out the wrong tree: %s", tt.ref, readFile(t, k.ManifestFile()))
			}
		})
	}
	m, _ := newTestManager(t, Options{})
	_, err := m.Add(context.Background(), gitSource(t, repo.url()+"#nosuch"), "")
	if err == nil || !strings.Contains(err.Error(), `no branch or tag named "nosuch"`) {
		t.Errorf("missing ref: %v", err)
	}
}

func TestUpdatePicksUpNewCommitAndHonoursPin(t *testing.T) {
	repo := newGitRepo(t, marketFiles("corp", "deploy"))
	pinned := repo.git("rev-parse", "HEAD")
	m, _ := newTestManager(t, Options{})
	k, err := m.Add(context.Background(), gitSource(t, repo.url()), "")
	if err != nil {
		t.Fatal(err)
	}
	mp, _ := newTestManager(t, Options{})
	kp, err := mp.Add(context.Background(), gitSource(t, repo.url()+"#"+pinned), "")
	if err != nil {
		t.Fatal(err)
	}

	head := repo.commit("add lint", marketFiles("corp", "deploy", "lint"))
	repo.git("rm", "-q", "plugins/deploy/commands/deploy.md")
	repo.git("commit", "-q", "-m", "drop deploy command")
	head = repo.git("rev-parse", "HEAD")

	k2, err := m.Update(context.Background(), "corp")
	if err != nil {
		t.Fatal(err)
	}
	if k2.Commit != head || !strings.Contains(readFile(t, k.ManifestFile()), "lint") {
		t.Fatalf("update did not reach %s: %+v", head, k2)
	}
	if _, err := os.Stat(filepath.Join(k.InstallLocation, "plugins/deploy/commands/deploy.md")); !os.IsNotExist(err) {
		t.Errorf("file deleted upstream is still in the clone: %v", err)
	}
	if !k2.LastUpdated.After(k.LastUpdated) && !k2.LastUpdated.Equal(k.LastUpdated) {
		t.Errorf("lastUpdated went backwards")
	}

	kp2, err := mp.Update(context.Background(), "corp")
	if err != nil {
		t.Fatal(err)
	}
	if kp2.Commit != pinned || strings.Contains(readFile(t, kp.ManifestFile()), "lint") {
		t.Errorf("pinned marketplace moved off %s: %+v", pinned, kp2)
	}
}

func TestFailedUpdateLeavesCloneIntact(t *testing.T) {
	repo := newGitRepo(t, marketFiles("corp", "deploy"))
	m, _ := newTestManager(t, Options{})
	k, err := m.Add(context.Background(), gitSource(t, repo.url()), "")
	if err != nil {
		t.Fatal(err)
	}
	before := readFile(t, k.ManifestFile())

	t.Run("broken manifest upstream", func(t *testing.T) {
		repo.commit("break it", map[string]string{ManifestPath: `{"name": "corp", "plugins": [`})
		_, err := m.Update(context.Background(), "corp")
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Type != plugin.TypeManifestParse {
			t.Fatalf("update to a broken manifest: %v, want a manifest-parse-error", err)
		}
		if got := readFile(t, k.ManifestFile()); got != before {
			t.Errorf("clone changed after a failed update:\n%s", got)
		}
		got, _ := m.Get("corp")
		if got.Commit != k.Commit {
			t.Errorf("recorded commit moved to %s", got.Commit)
		}
	})
	t.Run("upstream gone", func(t *testing.T) {
		if err := os.RemoveAll(repo.dir); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Update(context.Background(), "corp"); err == nil {
			t.Fatal("update from a deleted repository succeeded")
		}
		if got := readFile(t, k.ManifestFile()); got != before {
			t.Errorf("clone changed after a failed fetch")
		}
		c, _ := m.Catalog()
		if _, err := c.Lookup(plugin.MustParseID("deploy@corp")); err != nil {
			t.Errorf("catalog lost deploy@corp: %v", err)
		}
	})
}

func TestFailedAddLeavesNothingBehind(t *testing.T) {
	repo := newGitRepo(t, map[string]string{"README.md": "no marketplace here"})
	m, _ := newTestManager(t, Options{})
	_, err := m.Add(context.Background(), gitSource(t, repo.url()), "")
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Type != plugin.TypeNotFound || !strings.Contains(pe.Hint, ".claude-plugin/marketplace.json") {
		t.Fatalf("add of a repo without marketplace.json: %v", err)
	}
	entries, _ := os.ReadDir(m.opts.Dir)
	if len(entries) != 0 {
		t.Errorf("failed add left %d entries in %s", len(entries), m.opts.Dir)
	}
	if l, _ := m.List(); len(l) != 0 {
		t.Errorf("failed add recorded %+v", l)
	}
}

func TestAddSameNameFromOtherSourceFails(t *testing.T) {
	a := newGitRepo(t, marketFiles("corp", "deploy"))
	b := newGitRepo(t, marketFiles("corp", "other"))
	m, _ := newTestManager(t, Options{})
	if _, err := m.Add(context.Background(), gitSource(t, a.url()), ""); err != nil {
		t.Fatal(err)
	}
	_, err := m.Add(context.Background(), gitSource(t, b.url()), "")
	if !errors.Is(err, ErrNameTaken) || plugin.LayerOf(err) != plugin.LayerIntent {
		t.Fatalf("second add: %v, want ErrNameTaken", err)
	}
	if !strings.Contains(err.Error(), a.url()) || !strings.Contains(err.Error(), b.url()) {
		t.Errorf("error %q does not name both sources", err)
	}
	if !strings.Contains(plugin.HintOf(err), "--name") {
		t.Errorf("hint %q does not offer --name", plugin.HintOf(err))
	}
	// The first marketplace is untouched; --name works around the clash.
	c, _ := m.Catalog()
	if _, err := c.Lookup(plugin.MustParseID("deploy@corp")); err != nil {
		t.Errorf("first marketplace damaged: %v", err)
	}
	k, err := m.Add(context.Background(), gitSource(t, b.url()), "corp2")
	if err != nil || k.Name != "corp2" {
		t.Fatalf("add --name corp2: %+v, %v", k, err)
	}
	// Adding the same source again is a refresh, not an error.
	if _, err := m.Add(context.Background(), gitSource(t, a.url()), ""); err != nil {
		t.Errorf("re-adding the same source: %v", err)
	}
}

// localMarketplaceDir writes a marketplace "local" with one plugin "fmt"
// into a new directory.
func localMarketplaceDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range marketFiles("local", "fmt") {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestAddDirectoryAndFileReadInPlace(t *testing.T) {
	dir := localMarketplaceDir(t)
	m, _ := newTestManager(t, Options{})
	k, err := m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: dir}, "")
	if err != nil {
		t.Fatal(err)
	}
	if k.InstallLocation != dir {
		t.Errorf("directory source installed at %s, want in place at %s", k.InstallLocation, dir)
	}
	c, _ := m.Catalog()
	h, err := c.Lookup(plugin.MustParseID("fmt@local"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := h.Resolve(nil)
	if err != nil || rs.Dir != filepath.Join(dir, "plugins", "fmt") {
		t.Errorf("resolved %+v, %v", rs, err)
	}
	// Remove never deletes a directory wharf only read.
	if _, err := m.Remove(context.Background(), "local"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestPath)); err != nil {
		t.Errorf("remove deleted the user's directory: %v", err)
	}

	kf, err := m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktFile, Path: filepath.Join(dir, ManifestPath)}, "byfile")
	if err != nil {
		t.Fatal(err)
	}
	c, _ = m.Catalog()
	h, err = c.Lookup(plugin.MustParseID("fmt@byfile"))
	if err != nil {
		t.Fatal(err)
	}
	if rs, _ := h.Resolve(nil); rs.Dir != filepath.Join(dir, "plugins", "fmt") {
		t.Errorf("file source resolves relative plugins to %s", rs.Dir)
	}
	_ = kf
}

func TestRemoveDeletesClone(t *testing.T) {
	repo := newGitRepo(t, marketFiles("corp", "deploy"))
	m, _ := newTestManager(t, Options{})
	k, err := m.Add(context.Background(), gitSource(t, repo.url()), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Remove(context.Background(), "corp"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(k.InstallLocation); !os.IsNotExist(err) {
		t.Errorf("clone still there: %v", err)
	}
	if _, err := m.Get("corp"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Get after remove: %v", err)
	}
	if _, err := m.Remove(context.Background(), "corp"); !errors.Is(err, ErrUnknown) || plugin.HintOf(err) == "" {
		t.Errorf("second remove: %v", err)
	}
}

func TestAddURLSendsHeadersAndStoresCatalog(t *testing.T) {
	var mu sync.Mutex
	var gotHeader string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotHeader = r.Header.Get("X-Corp-Token")
		mu.Unlock()
		if r.URL.Path != "/catalog/marketplace.json" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, manifestJSON("remote", "alpha"))
	}))
	defer srv.Close()
	m, _ := newTestManager(t, Options{Getenv: func(k string) string {
		if k == "CORP_TOKEN" {
			return "s3cret"
		}
		return ""
	}})
	src := plugin.MarketplaceSource{Kind: plugin.MktURL, URL: srv.URL + "/catalog/marketplace.json", Headers: map[string]string{"X-Corp-Token": "${CORP_TOKEN}"}}
	k, err := m.Add(context.Background(), src, "")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if gotHeader != "s3cret" {
		t.Errorf("server saw X-Corp-Token %q, want the expanded value", gotHeader)
	}
	mu.Unlock()
	if !strings.Contains(readFile(t, k.ManifestFile()), "alpha") {
		t.Error("catalog not stored")
	}
	c, _ := m.Catalog()
	h, err := c.Lookup(plugin.MustParseID("alpha@remote"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Resolve(nil); err == nil || !strings.Contains(err.Error(), "relative") {
		t.Errorf("relative source of a URL marketplace resolved: %v", err)
	}

	_, err = m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktURL, URL: srv.URL + "/missing.json"}, "")
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
}

func TestNetworkTimeoutIsHonoured(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a server that never answers
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	m, _ := newTestManager(t, Options{GitTimeout: 300 * time.Millisecond})
	for _, src := range []plugin.MarketplaceSource{
		{Kind: plugin.MktGit, URL: srv.URL + "/repo.git"},
		{Kind: plugin.MktURL, URL: srv.URL + "/marketplace.json"},
	} {
		_, err := m.Add(context.Background(), src, "")
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("%s: %v, want ErrTimeout", src.Kind, err)
			continue
		}
		if !strings.Contains(plugin.HintOf(err)+err.Error(), "WHARF_GIT_TIMEOUT") {
			t.Errorf("%s: timeout error does not name WHARF_GIT_TIMEOUT: %v", src.Kind, err)
		}
	}
}

type denyGate struct{ calls []plugin.MarketplaceSource }

func (g *denyGate) AllowAdd(src plugin.MarketplaceSource) error {
	g.calls = append(g.calls, src)
	return &plugin.Error{Layer: plugin.LayerPolicy, Type: plugin.TypePolicyDenied, Object: src.String(), Err: errors.New("not on the allowlist")}
}

func TestGateIsAskedBeforeAnyAccess(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	g := &denyGate{}
	m, _ := newTestManager(t, Options{Gate: g})
	_, err := m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktGit, URL: srv.URL + "/r.git"}, "")
	if plugin.LayerOf(err) != plugin.LayerPolicy {
		t.Fatalf("add through a denying gate: %v", err)
	}
	_, err = m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: "/nonexistent/dir"}, "")
	if plugin.LayerOf(err) != plugin.LayerPolicy {
		t.Fatalf("directory add through a denying gate: %v (disk must not be read first)", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server was contacted %d times despite the gate", n)
	}
	if len(g.calls) != 2 {
		t.Errorf("gate asked %d times, want 2", len(g.calls))
	}
	if _, err := os.Stat(m.opts.Dir); !os.IsNotExist(err) {
		t.Errorf("denied add created %s", m.opts.Dir)
	}
}

// TestTokenSentToGitHubStandIn serves a real repository over git's smart
// HTTP protocol (git http-backend) on https://127.0.0.1, acting as a GitHub
// Enterprise host that requires the token.
func TestTokenSentToGitHubStandIn(t *testing.T) {
	repo := newGitRepo(t, marketFiles("ghe", "deploy"))
	root := t.TempDir()
	bare := filepath.Join(root, "corp", "plugins.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", repo.dir, bare).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	srv := gitserve.Start(t, root, gitserve.Options{Allow: func(r *http.Request) bool {
		_, pass, ok := r.BasicAuth()
		return ok && pass == "tok-123"
	}})

	withToken := func(k string) string { return map[string]string{"GITHUB_TOKEN": "tok-123"}[k] }
	m, _ := newTestManager(t, Options{Fetch: fetch.Config{GitHubHost: srv.URL, CABundle: srv.CA, Getenv: withToken}})
	k, err := m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "corp/plugins"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if k.Name != "ghe" {
		t.Errorf("name = %s", k.Name)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:tok-123"))
	if auths := srv.Authorizations(); len(auths) == 0 || auths[0] != want {
		t.Errorf("server saw auth %v", auths)
	}

	noToken := func(string) string { return "" }
	m2, _ := newTestManager(t, Options{Fetch: fetch.Config{GitHubHost: srv.URL, CABundle: srv.CA, Getenv: noToken}})
	_, err = m2.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "corp/plugins"}, "")
	if err == nil || !strings.Contains(plugin.HintOf(err), "GITHUB_TOKEN") {
		t.Errorf("add without a token: %v (hint %q)", err, plugin.HintOf(err))
	}
}

func TestKnownJSONShape(t *testing.T) {
	k := Known{Name: "demo", Source: plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: "/m"}, InstallLocation: "/m",
		LastUpdated: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b, _ := json.Marshal(k)
	want := `{"name":"demo","source":{"source":"directory","path":"/m"},"installLocation":"/m","lastUpdated":"2026-01-02T03:04:05Z"}`
	if string(b) != want {
		t.Errorf("Known JSON = %s\nwant         %s", b, want)
	}
}

// A transaction hook runs in the transaction that records each change and
// sees it; its error aborts the change, so the store keeps what it had.
func TestTxHookCommitsWithTheChange(t *testing.T) {
	dir := localMarketplaceDir(t)
	m, _ := newTestManager(t, Options{})
	src := plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: dir}
	refuse := errors.New("audit log unavailable")
	var seen []string
	hook := func(fail bool) context.Context {
		return WithTxHook(context.Background(), func(tx store.Tx, c Change) error {
			seen = append(seen, c.Op+" "+c.Known.Name)
			if _, err := tx.Get(Bucket, c.Known.Name); (err == nil) != (c.Op != ChangeRemove) {
				t.Errorf("%s %s: the record in the hook's transaction: %v", c.Op, c.Known.Name, err)
			}
			if fail {
				return refuse
			}
			return nil
		})
	}
	if _, err := m.Add(hook(true), src, ""); !errors.Is(err, refuse) {
		t.Fatalf("add with a failing hook: %v", err)
	}
	if _, err := m.Get("local"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("the refused add was recorded: %v", err)
	}
	if _, err := m.Add(hook(false), src, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Update(hook(false), "local"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Remove(hook(true), "local"); !errors.Is(err, refuse) {
		t.Fatalf("remove with a failing hook: %v", err)
	}
	if _, err := m.Get("local"); err != nil {
		t.Fatalf("the refused remove was applied: %v", err)
	}
	if _, err := m.Remove(hook(false), "local"); err != nil {
		t.Fatal(err)
	}
	want := "add local, add local, update local, remove local, remove local"
	if got := strings.Join(seen, ", "); got != want {
		t.Fatalf("hook saw %q, want %q", got, want)
	}
}
