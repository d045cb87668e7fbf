#!/usr/bin/env bash
# Compares `git clone --depth 1` of a channel repository served by wharf's
# git smart HTTP server (package githttp, no git binary on the server) with
# the same clone from `git daemon` serving the same commit, in the same run:
#   - single clones: median wall time over [runs], and server CPU per clone
#     (the first wharf clone, which builds the pack, shown apart);
#   - 32 concurrent clones: all must succeed with the right commit; median
#     wall time of [rounds] rounds, and server CPU per round.
# The repository holds the plugin trees of ../shared/realworld laid out as a
# channel (.claude-plugin/marketplace.json + plugins/<name>/), built by
# bench/channelrepo. Skips with a message when ../shared is absent.
#
#   bash bench/channel.sh [runs] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-11}
rounds=${2:-3}
conc=32
realworld=../shared/realworld
if [ ! -f "$realworld/README.md" ]; then
	echo "channel.sh: $realworld not found (the real-world marketplaces live next to the repository); skipping"
	exit 0
fi
out=bench/_out/channel
rm -rf "$out"
mkdir -p "$out/repos"
out=$(cd "$out" && pwd)

echo "building bench/channelrepo"
go build -o "$out/channelrepo" ./bench/channelrepo
commit=$("$out/channelrepo" build -realworld "$realworld" -out "$out/repos/approved.git")
files=$(git -C "$out/repos/approved.git" ls-tree -r "$commit" | wc -l)
echo "channel repository: commit $commit, $files files"

freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
cpu_ms() { awk '{print ($14+$15+$16+$17)*10}' "/proc/$1/stat"; } # CLK_TCK 100
now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

gdport=$(freeport)
/usr/lib/git-core/git-daemon --reuseaddr --export-all --base-path="$out/repos" \
	--listen=127.0.0.1 --port="$gdport" "$out/repos" >"$out/daemon.log" 2>&1 &
gdpid=$!
pids+=("$gdpid")
gd_url="git://127.0.0.1:$gdport/approved.git"

wharf_pid=""
start_wharf() {
	[ -n "$wharf_pid" ] && kill "$wharf_pid" 2>/dev/null && wait "$wharf_pid" 2>/dev/null || true
	"$out/channelrepo" serve -root "$out/repos" >"$out/wharf.url" 2>"$out/wharf.log" &
	wharf_pid=$!
	pids+=("$wharf_pid")
	for _ in $(seq 1 100); do [ -s "$out/wharf.url" ] && break; sleep 0.05; done
	wharf_url="$(cat "$out/wharf.url")/approved.git"
}
start_wharf
for _ in $(seq 1 100); do git ls-remote "$gd_url" >/dev/null 2>&1 && break; sleep 0.05; done

for u in "$gd_url" "$wharf_url"; do
	got=$(git ls-remote "$u" refs/heads/main | cut -f1)
	[ "$got" = "$commit" ] || { echo "channel.sh: $u serves $got, want $commit" >&2; exit 1; }
done

clone() { # url dir
	rm -rf "$2"
	git clone -q --depth 1 "$1" "$2" && [ "$(git -C "$2" rev-parse HEAD)" = "$commit" ]
}

echo "single clones ($runs each, alternating)"
start_wharf
t0=$(now_ms); c0=$(cpu_ms "$wharf_pid")
clone "$wharf_url" "$out/c"
cold_ms=$(($(now_ms) - t0)); cold_cpu=$(($(cpu_ms "$wharf_pid") - c0))
: >"$out/wharf.ms"; : >"$out/daemon.ms"
wc0=$(cpu_ms "$wharf_pid"); dc0=$(cpu_ms "$gdpid")
for i in $(seq 1 "$runs"); do
	t0=$(now_ms); clone "$wharf_url" "$out/c"; echo $(($(now_ms) - t0)) >>"$out/wharf.ms"
	t0=$(now_ms); clone "$gd_url" "$out/c"; echo $(($(now_ms) - t0)) >>"$out/daemon.ms"
done
sleep 0.2 # let git daemon reap its last child
wcpu=$((($(cpu_ms "$wharf_pid") - wc0) / runs)); dcpu=$((($(cpu_ms "$gdpid") - dc0) / runs))
wmed=$(median <"$out/wharf.ms"); dmed=$(median <"$out/daemon.ms")

concurrent() { # url -> prints wall ms; fails unless every clone succeeds
	local t0 fails=0 p
	local -a cp=()
	t0=$(now_ms)
	for i in $(seq 1 $conc); do
		clone "$1" "$out/cc/$i" &
		cp+=($!)
	done
	for p in "${cp[@]}"; do wait "$p" || fails=$((fails + 1)); done
	local ms=$(($(now_ms) - t0))
	if [ "$fails" != 0 ]; then
		echo "channel.sh: $fails of $conc concurrent clones from $1 failed" >&2
		return 1
	fi
	echo "$ms"
}

echo "$conc concurrent clones ($rounds rounds each, alternating; wharf restarted first, so its first round builds the pack)"
mkdir -p "$out/cc"
start_wharf
: >"$out/wharfc.ms"; : >"$out/daemonc.ms"
wc0=$(cpu_ms "$wharf_pid"); dc0=$(cpu_ms "$gdpid")
for r in $(seq 1 "$rounds"); do
	concurrent "$wharf_url" >>"$out/wharfc.ms"
	concurrent "$gd_url" >>"$out/daemonc.ms"
done
sleep 0.2
wccpu=$((($(cpu_ms "$wharf_pid") - wc0) / rounds)); dccpu=$((($(cpu_ms "$gdpid") - dc0) / rounds))
wcfirst=$(head -1 "$out/wharfc.ms")
wcmed=$(median <"$out/wharfc.ms"); dcmed=$(median <"$out/daemonc.ms")

ratio() { python3 -c "print(f'{$1/$2:.2f}x' if $2 else 'n/a')"; }
echo
echo "== git clone --depth 1 of a $files-file channel (server: wharf githttp vs git daemon)"
printf '%-34s %10s %10s %8s\n' "" "wharf" "git daemon" "ratio"
printf '%-34s %8s ms %8s ms %8s\n' "single clone, median wall" "$wmed" "$dmed" "$(ratio "$wmed" "$dmed")"
printf '%-34s %8s ms %8s ms %8s\n' "single clone, server CPU" "$wcpu" "$dcpu" "$(ratio "$wcpu" "$dcpu")"
printf '%-34s %8s ms %8s ms %8s\n' "first clone, server CPU (builds)" "$cold_cpu" "$dcpu" "$(ratio "$cold_cpu" "$dcpu")"
printf '%-34s %8s ms\n' "first clone, wall" "$cold_ms"
printf '%-34s %8s ms %8s ms %8s\n' "$conc concurrent, median wall" "$wcmed" "$dcmed" "$(ratio "$wcmed" "$dcmed")"
printf '%-34s %8s ms %8s ms %8s\n' "$conc concurrent, server CPU/round" "$wccpu" "$dccpu" "$(ratio "$wccpu" "$dccpu")"
printf '%-34s %8s ms\n' "$conc concurrent, first round" "$wcfirst"
echo "all $((conc * rounds * 2)) concurrent clones succeeded with commit $commit"
