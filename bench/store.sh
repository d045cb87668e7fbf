#!/bin/sh
# Time wharf's store transactions against what a Go program talking to etcd
# would use instead (etcd's own concurrency.NewSTM), in the same run, on the
# same embedded single-member etcd (127.0.0.1, data in a temp dir, fsync off:
# a test cluster), plus the bbolt backend (fsync on) for scale. Each op is a
# read-modify-write increment; "contended" runs 4 goroutines per core on one
# key, so most attempts conflict and run again.
#
# usage: bench/store.sh [ops]     (default 300 ops per benchmark, 3 runs each)
set -eu
ops=${1:-300}
cd "$(dirname "$0")/.."
echo "$(nproc) cores; $ops ops per benchmark"
go test ./internal/server/etcdstore/ -run '^$' -bench 'Counter' -benchtime "${ops}x" -count 3
