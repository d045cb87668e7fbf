package api

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
	"github.com/wharfhq/wharf/plugin"
)

// gitMarket is the fixture marketplace as a git repository served over
// HTTP on 127.0.0.1, added to the server as "corp".
type gitMarket struct {
	t    *testing.T
	work string // the working copy pushed to the served bare repository
	bare string
}

// newGitCatalogEnv is newCatalogEnv with the marketplace in git: each
// commit is a new marketplace revision the server fetches on update.
func newGitCatalogEnv(t *testing.T) (*env, *fixture, *gitMarket) {
	t.Helper()
	needGit(t)
	f := newFixture(t)
	root := t.TempDir()
	g := &gitMarket{t: t, work: f.root}
	mustGit(t, g.work, "init", "-q", "-b", "main")
	g.commit("v1")
	g.bare = filepath.Join(root, "corp", "market.git")
	mustGit(t, "", "clone", "-q", "--bare", g.work, g.bare)
	srv := gitserve.Start(t, root, gitserve.Options{HTTP: true})
	dataDir := t.TempDir()
	cfg := fetch.Config{AllowPrivate: true}
	e := newEnv(t, func(d *Deps) {
		mgr := marketplace.NewManager(d.Store, marketplace.Options{Dir: filepath.Join(dataDir, "marketplaces"), Fetch: cfg})
		d.Catalog = catalog.New(mgr)
		d.Verifier = TrustVerifier{Keyring: f.keyring}
		d.ChannelDir = filepath.Join(dataDir, "channels")
		d.Fetcher = source.NewFetcher(cfg)
	})
	res := e.do("POST", "/v1/marketplaces", e.tokens[RoleAdmin], map[string]any{
		"name": "corp", "source": map[string]string{"source": "git", "url": srv.URL + "/corp/market.git"}})
	if res.status != 201 {
		t.Fatalf("add marketplace: %d %s", res.status, res.body)
	}
	return e, f, g
}

