package policystate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// Targeted layers, on every backend.
func TestTargets(t *testing.T) {
	storeharness.Run(t, "policystate-targets", func(t *testing.T, b *storeharness.Backend) {
		t.Run("BundlePerTarget", func(t *testing.T) { testBundlePerTarget(t, b) })
		t.Run("CachedEqualsUncached", func(t *testing.T) { testTargetsCachedEqualsUncached(t, b) })
	})
}

func targeted(name string, r int, tg *tokens.Target) policystate.Change {
	c := change(name, rank(r), `{}`, module(name, r))
	c.Target = tg
	return c
}

// bundleLayers reads a bundle with the state's key and returns its
// version and layer names.
func bundleLayers(t *testing.T, s *policystate.State[*engine], id tokens.Identity) (string, []string) {
	t.Helper()
	bun, err := s.Bundle(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	ls, info, err := policy.ReadBundle(bytes.NewReader(bun.Body), []byte(s.PublicKeyPEM()))
	if err != nil {
		t.Fatalf("the bundle for %+v does not verify: %v", id, err)
	}
	if info.Version != bun.Version {
		t.Fatalf("bundle says version %s, served as %s", info.Version, bun.Version)
	}
	names := []string{}
	for _, l := range ls {
		names = append(names, l.Name)
	}
	return bun.Version, names
}

// A layer targeted to a group is in the bundles of that group's tokens
// only, always after the organization's layers whatever its rank; its
// target is kept by a write that does not give one, recorded in the
// history and the audit log, and cleared by an empty one.
func testBundlePerTarget(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	var compiles atomic.Int64
	s := newState(t, st, &compiles, policystate.Options[*engine]{})
	ctx := context.Background()
	put := func(c policystate.Change) policystate.Result {
		t.Helper()
		res, err := s.Put(ctx, c, anyVersion, admin)
		if err != nil {
			t.Fatalf("put %s: %v", c.Name, err)
		}
		return res
	}
	put(targeted("org", 10, nil))
	// Rank 1 would outrank the organization: a targeted layer still comes after it.
	put(targeted("data", 1, &tokens.Target{Groups: []string{"data-team"}}))
	put(targeted("linux", 50, &tokens.Target{Labels: []string{"os=linux"}}))

	ls, err := s.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, l := range ls {
		order = append(order, l.Name)
	}
	if !reflect.DeepEqual(order, []string{"org", "data", "linux"}) {
		t.Fatalf("authority order %v, want the organization's layer first", order)
	}
	head, _, err := s.Current()
	if err != nil {
		t.Fatal(err)
	}
	data := tokens.Identity{Groups: []string{"data-team"}}
	other := tokens.Identity{Groups: []string{"web"}}
	both := tokens.Identity{Groups: []string{"data-team"}, Labels: []string{"os=linux"}}
	vData, nData := bundleLayers(t, s, data)
	vOther, nOther := bundleLayers(t, s, other)
	vNone, nNone := bundleLayers(t, s, tokens.Identity{})
	vBoth, nBoth := bundleLayers(t, s, both)
	if !reflect.DeepEqual(nData, []string{"org", "data"}) || !reflect.DeepEqual(nOther, []string{"org"}) ||
		!reflect.DeepEqual(nNone, []string{"org"}) || !reflect.DeepEqual(nBoth, []string{"org", "data", "linux"}) {
		t.Fatalf("bundle layers: data-team %v, web %v, nobody %v, data-team on linux %v", nData, nOther, nNone, nBoth)
	}
	if vOther != vNone || vData == vOther || vBoth != head.Version || vData == vBoth {
		t.Fatalf("versions: data-team %s, web %s, nobody %s, both %s, head %s", vData, vOther, vNone, vBoth, head.Version)
	}
	// The server's own engine for a token sees the same layers.
	d, _, applied, err := s.DeciderFor(ctx, data)
	if err != nil || applied != vData || len(d.layers) != 2 || d.layers[1].Name != "data" {
		t.Fatalf("engine for data-team: %v layers, applied %s (%v), want the bundle's %s", d, applied, err, vData)
	}
	org, _, err := s.Decider(ctx)
	if err != nil || len(org.layers) != 1 || org.layers[0].Name != "org" {
		t.Fatalf("the organization's engine: %+v (%v)", org, err)
	}

	// A rewrite without a target keeps it.
	res := put(change("data", nil, `{"blockedMarketplaces":["x"]}`, module("data", 2)))
	if res.Layer.Target.Empty() || res.Layer.Target.Groups[0] != "data-team" {
		t.Fatalf("a write without a target dropped it: %+v", res.Layer.Target)
	}
	hist, _, err := s.History("data", 0, 10)
	if err != nil || len(hist) != 2 || hist[0].Document.Target == nil || hist[0].Document.Target.Groups[0] != "data-team" {
		t.Fatalf("history of data: %+v (%v)", hist, err)
	}
	entries, _, err := audit.ReadLog(st, audit.Bucket, "audit", 0, 100, func(audit.Entry) bool { return true }, func(e audit.Entry) uint64 { return e.Seq })
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e.Object == "data" && e.Detail["target"] == "groups data-team" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no audit entry of data names its target: %+v", entries)
	}
	// An empty target makes it an organization layer.
	res = put(targeted("data", 1, &tokens.Target{}))
	if res.Layer.Target != nil {
		t.Fatalf("an empty target left %+v", res.Layer.Target)
	}
	if _, n := bundleLayers(t, s, other); !reflect.DeepEqual(n, []string{"data", "org"}) {
		t.Fatalf("after clearing the target, web's bundle has %v", n)
	}
}

