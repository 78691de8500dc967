#!/usr/bin/env bash
# The service's CPU a command with 1,000 idle sessions heartbeating beside
# the traders, against none: what docs/BENCHMARKS.md "Heartbeats" records
# (docs/CONTROLS.md "Heartbeats").
#
#   scripts/bench_heartbeats.sh BUILD_DIR
#
# RUNS times (3), alternating "off" and "on" so both see the same machine:
# `orderwire serve` (durability none, a fresh journal under TMPDIR) pinned
# to CPU 0; for "on", scripts/heartbeat_load.py with SESSIONS (1000)
# sessions each heartbeating every INTERVAL (1) seconds, pinned to CPU 1
# under SCHED_IDLE (it takes only what the client leaves); `orderwire
# submit --workload mixed --rate RATE (100000) --count COUNT (1000000)
# --heartbeat-ms 0` pinned to CPU 1. The server loop's CPU time
# (/proc/PID/schedstat: the main thread's, in ns) from just before submit
# starts to just after it ends, over the commands, is the figure; the load
# average is recorded with each run. Before the runs, the cost of the
# heartbeats alone: the server's CPU over IDLE_SECONDS (10) with only the
# load, as a share of a core and in ns a heartbeat. Prints one line a run
# and the medians, "on" against "off".
set -euo pipefail

[ $# -eq 1 ] || { sed -n '2,17p' "$0" >&2; exit 2; }
build=$1
ow=${ORDERWIRE:-$build/cli/orderwire}
runs=${RUNS:-3}
rate=${RATE:-100000}
count=${COUNT:-1000000}
sessions=${SESSIONS:-1000}
interval=${INTERVAL:-1}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_heartbeats.XXXXXX")
server_pid=
load_pid=
cleanup() {
  if [ -n "$load_pid" ]; then kill "$load_pid" 2>/dev/null || true; fi
  if [ -n "$server_pid" ]; then kill -INT "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

cpu_ns_of() { cut -d ' ' -f 1 "/proc/$1/schedstat"; }

# Starts serve (port in $port) and, with LOAD=on, the heartbeat load.
start() {
  local dir=$1 load=$2
  mkdir -p "$dir"
  taskset -c 0 "$ow" serve --listen 127.0.0.1:0 --journal "$dir/journal" \
    --durability none --stats-json "$dir/stats.json" 2>"$dir/serve.log" &
  server_pid=$!
  port=
  for _ in $(seq 1 200); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' \
      "$dir/serve.log" | head -n 1)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { cat "$dir/serve.log" >&2; return 1; }
  if [ "$load" = on ]; then
    chrt --idle 0 taskset -c 1 python3 "$here/heartbeat_load.py" \
      "127.0.0.1:$port" --sessions "$sessions" --interval "$interval" \
      >"$dir/load.json" &
    load_pid=$!
    sleep 3  # every session has state and heartbeats
  fi
}

# Stops both; writes the heartbeats the service took to DIR/heartbeats.
stop() {
  local dir=$1
  if [ -n "$load_pid" ]; then
    kill "$load_pid"
    wait "$load_pid" || true
    load_pid=
  fi
  kill -INT "$server_pid"
  wait "$server_pid"
  server_pid=
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("heartbeats", 0))' \
    "$dir/stats.json" >"$dir/heartbeats"
}

# The heartbeats alone: prints "idle CPU-share ns-per-heartbeat".
idle() {
  local dir=$work/idle before after h0 h1
  start "$dir" on
  h0=$(python3 -c 'import time; print(time.time())')
  before=$(cpu_ns_of "$server_pid")
  sleep "${IDLE_SECONDS:-10}"
  after=$(cpu_ns_of "$server_pid")
  h1=$(python3 -c 'import time; print(time.time())')
  stop "$dir"
  local served
  served=$(cat "$dir/heartbeats")
  # Heartbeats in the window: the rate times its length.
  awk -v c=$((after - before)) -v s="$h0" -v e="$h1" -v n="$sessions" \
    -v i="$interval" -v t="$served" \
    'BEGIN { w = e - s; printf "idle %.2f%% of a core, %.0f ns a heartbeat (%d taken in all)\n", c / w / 1e7, c / (w * n / i), t }'
}

# One run: prints "LABEL ns-per-command heartbeats-served load".
run() {
  local label=$1 dir=$work/$1.$2
  start "$dir" "$label"
  local load_avg before after
  load_avg=$(cut -d ' ' -f 1 /proc/loadavg)
  before=$(cpu_ns_of "$server_pid")
  taskset -c 1 "$ow" submit --target "127.0.0.1:$port" --session 1 \
    --workload mixed --count "$count" --rate "$rate" --heartbeat-ms 0 \
    --json >"$dir/client.json" 2>"$dir/client.err"
  after=$(cpu_ns_of "$server_pid")
  stop "$dir"
  local heartbeats
  heartbeats=$(cat "$dir/heartbeats")
  awk -v l="$label" -v c=$((after - before)) -v n="$count" \
    -v h="$heartbeats" -v a="$load_avg" \
    'BEGIN { printf "%s %.1f %d %s\n", l, c / n, h, a }'
}

echo "# bench_heartbeats.sh: $(nproc) CPUs, $(date -u +%FT%TZ);" \
  "$(uptime)"
echo "# label, server ns of CPU a command, heartbeats the service took, load"
port=
idle
results=$work/results
for i in $(seq 1 "$runs"); do
  run off "$i" | tee -a "$results"
  run on "$i" | tee -a "$results"
done
median() {
  grep "^$1 " "$results" | awk '{print $2}' | sort -n |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
off=$(median off)
on=$(median on)
awk -v off="$off" -v on="$on" 'BEGIN {
  printf "median: off %.1f ns, on %.1f ns a command: x%.3f\n", off, on, on / off }'
