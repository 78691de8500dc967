#!/usr/bin/env bash
# The main job, what `make demo` runs: the whole story on loopback.
#
#   1. the codec's decode figures on a million generated frames;
#   2. `orderwire serve` on 127.0.0.1 with a fresh journal (batch durability),
#      publishing the market-data feed (--md-target, unicast on loopback)
#      with its request server (--md-request-listen);
#   3. two `orderwire submit` clients at once, sessions 1 and 2, half a
#      million `mixed` commands each on the same 64 accounts (so they trade
#      with each other, and try to cancel each other's orders: NotOwner),
#      every command acknowledged only once durable and checked against
#      its command, with throughput and latency; a second after they
#      start, `orderwire md watch` joins the feed late, from a snapshot,
#      and follows the books while they trade;
#   4. the server stopped cleanly (SIGINT), its counters; it wrote a
#      snapshot of its state every DEMO_SNAPSHOT_EVERY records
#      (--snapshot-every) from a forked child while it served. The feed's
#      EndOfSession reaches the watcher; its books, as depth tables, are
#      the books the journal gives (`replay --book`), line for line;
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
md_port=${DEMO_MD_PORT:-7401}
md_request=${DEMO_MD_REQUEST_PORT:-7402}
snapshot_every=${DEMO_SNAPSHOT_EVERY:-300000}
[ -x "$ow" ] || { echo "demo.sh: $ow not built (make build)" >&2; exit 2; }

work=$(mktemp -d /tmp/orderwire-demo.XXXXXX)
server_pid=
watch_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  [ -n "$watch_pid" ] && kill "$watch_pid" 2>/dev/null || true
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
    --md-target "127.0.0.1:$md_port" \
    --md-request-listen "127.0.0.1:$md_request" \
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

# start_watch: `orderwire md watch` on the feed (joining by snapshot), its
# change lines into $work/watch.out; at the end, every book's depth table.
start_watch() {
  "${pin_client[@]}" "$ow" md watch --target "127.0.0.1:$md_port" \
    --request "127.0.0.1:$md_request" --book 1000000 \
    >"$work/watch.out" 2>"$work/watch.err" &
  watch_pid=$!
}

# stop_watch: once the watcher has every message before the feed's
# EndOfSession ("end seq=S"), SIGINT; its books go to $work/watch.err.
stop_watch() {
  for _ in $(seq 1 200); do
    grep -q "^end seq=" "$work/watch.out" 2>/dev/null && break
    sleep 0.05
  done
  kill -INT "$watch_pid"
  wait "$watch_pid"
  watch_pid=
}

# submit_sessions COUNT [--late-watch] SESSION...: one `orderwire submit`
# per session at once, COUNT mixed commands each; prints each one's
# summary. --late-watch starts the feed watcher a second after them.
submit_sessions() {
  local n=$1
  shift
  local late_watch=0
  if [ "$1" = --late-watch ]; then
    late_watch=1
    shift
  fi
  local pids=() session failed=0
  for session in "$@"; do
    "${pin_client[@]}" "$ow" submit --target "127.0.0.1:$port" \
      --session "$session" --workload mixed --count "$n" \
      --seed "$session" --window 16384 \
      --reports "$work/client-reports-$session.bin" \
      >"$work/submit-$session.log" 2>&1 &
    pids+=($!)
  done
  if [ "$late_watch" = 1 ]; then
    sleep 1
    start_watch
  fi
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

echo "== 2. orderwire serve on 127.0.0.1:$port, journal $work/journal, durability batch, a snapshot every $snapshot_every records; the market-data feed to 127.0.0.1:$md_port, its request server on 127.0.0.1:$md_request =="
start_server "$work/serve.log"
sed 's/^/   /' "$work/serve.log"
echo

per_session=$((count / 2))
echo "== 3. orderwire submit: sessions 1 and 2 at once, $per_session mixed commands each; a second later, orderwire md watch joins the feed from a snapshot =="
submit_sessions "$per_session" --late-watch 1 2
echo

echo "== 4. stop the server cleanly (SIGINT) =="
stop_server
grep "snapshot at index" "$work/serve.log" | sed 's/^/   /'
sed -n '/stopped/,$p' "$work/serve.log"
ls -l "$work/journal/snapshots" | sed 's/^/   /'
echo

echo "== 4b. the late joiner's books against the journal's =="
stop_watch
echo "   md watch printed $(wc -l <"$work/watch.out") lines of best prices and trades, the last ones:"
grep -v '^end seq=' "$work/watch.out" | tail -n 3 | sed 's/^/     /'
grep -E '^(snapshot|end) seq=' "$work/watch.out" | sed 's/^/   /'
grep '^md watch:' "$work/watch.err" | fold -s -w 100 | sed 's/^/   /'
# The depth tables in both standard errors (the same text for the same
# books: cli/book_text.h).
"$ow" replay --journal "$work/journal" --book 1000000 >/dev/null \
  2>"$work/replay-book.err"
books() { grep -E '^(instrument [0-9]+:|  |every book is empty)' "$1"; }
books "$work/watch.err" >"$work/watch-books.txt"
books "$work/replay-book.err" >"$work/journal-books.txt"
head -n 6 "$work/watch-books.txt" | sed 's/^/   /'
watch_books=$(sha256sum <"$work/watch-books.txt" | cut -d' ' -f1)
journal_books=$(sha256sum <"$work/journal-books.txt" | cut -d' ' -f1)
echo "   the watcher's books: $(grep -c '^instrument' "$work/watch-books.txt") instruments, $(wc -l <"$work/watch-books.txt") lines, sha256 $watch_books"
echo "   the journal's books: $(grep -c '^instrument' "$work/journal-books.txt") instruments, $(wc -l <"$work/journal-books.txt") lines, sha256 $journal_books"
if [ "$watch_books" != "$journal_books" ] || [ ! -s "$work/watch-books.txt" ]; then
  diff "$work/journal-books.txt" "$work/watch-books.txt" | head -n 20 >&2 || true
  echo "DIFFERENT: the late joiner's books are not the journal's" >&2
  exit 1
fi
echo "identical: the subscriber that joined late from a snapshot holds the engine's books."
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
