#!/usr/bin/env bash
# Compares `wharf marketplace add file://...` with `git clone --depth 1
# file://...` of the same generated repository (~800 files), in the same run.
# Uses hyperfine when available (installing it with apt-get if allowed), else a
# timing loop. Prints the mean of each and the ratio wharf/git.
#
# Then the same at a large size: a generated marketplace of [large-plugins]
# plugin directories of 20 small files each (31,001 files at the default
# 1,550, the size of the largest marketplaces seen), with
#   - add: `wharf marketplace add` vs `git clone --depth 1`, and
#   - update: a new upstream commit (200 files changed, 50 added, 20
#     deleted), then `wharf marketplace update` vs `git fetch --depth 1` +
#     `git reset --hard FETCH_HEAD` in a clone at the old commit,
# alternating, [large-runs] each: median wall time, median CPU time (user +
# system, git's helper processes included on both sides) and peak RSS (the
# largest process: wharf, or git's clone, index-pack or upload-pack).
# large-plugins 0 skips the large part. With WHARF_BASELINE set to another
# wharf binary (say, main's), the large add and update of that binary are
# measured in the same alternation too, and reported against the same git
# runs.
#
#   [WHARF_BASELINE=/path/to/wharf] bash bench/marketplace-add.sh [runs] [large-runs] [large-plugins]
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-15}
large_runs=${2:-5}
large_plugins=${3:-1550}
plugins=160 # x 5 files each, plus the marketplace.json
out=bench/_out
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

[ "$large_plugins" = 0 ] && exit 0

