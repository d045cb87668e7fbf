#!/usr/bin/env bash
# bench/inventory-flood.sh — one agent token floods the fleet inventory of a
# real wharf-server (bbolt store, 127.0.0.1) for DURATION: half the workers
# invent a new machine id per report (PLUGINS_PER_REPORT new plugin ids
# each), half report one machine with 2000 new plugin ids every time, the
# most one report may list (bench/inventoryflood). The token is created as an
# admin creates an agent token (no quota given: one machine). It prints:
#   - the store file's bytes and the server's RSS before and after the flood;
#   - the reports sent and the server's answers by status;
#   - GET /v1/inventory/plugins afterwards (the first page, then every page):
#     time and bytes, and the plugins the fleet holds.
# Usage: bench/inventory-flood.sh [DURATION] [WORKERS] [PLUGINS_PER_REPORT]
set -euo pipefail
DURATION=${1:-60s}
CONC=${2:-8}
PLUGINS=${3:-75}
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

go build -o "$WORK/wharf-server" ./cmd/wharf-server
go build -o "$WORK/inventoryflood" ./bench/inventoryflood

ADMIN="bench-admin-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export WHARF_HOME="$WORK/home"
# The server as it ships: default rate limits and quotas.
WHARF_BOOTSTRAP_TOKEN="$ADMIN" "$WORK/wharf-server" --json --addr 127.0.0.1:0 --data "$WORK/data" \
  --demo "$ROOT/testdata/demo-marketplace" --log-level warn >"$WORK/serve.json" 2>"$WORK/serve.log" &
SERVER_PID=$!
for _ in $(seq 200); do [ -s "$WORK/serve.json" ] && break; sleep 0.05; done
URL=$(sed -n 's/.*"url": "\(http[^"]*\)".*/\1/p' "$WORK/serve.json")
[ -n "$URL" ] || { echo "server did not start:"; cat "$WORK/serve.log"; exit 1; }
AGENT=$(curl -sf -X POST "$URL/v1/tokens" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
  -d '{"role":"agent","note":"inventory flood"}' | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
[ -n "$AGENT" ] || { echo "could not create the agent token"; exit 1; }

DB="$WORK/data/server.db"
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status"; }
db_bytes() { stat -c %s "$DB"; }

echo "# inventory flood on $(nproc) cores, $(go version | cut -d' ' -f3): one agent token, $CONC workers, $DURATION, $PLUGINS new plugin ids per report"
printf '{"phase":"before","store_bytes":%d,"server_rss_kb":%d}\n' "$(db_bytes)" "$(rss_kb)"
"$WORK/inventoryflood" -url "$URL" -token "$AGENT" -duration "$DURATION" -c "$CONC" -plugins "$PLUGINS"
printf '{"phase":"after","store_bytes":%d,"server_rss_kb":%d}\n' "$(db_bytes)" "$(rss_kb)"

# Reads afterwards, as an admin would make them.
first=$(curl -sf -o "$WORK/page.json" -w '%{time_total} %{size_download}' -H "Authorization: Bearer $ADMIN" "$URL/v1/inventory/plugins")
read -r t b <<<"$first"
printf '{"phase":"read","route":"GET /v1/inventory/plugins","seconds":%s,"bytes":%s}\n' "$t" "$b"
pages=0 total_t=0 total_b=0 plugins=0 cursor=""
while :; do
  q=""
  [ -n "$cursor" ] && q="?limit=1000&cursor=$cursor" || q="?limit=1000"
  out=$(curl -sf -o "$WORK/page.json" -w '%{time_total} %{size_download}' -H "Authorization: Bearer $ADMIN" "$URL/v1/inventory/plugins$q")
  read -r t b <<<"$out"
  pages=$((pages + 1))
  total_t=$(awk -v a="$total_t" -v b="$t" 'BEGIN { print a + b }')
  total_b=$((total_b + b))
  plugins=$((plugins + $(grep -o '"plugin":' "$WORK/page.json" | wc -l)))
  cursor=$(sed -n 's/.*"next":"\([^"]*\)".*/\1/p' "$WORK/page.json")
  [ -z "$cursor" ] && break
done
printf '{"phase":"read","route":"GET /v1/inventory/plugins?limit=1000, every page","pages":%d,"plugins":%d,"seconds":%s,"bytes":%d}\n' \
  "$pages" "$plugins" "$total_t" "$total_b"
printf '{"phase":"end","store_bytes":%d,"server_rss_kb":%d}\n' "$(db_bytes)" "$(rss_kb)"
