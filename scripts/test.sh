#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs, builds a release and an
# ASan+UBSan configuration, runs every test in both, runs the multi-threaded relay tests under
# ThreadSanitizer, a 60-second soak, each fuzz target for a bounded time, and checks the demo.
# FUZZ_SECONDS (default 60) bounds each fuzz run; SOAK_DURATION (default 60s) the soak.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

echo "== release build"
bash scripts/build.sh release
echo "== release tests"
ctest --test-dir build/release --output-on-failure --timeout 600
echo "== soak (${SOAK_DURATION:-60s}, release)"
bash scripts/soak.sh --duration "${SOAK_DURATION:-60s}"

echo "== ASan+UBSan build"
bash scripts/build.sh asan
echo "== ASan+UBSan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure --timeout 900

echo "== ThreadSanitizer build"
bash scripts/build.sh tsan burrow burrow_tests
echo "== ThreadSanitizer: the tests that run a relay with several worker threads"
# In process: flow windows, the port registry and relay state, end-to-end secure streams and
# the HTTP proxy. End to end: every test that starts the real relay (the fixture passes
# --workers 2) except the packet captures; that relay is the tsan-built binary, and a report
# it prints fails the test (tests/harness/process.cpp counts them), as do the hostile-client,
# per-source limit and token tests. About 4 minutes.
tsan_tests='^(tunnel_test|hostile_test|attack_test|token_test|link_encryption_test|share_url_test|passthrough_test|share_http_test|blind_test|registry_test|RelayState|FlowWindow|E2ee[A-Za-z]+|SecureStream|Records/SecureStream|SecureStreamOnOpenSslRecords|SecureStreamOverASocket|WebRecords|HttpProxy|Spare[A-Za-z]+|Drained|StreamBridge|Bridges/StreamBridgeWay|Workers/relay_threads_test)\.'
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
  ctest --test-dir build/tsan --output-on-failure --timeout 900 -R "$tsan_tests"

echo "== fuzz targets"
bash scripts/build.sh fuzz
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"

echo "== demo"
bash scripts/demo.sh --check
echo "all checks passed"
