#!/usr/bin/env bash
# bench/claude-drift.sh — what changes for wharf's Claude Code compatibility
# tests between the Claude Code release CI pins (.ci/run) and the newest one
# npm offers.
#
#   bash bench/claude-drift.sh              # the newest release
#   WHARF_DRIFT_VERSION=2.1.340 bash bench/claude-drift.sh   # a given one
#
# It installs the newer release into a temporary npm prefix, runs every test
# whose name starts with TestClaudeCompat or TestClaudeConformance once with
# each release (each claude run with a throwaway HOME, telemetry off, in its
# own network namespace where the system allows), and prints the results
# side by side: tests that pass with one release and fail with the other,
# and the lines of the conformance tables (cases, agreement, differences)
# that differ; the full test output is kept in bench/_out/. Exit status 1
# when anything changed.
set -euo pipefail
cd "$(dirname "$0")/.."

pinned_version=$(sed -n 's/^CLAUDE_CODE_VERSION=//p' .ci/run)
pinned="${WHARF_CLAUDE:-$HOME/.cache/wharf-ci/claude/node_modules/.bin/claude}"
pattern='^TestClaude(Compat|Conformance)'

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

claude_version() { # binary
	HOME="$WORK/home-$RANDOM" DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 "$1" --version | awk '{print $1}'
}

if [ ! -x "$pinned" ] || [ "$(claude_version "$pinned")" != "$pinned_version" ]; then
	echo "--- npm install @anthropic-ai/claude-code@$pinned_version (the pinned release)"
	npm install --no-audit --no-fund --prefix "$WORK/pinned" "@anthropic-ai/claude-code@$pinned_version" >/dev/null
	pinned="$WORK/pinned/node_modules/.bin/claude"
fi

newest="${WHARF_DRIFT_VERSION:-$(npm view @anthropic-ai/claude-code version)}"
echo "--- pinned $pinned_version, compared with $newest"
if [ "$newest" = "$pinned_version" ]; then
	newer="$pinned"
else
	echo "--- npm install @anthropic-ai/claude-code@$newest into a temporary prefix"
	npm install --no-audit --no-fund --prefix "$WORK/newest" "@anthropic-ai/claude-code@$newest" >/dev/null
	newer="$WORK/newest/node_modules/.bin/claude"
fi

run() { # label binary
	echo "--- go test -run '$pattern' with claude $(claude_version "$2")"
	WHARF_CLAUDE="$2" WHARF_REQUIRE_CLAUDE=1 go test -count=1 -run "$pattern" -v "${pkgs[@]}" >"$WORK/$1.out" 2>&1 || true
	# The verdict of each test, and what the tests log over several lines
	# (the conformance tables: cases, agreement, differences), with release
	# numbers masked.
	# (grep finds nothing when all is well: not a failure.)
	{
		grep -E '^\s*--- (PASS|FAIL|SKIP): TestClaude(Compat|Conformance)' "$WORK/$1.out" | sed -E 's/ \([0-9.]+s\)$//; s/^\s+//' | sort || true
		grep -E '^        ' "$WORK/$1.out" | grep -vE -- '--- (PASS|FAIL|SKIP)' | sed -E 's/[0-9]+\.[0-9]+\.[0-9]+/<version>/g; s/^\s+/  /' || true
		grep -E '(differs from Claude Code|claude [0-9.]+ says|wharf estimates)' "$WORK/$1.out" | sed -E 's/claude [0-9.]+/claude/; s/Claude Code [0-9.]+/Claude Code/; s/^\s+\S+_test\.go:[0-9]+: //' || true
	} >"$WORK/$1.summary"
}
# Only the packages that hold such tests are built.
mapfile -t pkgs < <(grep -rlE --include='*_test.go' 'func TestClaude(Compat|Conformance)' . | xargs -n1 dirname | sort -u)
if [ ${#pkgs[@]} -eq 0 ]; then
	echo "no TestClaudeCompat or TestClaudeConformance tests found" >&2
	exit 1
fi
run pinned "$pinned"
run newest "$newer"
mkdir -p bench/_out
cp "$WORK/pinned.out" "bench/_out/claude-drift-$pinned_version.out"
cp "$WORK/newest.out" "bench/_out/claude-drift-$newest.out"

echo
echo "=== pinned $pinned_version"
cat "$WORK/pinned.summary"
echo
if diff -u --label "claude $pinned_version" --label "claude $newest" "$WORK/pinned.summary" "$WORK/newest.summary" >"$WORK/diff"; then
	echo "=== claude $newest: no change from $pinned_version"
	exit 0
fi
echo "=== what changed from claude $pinned_version to $newest"
cat "$WORK/diff"
exit 1
