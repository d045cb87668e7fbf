package api

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/plugin"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed; the channel tests clone with it")
	}
}

// git runs plain git with a throwaway HOME and no credential helper.
func git(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "credential.helper=", "-c", "protocol.version=2"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(t, dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return out
}

func (e *env) channelURL(name, token string) string {
	u := e.hs.URL + "/git/" + name + ".git"
	if token != "" {
		u = strings.Replace(u, "http://", "http://wharf:"+token+"@", 1)
	}
	return u
}

func TestChannelOverGit(t *testing.T) {
	needGit(t)
	e, f := newCatalogEnv(t)
	dev := e.tokens[RoleDeveloper]

	var list []ChannelSummary
	res := e.do("GET", "/v1/channels", e.tokens[RoleAgent], nil)
	if res.status != 200 {
		t.Fatalf("list: %d %s", res.status, res.body)
	}
	res.json(t, &list)
	if len(list) != 1 || list[0].Name != "approved" || list[0].Plugins != 3 || list[0].URL != e.hs.URL+"/git/approved.git" || list[0].Commit == "" {
		t.Fatalf("list = %+v", list)
	}
	first := list[0].Commit

	// Without a token: 401 asking for basic auth; git fails.
	r, err := http.Get(e.hs.URL + "/git/approved.git/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("no token: %d %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	if out, err := git(t, "", "clone", "-q", e.channelURL("approved", ""), filepath.Join(t.TempDir(), "x")); err == nil {
		t.Fatalf("clone without a token succeeded: %s", out)
	}
	if out, err := git(t, "", "clone", "-q", e.channelURL("approved", "not-a-token"), filepath.Join(t.TempDir(), "x")); err == nil {
		t.Fatalf("clone with a bad token succeeded: %s", out)
	}

	// A full and a shallow clone with a developer token.
	full := filepath.Join(t.TempDir(), "full")
	mustGit(t, "", "clone", "-q", e.channelURL("approved", dev), full)
	shallow := filepath.Join(t.TempDir(), "shallow")
	mustGit(t, "", "clone", "-q", "--depth", "1", e.channelURL("approved", dev), shallow)
	for _, dir := range []string{full, shallow} {
		if got := mustGit(t, dir, "rev-parse", "HEAD"); got != first {
			t.Fatalf("%s: HEAD %s, listed %s", dir, got, first)
		}
	}
	tree, err := trust.Digest(filepath.Join(shallow, "plugins/deploy"))
	if err != nil {
		t.Fatal(err)
	}
	var view ChannelView
	e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
	var deployPin string
	for _, en := range view.Entries {
		if en.Name == "deploy" {
			deployPin = en.Digest
			if en.Origin != "deploy@corp" || en.Digest != f.deployW1 {
				t.Fatalf("deploy entry %+v (origin digest %s)", en, f.deployW1)
			}
		}
	}
	if deployPin == "" || tree.Digest != deployPin {
		t.Fatalf("cloned deploy digest %s, pin %q", tree.Digest, deployPin)
	}
	if len(view.LeftOut) != 2 || view.LeftOut[0].Plugin != "broken@corp" || view.LeftOut[0].Kind != channel.LeftDependency ||
		view.LeftOut[1].Plugin != "ghost@corp" || view.LeftOut[1].Kind != channel.LeftNotFound {
		t.Fatalf("left out = %+v", view.LeftOut)
	}

	// A second replica over the same store serves the same commit.
	e2 := &env{t: t, st: e.st, tokens: e.tokens}
	d2 := e.deps
	d2.ChannelDir = filepath.Join(t.TempDir(), "channels")
	srv2, err := New(d2)
	if err != nil {
		t.Fatal(err)
	}
	e2.srv, e2.hs = srv2, httptestServer(t, srv2)
	var list2 []ChannelSummary
	e2.do("GET", "/v1/channels", dev, nil).json(t, &list2)
	if len(list2) != 1 || list2[0].Commit != first {
		t.Fatalf("replica serves %+v, want %s", list2, first)
	}

	// A policy change: lint is forced off, so lint and deploy leave; a fetch
	// brings the child commit.
	if res := e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"enabledPlugins": map[string]bool{"lint@corp": false}}}); res.status != 201 {
		t.Fatalf("put layer: %d %s", res.status, res.body)
	}
	mustGit(t, shallow, "fetch", "-q", "origin")
	second := mustGit(t, shallow, "rev-parse", "origin/main")
	if second == first {
		t.Fatal("the fetch after a policy change brought no new commit")
	}
	mustGit(t, full, "pull", "-q", "--ff-only")
	if got := mustGit(t, full, "rev-parse", "HEAD^"); got != first {
		t.Fatalf("the rebuild is not a child of the previous commit: parent %s", got)
	}
	if _, err := os.Stat(filepath.Join(full, "plugins/deploy")); !os.IsNotExist(err) {
		t.Fatalf("deploy still in the channel after its dependency was denied: %v", err)
	}
	e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
	var sawLint, sawDeploy bool
	for _, lo := range view.LeftOut {
		switch lo.Plugin {
		case "lint@corp":
			sawLint = lo.Kind == channel.LeftDenied && len(lo.Reasons) > 0 && lo.Reasons[0].Layer == "org"
		case "deploy@corp":
			sawDeploy = lo.Kind == channel.LeftDependency && lo.Dependency == "lint@corp"
		}
	}
	if !sawLint || !sawDeploy || view.Commit != second {
		t.Fatalf("after the denial: %+v", view)
	}
	// The managed settings keep lint, forced off, off under its channel name.
	var ms channel.ManagedSettings
	e.do("GET", "/v1/channels/approved/claude-managed-settings", dev, nil).json(t, &ms)
	if on, ok := ms.EnabledPlugins["lint@approved"]; !ok || on {
		t.Fatalf("managed settings after lint was forced off: %+v", ms.EnabledPlugins)
	}
	// deploy left with its dependency: off too.
	if on, ok := ms.EnabledPlugins["deploy@approved"]; !ok || on {
		t.Fatalf("managed settings after deploy's dependency was denied: %+v", ms.EnabledPlugins)
	}
	e2.do("GET", "/v1/channels", dev, nil).json(t, &list2)
	if list2[0].Commit != second {
		var v2 ChannelView
		e2.do("GET", "/v1/channels/approved", dev, nil).json(t, &v2)
		t.Fatalf("replica serves %s after the change, want %s (first %s): %+v", list2[0].Commit, second, first, v2)
	}

	// Each rebuild is audited with its commit and what changed.
	var page AuditPage
	e.do("GET", "/v1/audit?action="+ActionChannelRebuild, e.tokens[RoleAdmin], nil).json(t, &page)
	if len(page.Entries) != 2 || page.Entries[1].Detail["commit"] != second || !strings.Contains(strings.Join(toStrings(page.Entries[1].Detail["changes"]), "\n"), "removed deploy") {
		t.Fatalf("rebuild audit: %+v", page.Entries)
	}
}

