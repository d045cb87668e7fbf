package policystate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// The policy state's contract, on every backend: Open returns a fresh,
// empty store; Again returns another client of the same store (a replica).
func TestPolicyState(t *testing.T) {
	storeharness.Run(t, "policystate", func(t *testing.T, b *storeharness.Backend) {
		t.Run("PutGetLayers", func(t *testing.T) { testPutGetLayers(t, b) })
		t.Run("HistoryOrder", func(t *testing.T) { testHistoryOrder(t, b) })
		t.Run("HeadAdvances", func(t *testing.T) { testHeadAdvances(t, b) })
		t.Run("RefusalsChangeNothing", func(t *testing.T) { testRefusals(t, b) })
		t.Run("RevocationsAdvanceTheHead", func(t *testing.T) { testRevocations(t, b) })
		t.Run("ReplicasCachedEqualsUncached", func(t *testing.T) { testReplicas(t, b) })
		t.Run("HeadCacheExpires", func(t *testing.T) { testHeadCacheExpires(t, b) })
		t.Run("CorruptRecordsAreNamed", func(t *testing.T) { testCorrupt(t, b) })
	})
}

// engine is what the test's policy compiles to: the layers it was built
// from, as the server's engine would see them.
type engine struct {
	version string
	layers  []policystate.Layer
}

// Warnings names every layer without a module (the state passes an
// engine's warnings on with a write).
func (e *engine) Warnings() []string {
	var w []string
	for _, l := range e.layers {
		if len(l.Modules) == 0 {
			w = append(w, "layer "+l.Name+" has no module")
		}
	}
	return w
}

// brokenModule is a module the test's compiler refuses.
const brokenModule = "package wharf.admin.broken\n\nbroken := true\n"

