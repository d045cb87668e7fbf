package channel

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
)

func (w *world) env(v *Vendor, policyVersion string, revs policy.Revocations) func(context.Context) (Env, error) {
	return func(context.Context) (Env, error) {
		in := w.input(v, Definition{}, revs)
		return Env{Catalog: in.Catalog, Decide: in.Decide, Revocations: revs, PolicyVersion: policyVersion}, nil
	}
}

func rebuilds(t *testing.T, w *world) []audit.Entry {
	t.Helper()
	es, _, err := audit.Page(w.st, audit.Filter{Action: ActionRebuild}, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// TestRefreshAuditsRebuilds: the first build of a channel, and each later
// one whose inputs changed, is audited once with what changed; a refresh
// over the same inputs builds nothing and audits nothing.
func TestRefreshAuditsRebuilds(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newWorld(t)
	ctx := context.Background()
	b := NewBuilder(t.TempDir(), w.st, nil)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	def, res, err := b.Refresh(ctx, Approved, w.env(b.Vendor, "v1", nil), now)
	if err != nil {
		t.Fatal(err)
	}
	if def.Name != Approved || !res.Rebuilt {
		t.Fatalf("first refresh: def %q rebuilt %v", def.Name, res.Rebuilt)
	}
	es := rebuilds(t, w)
	if len(es) != 1 || es[0].Actor != "wharf" || es[0].Object != "channel "+Approved || es[0].Detail["commit"] != res.Head.Commit ||
		es[0].Detail["policyVersion"] != "v1" || !es[0].Time.Equal(now) {
		t.Fatalf("audit after the first build: %+v", es)
	}
	if _, res2, err := b.Refresh(ctx, Approved, w.env(b.Vendor, "v1", nil), now); err != nil || res2.Rebuilt || res2.Head.Commit != res.Head.Commit {
		t.Fatalf("refresh over the same inputs: %v rebuilt %v", err, res2.Rebuilt)
	}
	if n := len(rebuilds(t, w)); n != 1 {
		t.Fatalf("a refresh that built nothing was audited: %d entries", n)
	}
	w.deny["risky@corp"] = true
	_, res3, err := b.Refresh(ctx, Approved, w.env(b.Vendor, "v2", nil), now)
	if err != nil || !res3.Rebuilt {
		t.Fatalf("refresh after a policy change: %v rebuilt %v", err, res3.Rebuilt)
	}
	es = rebuilds(t, w)
	if len(es) != 2 || es[1].Detail["parent"] != res.Head.Commit || !strings.Contains(strings.Join(res3.Head.Changes, "\n"), "removed risky") {
		t.Fatalf("second rebuild: changes %v, audit %+v", res3.Head.Changes, es)
	}
	if changes, _ := es[1].Detail["changes"].([]any); len(changes) != len(res3.Head.Changes) {
		t.Fatalf("audited changes %v; the head's are %v", es[1].Detail["changes"], res3.Head.Changes)
	}
	if _, _, err := b.Refresh(ctx, "nope", w.env(b.Vendor, "v2", nil), now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refresh of an unknown channel: %v", err)
	}
}

type planView struct {
	Entries []string
	LeftOut []string
}

func viewOf(p Plan) planView {
	var v planView
	for _, e := range p.Entries {
		v.Entries = append(v.Entries, e.Name+" "+e.Origin+" "+e.Digest)
	}
	for _, lo := range p.LeftOut {
		v.LeftOut = append(v.LeftOut, lo.Plugin+" "+string(lo.Kind))
	}
	sort.Strings(v.Entries)
	sort.Strings(v.LeftOut)
	return v
}

// TestRefreshCachedEqualsUncached: whatever sequence of policy and
// revocation changes a channel goes through, the head Refresh serves (from
// the stored build when the fingerprint says its inputs did not change)
// plans what a fresh build over the same inputs, on a builder with no
// history, plans.
func TestRefreshCachedEqualsUncached(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newWorld(t)
	ctx := context.Background()
	b := NewBuilder(t.TempDir(), w.st, nil)
	ids := []string{"deploy@corp", "lint@corp", "risky@corp", "lint@tools"}
	rapid.Check(t, func(rt *rapid.T) {
		for i := 0; i < rapid.IntRange(1, 3).Draw(rt, "steps"); i++ {
			clear(w.deny)
			var denied []string
			for _, id := range ids {
				if rapid.Bool().Draw(rt, "deny "+id) {
					w.deny[id] = true
					denied = append(denied, id)
				}
			}
			var revs policy.Revocations
			if rapid.Bool().Draw(rt, "revoke risky") {
				revs = policy.Revocations{{ID: "r1", Plugin: "risky@corp", Version: "2.0.0", Reason: "bad", Created: time.Unix(0, 0)}}
			}
			version := "v:" + strings.Join(denied, ",")
			_, res, err := b.Refresh(ctx, Approved, w.env(b.Vendor, version, revs), time.Now())
			if err != nil {
				rt.Fatal(err)
			}
			st, err := store.OpenBolt(filepath.Join(t.TempDir(), "fresh.db"), store.Options{})
			if err != nil {
				rt.Fatal(err)
			}
			fb := NewBuilder(t.TempDir(), st, nil)
			fresh, err := fb.Ensure(ctx, w.input(fb.Vendor, DefaultApproved(), revs), "fresh")
			st.Close()
			if err != nil {
				rt.Fatal(err)
			}
			if got, want := viewOf(res.Head.Plan), viewOf(fresh.Head.Plan); !reflect.DeepEqual(got, want) {
				rt.Fatalf("served %+v; a fresh build plans %+v", got, want)
			}
		}
	})
}
