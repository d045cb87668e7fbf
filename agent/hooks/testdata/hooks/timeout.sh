#!/bin/sh
# Starts a grandchild, records its pid, then hangs past any timeout.
cat >/dev/null
sleep 300 &
echo $! > "${HOOK_PIDFILE:-/dev/null}"
sleep 300
