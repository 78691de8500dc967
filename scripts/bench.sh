#!/usr/bin/env bash
# Runs every benchmark binary of a build, pinned, and keeps the medians.
#
#   scripts/bench.sh BUILD_DIR [FILTER]
#
# For each BUILD_DIR/bench/*_bench that exists (codec_bench, engine_bench,
# journal_bench, ...), in name order: runs it on one CPU (`taskset -c 1`) at
# real-time priority (`chrt -f 50`) when those are available and allowed (as
# root), otherwise as it can, with 5 repetitions and only the aggregates
# reported (the median is the figure docs/BENCHMARKS.md quotes). The console
# table goes to stdout; the JSON goes to BUILD_DIR/bench/<name>.json. FILTER,
# if given, is passed as --benchmark_filter (a regex on benchmark names); the
# JSON of such a run then holds only the benchmarks that matched.
#
# Environment:
#   BENCH_CPU           CPU to pin to (default 1; unpinned if it does not exist)
#   BENCH_MIN_TIME      --benchmark_min_time in seconds (default 0.5)
#   BENCH_REPETITIONS   --benchmark_repetitions (default 5)
#
# Benchmarks measure the machine as well as the code: run them when nothing
# else is (builds, tests); the script prints the load before each binary and
# warns when the machine is busy. Exit status: 0 if every binary ran, 1 if one
# failed, 2 on a usage error.
set -euo pipefail

usage() {
  echo "usage: scripts/bench.sh BUILD_DIR [FILTER]" >&2
  exit 2
}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
build_dir=$1
filter=${2:-}
bench_dir=$build_dir/bench
if [ ! -d "$bench_dir" ]; then
  echo "bench.sh: $bench_dir does not exist (build the benchmarks first:" \
    "cmake --build $build_dir --target codec_bench)" >&2
  exit 2
fi

cpu=${BENCH_CPU:-1}
min_time=${BENCH_MIN_TIME:-0.5}
repetitions=${BENCH_REPETITIONS:-5}

# The launcher: taskset and chrt where they work here, each checked once.
launcher=()
if command -v taskset >/dev/null 2>&1 && taskset -c "$cpu" true 2>/dev/null; then
  launcher+=(taskset -c "$cpu")
  pinning="pinned to CPU $cpu"
else
  pinning="not pinned (taskset missing or CPU $cpu absent)"
fi
if [ "$(id -u)" -eq 0 ] && command -v chrt >/dev/null 2>&1 &&
  chrt -f 50 true 2>/dev/null; then
  launcher+=(chrt -f 50)
  priority="SCHED_FIFO 50"
else
  priority="normal priority (chrt -f needs root and CAP_SYS_NICE)"
fi

shopt -s nullglob
binaries=("$bench_dir"/*_bench)
if [ ${#binaries[@]} -eq 0 ]; then
  echo "bench.sh: no *_bench binary in $bench_dir" >&2
  exit 2
fi

cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
echo "# bench.sh: ${cpu_model:-unknown CPU}, $(nproc) CPUs, kernel $(uname -r)"
echo "# $pinning, $priority, min_time ${min_time}s, ${repetitions} repetitions"

status=0
for binary in "${binaries[@]}"; do
  [ -x "$binary" ] || continue
  name=$(basename "$binary")
  load=$(cut -d ' ' -f 1-3 /proc/loadavg 2>/dev/null || echo "?")
  echo "# $name: load average $load"
  if [ -r /proc/loadavg ] &&
    awk '{ exit !($1 > 0.5) }' /proc/loadavg; then
    echo "bench.sh: warning: the machine is busy (load $load):" \
      "figures will be noisy" >&2
  fi
  args=(
    --benchmark_repetitions="$repetitions"
    --benchmark_report_aggregates_only=true
    --benchmark_min_time="$min_time"
    --benchmark_out="$bench_dir/$name.json"
    --benchmark_out_format=json
  )
  [ -n "$filter" ] && args+=(--benchmark_filter="$filter")
  if ! "${launcher[@]}" "$binary" "${args[@]}"; then
    echo "bench.sh: $name failed" >&2
    status=1
  fi
done
exit $status
