#!/usr/bin/env bash
# Runs a command with DATABASE_URL naming one PostgreSQL server for the whole run, so that the
# test processes share it (each test still makes a database of its own from a migrated template)
# instead of each starting a cluster.
#
# - DATABASE_URL already set: that server, untouched.
# - Else the local PostgreSQL server binaries (initdb, pg_ctl; `make prereqs` installs them as
#   root): a throwaway cluster in a temporary folder, run as the `postgres` user when we are
#   root (initdb refuses root), with durability off (tests, not data), stopped and deleted when
#   the command ends, however it ends.
# - Else nothing is started and DATABASE_URL stays unset: the test harness then tries a Docker
#   engine (testcontainers) per test process, and fails saying what it tried.
#
# Usage: scripts/with-postgres.sh COMMAND [ARG...]
set -euo pipefail

if [ -n "${DATABASE_URL:-}" ]; then
  echo "with-postgres: using DATABASE_URL's server" >&2
  exec "$@"
fi

bindir() {
  local dir
  dir=$(pg_config --bindir 2>/dev/null || true)
  if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return; fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return; fi
  done
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(command -v initdb)"
  fi
}

bin=$(bindir)
if [ -z "$bin" ]; then
  echo "with-postgres: no DATABASE_URL and no PostgreSQL server binaries (initdb, pg_ctl):" >&2
  echo "  the tests will try a Docker engine, else fail saying what they need" >&2
  exec "$@"
fi

# Run a PostgreSQL binary as the server's user: `postgres` when we are root.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/jadpo-test-pg.XXXXXX")
chmod 755 "$dir"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
stop() {
  as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; echo "with-postgres: initdb failed" >&2; exit 1; }

# Room for every test process at once: each test's pools and the crash loops' second engines.
options="-c listen_addresses=127.0.0.1 -k $dir -c fsync=off -c synchronous_commit=off \
-c full_page_writes=off -c max_connections=1000 -c shared_buffers=256MB"
started=
for _ in 1 2 3; do
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  if as_pg "$bin/pg_ctl" -D "$dir/data" -o "-p $port $options" -w -t 60 -l "$dir/server.log" start >/dev/null; then
    started=1
    break
  fi
done
if [ -z "$started" ]; then
  cat "$dir/server.log" >&2 || true
  echo "with-postgres: the throwaway cluster did not start" >&2
  exit 1
fi

export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
echo "with-postgres: one throwaway cluster for this run at $DATABASE_URL ($dir)" >&2
status=0
"$@" || status=$?
exit "$status"
