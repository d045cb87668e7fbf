// Command measure starts programs in turn, interleaved, and prints for each
// the median and minimum wall time and the median CPU time (user + system,
// from the kernel's accounting of the child) of one start. CPU time depends
// far less than wall time on what else the machine runs, so on a busy
// machine it is the figure to compare. The first program is the baseline:
// each line gives its ratio to it.
//
// Usage: measure [-runs 40] 'label=program args...' ...
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

type prog struct {
	label string
	argv  []string
	wall  []time.Duration
	cpu   []time.Duration
}

func main() {
	runs := flag.Int("runs", 40, "starts of each program")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: measure [-runs N] 'label=program args...' ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *runs < 1 {
		flag.Usage()
		os.Exit(2)
	}
	var progs []*prog
	for _, a := range flag.Args() {
		label, cmd, ok := strings.Cut(a, "=")
		argv := strings.Fields(cmd)
		if !ok || label == "" || len(argv) == 0 {
			fmt.Fprintf(os.Stderr, "measure: %q: want label=program args...\n", a)
			os.Exit(2)
		}
		progs = append(progs, &prog{label: label, argv: argv})
	}
	for range *runs {
		for _, p := range progs {
			c := exec.Command(p.argv[0], p.argv[1:]...)
			c.Stdout, c.Stderr = io.Discard, io.Discard
			start := time.Now()
			if err := c.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "measure: %s: %v\n", p.label, err)
				os.Exit(1)
			}
			p.wall = append(p.wall, time.Since(start))
			p.cpu = append(p.cpu, c.ProcessState.UserTime()+c.ProcessState.SystemTime())
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[(len(s)-1)/2]
	}
	base := progs[0]
	fmt.Printf("# %d interleaved starts each; ms\n", *runs)
	fmt.Printf("%-36s %9s %9s %9s   %s\n", "program", "wall med", "wall min", "cpu med", "ratio to "+base.label+" (wall med, wall min, cpu med)")
	for _, p := range progs {
		fmt.Printf("%-36s %9.2f %9.2f %9.2f   %.1fx %.1fx %.1fx\n", p.label,
			ms(median(p.wall)), ms(slices.Min(p.wall)), ms(median(p.cpu)),
			float64(median(p.wall))/float64(median(base.wall)),
			float64(slices.Min(p.wall))/float64(slices.Min(base.wall)),
			float64(median(p.cpu))/float64(max(median(base.cpu), time.Microsecond)))
	}
}