echo
echo "generating a large marketplace repository: $large_plugins plugins x 20 files"
big="$out/big"
python3 - "$big" "$large_plugins" <<'PY'
import base64, json, os, random, sys
root, plugins = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1)
words = "plugin agent skill command hook server tool review test deploy data model query cache index build lint format docs".split()
def text(n):  # Markdown-like prose: compresses like real plugin files
    return " ".join(rnd.choice(words) for _ in range(n // 6)) + "\n"
entries = []
for i in range(plugins):
    name = f"plugin-{i}"
    entries.append({"name": name, "source": f"./plugins/{name}", "description": f"generated plugin {i}", "category": f"cat-{i % 7}"})
    p = f"{root}/plugins/{name}"
    os.makedirs(f"{p}/.claude-plugin")
    with open(f"{p}/.claude-plugin/plugin.json", "w") as f:
        json.dump({"name": name, "version": f"1.0.{i}", "description": f"generated plugin {i}"}, f)
    with open(f"{p}/README.md", "w") as f:
        f.write(f"# {name}\n\n" + text(600))
    for j in range(18):
        kind = ("commands", "agents", "skills")[j % 3]
        if kind == "skills":
            d = f"{p}/skills/skill-{j}"
            fn = f"{d}/SKILL.md"
        else:
            d = f"{p}/{kind}"
            fn = f"{d}/{kind[:-1]}-{j}.md"
        os.makedirs(d, exist_ok=True)
        body = text(rnd.choice((500, 1500, 3000, 6000)))
        if j % 6 == 0:  # some bundled data that does not compress
            body += base64.b64encode(rnd.randbytes(1024)).decode() + "\n"
        with open(fn, "w") as f:
            f.write(f"---\nname: {kind}-{j}\ndescription: {kind} {j} of {name}\n---\n{body}")
os.makedirs(f"{root}/.claude-plugin")
with open(f"{root}/.claude-plugin/marketplace.json", "w") as f:
    json.dump({"name": "big", "owner": {"name": "bench"}, "plugins": entries}, f, indent=1)
PY
(
	cd "$big"
	export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
	git init -q -b main
	git -c gc.auto=0 add -A
	git -c gc.auto=0 commit -q -m "generated marketplace"
	git gc -q
)
bigfiles=$(git -C "$big" ls-files | wc -l)
echo "repository: $bigfiles files, pack $(du -sh "$big/.git/objects/pack" | cut -f1)"

# The state before the update: wharf's home and git's clone at the first
# commit, copied afresh before each update run.
base="$out/big-base"
mkdir -p "$base"
WHARF_HOME="$base/home" "$out/wharf" marketplace add "file://$big" >/dev/null
baseline=${WHARF_BASELINE:-}
if [ -n "$baseline" ]; then
	WHARF_HOME="$base/home-baseline" "$baseline" marketplace add "file://$big" >/dev/null
fi
git clone -q --depth 1 "file://$big" "$base/clone"

echo "upstream commit: 200 files changed, 50 added, 20 deleted"
(
	cd "$big"
	export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
	for i in $(seq 0 199); do echo "changed upstream" >>"plugins/plugin-$((i * 7 % large_plugins))/commands/command-3.md"; done
	for i in $(seq 0 49); do mkdir -p "plugins/plugin-$i/hooks" && echo '{"hooks":{}}' >"plugins/plugin-$i/hooks/hooks-$i.json"; done
	for i in $(seq 0 19); do git rm -q "plugins/plugin-$((i * 11 + 3))/agents/agent-1.md"; done
	git add -A
	git -c gc.auto=0 commit -q -m "upstream change"
)

stats="$out/big-stats"
: >"$stats"
measure() { # label prepare command
	rm -rf "$out/t"
	eval "$2"
	/usr/bin/time -f "%e %U %S %M" -o "$out/t.time" bash -c "$3" >/dev/null
	echo "$1 $(cat "$out/t.time")" >>"$stats"
}
echo "large add and update: $large_runs runs each, alternating"
for _ in $(seq 1 "$large_runs"); do
	measure wharf-add "rm -rf $out/h" "WHARF_HOME=$out/h $out/wharf marketplace add file://$big"
	measure git-clone "rm -rf $out/c" "git clone -q --depth 1 file://$big $out/c"
	if [ -n "$baseline" ]; then
		measure baseline-add "rm -rf $out/h" "WHARF_HOME=$out/h $baseline marketplace add file://$big"
		measure baseline-update "rm -rf $out/h && cp -a $base/home-baseline $out/h" "WHARF_HOME=$out/h $baseline marketplace update big"
	fi
	measure wharf-update "rm -rf $out/h && cp -a $base/home $out/h" "WHARF_HOME=$out/h $out/wharf marketplace update big"
	# The copy changes every file's inode and ctime, which git's index
	# records: refresh it (untimed), as a clone that was not copied has it.
	measure git-fetch "rm -rf $out/c && cp -a $base/clone $out/c && git -C $out/c update-index -q --refresh" "git -C $out/c fetch -q --depth 1 origin main && git -C $out/c reset -q --hard FETCH_HEAD"
done
[ "$(git -C "$out/c" rev-parse HEAD)" = "$(git -C "$big" rev-parse HEAD)" ] || { echo "git did not reach the new commit" >&2; exit 1; }
diff -r -x .git "$out/c" "$out/h/marketplaces/big" >/dev/null || { echo "wharf's update differs from git's" >&2; exit 1; }
rm -rf "$out/h" "$out/c" "$base"

python3 - "$stats" "$bigfiles" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, wall, user, sys_, rss = line.split()
    rows.setdefault(label, []).append((float(wall), float(user) + float(sys_), int(rss) / 1024))
def med(label, i):
    return statistics.median(r[i] for r in rows[label])
print(f"\n== {sys.argv[2]} files: wharf vs git (median of {len(rows['wharf-add'])}; best in brackets; RSS the largest)")
print(f"{'':28} {'wharf':>10} {'git':>10} {'ratio':>7}  target")
def best(label, i):
    return min(r[i] for r in rows[label])
pairs = [("add / clone --depth 1", "wharf-add", "git-clone"), ("update / fetch + reset", "wharf-update", "git-fetch")]
if "baseline-add" in rows:
    pairs += [("baseline add / clone", "baseline-add", "git-clone"), ("baseline update / fetch", "baseline-update", "git-fetch")]
for what, w, g in pairs:
    for name, i, unit in (("wall", 0, "s"), ("CPU", 1, "s")):
        a, b = med(w, i), med(g, i)
        print(f"{what + ' ' + name:28} {a:9.2f}{unit} {b:9.2f}{unit} {a / b:6.2f}x  (best {best(w, i):.2f} vs {best(g, i):.2f}: {best(w, i) / best(g, i):.2f}x)")
    a, b = max(r[2] for r in rows[w]), max(r[2] for r in rows[g])
    print(f"{what + ' peak RSS':28} {a:8.0f}MB {b:8.0f}MB {a / b:6.2f}x")
PY
