#!/usr/bin/env bash
# How often an idle tunnel's processes wake up: starts nginx, a relay and an agent (`burrow tcp`)
# on loopback (with --e2e, an end-to-end agent and `burrow connect --listen` too), puts one
# request through, waits --settle seconds, then counts over --seconds the context switches of
# every thread of each process (/proc/PID/task/*/status: voluntary and not) and the time they
# ran on a CPU (/proc/PID/task/*/schedstat, in ns), and prints both per second. Each wake-up of
# an idle process is at least one switch; on a laptop each takes the CPU out of its sleep states.
#
#   bench/idle-wakeups.sh [--burrow PATH] [--seconds N] [--settle N] [--e2e]
set -euo pipefail
cd "$(dirname "$0")/.."
burrow=build/release/burrow seconds=30 settle=3 e2e=0
usage="usage: bench/idle-wakeups.sh [--burrow PATH] [--seconds N] [--settle N] [--e2e]"
while [ $# -gt 0 ]; do
  case $1 in
    --burrow) burrow=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    --e2e) e2e=1; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
command -v curl >/dev/null || { echo "needs curl (bash scripts/setup.sh)" >&2; exit 2; }
. bench/lib/tunnel-up.sh

curl -sf -o /dev/null --max-time 5 "http://127.0.0.1:$public/1k.bin" ||
  { echo "no answer through the tunnel" >&2; exit 1; }
sleep "$settle"
switches() {  # PID: context switches of all its threads so far
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { s += $2 } END { print s }'
}
cpu_ns() {  # PID: the time all its threads ran so far, in ns
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s }'
}
declare -A s0 c0
for pid in $watched; do s0[$pid]=$(switches "$pid") c0[$pid]=$(cpu_ns "$pid"); done
sleep "$seconds"
set -- $watched
echo "$burrow ($("$burrow" --version 2>&1 | head -n 1)), over ${seconds}s idle after ${settle}s:"
for role in $roles; do
  pid=$1; shift
  awk -v r="$role" -v s="$(( $(switches "$pid") - ${s0[$pid]} ))" \
      -v c="$(( $(cpu_ns "$pid") - ${c0[$pid]} ))" -v t="$seconds" \
      -v n="$(ls /proc/"$pid"/task | wc -l)" \
      'BEGIN { printf "  %-8s %5.2f context switches a second (%d threads), ", r, s / t, n
               printf "on a CPU %.1f us a second\n", c / 1000 / t }'
done
