#!/bin/sh
# Startup load of the agent runtime: 200 installed plugins x 10 components
# (4 commands, 2 skills, an agent, an output style, a hook event, an MCP
# server), all enabled, under a real policy engine whose decisions an earlier
# session memoized. Target: cache-only load within 1.5x of its floor, and as
# a whole process at most 60 µs per installed plugin over an empty home.
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
# Then the same as whole processes (bench/agentstart): `wharf agent
# components`, what an agent runs at session start, on homes made by `wharf
# install` with 0, 30, 100 and 200 of those plugins installed and enabled,
# and on a realistic home of 30 plugins from ../shared/realworld (skipped
# with a message when it is absent); next to it, on the same homes, the
# floor as a process (bench/agentstart/floor: open the registry, check every
# tree's fingerprint). Reported per installed plugin over the empty home,
# (t(N) - t(0)) / N, best of the interleaved runs and median, CPU and wall.
#
# Usage: [COUNT=n] [RUNS=n] [SKIP_INPROCESS=1] bench/agent-load.sh [benchtime]
#        (default 20x; RUNS, the whole-process starts per home, default 15)
set -eu
cd "$(dirname "$0")/.."
benchtime=${1:-20x}
runs=${RUNS:-15}
out=$(mktemp)
tree=$(mktemp -d)
trap 'rm -rf "$out" "$tree"' EXIT

# mkplugin DIR NAME [DEPS]: one bench plugin of ten components (the layout
# of the agent package's benchPlugin), depending on DEPS (a JSON list).
mkplugin() {
	p=$1
	mkdir -p "$p/.claude-plugin" "$p/commands" "$p/skills/skill0" "$p/skills/skill1" "$p/agents" "$p/output-styles" "$p/hooks"
	echo "{\"name\": \"$2\", \"version\": \"1.0.0\", \"dependencies\": ${3:-[]}}" > "$p/.claude-plugin/plugin.json"
	for c in 0 1 2 3; do printf -- '---\ndescription: Command %s of %s\nallowed-tools: Bash(git:*)\n---\nDo it in ${CLAUDE_PROJECT_DIR}.\n' $c "$2" > "$p/commands/cmd$c.md"; done
	for s in 0 1; do printf -- '---\nname: skill%s\ndescription: Skill %s of %s\n---\nBody.\n' $s $s "$2" > "$p/skills/skill$s/SKILL.md"; done
	printf -- '---\nname: review\ndescription: Review changes\n---\nReview.\n' > "$p/agents/review.md"
	printf -- '---\ndescription: Brief\n---\nBe brief.\n' > "$p/output-styles/brief.md"
	echo '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/bin/guard"}]}]}}' > "$p/hooks/hooks.json"
	echo '{"mcpServers": {"api": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/api", "args": ["--data", "${CLAUDE_PLUGIN_DATA}"]}}}' > "$p/.mcp.json"
}

echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a), $(nproc 2>/dev/null || echo '?') CPUs"
if [ -z "${SKIP_INPROCESS:-}" ]; then
	go test -run '^$' -bench '^BenchmarkLoad(CacheOnly|Full|Floor)200$' -benchtime "$benchtime" -benchmem -count "${COUNT:-1}" ./agent | tee "$out"

	# The same layout for the shell baseline.
	i=0
	while [ $i -lt 200 ]; do
		mkplugin "$tree/p$i" "p$i"
		i=$((i + 1))
	done
	times=""
	k=0
	while [ $k -lt 20 ]; do
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
		if (cpu["Floor200"] > 0) printf "CacheOnly200 / Floor200: %.2fx wall, %.2fx cpu\n", wall["CacheOnly200"] / wall["Floor200"], cpu["CacheOnly200"] / cpu["Floor200"]
		print ""
		printf "target: CacheOnly200 within 1.5x of Floor200\n"
	}' "$out"
fi

