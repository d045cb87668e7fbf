package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/wharfhq/wharf/plugin"
)

// BenchmarkSpeedEvalCache measures what the evaluation helpers of
// evalcache.go save: one op evaluates one decision for every plugin of the
// largest real marketplace (295), under a managed policy with an admin
// rule, with wharf's per-evaluation cache, shared read transaction and no
// cancellation goroutine ("wharf"), and with OPA's defaults for the same
// prepared query and input ("opa"). Both give the same decisions; the
// ratio is reported as opa/wharf.
func BenchmarkSpeedEvalCache(b *testing.B) {
	ctx := context.Background()
	layers := []Layer{{Name: "managed",
		Settings: []byte(`{"strictKnownMarketplaces":["corp/*",{"source":"github","repo":"acme/tools"}],"blockedMarketplaces":["evil/*"],"enabledPlugins":{"audit@corp":true}}`),
		Modules:  map[string]string{"team.rego": "package wharf.admin.managed\n\ndeny contains \"deploy plugins need a change ticket\" if {\n\tinput.action == \"install\"\n\tstartswith(input.plugin, \"deploy@\")\n}\n"},
	}}
	e, err := NewEngine(layers)
	if err != nil {
		b.Fatal(err)
	}
	st := e.cur.Load()
	if err := st.prepare(e); err != nil {
		b.Fatal(err)
	}
	src := &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "corp/plugins"}
	var reqs []Request
	for i := range 295 {
		reqs = append(reqs, Request{Action: ActionLoad, Plugin: mustID(fmt.Sprintf("p%d@corp", i)), Marketplace: Marketplace{Name: "corp", Source: src}})
	}
	wharf := func() {
		for _, r := range reqs {
			if d, err := st.eval(ctx, r.evalInput(st.facts)); err != nil || !d.Allowed {
				b.Fatalf("%+v %v", d, err)
			}
		}
	}
	opa := func() {
		for _, r := range reqs {
			rs, err := st.pq.Eval(ctx, rego.EvalParsedInput(r.evalInput(st.facts)))
			if err != nil || len(rs) != 1 {
				b.Fatal(err)
			}
			if d, err := toDecision(rs[0].Expressions[0].Value); err != nil || !d.Allowed {
				b.Fatalf("%+v %v", d, err)
			}
		}
	}
	var tw, to int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0 := cpuTime()
		wharf()
		c1 := cpuTime()
		opa()
		c2 := cpuTime()
		tw, to = tw+int64(c1-c0), to+int64(c2-c1)
	}
	b.StopTimer()
	if tw > 0 {
		b.ReportMetric(float64(tw)/float64(b.N)/1e6, "wharf-cpu-ms")
		b.ReportMetric(float64(to)/float64(b.N)/1e6, "opa-cpu-ms")
		b.ReportMetric(float64(to)/float64(tw), "opa/wharf")
	}
}
