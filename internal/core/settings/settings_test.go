package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func issueStrings(s *Settings) string { return strings.Join(s.Warnings(), "\n") }

func TestParseTypeErrorsNameFileLineAndField(t *testing.T) {
	doc := `{
  "enabledPlugins": {"deploy@corp": true, "lint@corp": "yes"},
  "allowManagedHooksOnly": "true",
  "extraKnownMarketplaces": {"corp": {"source": {"source": "github", "repo": 7}}}
}`
	s, err := Parse("/etc/wharf/managed-settings.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	got := issueStrings(s)
	for _, want := range []string{
		`/etc/wharf/managed-settings.json:2: enabledPlugins["lint@corp"]: must be true or false, got a string`,
		`/etc/wharf/managed-settings.json:3: allowManagedHooksOnly: must be true or false, got a string; treated as true (fail closed)`,
		`/etc/wharf/managed-settings.json:4: extraKnownMarketplaces["corp"].source: "repo" must be a string, got a number`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing issue %q in:\n%s", want, got)
		}
	}
	if !s.EnabledPlugins[plugin.MustParseID("deploy@corp")] {
		t.Error("valid entry deploy@corp lost next to an invalid one")
	}
	if len(s.EnabledInvalid) != 1 || s.EnabledInvalid[0].String() != "lint@corp" {
		t.Errorf("EnabledInvalid = %v, want [lint@corp]", s.EnabledInvalid)
	}
	if !s.AllowManagedHooksOnly.Invalid || !s.AllowManagedHooksOnly.On() {
		t.Error("invalid allowManagedHooksOnly must be invalid and restrictive")
	}
	var pe *plugin.Error
	if err := s.Err(); !errors.As(err, &pe) || pe.Type != TypeSettingsInvalid || pe.Layer != plugin.LayerIntent {
		t.Errorf("Err() = %v, want *plugin.Error settings-invalid", err)
	}
}

func TestParseSyntaxErrorNamesLine(t *testing.T) {
	_, err := Parse("s.json", []byte("{\n  \"enabledPlugins\": {\n    \"a@b\": tru\n  }\n}"))
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Type != TypeSettingsInvalid {
		t.Fatalf("err = %v, want settings-invalid", err)
	}
	if !strings.Contains(err.Error(), "s.json:3:") {
		t.Errorf("error %q does not name line 3", err)
	}
	for _, bad := range []string{`[]`, `"x"`, `{} {}`, `{"a":1`, `{"a":1,"a":2}`} {
		s, err := Parse("x.json", []byte(bad))
		if err == nil && s.Err() == nil {
			t.Errorf("Parse(%s) accepted", bad)
		}
	}
}

