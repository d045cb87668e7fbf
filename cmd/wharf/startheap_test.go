package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"pgregory.net/rapid"
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
	var cells []string
	for _, r := range rows {
		cells = append(cells, r[:]...)
	}
	var cols bytes.Buffer
	if ok, err := writeColumns(&cols, cells, 4); !ok || err != nil || cols.String() != plain.String() {
		t.Fatalf("columns differ (ok %v, %v):\nplain %d bytes\ncolumns %d bytes", ok, err, plain.Len(), cols.Len())
	}
}

// TestColumnsEqualTabwriter: writeColumns writes what the table's
// tabwriter writes for the same rows, on any cells (wide runes, invalid
// UTF-8, empty cells and columns), and declines the cells tabwriter reads
// as layout.
func TestColumnsEqualTabwriter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ncols := rapid.IntRange(1, 5).Draw(t, "ncols")
		cell := rapid.OneOf(
			rapid.StringOf(rapid.RuneFrom([]rune("ab:@-_.é世🙂"))),
			rapid.SampledFrom([]string{"", "command", "p000@bench", "x\ty", "a\nb", "\v", "\f", "\xff", "\xfe\x80", "\r"}),
			rapid.String(),
		)
		cells := rapid.SliceOfN(cell, 0, 40).Draw(t, "cells")
		cells = cells[:len(cells)/ncols*ncols]
		var plain, fast bytes.Buffer
		tb := newTable(&plain)
		for i := 0; i < len(cells); i += ncols {
			tb.row(cells[i : i+ncols]...)
		}
		if err := tb.Flush(); err != nil {
			t.Fatal(err)
		}
		ok, err := writeColumns(&fast, cells, ncols)
		if err != nil {
			t.Fatal(err)
		}
		layout := false
		for _, c := range cells {
			layout = layout || strings.ContainsAny(c, "\t\n\v\f") || strings.IndexByte(c, tabwriter.Escape) >= 0
		}
		if ok == layout {
			t.Fatalf("ok %v for cells %q", ok, cells)
		}
		if ok && plain.String() != fast.String() {
			t.Fatalf("cells %q:\ntabwriter %q\ncolumns   %q", cells, plain.String(), fast.String())
		}
		if !ok && fast.Len() != 0 {
			t.Fatalf("declined, wrote %q", fast.String())
		}
	})
}
