#!/bin/sh
# Time computing the capability set and content findings of every plugin of
# a 295-plugin marketplace (built by cycling through the plugins of the real
# marketplaces in ../shared/realworld, each with its entry) against just
# reading every file of it, interleaved in one run, warm page cache. Also
# shows plugin.Load alone, which the capability set starts from.
#
# usage: bench/capability.sh [runs]     (default 15)
# WHARF_REALWORLD=<dir> reads the real marketplaces from elsewhere.
set -eu
runs=${1:-15}
cd "$(dirname "$0")/.."
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)"
go run ./bench/capabilitybench -realworld "${WHARF_REALWORLD:-../shared/realworld}" -runs "$runs"
