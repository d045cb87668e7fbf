#!/bin/sh
# Decisions per second for install requests under three policy layers
# (org, dept, team), each with 1,000-entry strictKnownMarketplaces,
# blockedMarketplaces and enabledPlugins lists plus an admin Rego rule, on one
# core (GOMAXPROCS=1). In the same run, the same query through raw OPA
# (rego.New with the same modules and data, prepared, evaluated with
# rego.EvalInput on the same input as plain Go values: the request plus the
# input.facts wharf looks up in its Go index, computed outside the timed
# loop) — what a user of OPA would write instead — so the ratio shows
# wharf's overhead around OPA.
#
# Figures: decisions/s (wall clock) and decisions/cpu-s (CPU time of the
# process; on a shared machine wall time includes waiting for a CPU).
# wharf-cached uses the decision cache keyed on (policy version, request).
#
# Then what one short-lived process (a CLI command) pays for its first
# decision under a small managed policy with an admin rule: opening the
# policy, opening and deciding (compiles the policy), and opening and
# deciding with the answer in a memo file (WithMemoFile) from an earlier
# process (compiles nothing).
#
# usage: bench/policy.sh [count]     (default 3 runs of each)
# Targets: >= 30,000 uncached decisions/s on one core; wharf <= 1.5x raw OPA.
set -eu
count=${1:-3}
cd "$(dirname "$0")/.."
echo "cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)"
out=$(GOMAXPROCS=1 go test ./internal/core/policy -run '^$' -bench '^BenchmarkDecideInstall$' -benchtime 3s -count "$count" 2>&1) || {
	echo "$out"
	exit 1
}
echo "$out" | grep '^Benchmark'
echo "$out" | awk '
/^BenchmarkDecideInstall\// {
	split($1, p, "/"); name = p[2]; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "ns/op") { ns[name] += $i; n[name]++ }
		if ($(i+1) == "cpu-ns/op") { cpu[name] += $i }
		if ($(i+1) == "allocs/op") { al[name] += $i }
	}
}
END {
	for (k in ns) {
		printf "%-14s %10.0f decisions/s wall  %10.0f decisions/s cpu  %7.1f us cpu/decision  %5.0f allocs\n", k, 1e9 / (ns[k] / n[k]), (cpu[k] > 0 ? 1e9 / (cpu[k] / n[k]) : 0), cpu[k] / n[k] / 1e3, al[k] / n[k]
	}
	if (ns["wharf"] > 0 && ns["raw-opa"] > 0) {
		printf "wharf / raw OPA (uncached): %.2fx wall, %.2fx cpu (target <= 1.5x)\n", ns["wharf"] / ns["raw-opa"], (cpu["raw-opa"] > 0 ? cpu["wharf"] / cpu["raw-opa"] : 0)
	}
}'
out=$(GOMAXPROCS=1 go test ./internal/core/policy -run '^$' -bench '^BenchmarkOpenDecide$' -benchtime 1s -count "$count" 2>&1) || {
	echo "$out"
	exit 1
}
echo "$out" | awk '
/^BenchmarkOpenDecide\// {
	split($1, p, "/"); name = p[2]; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "ns/op") { ns[name] += $i; n[name]++ }
		if ($(i+1) == "cpu-ns/op") { cpu[name] += $i }
	}
}
END {
	split("open open+decide open+decide-memo", order, " ")
	for (j = 1; j <= 3; j++) {
		k = order[j]
		if (n[k] > 0) printf "first decision: %-17s %7.2f ms wall  %7.2f ms cpu\n", k, ns[k] / n[k] / 1e6, cpu[k] / n[k] / 1e6
	}
}'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)"
