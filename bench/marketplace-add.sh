#!/usr/bin/env bash
# Compares `wharf marketplace add file://...` with `git clone --depth 1
# file://...` of the same generated repository (~800 files), in the same run.
# Uses hyperfine when available (installing it with apt-get if allowed), else a
# timing loop. Prints the mean of each and the ratio wharf/git.
#
#   bash bench/marketplace-add.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-15}
plugins=160 # x 5 files each, plus the marketplace.json
out=bench/out
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)

echo "building wharf"
go build -o "$out/wharf" ./cmd/wharf

echo "generating a marketplace repository with $plugins plugins"
repo="$out/repo"
mkdir -p "$repo/.claude-plugin"
{
	echo '{"name":"bench","owner":{"name":"bench"},"plugins":['
	for i in $(seq 1 $plugins); do
		sep=","
		[ "$i" = "$plugins" ] && sep=""
		echo "{\"name\":\"plugin-$i\",\"source\":\"./plugins/plugin-$i\",\"description\":\"generated plugin $i\",\"category\":\"cat-$((i % 7))\"}$sep"
	done
	echo ']}'
} >"$repo/.claude-plugin/marketplace.json"
for i in $(seq 1 $plugins); do
	p="$repo/plugins/plugin-$i"
	mkdir -p "$p/.claude-plugin" "$p/commands" "$p/agents" "$p/skills/skill-$i"
	printf '{"name":"plugin-%d","version":"1.0.%d","description":"generated plugin %d"}\n' "$i" "$i" "$i" >"$p/.claude-plugin/plugin.json"
	printf -- '---\ndescription: command %d\n---\n%s\n' "$i" "$(head -c 2048 /dev/urandom | base64 -w 76)" >"$p/commands/cmd-$i.md"
	printf -- '---\nname: agent-%d\ndescription: agent %d\n---\n%s\n' "$i" "$i" "$(head -c 1024 /dev/urandom | base64 -w 76)" >"$p/agents/agent-$i.md"
	printf -- '---\nname: skill-%d\ndescription: skill %d\n---\n%s\n' "$i" "$i" "$(head -c 4096 /dev/urandom | base64 -w 76)" >"$p/skills/skill-$i/SKILL.md"
	printf '# plugin-%d\n\nGenerated for the benchmark.\n' "$i" >"$p/README.md"
done
(
	cd "$repo"
	export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
	git init -q -b main
	git add -A
	git commit -q -m "generated marketplace"
	# a little history, as a real marketplace has
	for n in 1 2 3; do
		echo "change $n" >>"plugins/plugin-$n/README.md"
		git commit -q -am "change $n"
	done
)
files=$(git -C "$repo" ls-files | wc -l)
echo "repository: $files files"

home="$out/home"
clone="$out/clone"
wharf_cmd="WHARF_HOME=$home $out/wharf marketplace add file://$repo >/dev/null"
git_cmd="git clone -q --depth 1 file://$repo $clone"

if ! command -v hyperfine >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get install -y -qq hyperfine >/dev/null 2>&1 || true
	fi
fi

if command -v hyperfine >/dev/null 2>&1; then
	hyperfine --warmup 2 --runs "$runs" --export-json "$out/result.json" \
		--prepare "rm -rf $home $clone" -n "wharf marketplace add" "$wharf_cmd" \
		--prepare "rm -rf $home $clone" -n "git clone --depth 1" "$git_cmd"
	wharf_ms=$(python3 -c "import json;r=json.load(open('$out/result.json'))['results'];print(round(r[0]['mean']*1000,1))")
	git_ms=$(python3 -c "import json;r=json.load(open('$out/result.json'))['results'];print(round(r[1]['mean']*1000,1))")
else
	echo "hyperfine not available; timing $runs runs of each with date +%s%N"
	mean_ms() {
		local total=0 t0 t1
		for _ in $(seq 1 "$runs"); do
			rm -rf "$home" "$clone"
			t0=$(date +%s%N)
			bash -c "$1"
			t1=$(date +%s%N)
			total=$((total + t1 - t0))
		done
		echo "scale=1; $total / $runs / 1000000" | bc
	}
	bash -c "$wharf_cmd" && rm -rf "$home" # warm up
	bash -c "$git_cmd" && rm -rf "$clone"
	wharf_ms=$(mean_ms "$wharf_cmd")
	git_ms=$(mean_ms "$git_cmd")
fi
rm -rf "$home" "$clone"

ratio=$(echo "scale=2; $wharf_ms / $git_ms" | bc)
echo
echo "files:                  $files"
echo "wharf marketplace add:  ${wharf_ms} ms (mean)"
echo "git clone --depth 1:    ${git_ms} ms (mean)"
echo "ratio wharf/git:        ${ratio}x (target <= 1.2x)"
