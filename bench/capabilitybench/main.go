// Command capabilitybench times computing the capability set (and content
// findings) of every plugin of a 295-plugin marketplace built from the
// real marketplaces in ../shared/realworld, against just reading every
// file of it, interleaved in one run. See bench/capability.sh.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"time"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/plugin"
)

func main() {
	realworld := flag.String("realworld", "../shared/realworld", "the real marketplaces")
	n := flag.Int("plugins", 295, "plugins in the marketplace built")
	runs := flag.Int("runs", 15, "timed runs of each")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the capability runs to this file")
	readprofile := flag.String("readprofile", "", "write a CPU profile of the floor's runs to this file")
	only := flag.String("only", "", "run only this once after building, untimed (read, same or caps; none runs nothing): for strace -c")
	buildDir := flag.String("build", "", "only build the marketplace into this (new or empty) directory and keep it, for other benches (bench/validate.sh)")
	flag.Parse()
	if *buildDir != "" {
		files, err := build(*realworld, *buildDir, *n)
		if err != nil {
			fail(err)
		}
		fmt.Printf("marketplace: %d plugins, %d files, built from %s into %s\n", *n, files, *realworld, *buildDir)
		return
	}
	tmp, err := os.MkdirTemp("", "capabilitybench")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	files, err := build(*realworld, tmp, *n)
	if err != nil {
		fail(err)
	}
	fmt.Printf("marketplace: %d plugins, %d files, built from %s\n", *n, files, *realworld)
	if *only != "" {
		var err error
		switch *only {
		case "read":
			_, err = readAll(tmp)
		case "same":
			_, err = readSame(tmp)
		case "caps":
			_, err = capabilities(tmp)
		case "none":
		default:
			err = fmt.Errorf("-only %s: want read, same, caps or none", *only)
		}
		if err != nil {
			fail(err)
		}
		return
	}
	// Warm the page cache and check both give an answer.
	if _, err := readAll(tmp); err != nil {
		fail(err)
	}
	if _, err := capabilities(tmp); err != nil {
		fail(err)
	}
	var read, same, caps, loads, readCPU, sameCPU, capsCPU []time.Duration
	var hooks int
	// timed runs f after a collection (each phase starts from the same
	// heap) and appends its wall and CPU time.
	timed := func(wall, cpus *[]time.Duration, f func() error) {
		runtime.GC()
		t0, c0 := time.Now(), cpu()
		if err := f(); err != nil {
			fail(err)
		}
		*wall, *cpus = append(*wall, time.Since(t0)), append(*cpus, cpu()-c0)
	}
	for i := 0; i < *runs; i++ {
		timed(&read, &readCPU, func() error { _, err := readAll(tmp); return err })
		timed(&same, &sameCPU, func() error { _, err := readSame(tmp); return err })
		timed(&caps, &capsCPU, func() error {
			h, err := capabilities(tmp)
			hooks = h
			return err
		})
		t0 := time.Now()
		if err := loadOnly(tmp); err != nil {
			fail(err)
		}
		loads = append(loads, time.Since(t0))
	}
	mr, mc := median(read), median(caps)
	fmt.Printf("read every file:            median %v (min %v)\n", mr, minOf(read))
	fmt.Printf("read, same calls as the pass: median %v (min %v)\n", median(same), minOf(same))
	fmt.Printf("plugin.Load of every plugin: median %v (min %v)  (%.2fx reading)\n", median(loads), minOf(loads), float64(median(loads))/float64(mr))
	fmt.Printf("capability set + findings:  median %v (min %v)  (%d hooks seen)\n", mc, minOf(caps), hooks)
	fmt.Printf("ratio (median): %.2fx   ratio (min): %.2fx   target <= 1.2x\n", float64(mc)/float64(mr), float64(minOf(caps))/float64(minOf(read)))
	fmt.Printf("CPU (user+sys, median): read %v, read same calls %v, capability set %v: %.2fx, %.2fx against the same calls\n",
		median(readCPU), median(sameCPU), median(capsCPU), float64(median(capsCPU))/float64(median(readCPU)), float64(median(capsCPU))/float64(median(sameCPU)))
	fmt.Printf("CPU ratio of each run's pair (median, min..max): %s against read, %s against the same calls\n", pairs(capsCPU, readCPU), pairs(capsCPU, sameCPU))
	profile(*cpuprofile, *runs, func() error { _, err := capabilities(tmp); return err })
	profile(*readprofile, *runs, func() error { _, err := readAll(tmp); return err })
}

