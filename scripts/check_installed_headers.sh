#!/usr/bin/env bash
# The installed headers, checked: only public API is installed, and each
# installed header compiles alone against the installed tree (so it includes
# nothing of ours that was left out, and nothing from the source tree).
#
#   scripts/check_installed_headers.sh PREFIX
#       checks <PREFIX>/include/orderwire, as `cmake --install` left it
#   scripts/check_installed_headers.sh --install-from BUILD_DIR
#       installs only the headers of BUILD_DIR (cmake --install --component
#       orderwire_headers) into a temporary prefix and checks that; CTest
#       runs this (tests/install/)
#
# Fails, naming the file, when
#   - a header is installed outside the public components (base, codec,
#     feed, marketdata, auth, net, client), or is an internal/ or testing/ header, or
#     jsonl/ (the JSON Lines form), or anything not a .h file is under include/orderwire;
#   - a header does not compile alone (twice, so a missing include guard
#     fails too) with -std=c++20 and the project's warnings as errors, with
#     only <PREFIX>/include/orderwire and the dependencies' (Abseil,
#     libsodium) include paths; the compiler runs in an empty directory.
# CXX picks the compiler (default c++).
set -euo pipefail
cxx=${CXX:-c++}

work=$(mktemp -d /tmp/orderwire-headers.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ "${1:-}" = "--install-from" ]; then
  [ $# -eq 2 ] || { echo "usage: $0 PREFIX | --install-from BUILD_DIR" >&2; exit 2; }
  cmake --install "$2" --component orderwire_headers --prefix "$work/prefix" >/dev/null
  prefix="$work/prefix"
else
  [ $# -eq 1 ] || { echo "usage: $0 PREFIX | --install-from BUILD_DIR" >&2; exit 2; }
  prefix=$1
fi
include="$prefix/include/orderwire"
[ -d "$include" ] || { echo "check_installed_headers: no $include" >&2; exit 1; }

failed=0
mapfile -t installed < <(cd "$include" && find . -mindepth 1 \( -type f -o -type l \) | sed 's|^\./||' | sort)
[ ${#installed[@]} -gt 0 ] || { echo "check_installed_headers: $include is empty" >&2; exit 1; }
for file in "${installed[@]}"; do
  case "$file" in
    */internal/* | */testing/* | jsonl/*)
      echo "check_installed_headers: $include/$file: not public API, must not be installed" >&2
      failed=1 ;;
    base/*.h | codec/*.h | feed/*.h | marketdata/*.h | auth/*.h | net/*.h | \
      client/*.h) ;;
    *)
      echo "check_installed_headers: $include/$file: not a header of a public component (base, codec, feed, marketdata, auth, net, client)" >&2
      failed=1 ;;
  esac
done
# Nothing of ours beside include/orderwire/ (a header installed as
# include/codec/frame.h would shadow or be shadowed by other projects').
for folder in base codec feed marketdata auth net client engine journal config \
    state service replication cluster cli; do
  if [ -e "$prefix/include/$folder" ]; then
    echo "check_installed_headers: $prefix/include/$folder: headers belong under include/orderwire/" >&2
    failed=1
  fi
done

# The dependencies' include paths, as a program using the package gets them.
dep_flags=$(pkg-config --cflags absl_status absl_statusor absl_strings absl_str_format \
  absl_btree absl_flat_hash_map libsodium)
warnings=(-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
          -Wnon-virtual-dtor -Werror)
# Each header alone in a translation unit of its own, $(nproc) compilers at
# a time (one at a time this test was the release suite's last, ~33 s).
# compile_alone N FILE: compiles FILE alone in $work/tu/N; its errors in
# $work/tu/N/err.
compile_alone() {
  local dir="$work/tu/$1"
  mkdir -p "$dir"
  printf '#include "%s"\n#include "%s"\n' "$2" "$2" >"$dir/alone.cc"
  # shellcheck disable=SC2086  # dep_flags is a list of flags
  (cd "$dir" && "$cxx" -std=c++20 "${warnings[@]}" -fsyntax-only \
    -I"$include" $dep_flags alone.cc) 2>"$dir/err" || echo "$2" >"$dir/failed"
}
jobs_at_once=$(nproc 2>/dev/null || echo 2)
n=0
for file in "${installed[@]}"; do
  [[ "$file" == *.h ]] || continue
  n=$((n + 1))
  compile_alone "$n" "$file" &
  if [ $((n % jobs_at_once)) -eq 0 ]; then wait; fi
done
wait
for dir in "$work"/tu/*/; do
  if [ -e "$dir/failed" ]; then
    echo "check_installed_headers: $(cat "$dir/failed") does not compile alone against $include:" >&2
    head -n 20 "$dir/err" >&2
    failed=1
  fi
done

if [ "$failed" -ne 0 ]; then
  echo "check_installed_headers: FAILED (the list is ORDERWIRE_PUBLIC_HEADERS in cmake/install.cmake)" >&2
  exit 1
fi
echo "check_installed_headers: ${#installed[@]} headers under $include, each public and self-contained"
