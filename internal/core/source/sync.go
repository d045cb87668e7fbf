package source

import (
	"bytes"
	"strconv"
	"strings"
)

// SyncMode is how Fetch makes a Request.Durable tree durable.
type SyncMode int

const (
	// SyncAuto, the default, syncs the tree's whole file system once
	// (SyncFileSystem) where that is both safe and cheap, and each file
	// otherwise (SyncEachFile). It is safe on Linux 5.8 or later, whose
	// syncfs reports the errors of writing back, on a local file system
	// (ext2/3/4, XFS, Btrfs, F2FS or tmpfs). It is cheap while the machine
	// holds little data not yet written (Dirty and Writeback of
	// /proc/meminfo below syncAllDirtyLimit, read before each tree): a
	// syncfs also writes back what other programs left dirty on that file
	// system, and waiting for a large copy beside an install would cost
	// more than the fsyncs it saves.
	SyncAuto SyncMode = iota
	// SyncEachFile fsyncs each file as soon as it is written, and each
	// directory once it is complete, the deepest first and Dest last.
	SyncEachFile
	// SyncFileSystem writes the tree without an fsync and, once it is
	// complete, syncs the file system that holds Dest with one syncfs.
	// Where the system has no syncfs (every system but Linux) it is
	// SyncEachFile.
	SyncFileSystem
)

// syncAllDirtyLimit is the most data (bytes) the machine may hold dirty or
// in writeback for SyncAuto to choose one syncfs over per-file fsyncs. It
// bounds what the first syncfs of an install may have to write for others
// (on an SSD, 128 MiB is a few tens of milliseconds); the later ones write
// only what was dirtied since, while the kernel itself lets up to a fifth
// of memory (vm.dirty_ratio) wait up to 30 seconds. A build writes tens of
// MiB, so this lets an install right after one use syncfs; a large copy
// under way does not.
const syncAllDirtyLimit = 128 << 20

// The statfs f_type of the file systems whose syncfs SyncAuto trusts.
const (
	magicExt4  = 0xEF53 // ext2, ext3 and ext4
	magicXFS   = 0x58465342
	magicBtrfs = 0x9123683E
	magicF2FS  = 0xF2F52010
	magicTmpfs = 0x01021994
)

// syncAllPays is SyncAuto's choice: whether one syncfs of the file system
// of type fsType (statfs f_type) may stand in for per-file fsyncs on the
// kernel of uname release, while /proc/meminfo reads meminfo. Anything it
// cannot read is a no.
func syncAllPays(fsType int64, release string, meminfo []byte) bool {
	switch fsType {
	case magicExt4, magicXFS, magicBtrfs, magicF2FS, magicTmpfs:
	default:
		return false
	}
	if !kernelAtLeast(release, 5, 8) {
		return false
	}
	dirty, ok := dirtyBytes(meminfo)
	return ok && dirty < syncAllDirtyLimit
}

// kernelAtLeast says whether a uname release such as "6.8.0-45-generic"
// is major.minor or later.
func kernelAtLeast(release string, major, minor int) bool {
	maj, rest, ok := strings.Cut(release, ".")
	if end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); end >= 0 {
		rest = rest[:end]
	}
	x, err1 := strconv.Atoi(maj)
	y, err2 := strconv.Atoi(rest)
	if !ok || err1 != nil || err2 != nil {
		return false
	}
	return x > major || x == major && y >= minor
}

// dirtyBytes is the sum of the Dirty and Writeback lines of /proc/meminfo
// ("Dirty:  1234 kB"), and whether both were there, once each, and read.
func dirtyBytes(meminfo []byte) (int64, bool) {
	var sum int64
	found := 0 // bit 0: Dirty, bit 1: Writeback
	for line := range bytes.Lines(meminfo) {
		key, val, ok := bytes.Cut(line, []byte(":"))
		bit := 0
		switch {
		case !ok:
			continue
		case bytes.Equal(key, []byte("Dirty")):
			bit = 1
		case bytes.Equal(key, []byte("Writeback")):
			bit = 2
		default:
			continue
		}
		if found&bit != 0 {
			return 0, false
		}
		num, unit, _ := bytes.Cut(bytes.TrimSpace(val), []byte(" "))
		if !bytes.Equal(bytes.TrimSpace(unit), []byte("kB")) {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || kb < 0 || kb > 1<<40 {
			return 0, false
		}
		sum += kb << 10
		found |= bit
	}
	return sum, found == 3
}
