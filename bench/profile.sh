#!/usr/bin/env bash
# Where a tunnel's CPU goes: runs a relay and an agent (pinned to CPU 0) in front of iperf3 or
# nginx (CPU 1), drives load through the tunnel, samples the burrow processes with
# `perf record -e cpu-clock` and prints the share of samples per library and the top symbols;
# with --tool strace, counts their system calls (`strace -c -f`, which slows them: compare the
# mix and the calls per request or per GB, not the rate) and prints the bytes moved.
#
#   bench/profile.sh [--burrow PATH] [--link tls|none]
#                    [--load bulk|bulk8|http1k|http1k-close|http1k-idle|tls-stalled]
#                    [--seconds N] [--tool perf|strace|callgrind|sched|heaptrack|none]
#                    [--mode tunnel|e2e|blind|inspect|socat|socat-chain]
#                    [--warmup N]
#                    [--keep DIR] [--connections N] [--heap] [--relay-workers N]
#
# --mode e2e: the agent serves end to end and `burrow connect --listen` (also on CPU 0) is the
# load's entry, so three processes are sampled. --mode blind: an HTTPS share URL
# (`burrow http --mode blind`): wrk speaks HTTPS to the relay's HTTPS listener (SNI
# bench.burrow.localhost, through bench/wrk-loopback.lua), TLS ends at the agent; http1k loads only.
# --mode inspect: the same with `burrow http --mode inspect`: TLS ends at the relay, which runs the
# HTTP proxy and sends HTTP/1.1 over the link.
# bulk: one iperf3 stream; bulk8: eight; http1k: wrk over 1 KiB, --connections of them (50;
# with 1, wrk -t1: one request at a time, the latency path); http1k-close: the same with a new
# connection per request, as the *_close columns; http1k-idle (--tool none or heaptrack):
# --connections keep-alive visitors (bench/lib/idle_visitors.py, on CPU 1) that each ask once and
# then stay connected and quiet, and --seconds after the last has its answer the processes' memory
# is read (with --heap, the heap in use too; under heaptrack, its peak is where the visitors sit
# idle, since they come one at a time): memory per idle visitor. tls-stalled (--mode blind or
# inspect, --tool none or heaptrack): the same with visitors that each run their side of the
# TLS handshake and withhold their Finished (`idle_visitors.py --withhold-finished`), the
# handshake deadlines raised to 300 s: memory per handshake waiting for its peer. Everything on
# 127.0.0.1, every process ended on exit. Needs perf (linux-perf), iperf3, nginx, wrk
# (scripts/setup.sh).
#
# --tool callgrind: runs the burrow processes under valgrind's callgrind and prints instructions
# per request (http1k) or per MB (bulk) for each process: a count that hardly moves between runs,
# for A/B comparisons of user-space changes on a noisy machine. http1k collects only in a window
# of --seconds after a warm-up of --warmup seconds (default 20), so the handshakes of the 50
# connections are not counted, and counts the requests nginx logged in that window; bulk collects
# over the whole transfer. It counts user space only (a system call is one instruction), and the
# load is much slower under valgrind, so compare instruction counts, never the rate. --keep DIR
# keeps the callgrind files there (ROLE.out, for callgrind_annotate), or perf's (perf.data).
#
# --mode socat and --mode socat-chain (--tool sched only): socat on CPU 0 in place of the tunnel,
# or two in a chain (bench/run.py's reference modes), for the same hand-overs side by side.
#
# --tool sched: `perf sched record -a` over the middle of the load (from 1 s after it starts,
# --seconds minus 2, at least 1), then bench/handovers.py: for each hand-over between two
# processes (relay, agent, connect, nginx, wrk, iperf3) the work before it, how long the waker
# runs on and how long the woken one waits to run. With --connections 1 it lays out the chain one
# request goes through. --keep DIR keeps the timehist text (sched.txt).
#
# http1k loads print wrk's own figures with its median and 99th percentile latency.
#
# --relay-workers N: the relay runs N worker threads (its --workers; by default one per CPU it
# may use, so one here), still on CPU 0: with two, a `burrow connect` link and the agent's link
# usually sit on two threads, as on a relay with more than one CPU.
#
# --tool none: nothing attached; prints the load's own figures and each process's CPU time
# (utime + stime from /proc) per GB or per 1,000 requests, and its largest RSS (VmHWM) at the
# end of the load, for runs to repeat side by side. With --heap, also each process's heap in use a
# second before the load ends, while its connections are open: glibc's malloc_stats(), called
# into each process with gdb (Debian package gdb), which stops each one for a moment, so the
# load's own figures of such a run are not for comparison.
#
# --tool heaptrack: runs the burrow processes under heaptrack (Debian package heaptrack), ends
# them with SIGINT after the load, and prints for each its peak heap and the allocation sites
# that held the most at that peak (heaptrack_print --print-peaks). --keep DIR keeps the files
# (ROLE.zst, for heaptrack_print or heaptrack_gui).
set -euo pipefail
cd "$(dirname "$0")/.."
burrow=build/release/burrow link=tls load=bulk seconds=8 tool=perf mode=tunnel warmup=20 keep=""
connections=50 heap=0
while [ $# -gt 0 ]; do
  case "$1" in
    --burrow) burrow=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --tool) tool=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --heap) heap=1; shift ;;
    --relay-workers) relay_workers=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$load" in
  bulk | bulk8) http=0 ;;
  http1k | http1k-close | http1k-idle | tls-stalled) http=1 ;;
  *) echo "unknown load $load" >&2; exit 2 ;;