# Whole processes. Each home is made by `wharf install`: a marketplace of N
# bench plugins where p000 depends on the others, so one install brings all
# N, every one enabled or needed (and so active).
echo
echo "## whole process: wharf agent components, per installed plugin"
work=$tree/procs
mkdir -p "$work/project" "$work/managed"
go build -o "$work/wharf" ./cmd/wharf
go build -o "$work/floor" ./bench/agentstart/floor
go build -o "$work/agentstart" ./bench/agentstart
export WHARF_MANAGED_DIR="$work/managed"
homes=""
for n in 0 30 100 200; do
	mkt=$work/mkt$n
	mkdir -p "$mkt/.claude-plugin"
	entries=""
	i=0
	while [ $i -lt $n ]; do
		name=$(printf 'p%03d' $i)
		deps='[]'
		if [ $i -eq 0 ]; then deps=$(seq 1 $((n - 1)) | awk 'BEGIN { printf "[" } { printf "%s\"p%03d\"", (NR > 1 ? "," : ""), $1 } END { printf "]" }'); fi
		mkplugin "$mkt/plugins/$name" "$name" "$deps"
		entries="$entries${entries:+,}{\"name\":\"$name\",\"source\":\"./plugins/$name\"}"
		i=$((i + 1))
	done
	printf '{"name":"bench","owner":{"name":"bench"},"plugins":[%s]}\n' "$entries" > "$mkt/.claude-plugin/marketplace.json"
	(cd "$mkt" && git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b commit -qm init)
	"$work/wharf" -q --home "$work/h$n" marketplace add "file://$mkt" > /dev/null
	if [ $n -gt 0 ]; then "$work/wharf" -q --home "$work/h$n" install p000@bench > /dev/null; fi
	homes="$homes -home bench$n,$n,$work/h$n"
done

realworld=../shared/realworld
if [ -f "$realworld/README.md" ]; then
	# A realistic home: the plugins of two real marketplaces, as published
	# (commands, agents, skills, hooks), until 30 are installed.
	got=0
	for m in anthropics-claude-code wshobson-agents; do
		cp -R "$realworld/$m" "$work/rw-$m"
		(cd "$work/rw-$m" && git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b commit -qm init)
		# Under its own name: a copy may not use a name reserved for an
		# official marketplace.
		name=rw-$m
		"$work/wharf" -q --home "$work/real" marketplace add --name "$name" "file://$work/rw-$m" > /dev/null
		for p in $(sed -n 's/^ *"name": *"\([^"]*\)".*/\1/p' "$work/rw-$m/.claude-plugin/marketplace.json"); do
			[ $got -ge 30 ] && break
			if "$work/wharf" -q --home "$work/real" install "$p@$name" > /dev/null 2>&1; then got=$((got + 1)); fi
		done
	done
	installed=$("$work/wharf" --home "$work/real" list --json | grep -c '"id"' || true)
	echo "# realistic home: $installed plugins installed from $realworld"
	homes="$homes -home realworld,$installed,$work/real"
else
	echo "# $realworld not found (the real-world marketplaces live next to the repository); skipping the realistic home"
fi

# shellcheck disable=SC2086
"$work/agentstart" -runs "$runs" $homes \
	"floor (registry + fingerprints)=$work/floor -home {home}" \
	"wharf agent components=$work/wharf --home {home} agent components --project $work/project" | tee "$out"
# The per-plugin rows of wharf agent components (a label of three words,
# then home, N, wall best and median, cpu best and median, and the three
# ratios to the floor) give the measured figures next to the target.
measured=$(awk '$1 == "wharf" && $2 == "agent" && NF >= 12 && ($4 == "bench200" || $4 == "realworld") {
	printf "%s%s %.0f µs cpu best, %.0f median, %s best / %s median of the floor", (n++ ? "; " : ""), $4, $8, $9, $11, $12
}' "$out")
echo "target: wharf agent components at most 60 µs per installed plugin (cpu) and within 1.5x of the floor's per-plugin cost, at 200 bench plugins and on the realistic home; measured: ${measured:-none}"
