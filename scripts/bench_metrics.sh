#!/usr/bin/env bash
# What `serve --metrics-listen` costs the service's thread, in instructions
# (callgrind: repeatable on a loaded machine). Runs `orderwire serve` under
# callgrind with and without --metrics-listen, in the same run, sends the
# same `mixed` workload with `orderwire submit` (pinned to CPU 1), stops it
# with SIGINT and prints, for each, the instructions of Service::Impl::Run
# (the loop: receive, journal, apply, send; start-up excluded) per command,
# and the cost of one publication (RefreshStats + StatsMirror::Publish).
#
#   scripts/bench_metrics.sh [BUILD_DIR] [COMMANDS]    # build/release, 20000
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
count=${2:-20000}
bin=$build/cli/orderwire
[ -x "$bin" ] || { echo "bench_metrics.sh: no $bin (build it first)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "bench_metrics.sh: valgrind missing" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
port=7497

for mode in off on; do
  flags=()
  [ "$mode" = on ] && flags=(--metrics-listen 127.0.0.1:0)
  valgrind --tool=callgrind --callgrind-out-file="$work/serve.$mode.cg" \
    "$bin" serve --journal "$work/journal.$mode" --listen 127.0.0.1:$port \
    --quiet "${flags[@]}" 2>"$work/serve.$mode.err" &
  pid=$!
  sleep 4  # valgrind starts slowly
  taskset -c 1 "$bin" submit --session 1 --target 127.0.0.1:$port \
    --workload mixed --count "$count" --seed 1 >"$work/submit.$mode.out"
  kill -INT "$pid"
  wait "$pid"
  run=$(callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$work/serve.$mode.cg" |
        awk '/Service::Impl::Run\(/ && !seen { gsub(",", "", $1); print $1; seen = 1 }')
  awk -v m="$mode" -v r="$run" -v n="$count" \
    'BEGIN { printf "metrics %-3s  Run(): %d instructions, %.0f per command\n", m, r, r / n }'
done
echo "publications (metrics on; each one RefreshStats + StatsMirror::Publish):"
callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$work/serve.on.cg" |
  grep -E 'StatsMirror::Publish\(.*\]$|Impl::RefreshStats\(\) const \[' || true
