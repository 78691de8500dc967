#!/usr/bin/env bash
# Installs the Debian packages orderwire needs to build, test and benchmark,
# if any are missing. As root it runs apt-get; otherwise it prints the exact
# command to run and fails. Safe to run again: it does nothing when all is
# there.
#
#   scripts/setup.sh            # build, tests, benchmarks
#   scripts/setup.sh fuzz       # ... and clang with libFuzzer
#   scripts/setup.sh tshark     # ... and tshark for the dissector test
#   scripts/setup.sh lint       # ... and clang-format, clang-tidy
set -euo pipefail

packages=(
  build-essential g++ cmake ninja-build pkg-config
  libabsl-dev liburing-dev libgtest-dev libgmock-dev libbenchmark-dev
  libxxhash-dev
  libcli11-dev   # cli/: the command-line parser (CLI11, header-only)
  libsodium-dev  # auth/: the datagram MAC (keyed BLAKE2b)
  libsimdjson-dev  # jsonl/: the JSON Lines reader
  libtomlplusplus-dev  # service/: configuration files are TOML (toml++)
  libssl-dev     # bench/mac_bench: OpenSSL HMAC-SHA-256, a measured candidate
  libflatbuffers-dev flatbuffers-compiler libprotobuf-dev protobuf-compiler
  tshark python3  # tests/dissector: the Wireshark dissector test
  e2fsprogs mount  # disk-full tests: mkfs.ext4, mount -o loop (skip if denied)
  libcpp-httplib-dev  # service/metrics_server: serve --metrics-listen
  curl prometheus     # tests/service/metrics_endpoint_test: curl, promtool
  nats-server libnats-dev  # replication/: JetStream (nats-server 2.9, libnats 3.4)
)
for extra in "$@"; do
  case "$extra" in
    fuzz) packages+=(clang libclang-rt-dev) ;;
    lint) packages+=(clang-format clang-tidy) ;;
    tshark) packages+=(tshark) ;;
    *) echo "setup.sh: unknown extra '$extra' (fuzz, tshark, lint)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup.sh: installing missing Debian packages: ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: not root; run this, then try again:" >&2
  echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
