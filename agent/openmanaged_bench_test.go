package agent

import (
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

// BenchmarkOpenManaged100 measures a session start through Open on a home
// with a managed directory and 100 installed plugins: the home's policy
// engine (the managed directory and the decision memo file, as wharf's
// commands open it), Open, and the first cache-only load. "cold" starts
// without a memo file, "warm" with the one the previous start saved. It
// reports the Rego evaluations of a start (evals) and the median times;
// bench/openmanaged.sh prints them.
func BenchmarkOpenManaged100(b *testing.B) {
	const n = 100
	w, o := benchWorld(b, n)
	systemManaged(b, w.managed)
	memo := w.memoFile()
	start := func(cold bool) (time.Duration, int64) {
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
		r, err := open(o)
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
	var cold, warm []time.Duration
	var coldEvals, warmEvals int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, e := start(true)
		cold, coldEvals = append(cold, d), e
		d, e = start(false)
		warm, warmEvals = append(warm, d), e
	}
	b.StopTimer()
	b.ReportMetric(float64(coldEvals), "cold-evals")
	b.ReportMetric(float64(warmEvals), "warm-evals")
	b.ReportMetric(median(cold), "cold-ms")
	b.ReportMetric(median(warm), "warm-ms")
}
