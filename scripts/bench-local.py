#!/usr/bin/env python3
"""The local default under HTTP load, against a plain SQLite ceiling (part of `make bench`).

    scripts/bench-local.py [--seconds 20] [--rounds 2] [--connections 8]

Builds the release `jadpo-local` and, interleaved, ROUNDS times:

* **ceiling**: one Python writer on a copy of the shop's `main.db` schema (its triggers
  included), WAL and `synchronous=FULL`, committing for SECONDS the rows a `place_order` commit
  writes, one transaction each (the idempotency record claimed and its response stored, the
  order, the outbox row, a delivery per subscriber of `order.placed`): transactions/s;
* **HTTP**: the release `jadpo-local` on SQLite in a fresh folder, `wrk -t2 -cCONNECTIONS` placing
  orders (`scripts/load-pay.lua` with `PAY=0`, each request with its own Idempotency-Key) for
  SECONDS: orders/s answered 201, latency, the deliveries still pending when the load stopped and
  how long they took to drain, and the process's peak RSS. Every order must end with its
  reservation and every delivery handled, or the run fails.

Writes `target/bench/local.md`. Needs `wrk` (`make bench` installs it when run as root).
"""

import argparse
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overload  # noqa: E402  (the same start, RSS reading and tally helpers)

ROOT = overload.ROOT


class Sqlite:
    """The SQLite files of one local run (the `overload.Databases` interface, SQLite only)."""

    pg_url = None

    def __init__(self, folder):
        self.folder = folder

    def path(self, store):
        return os.path.join(self.folder, ".jadpo", f"{store}.db")

    def one(self, store, sql):
        with sqlite3.connect(f"file:{self.path(store)}?mode=ro", uri=True, timeout=30) as db:
            return int(db.execute(sql).fetchone()[0])


def schema_template():
    """Starts the release process once in a fresh folder; returns its `main.db` schema (DDL) and
    the subscribers of `order.placed`, read from the deliveries of one order placed through it."""
    folder = tempfile.mkdtemp(prefix="jadpo-bench-local-schema-")
    port = overload.free_port()
    proc, key, _ = overload.start(folder, port, Sqlite(folder), {})
    try:
        out = subprocess.run(
            ["curl", "-s", "-X", "POST", f"http://127.0.0.1:{port}/actions/place_order",
             "-H", f"Authorization: Bearer {key}", "-H", "Content-Type: application/json",
             "-d", '{"customer": "c1", "items": [{"sku": "A", "qty": 1}]}'],
            capture_output=True, text=True, check=True)
        if "order_id" not in out.stdout:
            sys.exit(f"bench-local: place_order answered {out.stdout!r}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    with sqlite3.connect(os.path.join(folder, ".jadpo", "main.db")) as db:
        ddl = [r[0] for r in db.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
            "ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END")]
        subscribers = [r[0] for r in db.execute("SELECT subscriber FROM jadpo_deliveries")]
    shutil.rmtree(folder, ignore_errors=True)
    return ddl, subscribers


