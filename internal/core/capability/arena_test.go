package capability

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestTextArena fills buffers of many sizes, small, at the chunk's edge
// and larger than a chunk's share, and checks that no buffer overlaps
// another: each still holds its own pattern after all are written.
func TestTextArena(t *testing.T) {
	var a textArena
	defer a.release()
	sizes := []int{0, 1, 7, 4096, bigText, bigText + 1, chunkSize - 3, 100, chunkSize, 3 * bigText, 5}
	for i := 0; i < 40; i++ {
		sizes = append(sizes, 1000*i+13)
	}
	bufs := make([][]byte, len(sizes))
	for i, n := range sizes {
		b := a.alloc(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("alloc(%d): len %d cap %d", n, len(b), cap(b))
		}
		for j := range b {
			b[j] = byte(i)
		}
		bufs[i] = b
	}
	for i, b := range bufs {
		if len(b) > 0 && !bytes.Equal(b, bytes.Repeat([]byte{byte(i)}, len(b))) {
			t.Fatalf("buffer %d (%d bytes) was overwritten by another", i, len(b))
		}
	}
}

// TestReportOutlivesArena reads every plugin of ../shared/realworld one
// after the other, so that each read writes over the chunks the reads
// before it used, and checks that every report is what it was when its
// read returned: no report points into file text that is used again.
func TestReportOutlivesArena(t *testing.T) {
	var when [][]byte // each report as its read returned
	plugins := readRealWorldEach(t, func(p realPlugin) {
		b, err := json.Marshal(p.report)
		if err != nil {
			t.Fatal(err)
		}
		when = append(when, b)
	})
	// Another round reuses the chunks once more.
	readRealWorld(t)
	for i, p := range plugins {
		b, _ := json.Marshal(p.report)
		if !bytes.Equal(b, when[i]) {
			t.Fatalf("%s: report changed once later plugins were read:\n%s\n%s", p.id, when[i], b)
		}
	}
	if len(plugins) < 100 {
		t.Fatalf("only %d plugins read", len(plugins))
	}
}
