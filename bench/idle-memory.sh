#!/usr/bin/env bash
# Resident memory of idle burrow processes, and how much of it is the binary's code: starts a
# relay on 127.0.0.1 (fresh state directory, HTTPS and HTTP listeners on loopback), reads it
# --settle seconds later, then starts three agents that register and stay idle (`burrow tcp
# --no-e2ee`, `burrow tcp`, `burrow http`) and `burrow up` with --services tcp services, and reads
# each agent and the relay again. For each: VmRSS, RssAnon and the Rss of the binary's `r-xp`
# mapping (its code), in KiB. No visitor ever comes, so the agents' local port (9) is never
# dialled.
#
#   bench/idle-memory.sh [--burrow PATH] [--services N] [--settle SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
burrow=build/release/burrow services=200 settle=3
usage="usage: bench/idle-memory.sh [--burrow PATH] [--services N] [--settle SECONDS]"
while [ $# -gt 0 ]; do
  case $1 in
    --burrow) burrow=$2; shift 2 ;;
    --services) services=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
burrow=$(realpath "$burrow")
source bench/lib/children.sh  # $work, pids+=($!), all ended on exit; wait_for

show() {  # NAME PID
  awk -v name="$1" '/^VmRSS:/ { v = $2 } /^RssAnon:/ { a = $2 }
    END { printf "%-28s VmRSS %6d  RssAnon %6d", name, v, a }' /proc/"$2"/status
  awk -v bin="$burrow" '/^[0-9a-f]+-[0-9a-f]+ / { code = ($6 == bin && $2 ~ /^r-x/) }
    /^Rss:/ && code { r += $2 } END { printf "  code %6d\n", r }' /proc/"$2"/smaps
}

"$burrow" relay --state-dir "$work/relay" --listen 127.0.0.1:0 --public-bind 127.0.0.1 \
  --port-range 0 --https-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 >"$work/relay.log" 2>&1 &
relay=$!
pids+=("$relay")
wait_for "$work/relay.log" "relay ready" 1
sleep "$settle"
echo "$burrow ($("$burrow" --version 2>&1 | head -n 1)), in KiB:"
show "relay, before any agent" "$relay"

port=$(grep -oP 'agents connect to 127\.0\.0\.1:\K[0-9]+' "$work/relay.log" | head -n 1)
pin=$(grep -oP 'relay fingerprint: \K\S+' "$work/relay.log")
BURROW_TOKEN=$(cat "$work/relay/agent.token")
export BURROW_TOKEN
common=(--relay "127.0.0.1:$port" --relay-pin "$pin")
for i in $(seq "$services"); do
  printf '[[service]]\nname = "idle-%04d"\nlocal = 9\ne2ee = false\n\n' "$i"
done >"$work/up.toml"
names=("burrow tcp --no-e2ee" "burrow tcp (end to end)" "burrow http" "burrow up, $services services")
argvs=("tcp 9 --no-e2ee --name quiet" "tcp 9 --name quiet-e2e" "http 9 --name quiet-http"
       "up --config $work/up.toml")
ready=("is public at" "reachable end to end as" "is public at" "is public at")
counts=(1 1 1 "$services")
agents=()
for i in 0 1 2 3; do
  # shellcheck disable=SC2086  # the argv strings split into words on purpose
  "$burrow" ${argvs[$i]} "${common[@]}" --state-dir "$work/agent-$i" >"$work/agent-$i.log" 2>&1 &
  agents+=($!)
  pids+=($!)
done
for i in 0 1 2 3; do wait_for "$work/agent-$i.log" "${ready[$i]}" "${counts[$i]}"; done
sleep "$settle"
for i in 0 1 2 3; do show "${names[$i]}" "${agents[$i]}"; done
show "relay with the four agents" "$relay"
