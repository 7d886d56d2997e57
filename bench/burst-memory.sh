#!/usr/bin/env bash
# What a burst of new connections leaves in the relay's and the agent's resident memory: starts
# nginx, a relay and an agent (`burrow tcp`) on loopback, prints both processes' VmRSS, runs wrk
# with 1,000 connections and a new connection per request for 5 s, then prints VmRSS right after
# the burst and again 12 s later (one period of the heap trim, src/core/heap.hpp, and more).
#
#   bench/burst-memory.sh [--burrow PATH] [--connections N] [--seconds N]
set -euo pipefail
cd "$(dirname "$0")/.."
burrow=build/release/burrow connections=1000 seconds=5
while [ $# -gt 0 ]; do
  case $1 in
    --burrow) burrow=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "usage: bench/burst-memory.sh [--burrow PATH] [--connections N] [--seconds N]" >&2
       exit 2 ;;
  esac
done
for tool in nginx wrk; do
  command -v $tool >/dev/null || { echo "needs $tool (bash scripts/setup.sh)" >&2; exit 2; }
done
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

tmp=$(mktemp -d) pids=()
cleanup() {
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
"$burrow" relay --state-dir "$tmp/state" --listen 127.0.0.1:0 --public-bind 127.0.0.1 \
  --port-range 0 --https-listen "" --http-listen "" --source-connections 0 --source-rate 0 \
  >"$tmp/relay.log" 2>&1 & relay=$!; pids+=($relay)
port=$(wait_for "$tmp/relay.log" 'agents connect to 127\.0\.0\.1:\K\d+')
pin=$(wait_for "$tmp/relay.log" 'relay fingerprint: \K\S+')
"$burrow" tcp "$target" --no-e2ee --relay "127.0.0.1:$port" \
  --token "$(cat "$tmp/state/agent.token")" --relay-pin "$pin" >"$tmp/agent.log" 2>&1 &
agent=$!; pids+=($agent)
public=$(wait_for "$tmp/agent.log" 'public at 127\.0\.0\.1:\K\d+')

rss() { awk '/^VmRSS:/ { printf "%.1f MiB", $2 / 1024 }' "/proc/$1/status"; }
report() { echo "$1: relay $(rss $relay), agent $(rss $agent)"; }
sleep 1
report "before the burst"
wrk -t2 -c"$connections" -d"${seconds}s" -H "Connection: close" "http://127.0.0.1:$public/1k.bin" |
  grep -E 'Requests/sec|Socket errors|Non-2xx' || true
report "right after it"
sleep 12
report "12 s later"
