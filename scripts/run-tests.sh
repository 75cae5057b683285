#!/usr/bin/env bash
# Runs the workspace's tests: with cargo-nextest when it is installed (each test in a process of
# its own, several at once: .config/nextest.toml), else with `cargo test`. The caller gives the
# PostgreSQL server (scripts/with-postgres.sh sets DATABASE_URL).
#
# Usage: scripts/run-tests.sh [all|soak]
#   all   every test of the workspace (what `make test` runs; the default)
#   soak  the crash loops at their long counts, the real process's outages and crash points, and
#         SQLite's group commit under kills (what `make soak` runs, with JADPO_SOAK=1)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}

nextest() { cargo nextest --version >/dev/null 2>&1; }

case "$what" in
  all)
    if nextest; then
      exec cargo nextest run --workspace
    fi
    echo "run-tests: cargo-nextest is not installed; running cargo test (slower: one test binary at a time)" >&2
    exec cargo test --workspace
    ;;
  soak)
    export JADPO_SOAK=1
    if nextest; then
      # Side by side as in `make test`; each test's output (its loop's tally) as it ends.
      exec cargo nextest run --workspace --profile soak --success-output immediate -E \
        'binary(faults) | test(/group_commit_crash::/) | test(/outages::/)'
    fi
    cargo test -p jadpo-engine --test faults -- --nocapture --test-threads 1
    cargo test -p jadpo-local --test faults -- --nocapture --test-threads 1
    cargo test -p jadpo-local --test local outages:: -- --nocapture
    cargo test -p jadpo-store-sqlite --test sqlite group_commit_crash:: -- --nocapture
    ;;
  *)
    echo "usage: scripts/run-tests.sh [all|soak]" >&2
    exit 2
    ;;
esac
