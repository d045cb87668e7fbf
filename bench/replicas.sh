#!/usr/bin/env bash
# bench/replicas.sh — policy bundle polling (If-None-Match, the 304 path an
# agent fleet hits all day) against one wharf replica and against three
# replicas over the same 3-member etcd cluster, with the same total client
# concurrency; the three-replica run spreads requests round-robin, as a load
# balancer would. A single bbolt server is measured in the same run as the
# reference a one-node deployment would use instead.
# Everything runs on 127.0.0.1: etcd members (embedded, bench/etcdcluster),
# wharf-server processes and bench/loadgen share the machine's cores, so the
# ratio shows what replication costs or gains on this box, not on a fleet of
# machines. Usage: bench/replicas.sh [N] [DURATION] [CONCURRENCY] [ROUNDS]
set -euo pipefail
N=${1:-200000}
DURATION=${2:-10s}
CONC=${3:-32}
ROUNDS=${4:-2}
cd "$(dirname "$0")/.."
. bench/etcd.sh

go build -o "$WORK/wharf" ./cmd/wharf
go build -o "$WORK/wharf-server" ./cmd/wharf-server
go build -o "$WORK/loadgen" ./bench/loadgen
start_etcd 3 /wharf-bench

ADMIN="bench-admin-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export WHARF_HOME="$WORK/home"
serve() { # name, extra flags...: start wharf-server, print its URL
  local name=$1; shift
  WHARF_BOOTSTRAP_TOKEN="$ADMIN" "$WORK/wharf-server" --json --addr 127.0.0.1:0 --data "$WORK/$name" --demo "" \
    --log-level warn --rate-limit 1000000 "$@" >"$WORK/$name.json" 2>"$WORK/$name.log" &
  PIDS+=($!)
  wait_line "$WORK/$name.json" || { cat "$WORK/$name.log"; exit 1; }
  sed -n 's/.*"url": *"\(http[^"]*\)".*/\1/p' "$WORK/$name.json"
}
R1=$(serve r1 --store "$STORE")
R2=$(serve r2 --store "$STORE")
R3=$(serve r3 --store "$STORE")
BOLT=$(serve bolt)

policy() { # url: one layer with settings and a module, so the bundle has content
  curl -sf -X PUT "$1/v1/policy/layers/org" -H "Authorization: Bearer $ADMIN" -H 'If-None-Match: *' \
    -H 'Content-Type: application/json' \
    -d '{"rank": 10, "settings": {"enabledPlugins": {"app-deploy@demo": true}}, "modules": {"deny.rego": "package wharf.admin.org\n\ndeny contains msg if {\n\tinput.plugin == \"evil@demo\"\n\tmsg := \"evil is blocked\"\n}\n"}}' >/dev/null
}
etag() { # url token
  curl -sf -D - -o /dev/null -H "Authorization: Bearer $2" "$1/v1/policy/bundle" | sed -n 's/^[Ee][Tt]ag: *\(.*\)\r$/\1/p'
}
policy "$R1"
policy "$BOLT"
AGENT=$("$WORK/wharf" token create --role agent --server "$R2" --token "$ADMIN" 2>/dev/null)
BOLT_AGENT=$("$WORK/wharf" token create --role agent --server "$BOLT" --token "$ADMIN" 2>/dev/null)
ETAG=$(etag "$R1" "$AGENT")
for r in "$R2" "$R3"; do
  e=$(etag "$r" "$AGENT")
  [ "$e" = "$ETAG" ] || { echo "replica $r serves ETag $e, $R1 serves $ETAG" >&2; exit 1; }
done
BOLT_ETAG=$(etag "$BOLT" "$BOLT_AGENT")

echo "# bundle 304 on $(nproc) cores, $(go version | cut -d' ' -f3); N=$N, duration cap $DURATION, $CONC connections in total"
echo "# etcd: 3 embedded members (fsync on) on loopback; every replica serves ETag $ETAG"
printf '%-30s %9s %9s %9s %8s\n' "run" "req/s" "p50 ms" "p99 ms" "errors"
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$WORK/run.json"; }
LAST_RPS=0
run() { # name token etag url...: one bounded load run, one table row
  local name=$1 token=$2 tag=$3; shift 3
  local urls=()
  for u in "$@"; do urls+=(-url "$u/v1/policy/bundle"); done
  "$WORK/loadgen" -json -name "$name" -token "$token" -H "If-None-Match: $tag" -expect 304 \
    -n "$N" -d "$DURATION" -c "$CONC" "${urls[@]}" >"$WORK/run.json"
  LAST_RPS=$(field rps)
  printf '%-30s %9.0f %9.2f %9.2f %8d\n' "$name" "$LAST_RPS" "$(field p50_ms)" "$(field p99_ms)" "$(field errors)"
  if [ "$(field errors)" != 0 ]; then echo "  first error: $(field first_error)"; fi
}
best1=0
best3=0
for round in $(seq "$ROUNDS"); do
  run "1 replica (etcd) #$round" "$AGENT" "$ETAG" "$R1"
  best1=$(awk -v a="$best1" -v b="$LAST_RPS" 'BEGIN { print (b > a) ? b : a }')
  run "3 replicas (etcd) #$round" "$AGENT" "$ETAG" "$R1" "$R2" "$R3"
  best3=$(awk -v a="$best3" -v b="$LAST_RPS" 'BEGIN { print (b > a) ? b : a }')
done
run "1 server (bbolt, reference)" "$BOLT_AGENT" "$BOLT_ETAG" "$BOLT"
awk -v a="$best3" -v b="$best1" -v n="$ROUNDS" 'BEGIN { printf "ratio 3 replicas / 1 replica (best req/s of %d rounds each): %.2fx\n", n, a / b }'
