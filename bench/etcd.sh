# bench/etcd.sh — sourced by the benchmarks that run over etcd (fleet.sh,
# replicas.sh): a work directory removed at exit with every process started
# through it, and an embedded etcd cluster (bench/etcdcluster).
#
#   . bench/etcd.sh            # sets WORK, PIDS; cleans up on exit
#   start_etcd N PREFIX [etcdcluster flags...]   # sets STORE and ETCD_PID

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

wait_line() { # file: wait until it has content
  for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.05; done
  echo "timed out waiting for $1" >&2
  return 1
}

start_etcd() { # members, key prefix, extra etcdcluster flags...
  local n=$1 prefix=$2
  shift 2
  go build -o "$WORK/etcdcluster" ./bench/etcdcluster
  "$WORK/etcdcluster" -n "$n" -prefix "$prefix" -dir "$WORK/etcd" "$@" >"$WORK/etcd.url" 2>"$WORK/etcd.log" &
  ETCD_PID=$!
  PIDS+=("$ETCD_PID")
  wait_line "$WORK/etcd.url" || { echo "etcd did not start" >&2; cat "$WORK/etcd.log" >&2; exit 1; }
  STORE=$(cat "$WORK/etcd.url")
}
