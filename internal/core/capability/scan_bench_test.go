package capability

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
)

// realWorldTexts is every text file of ../shared/realworld by relative
// path, as walk would scan it.
func realWorldTexts(t testing.TB) (rels []string, data [][]byte) {
	t.Helper()
	root := sharedtest.RealWorldDir(t)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() || !textExt(rel) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rels, data = append(rels, rel), append(data, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rels, data
}

// BenchmarkScanText scans every text file of ../shared/realworld for
// findings, in memory.
func BenchmarkScanText(b *testing.B) {
	rels, data := realWorldTexts(b)
	n := 0
	for _, d := range data {
		n += len(d)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	c0 := cpuTime()
	for b.Loop() {
		r := newReader("/x")
		for i := range rels {
			r.scanText(rels[i], data[i])
		}
	}
	if c := cpuTime() - c0; c > 0 {
		b.ReportMetric(float64(c)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkReadRealWorld computes the report of every plugin of
// ../shared/realworld, reading the trees (warm page cache).
func BenchmarkReadRealWorld(b *testing.B) {
	readRealWorld(b)
	b.ReportAllocs()
	c0 := cpuTime()
	for b.Loop() {
		readRealWorld(b)
	}
	if c := cpuTime() - c0; c > 0 {
		b.ReportMetric(float64(c)/float64(b.N), "cpu-ns/op")
	}
}
