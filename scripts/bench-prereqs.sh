#!/usr/bin/env bash
# What `make bench` needs beyond the tests' prerequisites: wrk, the HTTP load generator that
# scripts/bench-local.py drives the local process with, and curl.
set -euo pipefail

missing=()
for tool in wrk curl; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "bench-prereqs: installing ${missing[*]} (the local HTTP benchmark's load generator)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "bench-prereqs: make bench needs ${missing[*]} (Debian: sudo apt-get install ${missing[*]})" >&2
exit 1
