#!/usr/bin/env bash
# The installed package, checked as a user outside the source tree uses it
# (CI runs this after `make test`; `make install-check`):
#
#   1. cmake --install BUILD_DIR into a temporary prefix;
#   2. (the installed headers, public only and each self-contained, are
#      the CTest install_headers_public_and_self_contained of make test);
#   3. examples/trader, copied to a temporary directory, configured with
#      only CMAKE_PREFIX_PATH=<prefix> (find_package(orderwire) must find
#      the installed config, nothing of the source or build tree) and built;
#   4. a one-file program compiled with only
#      `pkg-config --cflags --libs orderwire-codec`: it encodes the README's
#      CancelByOrder frame, checks its bytes and decodes it with the
#      library's DecodeCommands;
#   5. the installed `orderwire serve` on a free loopback port with a
#      temporary journal, the trader against it (every expected report must
#      arrive), serve stopped with SIGINT (it must stop cleanly).
#
# Usage: scripts/check_install.sh [BUILD_DIR]   (default build/release; if it
# is missing it is configured with the release preset). The install targets
# (the libraries and the binary) are built first if out of date, JOBS at a
# time (default 2). Everything goes to one mktemp directory, removed on
# exit, and serve is stopped on any exit. Any failing step fails the script
# with its name and output.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${1:-build/release}
jobs=${JOBS:-2}

fail() {
  echo "check_install: FAILED: $*" >&2
  exit 1
}
step() { echo "-- $*"; }

work=$(mktemp -d /tmp/orderwire-install-check.XXXXXX)
serve_pid=
cleanup() {
  if [ -n "$serve_pid" ]; then
    kill "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ ! -f "$build/CMakeCache.txt" ]; then
  [ "$build" = build/release ] || fail "$build is not a configured build tree"
  step "configuring build/release (cmake --preset release)"
  cmake --preset release >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log" >&2; fail "cmake --preset release"; }
fi
step "building what is installed (orderwire, orderwire_client, orderwire_feed, orderwire_marketdata) in $build"
cmake --build "$build" -j "$jobs" --target orderwire orderwire_client orderwire_feed \
  orderwire_marketdata \
  >"$work/build.log" 2>&1 ||
  { tail -n 60 "$work/build.log" >&2; fail "building the install targets in $build"; }

prefix="$work/prefix"
step "1. cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log" >&2; fail "cmake --install"; }
for f in bin/orderwire lib/cmake/orderwire/orderwire-config.cmake \
         lib/cmake/orderwire/orderwire-config-version.cmake \
         lib/cmake/orderwire/orderwire-targets.cmake \
         lib/pkgconfig/orderwire-codec.pc \
         include/orderwire/client/session.h include/orderwire/codec/frame.h \
         include/orderwire/feed/packet.h include/orderwire/marketdata/book.h; do
  [ -e "$prefix/$f" ] || fail "cmake --install did not put $f in place"
done
for lib in codec feed marketdata auth net client; do
  [ -f "$prefix/lib/liborderwire_$lib.a" ] || fail "no lib/liborderwire_$lib.a installed"
done

# 2. The installed headers (public only, each self-contained) are checked
# once, by the CTest install_headers_public_and_self_contained that
# `make test` runs (scripts/check_installed_headers.sh on an install from
# the build tree); `scripts/check_installed_headers.sh PREFIX` checks this
# prefix by hand.

step "3. examples/trader built in $work/trader-build against CMAKE_PREFIX_PATH=$prefix only"
cp -r "$root/examples/trader" "$work/trader-src"
trader_build="$work/trader-build"
cmake -S "$work/trader-src" -B "$trader_build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  >"$work/trader-configure.log" 2>&1 ||
  { cat "$work/trader-configure.log" >&2; fail "configuring examples/trader"; }
found=$(sed -n 's/^orderwire_DIR:PATH=//p' "$trader_build/CMakeCache.txt")
[ "$found" = "$prefix/lib/cmake/orderwire" ] ||
  fail "examples/trader found orderwire in '$found', not in $prefix/lib/cmake/orderwire"
cmake --build "$trader_build" >"$work/trader-build.log" 2>&1 ||
  { cat "$work/trader-build.log" >&2; fail "building examples/trader"; }
trader="$trader_build/trader"
[ -x "$trader" ] || fail "no $trader after the build"

