#!/usr/bin/env bash
# The engine's figures against the calibration book, scripted
# (docs/BENCHMARKS.md "Engine against the calibration book"):
#
#   scripts/bench_engine_calib.sh BUILD_DIR [BASELINE_BUILD_DIR]
#
# 1. engine_bench, pinned to one CPU (taskset -c ${BENCH_CPU:-1}), with
#    BENCH_REPETITIONS (default 5) repetitions, aggregates only: engine/wl1
#    and calib/wl1 (the calibration book, same run), engine/mixed, the
#    engine+prefetch variants, the
#    alt:no-dense-guess variants, and the latency percentiles of both
#    workloads and of the calibration book. With BASELINE_BUILD_DIR (a build
#    of the code before the change), its engine/wl1, engine/mixed and
#    calib/wl1 run right after, pinned the same way, then ours once more:
#    before and after interleaved in one session.
# 2. callgrind instruction counts per command of one engine pass (and one
#    calibration-book pass) over 1,000,000 commands of each workload, with
#    BUILD_DIR/bench/engine_profile (only the pass is instrumented).
#
# Prints the load average first: the figures depend on what else runs.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: scripts/bench_engine_calib.sh BUILD_DIR [BASELINE_BUILD_DIR]" >&2
  exit 2
fi
build=$1
baseline=${2:-}
cpu=${BENCH_CPU:-1}
reps=${BENCH_REPETITIONS:-5}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
run() {
  taskset -c "$cpu" "$1/bench/engine_bench" --benchmark_filter="$2" \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    2>&1 | grep -E '_median|ERROR|error' || true
}
main_filter='^(engine/wl1|engine\+prefetch/wl1|calib/wl1|engine/mixed|engine\+prefetch/mixed|alt:no-dense-guess/.*)$'
echo "== $build"
run "$build" "$main_filter"
if [ -n "$baseline" ]; then
  echo "== $baseline (before)"
  run "$baseline" '^(engine/wl1|calib/wl1|engine/mixed)$'
  echo "== $build (again)"
  run "$build" '^(engine/wl1|calib/wl1|engine/mixed)$'
fi
echo "== latency (one pass each, ns, timer included)"
taskset -c "$cpu" "$build/bench/engine_bench" \
  --benchmark_filter='^latency/(wl1/all|wl1/calib|mixed/all|tsc-overhead)/' \
  2>&1 | grep -E '^latency' || true
echo "== callgrind instructions per command (1,000,000 commands)"
out=$(mktemp -d)
for args in "wl1" "mixed" "wl1 1000000 calib"; do
  # shellcheck disable=SC2086
  set -- $args
  valgrind --tool=callgrind --dump-instr=no --instr-atstart=no \
    --callgrind-out-file="$out/cg.out" "$build/bench/engine_profile" \
    "$1" "${2:-1000000}" ${3:-} > /dev/null 2> "$out/log"
  ir=$(grep -E 'Collected :' "$out/log" | awk '{print $NF}')
  echo "$args: $(awk -v ir="$ir" 'BEGIN { printf "%.1f", ir / 1e6 }') instructions per command"
done
rm -rf "$out"
