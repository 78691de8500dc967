#!/usr/bin/env bash
# Static checks over the sources git knows about (tracked, plus new files not
# yet added and not ignored). Each mode fails (exit 1) on any finding.
#
#   scripts/lint.sh format             clang-format --dry-run -Werror over
#                                      every *.h and *.cc, with the repo's
#                                      .clang-format (fix: make format)
#   scripts/lint.sh tidy BUILD_DIR     clang-tidy (the repo's .clang-tidy)
#                                      over every *.cc of the library and
#                                      binary components, with
#                                      BUILD_DIR/compile_commands.json; our
#                                      headers are checked through them
#   scripts/lint.sh layering           scripts/check_layering.sh
#   scripts/lint.sh functions          scripts/check_function_length.py:
#                                      no function of the library and binary
#                                      components or of fuzz/ over 100
#                                      lines, except
#                                      scripts/function_length_exceptions.txt
#
# BUILD_DIR only needs to be configured (cmake --preset release), not built:
# nothing the tidied files include is generated.
#
# Environment: CLANG_FORMAT, CLANG_TIDY (default clang-format, clang-tidy;
# Debian 12: packages clang-format and clang-tidy, LLVM 14), TIDY_JOBS
# (clang-tidy processes at once, default 1: one file takes 5-15 s and up to
# ~1 GB), LINT_VERBOSE=1 (format: print every misformatted place).
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
CLANG_TIDY=${CLANG_TIDY:-clang-tidy}
TIDY_JOBS=${TIDY_JOBS:-1}
# Components whose translation units clang-tidy reads (tests/, bench/ and
# fuzz/ are not tidied; fuzz/ needs a clang build of its own).
TIDY_DIRS=(base codec feed marketdata jsonl auth engine journal net client
  replication config state service cluster cli)

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "lint.sh: $1 not found; on Debian 12: apt-get install $2" >&2
    exit 1
  fi
}

files() {  # files git knows about matching the given pathspecs, NUL-separated
  git ls-files -z --cached --others --exclude-standard -- "$@" |
    while IFS= read -r -d '' f; do
      [ -f "$f" ] && printf '%s\0' "$f"
    done
}

lint_format() {
  need "$CLANG_FORMAT" clang-format
  [ -f .clang-format ] || { echo "lint.sh: no .clang-format" >&2; exit 1; }
  local out
  # --style=file: the .clang-format found from each file upwards, i.e. ours.
  if out=$(files '*.h' '*.cc' |
           xargs -0 -r "$CLANG_FORMAT" --style=file --dry-run -Werror 2>&1); then
    echo "format: ok ($("$CLANG_FORMAT" --version | grep -o 'version [0-9.]*'))"
    return 0
  fi
  # The per-line diagnostics are long; LINT_VERBOSE=1 shows them.
  [ "${LINT_VERBOSE:-0}" = 1 ] && printf '%s\n' "$out" >&2
  echo "format: not clang-formatted (see: clang-format FILE | diff FILE -;" \
    "fix: make format):" >&2
  printf '%s\n' "$out" | grep -E '^[^ ]+:[0-9]+:[0-9]+: (error|warning):' |
    cut -d: -f1 | sort | uniq -c |
    awk '{ printf "  %s (%d place%s)\n", $2, $1, $1 == 1 ? "" : "s" }' >&2
  return 1
}

lint_tidy() {
  local build=${1:-}
  [ -n "$build" ] || usage
  need "$CLANG_TIDY" clang-tidy
  [ -f .clang-tidy ] || { echo "lint.sh: no .clang-tidy" >&2; exit 1; }
  local db="$build/compile_commands.json"
  if [ ! -f "$db" ]; then
    echo "lint.sh: no $db (configure first: cmake --preset release)" >&2
    exit 1
  fi
  local pathspecs=() d
  for d in "${TIDY_DIRS[@]}"; do
    [ -d "$d" ] && pathspecs+=("$d/*.cc")
  done
  local srcs=()
  mapfile -d '' srcs < <(files "${pathspecs[@]}")
  [ ${#srcs[@]} -gt 0 ] || { echo "tidy: no sources"; return 0; }

  # Every file must be in the compilation database: clang-tidy would
  # otherwise guess flags and report nonsense (or a .cc is not built).
  local top f missing=0
  top=$(pwd -P)
  for f in "${srcs[@]}"; do
    if ! grep -qF "\"file\": \"$top/$f\"" "$db"; then
      echo "tidy: $f is not in $db (not built by CMake?)" >&2
      missing=1
    fi
  done
  [ $missing -eq 0 ] || return 1

  local start
  tmp=$(mktemp -d)  # global: the EXIT trap runs after this function returns
  trap 'rm -rf "$tmp"' EXIT
  start=$(date +%s)
  echo "tidy: ${#srcs[@]} files, $TIDY_JOBS at a time" \
    "($("$CLANG_TIDY" --version | grep -o 'version [0-9.]*'), $build)"
  # The config is the repo's .clang-tidy (found from each file upwards);
  # its WarningsAsErrors '*' makes clang-tidy exit non-zero on any finding.
  # shellcheck disable=SC2016  # the bash -c script expands its own $1..$4
  printf '%s\0' "${srcs[@]}" |
    xargs -0 -r -n 1 -P "$TIDY_JOBS" bash -c '
      log="$3/$(printf %s "$4" | tr / _).log"
      if "$1" --quiet -p "$2" "$4" >"$log" 2>&1; then
        echo "  ok    $4"
      else
        echo "  FAIL  $4"
        touch "$log.fail"
      fi' _ "$CLANG_TIDY" "$build" "$tmp"
  local secs=$(( $(date +%s) - start ))
  if ! compgen -G "$tmp/*.fail" >/dev/null; then
    echo "tidy: ok (${secs} s)"
    return 0
  fi
  local fail
  for fail in "$tmp"/*.fail; do
    echo >&2
    grep -vE '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' \
      "${fail%.fail}" >&2 || true
  done
  # A header's finding repeats once per file including it: list each once.
  echo >&2
  echo "tidy: findings (${secs} s):" >&2
  cat "$tmp"/*.log |
    grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error): ' |
    sed "s|^$(pwd -P)/||" | sort -u -t: -k1,1 -k2,2n -k3,3n -k4 |
    sed 's/^/  /' >&2
  return 1
}

case "${1:-}" in
  format) lint_format ;;
  tidy) shift; lint_tidy "$@" ;;
  layering) exec scripts/check_layering.sh ;;
  functions) exec python3 scripts/check_function_length.py ;;
  *) usage ;;
esac
