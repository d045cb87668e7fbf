#!/usr/bin/env bash
# bench/fleet.sh — the fleet inventory at scale: MACHINES simulated machines,
# PLUGINS plugins each, report to 3 wharf API replicas over one etcd cluster
# (bench/etcdcluster, embedded members, fsync on) on this box, over real
# HTTP on 127.0.0.1 (bench/fleetbench runs the replicas in one process, each
# with its own etcd client and listener). It prints:
#   - first reports (every machine new): reports/s, p50/p99;
#   - unchanged reports, each through another replica than before, in 3
#     rounds: reports/s, p99, and the etcd revisions they caused, which are
#     all last-seen times persisted (at most one per machine per 5 minutes:
#     seen_writes); 0 once every machine's was persisted recently;
#   - "who has X" for a plugin on a fixed NEEDLE machines, at each fleet size
#     in CHECKPOINTS (target: 100k within 1.5x of 10k: the query reads X's
#     machines only);
#   - store bytes per machine (logical, and etcd's database after
#     compaction and defragmentation);
#   - CPU time per report (the replicas, the clients and etcd together),
#     which depends less than wall-clock figures on what else runs.
# Everything shares the machine's cores: read the figures as this box's.
# Usage: bench/fleet.sh [MACHINES] [PLUGINS] [ETCD_MEMBERS] [CONCURRENCY] [CHECKPOINTS] [ROUNDS]
set -euo pipefail
MACHINES=${1:-100000}
PLUGINS=${2:-20}
MEMBERS=${3:-3}
CONC=${4:-32}
CHECKPOINTS=${5:-$((MACHINES / 10)),$MACHINES}
ROUNDS=${6:-3}
cd "$(dirname "$0")/.."
. bench/etcd.sh

go build -o "$WORK/fleetbench" ./bench/fleetbench
# As in production, etcd compacts its history as it goes (100,000 machines x
# 20 plugins is over 1 GiB of live data; uncompacted history would pass
# etcd's default 2 GiB quota), and the quota is etcd's suggested maximum.
start_etcd "$MEMBERS" /wharf-fleet -auto-compact 1m -quota $((8 << 30))

echo "# fleet inventory on $(nproc) cores, $(go version | cut -d' ' -f3): $MACHINES machines x $PLUGINS plugins, 3 replicas, $MEMBERS etcd member(s), $CONC clients"
"$WORK/fleetbench" -store "$STORE" -machines "$MACHINES" -plugins "$PLUGINS" -c "$CONC" -checkpoints "$CHECKPOINTS" -rounds "$ROUNDS" -etcd-pid "$ETCD_PID"
