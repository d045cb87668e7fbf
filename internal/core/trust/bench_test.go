package trust

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDigest digests the tree named by WHARF_BENCH_TREE (bench/digest.sh
// makes one), or a generated tree of ~800 files and ~11 MB.
func BenchmarkDigest(b *testing.B) {
	root := os.Getenv("WHARF_BENCH_TREE")
	if root == "" {
		root = b.TempDir()
		genBenchTree(b, root, 800, 11<<20)
	}
	tree, err := Digest(root)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, e := range tree.Entries {
		size += e.Size
	}
	b.SetBytes(size)
	b.ReportMetric(float64(len(tree.Entries)), "files")
	b.ResetTimer()
	for b.Loop() {
		if _, err := Digest(root); err != nil {
			b.Fatal(err)
		}
	}
}

// genBenchTree writes n files totalling about total bytes, in nested dirs,
// sizes skewed like a real plugin (many small Markdown files, a few large).
func genBenchTree(b testing.TB, root string, n int, total int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	remaining := total
	for i := range n {
		size := int64(rng.IntN(4096))
		if i%40 == 0 {
			size = int64(rng.IntN(1 << 20))
		}
		if i == n-1 && remaining > 0 {
			size = min(remaining, 1<<20)
		}
		size = min(size, max(remaining, 0))
		remaining -= size
		writeFile(b, root, fmt.Sprintf("d%02d/s%d/f%04d.md", i%23, i%7, i), string(buf[:size]), 0o644)
	}
}

// BenchmarkFingerprintCheck200 checks the fingerprints of 200 installed
// plugins of ~10 files each: the cache-only startup path. One op is all 200.
func BenchmarkFingerprintCheck200(b *testing.B) {
	base := b.TempDir()
	roots := make([]string, 200)
	fps := make([]FP, 200)
	for i := range roots {
		roots[i] = makePlugin(b, filepath.Join(base, fmt.Sprintf("p%03d", i)), 10)
		fp, err := Fingerprint(roots[i])
		if err != nil {
			b.Fatal(err)
		}
		fps[i] = fp
	}
	paths := 0
	for _, fp := range fps {
		paths += len(fp.Entries)
	}
	perPath := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(paths), "ns/path")
	}
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range roots {
				if err := CheckFingerprint(roots[i], fps[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
		perPath(b)
	})
	b.Run("check-parallel", func(b *testing.B) {
		checks := make([]FPCheck, len(roots))
		for i := range roots {
			checks[i] = FPCheck{roots[i], fps[i]}
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, err := range CheckFingerprints(checks) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		perPath(b)
	})
	// The floor: os.Lstat of the same paths and nothing else, to tell the
	// cost of the check from the cost of the machine's stat calls.
	b.Run("lstat-floor", func(b *testing.B) {
		for b.Loop() {
			for i, r := range roots {
				for _, e := range fps[i].Entries {
					os.Lstat(r + "/" + e.Path)
				}
			}
		}
		perPath(b)
	})
	syscallFloors(b, roots, fps, perPath)
}
