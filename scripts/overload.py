#!/usr/bin/env python3
"""Sustained load on the release `jadpo-local`, as a user would put it there, then the tally.

    scripts/overload.py [--seconds 600] [--connections 8] [--postgres URL] [--env NAME=VALUE ...]

Builds `jadpo-local` (release), starts it in a fresh folder (SQLite files under its `.jadpo/`,
or two fresh databases on the PostgreSQL server at URL), drives it with `wrk` and
`scripts/load-pay.lua` (orders placed, each paid), stops the load, waits for every delivery to
finish, stops the process and prints: requests answered by status, orders, reservations and
payments (each order must have exactly its reservations and at most one payment written and
charged once), deliveries by status, deliveries attempted more than once, what the relay re-sent,
the time the backlog took to drain, and the process's peak RSS. Exits non-zero when something
was lost or repeated. Needs `wrk` (apt-get install wrk) and, for PostgreSQL, `psql`.
"""

import argparse
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Databases:
    """Reads the two stores' tables, on SQLite files or PostgreSQL databases."""

    def __init__(self, folder, pg_url):
        self.folder, self.pg_url, self.names = folder, pg_url, {}
        if pg_url:
            stamp = int(time.time())
            for store in ("main", "warehouse"):
                name = f"jadpo_overload_{store}_{stamp}"
                self.psql(pg_url, f"CREATE DATABASE {name}")
                self.names[store] = name

    @staticmethod
    def psql(url, sql):
        out = subprocess.run(
            ["psql", url, "-At", "-F", "\t", "-c", sql], check=True, capture_output=True, text=True
        )
        return [line.split("\t") for line in out.stdout.splitlines() if line]

    def url(self, store):
        if not self.pg_url:
            return None
        base = self.pg_url.rsplit("/", 1)[0]
        return f"{base}/{self.names[store]}"

    def rows(self, store, sql):
        if self.pg_url:
            return self.psql(self.url(store), sql)
        path = os.path.join(self.folder, ".jadpo", f"{store}.db")
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as db:
            return [[str(v) for v in row] for row in db.execute(sql).fetchall()]

    def one(self, store, sql):
        return int(self.rows(store, sql)[0][0])

    def drop(self):
        for name in self.names.values():
            self.psql(self.pg_url, f"DROP DATABASE IF EXISTS {name}")


# The process under test; a comparison script may point it at another build.
BINARY = os.path.join(ROOT, "target", "release", "jadpo-local")


