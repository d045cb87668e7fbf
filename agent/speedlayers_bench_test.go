package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// BenchmarkSpeedLayers measures what the session-start speed layers save at
// real sizes: a large home (100 installed plugins) and every plugin of the
// largest real marketplace (295), ten components each. A start is what a
// new process does: open the policy engine from the managed dir, make a
// Runtime and run its first cache-only load. Each iteration runs one start
// of every variant, in turn, over the same home, so the machine's noise
// falls on all of them alike; the medians and the ratios to "layers" are
// reported (bench/speedlayers.sh prints them):
//
//	layers   the policy decision memo file and the component index, both warm
//	noindex  the memo file only: every manifest and component file is parsed
//	nomemo   the component index only: every decision is evaluated
//	none     neither
func BenchmarkSpeedLayers(b *testing.B) {
	variants := []struct {
		name        string
		index, memo bool
	}{{"layers", true, true}, {"noindex", false, true}, {"nomemo", true, false}, {"none", false, false}}
	for _, n := range []int{100, 295} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			w, o := benchWorld(b, n)
			var decisions int64
			start := func(index, memo bool) time.Duration {
				t0 := time.Now()
				var opts []policy.Option
				if memo {
					opts = append(opts, policy.WithMemoFile(layout.New(w.home).PolicyMemo()))
				}
				e, err := policy.Open(policy.Sources{ManagedDir: w.tw.Managed}, opts...)
				if err != nil {
					b.Fatal(err)
				}
				o.Policy = e
				r, err := newRuntime(o)
				if err != nil {
					b.Fatal(err)
				}
				if !index {
					r.index.file, r.index.legacy = "", ""
				}
				s, err := r.Load(bg, CacheOnly)
				if err != nil {
					b.Fatal(err)
				}
				d := time.Since(t0)
				if index && memo {
					decisions = e.MemoHits() // a warm memo answers every decision
				}
				if len(s.ComponentsOf(plugin.KindCommand)) != 4*n {
					b.Fatal("wrong set")
				}
				r.Close()
				return d
			}
			durs := make([][]time.Duration, len(variants))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k, v := range variants {
					durs[k] = append(durs[k], start(v.index, v.memo))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(decisions), "decisions")
			base := median(durs[0])
			for k, v := range variants {
				m := median(durs[k])
				b.ReportMetric(m, v.name+"-ms")
				if k > 0 && base > 0 {
					b.ReportMetric(m/base, v.name+"/layers")
				}
			}
		})
	}
}
