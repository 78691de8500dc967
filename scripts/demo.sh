#!/usr/bin/env bash
# The main job, what `make demo` runs: the whole story on loopback.
#
#   1. the codec's decode figures on a million generated frames;
#   2. `orderwire serve` on 127.0.0.1 with a fresh journal (batch durability);
#   3. two `orderwire submit` clients at once, sessions 1 and 2, half a
#      million `mixed` commands each on the same 64 accounts (so they trade
#      with each other, and try to cancel each other's orders: NotOwner),
#      every command acknowledged only once durable and checked against
#      its command, with throughput and latency;
#   4. the server stopped cleanly (SIGINT), its counters; it wrote a
#      snapshot of its state every DEMO_SNAPSHOT_EVERY records
#      (--snapshot-every) from a forked child while it served;
#   5. the server restarted on the same journal: it starts from its newest
#      snapshot and replays only the records after it; sessions 3 and 4
#      trade on it (a tenth of the commands), then it stops again;
#   6. `orderwire replay --reports-dir` of the journal, and the proof: for
#      each session, the reports its client received and the reports the
#      replay produces for it are the same bytes (SHA-256 side by side).
#
# Usage: scripts/demo.sh [BUILD_DIR] (default build/release).
set -euo pipefail
build=${1:-build/release}
ow="$build/cli/orderwire"
count=${DEMO_COUNT:-1000000}
port=${DEMO_PORT:-7400}
snapshot_every=${DEMO_SNAPSHOT_EVERY:-300000}
[ -x "$ow" ] || { echo "demo.sh: $ow not built (make build)" >&2; exit 2; }

work=$(mktemp -d /tmp/orderwire-demo.XXXXXX)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cpus=$(nproc)
pin_server=() pin_client=()
if command -v taskset >/dev/null && [ "$cpus" -ge 2 ]; then
  pin_server=(taskset -c 0) pin_client=(taskset -c 1)
fi

echo "== 1. codec: decode a mixed stream of $count command frames =="
"${pin_client[@]}" "$ow" bench-decode --count "$count" --seed 1 --passes 9 |
  sed -n '3,7p'
echo

# start_server LOG: `orderwire serve` on the demo's journal, snapshotting
# every $snapshot_every records; waits until it listens.
start_server() {
  "${pin_server[@]}" "$ow" serve --listen "127.0.0.1:$port" \
    --journal "$work/journal" --durability batch \
    --snapshot-every "$snapshot_every" \
    --stats-json "$work/serve-stats.json" 2>"$1" &
  server_pid=$!
  for _ in $(seq 1 600); do
    grep -q "listening on" "$1" 2>/dev/null && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$1" >&2; exit 1; }
    sleep 0.05
  done
  echo "demo.sh: serve did not start" >&2
  exit 1
}

# submit_sessions COUNT SESSION...: one `orderwire submit` per session at
# once, COUNT mixed commands each; prints each one's summary.
submit_sessions() {
  local n=$1
  shift
  local pids=() session failed=0
  for session in "$@"; do
    "${pin_client[@]}" "$ow" submit --target "127.0.0.1:$port" \
      --session "$session" --workload mixed --count "$n" \
      --seed "$session" --window 16384 \
      --reports "$work/client-reports-$session.bin" \
      >"$work/submit-$session.log" 2>&1 &
    pids+=($!)
  done
  local i=0
  for session in "$@"; do
    wait "${pids[$i]}" || failed=1
    i=$((i + 1))
    echo "-- session $session"
    sed 's/^/   /' "$work/submit-$session.log"
  done
  [ "$failed" -eq 0 ] || { echo "demo.sh: a client failed" >&2; exit 1; }
}

stop_server() {
  kill -INT "$server_pid"
  wait "$server_pid"
  server_pid=
}

echo "== 2. orderwire serve on 127.0.0.1:$port, journal $work/journal, durability batch, a snapshot every $snapshot_every records =="
start_server "$work/serve.log"
sed 's/^/   /' "$work/serve.log"
echo

per_session=$((count / 2))
echo "== 3. orderwire submit: sessions 1 and 2 at once, $per_session mixed commands each =="
submit_sessions "$per_session" 1 2
echo

echo "== 4. stop the server cleanly (SIGINT) =="
stop_server
grep "snapshot at index" "$work/serve.log" | sed 's/^/   /'
sed -n '/stopped/,$p' "$work/serve.log"
ls -l "$work/journal/snapshots" | sed 's/^/   /'
echo

later=$((count / 10))
echo "== 5. restart on the same journal: from its newest snapshot, only the tail replayed; sessions 3 and 4 trade, $later commands each =="
start_server "$work/serve-restart.log"
sed 's/^/   /' "$work/serve-restart.log"
grep -q "started from snapshot" "$work/serve-restart.log" || {
  echo "demo.sh: the restart did not start from a snapshot" >&2
  exit 1
}
submit_sessions "$later" 3 4
stop_server
sed -n '/stopped/,$p' "$work/serve-restart.log" | head -n 3
echo

echo "== 6. orderwire replay --no-snapshot --reports-dir of the whole journal =="
"$ow" replay --journal "$work/journal" --no-snapshot --reports-dir "$work/replay"
"$ow" journal inspect "$work/journal" | head -n 8
echo
# Sessions 1 and 2 left before the restart: what sessions 3 and 4 did
# afterwards filled some of their resting orders, and those reports (in the
# journal, and in the replay) never reached their clients. So for them the
# proof is that the reports the client received are, byte for byte, the
# replay's first ones; for 3 and 4, all of them.
for session in 1 2 3 4; do
  client="$work/client-reports-$session.bin"
  replay="$work/replay/session-$session.bin"
  client_bytes=$(stat -c %s "$client")
  replay_bytes=$(stat -c %s "$replay")
  compared=$replay_bytes
  [ "$session" -le 2 ] && compared=$client_bytes
  client_hash=$(sha256sum "$client" | cut -d' ' -f1)
  replay_hash=$(head -c "$compared" "$replay" | sha256sum | cut -d' ' -f1)
  echo "session $session: received by its client $client_bytes bytes, sha256 $client_hash"
  if [ "$compared" = "$replay_bytes" ]; then
    echo "session $session: produced by the replay  $replay_bytes bytes, sha256 $replay_hash"
  else
    echo "session $session: the replay's first      $compared bytes, sha256 $replay_hash" \
      "(then $((replay_bytes - compared)) bytes of reports made after its client left)"
  fi
  if [ "$client_hash" != "$replay_hash" ]; then
    echo "DIFFERENT: the replay does not reproduce session $session's reports" >&2
    exit 1
  fi
done
echo "identical: the journal reproduces every report each session received."
