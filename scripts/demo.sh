#!/usr/bin/env bash
# The main job on one machine: installs what is needed, builds, then runs a relay, an agent and a
# small web server on loopback, and `burrow connect` for the visitor; prints the address with a
# curl line that works, end to end encrypted through the relay, and the same server's HTTPS
# share URL (TLS ending at the agent) with its curl line.
# --check: verify the curl line once and exit (used by CI).
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = "--check" ] && check=1

bash scripts/setup.sh run
echo "== building burrow (a few minutes the first time; build/release/burrow)"
BURROW_TESTS=OFF bash scripts/build.sh release burrow
bin=$PWD/build/release/burrow

work=$(mktemp -d /tmp/burrow-demo.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

wait_for() {  # wait_for FILE REGEX: prints the first capture group, 10 s deadline
  for _ in $(seq 100); do
    if v=$(grep -oP "$2" "$1" 2>/dev/null | head -1) && [ -n "$v" ]; then echo "$v"; return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1" >&2; cat "$1" >&2; return 1
}

# The service: a real web server on a loopback port the kernel picks.
mkdir -p "$work/site"
echo "hello from behind the burrow" > "$work/site/index.html"
python3 -c 'import http.server,socketserver,sys,functools
h=functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s=socketserver.ThreadingTCPServer(("127.0.0.1",0),h); print("port",s.server_address[1],flush=True); s.serve_forever()' \
  "$work/site" >"$work/web.out" 2>/dev/null &
pids+=($!)
web_port=$(wait_for "$work/web.out" 'port \K\d+')

"$bin" relay --state-dir "$work/relay" --listen 127.0.0.1:0 --public-bind 127.0.0.1 --port-range 0 \
  --https-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  >"$work/relay.out" 2>"$work/relay.log" &
pids+=($!)
relay_port=$(wait_for "$work/relay.out" 'agents connect to 127\.0\.0\.1:\K\d+')
pin=$(wait_for "$work/relay.out" 'relay fingerprint: \K\S+')
cat "$work/relay.out"

https_port=$(wait_for "$work/relay.out" 'share URLs \S+ served on 127\.0\.0\.1:\K\d+')

# The agent, end to end (the default): no public port; it prints the visitor's command.
BURROW_TOKEN=$(cat "$work/relay/agent.token") "$bin" tcp "$web_port" --name web \
  --relay "127.0.0.1:$relay_port" --relay-pin "$pin" --state-dir "$work/agent" \
  >"$work/agent.out" 2>"$work/agent.log" &
pids+=($!)
agent_pin=$(wait_for "$work/agent.out" 'reachable end to end as web \(certificate \K[^)]+')
cat "$work/agent.out"

# The visitor: `burrow connect` listens locally and runs TLS with the agent, pinned; the relay
# in the middle carries only ciphertext.
"$bin" connect web --relay "127.0.0.1:$relay_port" --relay-pin "$pin" --pin "$agent_pin" \
  --listen 127.0.0.1:0 >"$work/connect.out" 2>"$work/connect.log" &
pids+=($!)
local_addr=$(wait_for "$work/connect.out" 'listening on \K\S+')

# The same web server as an HTTPS share URL: TLS ends at this second agent, with a certificate the
# relay's CA signed for the agent's own key; the relay routes by SNI and cannot read it.
BURROW_TOKEN=$(cat "$work/relay/agent.token") "$bin" http "$web_port" --name share \
  --relay "127.0.0.1:$relay_port" --relay-pin "$pin" --state-dir "$work/agent-http" \
  >"$work/http.out" 2>"$work/http.log" &
pids+=($!)
share_url=$(wait_for "$work/http.out" 'is public at \K\S+')
cat "$work/http.out"

echo
echo "web server 127.0.0.1:$web_port is reachable end to end at http://$local_addr/"
echo "and as the HTTPS share URL $share_url"
echo "(curl and browsers resolve *.burrow.localhost to this machine by themselves; the system"
echo " resolver does not, so getent, wget and the like need --resolve or an /etc/hosts line)"
echo "try them:"
echo "  curl http://$local_addr/"
echo "  curl --cacert $work/agent-http/relay-ca.pem --resolve share.burrow.localhost:$https_port:127.0.0.1 $share_url/"
body=$(curl -sS --max-time 5 "http://$local_addr/")
echo "$body"
[ "$body" = "hello from behind the burrow" ] || { echo "demo: unexpected answer" >&2; exit 1; }
body=$(curl -sS --max-time 5 --cacert "$work/agent-http/relay-ca.pem" \
  --resolve "share.burrow.localhost:$https_port:127.0.0.1" "$share_url/")
echo "$body"
[ "$body" = "hello from behind the burrow" ] || { echo "demo: unexpected share URL answer" >&2; exit 1; }
if [ "$check" = 1 ]; then
  echo "demo: ok"
  exit 0
fi
echo "the binary is $bin; sudo cmake --install build/release puts it in /usr/local/bin"
echo "(Ctrl-C stops the relay, the agents, connect and the web server)"
wait "${pids[1]}"
