#!/usr/bin/env bash
# Compare the time of `go test -count=1 ./...` at two commits, run side by
# side so that both see the same machine load. Each commit is checked out
# in its own temporary worktree beside the repository (so that ../shared is
# found as it is for the repository itself); both use the same Go build
# cache, warmed first by `go test -run '^$' ./...` at each commit so that
# compiling counts the same for both.
#
# Prints wall time and CPU time (user+sys of go test and every test
# binary) per commit and the ratio new/old. On a loaded machine read the
# CPU ratio; wall time follows the load.
#
# Then it lists the packages whose time changed most, matched by their
# last path element (packages moved between the two commits keep it), and
# keeps both logs in the directory it names.
#
# With --common it times only the tests that exist at both commits, so that
# what the code's structure costs is told apart from tests added since:
# `go test -list .` at each commit names every test, benchmark, fuzz test
# and example per package; packages are matched by their last path element
# (by their path under cmd/, and "." for the module's root package), tests
# by name; then each package common to both runs alone, in turn, as
# `go test -count=1 -run '^(A|B|...)$' PKG`, both commits side by side. It
# prints per package the seconds `go test` reports for the test binary at
# each commit and their ratio, the totals, and the same table as Markdown;
# packages or tests found at one commit only are counted and listed in
# the logs (common.only).
#
# TESTTIME_PKGS (default ./...) narrows the packages, for a quick look.
#
# usage: bench/testtime.sh [--common] OLD [NEW]   (NEW defaults to HEAD)
set -euo pipefail
export LC_ALL=C
pkgs=${TESTTIME_PKGS:-./...}
cd "$(dirname "$0")/.."
root=$(pwd)
mode=all
if [ "${1:-}" = "--common" ]; then
	mode=common
	shift
fi
old=${1:?usage: bench/testtime.sh [--common] OLD [NEW]}
new=${2:-HEAD}
old=$(git rev-parse --short "$old")
new=$(git rev-parse --short "$new")

