#!/usr/bin/env bash
# Start-up cost of two orderwire binaries on command lines that do no work
# (help, a usage error): what docs/BENCHMARKS.md "Command-line start-up"
# records (the CLI11 parser against the hand-written one before it).
#
#   scripts/bench_cli_startup.sh BASELINE_ORDERWIRE CANDIDATE_ORDERWIRE
#
# For each command line: the instructions of the whole process under
# `valgrind --tool=callgrind` (repeatable under load), then the wall clock
# of `perf stat -r RUNS` (default 50) pinned to CPU (default 1), baseline
# and candidate alternating REPS times (default 3). The load average is
# printed first: the machine is shared.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BASELINE_ORDERWIRE CANDIDATE_ORDERWIRE" >&2
  exit 2
fi
baseline=$1
candidate=$2
runs=${RUNS:-50}
reps=${REPS:-3}
cpu=${CPU:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
command_lines=("--help" "match --help" "journal inspect --help"
               "decode --bogus")
for line in "${command_lines[@]}"; do
  for name in baseline candidate; do
    binary=$baseline
    [ "$name" = candidate ] && binary=$candidate
    # shellcheck disable=SC2086  # the command line is split on purpose
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
      "$binary" $line >/dev/null 2>"$tmp/err" || true
    ir=$(grep -o 'Collected : [0-9]*' "$tmp/err" | grep -o '[0-9]*$')
    echo "instructions  $name  [$line]  $ir"
  done
done
for ((rep = 1; rep <= reps; ++rep)); do
  for name in baseline candidate; do
    binary=$baseline
    [ "$name" = candidate ] && binary=$candidate
    seconds=$(taskset -c "$cpu" perf stat -r "$runs" "$binary" --help \
                2>&1 >/dev/null | awk '/time elapsed/ {print $1}')
    echo "wall clock    $name  [--help]  rep $rep  ${seconds} s (mean of $runs)"
  done
done
