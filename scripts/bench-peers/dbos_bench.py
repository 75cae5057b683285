"""DBOS Transact's two-step workflows, as `make bench-peers` runs them beside Jadpo's.

THREADS threads each run a workflow of two no-op steps to completion, one after another, for
SECONDS. Prints one JSON line: workflows completed and workflows/s.

Usage: python dbos_bench.py <postgres-url> [seconds] [threads]
"""

import json
import logging
import sys
import threading
import time

from dbos import DBOS, DBOSConfig


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python dbos_bench.py <postgres-url> [seconds] [threads]")
    url = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    config: DBOSConfig = {
        "name": "jadpo-bench-peers",
        "system_database_url": url,
        "sys_db_pool_size": threads + 4,
        "log_level": "WARNING",
    }
    DBOS(config=config)

    @DBOS.step()
    def first() -> int:
        return 1

    @DBOS.step()
    def second() -> int:
        return 2

    @DBOS.workflow()
    def two_steps() -> int:
        return first() + second()

    DBOS.launch()
    logging.getLogger("dbos").setLevel(logging.WARNING)
    for _ in range(20):  # warm the pool and the prepared paths
        two_steps()
    counts = [0] * threads
    stop_at = time.monotonic() + seconds

    def loop(i: int) -> None:
        while time.monotonic() < stop_at:
            if two_steps() != 3:
                raise SystemExit("a workflow returned the wrong result")
            counts[i] += 1

    start = time.monotonic()
    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.monotonic() - start
    DBOS.destroy()
    total = sum(counts)
    print(json.dumps({"peer": "dbos", "workflows": total, "workflows_per_s": total / wall}))


if __name__ == "__main__":
    main()
