# Sourced by bench/burst-memory.sh and bench/idle-wakeups.sh: starts nginx (a 1 KiB file), a
# relay and an agent (`burrow tcp`) on loopback and, with e2e=1, an agent that serves end to end
# and `burrow connect --listen` in front of it. Cleans up on exit.
#
# Reads: burrow (the binary), e2e (0 or 1), heaptrack_dir (empty, or run each burrow process
# under heaptrack with its output in DIR/ROLE).
# Sets: tmp (a scratch directory), target (nginx's port), public (where visitors connect),
# roles ("relay agent" or "relay agent connect"), watched (their pids, in that order), wrappers
# (the pids to wait for: heaptrack's when it runs), pids (everything to stop at exit).
command -v nginx >/dev/null || { echo "needs nginx (bash scripts/setup.sh)" >&2; exit 2; }
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
traced() { if [ -n "${heaptrack_dir:-}" ]; then echo "heaptrack -o $heaptrack_dir/$1"; fi; }
# PID: the burrow process itself (under heaptrack, the wrapper's child)
burrow_pid() {
  [ -z "${heaptrack_dir:-}" ] && { echo "$1"; return; }
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
