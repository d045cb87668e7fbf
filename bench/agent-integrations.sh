#!/usr/bin/env bash
# Benchmark: the agent integrations of wharf, against what an agent would
# do without them, in one run.
#
#   bash bench/agent-integrations.sh [runs]
#
# 1. list_components round trips per second over the stdio pipe of one
#    `wharf agent serve --stdio` session (strict round trips and 16 in
#    flight), against spawning `wharf agent components --json` per query.
# 2. latency of `wharf agent hook PreToolUse` with 0 and 5 matching hooks
#    (median of runs), against running the same 5 hook commands directly
#    with sh, as an agent running hooks itself would.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-21}
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

go build -o "$work/wharf" ./cmd/wharf
go build -o "$work/agentclient" ./bench/agentclient

export WHARF_HOME="$work/home" WHARF_MANAGED_DIR="$work/managed" HOME="$work/userhome"
proj="$work/proj"
mkdir -p "$proj/.wharf" && echo '{}' > "$proj/.wharf/settings.json"

# A marketplace of 20 plugins with 5 commands, a skill and an agent each;
# h0..h4 also carry a PreToolUse hook on Bash that reads the event.
mkt="$work/mkt"
mkdir -p "$mkt/.claude-plugin"
entries=""
for i in $(seq 0 19); do
	name=$(printf 'p%02d' "$i")
	d="$mkt/plugins/$name"
	mkdir -p "$d/.claude-plugin" "$d/commands" "$d/skills/s$i" "$d/agents"
	printf '{"name":"%s","version":"1.0.0"}\n' "$name" > "$d/.claude-plugin/plugin.json"
	for c in 1 2 3 4 5; do printf -- '---\ndescription: command %d\n---\nDo thing %d.\n' "$c" "$c" > "$d/commands/c$c.md"; done
	printf -- '---\nname: s%d\ndescription: skill\n---\nA skill.\n' "$i" > "$d/skills/s$i/SKILL.md"
	printf -- '---\nname: a%d\ndescription: agent\n---\nAn agent.\n' "$i" > "$d/agents/a$i.md"
	if [ "$i" -lt 5 ]; then
		mkdir -p "$d/hooks"
		echo '{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"cat > /dev/null"}]}]}}' > "$d/hooks/hooks.json"
	fi
	sep=','; [ "$i" -eq 0 ] && sep=''
	entries="$entries$sep{\"name\":\"$name\",\"source\":\"./plugins/$name\"}"
done
printf '{"name":"bench","owner":{"name":"bench"},"plugins":[%s]}\n' "$entries" > "$mkt/.claude-plugin/marketplace.json"
"$work/wharf" marketplace add "$mkt" >/dev/null
for i in $(seq 0 19); do "$work/wharf" install "$(printf 'p%02d' "$i")@bench" >/dev/null; done
ncomp=$("$work/wharf" agent components --json --project "$proj" | grep -c '"kind"')
echo "set: 20 plugins, $ncomp components, 5 PreToolUse hooks on Bash"
echo

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "== list_components over the pipe (one session)"
"$work/agentclient" -wharf "$work/wharf" -n 5000 -inflight 1 -- --project "$proj"
"$work/agentclient" -wharf "$work/wharf" -n 20000 -inflight 16 -- --project "$proj"
echo "== baseline: one process per query (wharf agent components --json)"
t0=$(now)
for i in $(seq 1 50); do "$work/wharf" agent components --json --project "$proj" >/dev/null; done
t1=$(now)
awk -v ns=$((t1 - t0)) 'BEGIN { printf "components: 50 processes: %.0f req/s, %.0f µs per request\n", 50 / (ns / 1e9), ns / 50 / 1000 }'
echo

event='{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}'
hook_latency() { # tool name → median ms over $runs
	local tool=$1
	for r in $(seq 1 "$runs"); do
		t0=$(now)
		echo "{\"tool_name\":\"$tool\"}" | "$work/wharf" agent hook PreToolUse --project "$proj" >/dev/null
		t1=$(now)
		echo $(((t1 - t0) / 1000))
	done | median
}
echo "== wharf agent hook PreToolUse (median of $runs, µs)"
echo "0 matching hooks (tool Read):  $(hook_latency Read)"
echo "5 matching hooks (tool Bash):  $(hook_latency Bash)"
echo "== baseline: the 5 hook commands run directly by sh, in sequence (median of $runs, µs)"
for r in $(seq 1 "$runs"); do
	t0=$(now)
	for h in 1 2 3 4 5; do echo "$event" | sh -c 'cat > /dev/null'; done
	t1=$(now)
	echo $(((t1 - t0) / 1000))
done | median
echo "== baseline: wharf process start alone (wharf agent --help, median of $runs, µs)"
for r in $(seq 1 "$runs"); do
	t0=$(now)
	"$work/wharf" agent --help >/dev/null
	t1=$(now)
	echo $(((t1 - t0) / 1000))
done | median
