#!/usr/bin/env bash
# The dependency advisory check (cargo-deny against RustSec's advisory database), run by `make lint`
# (so in CI) and by `make audit`. The database is fetched from GitHub: where this machine cannot
# reach it, `make lint` says so plainly and goes on (nothing was checked); `make audit`, asked for
# the check itself, fails.
#   scripts/audit.sh [--required]
set -uo pipefail
required=${1:-}
cargo=${CARGO:-cargo}
if ! "$cargo" deny --version >/dev/null 2>&1; then
  echo "cargo-deny is missing: run make prereqs" >&2
  exit 1
fi
if ! curl -sS -o /dev/null --max-time 10 https://github.com/rustsec/advisory-db 2>/dev/null; then
  echo "ADVISORIES NOT CHECKED: RustSec's advisory database (github.com/rustsec/advisory-db) cannot be reached from this machine, so no known vulnerability was looked for; run \`make audit\` where GitHub answers" >&2
  [ "$required" = "--required" ] && exit 1
  exit 0
fi
if ! "$cargo" deny check advisories; then
  echo "the advisory check failed: the lines above name each advisory (or why the database could not be read)" >&2
  exit 1
fi
echo "advisories: no known vulnerability in the dependency tree"
