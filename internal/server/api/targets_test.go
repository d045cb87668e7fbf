package api

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/plugin"
)

const denyRiskyForData = `package wharf.admin.data

deny contains msg if {
	input.plugin == "risky@corp"
	msg := "risky@corp is not for the data team"
}
`

// groupToken creates a developer token of groups and labels.
func (e *env) groupToken(groups, labels []string) string {
	e.t.Helper()
	res := e.do("POST", "/v1/tokens", e.tokens[RoleAdmin], map[string]any{"role": "developer", "groups": groups, "labels": labels})
	if res.status != http.StatusCreated {
		e.t.Fatalf("create token of %v %v: %d %s", groups, labels, res.status, res.body)
	}
	var out struct {
		Token  string   `json:"token"`
		Groups []string `json:"groups"`
	}
	res.json(e.t, &out)
	if !slices.Equal(out.Groups, groups) {
		e.t.Fatalf("token shows groups %v, want %v", out.Groups, groups)
	}
	return out.Token
}

// bundleFor pulls the signed bundle with token, verifies it with the
// server's key and returns it with its ETag.
func (e *env) bundleFor(token string) (BundlePolicy, string) {
	e.t.Helper()
	res := e.do("GET", "/v1/policy/bundle/key", token, nil)
	var key BundleKey
	res.json(e.t, &key)
	res = e.do("GET", "/v1/policy/bundle", token, nil)
	if res.status != http.StatusOK {
		e.t.Fatalf("bundle: %d %s", res.status, res.body)
	}
	p, err := ReadBundle(bytes.NewReader(res.body), key)
	if err != nil {
		e.t.Fatalf("read bundle: %v", err)
	}
	if res.header.Get("ETag") != bundleETag(p.Version) {
		e.t.Fatalf("ETag %s does not name the bundle's version %s", res.header.Get("ETag"), p.Version)
	}
	return p, res.header.Get("ETag")
}

// offline decides id with the bundle's layers, as a client does.
func offline(t *testing.T, p BundlePolicy, id string) Decision {
	t.Helper()
	d, err := PolicyEngine(t.Context(), p.Layers)
	if err != nil {
		t.Fatalf("compile bundle policy: %v", err)
	}
	dec, err := d.Decide(t.Context(), DecisionInput{Plugin: plugin.MustParseID(id)})
	if err != nil {
		t.Fatal(err)
	}
	return dec
}

