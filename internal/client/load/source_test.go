package load

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// countingPolicy counts the decisions its policy is asked for.
type countingPolicy struct {
	Policy
	asked atomic.Int64
}

func (c *countingPolicy) Decide(ctx context.Context, req policy.Request) (policy.Decision, error) {
	c.asked.Add(1)
	return c.Policy.Decide(ctx, req)
}

func blockEngine(t *testing.T, opts ...policy.Option) *policy.Engine {
	t.Helper()
	e, err := policy.NewEngine([]policy.Layer{{Name: "managed", Managed: true, Origin: "managed-settings.json",
		Settings: []byte(`{"blockedMarketplaces": [{"source": "github", "repo": "evil/tools"}]}`)}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// sourceWorld is two plugins of an allowed marketplace, installed (their
// versions in the cache, never fetched again), whose entries name sources.
type sourceWorld struct {
	in      Input
	entries map[string]*plugin.Entry
	mkt     *plugin.MarketplaceSource
}

func newSourceWorld(t *testing.T) *sourceWorld {
	recs := installed(t, map[string]string{
		"deploy@corp": `{"name": "deploy", "version": "1.0.0"}`,
		"lint@corp":   `{"name": "lint", "version": "1.0.0"}`,
	})
	w := &sourceWorld{
		entries: map[string]*plugin.Entry{
			"deploy@corp": {Manifest: plugin.Manifest{Name: "deploy"}, Source: plugin.Source{Kind: plugin.SourceGitHub, Repo: "evil/tools"}},
			"lint@corp":   {Manifest: plugin.Manifest{Name: "lint"}, Source: plugin.Source{Kind: plugin.SourceGitHub, Repo: "good/tools"}},
		},
		mkt: &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "corp/plugins"},
	}
	for _, r := range recs {
		w.in.Records = append(w.in.Records, r)
	}
	w.in.Enabled = map[plugin.ID]bool{plugin.MustParseID("deploy@corp"): true, plugin.MustParseID("lint@corp"): true}
	return w
}

func (w *sourceWorld) options(d *Decider) Options {
	return Options{Decider: d, Mode: Full,
		MarketplaceSource: func(string) *plugin.MarketplaceSource { return w.mkt },
		Entries:           func(id plugin.ID) *plugin.Entry { return w.entries[id.String()] }}
}

// A plugin of an allowed marketplace whose own source a managed
// blockedMarketplaces entry names is not active, although its version is
// in the cache and never fetched again: its row is failed by policy and
// names the source and the layer. The other plugin of the marketplace is
// active. A plugin whose marketplace no longer lists it is not decided
// on a source it no longer has.
func TestBlockedSourceFailsCachedPlugin(t *testing.T) {
	w := newSourceWorld(t)
	rows, err := List(bg, w.options(NewDecider(blockEngine(t))), w.in)
	if err != nil {
		t.Fatal(err)
	}
	m := rowsByID(rows)
	d := m["deploy@corp"]
	if d.Status != StatusFailed || len(d.ErrorDetails) != 1 || d.ErrorDetails[0].Type != plugin.TypePolicyDenied || d.ErrorDetails[0].Layer != string(plugin.LayerPolicy) {
		t.Fatalf("deploy@corp = %+v, want failed by policy", d)
	}
	for _, want := range []string{"plugin source github:evil/tools is blocked by blockedMarketplaces", "policy layer managed"} {
		if !strings.Contains(d.Errors[0], want) {
			t.Errorf("deploy@corp error %q does not say %q", d.Errors[0], want)
		}
	}
	if l := m["lint@corp"]; l.Status != StatusActive {
		t.Fatalf("lint@corp = %+v, want active", l)
	}
	// The same check is what install asks.
	if err := CheckSource(bg, NewDecider(blockEngine(t)), plugin.MustParseID("deploy@corp"), &w.entries["deploy@corp"].Source); plugin.LayerOf(err) != plugin.LayerPolicy {
		t.Fatalf("CheckSource = %v, want a policy denial", err)
	}
	if err := CheckSource(bg, NewDecider(blockEngine(t)), plugin.MustParseID("deploy@corp"), nil); err != nil {
		t.Fatalf("CheckSource without an entry = %v", err)
	}
}

// The source decision is memoized like every load decision, and the
// memoized answer is the evaluated one: the engine's memo answers every
// decision of a second pass over the same engine, which returns the same
// rows as a pass over a fresh engine and as one of a new engine that reads
// the memo file the first saved. The memo key carries the source: the same plugins with
// their sources swapped are decided again, and the other way round.
func TestSourceDecisionCachedEqualsUncached(t *testing.T) {
	w := newSourceWorld(t)
	eng := blockEngine(t)
	cp := &countingPolicy{Policy: eng}
	d := NewDecider(cp)
	d.Begin()
	first, err := List(bg, w.options(d), w.in)
	if err != nil {
		t.Fatal(err)
	}
	cold := cp.asked.Load()
	if cold == 0 {
		t.Fatal("the policy was never asked")
	}
	hits := eng.MemoHits()
	second, err := List(bg, w.options(d), w.in)
	if err != nil {
		t.Fatal(err)
	}
	if n, h := cp.asked.Load()-cold, eng.MemoHits()-hits; h != n || n != cold {
		t.Fatalf("the memo answered %d of the %d decisions of a second pass (first pass: %d)", h, n, cold)
	}
	fresh, err := List(bg, w.options(NewDecider(blockEngine(t))), w.in)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) || !reflect.DeepEqual(first, fresh) {
		t.Fatalf("memoized rows differ from evaluated ones:\nfirst  %+v\nsecond %+v\nfresh  %+v", first, second, fresh)
	}
	if rowsByID(first)["deploy@corp"].Status != StatusFailed {
		t.Fatalf("deploy@corp not failed: %+v", first)
	}

	// Between processes: the engine's memo file.
	memo := filepath.Join(t.TempDir(), "policy.memo")
	e1 := blockEngine(t, policy.WithMemoFile(memo))
	d1 := NewDecider(e1)
	d1.Begin()
	saved, err := List(bg, w.options(d1), w.in)
	if err != nil {
		t.Fatal(err)
	}
	if err := d1.Save(); err != nil {
		t.Fatal(err)
	}
	e2 := blockEngine(t, policy.WithMemoFile(memo))
	d2 := NewDecider(e2)
	d2.Begin()
	read, err := List(bg, w.options(d2), w.in)
	if err != nil {
		t.Fatal(err)
	}
	if e2.MemoHits() == 0 {
		t.Fatal("the second engine answered nothing from the memo file")
	}
	if !reflect.DeepEqual(saved, fresh) || !reflect.DeepEqual(read, fresh) {
		t.Fatalf("rows from the memo file differ from evaluated ones:\nsaved %+v\nread  %+v\nfresh %+v", saved, read, fresh)
	}

	// Swapped sources under the same Decider and memo file.
	w.entries["deploy@corp"].Source, w.entries["lint@corp"].Source = w.entries["lint@corp"].Source, w.entries["deploy@corp"].Source
	for name, dd := range map[string]*Decider{"in-memory memo": d, "memo file": d2} {
		rows, err := List(bg, w.options(dd), w.in)
		if err != nil {
			t.Fatal(err)
		}
		m := rowsByID(rows)
		if m["deploy@corp"].Status != StatusActive || m["lint@corp"].Status != StatusFailed {
			t.Fatalf("%s: after the sources swapped: deploy@corp %s, lint@corp %s; want active, failed (a decision reused for another source)",
				name, m["deploy@corp"].Status, m["lint@corp"].Status)
		}
	}
}

// The source a version was installed from is kept in its record and
// decided at every load, also when its marketplace no longer lists the
// plugin (or was removed): deleting the marketplace does not let a plugin
// from a blocked repository load again. The recorded source, where there
// is one, is what is decided, not the one the marketplace names now.
func TestRecordedSourceDecided(t *testing.T) {
	w := newSourceWorld(t)
	for i := range w.in.Records {
		r := &w.in.Records[i]
		src := w.entries[r.ID.String()].Source
		r.Source = &src
	}
	gone := w.options(NewDecider(blockEngine(t)))
	gone.Entries = func(plugin.ID) *plugin.Entry { return nil }
	rows, err := List(bg, gone, w.in)
	if err != nil {
		t.Fatal(err)
	}
	m := rowsByID(rows)
	if d := m["deploy@corp"]; d.Status != StatusFailed || !strings.Contains(strings.Join(d.Errors, "\n"), "plugin source github:evil/tools is blocked") {
		t.Fatalf("delisted deploy@corp = %+v, want failed: its recorded source is blocked", d)
	}
	if l := m["lint@corp"]; l.Status != StatusActive {
		t.Fatalf("delisted lint@corp = %+v, want active", l)
	}

	// The marketplace now names an allowed repository for deploy: the
	// version in the cache still came from the blocked one.
	w.entries["deploy@corp"].Source = plugin.Source{Kind: plugin.SourceGitHub, Repo: "good/deploy"}
	rows, err = List(bg, w.options(NewDecider(blockEngine(t))), w.in)
	if err != nil {
		t.Fatal(err)
	}
	if d := rowsByID(rows)["deploy@corp"]; d.Status != StatusFailed {
		t.Fatalf("deploy@corp installed from a blocked repository = %+v, want failed", d)
	}
}
