#!/bin/sh
# Time wharf's w1 content digest against what a user would run instead,
#   find . -type f | sort | xargs sha256sum | sha256sum
# on the same ~800-file, ~11 MB tree, in the same run, warm page cache.
#
# Then the cache-only fingerprint check of 200 installed plugins (target:
# under 2 ms in total), next to its floors on the machine at hand: a bare
# fstatat of every recorded path (serially and on every core) and a trivial
# system call per path (the cost of entering the kernel alone).
#
# usage: bench/digest.sh [runs]       (default 20 runs each)
# WHARF_BENCH_TREE=<dir> reuses a tree instead of generating one.
set -eu
runs=${1:-20}
cd "$(dirname "$0")/.."

tree=${WHARF_BENCH_TREE:-}
if [ -z "$tree" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	tree=$tmp/tree
	i=0
	while [ $i -lt 800 ]; do
		d=$tree/d$((i % 23))/s$((i % 7))
		mkdir -p "$d"
		if [ $((i % 40)) -eq 0 ]; then
			size=$(((i * 7919 + 524288) % 1048576))
		else
			size=$(((i * 131) % 4096))
		fi
		head -c $size /dev/urandom >"$d/f$i.md"
		i=$((i + 1))
	done
fi
files=$(find "$tree" -type f | wc -l)
bytes=$(du -sb "$tree" | cut -f1)
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)"
echo "tree: $tree ($files files, $bytes bytes on disk, $(nproc) cores)"

# warm the page cache for both
(cd "$tree" && find . -type f | sort | xargs sha256sum | sha256sum >/dev/null)

now() { date +%s%N; }

start=$(now)
n=0
while [ $n -lt "$runs" ]; do
	(cd "$tree" && find . -type f | sort | xargs sha256sum | sha256sum >/dev/null)
	n=$((n + 1))
done
shell_ns=$((($(now) - start) / runs))

go test -c -o "${TMPDIR:-/tmp}/trust.bench.$$" ./internal/core/trust
bench() {
	WHARF_BENCH_TREE=$tree "${TMPDIR:-/tmp}/trust.bench.$$" -test.run '^$' -test.bench '^BenchmarkDigest$' -test.benchtime "${runs}x" -test.cpu "$1" |
		awk '/^BenchmarkDigest/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") print $i }'
}
wharf_ns=$(bench "$(nproc)")
serial_ns=$(bench 1)
fp=$("${TMPDIR:-/tmp}/trust.bench.$$" -test.run '^$' -test.bench '^BenchmarkFingerprintCheck200$' -test.benchtime 200x -test.count 5)
rm -f "${TMPDIR:-/tmp}/trust.bench.$$"

awk -v w="$wharf_ns" -v s="$shell_ns" -v one="$serial_ns" 'BEGIN {
	printf "wharf digest (Go, one file at a time):      %8.2f ms/run\n", one / 1e6
	printf "wharf digest (Go, parallel hashing):        %8.2f ms/run\n", w / 1e6
	printf "find | sort | xargs sha256sum | sha256sum:  %8.2f ms/run\n", s / 1e6
	printf "ratio wharf / shell: %.2fx (target <= 1.2x)\n", w / s
}'

echo
echo "fingerprint check of 200 installed plugins (median of 5 runs; target < 2 ms):"
echo "$fp" | awk '/^BenchmarkFingerprintCheck200\// {
	name = $1; sub(/^BenchmarkFingerprintCheck200\//, "", name); sub(/-[0-9]+$/, "", name)
	for (i = 2; i < NF; i++) { if ($(i+1) == "ns/op") op = $i; if ($(i+1) == "ns/path") pp = $i }
	k = name SUBSEP (++n[name]); ops[k] = op; pps[k] = pp
	if (!(name in seen)) { seen[name] = 1; order[++m] = name }
}
function median(arr, name, c,   i, j, t, v) {
	for (i = 1; i <= c; i++) v[i] = arr[name SUBSEP i]
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return v[int((c + 1) / 2)]
}
END {
	for (i = 1; i <= m; i++) printf "  %-24s %8.2f ms  %7.0f ns/path\n", order[i], median(ops, order[i], n[order[i]]) / 1e6, median(pps, order[i], n[order[i]])
}'
