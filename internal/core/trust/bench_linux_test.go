//go:build linux

package trust

import (
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// syscallFloors measures what the fingerprint check cannot go below on the
// machine at hand: one bare fstatat per recorded path, relative to an
// already open root, into one buffer, compared with nothing (serially and
// split over every core), and, for scale, one trivial system call per path
// (the cost of entering the kernel alone).
func syscallFloors(b *testing.B, roots []string, fps []FP, perPath func(*testing.B)) {
	fds := make([]int, len(roots))
	for i, r := range roots {
		fd, err := unix.Open(r, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		fds[i] = fd
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	statRange := func(lo, hi int) {
		var st unix.Stat_t
		for i := lo; i < hi; i++ {
			for _, e := range fps[i].Entries {
				if err := unix.Fstatat(fds[i], e.Path, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					panic(err)
				}
			}
		}
	}
	b.Run("fstatat-floor", func(b *testing.B) {
		for b.Loop() {
			statRange(0, len(roots))
		}
		perPath(b)
	})
	b.Run("fstatat-floor-parallel", func(b *testing.B) {
		n := runtime.GOMAXPROCS(0)
		for b.Loop() {
			var wg sync.WaitGroup
			for w := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statRange(w*len(roots)/n, (w+1)*len(roots)/n)
				}()
			}
			wg.Wait()
		}
		perPath(b)
	})
	b.Run("getppid-floor", func(b *testing.B) {
		for b.Loop() {
			for i := range roots {
				for range fps[i].Entries {
					unix.Getppid()
				}
			}
		}
		perPath(b)
	})
}