// Random layer sets and tokens: the bundle a state serves from its
// caches holds the same layers, version and revision as a fresh state's
// (another replica with nothing cached), and as Applying says.
func testTargetsCachedEqualsUncached(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	var compiles, freshCompiles atomic.Int64
	a := newState(t, st, &compiles, policystate.Options[*engine]{})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(29, 3))
	groups := []string{"data-team", "web", "ops"}
	labels := []string{"os=linux", "os=darwin"}
	pick := func(from []string) []string {
		var out []string
		for _, x := range from {
			if rng.IntN(3) == 0 {
				out = append(out, x)
			}
		}
		return out
	}
	steps := 12
	if b.Name == "etcd" {
		steps = 6
	}
	for step := range steps {
		name := fmt.Sprintf("l%d", rng.IntN(4))
		var tg *tokens.Target
		if rng.IntN(3) > 0 {
			tg = &tokens.Target{Groups: pick(groups), Labels: pick(labels)}
			if err := tg.Validate("target"); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(5) == 0 {
			if _, err := a.Delete(ctx, name, anyVersion, admin); err != nil && !errors.As(err, new(*policystate.NotFoundError)) {
				t.Fatal(err)
			}
		} else if _, err := a.Put(ctx, targeted(name, rng.IntN(30), tg), anyVersion, admin); err != nil {
			t.Fatal(err)
		}
		fresh := newState(t, b.Again(t, st), &freshCompiles, policystate.Options[*engine]{})
		for range 4 {
			id := tokens.Identity{Groups: pick(groups), Labels: pick(labels)}
			v, names := bundleLayers(t, a, id)
			fv, fnames := bundleLayers(t, fresh, id)
			var layers []policystate.Layer
			var head policystate.Head
			if err := st.View(func(r store.Reader) (err error) {
				if head, err = policystate.ReadHead(r); err != nil {
					return err
				}
				layers, err = policystate.ReadLayers(r)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			want := []string{}
			for _, l := range policystate.Applying(layers, id) {
				want = append(want, l.Name)
			}
			wantV := policystate.AppliedVersion(head.Version, layers, policystate.Applying(layers, id))
			if v != fv || v != wantV || !reflect.DeepEqual(names, fnames) || !reflect.DeepEqual(names, want) {
				t.Fatalf("step %d, token %+v: cached %s %v, fresh %s %v, want %s %v", step, id, v, names, fv, fnames, wantV, want)
			}
		}
	}
}
