#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs, builds a release and an
# ASan+UBSan configuration, runs every test in both, runs the multi-threaded tests under
# ThreadSanitizer, a 60-second soak, each fuzz target for a bounded time, and checks the demo.
# FUZZ_SECONDS (default 30) bounds each fuzz run; SOAK_DURATION (default 60s) the soak;
# TEST_JOBS (default: the number of CPUs) how many tests ctest runs at once.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's time, printed at the end whether the run passed or not.
times=()
step=
step_started=0
end_step() {
  [ -n "$step" ] && times+=("$(printf '%6ds  %s' $((SECONDS - step_started)) "$step")")
  step=
}
begin() {
  end_step
  step=$1
  step_started=$SECONDS
  echo "== $1"
}
report() {
  local rc=$?
  end_step
  echo "== step times"
  printf '%s\n' "${times[@]}"
  printf '%6ds  total\n' "$SECONDS"
  return "$rc"
}
trap report EXIT

begin "setup"
bash scripts/setup.sh
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
jobs=${TEST_JOBS:-$(nproc)}

begin "release build"
bash scripts/build.sh release
begin "release tests"
ctest --test-dir build/release --output-on-failure --timeout 600 -j "$jobs"
begin "soak (${SOAK_DURATION:-60s}, release)"
bash scripts/soak.sh --duration "${SOAK_DURATION:-60s}"

begin "ASan+UBSan build"
bash scripts/build.sh asan
begin "ASan+UBSan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure --timeout 900 -j "$jobs"

begin "ThreadSanitizer build"
bash scripts/build.sh tsan burrow burrow_shared_tests burrow_e2e_tests
begin "ThreadSanitizer tests"
# The code the relay's worker threads share, in process, and every test that starts the real
# relay (the fixture passes --workers 2; the relay is the tsan-built binary, and a report it
# prints fails the test: tests/harness/sanitizer_check.cpp). The packet captures are left out.
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
  ctest --test-dir build/tsan --output-on-failure --timeout 900 -j "$jobs" \
  -L 'shared|e2e'

begin "fuzz targets"
bash scripts/build.sh fuzz fuzz/all
bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}"

begin "demo"
bash scripts/demo.sh --check
end_step
echo "all checks passed"
