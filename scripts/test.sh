#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs, builds a release and an
# ASan+UBSan configuration, runs every test in both, runs each fuzz target for a bounded time,
# and checks the demo. FUZZ_SECONDS (default 60) bounds each fuzz run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

echo "== release build"
bash scripts/build.sh release
echo "== release tests"
ctest --test-dir build/release --output-on-failure --timeout 600

echo "== ASan+UBSan build"
bash scripts/build.sh asan
echo "== ASan+UBSan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure --timeout 900

echo "== fuzz targets"
bash scripts/build.sh fuzz
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"

echo "== demo"
bash scripts/demo.sh --check
echo "all checks passed"
