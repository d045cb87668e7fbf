package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/wharfhq/wharf/plugin"
)

// benchLayers builds three layers (org, dept, team), each with 1,000-entry
// strictKnownMarketplaces, blockedMarketplaces and enabledPlugins lists. The
// request's marketplace is allowed by every layer, so every rule runs to the
// end.
func benchLayers(tb testing.TB) []Layer {
	var layers []Layer
	for li, name := range []string{"org", "dept", "team"} {
		strict := []any{map[string]any{"source": "github", "repo": "corp/tools"}}
		blocked := []any{}
		enabled := map[string]bool{}
		for i := 0; i < 999; i++ {
			strict = append(strict, map[string]any{"source": "github", "repo": fmt.Sprintf("org%d/repo%d", li, i)})
		}
		for i := 0; i < 1000; i++ {
			blocked = append(blocked, map[string]any{"source": "github", "repo": fmt.Sprintf("bad%d/repo%d", li, i)})
			enabled[fmt.Sprintf("p%d@m%d", i, li)] = i%2 == 0
		}
		doc := map[string]any{
			"strictKnownMarketplaces": strict,
			"blockedMarketplaces":     append(blocked, map[string]any{"source": "hostPattern", "hostPattern": `^evil\.example$`}),
			"enabledPlugins":          enabled,
			"requireSignatures":       map[string]any{"other": []string{"k1"}},
		}
		b, err := json.Marshal(doc)
		if err != nil {
			tb.Fatal(err)
		}
		layers = append(layers, Layer{Name: name, Settings: b, Modules: map[string]string{
			name + ".rego": fmt.Sprintf("package wharf.admin.%s\n\ndeny contains msg if {\n\tinput.action == \"install\"\n\tinput.plugin == \"forbidden%d@corp\"\n\tmsg := \"no\"\n}\n", name, li),
		}})
	}
	return layers
}

func benchRequests() []Request {
	src := &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "corp/tools"}
	var reqs []Request
	for i := 0; i < 64; i++ {
		reqs = append(reqs, Request{Action: ActionInstall, Plugin: mustID(fmt.Sprintf("deploy%d@corp", i)),
			Marketplace: Marketplace{Name: "corp", Source: src}})
	}
	return reqs
}

func BenchmarkDecideInstall(b *testing.B) {
	ctx := context.Background()
	layers := benchLayers(b)
	reqs := benchRequests()
	b.Run("wharf", func(b *testing.B) {
		e, err := NewEngine(layers)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			d, err := e.Decide(ctx, reqs[i%len(reqs)])
			if err != nil || !d.Allowed {
				b.Fatalf("%+v %v", d, err)
			}
		}
		report(b, cpu0)
	})
	b.Run("wharf-cached", func(b *testing.B) {
		e, err := NewEngine(layers, WithCache(4096))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			d, err := e.Decide(ctx, reqs[i%len(reqs)])
			if err != nil || !d.Allowed {
				b.Fatalf("%+v %v", d, err)
			}
		}
		report(b, cpu0)
	})
	b.Run("raw-opa", func(b *testing.B) {
		// The same module, data and input through plain rego.New + a prepared
		// query, as a user of OPA would write it.
		e, err := NewEngine(layers)
		if err != nil {
			b.Fatal(err)
		}
		st := e.cur.Load()
		opts := []func(*rego.Rego){rego.Query(OutcomeQuery),
			rego.Store(inmem.NewFromObjectWithOpts(mustJSONMap(b, st.data), inmem.OptReturnASTValuesOnRead(true)))}
		opts = append(opts, rego.Module(BuiltinModuleFile, builtinModule))
		for _, l := range layers {
			for n, m := range l.Modules {
				opts = append(opts, rego.Module(l.Name+"/"+n, m))
			}
		}
		// The rules that turn the admin denies into reasons, which wharf
		// writes from the layers' names and modules.
		if glue, ok := st.modules[adminModuleFile]; ok {
			opts = append(opts, rego.Module(adminModuleFile, glue.String()))
		}
		pq, err := rego.New(opts...).PrepareForEval(ctx)
		if err != nil {
			b.Fatal(err)
		}
		// The input a user of OPA would pass: the request with the facts
		// wharf looks up in its Go index, as plain JSON-like Go values.
		inputs := make([]any, len(reqs))
		for i, r := range reqs {
			if inputs[i], err = ast.JSON(r.evalInput(st.facts)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			rs, err := pq.Eval(ctx, rego.EvalInput(inputs[i%len(inputs)]))
			if err != nil || len(rs) != 1 || denies(rs[0].Expressions[0].Value) {
				b.Fatalf("%v %v", rs, err)
			}
		}
		report(b, cpu0)
	})
}

// denies reports whether an outcome (as plain Go values) holds a reason.
func denies(outcome any) bool {
	entries, _ := outcome.([]any)
	for _, e := range entries {
		if p, ok := e.([]any); !ok || len(p) == 0 || p[0] == "deny" {
			return true
		}
	}
	return outcome == nil
}

func mustJSONMap(tb testing.TB, v ast.Value) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(v.String()), &m); err != nil {
		tb.Fatal(err)
	}
	return m
}

// report adds decisions per wall-clock second and per CPU second of this
// process. The CPU figure is what one core delivers even when the machine is
// shared with other work (wall time then includes waiting for a CPU).
func report(b *testing.B, cpu0 time.Duration) {
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	if cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "decisions/cpu-s")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkOpenDecide is what one short-lived process (a CLI command) pays
// for its first decision under a small managed policy with an admin rule:
// opening the policy alone, opening and deciding (which compiles the
// policy), and opening and deciding with the answer in a memo file written
// by an earlier process (which compiles nothing). Each iteration starts
// like a new process: the built-in module is not parsed yet.
func BenchmarkOpenDecide(b *testing.B) {
	ctx := context.Background()
	layers := []Layer{{Name: "managed",
		Settings: []byte(`{"strictKnownMarketplaces":["corp/*",{"source":"github","repo":"acme/tools"}],"blockedMarketplaces":["evil/*"],"enabledPlugins":{"audit@corp":true}}`),
		Modules:  map[string]string{"team.rego": "package wharf.admin.managed\n\ndeny contains \"deploy plugins need a change ticket\" if {\n\tinput.action == \"install\"\n\tstartswith(input.plugin, \"deploy@\")\n}\n"},
	}}
	req := Request{Action: ActionLoad, Plugin: mustID("fmt@corp"), Marketplace: Marketplace{Name: "corp", Source: &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "corp/plugins"}}}
	memo := b.TempDir() + "/memo"
	e, err := NewEngine(layers, WithMemoFile(memo))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Decide(ctx, req); err != nil {
		b.Fatal(err)
	}
	if err := e.SaveMemo(); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		decide bool
		opts   []Option
	}{
		{"open", false, nil},
		{"open+decide", true, nil},
		{"open+decide-memo", true, []Option{WithMemoFile(memo)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				builtinParsed = newBuiltinParser()
				e, err := NewEngine(layers, c.opts...)
				if err != nil {
					b.Fatal(err)
				}
				if c.decide {
					if d, err := e.Decide(ctx, req); err != nil || !d.Allowed {
						b.Fatalf("%+v %v", d, err)
					}
				}
			}
			if cpu := cpuTime() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
