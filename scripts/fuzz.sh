#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a while and fails if any of
# them finds a crash (a sanitizer report, a failed FUZZ_CHECK, a timeout or
# running out of memory).
#
#   scripts/fuzz.sh BUILD_DIR SECONDS      e.g. scripts/fuzz.sh build/fuzz 30
#
# BUILD_DIR is a build with ORDERWIRE_FUZZ=ON: the `fuzz` preset (the
# targets alone) or the `asan` preset (the sanitizer tree). Each target
# starts from its seed corpus (BUILD_DIR/fuzz/corpus/<target>, the golden
# frames), copied to a temporary directory so runs never grow the seeds.
# FUZZ_JOBS targets run at once (default 2).
# Prints one summary line per target; a crashing input is kept in
# BUILD_DIR/fuzz/artifacts/ and the end of the fuzzer's log is shown.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build_dir=$1
seconds=$2
case "$seconds" in
  '' | *[!0-9]*)
    echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2
    exit 2
    ;;
esac

targets=(fuzz_frame fuzz_datagram fuzz_decode_paths fuzz_json fuzz_journal fuzz_config fuzz_snapshot
  fuzz_client_session fuzz_group_message fuzz_feed_packet fuzz_subscriber)
fuzz_dir=$build_dir/fuzz
artifacts=$fuzz_dir/artifacts
for target in "${targets[@]}"; do
  if [ ! -x "$fuzz_dir/$target" ]; then
    echo "fuzz.sh: $fuzz_dir/$target is not built (make fuzz-build, or" \
      "make asan-build for build/asan)" >&2
    exit 2
  fi
done
mkdir -p "$artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/orderwire-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# One target's run: its summary line, and on failure the end of its log,
# into $work/$target.out; exit status 1 when it found something.
run_target() {
  local target=$1 corpus=$work/$1 log=$work/$1.log status=0 seeds
  local runs coverage grown crash
  mkdir -p "$corpus"
  if [ -d "$fuzz_dir/corpus/$target" ]; then
    cp -R "$fuzz_dir/corpus/$target/." "$corpus/"
  fi
  seeds=$(find "$corpus" -type f | wc -l)
  local options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
    -print_final_stats=1 -artifact_prefix="$artifacts/$target-")
  if [ -f "$fuzz_dir/$target.dict" ]; then
    options+=(-dict="$fuzz_dir/$target.dict")
  fi
  "$fuzz_dir/$target" "${options[@]}" "$corpus" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
  grown=$(find "$corpus" -type f | wc -l)
  if [ "$status" -eq 0 ]; then
    printf '%-14s ok      %s runs in %ss, coverage %s, corpus %s -> %s\n' \
      "$target" "${runs:-?}" "$seconds" "${coverage:-?}" "$seeds" "$grown"
    return 0
  fi
  crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
  printf '%-14s FAILED  exit %s after %s runs; input: %s\n' \
    "$target" "$status" "${runs:-?}" "${crash:-none written}"
  echo "---- last lines of the $target log ----"
  tail -n 40 "$log"
  echo "----"
  return 1
}

# FUZZ_JOBS targets at a time (default 2: each fuzzer is one process on one
# core); the summaries are printed in the targets' order.
jobs=${FUZZ_JOBS:-2}
pids=()
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_target "$target" >"$work/$target.out" 2>&1 &
  pids+=("$!")
done
failed=0
for i in "${!targets[@]}"; do
  wait "${pids[$i]}" || failed=1
  cat "$work/${targets[$i]}.out"
done
exit "$failed"
