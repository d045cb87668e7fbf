package capability

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveRuns is every run of at least minRun base64 bytes, found by looking
// at every byte.
func naiveRuns(data []byte) [][2]int {
	var out [][2]int
	start := -1
	for i := 0; i <= len(data); i++ {
		if i < len(data) && base64Bytes[data[i]] {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= minRun {
			out = append(out, [2]int{start, i})
		}
		start = -1
	}
	return out
}

func skippedRuns(data []byte) [][2]int {
	var out [][2]int
	for start, end := 0, 0; ; start = end + 1 {
		if start, end = nextRun(data, start); start < 0 {
			return out
		}
		out = append(out, [2]int{start, end})
	}
}

// nextRun, which skips most bytes, finds exactly the runs a byte-by-byte
// scan finds, on texts of words and blobs of every length around minRun.
func TestNextRunFindsEveryRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 3000 {
		var data []byte
		for len(data) < n%400 {
			l := rng.IntN(2 * minRun)
			if rng.IntN(4) == 0 {
				l = minRun - 2 + rng.IntN(4)
			}
			for range l {
				data = append(data, "aZ09+/=_-"[rng.IntN(9)])
			}
			data = append(data, " \n.,\"\x00"[rng.IntN(6)])
		}
		if got, want := skippedRuns(data), naiveRuns(data); !slices.Equal(got, want) {
			t.Fatalf("%q: runs %v, want %v", data, got, want)
		}
	}
}

// scanUnicodeEveryByte is the Unicode scan that decodes at every lead
// byte found with bytes.IndexByte, one lead byte after the other: the
// reference for the scan that skips ASCII eight bytes at a time.
func (r *reader) scanUnicodeEveryByte(rel string, data []byte) {
	var lines lineIdx
	reported := map[[2]int]bool{}
	for _, lead := range []byte{0xC2, 0xE1, 0xE2, 0xEF, 0xF3} {
		for off := 0; off < len(data); {
			i := slices.Index(data[off:], lead)
			if i < 0 {
				break
			}
			off += i
			off += r.unicodeAt(rel, data, off, &lines, reported)
		}
	}
}

// The ASCII-skipping Unicode scan finds what the reference finds, on texts
// mixing ASCII, the characters looked for, emoji joined by U+200D, other
// UTF-8 and broken UTF-8, at every alignment.
func TestScanUnicodeFindsEveryCharacter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"plain words ", "\n", "\u200b", "\u202e", "\u2066", "\u00ad", "\ufeff", "\U000E0041", "\U000E0100",
		"\U0001F468\u200d\U0001F469", "caf\u00e9 ", "\u4e2d\u6587", "\xe2\x80", "\xf3", "\xc2", "-- ", "\u2014"}
	for n := 0; n < 3000; n++ {
		var b []byte
		for k := rng.IntN(40); k >= 0; k-- {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		fast, ref := newReader("x"), newReader("x")
		fast.scanUnicode("a.md", b)
		ref.scanUnicodeEveryByte("a.md", b)
		// The same kinds on the same lines (a line's first character is
		// the one named: which is first differs between the two orders).
		where := func(fs []Finding) []string {
			var out []string
			for _, f := range fs {
				out = append(out, fmt.Sprintf("%s:%d %s", f.File, f.Line, f.Kind))
			}
			slices.Sort(out)
			return out
		}
		if !slices.Equal(where(fast.findings), where(ref.findings)) {
			t.Fatalf("on %q the scan finds\n%v\nthe reference\n%v", b, fast.findings, ref.findings)
		}
	}
}
