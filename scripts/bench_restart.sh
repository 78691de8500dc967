#!/usr/bin/env bash
# Restart time of `orderwire serve` with and without a snapshot, and the
# cost of taking snapshots while serving: what docs/BENCHMARKS.md
# "Snapshots while serving" and "Bounded restart" record.
#
#   scripts/bench_restart.sh BUILD_DIR
#
# 1. A journal of about RECORDS records: `serve --snapshot-every EVERY`
#    while two `submit --workload mixed` clients send RECORDS/2 commands
#    each as fast as their window allows; the server's counters at the end
#    give the snapshots written and the time spent in fork() (last, max).
# 2. RUNS times each, alternating: `serve` on that journal (it starts from
#    the newest snapshot and replays the tail) and `serve --no-snapshot`
#    (the whole journal); the time from exec to "listening on" (wall
#    clock), and the banner's own verify, load and replay times. Then RUNS
#    times `cat` of the segment files and `replay --verify` (the start-up
#    verification's baselines).
# 3. With LIVE (default 1000000) > 0: a fresh journal, one session sending
#    LIVE GoodTillCancel buys that never cross (so LIVE orders are live at
#    the end), with a snapshot every LIVE/4 records: fork() time with that
#    many live orders, the snapshot's size and write time (the child's
#    exit, seen by the parent within 1 ms), and a restart from it.
#
# The server is pinned to SERVER_CPU, the clients to CLIENT_CPU. The load
# average is printed: the machine may be shared.
#
# Environment (defaults): RECORDS (3000000), EVERY (1000000), RUNS (3),
# LIVE (1000000), SERVER_CPU (0), CLIENT_CPU (1), TMPDIR (/tmp).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: scripts/bench_restart.sh BUILD_DIR" >&2; exit 2; }
ow=$1/cli/orderwire
[ -x "$ow" ] || { echo "bench_restart.sh: $ow not built" >&2; exit 2; }
records=${RECORDS:-3000000}
every=${EVERY:-1000000}
runs=${RUNS:-3}
live=${LIVE:-1000000}
server_cpu=${SERVER_CPU:-0}
client_cpu=${CLIENT_CPU:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/ow-bench-restart.XXXXXX")
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -INT "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# start JOURNAL LOG ARGS...: serve on a kernel-chosen port; sets port,
# server_pid and started_after (seconds from exec to "listening on").
start() {
  local journal=$1 log=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  taskset -c "$server_cpu" "$ow" serve --listen 127.0.0.1:0 \
    --journal "$journal" --durability batch "$@" 2>"$log" &
  server_pid=$!
  port=
  while [ -z "$port" ]; do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -n 1)
    if [ -z "$port" ]; then
      kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
      sleep 0.005
    fi
  done
  t1=$(date +%s.%N)
  started_after=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')
}
stop() {
  kill -INT "$server_pid"
  wait "$server_pid"
  server_pid=
}
json_field() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1"; }

echo "# bench_restart.sh: $(nproc) CPUs, kernel $(uname -r), $(date -u +%FT%TZ)"
echo "# load at start: $(cut -d ' ' -f 1-3 /proc/loadavg)"

# --- 1 -----------------------------------------------------------------------
j=$work/journal
start "$j" "$work/build.log" --snapshot-every "$every" \
  --stats-json "$work/build.json"
pids=()
for session in 1 2; do
  taskset -c "$client_cpu" "$ow" submit --target "127.0.0.1:$port" \
    --session "$session" --workload mixed --count $((records / 2)) \
    --seed "$session" --window 16384 >"$work/submit-$session.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
stop
echo "journal of $(json_field "$work/build.json" last_index) records:" \
  "$(json_field "$work/build.json" snapshots_taken) snapshots written while" \
  "serving, fork() last $(($(json_field "$work/build.json" fork_ns_last) / 1000)) us," \
  "max $(($(json_field "$work/build.json" fork_ns_max) / 1000)) us"
ls -l "$j/snapshots"

# --- 2 -----------------------------------------------------------------------
for run in $(seq 1 "$runs"); do
  for mode in snapshot full; do
    args=()
    [ "$mode" = full ] && args=(--no-snapshot)
    start "$j" "$work/restart.log" "${args[@]}"
    stop
    echo "restart $mode run $run: listening after $started_after s;" \
      "$(grep -E 'verified|loaded in|replayed' "$work/restart.log" | sed 's/^ *//' | tr '\n' ' ')"
  done
done
# The start-up check of what neither recovery nor the replay reads, beside
# the same check offline (replay --verify) and reading the segment files.
for run in $(seq 1 "$runs"); do
  t0=$(date +%s.%N)
  cat "$j"/*.owj >/dev/null
  t1=$(date +%s.%N)
  "$ow" replay --verify --journal "$j" >"$work/verify.log" 2>&1
  t2=$(date +%s.%N)
  echo "verify run $run: cat of the segments $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}') s," \
    "replay --verify $(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.3f", b - a}') s ($(grep -E 'records/s' "$work/verify.log" | sed 's/^ *//'))"
done

# --- 3 -----------------------------------------------------------------------
if [ "$live" -gt 0 ]; then
  python3 - "$live" >"$work/live.jsonl" <<'EOF'
import sys
n = int(sys.argv[1])
for i in range(1, n + 1):
    print('{"kind":"NewLimit","sequence":%d,"account_id":%d,"client_order_id":%d,'
          '"instrument_id":%d,"side":1,"time_in_force":1,'
          '"price":%d,"quantity":10}' % (i, 1 + i % 64, i, 1 + i % 8,
                                         1 + i % 1000))
EOF
  "$ow" encode <"$work/live.jsonl" >"$work/live.bin"
  jl=$work/journal-live
  start "$jl" "$work/live.log" --snapshot-every $((live / 4)) \
    --stats-json "$work/live.json"
  taskset -c "$client_cpu" "$ow" submit --target "127.0.0.1:$port" \
    --session 1 --input "$work/live.bin" --window 16384 \
    >"$work/submit-live.log" 2>&1
  sleep 1  # the last snapshot's child finishes
  stop
  echo "$live live orders: $(json_field "$work/live.json" snapshots_taken)" \
    "snapshots while serving, fork() last" \
    "$(($(json_field "$work/live.json" fork_ns_last) / 1000)) us, max" \
    "$(($(json_field "$work/live.json" fork_ns_max) / 1000)) us"
  grep "snapshot at index" "$work/live.log" || true
  ls -l "$jl/snapshots"
  for run in $(seq 1 "$runs"); do
    start "$jl" "$work/restart-live.log"
    stop
    echo "restart with $live live orders run $run: listening after $started_after s;" \
      "$(grep -E 'loaded in|replayed' "$work/restart-live.log" | sed 's/^ *//' | tr '\n' ' ')"
  done
fi
echo "# load at end: $(cut -d ' ' -f 1-3 /proc/loadavg)"