func TestUnknownKeysWarnAndSuggest(t *testing.T) {
	s, err := Parse("m.json", []byte(`{"blockedMarketplace": [], "permissions": {"allow": []}, "frobnicate": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	got := issueStrings(s)
	if !strings.Contains(got, `blockedMarketplace: unknown key, ignored; did you mean "blockedMarketplaces"?`) {
		t.Errorf("no suggestion for misspelled key:\n%s", got)
	}
	if !strings.Contains(got, "frobnicate: unknown key, ignored") {
		t.Errorf("unknown key not warned:\n%s", got)
	}
	if strings.Contains(got, "permissions") {
		t.Errorf("Claude Code key warned about:\n%s", got)
	}
	if s.Err() != nil {
		t.Errorf("unknown keys must only warn, got %v", s.Err())
	}
	if _, ok := s.Unknown["permissions"]; !ok {
		t.Error("unknown key not preserved")
	}
}

func TestSecurityKeysFailClosed(t *testing.T) {
	cases := []struct {
		name  string
		doc   string
		check func(*Settings) bool
	}{
		{"strict not array", `{"strictKnownMarketplaces": {"source":"github"}}`, func(s *Settings) bool {
			return s.StrictKnownMarketplaces.Set && s.StrictKnownMarketplaces.Invalid && len(s.StrictKnownMarketplaces.Entries) == 0
		}},
		{"strict bad entry dropped", `{"strictKnownMarketplaces": [{"source":"github","repo":"a/b"},{"source":"github","repoo":"c/d"}]}`, func(s *Settings) bool {
			l := s.StrictKnownMarketplaces
			return !l.Invalid && len(l.Entries) == 1 && l.Rejected == 1
		}},
		{"blocked bad entry blocks all", `{"blockedMarketplaces": [{"source":"hostPattern","hostPattern":"("}]}`, func(s *Settings) bool {
			return s.BlockedMarketplaces.Invalid
		}},
		{"surfaces invalid locks all", `{"strictPluginOnlyCustomization": "yes"}`, func(s *Settings) bool {
			l := s.StrictPluginOnlyCustomization
			return l.Invalid && l.Locked(SurfaceCommands) && l.Locked(SurfaceMCPServers)
		}},
		{"unknown surface warns", `{"strictPluginOnlyCustomization": ["hooks", "comands"]}`, func(s *Settings) bool {
			l := s.StrictPluginOnlyCustomization
			return !l.Invalid && l.Locked(SurfaceHooks) && !l.Locked(SurfaceCommands) && s.Err() == nil &&
				strings.Contains(issueStrings(s), `unknown surface "comands" ignored`)
		}},
		{"sideload invalid", `{"disableSideloadFlags": 1}`, func(s *Settings) bool { return s.DisableSideloadFlags.On() }},
		{"signatures invalid", `{"requireSignatures": ["k1"]}`, func(s *Settings) bool { return s.RequireSignatures.Invalid }},
		{"signatures bad market", `{"requireSignatures": {"corp": "k1", "ok": ["k2"]}}`, func(s *Settings) bool {
			r := s.RequireSignatures
			return !r.Invalid && len(r.InvalidMarketplaces) == 1 && r.InvalidMarketplaces[0] == "corp" && r.Keys["ok"][0] == "k2"
		}},
		{"duplicate security key", `{"strictKnownMarketplaces": [], "strictKnownMarketplaces": ["a/*"]}`, func(s *Settings) bool {
			return s.StrictKnownMarketplaces.Invalid
		}},
		{"cross invalid", `{"allowCrossMarketplaceDependenciesOn": "corp"}`, func(s *Settings) bool { return s.AllowCrossMarketplaceDependenciesOn.Invalid }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse("m.json", []byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(s) {
				t.Errorf("unexpected result %+v; issues:\n%s", s, issueStrings(s))
			}
			if len(s.Issues) == 0 {
				t.Error("an invalid or unknown value produced no issue")
			}
		})
	}
}

func TestPolicySourceForms(t *testing.T) {
	ok := []string{
		`{"source":"github","repo":"acme/tools","ref":"main"}`,
		`{"source":"git","url":"https://git.corp.example/x.git"}`,
		`{"source":"url","url":"https://m.example/marketplace.json","headers":{"Authorization":"Bearer x"}}`,
		`{"source":"directory","path":"/opt/mkt"}`,
		`{"source":"file","path":"/opt/m.json"}`,
		`{"source":"hostPattern","hostPattern":"^git\\.corp\\.example$"}`,
		`{"source":"pathPattern","pathPattern":"^/opt/"}`,
		`"acme/*"`,
	}
	for _, s := range ok {
		if _, err := ParsePolicySource([]byte(s)); err != nil {
			t.Errorf("ParsePolicySource(%s): %v", s, err)
		}
	}
	if _, err := plugin.DecodeMarketplaceSource([]byte(`{"source":"hostPattern","hostPattern":"x"}`)); err == nil {
		t.Error("hostPattern accepted outside policy lists")
	}
	if _, err := plugin.DecodeMarketplaceSource([]byte(`"acme/*"`)); err == nil {
		t.Error("owner wildcard accepted outside policy lists")
	}
	src, _ := plugin.DecodeMarketplaceSource([]byte(`{"source":"git","url":"git@github.com:Acme/tools.git"}`))
	if src.RepoOwner() != "acme" || src.Host() != "github.com" {
		t.Errorf("owner/host of scp url = %q/%q", src.RepoOwner(), src.Host())
	}
	a, _ := ParsePolicySource([]byte(`{"source":"github","repo":"Acme/Tools"}`))
	b, _ := ParsePolicySource([]byte(`{"source":"github","repo":"acme/tools"}`))
	c, _ := ParsePolicySource([]byte(`{"source":"github","repo":"acme/tools","ref":"v1"}`))
	if a.Key() != b.Key() || b.Key() == c.Key() {
		t.Errorf("keys: %s %s %s", a.Key(), b.Key(), c.Key())
	}
}

func TestMergePrecedence(t *testing.T) {
	docs := []Document{
		{Scope: ScopeManaged, Name: "managed.json", Data: []byte(`{"enabledPlugins":{"a@m":true},"strictKnownMarketplaces":[{"source":"github","repo":"org/one"}],"blockedMarketplaces":["bad/*"],"allowCrossMarketplaceDependenciesOn":["x"]}`)},
		{Scope: ScopeManaged, Name: "managed-settings.d/10.json", Data: []byte(`{"strictKnownMarketplaces":[{"source":"github","repo":"org/two"}],"blockedMarketplaces":["worse/*","bad/*"]}`)},
		{Scope: ScopeUser, Name: "user.json", Data: []byte(`{"enabledPlugins":{"a@m":false,"b@m":true},"allowCrossMarketplaceDependenciesOn":["y","x"],"blockedMarketplaces":["mine/*"]}`)},
		{Scope: ScopeProject, Name: "project.json", Data: []byte(`{"enabledPlugins":{"b@m":false}}`)},
		{Scope: ScopeLocal, Name: "local.json", Data: []byte(`{"enabledPlugins":{"b@m":true}}`)},
		{Scope: ScopeFlag, Name: "flag", Data: []byte(`{"enabledPlugins":{"c@m":true}}`)},
	}
	s := Merge(docs)
	if !s.EnabledPlugins[plugin.MustParseID("a@m")] {
		t.Error("managed a@m=true lost to user false")
	}
	if !s.EnabledPlugins[plugin.MustParseID("b@m")] {
		t.Error("local b@m=true must win over project false")
	}
	if !s.EnabledPlugins[plugin.MustParseID("c@m")] {
		t.Error("flag scope lost")
	}
	if e := s.StrictKnownMarketplaces.Entries; len(e) != 1 || e[0].Repo != "org/two" {
		t.Errorf("strictKnownMarketplaces must be owned whole by the last managed fragment, got %+v", e)
	}
	if e := s.BlockedMarketplaces.Entries; len(e) != 2 {
		t.Errorf("blockedMarketplaces concatenated+dedup = %+v, want bad/* and worse/* (user scope ignored)", e)
	}
	if !strings.Contains(issueStrings(s), "user.json: blockedMarketplaces: only honoured in managed settings") {
		t.Errorf("managed-only key in user scope not warned:\n%s", issueStrings(s))
	}
	if n := s.AllowCrossMarketplaceDependenciesOn.Names; len(n) != 2 {
		t.Errorf("cross names = %v, want x,y", n)
	}
}

func TestSnapshotHashCoversEveryDocument(t *testing.T) {
	base := []Document{
		{Scope: ScopeUser, Name: "u", Data: []byte(`{}`)},
		{Scope: ScopeManaged, Name: "m", Data: []byte(`{"blockedMarketplaces":[]}`)},
	}
	h0 := NewSnapshot(base).Hash
	changed := append([]Document(nil), base...)
	changed[1].Data = []byte(`{"blockedMarketplaces":["x/*"]}`)
	missing := append([]Document(nil), base...)
	missing[0] = Document{Scope: ScopeUser, Name: "u", Missing: true}
	renamed := append([]Document(nil), base...)
	renamed[0].Name = "u2"
	for name, d := range map[string][]Document{"data": changed, "missing": missing, "name": renamed} {
		if NewSnapshot(d).Hash == h0 {
			t.Errorf("hash unchanged after changing %s", name)
		}
	}
	if NewSnapshot(base).Hash != h0 {
		t.Error("hash not stable")
	}
}

func TestLoadReadsScopesAndManagedFragments(t *testing.T) {
	root := t.TempDir()
	p := Paths{Home: filepath.Join(root, "home"), Project: filepath.Join(root, "proj"), ManagedDir: filepath.Join(root, "etc")}
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(p.File(ScopeUser), `{"enabledPlugins":{"u@m":true}}`)
	write(p.File(ScopeProject), `{"enabledPlugins":{"p@m":true}}`)
	write(p.File(ScopeManaged), `{"blockedMarketplaces":["a/*"]}`)
	write(filepath.Join(p.ManagedDir, "managed-settings.d", "20-b.json"), `{"blockedMarketplaces":["c/*"], "disableSideloadFlags": true}`)
	write(filepath.Join(p.ManagedDir, "managed-settings.d", "10-a.json"), `{"blockedMarketplaces":["b/*"], "disableSideloadFlags": false}`)
	snap, err := Load(p, []byte(`{"enabledPlugins":{"f@m":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := snap.Merged
	var owners []string
	for _, e := range s.BlockedMarketplaces.Entries {
		owners = append(owners, e.Owner)
	}
	if strings.Join(owners, ",") != "a,b,c" {
		t.Errorf("fragments not merged in name order: %v", owners)
	}
	if !s.DisableSideloadFlags.Value {
		t.Error("later fragment 20-b must win the scalar")
	}
	for _, id := range []string{"u@m", "p@m", "f@m"} {
		if !s.EnabledPlugins[plugin.MustParseID(id)] {
			t.Errorf("%s missing", id)
		}
	}
	h := snap.Hash
	write(p.File(ScopeLocal), `{}`)
	snap2, _ := Load(p, []byte(`{"enabledPlugins":{"f@m":true}}`))
	if snap2.Hash == h {
		t.Error("creating settings.local.json did not change the hash")
	}
	t.Setenv("WHARF_HOME", p.Home)
	t.Setenv("WHARF_MANAGED_DIR", p.ManagedDir)
	dp, err := DefaultPaths(p.Project)
	// WHARF_MANAGED_DIR adds a managed directory after the system one.
	want := p
	want.ManagedDir, want.ExtraManagedDir = SystemManagedDir(), p.ManagedDir
	if err != nil || dp != want {
		t.Errorf("DefaultPaths = %+v, %v; want %+v", dp, err, want)
	}
}

func TestSetEnabledPreservesUnknownKeysAndRefusesBadFiles(t *testing.T) {
	root := t.TempDir()
	p := Paths{Home: root}
	path := p.File(ScopeUser)
	if err := os.WriteFile(path, []byte(`{"permissions":{"allow":["Bash(ls)"]},"enabledPlugins":{"a@m":true},"customThing":[1,2]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := SetEnabled(p, ScopeUser, plugin.MustParseID("b@m"), false); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	ep := got["enabledPlugins"].(map[string]any)
	if ep["a@m"] != true || ep["b@m"] != false {
		t.Errorf("enabledPlugins = %v", ep)
	}
	if got["customThing"] == nil || got["permissions"] == nil {
		t.Errorf("unknown keys lost: %s", data)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	// A broken file is refused, not overwritten.
	broken := []byte(`{"enabledPlugins": {"a@m": tr`)
	os.WriteFile(path, broken, 0o600)
	if _, err := SetEnabled(p, ScopeUser, plugin.MustParseID("b@m"), true); err == nil {
		t.Error("SetEnabled overwrote an invalid file")
	}
	if now, _ := os.ReadFile(path); string(now) != string(broken) {
		t.Error("invalid file was modified")
	}
	if _, err := SetEnabled(p, ScopeManaged, plugin.MustParseID("b@m"), true); err == nil {
		t.Error("SetEnabled wrote managed scope")
	}
	if _, err := SetEnabled(p, ScopeProject, plugin.MustParseID("b@m"), true); err == nil {
		t.Error("project scope without a project must fail")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, ``, `{"enabledPlugins":{"a@b":true}}`,
		`{"strictKnownMarketplaces":[{"source":"github","repo":"a/b"},"o/*",{"source":"hostPattern","hostPattern":"x"}]}`,
		`{"strictPluginOnlyCustomization":["hooks","x"]}`, `{"requireSignatures":{"m":["k"]}}`,
		`{"extraKnownMarketplaces":{"m":{"source":{"source":"url","url":"https://x/y","headers":{"a":"b"}}}}}`,
		`{"a":1,"a":2}`, `[1]`, `{"hooks":{"PreToolUse":[]},"mcpServers":{"s":{"command":"x"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.json", data)
		if err != nil {
			var pe *plugin.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error is not *plugin.Error: %v", err)
			}
			return
		}
		for _, i := range s.Issues {
			if i.File != "fuzz.json" || i.Message == "" {
				t.Fatalf("issue without location or message: %+v", i)
			}
		}
		for _, e := range s.StrictKnownMarketplaces.Entries {
			_ = e.Key()
			_ = e.Host()
		}
		_ = Merge([]Document{{Scope: ScopeManaged, Name: "fuzz.json", Data: data}})
	})
}

func TestSetEnabledAllWritesEveryPluginAtOnce(t *testing.T) {
	p := Paths{Home: t.TempDir()}
	if err := os.WriteFile(p.File(ScopeUser), []byte(`{"enabledPlugins":{"keep@m":false},"model":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ids := map[plugin.ID]bool{plugin.MustParseID("a@m"): true, plugin.MustParseID("b@m"): true, plugin.MustParseID("c@n"): false}
	if _, err := SetEnabledAll(p, ScopeUser, ids); err != nil {
		t.Fatal(err)
	}
	s, err := Parse(p.File(ScopeUser), mustRead(t, p.File(ScopeUser)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"a@m": true, "b@m": true, "c@n": false, "keep@m": false}
	if len(s.EnabledPlugins) != len(want) {
		t.Fatalf("enabledPlugins = %v, want %v", s.EnabledPlugins, want)
	}
	for id, on := range s.EnabledPlugins {
		if want[id.String()] != on {
			t.Errorf("%s = %v, want %v", id, on, want[id.String()])
		}
	}
	if _, err := SetEnabledAll(p, ScopeManaged, ids); err == nil {
		t.Fatal("SetEnabledAll wrote the managed scope")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Goroutines writing different plugins' keys at once all keep their key:
// each write reads the file under the directory's lock.
func TestSetEnabledConcurrentWritesKeepEveryKey(t *testing.T) {
	p := Paths{Home: t.TempDir()}
	const writers, each = 12, 15
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := plugin.MustParseID(fmt.Sprintf("p%02d-%02d@corp", w, i))
				if _, err := SetEnabled(p, ScopeUser, id, i%2 == 0); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	raw, err := os.ReadFile(p.File(ScopeUser))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		EnabledPlugins map[string]bool `json:"enabledPlugins"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for w := 0; w < writers; w++ {
		for i := 0; i < each; i++ {
			k := fmt.Sprintf("p%02d-%02d@corp", w, i)
			if on, ok := doc.EnabledPlugins[k]; !ok || on != (i%2 == 0) {
				t.Errorf("%s: enabled=%v present=%v after its write was acknowledged", k, on, ok)
			}
		}
	}
}

// SourceKey tells two sources apart by every identifying field, whatever
// the kind, and leaves credentials out.
func TestSourceKey(t *testing.T) {
	gh := func(repo string) plugin.MarketplaceSource {
		return plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: repo}
	}
	if SourceKey(gh("Acme/Tools")) != SourceKey(gh("acme/tools")) {
		t.Error("github repositories compare case-insensitively")
	}
	u := plugin.MarketplaceSource{Kind: plugin.MktURL, URL: "https://m.example/marketplace.json"}
	withHeaders := u
	withHeaders.Headers = map[string]string{"Authorization": "Bearer x"}
	if SourceKey(u) != SourceKey(withHeaders) {
		t.Error("headers changed the key")
	}
	other := func(url string) plugin.MarketplaceSource {
		return plugin.MarketplaceSource{Kind: "npm", URL: url, Headers: map[string]string{"A": url}}
	}
	if SourceKey(other("https://a.example/x")) == SourceKey(other("https://b.example/x")) {
		t.Error("two sources of a kind settings does not list got one key")
	}
	if SourceKey(other("https://a.example/x")) != SourceKey(other("https://a.example/x")) {
		t.Error("one source got two keys")
	}
}

// AppendSourceKey appends exactly SourceKey, whose text stays the quoted
// fields joined by spaces (memo files and policy data hold it).
func TestAppendSourceKeyEqualsSourceKey(t *testing.T) {
	quoted := func(f ...string) string {
		for i := range f {
			f[i] = strconv.Quote(f[i])
		}
		return strings.Join(f, " ")
	}
	for name, c := range map[string]struct {
		s    plugin.MarketplaceSource
		want string
	}{
		"github": {plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "Acme/Tools", Ref: "v1", Path: "sub"}, quoted("github", "acme/tools", "v1", "sub")},
		"git":    {plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "file:///m\x00\"q\"", Ref: "main"}, quoted("git", "file:///m\x00\"q\"", "main", "")},
		"url":    {plugin.MarketplaceSource{Kind: plugin.MktURL, URL: "https://m.example/é.json", Headers: map[string]string{"A": "b"}}, quoted("url", "https://m.example/é.json", "", "")},
		"npm":    {plugin.MarketplaceSource{Kind: "npm", URL: "x", Headers: map[string]string{"A": "b"}}, ""},
	} {
		got := string(AppendSourceKey([]byte("prefix\x00"), c.s))
		if got != "prefix\x00"+SourceKey(c.s) {
			t.Errorf("%s: appended %q, SourceKey %q", name, got, SourceKey(c.s))
		}
		if c.want != "" && SourceKey(c.s) != c.want {
			t.Errorf("%s: SourceKey %q, want %q", name, SourceKey(c.s), c.want)
		}
	}
}
