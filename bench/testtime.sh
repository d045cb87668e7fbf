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
# by name. Each package common to both is compiled first (`go test -c`, so
# that neither compiling nor linking is timed), then its test binary runs
# alone, in turn, in the package's directory, with
# -test.run '^(A|B|...)$', both commits side by side. It prints per
# package the wall and CPU seconds (user+sys of the test binary and every
# process it starts) at each commit and the ratios, the totals, and the
# same table as Markdown; tests found at one commit only are listed in the
# logs (common.only).
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
		# Each package's test binary, and the directory it runs in.
		mkdir -p "$work/bin-$rev"
		while read -r key pkg re; do
			bin="$work/bin-$rev/$(echo "$key" | tr / _).test"
			(cd "$work/$rev" && go test -c -o "$bin" "$pkg" </dev/null && echo "$key $bin $(go list -f '{{.Dir}}' "$pkg")") >>"$logs/$rev.bins"
		done <"$logs/$rev.plan"
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
			: >"$logs/$rev.ptimes"
			while read -r key pkg re; do
				read -r _ bin dir < <(awk -v k="$key" '$1 == k' "$logs/$rev.bins")
				echo "=== $key" >>"$logs/$rev.log"
				TIMEFORMAT="$key %R %U %S"
				{ time (cd "$dir" && "$bin" -test.count=1 -test.timeout=30m -test.run "$re" </dev/null >>"$logs/$rev.log" 2>&1) || rc=$?; } 2>>"$logs/$rev.ptimes"
			done <"$logs/$rev.plan"
			TIMEFORMAT="%R %U %S"
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
	echo "--- tests at both commits: $(wc -l <"$logs/common") in $(wc -l <"$logs/$new.plan") packages (at one commit only: see $logs/common.only)"
	# key old_wall old_cpu new_wall new_cpu
	join -a1 -a2 -e 0 -o 0,1.2,1.3,2.2,2.3 \
		<(awk '{ print $1, $2, $3 + $4 }' "$logs/$old.ptimes" | sort) \
		<(awk '{ print $1, $2, $3 + $4 }' "$logs/$new.ptimes" | sort) >"$logs/common.times"
	awk -v o="$old" -v n="$new" '
		function ratio(a, b) { return (a > 0) ? sprintf("%.2fx", b / a) : "-" }
		BEGIN { printf "%-16s %9s %9s %7s %9s %9s %7s\n", "package", "wall_" o, "wall_" n, "ratio", "cpu_" o, "cpu_" n, "ratio"
			md = "| package | wall " o " (s) | wall " n " (s) | new/old | CPU " o " (s) | CPU " n " (s) | new/old |\n|---|---:|---:|---:|---:|---:|---:|\n" }
		{ printf "%-16s %9.2f %9.2f %7s %9.2f %9.2f %7s\n", $1, $2, $4, ratio($2, $4), $3, $5, ratio($3, $5)
		  md = md sprintf("| %s | %.2f | %.2f | %s | %.2f | %.2f | %s |\n", $1, $2, $4, ratio($2, $4), $3, $5, ratio($3, $5))
		  ow += $2; oc += $3; nw += $4; nc += $5 }
		END { printf "%-16s %9.2f %9.2f %7s %9.2f %9.2f %7s\n", "total", ow, nw, ratio(ow, nw), oc, nc, ratio(oc, nc)
		      md = md sprintf("| **total** | %.2f | %.2f | %s | %.2f | %.2f | %s |\n", ow, nw, ratio(ow, nw), oc, nc, ratio(oc, nc)); printf "--- as Markdown\n%s", md }' "$logs/common.times"
	echo "logs: $logs"
	exit 0
fi
echo "--- packages whose time changed most (old_s new_s, by last path element)"
join -a1 -a2 -e 0 -o 0,1.2,2.2 <(pkgtimes "$logs/$old.log" | sort) <(pkgtimes "$logs/$new.log" | sort) |
	awk '{ d = $3 - $2; if (d < 0) d = -d; print d, $0 }' | sort -rn | head -15 | cut -d' ' -f2-
echo "logs: $logs"