def start(folder, port, pg, extra_env):
    env = dict(os.environ, JADPO_LISTEN=f"127.0.0.1:{port}", RUST_LOG="info")
    env.update(extra_env)
    if pg.pg_url:
        env["DATABASE_URL"] = pg.url("main")
        env["DATABASE_URL_WAREHOUSE"] = pg.url("warehouse")
    log = open(os.path.join(folder, "jadpo-local.log"), "w")
    proc = subprocess.Popen([BINARY], cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        text = open(log.name).read()
        key = re.search(r"jadpo_sk_[0-9a-zA-Z_]+", text)
        if key and f"127.0.0.1:{port}" in text:
            return proc, key.group(0), log.name
        if proc.poll() is not None:
            sys.exit(f"jadpo-local exited at start:\n{text}")
        time.sleep(0.2)
    sys.exit("jadpo-local printed no service key within 60 s")


def memory_mb(pid):
    """Peak RSS, and the RSS now split into anonymous and file-backed pages (MB)."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmHWM", "RssAnon", "RssFile", "RssShmem"):
                fields[name] = int(value.split()[0]) / 1024
    return fields


def load(port, key, seconds, connections, pay=True):
    """`wrk` with scripts/load-pay.lua (orders only when not `pay`); returns its report."""
    script = os.path.join(ROOT, "scripts", "load-pay.lua")
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", script,
         f"http://127.0.0.1:{port}"],
        env=dict(os.environ, KEY=key, PAY="1" if pay else "0"), capture_output=True, text=True,
        check=True,
    ).stdout
    return out


def drain(dbs, limit):
    """The deliveries pending now, and the seconds until none were (at most `limit`)."""
    pending = "SELECT count(*) FROM jadpo_deliveries WHERE status = 'pending'"
    at_stop = dbs.one("main", pending)
    began = time.time()
    while dbs.one("main", pending) > 0 and time.time() - began < limit:
        time.sleep(0.5)
    return at_stop, time.time() - began


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--seconds", type=int, default=600)
    args.add_argument("--connections", type=int, default=8)
    args.add_argument("--postgres", metavar="URL", help="e.g. postgres://postgres@127.0.0.1:5432/postgres")
    args.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    a = args.parse_args()
    import shutil

    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: apt-get install wrk")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "jadpo-local"], cwd=ROOT, check=True)
    folder = tempfile.mkdtemp(prefix="jadpo-overload-")
    dbs = Databases(folder, a.postgres)
    port = free_port()
    extra = dict(e.split("=", 1) for e in a.env)
    proc, key, log = start(folder, port, dbs, extra)
    print(f"jadpo-local in {folder} on port {port} ({'PostgreSQL' if a.postgres else 'SQLite'}), "
          f"wrk -c{a.connections} for {a.seconds} s", flush=True)
    began = time.time()
    report = load(port, key, a.seconds, a.connections)
    loaded = time.time() - began
    left_at_stop, drained = drain(dbs, 1800)
    sink = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/sink/payments"))
    rss = memory_mb(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    tally(dbs, report, loaded, left_at_stop, drained, sink, rss, log)
    if a.postgres:
        dbs.drop()


def tally(dbs, report, loaded, left_at_stop, drained, sink, rss, log):
    statuses = re.findall(r"Non-2xx or 3xx responses: (\d+)", report)
    total = re.search(r"(\d+) requests in", report)
    latency = {q: re.search(rf"\s{q}%\s+(\S+)", report) for q in ("50", "99")}
    orders = dbs.one("main", "SELECT count(*) FROM shop_orders")
    reserved = dbs.rows("warehouse", "SELECT count(DISTINCT order_id), count(*) FROM shop_reservations")
    paid = dbs.rows("main", "SELECT count(DISTINCT order_id), count(*) FROM shop_payments")
    by_status = dbs.rows("main", "SELECT status, count(*) FROM jadpo_deliveries GROUP BY status ORDER BY 1")
    retried = dbs.one("main", "SELECT count(*) FROM jadpo_deliveries WHERE attempts > 1")
    deliveries = sum(int(n) for _, n in by_status)
    charges, keys = sink["total"], sink["keys"]
    text = open(log).read()
    resent = sum(int(n) for n in re.findall(r"resent=(\d+)", text))
    answered = int(total.group(1)) if total else 0
    refused = int(statuses[0]) if statuses else 0
    print(f"requests: {answered} in {loaded:.0f} s ({answered / loaded:.0f}/s), non-2xx {refused}, "
          f"p50 {latency['50'].group(1) if latency['50'] else '?'}, p99 {latency['99'].group(1) if latency['99'] else '?'}")
    print(f"orders {orders}; reserved for {reserved[0][0]} orders in {reserved[0][1]} rows; "
          f"payments written {paid[0][1]} for {paid[0][0]} orders; charges {charges} under {keys} keys")
    print(f"deliveries {deliveries}: {dict((s, int(n)) for s, n in by_status)}; attempted more than once {retried}")
    print(f"pending when the load stopped {left_at_stop}; drained in {drained:.0f} s; "
          f"relay re-sent {resent} ({100 * resent / max(deliveries, 1):.2f}% of deliveries)")
    print(f"peak RSS {rss.get('VmHWM', float('nan')):.1f} MB; at the end anonymous "
          f"{rss.get('RssAnon', float('nan')):.1f} MB, files {rss.get('RssFile', float('nan')):.1f} MB, "
          f"shared {rss.get('RssShmem', float('nan')):.1f} MB")
    problems = []
    if int(reserved[0][0]) != orders or int(reserved[0][1]) != orders:
        problems.append("reservations do not match orders one to one")
    if paid[0][0] != paid[0][1]:
        problems.append("an order's payment was written twice")
    if keys != int(paid[0][1]):
        problems.append("charges under a key with no payment written, or a payment never charged")
    if any(s != "handled" for s, _ in by_status):
        problems.append("deliveries left unhandled")
    for p in problems:
        print(f"PROBLEM: {p}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
