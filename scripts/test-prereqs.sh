#!/usr/bin/env bash
# Makes sure a fresh machine can run the tests: rustfmt, clippy and cargo-deny, moto's SQS server in a
# project-local virtualenv, sqlite3, headless Chromium and its WebDriver, and PostgreSQL server
# binaries for the throwaway test cluster (unless DATABASE_URL names a server to use).
set -euo pipefail

if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add rustfmt clippy
fi

have_pg_binaries() {
  local dir
  dir=$(pg_config --bindir 2>/dev/null || true)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && return 0
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && return 0
  command -v initdb >/dev/null && command -v pg_ctl >/dev/null
}

# `make lint` checks the dependency tree's licenses, bans and sources with cargo-deny, at an
# exact version (built from crates.io: its release binaries are on GitHub, which CI may not reach).
deny_version=0.20.2
if [ "$(cargo deny --version 2>/dev/null)" != "cargo-deny $deny_version" ]; then
  echo "test-prereqs: installing cargo-deny $deny_version (make lint checks the dependency tree)"
  cargo install --quiet --locked "cargo-deny@$deny_version"
fi

# The SQS API for tests: moto's server, in a project-local virtualenv (never the system's).
venv=.venv
if [ ! -x "$venv/bin/moto_server" ]; then
  echo "test-prereqs: installing moto[server] into $venv (the SQS API the tests talk to)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]>=5,<6"
fi

# The backup tests run the documented commands: sqlite3's online backup, pg_dump/pg_restore.
if ! command -v sqlite3 >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "test-prereqs: installing sqlite3 (the backup tests use its online backup)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >/dev/null
fi

# The clock-jump test runs jadpo-local under libfaketime (its wall clock moved by a file).
if ! ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 && [ "$(id -u)" = 0 ] \
  && command -v apt-get >/dev/null; then
  echo "test-prereqs: installing libfaketime (the clock-jump test moves jadpo-local's wall clock)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfaketime >/dev/null
fi

# The docs test runs the README's and docs/http.md's curl examples literally.
if ! command -v curl >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "test-prereqs: installing curl (the docs' examples are curl commands)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null
fi

# The browser test drives the local sign-in page (passkeys included) in headless Chromium over
# WebDriver: Debian's chromium and chromium-driver.
if ! { command -v chromium && command -v chromedriver; } >/dev/null \
  && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "test-prereqs: installing chromium and chromium-driver (the browser test drives them)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi

if [ -n "${DATABASE_URL:-}" ] || have_pg_binaries; then
  exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "test-prereqs: installing PostgreSQL server binaries (apt-get install postgresql)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  exit 0
fi

echo "test-prereqs: the tests need PostgreSQL: set DATABASE_URL, run a Docker engine, or install" >&2
echo "the PostgreSQL server binaries (Debian: sudo apt-get install postgresql)." >&2
exit 1
