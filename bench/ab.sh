#!/usr/bin/env bash
# A/B two burrow binaries: alternating single rounds of bench/run.py (A, B, A, B, ...), so slow
# drift of this shared machine hits both alike, then each column's ratios to socat per round and
# their medians, for each binary.
#
#   bench/ab.sh --a PATH --b PATH [--rounds N] [--columns LIST] [--modes LIST] [--out DIR]
#
# Defaults: 3 rounds; columns bulk1,bulk8,http1k_c50,http1m_c50; modes socat,burrow,burrow-plain.
# Each round's Markdown and JSON stay in DIR (default: a new directory under /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
a="" b="" rounds=3 columns=bulk1,bulk8,http1k_c50,http1m_c50 modes=socat,burrow,burrow-plain out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --a) a=$2; shift 2 ;;
    --b) b=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --columns) columns=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$a" ] && [ -x "$b" ] || { echo "--a and --b must be executable burrow binaries" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "--rounds must be a positive integer" >&2; exit 2; }
out=${out:-$(mktemp -d /tmp/burrow-ab.XXXXXX)}
mkdir -p "$out"

for i in $(seq "$rounds"); do
  for side in a b; do
    bin=$a; [ "$side" = b ] && bin=$b
    echo "round $i, $side: $bin" >&2
    python3 bench/run.py --burrow "$bin" --modes "$modes" --columns "$columns" --rounds 1 \
      --out "$out/$side-$i.md" >"$out/$side-$i.log" 2>&1 ||
      echo "a workload failed in round $i for $side, see $out/$side-$i.log" >&2
    # run.py writes its results even when a workload failed; without them there is nothing to use.
    [ -s "$out/$side-$i.json" ] || { echo "no results from round $i for $side" >&2; exit 1; }
  done
done

python3 - "$out" "$rounds" "$a" "$b" <<'EOF'
import json, statistics, sys
out, rounds, a, b = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
runs = {s: [json.load(open(f"{out}/{s}-{i}.json")) for i in range(1, rounds + 1)] for s in "ab"}

def ratios(run):
    """{(metric, mode): ratio to socat} for one round's JSON, throughput metrics only."""
    found = {}
    for mode, metrics in run["ratio_to_socat"].items():
        for metric, ratio in metrics.items():
            if mode != "socat" and metric.endswith((".gbps", ".rps", ".cpu_per_gb", ".cpu_per_1k")):
                found[(metric, mode)] = ratio
    return found

per = {s: [ratios(r) for r in runs[s]] for s in "ab"}
keys = sorted({k for s in "ab" for r in per[s] for k in r})
print(f"A = {a}\nB = {b}\n{rounds} alternating rounds; ratio to socat per round, then the median")
print("(a failed round: the workload failed for that binary, see its log)\n")
print("| metric | mode | A rounds | A median | B rounds | B median |")
print("|---|---|---|---:|---|---:|")
for k in keys:
    cells = []
    for s in "ab":
        vals = [r[k] for r in per[s] if k in r]
        failed = f" ({rounds - len(vals)} failed)" if len(vals) < rounds else ""
        cells.append((" ".join(f"{v:.2f}" for v in vals) or "n/a") + failed)
        cells.append(f"{statistics.median(vals):.2f}" if vals else "n/a")
    print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
EOF
echo "rounds kept in $out" >&2
