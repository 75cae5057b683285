#!/bin/sh
# Compares a benchmark of this tree with the same benchmark at an earlier commit, on this machine:
# both are built (bench profile; the earlier tree in a target directory of its own,
# target/bench-against/target, since one shared with this tree's build can link a stale crate
# of the other), then run alternately ROUNDS times (the first of each pair alternating), and the
# median of each column both have is printed for both with their ratio (a later bench may add
# columns after the earlier one's).
#   scripts/bench-against.sh 632fe11 [pipeline] [ROUNDS=9]
# Single runs swing widely on a shared two-core machine; compare the per-run ratios (commit /
# ceiling, e2e / 2 × commit) first, the raw rates second.
set -eu
ref=${1:?usage: scripts/bench-against.sh <git ref> [bench] [rounds]}
bench=${2:-pipeline}
rounds=${3:-9}
root=$(cd "$(dirname "$0")/.." && pwd)
base="$root/target/bench-against/$(git -C "$root" rev-parse --short "$ref")"
out="$root/target/bench-against/$bench.txt"
[ -d "$base" ] || git -C "$root" worktree add --detach "$base" "$ref" >/dev/null
binary() { # the bench executable cargo builds in $1, into target directory $2
  (cd "$1" && CARGO_TARGET_DIR="$2" cargo bench -p jadpo-runtime --bench "$bench" --no-run --message-format=json 2>/dev/null) |
    python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"]==["bench"]: print(m["executable"])' | tail -1
}
cp "$(binary "$base" "$root/target/bench-against/target")" "$root/target/bench-against/base-$bench"
cp "$(binary "$root" "$root/target")" "$root/target/bench-against/head-$bench"
: > "$out"
i=1
while [ "$i" -le "$rounds" ]; do
  if [ $((i % 2)) = 0 ]; then order="base head"; else order="head base"; fi
  for side in $order; do
    echo "=== $side $i" >> "$out"
    "$root/target/bench-against/$side-$bench" | grep '^| [0-9]\|^| clients' >> "$out"
  done
  i=$((i + 1))
done
python3 - "$out" <<'PY'
import re, statistics, sys
def number(cell):
    try:
        return float(cell.strip().rstrip("×"))
    except ValueError:
        return None  # a column this run does not measure ("—")
def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]
# Each side's header names its columns: a later bench may add or move some, so columns are
# matched by name.
rows, names, side = {}, {}, None
for line in open(sys.argv[1]):
    m = re.match(r"=== (base|head) \d+", line)
    if m:
        side = m.group(1)
    elif line.startswith("| ") and number(cells(line)[0]) is None:
        names[side] = cells(line)
    elif line.startswith("| "):
        values = [number(c) for c in cells(line)]
        named = dict(zip(names.get(side, range(len(values))), values))
        rows.setdefault((side, values[0]), []).append(named)
for (side, first), runs in sorted(rows.items()):
    if side != "head" or ("base", first) not in rows:
        continue
    base = rows[("base", first)]
    print(f"first column {first:g}: {len(runs)} runs each; median base / head / head÷base")
    for name in list(runs[0])[1:]:
        b = [r[name] for r in base if r.get(name) is not None]
        h = [r[name] for r in runs if r.get(name) is not None]
        if b and h:
            b, h = statistics.median(b), statistics.median(h)
            print(f"  {name}: {b:.2f} / {h:.2f} / {h / b:.2f}×")
PY
