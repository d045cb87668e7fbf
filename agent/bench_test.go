package agent

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// benchPlugin has ten components: four commands, two skills, an agent, an
// output style, a hook event and an MCP server.
func benchPlugin(name string) map[string]string {
	f := map[string]string{
		".claude-plugin/plugin.json": `{"name": "` + name + `", "version": "1.0.0", "description": "bench plugin"}`,
		"agents/review.md":           "---\nname: review\ndescription: Review changes\n---\nReview.\n",
		"output-styles/brief.md":     "---\ndescription: Brief\n---\nBe brief.\n",
		"hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/bin/guard"}]}]}}`,
		".mcp.json":                  `{"mcpServers": {"api": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/api", "args": ["--data", "${CLAUDE_PLUGIN_DATA}"]}}}`,
	}
	for i := 0; i < 4; i++ {
		f[fmt.Sprintf("commands/cmd%d.md", i)] = fmt.Sprintf("---\ndescription: Command %d of %s\nallowed-tools: Bash(git:*)\n---\nDo thing %d in ${CLAUDE_PROJECT_DIR}.\n", i, name, i)
	}
	for i := 0; i < 2; i++ {
		f[fmt.Sprintf("skills/skill%d/SKILL.md", i)] = fmt.Sprintf("---\nname: skill%d\ndescription: Skill %d of %s\n---\nSkill body.\n", i, i, name)
	}
	return f
}

// benchWorld installs n bench plugins, all enabled, with a real policy
// engine whose memo was filled by an earlier process.
func benchWorld(b *testing.B, n int) (*world, config) {
	w := newWorld(b)
	enabled := map[string]bool{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("p%03d", i)
		w.install(name+"@bench", "1.0.0", benchPlugin(name))
		enabled[name+"@bench"] = true
	}
	w.writeSettings("user", map[string]any{"enabledPlugins": enabled})
	w.writeManaged(map[string]any{"enabledPlugins": map[string]bool{"blocked@bench": false}})
	o := w.options()
	o.Policy = w.policy()
	o.Leaser = nil
	warm, err := newRuntime(o)
	if err != nil {
		b.Fatal(err)
	}
	s, err := warm.Load(bg, Full)
	if err != nil {
		b.Fatal(err)
	}
	if got := len(s.Components()); got != n*10 {
		b.Fatalf("%d components, want %d", got, n*10)
	}
	for _, p := range s.Plugins() {
		if len(p.Errors) > 0 {
			b.Fatalf("%s: %v", p.ID, p.Errors)
		}
	}
	return w, o
}

// benchLoad measures a session start: a new Runtime and its first load.
// It reports the median, which the target (< 5 ms cache-only for 200
// plugins × 10 components) is stated in.
func benchLoad(b *testing.B, mode Mode) {
	w, o := benchWorld(b, 200)
	var durs, cpus []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A new process opens its policy engine (not part of the load)
		// and reads the memo file the earlier one saved.
		b.StopTimer()
		o.Policy = w.policy()
		b.StartTimer()
		cpu0, _ := processCPU()
		start := time.Now()
		r, err := newRuntime(o)
		if err != nil {
			b.Fatal(err)
		}
		s, err := r.Load(bg, mode)
		if err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		if cpu1, ok := processCPU(); ok {
			cpus = append(cpus, cpu1-cpu0)
		}
		if len(s.ComponentsOf(plugin.KindCommand)) != 800 {
			b.Fatal("wrong set")
		}
		r.Close()
	}
	b.StopTimer()
	b.ReportMetric(median(durs), "median-ms")
	if len(cpus) > 0 {
		b.ReportMetric(median(cpus), "median-cpu-ms")
	}
}

func BenchmarkLoadCacheOnly200(b *testing.B) { benchLoad(b, CacheOnly) }

// BenchmarkLoadFloor200 is what any trusted cache-only load must do at the
// least, on the same 200 plugins: read the installed registry and check
// every plugin's stat fingerprint. The agent's cost over it is its own.
func BenchmarkLoadFloor200(b *testing.B) {
	w, _ := benchWorld(b, 200)
	var durs, cpus []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu0, _ := processCPU()
		start := time.Now()
		recs, err := w.c.List()
		if err != nil {
			b.Fatal(err)
		}
		checks := make([]trust.FPCheck, len(recs))
		for j, r := range recs {
			checks[j] = trust.FPCheck{Root: r.InstallPath, FP: r.Fingerprint}
		}
		for _, err := range trust.CheckFingerprints(checks) {
			if err != nil {
				b.Fatal(err)
			}
		}
		durs = append(durs, time.Since(start))
		if cpu1, ok := processCPU(); ok {
			cpus = append(cpus, cpu1-cpu0)
		}
	}
	b.StopTimer()
	b.ReportMetric(median(durs), "median-ms")
	if len(cpus) > 0 {
		b.ReportMetric(median(cpus), "median-cpu-ms")
	}
}

func BenchmarkLoadFull200(b *testing.B) { benchLoad(b, Full) }

func median(ds []time.Duration) float64 {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return float64(ds[len(ds)/2].Microseconds()) / 1000
}
