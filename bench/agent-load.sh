#!/bin/sh
# Startup load of the agent runtime: 200 installed plugins x 10 components
# (4 commands, 2 skills, an agent, an output style, a hook event, an MCP
# server), all enabled, under a real policy engine whose decisions an earlier
# session memoized. Target: cache-only load < 5 ms median.
#
# In the same run, on the same kind of tree:
#   BenchmarkLoadCacheOnly200  a new Runtime and its first cache-only load
#   BenchmarkLoadFull200       the same with the full loader (re-hash)
#   BenchmarkLoadFloor200      the floor of any trusted cache-only load:
#                              read the registry, stat-check every tree
#   find | cat                 what a loader that simply reads every plugin
#                              file costs (the shell, on a generated copy of
#                              the same layout), without any trust check
#
# Medians are reported in wall and process CPU time; on a shared machine wall
# time mostly measures waiting for a CPU, so compare CPU figures.
#
# Usage: [COUNT=n] bench/agent-load.sh [benchtime]   (default 20x)
set -eu
cd "$(dirname "$0")/.."
benchtime=${1:-20x}
out=$(mktemp)
tree=$(mktemp -d)
trap 'rm -rf "$out" "$tree"' EXIT

echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a), $(nproc 2>/dev/null || echo '?') CPUs"
go test -run '^$' -bench '^BenchmarkLoad(CacheOnly|Full|Floor)200$' -benchtime "$benchtime" -benchmem -count "${COUNT:-1}" ./agent | tee "$out"

# The same layout for the shell baseline.
i=0
while [ $i -lt 200 ]; do
	p=$tree/p$i
	mkdir -p "$p/.claude-plugin" "$p/commands" "$p/skills/skill0" "$p/skills/skill1" "$p/agents" "$p/output-styles" "$p/hooks"
	echo "{\"name\": \"p$i\", \"version\": \"1.0.0\"}" > "$p/.claude-plugin/plugin.json"
	for c in 0 1 2 3; do printf -- '---\ndescription: Command %s\n---\nDo it.\n' $c > "$p/commands/cmd$c.md"; done
	for s in 0 1; do printf -- '---\nname: skill%s\ndescription: Skill\n---\nBody.\n' $s > "$p/skills/skill$s/SKILL.md"; done
	printf -- '---\nname: review\n---\nReview.\n' > "$p/agents/review.md"
	printf -- '---\ndescription: Brief\n---\nBe brief.\n' > "$p/output-styles/brief.md"
	echo '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]}}' > "$p/hooks/hooks.json"
	echo '{"mcpServers": {"api": {"command": "api"}}}' > "$p/.mcp.json"
	i=$((i + 1))
done
runs=20
times=""
k=0
while [ $k -lt $runs ]; do
	t0=$(date +%s%N)
	find "$tree" -type f -exec cat {} + > /dev/null
	t1=$(date +%s%N)
	times="$times $(( (t1 - t0) / 1000 ))"
	k=$((k + 1))
done
shell_ms=$(echo $times | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]/1000}')

echo
awk -v shell="$shell_ms" '
/^BenchmarkLoad/ {
	name = $1; sub(/^BenchmarkLoad/, "", name); sub(/-[0-9]+$/, "", name)
	for (f = 2; f < NF; f++) {
		if ($(f + 1) == "median-ms") wall[name] = $f
		if ($(f + 1) == "median-cpu-ms") cpu[name] = $f
	}
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
}
END {
	printf "%-18s %15s %15s\n", "load (200 x 10)", "median wall ms", "median cpu ms"
	for (i = 1; i <= n; i++) printf "%-18s %15s %15s\n", order[i], wall[order[i]], cpu[order[i]]
	printf "%-18s %15s %15s\n", "find | cat (sh)", shell, "-"
	print ""
	printf "target: CacheOnly200 < 5 ms median\n"
}' "$out"
