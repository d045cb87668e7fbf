#!/usr/bin/env bash
# bench/jepsen.sh — wharf's fault test (bench/jepsen): 3 etcd members, each
# its own process behind TCP proxies, and 3 wharf-server replicas on
# 127.0.0.1, a workload of If-Match layer writes, reads, tokens,
# revocations and inventory reports, and one fault after another (kill a
# follower, kill the leader, SIGSTOP a follower, SIGSTOP the leader, cut the
# leader off, kill a replica). It prints a table per fault — how long writes
# stopped, 5xx answers, recovery, how long a deleted token and an old bundle
# stayed in use — and the history checks (lost writes, layer sequences,
# porcupine linearizability, bundle revisions, audit). Exit status 1 when
# a check fails. Usage: bench/jepsen.sh [jepsen flags...], e.g.
# bench/jepsen.sh -hold 10s -clients 12 -faults pause-leader,partition-leader
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
go build -o "$WORK/wharf-server" ./cmd/wharf-server
go build -o "$WORK/jepsen" ./bench/jepsen
"$WORK/jepsen" -server "$WORK/wharf-server" -log "$WORK/processes.log" "$@" || {
  rc=$?
  echo "last lines of the members' and replicas' logs:" >&2
  tail -n 40 "$WORK/processes.log" >&2 || true
  exit $rc
}
