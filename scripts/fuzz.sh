#!/usr/bin/env bash
# Runs every fuzz target for a bounded time on a scratch copy of its seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
for target in build/fuzz/fuzz/*_fuzz; do
  name=$(basename "$target" _fuzz)
  scratch=$(mktemp -d)
  cp -r "fuzz/corpus/$name/." "$scratch/" 2>/dev/null || true
  echo "fuzzing $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 "$scratch" 2>&1 | tail -3
  rm -rf "$scratch"
done
