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
# machine are noisy: compare the medians and minimums of the same run, not
# figures of different runs.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-40}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/wharf" ./cmd/wharf
go build -o "$work/libs-floor" ./bench/startfloor
go build -o "$work/empty" ./bench/startfloor/empty
export WHARF_HOME="$work/home"

now() { date +%s%N; }
# stats prints "median min" of microsecond figures, in ms.
stats() { sort -n | awk '{a[NR]=$1} END {printf "%.2f %.2f\n", a[int((NR+1)/2)]/1000, a[1]/1000}'; }

empty=() libs=() wharf=()
for r in $(seq 1 "$runs"); do
	t0=$(now); "$work/empty"; t1=$(now)
	empty+=($(( (t1 - t0) / 1000 )))
	t0=$(now); "$work/libs-floor"; t1=$(now)
	libs+=($(( (t1 - t0) / 1000 )))
	t0=$(now); "$work/wharf" --version >/dev/null; t1=$(now)
	wharf+=($(( (t1 - t0) / 1000 )))
done
read -r em emin < <(printf '%s\n' "${empty[@]}" | stats)
read -r lm lmin < <(printf '%s\n' "${libs[@]}" | stats)
read -r wm wmin < <(printf '%s\n' "${wharf[@]}" | stats)
size() { stat -c %s "$1" 2>/dev/null || stat -f %z "$1"; }
echo "# $runs interleaved runs each; ms: median, min; binary size"
printf '%-38s %8s %8s %10s\n' program median min bytes
printf '%-38s %8s %8s %10s\n' "empty Go program" "$em" "$emin" "$(size "$work/empty")"
printf '%-38s %8s %8s %10s\n' "startfloor (the client's libraries)" "$lm" "$lmin" "$(size "$work/libs-floor")"
printf '%-38s %8s %8s %10s\n' "wharf --version" "$wm" "$wmin" "$(size "$work/wharf")"
awk -v w="$wm" -v e="$em" -v l="$lm" -v wn="$wmin" -v en="$emin" 'BEGIN {
	printf "wharf --version / empty: %.1fx (median), %.1fx (min); target <= 3x\n", w / e, wn / en
	printf "startfloor / empty: %.1fx (median)\n", l / e
}'

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
