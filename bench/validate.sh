#!/usr/bin/env bash
# Benchmark: `wharf validate` against `claude plugin validate` on the same
# tree, in the same run.
#
# Input: the 295-plugin marketplace bench/capability.sh reads (built by
# bench/capabilitybench, cycling through the plugins of the real
# marketplaces in ../shared/realworld, each with its entry: 3,550 files),
# and the largest plugin directory in it (what a plugin's own CI runs
# validate on). Skipped when ../shared/realworld is absent
# (WHARF_REALWORLD names another copy).
#
# Runs `wharf validate <dir>` (built once into a temporary directory) and
# `claude plugin validate <dir>` alternating run by run (which goes first
# alternates too), after one untimed run of each, N runs (default 7), each
# from the target's parent directory as TestClaudeConformanceValidate runs
# claude. Reports best and median wall time and CPU time (user+sys of the
# process and its children, /usr/bin/time), the ratio wharf/claude of each
# and the median of each run's CPU ratio, both exit codes and error
# counts, whether the verdicts agree, and the load average.
#
# Claude Code: $WHARF_CLAUDE, else the copy .ci/run installs
# ($HOME/.cache/wharf-ci/claude/node_modules/.bin/claude), else `claude` on
# the PATH; each run gets a throwaway HOME with telemetry, nonessential
# traffic and the auto-updater off, as .ci/run runs it. Without one, only
# wharf is timed.
#
# Target: wharf no slower than claude (ratio <= 1.0x) on the marketplace,
# on CPU and on wall time, doing at least claude's checks.
#
# What each checks on this marketplace (docs/claude-compat.md, "validate
# and names"; TestClaudeConformanceValidate compares the verdicts): claude
# reads marketplace.json and each plugin's plugin.json (schema, reserved
# names, entry/plugin.json version mismatch, misplaced fields, agents paths
# that are not .md files) but none of the plugins' Markdown or hooks. wharf
# gives the same errors and warnings, and also reads every plugin's
# Markdown front matter, hooks, MCP and LSP configuration and skills tree
# (Claude Code's errors there are warnings through a marketplace), checks
# every plugin as `wharf install` would copy it (symlinks, special files,
# size and entry limits: source.Fetcher.Check, which reads every file), and
# the dependency graph. Both fail this marketplace (three reserved names,
# two agents directories).
#
#   bash bench/validate.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
realworld=${WHARF_REALWORLD:-../shared/realworld}
if [ ! -d "$realworld" ]; then
	echo "validate.sh: $realworld is absent (the real marketplaces); skipping (WHARF_REALWORLD names another copy)"
	exit 0
fi
claude=${WHARF_CLAUDE:-}
if [ -z "$claude" ] && [ -x "$HOME/.cache/wharf-ci/claude/node_modules/.bin/claude" ]; then
	claude="$HOME/.cache/wharf-ci/claude/node_modules/.bin/claude"
fi
if [ -z "$claude" ]; then
	claude=$(command -v claude || true)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/wharf" ./cmd/wharf
go run ./bench/capabilitybench -realworld "$realworld" -build "$work/mkt"
# The plugin directory with the most files.
plug=$(for d in "$work"/mkt/plugins/*/; do printf '%s %s\n' "$(find "$d" -type f | wc -l)" "${d%/}"; done | sort -k1,1nr -k2 | head -1 | cut -d' ' -f2)
echo "largest plugin: $(basename "$plug") ($(find "$plug" -type f | wc -l) files)"
mkdir -p "$work/wharf-home"

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
best() { sort -n | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }

# run TOOL TARGET OUT: runs one validate from TARGET's parent directory,
# output to OUT, and prints "wall_ms cpu_ms exit_code".
run() {
	local tool=$1 target=$2 out=$3 home
	case $tool in
	wharf)
		(cd "$(dirname "$target")" && WHARF_HOME="$work/wharf-home" /usr/bin/time -o "$work/time.out" -f '%e %U %S %x' \
			"$work/wharf" validate "$target" >"$out" 2>&1) || true
		;;
	claude)
		home=$(mktemp -d "$work/claude-home.XXXXXX")
		(cd "$(dirname "$target")" && HOME="$home" DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
			/usr/bin/time -o "$work/time.out" -f '%e %U %S %x' "$claude" plugin validate "$target" >"$out" 2>&1) || true
		rm -rf "$home"
		;;
	esac
	awk '/Command exited with non-zero status/ {next} {printf "%d %d %d\n", $1 * 1000, ($2 + $3) * 1000, $4}' "$work/time.out"
}

# errors TOOL OUT: the error count the tool printed.
errors() {
	case $1 in
	wharf) sed -n 's/.* \([0-9]*\) problem(s); first:.*/\1/p' "$2" | head -1 | grep . || echo 0 ;;
	claude) sed -n 's/.*Found \([0-9]*\) errors\{0,1\}.*/\1/p' "$2" | head -1 | grep . || echo 0 ;;
	esac
}

