#!/usr/bin/env bash
# Installs what Burrow needs on Debian 12 (apt only).
#   scripts/setup.sh run   what building and running it need (the demo installs only this)
#   scripts/setup.sh       that, plus what the tests, fuzzing and the benchmarks need
set -euo pipefail
run_packages=(
  build-essential g++-12 cmake ninja-build pkg-config
  lld-15  # links every target; the release binary with its relative relocations packed
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libssl-dev openssl libcrypt-dev libcli11-dev libspdlog-dev libfmt-dev libtomlplusplus-dev
  curl python3  # the demo's check and its small web server
)
test_packages=(
  clang-14 clang-format libclang-rt-14-dev  # the fuzz targets (libFuzzer), formatting
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  socat iperf3 wrk procps iproute2 util-linux openssh-client
  nginx-light openssh-server  # services the tests and benchmarks start on loopback ports
  tshark
  gnuplot-nox  # bench/run.py draws its chart (docs/benchmarks.png) with gnuplot
  pebble  # a test ACME server (with pebble-challtestsrv) for the --acme end-to-end tests
)
case "${1:-all}" in
  run) packages=("${run_packages[@]}") ;;
  all) packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: scripts/setup.sh [run|all]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  # tshark (for the capture tests, run as root) would otherwise ask whether non-root users may
  # capture; the answer is no.
  echo "wireshark-common wireshark-common/install-setuid boolean false" |
    "${sudo_cmd[@]}" debconf-set-selections
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
