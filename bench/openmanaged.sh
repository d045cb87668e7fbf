#!/bin/sh
# A session start through agent.Open on a home with a managed directory and
# 100 installed plugins (agent BenchmarkOpenManaged100): the home's policy
# engine with its decision memo file, Open, and the first cache-only load.
# "cold" starts without a memo file, "warm" with the one the previous start
# saved. evals is the number of Rego evaluations of one start (what the
# managed layers cost when they are evaluated apart from the home's policy);
# ms are medians, and the cold/warm ratio is printed.
#
# Usage: bench/openmanaged.sh [iterations]   (default 10; each iteration is
# one cold and one warm start)
set -eu
cd "$(dirname "$0")/.."
n=${1:-10}
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a), $(nproc 2>/dev/null || echo '?') CPUs"
go test -run '^$' -bench '^BenchmarkOpenManaged100$' -benchtime "${n}x" ./agent | grep '^Benchmark' |
	awk '{ for (f = 5; f < NF; f += 2) { v[$(f + 1)] = $f; printf " %s=%s", $(f + 1), $f }; if (v["warm-ms"] > 0) printf " cold/warm=%.2f", v["cold-ms"] / v["warm-ms"]; print "" }'
