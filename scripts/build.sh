#!/usr/bin/env bash
# Builds one configuration: scripts/build.sh release|asan|tsan|fuzz [ninja targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
shift || true
case "$kind" in
  # BURROW_TESTS=OFF (the demo) builds burrow without the test and benchmark toolset.
  release) cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DBURROW_WERROR=ON \
             -DBURROW_TESTS="${BURROW_TESTS:-ON}" >/dev/null ;;
  asan) cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DBURROW_SANITIZE=ON -DBURROW_WERROR=ON >/dev/null ;;
  # -O1 keeps ThreadSanitizer's slowdown of the relay tests (and their deadlines) bearable.
  tsan) cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
          -DBURROW_TSAN=ON -DBURROW_WERROR=ON >/dev/null ;;
  # Debug: burrow_lib at -O0 builds in half the time; fuzz/CMakeLists.txt optimises the parsers.
  fuzz) CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DBURROW_FUZZ=ON \
          -DBURROW_SANITIZE=ON -DBURROW_TESTS=OFF >/dev/null ;;
  *) echo "usage: scripts/build.sh release|asan|tsan|fuzz [targets]" >&2; exit 2 ;;
esac
ninja -C "build/$kind" "$@"
