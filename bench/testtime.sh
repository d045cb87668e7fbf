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
# usage: bench/testtime.sh OLD [NEW]   (NEW defaults to HEAD)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
old=${1:?usage: bench/testtime.sh OLD [NEW]}
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
	(cd "$work/$rev" && go test -count=1 -run '^$' ./... >/dev/null)
done

run() { # rev: runs the suite, writes wall, user and sys seconds and the exit code
	local rev=$1
	local TIMEFORMAT="%R %U %S"
	{ time (
		cd "$work/$rev"
		rc=0
		go test -count=1 ./... >"$logs/$rev.log" 2>&1 || rc=$?
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
echo "--- packages whose time changed most (old_s new_s, by last path element)"
join -a1 -a2 -e 0 -o 0,1.2,2.2 <(pkgtimes "$logs/$old.log" | sort) <(pkgtimes "$logs/$new.log" | sort) |
	awk '{ d = $3 - $2; if (d < 0) d = -d; print d, $0 }' | sort -rn | head -15 | cut -d' ' -f2-
echo "logs: $logs"