// profile writes a CPU profile of runs calls of f to file, after the
// timed runs; nothing when file is "".
func profile(file string, runs int, f func() error) {
	if file == "" {
		return
	}
	out, err := os.Create(file)
	if err != nil {
		fail(err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		fail(err)
	}
	for i := 0; i < runs; i++ {
		if err := f(); err != nil {
			fail(err)
		}
	}
	pprof.StopCPUProfile()
	if err := out.Close(); err != nil {
		fail(err)
	}
}

// build writes a marketplace of n plugins under dst, cycling through
// every relative plugin of the real marketplaces (each copied with its
// entry), and returns its file count.
func build(realworld, dst string, n int) (int, error) {
	type src struct {
		dir   string
		entry json.RawMessage
	}
	var srcs []src
	dirs, err := os.ReadDir(realworld)
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		root := filepath.Join(realworld, d.Name())
		m, _, err := plugin.ReadMarketplace(root)
		if err != nil {
			return 0, err
		}
		raw, err := os.ReadFile(filepath.Join(root, ".claude-plugin", "marketplace.json"))
		if err != nil {
			return 0, err
		}
		var doc struct {
			Plugins []json.RawMessage `json:"plugins"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return 0, err
		}
		for i := range m.Plugins {
			e := &m.Plugins[i]
			if e.Source.Kind != plugin.SourceRelative {
				continue
			}
			dir, err := e.LocalDir(root)
			if err != nil {
				return 0, err
			}
			srcs = append(srcs, src{dir, doc.Plugins[i]})
		}
	}
	if len(srcs) == 0 {
		return 0, fmt.Errorf("no relative plugins under %s", realworld)
	}
	var entries []map[string]any
	for i := 0; i < n; i++ {
		s := srcs[i%len(srcs)]
		name := fmt.Sprintf("p%03d", i)
		if err := copyTree(s.dir, filepath.Join(dst, "plugins", name)); err != nil {
			return 0, err
		}
		var e map[string]any
		if err := json.Unmarshal(s.entry, &e); err != nil {
			return 0, err
		}
		e["name"], e["source"] = name, "./plugins/"+name
		entries = append(entries, e)
	}
	mk, _ := json.MarshalIndent(map[string]any{"name": "bench", "owner": map[string]string{"name": "bench"}, "plugins": entries}, "", " ")
	if err := os.MkdirAll(filepath.Join(dst, ".claude-plugin"), 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dst, ".claude-plugin", "marketplace.json"), mk, 0o644); err != nil {
		return 0, err
	}
	return readAll(dst)
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		return os.WriteFile(filepath.Join(to, rel), data, fi.Mode().Perm())
	})
}

// readAll reads every file of the tree: the floor. It walks the tree with
// filepath.WalkDir (one getdents per directory, no stat of its own) and
// reads every regular file whole with os.ReadFile, one after the other on
// one goroutine, skipping nothing (.git included: the trees built here
// have none).
func readAll(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if _, err := os.ReadFile(p); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// readSame reads every file with the calls the capability pass makes for
// a text file: open, fstat, one read of the size fstat gave, close
// (os.ReadFile reads once more to see the end of the file), into one
// buffer used again for every file, as the pass reuses its buffers. It is
// the floor with the pass's reads and no allocation per file; it still
// opens through an *os.File (the pass makes the calls directly on Linux
// and the other unix systems, and lists directories directly on Linux).
func readSame(root string) (int, error) {
	n := 0
	var buf []byte
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if int64(cap(buf)) < fi.Size() {
			buf = make([]byte, fi.Size())
		}
		if _, err := io.ReadFull(f, buf[:fi.Size()]); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// pairs is the median, least and greatest of a[i]/b[i].
func pairs(a, b []time.Duration) string {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = float64(a[i]) / float64(b[i])
	}
	sort.Float64s(r)
	return fmt.Sprintf("%.2fx (%.2fx..%.2fx)", r[len(r)/2], r[0], r[len(r)-1])
}

// capabilities reads the marketplace and computes every plugin's report.
func capabilities(root string) (int, error) {
	m, _, err := plugin.ReadMarketplace(root)
	if err != nil {
		return 0, err
	}
	// The root is resolved through its symlinks once for the pass, not
	// once per plugin.
	realRoot, err := plugin.RealRoot(root)
	if err != nil {
		return 0, err
	}
	hooks := 0
	for i := range m.Plugins {
		e := &m.Plugins[i]
		dir, err := e.LocalDirIn(root, realRoot)
		if err != nil {
			return 0, err
		}
		r, err := capability.Read(dir, e)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", e.Name, err)
		}
		hooks += len(r.Capabilities.Hooks)
	}
	return hooks, nil
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func minOf(d []time.Duration) time.Duration {
	m := d[0]
	for _, x := range d {
		m = min(m, x)
	}
	return m
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "capabilitybench:", err)
	os.Exit(1)
}

// loadOnly reads the marketplace and loads every plugin (what the
// capability set starts from), for comparison.
func loadOnly(root string) error {
	m, _, err := plugin.ReadMarketplace(root)
	if err != nil {
		return err
	}
	realRoot, err := plugin.RealRoot(root)
	if err != nil {
		return err
	}
	for i := range m.Plugins {
		e := &m.Plugins[i]
		dir, err := e.LocalDirIn(root, realRoot)
		if err != nil {
			return err
		}
		if _, _, err := plugin.Load(dir, e); err != nil {
			return err
		}
	}
	return nil
}
