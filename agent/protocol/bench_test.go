package protocol

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/worldtest"
)

// BenchmarkListComponentsRoundTrip measures one list_components request
// answered over in-process pipes, the server side of what
// bench/agent-integrations.sh measures over a real process's stdio.
func BenchmarkListComponentsRoundTrip(b *testing.B) {
	w := worldtest.New(b)
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("p%02d", i)
		files := map[string]string{".claude-plugin/plugin.json": `{"name": "` + name + `", "version": "1.0.0"}`}
		for c := 0; c < 5; c++ {
			files[fmt.Sprintf("commands/c%d.md", c)] = "---\ndescription: command\n---\nDo it.\n"
		}
		w.Install(name+"@bench", "1.0.0", files)
	}
	rt := w.Runtime(w.Options())
	w.Load(rt, agent.CacheOnly)
	srv := &Server{Backend: &Runtime{Runtime: rt}, Log: io.Discard}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go srv.Serve(context.Background(), inR, outW)
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 16<<20)
	line := []byte(req("r", "list_components", "") + "\n")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		inW.Write(line)
		if !sc.Scan() {
			b.Fatal("no response")
		}
	}
	b.StopTimer()
	inW.Close()
}
