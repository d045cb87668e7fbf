package capability

import (
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
