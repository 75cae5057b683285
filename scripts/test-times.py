#!/usr/bin/env python3
"""Times each phase of `make test` and writes the table docs/testing.md shows.

    scripts/test-times.py --warm    # in this checkout, its target/ as it is (after a first build)
    scripts/test-times.py --clean   # in a fresh clone of HEAD, with an empty target/ (as CI)

Each phase is the make target `make test` runs, in its order: prereqs, lint (rustfmt, clippy,
layering, cargo-deny), lint-infra (the SAM template), test-build (every test binary and the
function binaries), test-run (every test on one PostgreSQL, with nextest). The test phase is
broken down by test binary from nextest's JUnit report: how many tests, their summed time and
the longest test (binaries run side by side, so the sums add up to more than the wall time).
The table replaces the part of docs/testing.md between the markers of the mode.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHASES = ["prereqs", "lint", "lint-infra", "test-build", "test-run"]


def run_phase(where: Path, target: str, env: dict) -> float:
    started = time.monotonic()
    print(f"test-times: make {target} in {where}", file=sys.stderr, flush=True)
    done = subprocess.run(["make", target], cwd=where, env=env)
    took = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"test-times: make {target} failed ({done.returncode}) after {took:.0f} s")
    return took


def binaries(junit: Path) -> list:
    """(binary, tests, summed seconds, longest test, its seconds), longest sum first."""
    rows = []
    for suite in ET.parse(junit).getroot().iter("testsuite"):
        cases = [(c.get("name", "?"), float(c.get("time", "0"))) for c in suite.iter("testcase")]
        if not cases:
            continue
        longest = max(cases, key=lambda c: c[1])
        rows.append((suite.get("name", "?"), len(cases), sum(t for _, t in cases), *longest))
    return sorted(rows, key=lambda r: -r[2])


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def table(mode: str, times: dict, junit: Path, machine: str) -> str:
    total = sum(times.values())
    lines = [
        f"Measured by `scripts/test-times.py --{mode}` on {time.strftime('%Y-%m-%d')}, {machine}.",
        "",
        "| phase | time |",
        "|---|---:|",
    ]
    lines += [f"| `make {p}` | {minutes(t)} |" for p, t in times.items()]
    lines += [f"| **`make test`** | **{minutes(total)}** |", ""]
    rows = binaries(junit)
    lines += [
        "| test binary | tests | summed time | longest test |",
        "|---|---:|---:|---|",
    ]
    lines += [f"| `{b}` | {n} | {s:.0f} s | `{name}` {t:.0f} s |" for b, n, s, name, t in rows]
    lines.append(f"| all | {sum(r[1] for r in rows)} | {sum(r[2] for r in rows):.0f} s | |")
    return "\n".join(lines) + "\n"


def replace_between(doc: Path, mode: str, text: str) -> None:
    begin, end = f"<!-- test-times:{mode}:begin -->", f"<!-- test-times:{mode}:end -->"
    body = doc.read_text()
    if begin not in body or end not in body:
        sys.exit(f"test-times: {doc} has no {begin} … {end} markers")
    head, rest = body.split(begin, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{begin}\n{text}{end}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--clean", action="store_true", help="a fresh clone of HEAD, empty target/")
    mode.add_argument("--warm", action="store_true", help="this checkout, its target/ as it is")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("CARGO_TARGET_DIR", None)
    scratch = None
    if args.clean:
        scratch = Path(tempfile.mkdtemp(prefix="jadpo-test-times-"))
        where = scratch / "jadpo"
        subprocess.run(["git", "clone", "--quiet", "--no-local", str(ROOT), str(where)], check=True)
        # As CI runs it (.ci/run).
        env["CARGO_INCREMENTAL"] = "0"
    else:
        where = ROOT
    try:
        times = {p: run_phase(where, p, env) for p in PHASES}
        junit = where / "target/nextest/default/junit.xml"
        machine = f"{os.cpu_count()} cores"
        text = table("clean" if args.clean else "warm", times, junit, machine)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    print(text)
    if not args.no_write:
        replace_between(ROOT / "docs/testing.md", "clean" if args.clean else "warm", text)


if __name__ == "__main__":
    main()
