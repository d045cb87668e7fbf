#!/bin/sh
# Dies by a signal, as a crashing program would.
cat >/dev/null
echo "about to crash" >&2
kill -SEGV $$
