#!/usr/bin/env bash
# bench/server.sh — load the wharf API server on loopback and compare it, in
# the same run, with what a user would do without it:
#   - catalog search: GET /v1/plugins?q=deploy against one `wharf search deploy`
#     process per query (the CLI over the same demo marketplace);
#   - policy bundle poll with If-None-Match (304 path): GET /v1/policy/bundle
#     against net/http serving the same bundle file with an ETag (a static
#     bundle server, the usual way to publish OPA bundles).
# Every load run is bounded by request count (N) and time (DURATION) and hits
# 127.0.0.1 only. The load generator (bench/loadgen, wrk-like: a keep-alive
# connection per worker, a request prepared once) shares the cores with the
# server, so it is kept lean; the static baseline is loaded by the same one.
# Usage: bench/server.sh [N] [DURATION] [CONCURRENCY]
set -euo pipefail
N=${1:-200000}
DURATION=${2:-10s}
CONC=${3:-32}
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK=$(mktemp -d)
SERVER_PID=""
STATIC_PID=""
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
  [ -n "$STATIC_PID" ] && kill "$STATIC_PID" 2>/dev/null && wait "$STATIC_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

go build -o "$WORK/wharf" ./cmd/wharf
go build -o "$WORK/wharf-server" ./cmd/wharf-server
go build -o "$WORK/loadgen" ./bench/loadgen
go build -o "$WORK/staticbundle" ./bench/staticbundle

ADMIN="bench-admin-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export WHARF_HOME="$WORK/home"
# The rate limiter stays on (one bucket per token), set far above the load.
WHARF_BOOTSTRAP_TOKEN="$ADMIN" "$WORK/wharf-server" --json --addr 127.0.0.1:0 --data "$WORK/data" \
  --demo "$ROOT/testdata/demo-marketplace" --log-level warn --rate-limit 1000000 >"$WORK/serve.json" 2>"$WORK/serve.log" &
SERVER_PID=$!
for _ in $(seq 100); do [ -s "$WORK/serve.json" ] && break; sleep 0.05; done
URL=$(sed -n 's/.*"url": "\(http[^"]*\)".*/\1/p' "$WORK/serve.json")
[ -n "$URL" ] || { echo "server did not start:"; cat "$WORK/serve.log"; exit 1; }
AGENT=$("$WORK/wharf" token create --role agent --server "$URL" --token "$ADMIN")

# A policy with one layer, so the bundle carries settings and a module.
curl -sf -X PUT "$URL/v1/policy/layers/org" -H "Authorization: Bearer $ADMIN" -H 'If-None-Match: *' \
  -H 'Content-Type: application/json' \
  -d '{"rank": 10, "settings": {"enabledPlugins": {"app-deploy@demo": true}}, "modules": {"deny.rego": "package wharf.admin.org\n\ndeny contains msg if {\n\tinput.plugin == \"evil@demo\"\n\tmsg := \"evil is blocked\"\n}\n"}}' >/dev/null
curl -sf -D "$WORK/bundle.h" -o "$WORK/bundle.tar.gz" -H "Authorization: Bearer $AGENT" "$URL/v1/policy/bundle"
ETAG=$(sed -n 's/^[Ee][Tt]ag: *\(.*\)\r$/\1/p' "$WORK/bundle.h")

# Server CPU per request, from /proc: independent of how busy the machine
# is, unlike req/s; "cap" is what the server alone could do on all cores.
TCK=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
measure() { # measure <pid> <loadgen args...>; leaves req/s and server CPU us/req in RPS and US
  local pid=$1; shift
  local before out after
  before=$(ticks "$pid")
  out=$("$WORK/loadgen" -json "$@")
  after=$(ticks "$pid")
  RPS=$(echo "$out" | sed 's/.*"rps":\([0-9.]*\).*/\1/')
  US=$(echo "$out" | awk -v t=$((after - before)) -v tck="$TCK" '{ n = $0; sub(/.*"requests":/, "", n); sub(/,.*/, "", n); printf "%.1f", t / tck * 1e6 / n }')
  echo "$out" | awk -v t=$((after - before)) -v tck="$TCK" -v cores="$(nproc)" '
    { match($0, /"name":"[^"]*"/); name = substr($0, RSTART + 8, RLENGTH - 9)
      n = $0; sub(/.*"requests":/, "", n); sub(/,.*/, "", n)
      e = $0; sub(/.*"errors":/, "", e); sub(/,.*/, "", e)
      r = $0; sub(/.*"rps":/, "", r); sub(/,.*/, "", r)
      p50 = $0; sub(/.*"p50_ms":/, "", p50); sub(/,.*/, "", p50)
      p99 = $0; sub(/.*"p99_ms":/, "", p99); sub(/,.*/, "", p99)
      us = t / tck * 1e6 / n
      printf "%-28s %8d req %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d  server CPU %5.1f us/req (cap %6.0f req/s on %d cores)\n", name, n, r, p50, p99, e, us, cores * 1e6 / us, cores }'
}

