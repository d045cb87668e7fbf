#!/bin/sh
# Reads the event and lets the call go on.
cat >/dev/null
exit 0
