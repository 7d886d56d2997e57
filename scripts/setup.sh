#!/usr/bin/env bash
# Installs everything Burrow needs to build, test and benchmark on Debian 12 (apt only).
set -euo pipefail
packages=(
  build-essential g++-12 cmake ninja-build pkg-config clang-14 clang-format libclang-rt-14-dev
  lld-15  # links the release binary with its relative relocations packed
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libssl-dev openssl libcrypt-dev libcli11-dev libspdlog-dev libfmt-dev libtomlplusplus-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  curl socat iperf3 nginx-light wrk procps iproute2 util-linux python3 openssh-server openssh-client
  tshark
  gnuplot-nox  # bench/run.py draws its chart (docs/benchmarks.png) with gnuplot
  pebble  # a test ACME server (with pebble-challtestsrv) for the --acme end-to-end tests
)
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