echo "# wharf API server on $(nproc) cores, $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg) before the run; N=$N, duration cap $DURATION, $CONC connections"
echo "# bundle: $(wc -c <"$WORK/bundle.tar.gz") bytes, ETag $ETAG"
measure "$SERVER_PID" -name "search (wharf-server)" -url "$URL/v1/plugins?q=deploy" -token "$AGENT" -n "$N" -d "$DURATION" -c "$CONC"
measure "$SERVER_PID" -name "bundle 304 (wharf-server)" -url "$URL/v1/policy/bundle" -token "$AGENT" -H "If-None-Match: $ETAG" -expect 304 -n "$N" -d "$DURATION" -c "$CONC"
W304_RPS=$RPS W304_US=$US
measure "$SERVER_PID" -name "bundle 200 (wharf-server)" -url "$URL/v1/policy/bundle" -token "$AGENT" -n "$((N / 4))" -d "$DURATION" -c "$CONC"

# Baseline 1: a static bundle server (net/http, ETag) with the same bundle.
"$WORK/staticbundle" -file "$WORK/bundle.tar.gz" >"$WORK/static.addr" &
STATIC_PID=$!
for _ in $(seq 100); do [ -s "$WORK/static.addr" ] && break; sleep 0.05; done
SETAG=$(curl -sf -D - -o /dev/null "http://$(cat "$WORK/static.addr")/bundle.tar.gz" | sed -n 's/^[Ee][Tt]ag: *\(.*\)\r$/\1/p')
measure "$STATIC_PID" -name "bundle 304 (static net/http)" -url "http://$(cat "$WORK/static.addr")/bundle.tar.gz" -H "If-None-Match: $SETAG" -expect 304 -n "$N" -d "$DURATION" -c "$CONC"
awk -v w="$W304_RPS" -v s="$RPS" -v wu="$W304_US" -v su="$US" 'BEGIN { printf "%-28s wharf/static: %.3f of the req/s, %.2fx the server CPU per request\n", "bundle 304", w / s, wu / su }'
kill "$STATIC_PID" && wait "$STATIC_PID" 2>/dev/null || true
# The same static server with wharf-server's HTTP server timeouts, sent the
# same request (bearer token included): what net/http itself costs for the
# limits every wharf request has, to tell it apart from wharf's own work.
"$WORK/staticbundle" -timeouts -file "$WORK/bundle.tar.gz" >"$WORK/static.addr" &
STATIC_PID=$!
for _ in $(seq 100); do [ -s "$WORK/static.addr" ] && break; sleep 0.05; done
measure "$STATIC_PID" -name "bundle 304 (static+timeouts)" -url "http://$(cat "$WORK/static.addr")/bundle.tar.gz" -token "$AGENT" -H "If-None-Match: $SETAG" -expect 304 -n "$N" -d "$DURATION" -c "$CONC"
awk -v w="$W304_RPS" -v s="$RPS" -v wu="$W304_US" -v su="$US" 'BEGIN { printf "%-28s wharf/(static+timeouts): %.3f of the req/s, %.2fx the server CPU per request\n", "bundle 304", w / s, wu / su }'

# Baseline 2: the CLI, one process per search, over the same marketplace.
export WHARF_HOME="$WORK/cli-home"
"$WORK/wharf" marketplace add "$ROOT/testdata/demo-marketplace" >/dev/null
RUNS=100
start=$(date +%s%N)
for _ in $(seq $RUNS); do "$WORK/wharf" search deploy >/dev/null; done
end=$(date +%s%N)
awk -v n=$RUNS -v ns=$((end - start)) 'BEGIN { ms = ns / 1e6 / n; printf "%-28s %8d req %6.2fs %9.0f req/s  mean %6.2f ms per search (one process each, sequential)\n", "search (wharf search CLI)", n, ns / 1e9, 1000 / ms, ms }'