// commit commits the working copy and pushes it to the served repository
// (after the first commit).
func (g *gitMarket) commit(msg string) {
	g.t.Helper()
	mustGit(g.t, g.work, "add", "-A")
	mustGit(g.t, g.work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", msg)
	if g.bare != "" {
		if _, err := git(g.t, g.work, "remote", "get-url", "origin"); err != nil {
			mustGit(g.t, g.work, "remote", "add", "origin", g.bare)
		}
		mustGit(g.t, g.work, "push", "-q", "origin", "main")
	}
}

// riskyV2 commits risky 10.0.0: it adds a PreToolUse hook on Bash running
// a script of the plugin.
func riskyV2(t *testing.T, f *fixture, g *gitMarket) {
	t.Helper()
	p := func(rel, content string) { writeFile(t, filepath.Join(f.root, "plugins/risky", rel), content) }
	p(".claude-plugin/plugin.json", `{"name": "risky", "version": "10.0.0", "description": "Runs anything"}`)
	p("hooks/hooks.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/sync.sh"}]}]}}`)
	p("scripts/sync.sh", "#!/bin/sh\nexit 0\n")
	g.commit("risky 10.0.0")
}

func (e *env) channelEntry(t *testing.T, name string) (ChannelView, int) {
	t.Helper()
	var v ChannelView
	res := e.do("GET", "/v1/channels/approved", e.tokens[RoleDeveloper], nil)
	mustStatus(t, res, 200)
	res.json(t, &v)
	for i, en := range v.Entries {
		if en.Name == name {
			return v, i
		}
	}
	return v, -1
}

// A version that adds a capability is held: the channel keeps serving the
// approved one, the pending list shows the capability and file diff, the
// signed bundle carries the hold; once an admin approves it (audited) the
// channel serves it.
func TestApprovalHoldsAndReleases(t *testing.T) {
	e, f, g := newGitCatalogEnv(t)
	admin := e.tokens[RoleAdmin]
	v, i := e.channelEntry(t, "risky")
	if i < 0 || v.Entries[i].Version != "9.9.9" || v.Entries[i].Held != "" {
		t.Fatalf("risky before: %+v", v.Entries)
	}
	v1Digest := v.Entries[i].Digest

	riskyV2(t, f, g)
	mustStatus(t, e.do("POST", "/v1/marketplaces/corp/update", admin, nil), 200)
	v, i = e.channelEntry(t, "risky")
	if i < 0 || v.Entries[i].Version != "9.9.9" || v.Entries[i].Digest != v1Digest ||
		!strings.Contains(v.Entries[i].Held, "risky@corp 10.0.0 is held for review: adds hook PreToolUse(Bash) running scripts/sync.sh") {
		t.Fatalf("after v2: the channel serves %+v", v.Entries[i])
	}
	// The channel's tree is v1's: no hook in it.
	clone := filepath.Join(t.TempDir(), "approved")
	mustGit(t, "", "clone", "-q", e.channelURL("approved", e.tokens[RoleDeveloper]), clone)
	if tree, err := trust.Digest(filepath.Join(clone, "plugins/risky")); err != nil || tree.Digest != v1Digest {
		t.Fatalf("the channel's risky tree: %v, %v; want v1's %s", tree, err, v1Digest)
	}

	var pend PendingList
	res := e.do("GET", "/v1/approvals/pending", admin, nil)
	mustStatus(t, res, 200)
	res.json(t, &pend)
	if len(pend.Pending) != 1 {
		t.Fatalf("pending = %+v", pend)
	}
	p := pend.Pending[0]
	if p.Plugin != "risky@corp" || p.Version != "10.0.0" || p.Mode != policy.ModeAuto || p.Approved == nil || p.Approved.Version != "9.9.9" ||
		!strings.Contains(p.Summary, "adds hook PreToolUse(Bash) running scripts/sync.sh") || p.Files == nil ||
		strings.Join(p.Files.Added, ",") != "hooks/hooks.json,scripts/sync.sh" || strings.Join(p.Files.Changed, ",") != ".claude-plugin/plugin.json" {
		t.Fatalf("pending row = %+v", p)
	}
	mustStatus(t, e.do("GET", "/v1/approvals/pending", e.tokens[RoleDeveloper], nil), 403)

	// The signed bundle carries the hold.
	a := newAgent(e)
	a.pull()
	if err := a.policy.Admissions.Check(mustID(t, "risky@corp"), "10.0.0", p.Digest); err == nil || !strings.Contains(err.Error(), "held for review") {
		t.Fatalf("the bundle admits the held version: %v", err)
	}
	if err := a.policy.Admissions.Check(mustID(t, "risky@corp"), "9.9.9", v1Digest); err != nil {
		t.Fatalf("the bundle refuses the approved version: %v", err)
	}
	before := a.etag

	// Bad decisions are named.
	for _, c := range []struct {
		body  map[string]string
		field string
	}{
		{map[string]string{"plugin": "risky@corp", "version": "10.0.0", "decision": "deny"}, "note"},
		{map[string]string{"plugin": "risky@corp", "version": "10.0.0", "decision": "maybe"}, "decision"},
		{map[string]string{"plugin": "risky", "version": "10.0.0", "decision": "approve"}, "plugin"},
	} {
		res := e.do("POST", "/v1/approvals/decisions", admin, c.body)
		if res.status != 400 || res.apiError(t).Field != c.field {
			t.Fatalf("%v: %d %s, want 400 naming %s", c.body, res.status, res.body, c.field)
		}
	}
	mustStatus(t, e.do("POST", "/v1/approvals/decisions", admin, map[string]string{"plugin": "risky@corp", "version": "11.0.0", "decision": "approve"}), 404)

	res = e.do("POST", "/v1/approvals/decisions", admin, map[string]string{"plugin": "risky@corp", "version": "10.0.0", "decision": "approve", "note": "hook reviewed"})
	mustStatus(t, res, 200)
	var d ApprovalDecision
	res.json(t, &d)
	if d.Approval.State != policy.StateApproved || d.Approval.Note != "hook reviewed" || d.Approval.By == "" {
		t.Fatalf("decision = %+v", d)
	}
	res = e.do("POST", "/v1/approvals/decisions", admin, map[string]string{"plugin": "risky@corp", "version": "10.0.0", "decision": "approve"})
	if res.status != 409 {
		t.Fatalf("approving twice: %d %s", res.status, res.body)
	}
	if a.pull() != 200 || a.etag == before {
		t.Fatal("an approval must change the bundle and its ETag")
	}
	if err := a.policy.Admissions.Check(mustID(t, "risky@corp"), "10.0.0", p.Digest); err != nil {
		t.Fatalf("after the approval the bundle refuses it: %v", err)
	}
	v, i = e.channelEntry(t, "risky")
	if i < 0 || v.Entries[i].Version != "10.0.0" || v.Entries[i].Held != "" {
		t.Fatalf("after the approval the channel serves %+v", v.Entries[i])
	}

	// Every decision is audited: the automatic ones, the hold, the approval.
	for action, object := range map[string]string{ActionApprovalAuto: "risky@corp 9.9.9", ActionApprovalHeld: "risky@corp 10.0.0", ActionApprovalApprove: "risky@corp 10.0.0"} {
		var page AuditPage
		e.do("GET", "/v1/audit?action="+action, admin, nil).json(t, &page)
		found := false
		for _, en := range page.Entries {
			found = found || en.Object == object
		}
		if !found {
			t.Errorf("no %s audit entry for %s: %+v", action, object, page.Entries)
		}
	}
}

// In review mode every new version waits, the first one too: a plugin with
// no approved version leaves the channel as held. Setting the mode is
// audited; a bad mode is named.
func TestApprovalReviewMode(t *testing.T) {
	needGit(t)
	e, _ := newCatalogEnv(t)
	admin := e.tokens[RoleAdmin]
	res := e.do("PUT", "/v1/approvals/modes", admin, map[string]string{"marketplace": "corp", "mode": "lax"})
	if res.status != 400 || res.apiError(t).Field != "mode" {
		t.Fatalf("mode lax: %d %s", res.status, res.body)
	}
	res = e.do("PUT", "/v1/approvals/modes", admin, map[string]string{"marketplace": "corp", "mode": policy.ModeReview})
	mustStatus(t, res, 200)
	var m ApprovalModes
	res.json(t, &m)
	if m.Marketplaces["corp"] != policy.ModeReview || m.Default != policy.ModeAuto {
		t.Fatalf("modes = %+v", m)
	}
	v, i := e.channelEntry(t, "risky")
	if i >= 0 || len(v.Entries) != 0 {
		t.Fatalf("review mode: the channel serves %+v", v.Entries)
	}
	held := 0
	for _, lo := range v.LeftOut {
		if lo.Kind == "held" {
			held++
		}
	}
	if held != 4 {
		t.Fatalf("left out = %+v, want broken, deploy, lint and risky held", v.LeftOut)
	}
	// A plugin's own mode wins over its marketplace's.
	mustStatus(t, e.do("PUT", "/v1/approvals/modes", admin, map[string]string{"plugin": "risky@corp", "mode": policy.ModeOpen}), 200)
	if _, i := e.channelEntry(t, "risky"); i < 0 {
		t.Fatal("risky in open mode is not served")
	}
	var page AuditPage
	e.do("GET", "/v1/audit?action="+ActionApprovalMode, admin, nil).json(t, &page)
	if len(page.Entries) != 2 {
		t.Fatalf("mode audit = %+v", page.Entries)
	}
	// A scan records nothing new: the channel build saw every version.
	res = e.do("POST", "/v1/approvals/scan", admin, map[string]string{"marketplace": "corp"})
	mustStatus(t, res, 200)
	var sr ScanResult
	res.json(t, &sr)
	if len(sr.Seen) != 0 || len(sr.Failed) != 0 {
		t.Fatalf("scan = %+v", sr)
	}
	mustStatus(t, e.do("POST", "/v1/approvals/scan", admin, map[string]string{"marketplace": "nosuch"}), 404)
}

// A scan fetches and records only what the policy allows, as a channel
// build does.
func TestApprovalScanSkipsDenied(t *testing.T) {
	e, _, _ := newGitCatalogEnv(t)
	if res := e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"enabledPlugins": map[string]bool{"risky@corp": false}}}); res.status != 201 {
		t.Fatalf("put layer: %d %s", res.status, res.body)
	}
	res := e.do("POST", "/v1/approvals/scan", e.tokens[RoleAdmin], map[string]string{})
	mustStatus(t, res, 200)
	var sr ScanResult
	res.json(t, &sr)
	var seen []string
	for _, r := range sr.Seen {
		seen = append(seen, r.Plugin+" "+r.State)
	}
	if strings.Join(seen, ",") != "broken@corp approved,deploy@corp approved,lint@corp approved" {
		t.Fatalf("scan saw %v; want every plugin but the denied risky, approved as first versions", seen)
	}
}

// A version whose capability set cannot be read (a tree over the reader's
// bound) is not judged: the channel holds it, with why, and keeps the
// approved version.
func TestApprovalUnreadableVersionIsHeld(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	for i := 0; i <= 20000; i++ {
		writeFile(t, filepath.Join(dir, "docs", fmt.Sprintf("d%d", i/1000), fmt.Sprintf("f%d.md", i)), "x\n")
	}
	id := mustID(t, "huge@corp")
	entry := &plugin.Entry{Source: plugin.Source{Kind: plugin.SourceRelative, Path: "./plugins/huge"}}
	entry.Name = "huge"
	a, err := e.srv.admitter()(t.Context(), marketplace.Hit{ID: id, Entry: entry}, &channel.Vendored{Dir: dir, Version: "2.0.0", Digest: fakeDigest("huge")})
	var ue *unreadableError
	if err != nil || !strings.Contains(a.Held, "huge@corp 2.0.0 is held: its capability set cannot be read") {
		t.Fatalf("admission = %+v, %v", a, err)
	}
	_, _, _, _, err = e.srv.admitVersion(t.Context(), marketplace.Hit{ID: id, Entry: entry}, &channel.Vendored{Dir: dir, Version: "2.0.0", Digest: fakeDigest("huge")})
	if !errors.As(err, &ue) || ue.Plugin != "huge@corp" {
		t.Fatalf("admitVersion: %v", err)
	}
}
