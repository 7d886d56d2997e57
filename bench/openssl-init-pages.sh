#!/usr/bin/env bash
# What OpenSSL's start-up holds resident, and what its opt-outs would take off an idle relay.
# First bench/lib/openssl-init-pages.c, a program that only links OpenSSL, run as it is and with
# each of OPENSSL_init_crypto's opt-outs (legacy name tables, configuration file, error strings):
# KiB of libcrypto and libssl resident after each step. Then --runs alternating pairs of idle
# relays on loopback, as they are and with bench/lib/no-error-strings.c preloaded: VmRSS and
# libcrypto's Rss --settle seconds after start. Nothing here changes what Burrow does.
#
#   bench/openssl-init-pages.sh [--burrow PATH] [--runs N] [--settle SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
burrow=build/release/burrow runs=3 settle=3
usage="usage: bench/openssl-init-pages.sh [--burrow PATH] [--runs N] [--settle SECONDS]"
while [ $# -gt 0 ]; do
  case $1 in
    --burrow) burrow=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
command -v gcc >/dev/null || { echo "needs gcc (bash scripts/setup.sh)" >&2; exit 2; }
burrow=$(realpath "$burrow")
source bench/lib/children.sh  # $work, pids+=($!), all ended on exit; wait_for
gcc -O2 -Wall bench/lib/openssl-init-pages.c -o "$work/init-pages" -lssl -lcrypto
gcc -O2 -Wall -shared -fPIC bench/lib/no-error-strings.c -o "$work/no-error-strings.so" \
  -lssl -lcrypto

echo "OpenSSL $(openssl version | cut -d' ' -f2), a program that only links it, in KiB:"
for opts in "" no-add-all no-config no-strings "no-add-all no-config no-strings"; do
  echo "opt-outs: ${opts:-none}"
  # shellcheck disable=SC2086  # the opt-outs are separate words
  "$work/init-pages" $opts
done

relay_rss() {  # PRELOAD LABEL: start an idle relay, print its VmRSS and libcrypto's Rss, end it
  local dir
  dir=$(mktemp -d -p "$work")
  LD_PRELOAD=$1 "$burrow" relay --state-dir "$dir/state" --listen 127.0.0.1:0 \
    --public-bind 127.0.0.1 --port-range 0 >"$dir/log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  wait_for "$dir/log" "relay ready" 1
  sleep "$settle"
  printf "  %-22s VmRSS %6d  libcrypto %5d\n" "${2}" \
    "$(awk '/^VmRSS:/ { print $2 }' /proc/"$pid"/status)" \
    "$(awk '/^[0-9a-f]+-/ { lib = ($6 ~ /libcrypto/) } /^Rss:/ && lib { r += $2 } END { print r + 0 }' \
      /proc/"$pid"/smaps)"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}
echo "idle relay ($burrow), in KiB, $runs alternating runs:"
for _ in $(seq "$runs"); do
  relay_rss "" "as it is"
  relay_rss "$work/no-error-strings.so" "no error strings"
done