step "4. a one-file program built with pkg-config --cflags --libs orderwire-codec"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
version=$(pkg-config --modversion orderwire-codec) || fail "pkg-config cannot read orderwire-codec.pc"
mkdir "$work/pc"
cat >"$work/pc/codec_only.cc" <<'CC'
// Encodes the README's CancelByOrder frame, checks its bytes, decodes it
// back with DecodeCommands (a function of liborderwire_codec.a).
#include <cstddef>
#include <cstdio>
#include <span>
#include <string>

#include "codec/command.h"
#include "codec/frame.h"
#include "codec/messages.h"

int main() {
  namespace codec = orderwire::codec;
  std::byte frame[64];
  const auto size = codec::EncodeFrame(
      4, codec::CancelByOrder{.account_id = 7, .order_id = 42}, frame);
  if (!size.ok()) return 1;
  std::string hex;
  for (std::size_t i = 0; i < *size; ++i) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", static_cast<unsigned>(frame[i]));
    hex += two;
  }
  std::printf("%s\n", hex.c_str());
  if (hex != "04000000000000000307000000000000002a00000000000000") return 1;
  codec::Command decoded[2];
  const codec::DecodeBatch batch =
      codec::DecodeCommands(std::span(frame, *size), decoded);
  if (batch.frames != 1 || batch.error != codec::CodecError::kOk) return 1;
  const auto cancel = decoded[0].As<codec::CancelByOrder>();
  return decoded[0].sequence == 4 && cancel.account_id == 7 &&
                 cancel.order_id == 42
             ? 0
             : 1;
}
CC
# shellcheck disable=SC2046  # pkg-config prints a list of flags
(cd "$work/pc" && ${CXX:-c++} -std=c++20 -o codec_only codec_only.cc \
   $(pkg-config --cflags --libs orderwire-codec)) 2>"$work/pc/build.log" ||
  { cat "$work/pc/build.log" >&2; fail "compiling against pkg-config orderwire-codec"; }
"$work/pc/codec_only" >"$work/pc/out" || { cat "$work/pc/out" >&2; fail "the pkg-config program"; }
echo "   orderwire-codec $version: $(cat "$work/pc/out")"

step "5. the installed orderwire serve on 127.0.0.1, and the trader against it"
serve_log="$work/serve.log"
"$prefix/bin/orderwire" serve --listen 127.0.0.1:0 --journal "$work/journal" \
  --durability sync 2>"$serve_log" &
serve_pid=$!
port=
for _ in $(seq 1 200); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$serve_log")
  [ -n "$port" ] && break
  kill -0 "$serve_pid" 2>/dev/null || { cat "$serve_log" >&2; fail "serve exited at start"; }
  sleep 0.05
done
[ -n "$port" ] || { cat "$serve_log" >&2; fail "serve did not say where it listens"; }
echo "   serve listening on 127.0.0.1:$port"
if ! "$trader" "127.0.0.1:$port" 7 10000 >"$work/trader.out" 2>"$work/trader.err"; then
  cat "$work/trader.out" "$work/trader.err" >&2
  fail "the trader against the installed serve"
fi
sed 's/^/   /' "$work/trader.out"
# The trader checks its reports itself; this checks what it printed.
cat >"$work/trader.expected" <<'OUT'
report 1: Accepted order 1 account 1 client_order 1 Buy 10 @ 100 GoodTillCancel
report 2: Accepted order 2 account 2 client_order 2 Sell 4 @ 100 GoodTillCancel
report 3: Filled order 1 account 1 client_order 1 Buy Maker 4 @ 100 leaves 6 match 1
report 4: Filled order 2 account 2 client_order 2 Sell Taker 4 @ 100 leaves 0 match 1
report 5: Cancelled order 1 account 1 client_order 1 cancelled 6 Requested
trader: all 5 expected reports received (session 7)
OUT
diff -u "$work/trader.expected" "$work/trader.out" >&2 ||
  fail "the trader's output is not the expected reports (diff above: - expected, + printed)"

kill -INT "$serve_pid"
serve_status=0
wait "$serve_pid" || serve_status=$?
serve_pid=
[ "$serve_status" -eq 0 ] || { cat "$serve_log" >&2; fail "serve exited with status $serve_status on SIGINT"; }
grep -q "stopped cleanly" "$serve_log" || { cat "$serve_log" >&2; fail "serve did not stop cleanly"; }

echo "check_install: ok: installed to a temporary prefix, examples/trader built against it and traded with the installed serve"
