package approvals_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/server/approvals"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
	"github.com/wharfhq/wharf/plugin"
)

// The approvals' contract, on every backend.
func TestApprovals(t *testing.T) {
	storeharness.Run(t, "approvals", func(t *testing.T, b *storeharness.Backend) {
		t.Run("SeenDecidedListed", func(t *testing.T) { testSeenDecided(t, b.Open(t)) })
		t.Run("Modes", func(t *testing.T) { testModes(t, b.Open(t)) })
		t.Run("AnotherReplicaReadsThem", func(t *testing.T) {
			st := b.Open(t)
			put(t, st, record(t, "sync@corp", "1.0.0", writeTree(t, map[string]string{"README.md": "v1"}), policy.StateApproved))
			recs, err := list(b.Again(t, st))
			if err != nil || len(recs) != 1 || recs[0].Version != "1.0.0" {
				t.Fatalf("the other replica lists %+v, %v", recs, err)
			}
		})
		t.Run("CorruptRecordIsNamed", func(t *testing.T) {
			st := b.Open(t)
			if err := st.Update(func(tx store.Tx) error { return tx.Put(approvals.Bucket, "x@corp 1 w1:z", []byte("{")) }); err != nil {
				t.Fatal(err)
			}
			if _, err := list(st); err == nil || !strings.Contains(err.Error(), "corrupt record") {
				t.Fatalf("err = %v", err)
			}
		})
	})
}

func list(st store.Store) (recs []approvals.Record, err error) {
	err = st.View(func(r store.Reader) error { recs, err = approvals.List(r); return err })
	return recs, err
}

