#!/bin/sh
# Blocks with a JSON decision on stdout.
cat >/dev/null
echo '{"decision":"block","reason":"json policy says no"}'
