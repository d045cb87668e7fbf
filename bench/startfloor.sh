#!/usr/bin/env bash
# Benchmark: the start cost of the wharf client. Times `wharf --version`
# side by side with an empty Go program (bench/startfloor/empty) and with a
# program that links exactly the third-party packages the client links and
# exits (bench/startfloor), interleaved, in one run; then lists the package
# initializations of `wharf --version` that cost the most
# (GODEBUG=inittrace=1).
#
#   bash bench/startfloor.sh [runs]        (default 40)
#
# Target: wharf --version within 3x the empty program. Wall times on a busy
# machine are noisy: compare the figures of one run, not of different runs,
# and prefer CPU time (bench/startfloor/measure reads it from the kernel's
# accounting of each child), which depends less on what else runs.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-40}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/wharf" ./cmd/wharf
go build -o "$work/libs-floor" ./bench/startfloor
go build -o "$work/empty" ./bench/startfloor/empty
go build -o "$work/measure" ./bench/startfloor/measure
export WHARF_HOME="$work/home"

size() { stat -c %s "$1" 2>/dev/null || stat -f %z "$1"; }
echo "# binaries: empty $(size "$work/empty") B, startfloor $(size "$work/libs-floor") B, wharf $(size "$work/wharf") B"
echo "# load average before the run: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
"$work/measure" -runs "$runs" \
	"empty Go program=$work/empty" \
	"startfloor (the client's libraries)=$work/libs-floor" \
	"wharf --version=$work/wharf --version"
echo "# target: wharf --version within 3x the empty program"

# Package initialization of one `wharf --version`, the costliest first by
# allocations (deterministic) with the clock of that run.
echo "# inittrace of wharf --version: total, then the top 10 by allocations"
GODEBUG=inittrace=1 "$work/wharf" --version 2>&1 >/dev/null | awk '
	/^init / {
		n++; clock += $5; bytes += $8; allocs += $10
		line[n] = sprintf("%8d allocs %9d B %7.2f ms  %s", $10, $8, $5, $2)
		key[n] = $10
	}
	END {
		printf "%d package inits, %.2f ms clock, %d KB, %d allocs\n", n, clock, bytes / 1024, allocs
		for (k = 1; k <= 10 && k <= n; k++) {
			best = 0
			for (i = 1; i <= n; i++) if (!(i in done) && (best == 0 || key[i] > key[best])) best = i
			done[best] = 1
			print line[best]
		}
	}'
