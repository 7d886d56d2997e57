#!/usr/bin/env bash
# The soak test in one command: scripts/soak.sh [--duration 10m] [other burrow-soak options]
# Builds the release configuration and runs burrow-soak against its relay (default 10 minutes).
# The summary goes to stdout; every child process's log to build/release/soak.log.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh release burrow burrow-soak >/dev/null
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
log=build/release/soak.log
if build/release/tools/soak/burrow-soak "$@" 2>"$log"; then exit 0; fi
echo "soak failed; the end of the process log ($log):" >&2
tail -n 80 "$log" >&2
exit 1
