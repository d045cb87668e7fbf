#!/bin/sh
cat >/dev/null
echo '{"decision": "block", '
