// Command agentstart measures what each installed plugin adds to a whole
// session-start process. It runs every program on every home in turn,
// interleaved, runs times, and prints per program and home the best and
// median wall time and CPU time (user + system, from the kernel's
// accounting of the child); then, per program, the cost per installed
// plugin over the empty home, (t(N) - t(0)) / N, from the best runs (the
// least disturbed by the rest of a busy machine) and from the medians, and
// each program's per-plugin cost as a ratio to the first program's.
//
// In a program's arguments {home} stands for the home's directory.
//
// Usage:
//
//	agentstart [-runs 15] -home 'name,N,dir' ... 'label=program args...' ...
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

type home struct {
	name    string
	plugins int
	dir     string
}

type prog struct {
	label string
	argv  []string
	// wall and cpu are per home, in the order of the homes.
	wall, cpu [][]time.Duration
}

type homesFlag []home

func (h *homesFlag) String() string { return fmt.Sprint(*h) }

func (h *homesFlag) Set(v string) error {
	parts := strings.SplitN(v, ",", 3)
	if len(parts) != 3 {
		return fmt.Errorf("%q: want name,N,dir", v)
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 0 {
		return fmt.Errorf("%q: N must be a count of installed plugins", v)
	}
	*h = append(*h, home{name: parts[0], plugins: n, dir: parts[2]})
	return nil
}

func main() {
	runs := flag.Int("runs", 15, "starts of each program on each home")
	var homes homesFlag
	flag.Var(&homes, "home", "name,N,dir: a home with N installed plugins (repeatable; one must have N=0)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: agentstart [-runs N] -home name,N,dir ... 'label=program args...' ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	base := slices.IndexFunc(homes, func(h home) bool { return h.plugins == 0 })
	if flag.NArg() == 0 || *runs < 1 || base < 0 {
		flag.Usage()
		os.Exit(2)
	}
	var progs []*prog
	for _, a := range flag.Args() {
		label, cmd, ok := strings.Cut(a, "=")
		argv := strings.Fields(cmd)
		if !ok || label == "" || len(argv) == 0 {
			fmt.Fprintf(os.Stderr, "agentstart: %q: want label=program args...\n", a)
			os.Exit(2)
		}
		progs = append(progs, &prog{label: label, argv: argv, wall: make([][]time.Duration, len(homes)), cpu: make([][]time.Duration, len(homes))})
	}
	// One start of each first, not measured: it fills what a session
	// start keeps between processes (the policy decision memo, the
	// component index), as the previous session would have.
	for _, p := range progs {
		for _, h := range homes {
			if _, _, err := start(p, h); err != nil {
				fmt.Fprintf(os.Stderr, "agentstart: %s on %s: %v\n", p.label, h.name, err)
				os.Exit(1)
			}
		}
	}
	for range *runs {
		for hi, h := range homes {
			for _, p := range progs {
				wall, cpu, err := start(p, h)
				if err != nil {
					fmt.Fprintf(os.Stderr, "agentstart: %s on %s: %v\n", p.label, h.name, err)
					os.Exit(1)
				}
				p.wall[hi] = append(p.wall[hi], wall)
				p.cpu[hi] = append(p.cpu[hi], cpu)
			}
		}
	}

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("# %d interleaved starts of each program on each home; ms\n", *runs)
	fmt.Printf("%-28s %-12s %5s %9s %9s %9s %9s\n", "program", "home", "N", "wall min", "wall med", "cpu min", "cpu med")
	for _, p := range progs {
		for hi, h := range homes {
			fmt.Printf("%-28s %-12s %5d %9.2f %9.2f %9.2f %9.2f\n", p.label, h.name, h.plugins,
				ms(slices.Min(p.wall[hi])), ms(median(p.wall[hi])), ms(slices.Min(p.cpu[hi])), ms(median(p.cpu[hi])))
		}
	}
	fmt.Printf("\n# per installed plugin over the empty home, (t(N) - t(0)) / N; µs\n")
	fmt.Printf("%-28s %-12s %5s %9s %9s %9s %9s   %s\n", "program", "home", "N", "wall best", "wall med", "cpu best", "cpu med",
		"ratio to "+progs[0].label+" (wall best, cpu best, cpu med)")
	per := func(p *prog, hi int, f func([]time.Duration) time.Duration, cpu bool) float64 {
		s := p.wall
		if cpu {
			s = p.cpu
		}
		return float64(f(s[hi])-f(s[base])) / 1e3 / float64(homes[hi].plugins)
	}
	for _, p := range progs {
		for hi, h := range homes {
			if h.plugins == 0 {
				continue
			}
			wb, wm := per(p, hi, slices.Min, false), per(p, hi, median, false)
			cb, cm := per(p, hi, slices.Min, true), per(p, hi, median, true)
			r := progs[0]
			fmt.Printf("%-28s %-12s %5d %9.1f %9.1f %9.1f %9.1f   %s %s %s\n", p.label, h.name, h.plugins, wb, wm, cb, cm,
				ratio(wb, per(r, hi, slices.Min, false)), ratio(cb, per(r, hi, slices.Min, true)), ratio(cm, per(r, hi, median, true)))
		}
	}
}

func start(p *prog, h home) (wall, cpu time.Duration, err error) {
	argv := make([]string, len(p.argv))
	for i, a := range p.argv {
		argv[i] = strings.ReplaceAll(a, "{home}", h.dir)
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout = io.Discard
	var stderr strings.Builder
	c.Stderr = &stderr
	t0 := time.Now()
	if err := c.Run(); err != nil {
		return 0, 0, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	wall = time.Since(t0)
	return wall, c.ProcessState.UserTime() + c.ProcessState.SystemTime(), nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}
