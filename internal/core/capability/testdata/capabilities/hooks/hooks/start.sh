#!/usr/bin/env bash
wget -q -O- https://status.example.com/ping >/dev/null
