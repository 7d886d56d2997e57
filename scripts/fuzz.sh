#!/usr/bin/env bash
# Runs every fuzz target for a bounded time on a scratch copy of its seed corpus, as many at once
# as there are CPUs (FUZZ_JOBS overrides), and fails if any target finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
jobs=${FUZZ_JOBS:-$(nproc)}

fuzz_one() {
  local target=$1 seconds=$2 name scratch out rc=0
  name=$(basename "$target" _fuzz)
  scratch=$(mktemp -d)
  out=$(mktemp)
  cp -r "fuzz/corpus/$name/." "$scratch/" 2>/dev/null || true
  "$target" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 "$scratch" \
    >"$out" 2>&1 || rc=$?
  # One block per target, printed whole so parallel runs do not interleave.
  { echo "fuzzed $name for ${seconds}s: exit $rc"; tail -3 "$out"; } | flock /dev/stdout cat
  [ "$rc" -eq 0 ] || tail -40 "$out" >&2
  rm -rf "$scratch" "$out"
  return "$rc"
}
export -f fuzz_one

ls build/fuzz/fuzz/*_fuzz | xargs -P "$jobs" -I{} bash -c 'fuzz_one "$1" "$2"' _ {} "$seconds"