work=$(mktemp -d "$(dirname "$root")/.testtime.XXXXXX")
logs=$(mktemp -d "${TMPDIR:-/tmp}/testtime.XXXXXX")
cleanup() {
	for rev in "$old" "$new"; do
		git -C "$root" worktree remove --force "$work/$rev" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# The worktrees sit one level deeper than the repository; link ../shared
# beside them so tests that read it find it.
if [ -d "$(dirname "$root")/shared" ]; then
	ln -s "$(dirname "$root")/shared" "$work/shared"
fi
for rev in "$old" "$new"; do
	git -C "$root" worktree add -q --detach "$work/$rev" "$rev"
	(cd "$work/$rev" && go test -count=1 -run '^$' $pkgs >/dev/null)
done

if [ "$mode" = common ]; then
	# key pkg test, one line per test of every package at rev.
	listtests() {
		local rev=$1
		(cd "$work/$rev" && go test -count=1 -list . $pkgs 2>&1) | awk -v mod="$(cd "$work/$rev" && go list -m)" '
			/^(Test|Benchmark|Fuzz|Example)[A-Za-z0-9_]*$/ { names[++n] = $1; next }
			$1 == "ok" || $1 == "FAIL" {
				pkg = $2; rel = pkg; sub("^" mod "/?", "", rel)
				if (rel == "") key = "."
				else if (rel ~ /^cmd\//) key = rel
				else { k = split(rel, parts, "/"); key = parts[k] }
				for (i = 1; i <= n; i++) print key, pkg, names[i]
				n = 0
			}' | sort -u >"$logs/$rev.tests"
	}
	listtests "$old"
	listtests "$new"
	# The tests common to both, and, per rev, one line per package:
	# key pkg regex.
	join -j1 -o 0 <(awk '{ print $1 "/" $3 }' "$logs/$old.tests" | sort) <(awk '{ print $1 "/" $3 }' "$logs/$new.tests" | sort) >"$logs/common"
	{
		echo "tests at $old only:"
		join -v1 <(awk '{ print $1 "/" $3 }' "$logs/$old.tests" | sort) "$logs/common"
		echo "tests at $new only:"
		join -v1 <(awk '{ print $1 "/" $3 }' "$logs/$new.tests" | sort) "$logs/common"
	} >"$logs/common.only"
	for rev in "$old" "$new"; do
		awk 'NR == FNR { keep[$1] = 1; next }
			keep[$1 "/" $3] { if (!($1 in pkg)) { pkg[$1] = $2; order[++n] = $1 }; re[$1] = re[$1] (re[$1] == "" ? "" : "|") $3 }
			END { for (i = 1; i <= n; i++) { k = order[i]; print k, pkg[k], "^(" re[k] ")$" } }' \
			"$logs/common" "$logs/$rev.tests" | sort >"$logs/$rev.plan"
	done
fi

run() { # rev: runs the suite, writes wall, user and sys seconds and the exit code
	local rev=$1
	local TIMEFORMAT="%R %U %S"
	{ time (
		cd "$work/$rev"
		rc=0
		if [ "$mode" = common ]; then
			: >"$logs/$rev.log"
			while read -r key pkg re; do
				go test -count=1 -run "$re" "$pkg" >>"$logs/$rev.log" 2>&1 || rc=$?
			done <"$logs/$rev.plan"
		else
			go test -count=1 $pkgs >"$logs/$rev.log" 2>&1 || rc=$?
		fi
		echo "$rc" >"$logs/$rev.rc"
	); } 2>"$logs/$rev.time"
}
run "$old" &
run "$new" &
wait

printf '%-10s %10s %10s %6s\n' commit wall_s cpu_s exit
for rev in "$old" "$new"; do
	read -r wall user sys <"$logs/$rev.time"
	printf '%-10s %10.1f %10.1f %6s\n' "$rev" "$wall" "$(echo "$user + $sys" | bc)" "$(cat "$logs/$rev.rc")"
done
read -r ow ou os <"$logs/$old.time"
read -r nw nu ns <"$logs/$new.time"
printf 'new/old: wall %.2fx, cpu %.2fx\n' "$(echo "$nw / $ow" | bc -l)" "$(echo "($nu + $ns) / ($ou + $os)" | bc -l)"
for rev in "$old" "$new"; do
	if [ "$(cat "$logs/$rev.rc")" != 0 ]; then
		echo "--- $rev failed; its failing packages:"
		grep -E '^(FAIL|--- FAIL)' "$logs/$rev.log" | head -20
	fi
done

# Per package: "ok  path  12.3s" lines, keyed by the last path element.
pkgtimes() {
	awk '$1 == "ok" || $1 == "FAIL" { if ($3 ~ /s$/) { t = $3; sub(/s$/, "", t); n = split($2, p, "/"); print p[n], t } }' "$1"
}
if [ "$mode" = common ]; then
	# Keyed as the plan is (key pkg regex), so cmd/wharf and the root
	# package stay apart.
	plantimes() {
		awk 'NR == FNR { key[$2] = $1; next }
			($1 == "ok" || $1 == "FAIL") && ($2 in key) && $3 ~ /s$/ { t = $3; sub(/s$/, "", t); print key[$2], t }' "$1" "$2" | sort
	}
	echo "--- tests at both commits: $(wc -l <"$logs/common") in $(wc -l <"$logs/$new.plan") packages (at one commit only: see $logs/common.only)"
	join -a1 -a2 -e 0 -o 0,1.2,2.2 <(plantimes "$logs/$old.plan" "$logs/$old.log") <(plantimes "$logs/$new.plan" "$logs/$new.log") >"$logs/common.times"
	awk -v o="$old" -v n="$new" '
		BEGIN { printf "%-16s %9s %9s %7s\n", "package", o "_s", n "_s", "ratio"; md = "| package | " o " (s) | " n " (s) | new/old |\n|---|---:|---:|---:|\n" }
		{ r = ($2 > 0) ? sprintf("%.2fx", $3 / $2) : "-"; printf "%-16s %9.2f %9.2f %7s\n", $1, $2, $3, r
		  md = md sprintf("| %s | %.2f | %.2f | %s |\n", $1, $2, $3, r); so += $2; sn += $3 }
		END { r = sprintf("%.2fx", sn / so); printf "%-16s %9.2f %9.2f %7s\n", "total", so, sn, r
		      md = md sprintf("| **total** | %.2f | %.2f | %s |\n", so, sn, r); printf "--- as Markdown\n%s", md }' "$logs/common.times"
	echo "logs: $logs"
	exit 0
fi
echo "--- packages whose time changed most (old_s new_s, by last path element)"
join -a1 -a2 -e 0 -o 0,1.2,2.2 <(pkgtimes "$logs/$old.log" | sort) <(pkgtimes "$logs/$new.log" | sort) |
	awk '{ d = $3 - $2; if (d < 0) d = -d; print d, $0 }' | sort -rn | head -15 | cut -d' ' -f2-
echo "logs: $logs"
