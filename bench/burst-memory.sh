#!/usr/bin/env bash
# What a burst of new connections leaves in the relay's and the agent's resident memory: starts
# nginx, a relay and an agent (`burrow tcp`) on loopback, prints both processes' VmRSS, runs wrk
# with 1,000 connections and a new connection per request for 5 s, then prints VmRSS right after
# the burst and again 12 s later (one period of the heap trim, src/core/heap.hpp, and more), each
# with its anonymous and file-backed parts.
#
# --e2e: the agent serves end to end and `burrow connect --listen` is the burst's entry (each
# visitor a TLS handshake with the agent), and its VmRSS is printed too (with --heaptrack, it
# runs under heaptrack as well: DIR/connect.zst).
#
# --heaptrack DIR: relay and agent run under heaptrack (Debian package heaptrack), which makes
# them larger and slower; after the last read both are killed with SIGKILL, so what heaptrack
# calls leaked is what each still held then, and the script prints the allocation sites that held
# the most (DIR/relay.zst and DIR/agent.zst stay, for heaptrack_print).
#
#   bench/burst-memory.sh [--burrow PATH] [--connections N] [--seconds N] [--e2e]
#                         [--heaptrack DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
burrow=build/release/burrow connections=1000 seconds=5 heaptrack_dir= e2e=0
usage="usage: bench/burst-memory.sh [--burrow PATH] [--connections N] [--seconds N] [--e2e]"
usage="$usage [--heaptrack DIR]"
while [ $# -gt 0 ]; do
  case $1 in
    --burrow) burrow=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --heaptrack) heaptrack_dir=$2; shift 2 ;;
    --e2e) e2e=1; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
tools="wrk"
[ -n "$heaptrack_dir" ] && tools="$tools heaptrack heaptrack_print" && mkdir -p "$heaptrack_dir"
for tool in $tools; do
  command -v $tool >/dev/null || { echo "needs $tool (bash scripts/setup.sh)" >&2; exit 2; }
done
. bench/lib/tunnel-up.sh

rss() {  # VmRSS, and of it the anonymous (heap) and the file-backed (code) pages
  awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 }
       END { printf "%.1f MiB (anon %.1f, file %.1f)", r / 1024, a / 1024, f / 1024 }' \
    "/proc/$1/status"
}
report() {
  local line="$1:" role
  set -- $watched
  for role in $roles; do line="$line $role $(rss "$1"),"; shift; done
  echo "${line%,}"
}
sleep 1
report "before the burst"
wrk -t2 -c"$connections" -d"${seconds}s" -H "Connection: close" "http://127.0.0.1:$public/1k.bin" |
  grep -E 'Requests/sec|Socket errors|Non-2xx' || true
report "right after it"
sleep 12
report "12 s later"
[ -z "$heaptrack_dir" ] && exit 0

kill -9 $watched
wait $wrappers 2>/dev/null || true
for role in $roles; do
  echo "== $role: the allocation sites that held the most when it was killed"
  heaptrack_print -f "$heaptrack_dir/$role.zst" --print-leaks 1 --print-peaks 0 \
    --print-allocators 0 --print-temporary 0 2>/dev/null |
    sed -n '/MEMORY LEAKS/,$p' | grep -A1 -E 'leaked over [0-9]+ calls from$' | grep -v '^--' |
    paste - - | cut -c1-160 | head -n 8 || true
done