// A plugin a Rego rule denies (not forced off) leaves the channel and its
// managed settings turn it off, so that a copy a client installed before
// stays disabled.
func TestChannelSettingsTurnOffRuleDenied(t *testing.T) {
	needGit(t)
	e, _ := newCatalogEnv(t)
	dev := e.tokens[RoleDeveloper]
	var ms channel.ManagedSettings
	e.do("GET", "/v1/channels/approved/claude-managed-settings", dev, nil).json(t, &ms)
	if _, ok := ms.EnabledPlugins["risky@approved"]; ok {
		t.Fatalf("risky listed before any denial: %+v", ms.EnabledPlugins)
	}
	if res := e.putLayer("org", "*new", map[string]any{"modules": map[string]string{"risky.rego": denyRiskyModule}}); res.status != 201 {
		t.Fatalf("put layer: %d %s", res.status, res.body)
	}
	var view ChannelView
	e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
	denied := false
	for _, lo := range view.LeftOut {
		denied = denied || lo.Plugin == "risky@corp" && lo.Kind == channel.LeftDenied && lo.Forced == ""
	}
	if !denied {
		t.Fatalf("risky not left out by the rule: %+v", view.LeftOut)
	}
	ms = channel.ManagedSettings{}
	e.do("GET", "/v1/channels/approved/claude-managed-settings", dev, nil).json(t, &ms)
	if on, ok := ms.EnabledPlugins["risky@approved"]; !ok || on {
		t.Fatalf("managed settings after a rule denied risky: %+v", ms.EnabledPlugins)
	}
}

func toStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func TestChannelAdminRoutes(t *testing.T) {
	needGit(t)
	e, _ := newCatalogEnv(t)
	admin, dev := e.tokens[RoleAdmin], e.tokens[RoleDeveloper]

	res := e.do("POST", "/v1/channels", admin, map[string]any{"name": "ops", "plugins": []string{"deploy@corp"}, "public": true})
	if res.status != 201 {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	var view ChannelView
	res.json(t, &view)
	if len(view.Entries) != 2 || !view.Public || view.Command != "claude plugin marketplace add "+e.hs.URL+"/git/ops.git" {
		t.Fatalf("ops = %+v", view)
	}
	// Public: a clone needs no token.
	mustGit(t, "", "clone", "-q", "--depth", "1", e.channelURL("ops", ""), filepath.Join(t.TempDir(), "ops"))

	if res := e.do("POST", "/v1/channels", admin, map[string]any{"name": "ops"}); res.status != 409 {
		t.Fatalf("duplicate create: %d %s", res.status, res.body)
	}
	if res := e.do("POST", "/v1/channels", admin, map[string]any{"name": "x", "plugins": []string{"nope"}}); res.status != 400 || res.apiError(t).Field != "plugins[0]" {
		t.Fatalf("bad plugin: %d %s", res.status, res.body)
	}
	if res := e.do("POST", "/v1/channels", dev, map[string]any{"name": "y"}); res.status != 403 {
		t.Fatalf("developer create: %d", res.status)
	}
	res = e.do("PUT", "/v1/channels/ops", admin, map[string]any{"plugins": []string{"lint@corp"}})
	if res.status != 200 {
		t.Fatalf("edit: %d %s", res.status, res.body)
	}
	res.json(t, &view)
	if len(view.Entries) != 1 || view.Entries[0].Name != "lint" || view.Public || view.Definition.Revision != 2 {
		t.Fatalf("edited ops = %+v", view)
	}
	// No longer public.
	if out, err := git(t, "", "clone", "-q", e.channelURL("ops", ""), filepath.Join(t.TempDir(), "ops2")); err == nil {
		t.Fatalf("private clone without a token: %s", out)
	}

	var ms channel.ManagedSettings
	e.do("GET", "/v1/channels/ops/claude-managed-settings", dev, nil).json(t, &ms)
	want := e.hs.URL + "/git/ops.git"
	if len(ms.StrictKnownMarketplaces) != 1 || ms.StrictKnownMarketplaces[0].URL != want || ms.StrictKnownMarketplaces[0].Kind != plugin.MktGit ||
		ms.ExtraKnownMarketplaces["ops"].Source.URL != want {
		t.Fatalf("managed settings = %+v", ms)
	}

	var hist ChannelHistory
	e.do("GET", "/v1/channels/ops/history", dev, nil).json(t, &hist)
	if len(hist.Definitions) != 2 || len(hist.Builds) != 2 {
		t.Fatalf("history = %+v", hist)
	}
	if res := e.do("DELETE", "/v1/channels/approved", admin, nil); res.status != 409 {
		t.Fatalf("delete approved: %d", res.status)
	}
	if res := e.do("DELETE", "/v1/channels/ops", admin, nil); res.status != 204 {
		t.Fatalf("delete: %d %s", res.status, res.body)
	}
	if res := e.do("GET", "/v1/channels/ops", dev, nil); res.status != 404 {
		t.Fatalf("get deleted: %d", res.status)
	}
	r, err := http.Get(e.hs.URL + "/git/ops.git/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 404 {
		t.Fatalf("git of a deleted channel: %d", r.StatusCode)
	}
}

// A revocation posted to the server takes the plugin out of its channels,
// and its dependents with it; lifting it brings them back.
func TestChannelLeavesRevokedOut(t *testing.T) {
	needGit(t)
	e, _ := newCatalogEnv(t)
	admin, dev := e.tokens[RoleAdmin], e.tokens[RoleDeveloper]

	var view ChannelView
	e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
	var lint *channel.Entry
	for i := range view.Entries {
		if view.Entries[i].Origin == "lint@corp" {
			lint = &view.Entries[i]
		}
	}
	if lint == nil {
		t.Fatalf("lint@corp is not in the approved channel: %+v", view.Entries)
	}
	before := view.Commit

	res := e.do("POST", "/v1/revocations", admin, map[string]any{"digest": lint.Digest, "reason": "leaks tokens"})
	if res.status != 201 {
		t.Fatalf("revoke: %d %s", res.status, res.body)
	}
	var rv struct {
		Revocation struct{ ID string } `json:"revocation"`
	}
	res.json(t, &rv)

	e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
	kinds := map[string]string{}
	for _, lo := range view.LeftOut {
		kinds[lo.Plugin] = lo.Kind
	}
	for _, en := range view.Entries {
		if en.Origin == "lint@corp" || en.Origin == "deploy@corp" {
			t.Errorf("%s is still in the channel after lint@corp was revoked", en.Origin)
		}
	}
	if kinds["lint@corp"] != "revoked" || kinds["deploy@corp"] != "dependency" {
		t.Errorf("left out = %+v, want lint@corp revoked and deploy@corp for its dependency", view.LeftOut)
	}
	if view.Commit == before {
		t.Errorf("the channel's commit did not change after a revocation")
	}

	if res := e.do("DELETE", "/v1/revocations/"+rv.Revocation.ID, admin, nil); res.status != 204 && res.status != 200 {
		t.Fatalf("lift: %d %s", res.status, res.body)
	}
	e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
	back := false
	for _, en := range view.Entries {
		back = back || en.Origin == "lint@corp"
	}
	if !back {
		t.Errorf("lint@corp did not come back after its revocation was lifted: %+v", view.LeftOut)
	}
}