esac
idle=0; { [ "$load" = http1k-idle ] || [ "$load" = tls-stalled ]; } && idle=1
if [ "$idle" = 1 ] && [ "$tool" != none ] && [ "$tool" != heaptrack ]; then
  echo "--load $load takes --tool none or heaptrack" >&2; exit 2
fi
case "$tool" in
  perf | strace | callgrind | sched | heaptrack | none) ;;
  *) echo "unknown tool $tool" >&2; exit 2 ;;
esac
case "$mode" in
  tunnel | e2e | blind | inspect | socat | socat-chain) ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
if [ "$heap" = 1 ] && { [ "$tool" != none ] || ! command -v gdb >/dev/null; }; then
  echo "--heap goes with --tool none and needs gdb" >&2; exit 2
fi
if [ "${mode#socat}" != "$mode" ] && [ "$tool" != sched ]; then
  echo "--mode $mode takes --tool sched only" >&2; exit 2
fi
share=""; { [ "$mode" = blind ] || [ "$mode" = inspect ]; } && share=$mode
if [ -n "$share" ] && [ "$http" = 0 ]; then
  echo "--mode $mode takes the http1k loads only" >&2; exit 2
fi
stall=()  # tls-stalled: the visitors withhold their Finished, and the deadlines wait for them
if [ "$load" = tls-stalled ]; then
  [ -n "$share" ] || { echo "--load tls-stalled takes --mode blind or inspect" >&2; exit 2; }
  stall=(--withhold-finished)
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

patience=100 run=(taskset -c 0)
if [ "$tool" = callgrind ]; then
  patience=600
  run+=(valgrind -q --tool=callgrind --instr-atstart=no --callgrind-out-file="$tmp/cg.%p")
elif [ "$tool" = heaptrack ]; then
  patience=300
