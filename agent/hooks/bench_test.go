package hooks

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkRun measures the runner with 0 and 5 matching hooks that read
// the event and exit 0: the in-process part of what
// bench/agent-integrations.sh measures through `wharf agent hook`.
func BenchmarkRun(b *testing.B) {
	ev := preToolUse(b, "Bash")
	for _, n := range []int{0, 5} {
		var hs []Hook
		for i := 0; i < n; i++ {
			hs = append(hs, Hook{ID: fmt.Sprint(i), Source: "plugin", Event: ev.Name, Matcher: "Bash", Command: "cat > /dev/null", Env: []string{fmt.Sprintf("N=%d", i)}})
		}
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			r := &Runner{}
			for i := 0; i < b.N; i++ {
				if res := r.Run(context.Background(), ev, hs); len(res.Errors) > 0 {
					b.Fatal(res.Errors)
				}
			}
		})
	}
}
