#!/usr/bin/env bash
# Benchmark: install a 50-plugin dependency closure from a local marketplace,
# list 50 installed plugins and load their components as an agent session
# would (`wharf agent components`), with wharf and (when the `claude` CLI is
# on the PATH) with `claude plugin install` / `claude plugin list` on the
# same marketplace, in one run. Claude Code has no command that only lists
# the loaded components; `claude plugin list` is its nearest. WHARF_CLAUDE
# names the claude CLI to compare with (default: `claude` on the PATH).
#
#   bash bench/install.sh [runs]
#
# The installs of the two tools alternate, run by run, so that both see the
# same load; each is timed for wall and CPU (user+sys) time, and the best
# and the median of the runs are compared.
#
# Prints wall time per run (median of runs) and wharf's peak RSS, and the
# process start floor in the same run: an empty Go program, a program that
# links the third-party libraries wharf links and does nothing
# (bench/startfloor), and `wharf --help`.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/wharf" ./cmd/wharf
go build -o "$work/libs-floor" ./bench/startfloor
go build -o "$work/empty" ./bench/startfloor/empty

# A marketplace of 50 plugins: p49 depends on p48 and p47, ... so installing
# p49 brings the whole closure of 50.
mkt="$work/mkt"
mkdir -p "$mkt/.claude-plugin"
entries=""
for i in $(seq 0 49); do
	name=$(printf 'p%02d' "$i")
	d="$mkt/plugins/$name"
	mkdir -p "$d/.claude-plugin" "$d/commands" "$d/skills/s$i" "$d/agents"
	deps='[]'
	if [ "$i" -ge 2 ]; then deps=$(printf '["p%02d","p%02d"]' $((i-1)) $((i-2))); elif [ "$i" -eq 1 ]; then deps='["p00"]'; fi
	printf '{"name":"%s","version":"1.0.%d","description":"bench plugin %d","dependencies":%s}\n' "$name" "$i" "$i" "$deps" > "$d/.claude-plugin/plugin.json"
	for c in 1 2 3 4 5; do printf -- '---\ndescription: command %d\n---\nDo thing %d of %s.\n' "$c" "$c" "$name" > "$d/commands/c$c.md"; done
	printf -- '---\nname: s%d\ndescription: skill\n---\nA skill.\n' "$i" > "$d/skills/s$i/SKILL.md"
	printf -- '---\nname: a%d\ndescription: agent\n---\nAn agent.\n' "$i" > "$d/agents/a$i.md"
	sep=','; [ "$i" -eq 0 ] && sep=''
	entries="$entries$sep{\"name\":\"$name\",\"source\":\"./plugins/$name\"}"
done
printf '{"name":"bench","owner":{"name":"bench"},"plugins":[%s]}\n' "$entries" > "$mkt/.claude-plugin/marketplace.json"
(cd "$mkt" && git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b commit -qm init)

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
best() { sort -n | head -1; }
claude=${WHARF_CLAUDE:-$(command -v claude || true)}

# timed CMD...: runs CMD, prints "wall_ms cpu_ms" (CPU = user + sys of it
# and its children).
timed() {
	/usr/bin/time -o "$work/time.out" -f '%e %U %S' "$@" >/dev/null 2>&1 || echo "failed: $*" >&2
	awk '{printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000}' "$work/time.out"
}

echo "== install of the 50-plugin closure, wharf and claude alternating"
iw=() ic=() cw=() cc=()
for r in $(seq 1 "$runs"); do
	export WHARF_HOME="$work/home-$r" WHARF_MANAGED_DIR="$work/managed"
	"$work/wharf" marketplace add "file://$mkt" >/dev/null
	read -r w c < <(timed "$work/wharf" install p49@bench)
	iw+=("$w") ic+=("$c")
	if [ -n "$claude" ]; then
		mkdir -p "$work/claude-home-$r"
		if HOME="$work/claude-home-$r" "$claude" plugin marketplace add "$mkt" >/dev/null 2>&1; then
			read -r w c < <(HOME="$work/claude-home-$r" timed "$claude" plugin install p49@bench)
			cw+=("$w") cc+=("$c")
		else
			echo "claude plugin marketplace add failed; skipping claude arm"
			claude=""
		fi
	fi
