package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"text/tabwriter"
	"time"
)

// TestStartHeapRestoresDefaultsAfterFirstCollection: the start setting
// holds only until the first collection; a long-running process (agent
// serve) is then collected with the runtime's defaults.
func TestStartHeapRestoresDefaultsAfterFirstCollection(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: startHeap leaves the runtime alone")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	startHeap(64 << 20)
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Fatalf("memory limit before the first collection: %d", got)
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GC percent before the first collection: %d, want off", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		if debug.SetMemoryLimit(-1) == math.MaxInt64 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the defaults were not restored after collections")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent after the first collection: %d, want 100", got)
	}
}

// TestStartHeapLeavesUserSettingsAlone: GOGC in the environment is the
// user's choice.
func TestStartHeapLeavesUserSettingsAlone(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	startHeap(64 << 20)
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("GC percent %d, want the user's 150", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit %d, want none", got)
	}
}

// TestTableEqualsFprintf: the buffered table with its row writer prints
// what tabwriter over the stream with Fprintf printed.
func TestTableEqualsFprintf(t *testing.T) {
	rows := [][4]string{{"KIND", "NAME", "SOURCE", "PLUGIN"}}
	for i := 0; i < 3000; i++ {
		rows = append(rows, [4]string{"command", fmt.Sprintf("p%03d:cmd%d", i/10, i%10), "plugin", fmt.Sprintf("p%03d@bench", i/10)})
	}
	rows = append(rows, [4]string{"mcp-server", "plugin:a:api", "plugin", ""}, [4]string{"command", "mine", "user", ""})
	var plain, fast bytes.Buffer
	tw := tabwriter.NewWriter(&plain, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r[0], r[1], r[2], r[3])
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	tb := newTable(&fast)
	for _, r := range rows {
		tb.row(r[0], r[1], r[2], r[3])
	}
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	if plain.String() != fast.String() {
		t.Fatalf("tables differ:\nplain %d bytes\nfast %d bytes", plain.Len(), fast.Len())
	}
}
