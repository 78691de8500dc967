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
#   4. the server stopped cleanly (SIGINT), its counters;
#   5. `orderwire replay --reports-dir` of the journal, and the proof: for
#      each session, the reports its client received and the reports the
#      replay produces for it are the same bytes (SHA-256 side by side).
#
# Usage: scripts/demo.sh [BUILD_DIR] (default build/release).
set -euo pipefail
build=${1:-build/release}
ow="$build/cli/orderwire"
count=${DEMO_COUNT:-1000000}
port=${DEMO_PORT:-7400}
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

echo "== 2. orderwire serve on 127.0.0.1:$port, journal $work/journal, durability batch =="
"${pin_server[@]}" "$ow" serve --listen "127.0.0.1:$port" \
  --journal "$work/journal" --durability batch \
  --stats-json "$work/serve-stats.json" 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 1 100); do
  grep -q "listening on" "$work/serve.log" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.05
done
sed 's/^/   /' "$work/serve.log"
echo

per_session=$((count / 2))
echo "== 3. orderwire submit: sessions 1 and 2 at once, $per_session mixed commands each =="
pids=()
for session in 1 2; do
  "${pin_client[@]}" "$ow" submit --target "127.0.0.1:$port" \
    --session "$session" --workload mixed --count "$per_session" \
    --seed "$session" --window 16384 \
    --reports "$work/client-reports-$session.bin" \
    >"$work/submit-$session.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in 0 1; do
  wait "${pids[$i]}" || failed=1
  echo "-- session $((i + 1))"
  sed 's/^/   /' "$work/submit-$((i + 1)).log"
done
[ "$failed" -eq 0 ] || { echo "demo.sh: a client failed" >&2; exit 1; }
echo

echo "== 4. stop the server cleanly (SIGINT) =="
kill -INT "$server_pid"
wait "$server_pid"
server_pid=
sed -n '/stopped/,$p' "$work/serve.log"
echo

echo "== 5. orderwire replay --reports-dir of the journal =="
"$ow" replay --journal "$work/journal" --reports-dir "$work/replay"
"$ow" journal inspect "$work/journal" | head -n 8
echo
for session in 1 2; do
  client="$work/client-reports-$session.bin"
  replay="$work/replay/session-$session.bin"
  client_hash=$(sha256sum "$client" | cut -d' ' -f1)
  replay_hash=$(sha256sum "$replay" | cut -d' ' -f1)
  echo "session $session: received by its client $(stat -c %s "$client") bytes, sha256 $client_hash"
  echo "session $session: produced by the replay  $(stat -c %s "$replay") bytes, sha256 $replay_hash"
  if [ "$client_hash" != "$replay_hash" ]; then
    echo "DIFFERENT: the replay does not reproduce session $session's reports" >&2
    exit 1
  fi
done
echo "identical: the journal reproduces every report each session received."
