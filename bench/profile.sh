#!/usr/bin/env bash
# Where a tunnel's CPU goes: runs a relay and an agent (pinned to CPU 0) in front of iperf3 or
# nginx (CPU 1), drives load through the tunnel, samples the burrow processes with
# `perf record -e cpu-clock` and prints the share of samples per library and the top symbols;
# with --tool strace, counts their system calls (`strace -c -f`, which slows them: compare the
# mix and the calls per request or per GB, not the rate) and prints the bytes moved.
#
#   bench/profile.sh [--burrow PATH] [--link tls|none] [--load bulk|bulk8|http1k] [--seconds N]
#                    [--tool perf|strace] [--mode tunnel|e2e]
#
# --mode e2e: the agent serves end to end and `burrow connect --listen` (also on CPU 0) is the
# load's entry, so three processes are sampled.
# bulk: one iperf3 stream; bulk8: eight; http1k: wrk -t2 -c50 over 1 KiB. Everything on
# 127.0.0.1, every process ended on exit. Needs perf (linux-perf), iperf3, nginx, wrk
# (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
burrow=build/release/burrow link=tls load=bulk seconds=8 tool=perf mode=tunnel
while [ $# -gt 0 ]; do
  case "$1" in
    --burrow) burrow=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --tool) tool=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$load" in bulk | bulk8 | http1k) ;; *) echo "unknown load $load" >&2; exit 2 ;; esac
case "$tool" in perf | strace) ;; *) echo "unknown tool $tool" >&2; exit 2 ;; esac
case "$mode" in tunnel | e2e) ;; *) echo "unknown mode $mode" >&2; exit 2 ;; esac
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

wait_for() {  # FILE REGEX: the first match's first group, within 10 s
  for _ in $(seq 100); do
    if v=$(grep -oP "$2" "$1" 2>/dev/null | head -1) && [ -n "$v" ]; then echo "$v"; return; fi
    sleep 0.1
  done
  echo "timed out waiting for /$2/ in $1" >&2; cat "$1" >&2; exit 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

target=$(free_port)
if [ "$load" != http1k ]; then
  taskset -c 1 iperf3 -s -B 127.0.0.1 -p "$target" >/dev/null 2>&1 & pids+=($!)
else
  mkdir -p "$tmp/www" && head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
  cat >"$tmp/nginx.conf" <<EOF
daemon off; master_process off; worker_processes 1; error_log $tmp/nginx.err; pid $tmp/nginx.pid;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:$target; root $tmp/www; } }
EOF
  taskset -c 1 nginx -c "$tmp/nginx.conf" -p "$tmp" 2>/dev/null & pids+=($!)
fi

flags=(--state-dir "$tmp/state" --listen 127.0.0.1:0 --public-bind 127.0.0.1 --port-range 0
  --https-listen "" --http-listen "" --source-connections 0 --source-rate 0
  --link-encryption "$link")
taskset -c 0 "$burrow" relay "${flags[@]}" >"$tmp/relay.log" 2>&1 & relay=$!; pids+=($relay)
port=$(wait_for "$tmp/relay.log" 'agents connect to 127\.0\.0\.1:\K\d+')
pin=$(wait_for "$tmp/relay.log" 'relay fingerprint: \K\S+')
e2ee=(--no-e2ee); [ "$mode" = e2e ] && e2ee=(--state-dir "$tmp/agent")
taskset -c 0 "$burrow" tcp "$target" "${e2ee[@]}" --relay "127.0.0.1:$port" \
  --token "$(cat "$tmp/state/agent.token")" --relay-pin "$pin" --link-encryption "$link" \
  >"$tmp/agent.log" 2>&1 & agent=$!; pids+=($agent)
sampled="$relay,$agent"
if [ "$mode" = tunnel ]; then
  public=$(wait_for "$tmp/agent.log" 'public at 127\.0\.0\.1:\K\d+')
else
  name=$(wait_for "$tmp/agent.log" 'reachable end to end as \K\S+')
  cert=$(wait_for "$tmp/agent.log" 'reachable end to end as \S+ \(certificate \K[^)]+')
  taskset -c 0 "$burrow" connect "$name" --relay "127.0.0.1:$port" --relay-pin "$pin" \
    --pin "$cert" --listen 127.0.0.1:0 --link-encryption "$link" >"$tmp/connect.log" 2>&1 &
  pids+=($!); sampled="$sampled,$!"
  public=$(wait_for "$tmp/connect.log" 'listening on 127\.0\.0\.1:\K\d+')
fi

echo "profiling $sampled (relay, agent[, connect]; link $link, load $load, $tool)" \
  "for ${seconds}s" >&2
if [ "$tool" = perf ]; then
  perf record -q -F 999 -g -e cpu-clock -o "$tmp/perf.data" -p "$sampled" \
    -- sleep "$((seconds + 1))" >/dev/null 2>&1 & perf=$!
else
  attach=(); for p in ${sampled//,/ }; do attach+=(-p "$p"); done
  timeout -s INT "$((seconds + 1))" strace -c -f -o "$tmp/strace.txt" "${attach[@]}" \
    >/dev/null 2>&1 & perf=$!
fi
sleep 0.5
if [ "$load" != http1k ]; then
  streams=1; [ "$load" = bulk8 ] && streams=8
  taskset -c 1 iperf3 -c 127.0.0.1 -p "$public" -P "$streams" -t "$seconds" -f g |
    grep -E 'sender|receiver' | tail -2
else
  taskset -c 1 wrk -t2 -c50 -d"${seconds}s" "http://127.0.0.1:$public/1k.bin" | grep -E 'Requests/sec|Transfer/sec'
fi
wait "$perf" || true
if [ "$tool" = strace ]; then
  echo "== system calls of the sampled processes together"
  head -25 "$tmp/strace.txt"
  exit 0
fi
echo "== share of samples by object"
perf report -i "$tmp/perf.data" --no-children --sort dso --stdio 2>/dev/null |
  grep -E '^ +[0-9]' | sed -E 's/ +$//' | head -12
echo "== top symbols"
perf report -i "$tmp/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null |
  grep -E '^ +[0-9]' | sed -E 's/[ -]+$//' | cut -c1-120 | head -25
