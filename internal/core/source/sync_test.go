package source

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func meminfo(dirtyKB, writebackKB string) []byte {
	return []byte("MemTotal:       24554432 kB\nMemFree:        20112345 kB\nDirty:          " + dirtyKB +
		" kB\nWriteback:      " + writebackKB + " kB\nAnonPages:       1234567 kB\n")
}

// SyncAuto takes one syncfs only on a file system whose syncfs it trusts,
// on a kernel whose syncfs reports write-back errors, while little data
// is waiting to be written; anything it cannot read means per-file fsyncs.
func TestSyncAllPays(t *testing.T) {
	quiet := meminfo("1200", "0")
	for _, c := range []struct {
		name    string
		fsType  int64
		release string
		meminfo []byte
		want    bool
	}{
		{"ext4, quiet", magicExt4, "6.18.44-fc-v1272", quiet, true},
		{"xfs", magicXFS, "5.8.0", quiet, true},
		{"btrfs", magicBtrfs, "6.1.0-13-amd64", quiet, true},
		{"f2fs", magicF2FS, "6.1.0", quiet, true},
		{"tmpfs", magicTmpfs, "6.1.0", quiet, true},
		{"nfs", 0x6969, "6.1.0", quiet, false},
		{"overlayfs", 0x794C7630, "6.1.0", quiet, false},
		{"fuse", 0x65735546, "6.1.0", quiet, false},
		{"kernel 5.7: syncfs hides write-back errors", magicExt4, "5.7.19", quiet, false},
		{"kernel 4.19", magicExt4, "4.19.0-26-amd64", quiet, false},
		{"kernel 10.0", magicExt4, "10.0", quiet, true},
		{"unreadable release", magicExt4, "linux", quiet, false},
		{"release without a minor", magicExt4, "6", quiet, false},
		{"release with an empty minor", magicExt4, "6.-rc1", quiet, false},
		{"no release (uname failed)", magicExt4, "", quiet, false},
		{"5.10 is after 5.8", magicExt4, "5.10.0-28-cloud-amd64", quiet, true},
		{"dirty just below the limit", magicExt4, "6.1.0", meminfo(strconv.Itoa(syncAllDirtyLimit>>10-1), "0"), true},
		{"dirty at the limit", magicExt4, "6.1.0", meminfo(strconv.Itoa(syncAllDirtyLimit>>10), "0"), false},
		{"dirty and writeback over the limit", magicExt4, "6.1.0", meminfo(strconv.Itoa(syncAllDirtyLimit>>11), strconv.Itoa(syncAllDirtyLimit>>11)), false},
		{"a large copy under way", magicExt4, "6.1.0", meminfo("2400000", "180000"), false},
		{"no Dirty line", magicExt4, "6.1.0", []byte("MemTotal: 1 kB\nWriteback: 0 kB\n"), false},
		{"no Writeback line", magicExt4, "6.1.0", []byte("Dirty: 0 kB\n"), false},
		{"bytes, not kB", magicExt4, "6.1.0", []byte("Dirty: 0 B\nWriteback: 0 kB\n"), false},
		{"not a number", magicExt4, "6.1.0", meminfo("lots", "0"), false},
		{"negative", magicExt4, "6.1.0", meminfo("-4", "0"), false},
		{"empty meminfo", magicExt4, "6.1.0", nil, false},
		{"Dirty twice", magicExt4, "6.1.0", []byte("Dirty: 0 kB\nDirty: 0 kB\n"), false},
	} {
		if got := syncAllPays(c.fsType, c.release, c.meminfo); got != c.want {
			t.Errorf("%s: syncAllPays = %v, want %v", c.name, got, c.want)
		}
	}
}

// dirtyBytes never panics, and what it reads is what the plain reading of
// the two lines gives.
func FuzzDirtyBytes(f *testing.F) {
	f.Add(meminfo("1200", "8"))
	f.Add([]byte("Dirty: 9223372036854775807 kB\nWriteback: 9223372036854775807 kB\n"))
	f.Add([]byte("Dirty:\nWriteback: kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := dirtyBytes(b)
		var want int64
		seen := map[string]bool{}
		good := true
		for _, line := range strings.SplitAfter(string(b), "\n") {
			key, val, found := strings.Cut(line, ":")
			if !found || key != "Dirty" && key != "Writeback" {
				continue
			}
			if seen[key] {
				good = false
				break
			}
			seen[key] = true
			fields := strings.SplitN(strings.TrimSpace(val), " ", 2)
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			if len(fields) != 2 || strings.TrimSpace(fields[1]) != "kB" || err != nil || kb < 0 || kb > 1<<40 {
				good = false
				break
			}
			want += kb << 10
		}
		if good && len(seen) == 2 {
			if !ok || got != want {
				t.Fatalf("dirtyBytes = %d, %v; want %d", got, ok, want)
			}
		} else if ok {
			t.Fatalf("dirtyBytes = %d, true for %q", got, b)
		}
	})
}

// failingSync is a file system whose syncfs fails, as it does when the
// kernel could not write the tree back.
type failingSync struct{ treeFS }

func (failingSync) syncAll() error { return &fs.PathError{Op: "syncfs", Path: ".", Err: syscall.EIO} }

// A tree made durable by one syncfs is not finished when that syncfs
// fails: the error reaches the fetch, so the cache never renames the tree
// into place.
func TestSyncAllErrorFailsTheTree(t *testing.T) {
	dest := t.TempDir()
	tr, err := newTree(dest, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	tr.fs = failingSync{tr.fs}
	tr.syncAll = true
	if err := tr.file("commands/a.md", false, strings.NewReader("a")); err != nil {
		t.Fatal(err)
	}
	if err := tr.finish(); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "syncfs") {
		t.Fatalf("finish = %v, want the syncfs error", err)
	}
}
