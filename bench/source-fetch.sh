#!/bin/sh
# Time wharf's git source fetch (go-git, depth 1, one ref, tree written from
# the commit's objects, no .git) against what a user would run instead,
#   git clone -q --depth 1 --single-branch --no-tags file://repo dst && rm -rf dst/.git
# on the same generated 200-file plugin repository, in the same run.
#
# usage: bench/source-fetch.sh [runs]     (default 20 runs each)
# WHARF_BENCH_REPO=<repo> reuses a repository instead of generating one.
set -eu
runs=${1:-20}
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
repo=${WHARF_BENCH_REPO:-}
if [ -z "$repo" ]; then
	repo=$tmp/repo
	git init -q -b main "$repo"
	i=0
	while [ $i -lt 200 ]; do
		mkdir -p "$repo/skills/s$i"
		{ printf -- '---\nname: s%d\n---\n' $i; head -c 512 /dev/zero | tr '\0' x; } >"$repo/skills/s$i/SKILL.md"
		i=$((i + 1))
	done
	git -C "$repo" add -A
	git -C "$repo" -c user.name=b -c user.email=b@example.com commit -q -m bench
fi
echo "repo: $repo ($(git -C "$repo" ls-files | wc -l) files, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"

now() { date +%s%N; }
start=$(now)
n=0
while [ $n -lt "$runs" ]; do
	git clone -q --depth 1 --single-branch --no-tags "file://$repo" "$tmp/c$n"
	rm -rf "$tmp/c$n/.git"
	n=$((n + 1))
done
git_ns=$((($(now) - start) / runs))

wharf_ns=$(WHARF_BENCH_REPO=$repo go test -run '^$' -bench '^BenchmarkFetchGitShallow$' -benchtime "${runs}x" ./internal/core/source |
	awk '/^BenchmarkFetchGitShallow/ {print $3}')

echo "git clone --depth 1: $((git_ns / 1000000)) ms/op"
echo "wharf source fetch:  $((${wharf_ns%.*} / 1000000)) ms/op"
awk -v w="$wharf_ns" -v g="$git_ns" 'BEGIN { printf "ratio wharf/git: %.2f\n", w / g }'