done
echo "wharf install:  wall best $(printf '%s\n' "${iw[@]}" | best) ms, median $(printf '%s\n' "${iw[@]}" | median) ms [${iw[*]}]; CPU best $(printf '%s\n' "${ic[@]}" | best) ms, median $(printf '%s\n' "${ic[@]}" | median) ms [${ic[*]}]"
if [ ${#cw[@]} -gt 0 ]; then
	echo "claude install: wall best $(printf '%s\n' "${cw[@]}" | best) ms, median $(printf '%s\n' "${cw[@]}" | median) ms [${cw[*]}]; CPU best $(printf '%s\n' "${cc[@]}" | best) ms, median $(printf '%s\n' "${cc[@]}" | median) ms [${cc[*]}]  ($("$claude" --version 2>/dev/null | head -1))"
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }
	echo "install speedup (claude / wharf), target 5x: wall best $(ratio "$(printf '%s\n' "${cw[@]}" | best)" "$(printf '%s\n' "${iw[@]}" | best)"), median $(ratio "$(printf '%s\n' "${cw[@]}" | median)" "$(printf '%s\n' "${iw[@]}" | median)"); CPU best $(ratio "$(printf '%s\n' "${cc[@]}" | best)" "$(printf '%s\n' "${ic[@]}" | best)"), median $(ratio "$(printf '%s\n' "${cc[@]}" | median)" "$(printf '%s\n' "${ic[@]}" | median)")"
fi

echo "== wharf"
lst=() lst2=() comps=() help=()
for r in $(seq 1 "$runs"); do
	export WHARF_HOME="$work/home-$r" WHARF_MANAGED_DIR="$work/managed"
	t0=$(now); "$work/wharf" list >/dev/null; t1=$(now)
	lst+=($(( (t1 - t0) / 1000000 )))
	# Again: the policy decisions the first list made are in the memo now.
	t0=$(now); "$work/wharf" list >/dev/null; t1=$(now)
	lst2+=($(( (t1 - t0) / 1000000 )))
	# The agent's load pass over the same 50 plugins: policy, trust,
	# manifests, components, demotion, merge.
	t0=$(now); "$work/wharf" agent components >/dev/null; t1=$(now)
	comps+=($(( (t1 - t0) / 1000000 )))
	t0=$(now); "$work/wharf" --help >/dev/null; t1=$(now)
	help+=($(( (t1 - t0) / 1000000 )))
done
# The start floor: the same number of runs of each, interleaved.
empty=() libs=()
for r in $(seq 1 $((runs * 2))); do
	t0=$(now); "$work/empty"; t1=$(now)
	empty+=($(( (t1 - t0) / 1000000 )))
	t0=$(now); "$work/libs-floor"; t1=$(now)
	libs+=($(( (t1 - t0) / 1000000 )))
done
n=$("$work/wharf" list --json | grep -c '"id"')
wl=$(printf '%s\n' "${lst[@]}" | median)
wl2=$(printf '%s\n' "${lst2[@]}" | median)
wh=$(printf '%s\n' "${help[@]}" | median)
wc=$(printf '%s\n' "${comps[@]}" | median)
# Peak RSS varies by a few MB from run to run (GC timing): the median of runs.
rss() { for r in $(seq 1 "$runs"); do { /usr/bin/time -f '%M' "$work/wharf" "$@" >/dev/null; } 2>&1 | tail -1; done | median; }
rss_install=$(rss install p49@bench)
rss_list=$(rss list)
echo "installed plugins: $n"
echo "wharf list (50 installed):         median ${wl} ms  [${lst[*]}]"
echo "wharf list, again:                 median ${wl2} ms  [${lst2[*]}]"
echo "wharf agent components (50 active): median ${wc} ms  [${comps[*]}]"
echo "wharf --help (process start floor): median ${wh} ms  [${help[*]}]"
echo "start floor, libraries wharf links:  median $(printf '%s\n' "${libs[@]}" | median) ms  [${libs[*]}]"
echo "start floor, empty Go program:       median $(printf '%s\n' "${empty[@]}" | median) ms  [${empty[*]}]"
echo "wharf peak RSS (median): install ${rss_install} KiB, list ${rss_list} KiB"

if [ -n "$claude" ]; then
	echo "== claude plugin list"
	clst=()
	for r in $(seq 1 "$runs"); do
		t0=$(now); HOME="$work/claude-home-$r" "$claude" plugin list >/dev/null 2>&1 || true; t1=$(now)
		clst+=($(( (t1 - t0) / 1000000 )))
	done
	cl=$(printf '%s\n' "${clst[@]}" | median)
	echo "claude plugin list:    median ${cl} ms  [${clst[*]}]"
	awk -v a="$cl" -v b="$wl" 'BEGIN { if (b > 0) printf "list speedup (claude / wharf): %.1fx\n", a / b }'
	awk -v a="$cl" -v b="$wc" 'BEGIN { if (b > 0) printf "agent components speedup (claude plugin list / wharf agent components): %.1fx\n", a / b }'
else
	echo "== claude CLI not found (set WHARF_CLAUDE, or npm install -g @anthropic-ai/claude-code); skipping that arm"
fi