// newState is a state of st whose compiler counts its runs in compiles.
func newState(t *testing.T, st store.Store, compiles *atomic.Int64, opt policystate.Options[*engine]) *policystate.State[*engine] {
	t.Helper()
	opt.Compile = func(ctx context.Context, ls []policystate.Layer) (*engine, error) {
		compiles.Add(1)
		for _, l := range ls {
			for _, src := range l.Modules {
				if src == brokenModule {
					return nil, errors.New("rego_type_error: broken is refused")
				}
			}
		}
		return &engine{version: policystate.Version(ls), layers: ls}, nil
	}
	s, err := policystate.New(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func module(layer string, n int) map[string]string {
	return map[string]string{"m.rego": fmt.Sprintf("package wharf.admin.%s\n\nn := %d\n", layer, n)}
}

func change(name string, rank *int, settings string, modules map[string]string) policystate.Change {
	if modules == nil {
		modules = map[string]string{}
	}
	return policystate.Change{Name: name, Rank: rank, Settings: json.RawMessage(settings), Modules: modules}
}

func rank(n int) *int { return &n }

var admin = policystate.Actor{ID: "tok_admin", Role: tokens.RoleAdmin}

// anyVersion is a precondition that accepts the layer at any version.
func anyVersion(uint64) error { return nil }

// Layers written are read back in authority order (rank, then name); a
// rewrite keeps the rank unless it gives one, and bumps the version; the
// caller's precondition sees the current version; a deleted layer is gone.
func testPutGetLayers(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	var compiles atomic.Int64
	s := newState(t, st, &compiles, policystate.Options[*engine]{})
	ctx := context.Background()
	put := func(c policystate.Change, want uint64) policystate.Result {
		t.Helper()
		var seen uint64 = 99
		res, err := s.Put(ctx, c, func(cur uint64) error { seen = cur; return nil }, admin)
		if err != nil {
			t.Fatalf("put %s: %v", c.Name, err)
		}
		if seen != want {
			t.Fatalf("put %s: the precondition saw version %d, want %d", c.Name, seen, want)
		}
		return res
	}
	put(change("team", rank(20), `{}`, module("team", 1)), 0)
	res := put(change("org", rank(10), `{"blockedMarketplaces":[]}`, nil), 0)
	put(change("project", nil, `{}`, module("project", 1)), 0) // DefaultLayerRank
	if res.Layer.Version != 1 || res.Layer.UpdatedBy != "tok_admin" || len(res.Warnings) != 1 || res.Warnings[0] != "layer org has no module" {
		t.Fatalf("creating org: %+v", res)
	}
	names := func() []string {
		t.Helper()
		ls, err := s.Layers()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range ls {
			out = append(out, fmt.Sprintf("%s/%d/v%d", l.Name, l.Rank, l.Version))
		}
		return out
	}
	if got, want := names(), []string{"org/10/v1", "team/20/v1", "project/100/v1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("layers = %v, want %v", got, want)
	}
	// A rewrite without a rank keeps it; one with a rank reorders.
	put(change("team", nil, `{"a":1}`, module("team", 2)), 1)
	put(change("project", rank(5), `{}`, nil), 1)
	if got, want := names(), []string{"project/5/v2", "org/10/v1", "team/20/v2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("layers after rewrites = %v, want %v", got, want)
	}
	l, err := s.Layer("team")
	if err != nil || l == nil || string(l.Settings) != `{"a":1}` || l.Modules["m.rego"] != module("team", 2)["m.rego"] {
		t.Fatalf("Layer(team) = %+v, %v", l, err)
	}
	if l, err := s.Layer("nobody"); l != nil || err != nil {
		t.Fatalf("Layer(nobody) = %+v, %v", l, err)
	}
	var seen uint64
	if _, err := s.Delete(ctx, "org", func(cur uint64) error { seen = cur; return nil }, admin); err != nil || seen != 1 {
		t.Fatalf("delete org: %v (precondition saw %d)", err, seen)
	}
	if got, want := names(), []string{"project/5/v2", "team/20/v2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("layers after the delete = %v, want %v", got, want)
	}
	// Another client of the store reads the same.
	other, err := policystate.New[*engine](b.Again(t, st), policystate.Options[*engine]{})
	if err != nil {
		t.Fatal(err)
	}
	h1, ls1, err1 := s.Current()
	h2, ls2, err2 := other.Current()
	if err1 != nil || err2 != nil || h1 != h2 || !reflect.DeepEqual(ls1, ls2) || other.KeyID() != s.KeyID() {
		t.Fatalf("two clients of one store disagree: %+v %v / %+v %v", h1, err1, h2, err2)
	}
}

// Every change is in the history, in commit order, with who and what;
// the history pages and filters by layer, and each change has its audit
// entry.
func testHistoryOrder(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	var compiles atomic.Int64
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var tick atomic.Int64
	s := newState(t, st, &compiles, policystate.Options[*engine]{Now: func() time.Time { return t0.Add(time.Duration(tick.Add(1)) * time.Minute) }})
	ctx := context.Background()
	dev := policystate.Actor{ID: "tok_dev", Role: tokens.RoleAdmin}
	steps := []struct {
		layer, action string
		by            policystate.Actor
	}{
		{"org", policystate.ActionCreate, admin},
		{"team", policystate.ActionCreate, dev},
		{"org", policystate.ActionUpdate, dev},
		{"team", policystate.ActionDelete, admin},
		{"team", policystate.ActionCreate, admin},
	}
	for i, step := range steps {
		var err error
		if step.action == policystate.ActionDelete {
			_, err = s.Delete(ctx, step.layer, anyVersion, step.by)
		} else {
			_, err = s.Put(ctx, change(step.layer, nil, fmt.Sprintf(`{"step":%d}`, i), nil), anyVersion, step.by)
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	all, next, err := s.History("", 0, 100)
	if err != nil || next != "" || len(all) != len(steps) {
		t.Fatalf("history = %d entries, next %q, %v", len(all), next, err)
	}
	var prev policystate.HistoryEntry
	for i, e := range all {
		s := steps[i]
		if e.Layer != s.layer || e.Action != s.action || e.Actor != s.by.ID || e.Revision != uint64(i+1) || (i > 0 && (e.Seq <= prev.Seq || !e.Time.After(prev.Time))) {
			t.Fatalf("entry %d = %+v, want %s %s by %s at revision %d after %+v", i, e, s.action, s.layer, s.by.ID, i+1, prev)
		}
		if (e.Document == nil) != (s.action == policystate.ActionDelete) {
			t.Fatalf("entry %d: document %+v for a %s", i, e.Document, s.action)
		}
		prev = e
	}
	if all[2].LayerVersion != 2 || string(all[2].Document.Settings) != `{"step":2}` {
		t.Fatalf("the update's entry = %+v", all[2])
	}
	// Paged: two at a time, in the same order.
	var paged []policystate.HistoryEntry
	var after uint64
	for {
		page, next, err := s.History("", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page...)
		if next == "" {
			break
		}
		fmt.Sscan(next, &after)
	}
	if !reflect.DeepEqual(paged, all) {
		t.Fatalf("paged history differs:\n%+v\n%+v", paged, all)
	}
	team, _, err := s.History("team", 0, 100)
	if err != nil || len(team) != 3 || team[0].Action != policystate.ActionCreate || team[1].Action != policystate.ActionDelete {
		t.Fatalf("team's history = %+v, %v", team, err)
	}
	// One audit entry per change, committed with it.
	entries, _, err := audit.ReadLog(st, audit.Bucket, "audit", 0, 100, func(audit.Entry) bool { return true }, func(e audit.Entry) uint64 { return e.Seq })
	if err != nil || len(entries) != len(steps) || entries[3].Action != audit.ActionPolicyDelete || entries[3].Object != "team" || entries[1].Actor != "tok_dev" {
		t.Fatalf("audit = %+v, %v", entries, err)
	}
}

// Every change advances the head by one revision; the version is the
// content's (the same content has the same version, whoever wrote it and
// when), and a revocation committed with AdvanceHead is part of it.
func testHeadAdvances(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	var compiles atomic.Int64
	s := newState(t, st, &compiles, policystate.Options[*engine]{TTL: time.Hour})
	ctx := context.Background()
	h0, err := s.Head(time.Now())
	if err != nil || h0.Revision != 0 || h0.Version != policystate.Version(nil) {
		t.Fatalf("the head of an empty store = %+v, %v", h0, err)
	}
	r1, err := s.Put(ctx, change("org", rank(10), `{}`, module("org", 1)), anyVersion, admin)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Put(ctx, change("team", rank(20), `{}`, nil), anyVersion, admin)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := s.Delete(ctx, "team", anyVersion, admin)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Head.Revision != 1 || r2.Head.Revision != 2 || r3.Head.Revision != 3 {
		t.Fatalf("revisions %d %d %d, want 1 2 3", r1.Head.Revision, r2.Head.Revision, r3.Head.Revision)
	}
	if r3.Head.Version != r1.Head.Version || r2.Head.Version == r1.Head.Version {
		t.Fatalf("versions: org %s, org+team %s, org again %s", r1.Head.Version, r2.Head.Version, r3.Head.Version)
	}
	if h, err := s.Head(time.Now()); err != nil || h != r3.Head {
		t.Fatalf("Head after this state's writes = %+v, %v; want %+v", h, err, r3.Head)
	}
	// A revocation advances the head in its own transaction.
	rv := policy.Revocation{ID: "r-00000000000000aa", Plugin: "risky@corp", Version: "1.0.0", Reason: "leaks", By: "tok_admin", Created: time.Now().UTC()}
	var h4 policystate.Head
	err = st.Update(func(tx store.Tx) error {
		layers, err := policystate.ReadLayers(tx)
		if err != nil {
			return err
		}
		if err := revocations.Put(tx, rv); err != nil {
			return err
		}
		h4, err = policystate.AdvanceHead(tx, layers, policy.Revocations{rv})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := s.Layers()
	if h4.Revision != 4 || h4.Version != policystate.FullVersion(layers, policy.Revocations{rv}) || h4.Version == r3.Head.Version {
		t.Fatalf("the revocation's head = %+v", h4)
	}
	s.SetHead(h4)
	// The next layer change keeps the revocation in the version.
	r5, err := s.Put(ctx, change("team", rank(20), `{}`, nil), anyVersion, admin)
	if err != nil {
		t.Fatal(err)
	}
	layers, _ = s.Layers()
	if r5.Head.Revision != 5 || r5.Head.Version != policystate.FullVersion(layers, policy.Revocations{rv}) {
		t.Fatalf("after the revocation, a layer's head = %+v", r5.Head)
	}
	// The bundle carries the head, the layers and the revocation, signed.
	bun, err := s.Bundle(ctx, tokens.Identity{})
	if err != nil {
		t.Fatal(err)
	}
	got, info, err := policy.ReadBundle(bytes.NewReader(bun.Body), []byte(s.PublicKeyPEM()))
	if err != nil || info.Version != r5.Head.Version || info.Revision != 5 || bun.Revision != 5 || len(got) != 2 || len(info.Revocations) != 1 || info.KeyID != s.KeyID() {
		t.Fatalf("bundle: %+v %+v %v", got, info, err)
	}
}

// A refused write changes nothing: a precondition's error is returned as
// it is, a layer set that does not compile is *CompileError, a 65th layer
// *TooManyLayersError, deleting an absent layer *NotFoundError; without a
// compiler, Decider is ErrNoCompiler.
func testRefusals(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	var compiles atomic.Int64
	s := newState(t, st, &compiles, policystate.Options[*engine]{})
	ctx := context.Background()
	if _, err := s.Put(ctx, change("org", rank(10), `{}`, nil), anyVersion, admin); err != nil {
		t.Fatal(err)
	}
	head := func() policystate.Head {
		t.Helper()
		var h policystate.Head
		if err := st.View(func(r store.Reader) (err error) { h, err = policystate.ReadHead(r); return err }); err != nil {
			t.Fatal(err)
		}
		return h
	}
	h1 := head()
	errStale := errors.New("stale version")
	if _, err := s.Put(ctx, change("org", nil, `{"x":1}`, nil), func(uint64) error { return errStale }, admin); err != errStale {
		t.Fatalf("a refused precondition: %v", err)
	}
	var ce *policystate.CompileError
	_, err := s.Put(ctx, change("broken", nil, `{}`, map[string]string{"b.rego": brokenModule}), anyVersion, admin)
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "does not compile with this layer: rego_type_error") {
		t.Fatalf("a layer that does not compile: %v", err)
	}
	if l, _ := s.Layer("broken"); l != nil {
		t.Fatalf("a layer that does not compile was stored: %+v", l)
	}
	var nf *policystate.NotFoundError
	if _, err := s.Delete(ctx, "nobody", anyVersion, admin); !errors.As(err, &nf) || nf.Name != "nobody" || err.Error() != `no policy layer "nobody"` {
		t.Fatalf("deleting an absent layer: %v", err)
	}
	if h := head(); h != h1 {
		t.Fatalf("refused writes moved the head from %+v to %+v", h1, h)
	}
	for i := 1; i < policystate.MaxLayers; i++ {
		if _, err := s.Put(ctx, change(fmt.Sprintf("l%02d", i), nil, `{}`, nil), anyVersion, admin); err != nil {
			t.Fatalf("layer %d: %v", i+1, err)
		}
	}
	var tm *policystate.TooManyLayersError
	if _, err := s.Put(ctx, change("onetoomany", nil, `{}`, nil), anyVersion, admin); !errors.As(err, &tm) || tm.Max != policystate.MaxLayers {
		t.Fatalf("layer %d: %v", policystate.MaxLayers+1, err)
	}
	if _, err := s.Put(ctx, change("org", nil, `{"still":"writable"}`, nil), anyVersion, admin); err != nil {
		t.Fatalf("rewriting a layer of a full set: %v", err)
	}
	bare, err := policystate.New[*engine](st, policystate.Options[*engine]{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bare.Decider(ctx); !errors.Is(err, policystate.ErrNoCompiler) {
		t.Fatalf("Decider without a compiler: %v", err)
	}
	if w, err := bare.Check(ctx, []policystate.Layer{{Name: "broken", Modules: map[string]string{"b.rego": brokenModule}}}); err != nil || len(w) != 0 {
		t.Fatalf("Check without a compiler: %v %v", w, err)
	}
}

// Two states over one store, each one server replica: a random sequence
// of changes through the other, followed by this one's watch (entries
// never expire, as while every watch proves itself), and after each the
// cached head, compiled policy and bundle are what a fresh state reading
// the store answers.
func testReplicas(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	var compilesA, compilesB, compilesFresh atomic.Int64
	a := newState(t, st, &compilesA, policystate.Options[*engine]{TTL: time.Hour, Fresh: func(exp, now time.Time) bool { return !exp.IsZero() }})
	otherStore := b.Again(t, st)
	other := newState(t, otherStore, &compilesB, policystate.Options[*engine]{TTL: time.Hour})
	w, ok := st.(store.Watcher)
	if !ok {
		t.Fatalf("%T has no watch", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := w.Watch(ctx, policystate.SettingsBucket)
	if err != nil {
		t.Fatal(err)
	}
	var applied atomic.Int64
	go func() {
		for ev := range ch {
			if !ev.Progress && ev.Key == policystate.HeadKey && a.Apply(ev) {
				applied.Add(1)
			}
		}
	}()
	wait := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for applied.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("the watch applied %d head changes of %d", applied.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// The state of a is cached before any change.
	if _, _, err := a.Decider(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Bundle(ctx, tokens.Identity{}); err != nil {
		t.Fatal(err)
	}
	freshStore := b.Again(t, st)
	rng := rand.New(rand.NewPCG(7, 33))
	names := []string{"org", "dept", "team", "project"}
	live := map[string]bool{}
	var changes int64
	for step := range 60 {
		name := names[rng.IntN(len(names))]
		var err error
		switch {
		case live[name] && rng.IntN(3) == 0:
			_, err = other.Delete(ctx, name, anyVersion, admin)
			delete(live, name)
		case rng.IntN(4) == 0: // content it had before: the same version again
			_, err = other.Put(ctx, change(name, rank(10*(1+rng.IntN(3))), `{}`, nil), anyVersion, admin)
			live[name] = true
		default:
			_, err = other.Put(ctx, change(name, rank(10*(1+rng.IntN(3))), fmt.Sprintf(`{"step":%d}`, step), module(name, rng.IntN(3))), anyVersion, admin)
			live[name] = true
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		changes++
		wait(changes)

		fresh := newState(t, freshStore, &compilesFresh, policystate.Options[*engine]{})
		wantHead, wantLayers, err := fresh.Current()
		if err != nil {
			t.Fatal(err)
		}
		if h, err := a.Head(time.Now()); err != nil || h != wantHead {
			t.Fatalf("step %d: cached head %+v (%v), stored %+v", step, h, err, wantHead)
		}
		d, h, err := a.Decider(ctx)
		if err != nil || h != wantHead || d.version != wantHead.Version || !reflect.DeepEqual(versionless(d.layers), versionless(wantLayers)) {
			t.Fatalf("step %d: compiled policy %s of %+v at %+v (%v), stored %+v", step, d.version, d.layers, h, err, wantHead)
		}
		fd, fh, err := fresh.Decider(ctx)
		if err != nil || fh != h || fd.version != d.version {
			t.Fatalf("step %d: a fresh state compiles %s at %+v (%v), the cached %s at %+v", step, fd.version, fh, err, d.version, h)
		}
		bun, err := a.Bundle(ctx, tokens.Identity{})
		if err != nil {
			t.Fatal(err)
		}
		fbun, err := fresh.Bundle(ctx, tokens.Identity{})
		if err != nil {
			t.Fatal(err)
		}
		// One bundle per head, the same bytes on every replica.
		if bun.Version != wantHead.Version || bun.Revision != wantHead.Revision || !bytes.Equal(bun.Body, fbun.Body) {
			t.Fatalf("step %d: bundle %s@%d, stored head %+v; same bytes as a fresh state's: %v", step, bun.Version, bun.Revision, wantHead, bytes.Equal(bun.Body, fbun.Body))
		}
		_, info, err := policy.ReadBundle(bytes.NewReader(bun.Body), []byte(fresh.PublicKeyPEM()))
		if err != nil || info.Version != wantHead.Version || info.Revision != wantHead.Revision || len(info.Layers) != len(wantLayers) {
			t.Fatalf("step %d: bundle reads as %+v, %v; stored head %+v with %d layers", step, info, err, wantHead, len(wantLayers))
		}
	}
	// The compiled policy was cached: a compiles once per version it saw,
	// not once per question.
	before := compilesA.Load()
	for range 5 {
		if _, _, err := a.Decider(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if compilesA.Load() != before {
		t.Fatalf("an unchanged policy compiled %d more times", compilesA.Load()-before)
	}
}

// versionless drops what a compiled engine does not see of a layer.
func versionless(ls []policystate.Layer) []policystate.Layer {
	out := make([]policystate.Layer, len(ls))
	for i, l := range ls {
		out[i] = policystate.Layer{Name: l.Name, Rank: l.Rank, Settings: l.Settings, Modules: l.Modules}
	}
	return out
}

// Without a watch, the cached head serves until its TTL, then the store's;
// this state's own commits and a drop take effect at once.
func testHeadCacheExpires(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	var compiles atomic.Int64
	const ttl = time.Minute
	s := newState(t, st, &compiles, policystate.Options[*engine]{TTL: ttl})
	other := newState(t, b.Again(t, st), &compiles, policystate.Options[*engine]{})
	ctx := context.Background()
	t0 := time.Now()
	h0, err := s.Head(t0)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := other.Put(ctx, change("org", nil, `{}`, nil), anyVersion, admin) // this state hears nothing of it
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Head(t0.Add(ttl / 2)); h != h0 {
		t.Fatalf("within the TTL the cached head serves: %+v, want %+v", h, h0)
	}
	if h, _ := s.Head(t0.Add(ttl)); h != r1.Head {
		t.Fatalf("after the TTL the store's head serves: %+v, want %+v", h, r1.Head)
	}
	t1 := time.Now()
	if _, err := s.Head(t1); err != nil {
		t.Fatal(err)
	}
	r2, err := other.Put(ctx, change("team", nil, `{}`, nil), anyVersion, admin)
	if err != nil {
		t.Fatal(err)
	}
	s.DropHead()
	if h, _ := s.Head(t1); h != r2.Head {
		t.Fatalf("after a drop the store's head serves: %+v, want %+v", h, r2.Head)
	}
	// This state's own write is its head at once.
	r3, err := s.Put(ctx, change("project", nil, `{}`, nil), anyVersion, admin)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Head(t1); h != r3.Head {
		t.Fatalf("after its own write: %+v, want %+v", h, r3.Head)
	}
	// A head older than the cached one (a commit reported late) does not
	// go back: the store is read.
	s.SetHead(r1.Head)
	if h, _ := s.Head(t1); h != r3.Head {
		t.Fatalf("after an older head was set: %+v, want the store's %+v", h, r3.Head)
	}
	// With no TTL, every read goes to the store.
	uncached := newState(t, st, &compiles, policystate.Options[*engine]{TTL: -1})
	if _, err := uncached.Head(t1); err != nil {
		t.Fatal(err)
	}
	r4, err := other.Delete(ctx, "project", anyVersion, admin)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := uncached.Head(t1); h != r4.Head {
		t.Fatalf("without a TTL: %+v, want %+v", h, r4.Head)
	}
}

// A record that does not decode fails the read, naming it; a head event
// that does not decode drops the cached head.
func testCorrupt(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	var compiles atomic.Int64
	s := newState(t, st, &compiles, policystate.Options[*engine]{TTL: time.Hour, Fresh: func(exp, now time.Time) bool { return !exp.IsZero() }})
	if err := st.Update(func(tx store.Tx) error { return tx.Put(policystate.LayersBucket, "org", []byte("{")) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Layers(); err == nil || !strings.Contains(err.Error(), "policy layer org: corrupt record") {
		t.Fatalf("a corrupt layer in the list: %v", err)
	}
	if _, err := s.Layer("org"); err == nil || !strings.Contains(err.Error(), "policy layer org: corrupt record") {
		t.Fatalf("a corrupt layer read alone: %v", err)
	}
	if _, err := s.Head(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.Update(func(tx store.Tx) error { return tx.Put(policystate.SettingsBucket, policystate.HeadKey, []byte("[")) }); err != nil {
		t.Fatal(err)
	}
	if !s.Apply(store.Event{Bucket: policystate.SettingsBucket, Key: policystate.HeadKey, Value: []byte("[")}) {
		t.Fatal("Apply did not take an event of the settings bucket")
	}
	if _, err := s.Head(time.Now()); err == nil || !strings.Contains(err.Error(), "policy head: corrupt record") {
		t.Fatalf("a corrupt head after its event: %v", err)
	}
	if s.Apply(store.Event{Bucket: tokens.Bucket, Key: "tok_x"}) {
		t.Fatal("Apply took an event of another bucket")
	}
}

// A revocation made or lifted advances the head, is in the bundle, the
// revocation history and the audit log; revoking what is revoked is
// *AlreadyRevokedError, lifting what is not active
// *revocations.NotFoundError, one revocation beyond the limit
// *TooManyRevocationsError, and none of them changes the head.
func testRevocations(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	var compiles atomic.Int64
	s := newState(t, st, &compiles, policystate.Options[*engine]{TTL: time.Hour})
	ctx := context.Background()
	r1, err := s.Put(ctx, change("org", nil, `{}`, nil), anyVersion, admin)
	if err != nil {
		t.Fatal(err)
	}
	rv := policy.Revocation{ID: "r-00000000000000a1", Plugin: "risky@corp", Version: "1.0.0", Reason: "leaks", By: "tok_admin", Created: time.Now().UTC()}
	h2, err := s.Revoke(rv, admin)
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := s.Layers()
	if h2.Revision != 2 || h2.Version != policystate.FullVersion(layers, policy.Revocations{rv}) {
		t.Fatalf("the revocation's head = %+v", h2)
	}
	if h, _ := s.Head(time.Now()); h != h2 {
		t.Fatalf("Head after Revoke = %+v, want %+v", h, h2)
	}
	bun, err := s.Bundle(ctx, tokens.Identity{})
	if err != nil {
		t.Fatal(err)
	}
	if _, info, err := policy.ReadBundle(bytes.NewReader(bun.Body), []byte(s.PublicKeyPEM())); err != nil || len(info.Revocations) != 1 || info.Revocations[0].ID != rv.ID || info.Revision != 2 {
		t.Fatalf("the bundle after Revoke: %+v %v", info, err)
	}
	again := rv
	again.ID, again.Reason = "r-00000000000000a2", "another reason"
	var ar *policystate.AlreadyRevokedError
	if _, err := s.Revoke(again, admin); !errors.As(err, &ar) || ar.Existing.ID != rv.ID || !strings.Contains(err.Error(), "risky@corp 1.0.0 is already revoked by r-00000000000000a1 (leaks)") {
		t.Fatalf("revoking it twice: %v", err)
	}
	var nf *revocations.NotFoundError
	if _, _, err := s.Lift("r-00000000000000ff", admin); !errors.As(err, &nf) {
		t.Fatalf("lifting what is not active: %v", err)
	}
	revs, h, err := s.Revocations()
	if err != nil || len(revs) != 1 || h != h2 {
		t.Fatalf("after two refusals: %+v at %+v, %v", revs, h, err)
	}
	lifted, h3, err := s.Lift(rv.ID, admin)
	if err != nil || lifted.ID != rv.ID || h3.Revision != 3 || h3.Version != r1.Head.Version {
		t.Fatalf("Lift = %+v at %+v, %v; want the version of the layers alone, %s", lifted, h3, err, r1.Head.Version)
	}
	hist, _, err := revocations.History(st, 0, 10)
	if err != nil || len(hist) != 2 || hist[0].Action != revocations.ActionRevoke || hist[1].Action != revocations.ActionLift || hist[1].Revision != 3 {
		t.Fatalf("revocation history = %+v, %v", hist, err)
	}
	entries, _, err := audit.ReadLog(st, audit.Bucket, "audit", 0, 100, func(e audit.Entry) bool { return e.Object == rv.ID }, func(e audit.Entry) uint64 { return e.Seq })
	if err != nil || len(entries) != 2 || entries[0].Action != policystate.ActionRevocationCreate || entries[1].Action != policystate.ActionRevocationDelete {
		t.Fatalf("audit of the revocation = %+v, %v", entries, err)
	}
	// Fill to the limit, in transactions small enough for etcd.
	for i := 0; i < revocations.Max; i += 100 {
		err := st.Update(func(tx store.Tx) error {
			for j := i; j < i+100 && j < revocations.Max; j++ {
				r := policy.Revocation{ID: fmt.Sprintf("r-%016x", j), Digest: fmt.Sprintf("w1:%d", j), Reason: "filler", Created: time.Now().UTC()}
				if err := revocations.Put(tx, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var tm *policystate.TooManyRevocationsError
	if _, err := s.Revoke(rv, admin); !errors.As(err, &tm) || tm.Max != revocations.Max {
		t.Fatalf("revocation %d: %v", revocations.Max+1, err)
	}
	if _, h, _ := s.Revocations(); h != h3 {
		t.Fatalf("refused revocations moved the head from %+v to %+v", h3, h)
	}
}
