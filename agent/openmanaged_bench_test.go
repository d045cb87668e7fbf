package agent

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// evaluations is the number of Rego evaluations p's engines ran: the
// guard's own engine over the managed directories and the embedder's.
func evaluations(p enginePolicy) int64 {
	var n int64
	switch g := p.(type) {
	case *managedGuard:
		n += g.managed.Evaluations() + evaluations(g.inner)
	case guardWithMemo:
		n += evaluations(g.managedGuard)
	case *policy.Engine:
		n += g.Evaluations()
	}
	return n
}

// guardOf is the managed guard of p, nil for none.
func guardOf(p enginePolicy) *managedGuard {
	switch g := p.(type) {
	case *managedGuard:
		return g
	case guardWithMemo:
		return g.managedGuard
	}
	return nil
}

// BenchmarkOpenManaged100 measures a session start through Open on a home
// with a managed directory and 100 installed plugins: the home's policy
// engine (the managed directory and the decision memo file, as wharf's
// commands open it), Open, and the first cache-only load. "cold" starts
// without a memo file, "warm" with the one the previous start saved.
// "once" is Open's guard as it is: the home's engine, which has the
// managed layers on top, decides alone; "twice" is the guard asking the
// managed layers apart as well (as it did before Engine.Extends). The four
// run in turn within each iteration, so their ratios hold on a busy
// machine. It reports the Rego evaluations of each start and the median
// times; bench/openmanaged.sh prints them.
func BenchmarkOpenManaged100(b *testing.B) {
	const n = 100
	w, o := benchWorld(b, n)
	systemManaged(b, w.managed)
	memo := w.memoFile()
	start := func(cold, twice bool) (time.Duration, int64) {
		if cold {
			if err := os.Remove(memo); err != nil && !os.IsNotExist(err) {
				b.Fatal(err)
			}
		}
		t0 := time.Now()
		e, err := policy.Open(policy.Sources{ManagedDir: w.managed}, policy.WithMemoFile(memo))
		if err != nil {
			b.Fatal(err)
		}
		o.Policy = e
		c, err := withManagedPolicy(o)
		if err != nil {
			b.Fatal(err)
		}
		g := guardOf(c.Policy)
		if g == nil {
			b.Fatal("no managed guard")
		}
		g.askBoth = twice
		r, err := newRuntime(c)
		if err != nil {
			b.Fatal(err)
		}
		s, err := r.Load(bg, CacheOnly)
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		if len(s.ComponentsOf(plugin.KindCommand)) != 4*n {
			b.Fatal("wrong set")
		}
		evals := evaluations(r.o.Policy)
		r.Close()
		return d, evals
	}
	type variant struct {
		cold, twice bool
		durs        []time.Duration
		evals       int64
	}
	vs := []*variant{{cold: true}, {cold: true, twice: true}, {}, {twice: true}}
	name := func(v *variant) string {
		s := map[bool]string{true: "cold", false: "warm"}[v.cold]
		return s + "-" + map[bool]string{true: "twice", false: "once"}[v.twice]
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, v := range vs {
			d, e := start(v.cold, v.twice)
			v.durs, v.evals = append(v.durs, d), e
		}
	}
	b.StopTimer()
	for _, v := range vs {
		b.ReportMetric(float64(v.evals), name(v)+"-evals")
		b.ReportMetric(median(v.durs), name(v)+"-ms")
	}
	for k := 0; k < len(vs); k += 2 {
		if m := median(vs[k].durs); m > 0 {
			b.ReportMetric(median(vs[k+1].durs)/m, fmt.Sprintf("%s/once", name(vs[k+1])))
		}
	}
}
