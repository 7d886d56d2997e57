#!/usr/bin/env bash
# Builds a release burrow and runs the side-by-side comparison into docs/benchmarks.md (+ .json).
# Extra arguments go to bench/run.py, e.g. scripts/bench.sh --quick --out /tmp/b.md
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh release burrow >/dev/null
args=("$@")
[ "${#args[@]}" -gt 0 ] || args=(--rounds 3 --scaling --out docs/benchmarks.md)
python3 bench/run.py --burrow build/release/burrow "${args[@]}"
