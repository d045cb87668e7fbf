#!/bin/sh
# The client's speed layers, measured at real sizes: a large home (100
# installed plugins) and every plugin of the largest real marketplace (295),
# each layer against the same work without it, in the same run. The results
# table is in docs/performance.md.
#
#   agent      BenchmarkSpeedLayers: a session start (open the policy, new
#              Runtime, first cache-only load) with the policy decision memo
#              file and the component index both warm, and with each (and
#              both) switched off; the four run in turn within one iteration,
#              so the ratios to "layers" hold on a busy machine. "decisions"
#              is how many policy decisions one load asks.
#   policy     BenchmarkSpeedEvalCache: 295 evaluations with the evaluation
#              helpers of evalcache.go and with OPA's defaults (CPU time).
#   resolver   Closure and Demote over 295 plugins: the whole cost of a plan
#              and of a demotion, the most any further layer over them could
#              save (resolver.Index, for Closure and for Demote, was
#              removed: it saved ~0.2 ms per plan and ~0.07 ms per demotion).
#
# Usage: bench/speedlayers.sh [iterations]   (default 10; each agent
# iteration is 4 session starts per size)
set -eu
cd "$(dirname "$0")/.."
n=${1:-10}
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a), $(nproc 2>/dev/null || echo '?') CPUs"
echo "## agent session start (ms are medians; x/layers are ratios)"
go test -run '^$' -bench '^BenchmarkSpeedLayers$' -benchtime "${n}x" ./agent | grep '^Benchmark' |
	awk '{ size = substr($1, index($1, "/") + 1); sub(/-[0-9]+$/, "", size); printf "%s plugins:", size; for (f = 5; f < NF; f += 2) printf " %s=%s", $(f + 1), $f; print "" }'
echo "## policy evaluations (295, CPU ms)"
go test -run '^$' -bench '^BenchmarkSpeedEvalCache$' -benchtime "$((n * 2))x" ./internal/core/policy | grep '^Benchmark' |
	awk '{ for (f = 5; f < NF; f += 2) printf " %s=%s", $(f + 1), $f; print "" }'
echo "## resolver at 295 plugins"
go test -run '^$' -bench '^Benchmark(Closure|Demote)$/295' -benchtime 2000x -count 3 ./internal/core/resolver | grep '^Benchmark' |
	awk '{ split($1, p, "/"); name = p[1]; sub(/^Benchmark/, "", name); for (f = 4; f < NF; f++) if ($(f + 1) == "cpu-ns/op" && (!cpu[name] || $f < cpu[name])) cpu[name] = $f }
	END { for (k in cpu) printf "%s: %.3f ms CPU (fastest of 3)\n", k, cpu[k] / 1e6 }'
