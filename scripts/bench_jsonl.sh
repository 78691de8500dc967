#!/usr/bin/env bash
# The JSON Lines reader's figures of docs/BENCHMARKS.md ("The JSON Lines
# reader"): simdjson against the hand-written baseline, in the same run,
# pinned to one CPU (ns/line, median of 5), then instructions per line of each
# under callgrind (repeatable under load). Prints the load average first.
#
#   scripts/bench_jsonl.sh [BUILD_DIR]     (default build/release)
set -euo pipefail
build_dir=${1:-build/release}
bench=$build_dir/bench/jsonl_bench
if [ ! -x "$bench" ]; then
  echo "bench_jsonl.sh: $bench not found; build it first:" >&2
  echo "  cmake --preset release && cmake --build --preset release --target jsonl_bench" >&2
  exit 2
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c "${BENCH_CPU:-1}" "$bench" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true | grep -E 'median|cv'
if command -v valgrind >/dev/null; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  for reader in simdjson handwritten; do
    valgrind --tool=callgrind --instr-atstart=no \
      --callgrind-out-file="$out/cg.$reader" "$bench" --callgrind "$reader" \
      >/dev/null 2>"$out/log.$reader"
    total=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/log.$reader")
    echo "$reader: $((total / 100000)) instructions per line (callgrind)"
  done
else
  echo "valgrind not found: no instruction counts"
fi