func put(t *testing.T, st store.Store, rec approvals.Record) {
	t.Helper()
	if err := st.Update(func(tx store.Tx) error { return approvals.Put(tx, rec) }); err != nil {
		t.Fatal(err)
	}
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func record(t *testing.T, id, version, dir, state string) approvals.Record {
	t.Helper()
	rep, err := capability.Read(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := trust.Digest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return approvals.Record{Plugin: id, Version: version, Digest: tree.Digest, State: state, Capabilities: rep.Capabilities,
		Seen: time.Now().UTC()}
}

const hooked = `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"${CLAUDE_PLUGIN_ROOT}/scripts/sync.sh"}]}]}}`

// A version is seen, judged against the last approved one, decided by an
// admin, and listed with its state; the bundle form carries it.
func testSeenDecided(t *testing.T, st store.Store) {
	v1 := writeTree(t, map[string]string{".claude-plugin/plugin.json": `{"name":"sync","version":"1.0.0"}`, "commands/a.md": "# a"})
	v2 := writeTree(t, map[string]string{".claude-plugin/plugin.json": `{"name":"sync","version":"2.0.0"}`, "commands/a.md": "# a",
		"hooks/hooks.json": hooked, "scripts/sync.sh": "#!/bin/sh\n"})
	r1 := record(t, "sync@corp", "1.0.0", v1, "")
	state, _ := approvals.Judge(policy.ModeAuto, nil, r1.Capabilities)
	if state != policy.StateApproved {
		t.Fatalf("auto: the first version is %s", state)
	}
	r1.State, r1.Auto, r1.By = state, true, approvals.AutoActor
	put(t, st, r1)
	r2 := record(t, "sync@corp", "2.0.0", v2, "")
	r2.State, r2.Adds = approvals.Judge(policy.ModeAuto, &r1, r2.Capabilities)
	if r2.State != policy.StateHeld || !strings.Contains(capability.Summary(r2.Adds), "adds hook PreToolUse(Bash) running scripts/sync.sh") {
		t.Fatalf("auto: a version adding a hook is %s with %v", r2.State, r2.Adds)
	}
	files, err := approvals.Files(v1, v2)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(files.Added, ",") != "hooks/hooks.json,scripts/sync.sh" || strings.Join(files.Changed, ",") != ".claude-plugin/plugin.json" || len(files.Removed) != 0 {
		t.Fatalf("files = %+v", files)
	}
	r2.Base, r2.Files = &approvals.Ref{Version: r1.Version, Digest: r1.Digest}, files
	put(t, st, r2)

	var adm *policy.Admissions
	if err := st.View(func(r store.Reader) (err error) { adm, err = approvals.Admissions(r); return err }); err != nil {
		t.Fatal(err)
	}
	id := plugin.ID{Name: "sync", Source: "corp"}
	if err := adm.Check(id, "2.0.0", r2.Digest); err == nil || !strings.Contains(err.Error(), "2.0.0 is held for review: adds hook PreToolUse(Bash)") {
		t.Fatalf("bundle form: the held version: %v", err)
	}
	if err := adm.Check(id, "1.0.0", r1.Digest); err != nil {
		t.Fatalf("bundle form: the approved version: %v", err)
	}

	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var got approvals.Record
	if err := st.Update(func(tx store.Tx) (err error) {
		got, err = approvals.Decide(tx, "sync@corp", "2.0.0", r2.Digest, policy.StateApproved, "tok_admin", "reviewed the hook", now)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got.State != policy.StateApproved || got.By != "tok_admin" || got.Note != "reviewed the hook" || !got.Decided.Equal(now) {
		t.Fatalf("decided = %+v", got)
	}
	var ce *approvals.ConflictError
	err = st.Update(func(tx store.Tx) error {
		_, err := approvals.Decide(tx, "sync@corp", "2.0.0", r2.Digest, policy.StateApproved, "tok_admin", "", now)
		return err
	})
	if !errors.As(err, &ce) {
		t.Fatalf("approving twice: %v", err)
	}
	var nf *approvals.NotFoundError
	err = st.Update(func(tx store.Tx) error {
		_, err := approvals.Decide(tx, "sync@corp", "9.0.0", r2.Digest, policy.StateApproved, "tok_admin", "", now)
		return err
	})
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "GET /v1/approvals") {
		t.Fatalf("deciding an unknown version: %v", err)
	}
	var long *approvals.NoteTooLongError
	err = st.Update(func(tx store.Tx) error {
		_, err := approvals.Decide(tx, "sync@corp", "2.0.0", r2.Digest, policy.StateDenied, "tok_admin", strings.Repeat("x", approvals.MaxNoteLen+1), now)
		return err
	})
	if !errors.As(err, &long) {
		t.Fatalf("a long note: %v", err)
	}
	var recs []approvals.Record
	if err := st.View(func(r store.Reader) (err error) { recs, err = approvals.ForPlugin(r, "sync@corp"); return err }); err != nil {
		t.Fatal(err)
	}
	last := approvals.LastApproved(recs)
	if len(recs) != 2 || last == nil || last.Version != "2.0.0" {
		t.Fatalf("records %+v, last approved %+v", recs, last)
	}
}

func testModes(t *testing.T, st store.Store) {
	err := st.Update(func(tx store.Tx) error {
		if err := approvals.SetMode(tx, approvals.ScopeMarketplace, "corp", policy.ModeReview); err != nil {
			return err
		}
		return approvals.SetMode(tx, approvals.ScopePlugin, "docs@corp", policy.ModeOpen)
	})
	if err != nil {
		t.Fatal(err)
	}
	var m approvals.Modes
	if err := st.View(func(r store.Reader) (err error) { m, err = approvals.ReadModes(r); return err }); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[plugin.ID]string{{Name: "docs", Source: "corp"}: policy.ModeOpen, {Name: "x", Source: "corp"}: policy.ModeReview, {Name: "x", Source: "other"}: policy.ModeAuto} {
		if got := m.Mode(id); got != want {
			t.Errorf("mode of %s = %s, want %s", id, got, want)
		}
	}
	var me *approvals.ModeError
	if err := st.Update(func(tx store.Tx) error { return approvals.SetMode(tx, approvals.ScopeMarketplace, "corp", "lax") }); !errors.As(err, &me) {
		t.Fatalf("mode lax: %v", err)
	}
	if err := st.Update(func(tx store.Tx) error { return approvals.SetMode(tx, approvals.ScopeMarketplace, "corp", "") }); err != nil {
		t.Fatal(err)
	}
	if err := st.View(func(r store.Reader) (err error) { m, err = approvals.ReadModes(r); return err }); err != nil || len(m.Marketplaces) != 0 {
		t.Fatalf("after removing the marketplace's mode: %+v, %v", m, err)
	}
	var adm *policy.Admissions
	if err := st.View(func(r store.Reader) (err error) { adm, err = approvals.Admissions(r); return err }); err != nil || adm == nil || adm.PluginModes["docs@corp"] != policy.ModeOpen {
		t.Fatalf("bundle form: %+v, %v", adm, err)
	}
}

// Judge's table: the one rule of a new version's state.
func TestJudge(t *testing.T) {
	plain := capability.Set{}
	hook := capability.Set{Hooks: []capability.Hook{{Event: "PreToolUse", Matcher: "Bash", Type: "command", Command: "x.sh"}}}
	last := &approvals.Record{Capabilities: plain}
	for _, c := range []struct {
		name, mode string
		last       *approvals.Record
		set        capability.Set
		want       string
	}{
		{"auto, first version", policy.ModeAuto, nil, hook, policy.StateApproved},
		{"auto, adds nothing", policy.ModeAuto, last, plain, policy.StateApproved},
		{"auto, adds a hook", policy.ModeAuto, last, hook, policy.StateHeld},
		{"review, adds nothing", policy.ModeReview, last, plain, policy.StateHeld},
		{"review, first version", policy.ModeReview, nil, plain, policy.StateHeld},
		{"open, adds a hook", policy.ModeOpen, last, hook, policy.StateApproved},
	} {
		if got, _ := approvals.Judge(c.mode, c.last, c.set); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
