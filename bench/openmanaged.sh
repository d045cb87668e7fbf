#!/bin/sh
# A session start through agent.Open on a home with a managed directory and
# 100 installed plugins (agent BenchmarkOpenManaged100): the home's policy
# engine with its decision memo file, Open, and the first cache-only load.
# "cold" starts without a memo file, "warm" with the one the previous start
# saved. "once" is Open as it is (the home's engine, which has the managed
# layers on top, decides alone); "twice" has Open's guard evaluate the
# managed layers apart as well, as it did before. evals is the number of
# Rego evaluations of one start; ms are medians; x-twice/once are the
# ratios, from starts run in turn within each iteration.
#
# Usage: bench/openmanaged.sh [iterations]   (default 10; each iteration is
# four starts)
set -eu
cd "$(dirname "$0")/.."
n=${1:-10}
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a), $(nproc 2>/dev/null || echo '?') CPUs"
go test -run '^$' -bench '^BenchmarkOpenManaged100$' -benchtime "${n}x" ./agent | grep '^Benchmark' |
	awk '{ for (f = 5; f < NF; f += 2) printf " %s=%s", $(f + 1), $f; print "" }'