# bench NAME TARGET: the interleaved runs on TARGET and the report.
bench() {
	local name=$1 target=$2 tools=(wharf) r t w c x
	[ -n "$claude" ] && tools=(wharf claude)
	declare -A wall cpu code
	echo "== $name: $target"
	echo "load average before: $(loadavg)"
	for t in "${tools[@]}"; do run "$t" "$target" "$work/$t.out" >/dev/null; done # warm-up
	for r in $(seq 1 "$runs"); do
		order=("${tools[@]}")
		if [ $((r % 2)) -eq 0 ] && [ ${#tools[@]} -eq 2 ]; then order=(claude wharf); fi
		for t in "${order[@]}"; do
			read -r w c x < <(run "$t" "$target" "$work/$t.out")
			wall[$t]+="$w " cpu[$t]+="$c " code[$t]=$x
		done
	done
	echo "load average after:  $(loadavg)"
	for t in "${tools[@]}"; do
		printf '%-6s wall best %5d ms median %5d ms [%s]; CPU best %5d ms median %5d ms [%s]; exit %s, %s errors\n' "$t" \
			"$(printf '%s\n' ${wall[$t]} | best)" "$(printf '%s\n' ${wall[$t]} | median)" "${wall[$t]% }" \
			"$(printf '%s\n' ${cpu[$t]} | best)" "$(printf '%s\n' ${cpu[$t]} | median)" "${cpu[$t]% }" \
			"${code[$t]}" "$(errors "$t" "$work/$t.out")"
	done
	if [ ${#tools[@]} -eq 2 ]; then
		local pairs wc cc
		read -ra wc <<<"${cpu[wharf]}"
		read -ra cc <<<"${cpu[claude]}"
		pairs=$(for i in "${!wc[@]}"; do awk -v a="${wc[$i]}" -v b="${cc[$i]}" 'BEGIN { if (b > 0) print a / b }'; done | median)
		echo "wharf/claude (target <= 1.0x): wall best $(ratio "$(printf '%s\n' ${wall[wharf]} | best)" "$(printf '%s\n' ${wall[claude]} | best)"), median $(ratio "$(printf '%s\n' ${wall[wharf]} | median)" "$(printf '%s\n' ${wall[claude]} | median)"); CPU best $(ratio "$(printf '%s\n' ${cpu[wharf]} | best)" "$(printf '%s\n' ${cpu[claude]} | best)"), median $(ratio "$(printf '%s\n' ${cpu[wharf]} | median)" "$(printf '%s\n' ${cpu[claude]} | median)"), median of each run's pair $(printf '%.2fx' "$pairs")"
		local ew ec
		ew=$(errors wharf "$work/wharf.out") ec=$(errors claude "$work/claude.out")
		if [ $((code[wharf] != 0)) -eq $((code[claude] != 0)) ]; then
			echo "verdicts agree: $([ "${code[wharf]}" -ne 0 ] && echo fail || echo pass) (exit wharf ${code[wharf]}, claude ${code[claude]}; errors wharf $ew, claude $ec)"
		else
			echo "verdicts DIFFER: exit wharf ${code[wharf]}, claude ${code[claude]}; errors wharf $ew, claude $ec"
		fi
	fi
}

if [ -n "$claude" ]; then
	echo "claude: $claude ($(h=$(mktemp -d); HOME="$h" DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 "$claude" --version 2>/dev/null | head -1; rm -rf "$h"))"
else
	echo "no claude CLI (set WHARF_CLAUDE, or run .ci/run once to install it); timing wharf only"
fi
bench "marketplace, 295 plugins" "$work/mkt"
bench "largest plugin" "$plug"