// A layer targeted to data-team denies a plugin in the bundles of
// data-team's tokens only; it cannot loosen the organization's layer,
// whatever its rank; its bundle has an ETag of its own.
func TestTargetedLayerAppliesToItsGroupOnly(t *testing.T) {
	e := newEnv(t)
	data := e.groupToken([]string{"data-team"}, nil)
	web := e.groupToken([]string{"web"}, []string{"os=linux"})

	if res := e.putLayer("org", "*new", map[string]any{"rank": 10,
		"settings": map[string]any{"enabledPlugins": map[string]bool{"pinned@corp": false}},
		"modules":  map[string]string{"risky.rego": strings.ReplaceAll(denyRiskyModule, "risky@corp", "banned@corp")}}); res.status != 201 {
		t.Fatalf("org layer: %d %s", res.status, res.body)
	}
	// Rank 1 would outrank the organization's 10; it tries to force on
	// what the organization forces off.
	res := e.putLayer("data", "*new", map[string]any{"rank": 1, "target": map[string]any{"groups": []string{"data-team"}},
		"settings": map[string]any{"enabledPlugins": map[string]bool{"pinned@corp": true}},
		"modules":  map[string]string{"risky.rego": denyRiskyForData}})
	if res.status != 201 {
		t.Fatalf("targeted layer: %d %s", res.status, res.body)
	}
	var w LayerWriteResult
	res.json(t, &w)
	if w.Layer.Target == nil || !slices.Equal(w.Layer.Target.Groups, []string{"data-team"}) {
		t.Fatalf("layer written without its target: %+v", w.Layer)
	}

	dp, dtag := e.bundleFor(data)
	wp, wtag := e.bundleFor(web)
	if dtag == wtag {
		t.Fatalf("data-team and web got the same bundle ETag %s", dtag)
	}
	if d := offline(t, dp, "risky@corp"); d.Allowed || len(d.Reasons) == 0 || !strings.Contains(d.Reasons[0].Message, "not for the data team") {
		t.Fatalf("data-team's bundle allows risky@corp: %+v", d)
	}
	if d := offline(t, wp, "risky@corp"); !d.Allowed {
		t.Fatalf("web's bundle refuses risky@corp: %+v", d)
	}
	for name, p := range map[string]BundlePolicy{"data-team": dp, "web": wp} {
		if d := offline(t, p, "banned@corp"); d.Allowed {
			t.Fatalf("%s's bundle allows what the organization denies: %+v", name, d)
		}
		if d := offline(t, p, "pinned@corp"); d.Forced != "off" {
			t.Fatalf("%s's bundle: the organization forces pinned@corp off, the targeted layer on; got %+v", name, d)
		}
	}
	// The ETag is per set of layers: a poll with it gets 304, the other
	// group's does not.
	if r := e.do("GET", "/v1/policy/bundle", data, nil, "If-None-Match: "+dtag); r.status != http.StatusNotModified {
		t.Fatalf("data-team's poll with its ETag: %d", r.status)
	}
	if r := e.do("GET", "/v1/policy/bundle", data, nil, "If-None-Match: "+wtag); r.status != http.StatusOK {
		t.Fatalf("data-team's poll with web's ETag: %d, want its own bundle", r.status)
	}
	// GET /v1/policy and the layer: an admin sees every layer; others the
	// layers that apply to them, under their bundle's version.
	layerNames := func(token string) ([]string, string) {
		t.Helper()
		var ep EffectivePolicy
		r := e.do("GET", "/v1/policy", token, nil)
		r.json(t, &ep)
		var n []string
		for _, l := range ep.Layers {
			n = append(n, l.Name)
		}
		return n, r.header.Get("ETag")
	}
	if n, tag := layerNames(web); !slices.Equal(n, []string{"org"}) || tag != wtag {
		t.Fatalf("web's GET /v1/policy: %v under %s (its bundle: %s)", n, tag, wtag)
	}
	if n, tag := layerNames(data); !slices.Equal(n, []string{"org", "data"}) || tag != dtag {
		t.Fatalf("data-team's GET /v1/policy: %v under %s (its bundle: %s)", n, tag, dtag)
	}
	if n, _ := layerNames(e.tokens[RoleAdmin]); !slices.Equal(n, []string{"org", "data"}) {
		t.Fatalf("the admin's GET /v1/policy: %v", n)
	}
	if r := e.do("GET", "/v1/policy/layers/data", web, nil); r.status != http.StatusNotFound {
		t.Fatalf("web reads data-team's layer: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/policy/layers/data", data, nil); r.status != http.StatusOK {
		t.Fatalf("data-team reads its layer: %d %s", r.status, r.body)
	}
	// The target is in the layer's history.
	res = e.do("GET", "/v1/policy/history?layer=data", e.tokens[RoleAdmin], nil)
	var hp HistoryPage
	res.json(t, &hp)
	if len(hp.Entries) != 1 || hp.Entries[0].Document.Target == nil || hp.Entries[0].Document.Target.Groups[0] != "data-team" {
		t.Fatalf("history of data: %s", res.body)
	}
}

// Targets and token groups are hostile input: each bad one is a 400 that
// names the field, and nothing is written.
func TestTargetsRefused(t *testing.T) {
	e := newEnv(t)
	many := make([]string, 33)
	for i := range many {
		many[i] = "g" + strings.Repeat("x", i)
	}
	for _, c := range []struct {
		name, path, method, field string
		body                      map[string]any
	}{
		{"layer group with a space", "/v1/policy/layers/data", "PUT", "target.groups[0]", map[string]any{"target": map[string]any{"groups": []string{"data team"}}}},
		{"layer label without =", "/v1/policy/layers/data", "PUT", "target.labels[0]", map[string]any{"target": map[string]any{"labels": []string{"linux"}}}},
		{"layer too many groups", "/v1/policy/layers/data", "PUT", "target.groups", map[string]any{"target": map[string]any{"groups": many}}},
		{"token group starting with a dot", "/v1/tokens", "POST", "groups[1]", map[string]any{"role": "developer", "groups": []string{"ok", "../x"}}},
		{"token label key upper-case", "/v1/tokens", "POST", "labels[0]", map[string]any{"role": "developer", "labels": []string{"OS=linux"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := e.do(c.method, c.path, e.tokens[RoleAdmin], c.body, "If-None-Match: *")
			if res.status != http.StatusBadRequest || res.apiError(t).Field != c.field {
				t.Fatalf("%d %s, want 400 naming %s", res.status, res.body, c.field)
			}
		})
	}
	if res := e.do("GET", "/v1/policy/layers/data", e.tokens[RoleAdmin], nil); res.status != http.StatusNotFound {
		t.Fatalf("a refused layer was written: %d", res.status)
	}
}

// A channel targeted to data-team is listed, read and cloned by data-team's
// tokens and admins; every other token gets 404 as for an unknown channel,
// and git cannot clone it.
func TestTargetedChannelVisibleToItsGroupOnly(t *testing.T) {
	needGit(t)
	e, _ := newCatalogEnv(t)
	data := e.groupToken([]string{"data-team"}, nil)
	web := e.groupToken([]string{"web"}, nil)
	res := e.do("POST", "/v1/channels", e.tokens[RoleAdmin], map[string]any{"name": "data-tools", "target": map[string]any{"groups": []string{"data-team"}}})
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	if r := e.do("POST", "/v1/channels", e.tokens[RoleAdmin], map[string]any{"name": "open-data", "public": true, "target": map[string]any{"groups": []string{"data-team"}}}); r.status != http.StatusBadRequest || r.apiError(t).Field != "target" {
		t.Fatalf("a public targeted channel: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/channels", e.tokens[RoleAdmin], map[string]any{"name": "bad", "target": map[string]any{"groups": []string{"a b"}}}); r.status != http.StatusBadRequest || r.apiError(t).Field != "target.groups[0]" {
		t.Fatalf("a bad group: %d %s", r.status, r.body)
	}
	names := func(token string) []string {
		t.Helper()
		var list []ChannelSummary
		r := e.do("GET", "/v1/channels", token, nil)
		if r.status != http.StatusOK {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		r.json(t, &list)
		var out []string
		for _, c := range list {
			out = append(out, c.Name)
		}
		return out
	}
	if got := names(data); !slices.Equal(got, []string{"approved", "data-tools"}) {
		t.Fatalf("data-team lists %v", got)
	}
	if got := names(e.tokens[RoleAdmin]); !slices.Equal(got, []string{"approved", "data-tools"}) {
		t.Fatalf("admin lists %v", got)
	}
	if got := names(web); !slices.Equal(got, []string{"approved"}) {
		t.Fatalf("web lists %v", got)
	}
	paths := []string{"/v1/channels/data-tools", "/v1/channels/data-tools/claude-managed-settings"}
	for _, agent := range []string{"copilot", "codex", "gemini", "opencode"} {
		paths = append(paths, "/v1/channels/data-tools/"+agent+"-managed-settings")
	}
	for _, path := range paths {
		if r := e.do("GET", path, data, nil); r.status != http.StatusOK {
			t.Fatalf("data-team GET %s: %d %s", path, r.status, r.body)
		}
		r := e.do("GET", path, web, nil)
		unknown := e.do("GET", strings.Replace(path, "data-tools", "no-such", 1), web, nil)
		if r.status != http.StatusNotFound || r.apiError(t).Code != unknown.apiError(t).Code {
			t.Fatalf("web GET %s: %d %s (an unknown channel: %d %s)", path, r.status, r.body, unknown.status, unknown.body)
		}
	}
	dir := t.TempDir()
	mustGit(t, "", "clone", "-q", e.channelURL("data-tools", data), filepath.Join(dir, "data"))
	if out, err := git(t, "", "clone", "-q", e.channelURL("data-tools", web), filepath.Join(dir, "web")); err == nil {
		t.Fatalf("web cloned data-team's channel: %s", out)
	}
	// The channel's Gemini CLI extension repositories follow the channel:
	// data-team clones deploy's; web is refused as for a channel that does
	// not exist.
	ext := func(token string) string {
		return strings.Replace(e.hs.URL+"/git/"+channel.GeminiPath("data-tools", "deploy"), "http://", "http://wharf:"+token+"@", 1)
	}
	mustGit(t, "", "clone", "-q", ext(data), filepath.Join(dir, "data-gemini"))
	if _, err := os.Stat(filepath.Join(dir, "data-gemini", channel.GeminiManifestFile)); err != nil {
		t.Fatalf("data-team's clone of the channel's deploy extension: %v", err)
	}
	out, err := git(t, "", "clone", "-q", ext(web), filepath.Join(dir, "web-gemini"))
	if err == nil {
		t.Fatalf("web cloned the Gemini CLI extension of data-team's channel: %s", out)
	}
	if !strings.Contains(out, "not found") && !strings.Contains(out, "404") {
		t.Fatalf("web's clone of data-team's Gemini CLI extension was refused for another reason: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "web-gemini", channel.GeminiManifestFile)); err == nil {
		t.Fatal("web got a copy of data-team's Gemini CLI extension")
	}
}

// The fleet pages filtered by group show the machines whose token is in
// the group, with their counts; a bad group is a 400 naming the field.
func TestFleetFilteredByGroup(t *testing.T) {
	e, f := newCatalogEnv(t)
	token := func(groups ...string) string {
		res := e.do("POST", "/v1/tokens", e.tokens[RoleAdmin], map[string]any{"role": "agent", "groups": groups})
		mustStatus(t, res, http.StatusCreated)
		var out struct {
			Token string `json:"token"`
		}
		res.json(t, &out)
		return out.Token
	}
	data, web := token("data-team"), token("web")
	mustStatus(t, e.report(data, invReport(1, invPlugin("deploy@corp", "1.2.0", f.deployW1), invPlugin("lint@corp", "0.3.0", fakeDigest("lint")))), 200)
	mustStatus(t, e.report(web, invReport(2, invPlugin("deploy@corp", "1.1.0", fakeDigest("old")))), 200)

	var pm PluginMachines
	res := e.do("GET", "/v1/inventory/plugins/corp/deploy?group=data-team", e.tokens[RoleAdmin], nil)
	mustStatus(t, res, 200)
	res.json(t, &pm)
	if len(pm.Machines) != 1 || pm.Machines[0].Machine != machineN(1) || pm.Plugin.Machines != 1 || pm.Plugin.Versions["1.2.0"] != 1 || pm.Plugin.Versions["1.1.0"] != 0 {
		t.Fatalf("who has deploy@corp in data-team: %+v", pm)
	}
	pm = PluginMachines{}
	e.do("GET", "/v1/inventory/plugins/corp/deploy", e.tokens[RoleAdmin], nil).json(t, &pm)
	if len(pm.Machines) != 2 || pm.Plugin.Machines != 2 {
		t.Fatalf("who has deploy@corp, unfiltered: %+v", pm)
	}
	var list PluginInventoryList
	res = e.do("GET", "/v1/inventory/plugins?group=web", e.tokens[RoleCI], nil)
	mustStatus(t, res, 200)
	res.json(t, &list)
	if len(list.Plugins) != 1 || list.Plugins[0].Plugin != "deploy@corp" || list.Plugins[0].Machines != 1 || list.Plugins[0].Versions["1.1.0"] != 1 {
		t.Fatalf("web's plugins: %+v", list.Plugins)
	}
	res = e.do("GET", "/v1/inventory/plugins?group=nobody", e.tokens[RoleCI], nil)
	list = PluginInventoryList{}
	res.json(t, &list)
	if len(list.Plugins) != 0 {
		t.Fatalf("a group without machines: %+v", list.Plugins)
	}
	res = e.do("GET", "/v1/inventory/plugins?group=a%20b", e.tokens[RoleCI], nil)
	if res.status != http.StatusBadRequest || res.apiError(t).Field != "group" {
		t.Fatalf("a bad group: %d %s", res.status, res.body)
	}

	// The console's fleet pages take the same filter.
	u := signedIn(t, e, RoleAdmin)
	p := u.get("/ui/fleet?group=web")
	if p.status != http.StatusOK || !strings.Contains(p.body, `data-plugin="deploy@corp"`) || strings.Contains(p.body, `data-plugin="lint@corp"`) ||
		!strings.Contains(p.body, `id="group-shown">web<`) || !strings.Contains(p.body, `href="/ui/fleet/plugins/corp/deploy?group=web"`) {
		t.Fatalf("the fleet page for web: %d\n%s", p.status, p.body)
	}
	if p := u.get("/ui/fleet"); !strings.Contains(p.body, `data-plugin="lint@corp"`) || strings.Contains(p.body, "group-shown") {
		t.Fatalf("the whole fleet's page: %d\n%s", p.status, p.body)
	}
	p = u.get("/ui/fleet/plugins/corp/deploy?group=data-team")
	if p.status != http.StatusOK || !strings.Contains(p.body, `data-machine="`+machineN(1)+`"`) || strings.Contains(p.body, `data-machine="`+machineN(2)+`"`) ||
		!strings.Contains(p.body, "on 1 machine,") {
		t.Fatalf("who has deploy@corp in data-team, in the console: %d\n%s", p.status, p.body)
	}
	p = u.get("/ui/fleet/plugins/corp/deploy")
	if !strings.Contains(p.body, `data-machine="`+machineN(2)+`"`) || !strings.Contains(p.body, "on 2 machines,") {
		t.Fatalf("who has deploy@corp, in the console: %d\n%s", p.status, p.body)
	}
	if p := u.get("/ui/fleet?group=a%20b"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "group") {
		t.Fatalf("the fleet page for a bad group: %d\n%s", p.status, p.body)
	}
}

// The console's impact preview of a layer targeted to data-team shows its
// effect for that group (?group=data-team) and none for the organization.
func TestImpactPreviewByGroup(t *testing.T) {
	e := newDemoEnv(t)
	res := e.putLayer("data", "*new", map[string]any{"rank": 10, "target": map[string]any{"groups": []string{"data-team"}}, "settings": map[string]any{}})
	mustStatus(t, res, http.StatusCreated)
	u := signedIn(t, e, RoleAdmin)
	u.get("/ui/admin/policy/layers/data")
	form := url.Values{"version": {"1"}, "rank": {"10"}, "settings": {blockDemo}}
	p := u.post("/ui/admin/policy/layers/data/preview", form)
	if p.status != http.StatusOK || strings.Contains(p.body, "6 of 6 catalog plugins would change decision") {
		t.Fatalf("preview for the organization of a layer targeted to data-team: %d\n%s", p.status, p.body)
	}
	form.Set("group", "data-team")
	p = u.post("/ui/admin/policy/layers/data/preview", form)
	if p.status != http.StatusOK {
		t.Fatalf("preview for data-team: %d %s", p.status, p.body)
	}
	mustContain(t, "preview for data-team", p.body, "6 of 6 catalog plugins would change decision")
	// Saving from the console (whose form has no target) keeps the target.
	if p = u.post("/ui/admin/policy/layers/data/save", form); p.status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", p.status, p.body)
	}
	var l Layer
	e.do("GET", "/v1/policy/layers/data", e.tokens[RoleAdmin], nil).json(t, &l)
	if l.Version != 2 || l.Target == nil || l.Target.Groups[0] != "data-team" {
		t.Fatalf("the layer lost its target: %+v", l)
	}
}

// Restoring a revision of a layer in the console brings back its target
// with its settings: the layer was data-team's, was widened to everyone,
// and the restore of the first revision makes it data-team's again; the
// history shows the target in its diffs.
func TestRestoreBringsBackTheTarget(t *testing.T) {
	e := newDemoEnv(t)
	mustStatus(t, e.putLayer("data", "*new", map[string]any{"rank": 10, "target": map[string]any{"groups": []string{"data-team"}},
		"settings": map[string]any{"blockedPlugins": []string{"app-deploy@demo"}}}), http.StatusCreated)
	mustStatus(t, e.putLayer("data", layerETag(1), map[string]any{"target": map[string]any{},
		"settings": map[string]any{"blockedPlugins": []string{"ci-runner@demo"}}}), http.StatusOK)
	entries, _, err := e.srv.pol.History("data", 0, 10)
	if err != nil || len(entries) != 2 {
		t.Fatalf("history: %v %+v", err, entries)
	}
	u := signedIn(t, e, RoleAdmin)
	if p := u.get("/ui/admin/policy/layers/data"); strings.Count(p.body, "groups data-team") < 2 {
		t.Fatalf("the layer's history does not show the target's change:\n%s", p.body)
	}
	seq := strconv.FormatUint(entries[0].Seq, 10)
	if p := u.post("/ui/admin/policy/layers/data/restore", url.Values{"seq": {seq}, "version": {"2"}}); p.status != http.StatusSeeOther {
		t.Fatalf("restore: %d %s", p.status, p.body)
	}
	var l Layer
	e.do("GET", "/v1/policy/layers/data", e.tokens[RoleAdmin], nil).json(t, &l)
	if l.Version != 3 || l.Target == nil || !slices.Equal(l.Target.Groups, []string{"data-team"}) || !strings.Contains(string(l.Settings), "app-deploy@demo") {
		t.Fatalf("the restored layer: %+v %s", l, l.Settings)
	}
	other := e.groupToken([]string{"web"}, nil)
	if d := offline(t, func() BundlePolicy { p, _ := e.bundleFor(other); return p }(), "app-deploy@demo"); !d.Allowed {
		t.Fatalf("after the restore, web's bundle still refuses app-deploy@demo: %+v", d)
	}
}

// A console visitor who does not see a targeted channel gets the 404 of an
// unknown one without making the server build it: only a member's visit
// builds (and audits) it.
func TestHiddenChannelPageBuildsNothing(t *testing.T) {
	needGit(t)
	e, _ := newCatalogEnv(t)
	data := e.groupToken([]string{"data-team"}, nil)
	web := e.groupToken([]string{"web"}, nil)
	if r := e.do("POST", "/v1/channels", e.tokens[RoleAdmin], map[string]any{"name": "data-tools", "target": map[string]any{"groups": []string{"data-team"}}}); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	builds := func() int {
		t.Helper()
		var page AuditPage
		e.do("GET", "/v1/audit?action="+channel.ActionRebuild+"&limit=1000", e.tokens[RoleAdmin], nil).json(t, &page)
		n := 0
		for _, en := range page.Entries {
			if en.Object == "channel data-tools" {
				n++
			}
		}
		return n
	}
	// Make the channel's build stale: a layer that denies risky@corp takes
	// it out, so the next visit that builds the channel audits a rebuild.
	created := builds()
	if r := e.putLayer("org", "*new", map[string]any{"rank": 10, "modules": map[string]string{"risky.rego": denyRiskyModule}}); r.status != http.StatusCreated {
		t.Fatalf("put layer: %d %s", r.status, r.body)
	}
	u := newUIClient(t, e.hs.URL)
	u.signIn(web)
	p := u.get("/ui/channels/data-tools")
	unknown := u.get("/ui/channels/no-such")
	if p.status != http.StatusNotFound || unknown.status != http.StatusNotFound || !strings.Contains(p.body, `channel not found: &#34;data-tools&#34;`) {
		t.Fatalf("web's console page of data-tools: %d %s (unknown: %d)", p.status, p.body, unknown.status)
	}
	if n := builds(); n != created {
		t.Fatalf("web's visit built data-tools: %d builds audited, %d before", n, created)
	}
	m := newUIClient(t, e.hs.URL)
	m.signIn(data)
	if p := m.get("/ui/channels/data-tools"); p.status != http.StatusOK || !strings.Contains(p.body, "data-tools.git") {
		t.Fatalf("data-team's console page of data-tools: %d %s", p.status, p.body)
	}
	if n := builds(); n != created+1 {
		t.Fatalf("data-team's visit: %d builds audited, want %d", n, created+1)
	}
}