def ceiling(ddl, subscribers, seconds):
    """Transactions/s of one writer committing a place_order's rows, WAL, synchronous=FULL."""
    folder = tempfile.mkdtemp(prefix="jadpo-bench-local-ceiling-")
    db = sqlite3.connect(os.path.join(folder, "main.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    for statement in ddl:
        db.execute(statement)
    items = '[{"sku":"A","qty":1}]'
    n, stop = 0, time.monotonic() + seconds
    start = time.monotonic()
    while time.monotonic() < stop:
        now = int(time.time() * 1000)
        key, order, event = f"k{n}", str(uuid.uuid4()), str(uuid.uuid4())
        db.execute("BEGIN IMMEDIATE")
        db.execute("DELETE FROM jadpo_idempotency_keys WHERE scope = ? AND key = ? AND expires_at <= ?",
                   ("service:shop", key, now))
        db.execute("INSERT INTO jadpo_idempotency_keys (scope, key, request_digest, response_status, "
                   "response_body, created_at, expires_at) VALUES (?, ?, ?, 0, '', ?, ?) "
                   "ON CONFLICT (scope, key) DO NOTHING", ("service:shop", key, "d" * 64, now, now + 86_400_000))
        db.execute("INSERT INTO shop_orders (id, customer, items, created_at) VALUES (?, ?, ?, ?)",
                   (order, "c1", items, now))
        db.execute("INSERT INTO jadpo_outbox (id, event_type, payload, encoding, traceparent, tracestate, "
                   "chain_depth, source, request_id, created_at) VALUES (?, ?, ?, 1, NULL, NULL, 0, ?, ?, ?)",
                   (event, "order.placed", f'{{"order_id":"{order}","customer":"c1","items":{items}}}',
                    "place_order", str(n), now))
        for s in subscribers:
            db.execute("INSERT INTO jadpo_deliveries (id, outbox_id, subscriber, next_attempt_at, created_at) "
                       "VALUES (?, ?, ?, ?, ?)", (str(uuid.uuid4()), event, s, now, now))
        db.execute("UPDATE jadpo_idempotency_keys SET response_status = 201, response_body = ? "
                   "WHERE scope = ? AND key = ?", (f'{{"order_id":"{order}"}}', "service:shop", key))
        db.execute("COMMIT")
        n += 1
    rate = n / (time.monotonic() - start)
    db.close()
    shutil.rmtree(folder, ignore_errors=True)
    return rate


def http(seconds, connections):
    """One HTTP run on a fresh folder; returns its figures."""
    folder = tempfile.mkdtemp(prefix="jadpo-bench-local-")
    dbs = Sqlite(folder)
    port = overload.free_port()
    proc, key, _ = overload.start(folder, port, dbs, {})
    began = time.monotonic()
    report = overload.load(port, key, seconds, connections, pay=False)
    loaded = time.monotonic() - began
    stopped = time.monotonic()
    at_stop = dbs.one("main", "SELECT count(*) FROM jadpo_deliveries WHERE status = 'pending'")
    time.sleep(max(0.0, stopped + 5 - time.monotonic()))
    made = dbs.one("main", "SELECT count(*) FROM jadpo_deliveries")
    handled_5s = dbs.one("main", "SELECT count(*) FROM jadpo_deliveries WHERE status = 'handled'")
    _, drained = overload.drain(dbs, 600)
    drained += 5
    rss = overload.memory_mb(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    orders = dbs.one("main", "SELECT count(*) FROM shop_orders")
    reserved = dbs.one("warehouse", "SELECT count(DISTINCT order_id) FROM shop_reservations")
    unhandled = dbs.one("main", "SELECT count(*) FROM jadpo_deliveries WHERE status != 'handled'")
    if reserved != orders or unhandled:
        sys.exit(f"bench-local: {orders} orders, {reserved} reserved, {unhandled} deliveries not handled")
    latency = {q: overload.re.search(rf"\s{q}%\s+(\S+)", report) for q in ("50", "99")}
    shutil.rmtree(folder, ignore_errors=True)
    return {
        "orders_per_s": orders / loaded,
        "p50": latency["50"].group(1) if latency["50"] else "?",
        "p99": latency["99"].group(1) if latency["99"] else "?",
        "pending": at_stop,
        "handled_5s": handled_5s / made if made else float("nan"),
        "drained": drained,
        "rss": rss.get("VmHWM", float("nan")),
        "orders": orders,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--connections", type=int, default=8)
    a = parser.parse_args()
    if a.seconds < 1 or a.rounds < 1 or a.connections < 1:
        sys.exit("bench-local: --seconds, --rounds and --connections must be at least 1")
    for tool in ("wrk", "curl"):
        if not shutil.which(tool):
            sys.exit(f"bench-local: {tool} is not installed (apt-get install {tool})")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "jadpo-local"], cwd=ROOT, check=True)
    ddl, subscribers = schema_template()
    rows = []
    for n in range(1, a.rounds + 1):
        c = ceiling(ddl, subscribers, a.seconds)
        h = http(a.seconds, a.connections)
        print(f"  round {n}: ceiling {c:.0f} tx/s; HTTP {h}", flush=True)
        rows.append((c, h))
    ratio = statistics.median(h["orders_per_s"] / c for c, h in rows)
    out = [
        "## The local default under HTTP load (SQLite)",
        "",
        f"`scripts/bench-local.py --seconds {a.seconds} --rounds {a.rounds}` (part of `make bench`): the "
        f"release `jadpo-local` on its SQLite default in a fresh folder, `wrk -t2 -c{a.connections}` placing "
        f"orders for {a.seconds} s (each request with its own Idempotency-Key), against a ceiling: one "
        f"Python writer committing the same rows ({len(subscribers)} deliveries per order) on a copy of "
        "the shop's schema, WAL, `synchronous=FULL`, one transaction each; interleaved. Every order "
        "ended with its reservation and every delivery handled. *Handled 5 s after* is the share "
        "of the deliveries made (the `main` store's) that were handled 5 s after the load ended; "
        "*drained in* counts from the load's end.",
        "",
        "| round | ceiling tx/s | HTTP orders/s | HTTP / ceiling | p50 / p99 | pending at stop | handled 5 s after | drained in | peak RSS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, (c, h) in enumerate(rows, 1):
        out.append(f"| {n} | {c:.0f} | {h['orders_per_s']:.0f} | {h['orders_per_s'] / c:.2f}× | "
                   f"{h['p50']} / {h['p99']} | {h['pending']} | {h['handled_5s']:.2f} | "
                   f"{h['drained']:.1f} s | {h['rss']:.1f} MB |")
    handled = statistics.median(h["handled_5s"] for _, h in rows)
    out += ["", f"Median HTTP / ceiling: **{ratio:.2f}×**; median share handled 5 s after the load: "
            f"**{handled:.2f}**.", ""]
    text = "\n".join(out)
    print(text)
    folder = os.path.join(ROOT, "target", "bench")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "local.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
