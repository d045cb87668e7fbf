package policy

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/core/settings"
)

// BenchmarkReadMemo reads the memo file of a 200-plugin session start
// (1,400 decisions, all allowed, keys as memoKey makes them), which a warm
// start reads before it decides anything.
func BenchmarkReadMemo(b *testing.B) {
	file := filepath.Join(b.TempDir(), "memo")
	e, _ := NewEngine(memoLayers("evil/*"), WithMemoFile(file))
	for i := range 200 {
		p := fmt.Sprintf("p%03d@corp", i)
		e.Decide(ctx, installReq(p))
		for _, a := range []Action{ActionLoad, ActionLoadComponent} {
			for _, s := range []string{"commands", "skills", "agents", "hooks", "mcpServers", "outputStyles"} {
				req := installReq(p)
				req.Action, req.Surface, req.From = a, settings.Surface(s), FromPlugin
				e.Decide(ctx, req)
			}
		}
	}
	if err := e.SaveMemo(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if doc, ok := readMemo(file); !ok || len(doc.Decisions) < 1000 {
			b.Fatal(len(doc.Decisions), ok)
		}
	}
}
