package policy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func engineWith(t *testing.T, managed string, opts ...Option) *Engine {
	t.Helper()
	e, err := NewEngine([]Layer{{Name: "org", Settings: []byte(managed), Origin: "managed-settings.json"}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func src(t *testing.T, js string) plugin.MarketplaceSource {
	t.Helper()
	s, err := plugin.DecodeMarketplaceSource([]byte(js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return s
}

func gitSrc(u string) string {
	b, _ := json.Marshal(map[string]string{"source": "git", "url": u})
	return string(b)
}

func dirSrc(kind, p string) string {
	b, _ := json.Marshal(map[string]string{"source": kind, "path": p})
	return string(b)
}

// checkAdd asks whether the source may be added and reports whether
// blockedMarketplaces (or strictKnownMarketplaces, per rule) refused it.
func checkAdd(t *testing.T, e *Engine, source string) (denied bool, rules []string) {
	t.Helper()
	d, err := e.Decide(context.Background(), Request{Action: ActionAddMarketplace,
		Marketplace: Marketplace{Name: "m", Source: ptr(src(t, source))}})
	if err != nil {
		t.Fatalf("%s: %v", source, err)
	}
	for _, r := range d.Reasons {
		rules = append(rules, r.Rule)
	}
	return !d.Allowed, rules
}

func ptr[T any](v T) *T { return &v }

// Every alias of a blocked git repository is blocked.
func TestBlockedMarketplaceGitAliases(t *testing.T) {
	aliases := []string{
		`{"source":"github","repo":"acme/tools"}`,
		`{"source":"github","repo":"ACME/Tools"}`,
		`{"source":"github","repo":"acme/tools.git"}`,
		`{"source":"github","repo":"acme/tools","ref":"v2"}`,
		`{"source":"github","repo":"acme/tools","path":"sub/dir"}`,
		gitSrc("https://github.com/acme/tools"),
		gitSrc("https://github.com/acme/tools.git"),
		gitSrc("https://GITHUB.COM/acme/tools"),
		gitSrc("https://github.com:443/acme/tools"),
		gitSrc("https://someone@github.com/acme/tools"),
		gitSrc("https://someone:token@github.com/acme/tools.git"),
		gitSrc("https://github.com/acme/tools/"),
		gitSrc("https://github.com//acme//tools"),
		gitSrc("https://github.com./acme/tools"),
		gitSrc("ssh://git@github.com/acme/tools.git"),
		gitSrc("ssh://git@github.com:22/acme/tools"),
		gitSrc("git@github.com:acme/tools.git"),
		gitSrc("git@github.com:acme/tools"),
		gitSrc("git@GitHub.com:Acme/Tools.git/"),
		gitSrc("git://github.com/acme/tools"),
	}
	blocks := map[string]string{
		"github block":       `{"source":"github","repo":"acme/tools"}`,
		"https URL block":    gitSrc("https://github.com/acme/tools"),
		"scp-like block":     gitSrc("git@github.com:acme/tools.git"),
		"uppercased block":   `{"source":"github","repo":"Acme/TOOLS"}`,
		"ssh URL block":      gitSrc("ssh://git@github.com:22/acme/tools.git/"),
		"userinfo URL block": gitSrc("https://x:y@github.com:443//acme/tools.git"),
	}
	for name, block := range blocks {
		e := engineWith(t, `{"blockedMarketplaces":[`+block+`]}`)
		for _, a := range aliases {
			if denied, rules := checkAdd(t, e, a); !denied || len(rules) == 0 || rules[0] != "blockedMarketplaces" {
				t.Errorf("%s: %s was not blocked (rules %v)", name, a, rules)
			}
		}
		// What is not the same repository passes.
		for _, other := range []string{
			`{"source":"github","repo":"acme/tools2"}`,
			`{"source":"github","repo":"acme/tool"}`,
			`{"source":"github","repo":"other/tools"}`,
			gitSrc("https://gitlab.com/acme/tools"),
			gitSrc("https://github.com/acme/tools-extra"),
			gitSrc("git@github.com:acme/tools/sub.git"),
			gitSrc("https://github.com/acme"),
		} {
			if denied, rules := checkAdd(t, e, other); denied {
				t.Errorf("%s: %s was refused (%v), but it is another repository", name, other, rules)
			}
		}
	}
}

// A block that names a ref or a subdirectory blocks only that; a block
// without them blocks every ref and subdirectory.
func TestBlockedMarketplaceRefAndPath(t *testing.T) {
	e := engineWith(t, `{"blockedMarketplaces":[{"source":"github","repo":"acme/tools","ref":"v1"},{"source":"git","url":"https://git.corp/team/mkts","path":"bad"}]}`)
	for _, c := range []struct {
		src     string
		blocked bool
	}{
		{`{"source":"github","repo":"acme/tools","ref":"v1"}`, true},
		{`{"source":"git","url":"git@github.com:acme/tools.git","ref":"v1"}`, true},
		{`{"source":"github","repo":"acme/tools","ref":"v2"}`, false},
		{`{"source":"git","url":"https://git.corp/team/mkts","path":"bad"}`, true},
		{`{"source":"git","url":"https://git.corp/team/mkts","path":"./bad/"}`, true},
		{`{"source":"git","url":"https://git.corp/team/mkts","path":"bad/.claude-plugin/marketplace.json"}`, true},
		{`{"source":"git","url":"https://git.corp/Team/Mkts.git","path":"bad/deeper"}`, true},
		{`{"source":"git","url":"https://git.corp/team/mkts","path":"good"}`, false},
		{`{"source":"git","url":"https://git.corp/team/mkts","path":"badder"}`, false},
	} {
		if denied, rules := checkAdd(t, e, c.src); denied != c.blocked {
			t.Errorf("%s: denied=%v (%v), want %v", c.src, denied, rules, c.blocked)
		}
	}
}

// With a GitHub Enterprise host named by managed githubHost, and the same
// host configured for fetches, owner/repo means that host: a github block
// refuses the repository there (and on github.com), whatever the spelling.
func TestBlockedMarketplaceGitHubEnterprise(t *testing.T) {
	host := WithGitHubHost("GHE.Corp.example")
	e := engineWith(t, `{"githubHost":"https://ghe.corp.example","blockedMarketplaces":[{"source":"github","repo":"acme/tools"}],"strictKnownMarketplaces":[{"source":"github","repo":"acme/ok"}]}`, host)
	for _, a := range []string{
		gitSrc("https://ghe.corp.example/acme/tools.git"),
		gitSrc("git@GHE.corp.example:Acme/tools"),
		gitSrc("https://github.com/acme/tools"),
		`{"source":"github","repo":"acme/tools"}`,
	} {
		if denied, rules := checkAdd(t, e, a); !denied || !contains(rules, "blockedMarketplaces") {
			t.Errorf("%s was not blocked (%v)", a, rules)
		}
	}
	// The allowlist names the GHE repository: its URL spellings are allowed,
	// the same path on github.com is another repository.
	for _, c := range []struct {
		src     string
		allowed bool
	}{
		{`{"source":"github","repo":"acme/ok"}`, true},
		{gitSrc("git@ghe.corp.example:acme/ok.git"), true},
		{gitSrc("https://GHE.corp.example:443/Acme/OK/"), true},
		{gitSrc("https://github.com/acme/ok"), false},
	} {
		if denied, rules := checkAdd(t, e, c.src); denied == c.allowed {
			t.Errorf("%s: denied=%v (%v), want allowed=%v", c.src, denied, rules, c.allowed)
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// A blocked directory is blocked through a symlink, through the
// marketplace.json inside it, and for everything below it.
func TestBlockedMarketplaceLocalAliases(t *testing.T) {
	tmp := t.TempDir()
	blocked := filepath.Join(tmp, "blocked")
	manifest := filepath.Join(blocked, ".claude-plugin", "marketplace.json")
	if err := os.MkdirAll(filepath.Dir(manifest), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte(`{"name":"bad","owner":{"name":"x"},"plugins":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blocked, "marketplace.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "innocent")
	if err := os.Symlink(blocked, link); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	fileLink := filepath.Join(tmp, "catalog.json")
	if err := os.Symlink(manifest, fileLink); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(tmp, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	aliases := []string{
		dirSrc("directory", blocked),
		dirSrc("directory", blocked+"/"),
		dirSrc("directory", blocked+"//"),
		dirSrc("directory", filepath.Join(other, "..", "blocked")),
		dirSrc("directory", link),
		dirSrc("directory", filepath.Join(blocked, ".claude-plugin")),
		dirSrc("directory", filepath.Join(blocked, "nested")),
		dirSrc("file", manifest),
		dirSrc("file", filepath.Join(blocked, "marketplace.json")),
		dirSrc("file", filepath.Join(link, ".claude-plugin", "marketplace.json")),
		dirSrc("file", filepath.Join(link, "marketplace.json")),
		dirSrc("file", fileLink),
		gitSrc("file://" + filepath.ToSlash(link)),
	}
	blocks := map[string]string{
		"directory block":         dirSrc("directory", blocked),
		"block through a symlink": dirSrc("directory", link),
		"file block":              dirSrc("file", manifest),
		"pathPattern block":       `{"source":"pathPattern","pathPattern":"^` + strings.ReplaceAll(filepath.ToSlash(blocked), ".", `\\.`) + `(/|$)"}`,
	}
	for name, block := range blocks {
		e := engineWith(t, `{"blockedMarketplaces":[`+block+`]}`)
		for _, a := range aliases {
			if denied, rules := checkAdd(t, e, a); !denied || !contains(rules, "blockedMarketplaces") {
				t.Errorf("%s: %s was not blocked (%v)", name, a, rules)
			}
		}
		for _, ok := range []string{dirSrc("directory", other), dirSrc("directory", blocked+"-2"), dirSrc("directory", tmp)} {
			if denied, rules := checkAdd(t, e, ok); denied {
				t.Errorf("%s: %s was refused (%v)", name, ok, rules)
			}
		}
	}
}

// The allowlist compares the resolved path: a link named like an allowed
// directory but pointing elsewhere is refused, and the allowed directory is
// allowed through its manifest.
func TestStrictKnownMarketplacesResolvesPaths(t *testing.T) {
	tmp := t.TempDir()
	allowed := filepath.Join(tmp, "allowed")
	evil := filepath.Join(tmp, "evil")
	for _, d := range []string{allowed, evil, filepath.Join(tmp, "mkts")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sneaky := filepath.Join(tmp, "mkts", "sneaky")
	if err := os.Symlink(evil, sneaky); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	e := engineWith(t, `{"strictKnownMarketplaces":[`+dirSrc("directory", allowed)+`,{"source":"pathPattern","pathPattern":"^`+filepath.ToSlash(tmp)+`/mkts/"},{"source":"hostPattern","hostPattern":"^git\\.corp$"},{"source":"github","repo":"acme/tools"}]}`)
	for _, c := range []struct {
		src     string
		allowed bool
	}{
		{dirSrc("directory", allowed), true},
		{dirSrc("file", filepath.Join(allowed, ".claude-plugin", "marketplace.json")), true},
		{dirSrc("directory", sneaky), false},
		{dirSrc("directory", filepath.Join(allowed, "sub")), false},
		{gitSrc("https://user@GIT.corp:443/any/repo.git"), true},
		{gitSrc("git@git.corp:any/repo"), true},
		{gitSrc("https://git.corp.evil.example/any/repo"), false},
		{gitSrc("git@github.com:acme/tools.git"), true},
		{gitSrc("https://github.com/acme/other"), false},
	} {
		if denied, rules := checkAdd(t, e, c.src); denied == c.allowed {
			t.Errorf("%s: denied=%v (%v), want allowed=%v", c.src, denied, rules, c.allowed)
		}
	}
}

// The denial names the source as the user wrote it and the rule.
func TestBlockedAliasMessage(t *testing.T) {
	e := engineWith(t, `{"blockedMarketplaces":[{"source":"github","repo":"acme/tools"}]}`)
	err := e.AllowAdd(context.Background(), "tools", src(t, gitSrc("git@github.com:acme/tools.git")))
	var d *Denial
	if !errors.As(err, &d) || !strings.Contains(err.Error(), "git:git@github.com:acme/tools.git") || !strings.Contains(err.Error(), "blockedMarketplaces") {
		t.Fatalf("err = %v", err)
	}
}

// "owner/*" blocks the owner's repositories in every form, and a
// marketplace.json URL under the owner on github.com.
func TestBlockedOwnerWildcardAliases(t *testing.T) {
	e := engineWith(t, `{"blockedMarketplaces":["Acme/*"]}`)
	for _, a := range []string{
		`{"source":"github","repo":"acme/anything"}`,
		gitSrc("git@github.com:ACME/x.git"),
		gitSrc("https://tok@github.com:443//acme/y/"),
		`{"source":"url","url":"https://github.com/acme/m/marketplace.json"}`,
	} {
		if denied, rules := checkAdd(t, e, a); !denied || !contains(rules, "blockedMarketplaces") {
			t.Errorf("%s was not blocked (%v)", a, rules)
		}
	}
	for _, ok := range []string{`{"source":"github","repo":"acme-labs/x"}`, gitSrc("https://gitlab.com/acme/x")} {
		if denied, rules := checkAdd(t, e, ok); denied {
			t.Errorf("%s was refused (%v)", ok, rules)
		}
	}
}

// The GitHub host the user configures (WHARF_GITHUB_HOST, github-host) says
// where owner/repo is fetched from; it never moves what a managed github
// or "owner/*" entry allows, and never escapes a github block. A user's
// own managed layer (WHARF_MANAGED_DIR) naming a githubHost moves only its
// own entries, which can only tighten.
func TestUserGitHubHostDoesNotMoveManagedEntries(t *testing.T) {
	host := WithGitHubHost("http://127.0.0.1:8080")
	for _, strict := range []string{`{"source":"github","repo":"corp/plugins"}`, `"corp/*"`} {
		e := engineWith(t, `{"strictKnownMarketplaces":[`+strict+`],"blockedMarketplaces":[{"source":"github","repo":"evil/tools"},"bad/*"]}`, host)
		for _, c := range []struct {
			src  string
			rule string
		}{
			{`{"source":"github","repo":"corp/plugins"}`, "strictKnownMarketplaces"},
			{gitSrc("http://127.0.0.1:8080/corp/plugins.git"), "strictKnownMarketplaces"},
			{`{"source":"github","repo":"evil/tools"}`, "blockedMarketplaces"},
			{gitSrc("http://127.0.0.1:8080/evil/tools.git"), "blockedMarketplaces"},
			{`{"source":"github","repo":"bad/x"}`, "blockedMarketplaces"},
		} {
			if denied, rules := checkAdd(t, e, c.src); !denied || !contains(rules, c.rule) {
				t.Errorf("strict %s: %s with the user's GitHub host at 127.0.0.1:8080: denied=%v %v, want denied by %s", strict, c.src, denied, rules, c.rule)
			}
		}
		// The entry still allows the repository on github.com.
		if denied, rules := checkAdd(t, e, gitSrc("https://github.com/corp/plugins")); denied {
			t.Errorf("strict %s: github.com/corp/plugins denied %v", strict, rules)
		}
	}

	// A lower managed layer naming the user's host moves its own entries
	// only; the organization's layer still refuses.
	e, err := NewEngine([]Layer{
		{Name: "org", Settings: []byte(`{"strictKnownMarketplaces":[{"source":"github","repo":"corp/plugins"}]}`), Origin: "managed-settings.json"},
		{Name: "extra", Settings: []byte(`{"githubHost":"http://127.0.0.1:8080","strictKnownMarketplaces":[{"source":"github","repo":"corp/plugins"}]}`), Origin: "extra/managed-settings.json"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if denied, _ := checkAdd(t, e, `{"source":"github","repo":"corp/plugins"}`); !denied {
		t.Error("a lower layer's githubHost moved the organization's allowlist to the user's host")
	}

	// The organization's own githubHost is what its entries mean.
	e = engineWith(t, `{"githubHost":"http://127.0.0.1:8080","strictKnownMarketplaces":[{"source":"github","repo":"corp/plugins"}]}`, host)
	if denied, rules := checkAdd(t, e, `{"source":"github","repo":"corp/plugins"}`); denied {
		t.Errorf("managed githubHost names the host the user fetches from, yet denied: %v", rules)
	}
}

// github.com's other names (www.github.com, ssh.github.com on port 443)
// are github.com to block and allow entries alike.
func TestGitHubAliasesMatchEntries(t *testing.T) {
	e := engineWith(t, `{"blockedMarketplaces":[{"source":"github","repo":"evil/tools"},"bad/*"],
		"strictKnownMarketplaces":[{"source":"github","repo":"corp/plugins"}]}`)
	for _, u := range []string{
		"https://www.github.com/evil/tools",
		"ssh://git@ssh.github.com:443/evil/tools.git",
		"git@ssh.github.com:evil/tools.git",
		"https://www.github.com/bad/anything",
	} {
		if denied, rules := checkAdd(t, e, gitSrc(u)); !denied || !contains(rules, "blockedMarketplaces") {
			t.Errorf("%s: denied=%v %v, want blocked", u, denied, rules)
		}
	}
	for _, u := range []string{
		"https://www.github.com/corp/plugins",
		"ssh://git@ssh.github.com:443/corp/plugins.git",
		"git@ssh.github.com:corp/plugins.git",
	} {
		if denied, rules := checkAdd(t, e, gitSrc(u)); denied {
			t.Errorf("%s: denied %v, want allowed as github corp/plugins", u, rules)
		}
	}
}

// A managed extraKnownMarketplaces github declaration means the declaring
// layer's GitHub host: the same owner/repo served from the user's GitHub
// host (WHARF_GITHUB_HOST) is another marketplace, and gets neither the
// managed forced-on state nor the binding.
func TestUserGitHubHostDoesNotMoveManagedBindings(t *testing.T) {
	host := WithGitHubHost("http://127.0.0.1:8080")
	e := engineWith(t, `{"extraKnownMarketplaces":{"corp":{"source":{"source":"github","repo":"corp/plugins"}}},
		"enabledPlugins":{"deploy@corp":true}}`, host)
	decide := func(source string) Decision {
		t.Helper()
		d, err := e.Decide(context.Background(), Request{Action: ActionLoad, Plugin: mustID("deploy@corp"),
			Marketplace: Marketplace{Name: "corp", Source: ptr(src(t, source))}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := decide(gitSrc("http://127.0.0.1:8080/corp/plugins.git")); d.Allowed || d.Forced == "on" {
		t.Errorf("corp/plugins on the user's GitHub host: allowed=%v forced=%q, want refused and not forced on", d.Allowed, d.Forced)
	}
	if d := decide(gitSrc("https://github.com/corp/plugins")); !d.Allowed || d.Forced != "on" {
		t.Errorf("corp/plugins on github.com: allowed=%v forced=%q %v, want forced on", d.Allowed, d.Forced, d.Reasons)
	}
}
