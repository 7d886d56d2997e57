#!/usr/bin/env bash
# How much of an idle relay's resident set is file pages it mapped at start and no longer
# touches. Starts two relays on loopback, one as it is and one with bench/lib/drop-file-pages.c
# preloaded (an experiment, not part of Burrow: after --drop-after seconds it unmaps the pages of
# every clean, read-only file mapping), waits --seconds, and prints VmRSS, RssAnon and RssFile of
# each, then the preloaded relay's resident KiB per file. Nothing here changes what the relay
# does; the comparison's "idle relay" (bench/run.py) measures the relay as it is.
#
#   bench/idle-file-pages.sh [--burrow PATH] [--drop-after N] [--seconds N]
set -euo pipefail
cd "$(dirname "$0")/.."
burrow=build/release/burrow drop_after=2 seconds=8
usage="usage: bench/idle-file-pages.sh [--burrow PATH] [--drop-after N] [--seconds N]"
while [ $# -gt 0 ]; do
  case $1 in
    --burrow) burrow=$2; shift 2 ;;
    --drop-after) drop_after=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[ "$seconds" -gt "$drop_after" ] || { echo "--seconds must be more than --drop-after" >&2; exit 2; }
command -v gcc >/dev/null || { echo "needs gcc (bash scripts/setup.sh)" >&2; exit 2; }
source bench/lib/children.sh  # $work, pids+=($!), all ended on exit
gcc -O2 -Wall -shared -fPIC bench/lib/drop-file-pages.c -o "$work/drop-file-pages.so"

"$burrow" relay --state-dir "$work/plain" --listen 127.0.0.1:0 --public-bind 127.0.0.1 \
  >"$work/plain.log" 2>&1 &
pids+=($!)
DROP_FILE_PAGES_AFTER=$drop_after LD_PRELOAD="$work/drop-file-pages.so" \
  "$burrow" relay --state-dir "$work/dropped" --listen 127.0.0.1:0 --public-bind 127.0.0.1 \
  >"$work/dropped.log" 2>&1 &
pids+=($!)
sleep "$seconds"
for i in 0 1; do
  kill -0 "${pids[$i]}" 2>/dev/null || { echo "a relay exited:" >&2; cat "$work"/*.log >&2; exit 1; }
done
grep -h "drop-file-pages:" "$work/dropped.log" || { echo "the preload did not run" >&2; exit 1; }
status() {  # PID: its VmRSS, RssAnon and RssFile in MiB
  awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s %.2f MiB  ", $1, $2 / 1024 } END { print "" }' \
    /proc/"$1"/status
}
echo "$burrow ($("$burrow" --version 2>&1 | head -n 1)), ${seconds}s after start:"
echo "  as it is:                     $(status "${pids[0]}")"
echo "  file pages unmapped at ${drop_after}s: $(status "${pids[1]}")"
echo "resident KiB per mapping of the second, after:"
awk '/^[0-9a-f]+-[0-9a-f]+ / { n = ($6 == "" ? "(anonymous)" : $6) " " $2 }
     /^Rss:/ { r[n] += $2 } END { for (k in r) if (r[k] > 0) print r[k], k }' \
  /proc/"${pids[1]}"/smaps | sort -rn
