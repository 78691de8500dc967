#!/usr/bin/env bash
# The main job, what `make demo` runs: the whole story on loopback.
#
#   1. the codec's decode figures on a million generated frames;
#   2. `orderwire serve` on 127.0.0.1 with a fresh journal (batch durability);
#   3. `orderwire submit`: a million `mixed` commands from one session,
#      acknowledged only once durable, with throughput and latency;
#   4. the server stopped cleanly (SIGINT), its counters;
#   5. `orderwire replay` of the journal, and the proof: the reports the
#      client received and the reports the replay produces are the same
#      bytes (their SHA-256 side by side).
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

echo "== 3. orderwire submit: $count mixed commands, session 1 =="
"${pin_client[@]}" "$ow" submit --target "127.0.0.1:$port" --session 1 \
  --workload mixed --count "$count" --seed 1 --window 16384 \
  --reports "$work/client-reports.bin"
echo

echo "== 4. stop the server cleanly (SIGINT) =="
kill -INT "$server_pid"
wait "$server_pid"
server_pid=
sed -n '/stopped/,$p' "$work/serve.log"
echo

echo "== 5. orderwire replay of the journal =="
"$ow" replay --journal "$work/journal" --reports "$work/replay-reports.bin"
"$ow" journal inspect "$work/journal" | head -n 8
echo
client_hash=$(sha256sum "$work/client-reports.bin" | cut -d' ' -f1)
replay_hash=$(sha256sum "$work/replay-reports.bin" | cut -d' ' -f1)
client_bytes=$(stat -c %s "$work/client-reports.bin")
replay_bytes=$(stat -c %s "$work/replay-reports.bin")
echo "reports received by the client: $client_bytes bytes, sha256 $client_hash"
echo "reports produced by the replay: $replay_bytes bytes, sha256 $replay_hash"
if [ "$client_hash" = "$replay_hash" ]; then
  echo "identical: the journal reproduces every report the client received."
else
  echo "DIFFERENT: the replay does not reproduce the client's reports" >&2
  exit 1
fi