fi
# ROLE: heaptrack and its output file for that role's process (heaptrack's %p is not expanded)
heap() { if [ "$tool" = heaptrack ]; then echo "heaptrack -o $tmp/ht.$1"; fi; }
wait_for() {  # FILE REGEX: the first match's first group, within 10 s (60 s under valgrind)
  for _ in $(seq "$patience"); do
    if v=$(grep -oP "$2" "$1" 2>/dev/null | head -1) && [ -n "$v" ]; then echo "$v"; return; fi
    sleep 0.1
  done
  echo "timed out waiting for /$2/ in $1" >&2; cat "$1" >&2; exit 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

target=$(free_port)
if [ "$http" = 0 ]; then
  taskset -c 1 iperf3 -s -B 127.0.0.1 -p "$target" >/dev/null 2>&1 & pids+=($!)
else
  mkdir -p "$tmp/www" && head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
  access=off; [ "$tool" = callgrind ] && access="$tmp/access.log"  # counts the window's requests
  cat >"$tmp/nginx.conf" <<EOF
daemon off; master_process off; worker_processes 1; error_log $tmp/nginx.err; pid $tmp/nginx.pid;
events { worker_connections 4096; multi_accept on; }
http { access_log $access; keepalive_requests 1000000;
  server { listen 127.0.0.1:$target; root $tmp/www; } }
EOF
  taskset -c 1 nginx -c "$tmp/nginx.conf" -p "$tmp" 2>/dev/null & pids+=($!)
fi

url="http://127.0.0.1:PORT/1k.bin" script=()
if [ "${mode#socat}" != "$mode" ]; then
  socat_to() {  # TARGET: a socat listener on CPU 0 forwarding to TARGET, its port in $public
    public=$(free_port)
    taskset -c 0 socat "TCP-LISTEN:$public,fork,reuseaddr,bind=127.0.0.1,backlog=1024" \
      "TCP:127.0.0.1:$1" >/dev/null 2>&1 & pids+=($!)
  }
  sampled=""
  socat_to "$target"
  [ "$mode" = socat-chain ] && socat_to "$public"
  sleep 0.3
else
  https=""; [ -n "$share" ] && https=127.0.0.1:0
  flags=(--state-dir "$tmp/state" --listen 127.0.0.1:0 --public-bind 127.0.0.1 --port-range 0
    --https-listen "$https" --http-listen "" --source-connections 0 --source-rate 0
    --link-encryption "$link")
  [ -n "${relay_workers:-}" ] && flags+=(--workers "$relay_workers")
  [ -n "${stall[*]}" ] && flags+=(--handshake-timeout 300s)
  "${run[@]}" $(heap relay) "$burrow" relay "${flags[@]}" >"$tmp/relay.log" 2>&1 & relay=$!; pids+=($relay)
  port=$(wait_for "$tmp/relay.log" 'agents connect to 127\.0\.0\.1:\K\d+')
  pin=$(wait_for "$tmp/relay.log" 'relay fingerprint: \K\S+')
  agent_args=(tcp "$target" --no-e2ee)
  [ "$mode" = e2e ] && agent_args=(tcp "$target" --state-dir "$tmp/agent")
  [ -n "$share" ] &&
    agent_args=(http "$target" --name bench --mode "$share" --state-dir "$tmp/agent")
  [ -n "${stall[*]}" ] && agent_args+=(--connect-timeout 300s)
  "${run[@]}" $(heap agent) "$burrow" "${agent_args[@]}" --relay "127.0.0.1:$port" \
    --token "$(cat "$tmp/state/agent.token")" --relay-pin "$pin" --link-encryption "$link" \
    >"$tmp/agent.log" 2>&1 & agent=$!; pids+=($agent)
  sampled="$relay,$agent"
  if [ "$mode" = tunnel ]; then
    public=$(wait_for "$tmp/agent.log" 'public at 127\.0\.0\.1:\K\d+')
  elif [ -n "$share" ]; then
    public=$(wait_for "$tmp/agent.log" 'is public at https://bench\.burrow\.localhost:\K\d+')
    url="https://bench.burrow.localhost:PORT/1k.bin" script=(-s bench/wrk-loopback.lua)
  else
    name=$(wait_for "$tmp/agent.log" 'reachable end to end as \K\S+')
    cert=$(wait_for "$tmp/agent.log" 'reachable end to end as \S+ \(certificate \K[^)]+')
    "${run[@]}" $(heap connect) "$burrow" connect "$name" --relay "127.0.0.1:$port" --relay-pin "$pin" \
      --pin "$cert" --listen 127.0.0.1:0 --link-encryption "$link" >"$tmp/connect.log" 2>&1 &
    pids+=($!); sampled="$sampled,$!"
    public=$(wait_for "$tmp/connect.log" 'listening on 127\.0\.0\.1:\K\d+')
  fi
fi

echo "profiling ${sampled:-$mode} (relay, agent[, connect]; link $link, load $load, $tool)" \
  "for ${seconds}s" >&2
if [ "$tool" = callgrind ]; then
  collect() { for p in ${sampled//,/ }; do callgrind_control "$@" "$p" >/dev/null 2>&1; done; }
  if [ "${load%-close}" = http1k ]; then
    # The window opens after the warm-up, while wrk keeps its connections open.
    (sleep "$warmup"; wc -l <"$tmp/access.log" >"$tmp/first"; collect -i on; sleep "$seconds"
     collect -i off; wc -l <"$tmp/access.log" >"$tmp/last") & perf=$!
  else
    collect -i on
    sleep "$((seconds + 1))" & perf=$!
  fi
elif [ "$tool" = heaptrack ]; then
  open_window() { sleep "$((seconds + 1))" & perf=$!; }
  [ "$idle" = 1 ] || open_window
elif [ "$tool" = none ]; then
  cpu_ticks() { for p in ${sampled//,/ }; do awk '{ print $14 + $15 }' "/proc/$p/stat"; done; }
  cpu_ticks >"$tmp/ticks.start"
  # The window the figures are read at the end of: --seconds (the malloc_stats call a second
  # before its end), from now, or for the idle loads from when every visitor is in place.
  open_window() {
    if [ "$heap" = 1 ]; then
      (sleep "$((seconds > 2 ? seconds - 1 : 1))"
        for p in ${sampled//,/ }; do
          # A call stuck on a lock another stopped thread held is given up (it happened once).
          timeout -s INT 20 gdb -p "$p" -batch -ex 'call (void)malloc_stats()' \
            >/dev/null 2>&1 || true
        done
        sleep 2) & perf=$!
    else
      sleep "$((seconds + 1))" & perf=$!
    fi
  }
  [ "$idle" = 1 ] || open_window
elif [ "$tool" = sched ]; then
  window=$((seconds > 3 ? seconds - 2 : 1))
  (sleep 1.5; perf sched record -a -o "$tmp/sched.data" -- sleep "$window") >/dev/null 2>&1 &
  perf=$!
elif [ "$tool" = perf ]; then
  perf record -q -F 999 -g -e cpu-clock -o "$tmp/perf.data" -p "$sampled" \
    -- sleep "$((seconds + 1))" >/dev/null 2>&1 & perf=$!
else
  attach=(); for p in ${sampled//,/ }; do attach+=(-p "$p"); done
  timeout -s INT "$((seconds + 1))" strace -c -f -o "$tmp/strace.txt" "${attach[@]}" \
    >/dev/null 2>&1 & perf=$!
fi
sleep 0.5
if [ "$idle" = 1 ]; then
  # Held past the window's end, so the figures are read while every visitor is still there.
  taskset -c 1 python3 bench/lib/idle_visitors.py "${stall[@]}" "${url/PORT/$public}" "$connections" \
    "$((seconds + 5))" >"$tmp/load.txt" &
  visitors=$!; pids+=($visitors)
  for _ in $(seq 1200); do  # up to 2 minutes for the visitors to connect and ask
    grep -qP '^\d+ idle visitors' "$tmp/load.txt" && break
    kill -0 "$visitors" 2>/dev/null || break
    sleep 0.1
  done
  cat "$tmp/load.txt"
  if ! grep -qP '^\d+ idle visitors' "$tmp/load.txt"; then
    echo "the visitors never settled" >&2; exit 1
  fi
  open_window
  work=$(grep -oP '^\d+(?= idle visitors)' "$tmp/load.txt") unit=request
elif [ "$http" = 0 ]; then
  streams=1; [ "$load" = bulk8 ] && streams=8
  taskset -c 1 iperf3 -c 127.0.0.1 -p "$public" -P "$streams" -t "$seconds" -f m |
    grep -E 'sender|receiver' | tail -2 | tee "$tmp/load.txt"
  # iperf3's receiver line, in MBytes or GBytes (2^20 and 2^30 bytes): "MB" here is 2^20.
  work=$(grep -oP '\S+ [MG](?=Bytes .* receiver)' "$tmp/load.txt" | tail -1 |
    awk '{ print $1 * ($2 == "G" ? 1024 : 1) }') unit=MB
else
  duration=$seconds; [ "$tool" = callgrind ] && duration=$((warmup + seconds + 2))
  threads=2; [ "$connections" -gt 1 ] || threads=1
  close=(); [ "$load" = http1k-close ] && close=(-H "Connection: close")
  taskset -c 1 wrk --latency -t"$threads" -c"$connections" -d"${duration}s" "${close[@]}" \
    "${script[@]}" "${url/PORT/$public}" |
    grep -E 'Latency|^ +(50|99)%|requests in|Socket errors|Non-2xx|Requests/sec|Transfer/sec' |
    tee "$tmp/load.txt"
  work=$(grep -oP '^\s*\K\d+(?= requests in)' "$tmp/load.txt") unit=request
fi
wait "$perf" || true
if [ "$tool" = callgrind ]; then
  if [ "${load%-close}" = http1k ]; then
    work=$(($(cat "$tmp/last") - $(cat "$tmp/first")))
  else
    collect -i off
  fi
  echo "== instructions per $unit ($work ${unit}s counted), user space of each process"
  roles=(relay agent connect) i=0
  for p in ${sampled//,/ }; do
    callgrind_control -d "$p" >/dev/null 2>&1
    ir=$(grep -h '^totals:' "$tmp"/cg."$p".* | awk '{ s += $2 } END { print s }')
    if [ -n "$keep" ]; then mkdir -p "$keep" && cat "$tmp"/cg."$p".* >"$keep/${roles[i]}.out"; fi
    awk -v r="${roles[i]}" -v ir="$ir" -v w="$work" -v u="$unit" \
      'BEGIN { if (w > 0) printf "%-8s %12.0f instructions per %s\n", r, ir / w, u
               else printf "%-8s no %s in the window\n", r, u }'
    i=$((i + 1))
  done
  exit 0
fi
if [ "$tool" = none ]; then
  cpu_ticks >"$tmp/ticks.end"
  what="1,000 requests"; [ "$unit" = MB ] && what="GB (10^9 bytes)"
  echo "== CPU seconds per $what, each process (clock ticks of $(getconf CLK_TCK) per second)"
  roles=(relay agent connect)
  per=$(awk -v w="$work" -v u="$unit" 'BEGIN { print u == "MB" ? w * 1048576 / 1e9 : w / 1000 }')
  paste "$tmp/ticks.start" "$tmp/ticks.end" | awk -v per="$per" -v hz="$(getconf CLK_TCK)" \
    -v r="${roles[*]}" 'BEGIN { split(r, role, " ") }
      { t = ($2 - $1) / hz; total += t; printf "%-8s %.3f\n", role[NR], t / per }
      END { printf "%-8s %.3f\n", "all", total / per }'
  echo "== RSS at the end of the load (VmRSS) and the largest so far (VmHWM), each process"
  roles=(relay agent connect) i=0
  for p in ${sampled//,/ }; do
    printf '%-8s %s, largest %s\n' "${roles[i]}" "$(grep -oP 'VmRSS:\s*\K.*' "/proc/$p/status")" \
      "$(grep -oP 'VmHWM:\s*\K.*' "/proc/$p/status")"
    i=$((i + 1))
  done
  if [ "$heap" = 1 ]; then
    echo "== heap in use a second before the end of the load (glibc malloc_stats), each process"
    for role in relay agent connect; do
      [ -f "$tmp/$role.log" ] || continue
      # malloc_stats() wrote to the process's standard error: its log, total after the arenas.
      used=$(grep -a -A2 '^Total (incl. mmap)' "$tmp/$role.log" |
        grep -aoP 'in use bytes\s*=\s*\K\d+' | tail -1)
      awk -v r="$role" -v b="${used:-0}" 'BEGIN { printf "%-8s %.1f MB\n", r, b / 1e6 }'
    done
  fi
  exit 0
fi
if [ "$tool" = heaptrack ]; then
  roles=(relay agent connect) i=0
  comm=$(basename "$burrow" | cut -c1-15)  # the process name, as the kernel keeps it
  for p in ${sampled//,/ }; do  # heaptrack's script; burrow is its child
    pkill -INT -P "$p" -x "$comm" || true
  done
  for p in ${sampled//,/ }; do
    for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    file=$(ls "$tmp/ht.${roles[i]}".* 2>/dev/null | head -1 || true)
    echo "== ${roles[i]}: heap at its peak, and the allocation sites holding the most then"
    if [ -z "$file" ] || kill -0 "$p" 2>/dev/null; then
      echo "no heaptrack file (the process did not end within 30 s)"
    else
      heaptrack_print -f "$file" --print-peaks 1 --print-allocators 0 --print-temporary 0 \
        --print-leaks 0 -n 8 -s 3 >"$tmp/ht.txt" 2>/dev/null || true
      python3 bench/heap_peaks.py "$tmp/ht.txt"
      if [ -n "$keep" ]; then mkdir -p "$keep" && cp "$file" "$keep/${roles[i]}.${file##*.}"; fi
    fi
    i=$((i + 1))
  done
  exit 0
fi
if [ "$tool" = sched ]; then
  perf sched timehist -w -i "$tmp/sched.data" >"$tmp/sched.txt" 2>/dev/null
  if [ -n "$keep" ]; then mkdir -p "$keep" && cp "$tmp/sched.txt" "$keep/sched.txt"; fi
  roles=(relay agent connect) named=() i=0
  for p in ${sampled//,/ }; do named+=("$p=${roles[i]}"); i=$((i + 1)); done
  echo "== hand-overs between processes (medians; perf sched's tracing slows each a little)"
  python3 bench/handovers.py "$tmp/sched.txt" "${named[@]}"
  exit 0
fi
if [ "$tool" = strace ]; then
  echo "== system calls of the sampled processes together"
  head -25 "$tmp/strace.txt"
  exit 0
fi
if [ -n "$keep" ]; then mkdir -p "$keep" && cp "$tmp/perf.data" "$keep/perf.data"; fi
echo "== share of samples by process, and by user and kernel space"
perf report -i "$tmp/perf.data" --no-children --sort pid,dso --stdio 2>/dev/null |
  grep -E '^ +[0-9]' | sed -E 's/ +$//' | head -14
echo "== share of samples by object"
perf report -i "$tmp/perf.data" --no-children --sort dso --stdio 2>/dev/null |
  grep -E '^ +[0-9]' | sed -E 's/ +$//' | head -12
echo "== top symbols"
perf report -i "$tmp/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null |
  grep -E '^ +[0-9]' | sed -E 's/[ -]+$//' | cut -c1-120 | head -25
