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
tools="nginx wrk"
[ -n "$heaptrack_dir" ] && tools="$tools heaptrack heaptrack_print" && mkdir -p "$heaptrack_dir"
for tool in $tools; do
  command -v $tool >/dev/null || { echo "needs $tool (bash scripts/setup.sh)" >&2; exit 2; }
done
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

tmp=$(mktemp -d) pids=()
cleanup() {
  for pid in "${pids[@]}"; do pkill -P "$pid" 2>/dev/null || true; done
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_for() {  # FILE REGEX: the first match of REGEX (grep -P -o) in FILE, within 10 s
  for _ in $(seq 100); do
    v=$(grep -oP "$2" "$1" | head -n 1 || true)
    [ -n "$v" ] && { echo "$v"; return; }
    sleep 0.1
  done
  echo "timed out waiting for /$2/ in $1" >&2
  exit 1
}

target=$(free_port)
mkdir -p "$tmp/www" && head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
cat >"$tmp/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; error_log $tmp/nginx.err; pid $tmp/nginx.pid;
events { worker_connections 4096; multi_accept on; }
http { access_log off; server { listen 127.0.0.1:$target backlog=4096; root $tmp/www; } }
CONF
nginx -c "$tmp/nginx.conf" -p "$tmp" 2>/dev/null & pids+=($!)
# ROLE: the command prefix for that role's process: heaptrack with its output file, or nothing
traced() { if [ -n "$heaptrack_dir" ]; then echo "heaptrack -o $heaptrack_dir/$1"; fi; }
# PID: the burrow process itself (under heaptrack, the wrapper's child)
burrow_pid() {
  [ -z "$heaptrack_dir" ] && { echo "$1"; return; }
  for _ in $(seq 100); do
    child=$(pgrep -P "$1" -x burrow || true)
    [ -n "$child" ] && { echo "$child"; return; }
    sleep 0.1
  done
  echo "no burrow process under heaptrack $1" >&2
  exit 1
}
$(traced relay) "$burrow" relay --state-dir "$tmp/state" --listen 127.0.0.1:0 --public-bind 127.0.0.1 \
  --port-range 0 --https-listen "" --http-listen "" --source-connections 0 --source-rate 0 \
  >"$tmp/relay.log" 2>&1 & relay=$!; pids+=($relay)
relay_wrapper=$relay relay=$(burrow_pid "$relay")
port=$(wait_for "$tmp/relay.log" 'agents connect to 127\.0\.0\.1:\K\d+')
pin=$(wait_for "$tmp/relay.log" 'relay fingerprint: \K\S+')
serve=(--no-e2ee)
[ "$e2e" = 1 ] && serve=(--state-dir "$tmp/agent")
$(traced agent) "$burrow" tcp "$target" "${serve[@]}" --relay "127.0.0.1:$port" \
  --token "$(cat "$tmp/state/agent.token")" --relay-pin "$pin" >"$tmp/agent.log" 2>&1 &
agent=$!; pids+=($agent)
agent_wrapper=$agent agent=$(burrow_pid "$agent")
roles="relay agent" watched="$relay $agent" wrappers="$relay_wrapper $agent_wrapper"
if [ "$e2e" = 1 ]; then
  name=$(wait_for "$tmp/agent.log" 'reachable end to end as \K\S+')
  cert=$(wait_for "$tmp/agent.log" 'reachable end to end as \S+ \(certificate \K[^)]+')
  $(traced connect) "$burrow" connect "$name" --relay "127.0.0.1:$port" --relay-pin "$pin" \
    --pin "$cert" --listen 127.0.0.1:0 >"$tmp/connect.log" 2>&1 & connect=$!; pids+=($connect)
  connect_wrapper=$connect connect=$(burrow_pid "$connect")
  public=$(wait_for "$tmp/connect.log" 'listening on 127\.0\.0\.1:\K\d+')
  roles="$roles connect" watched="$watched $connect" wrappers="$wrappers $connect_wrapper"
else
  public=$(wait_for "$tmp/agent.log" 'public at 127\.0\.0\.1:\K\d+')
fi

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
