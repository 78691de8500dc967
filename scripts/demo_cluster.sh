#!/usr/bin/env bash
# `make demo-cluster`: a replicated orderwire engine failing over, on
# loopback (docs/REPLICATION.md, docs/OPERATIONS.md "Failover"):
#
#   1. a 3-node NATS JetStream cluster (scripts/nats_cluster.sh);
#   2. the primary (member-a: serve --durability replicated --lease, an R3
#      journal stream) and a hot standby (member-b: serve --standby);
#      `orderwire cluster status`;
#   3. two `orderwire submit` sessions trading with --target primary,standby;
#      mid-load the primary is killed (SIGKILL): the standby takes the lease,
#      catches up, publishes its epoch marker and serves; the clients fail
#      over and finish; `orderwire cluster status` again;
#   4. the old primary restarts as a standby on its own journal and rejoins
#      the new primary; once caught up its records equal the new primary's;
#   5. the new primary's journal replays into what each client received,
#      byte for byte.
#
# Every process it starts is killed on exit (trap), and its directory
# removed. Usage: scripts/demo_cluster.sh [BUILD_DIR] (default build/release).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
ow=$build/cli/orderwire
[ -x "$ow" ] || {
  echo "demo_cluster.sh: $ow not built (make build)" >&2
  exit 1
}
engine=demo
count=${COUNT:-20000}  # commands per session
servers=
nats_dir=
# shellcheck source=scripts/cluster_lib.sh
source "$root/scripts/cluster_lib.sh"

work=$(mktemp -d /tmp/orderwire-demo-cluster.XXXXXX)
cleanup() {
  kill_tracked
  if [ -n "$nats_dir" ]; then "$root/scripts/nats_cluster.sh" stop "$nats_dir" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

status() {
  "$ow" cluster status --nats "$servers" --engine-name "$engine" | sed 's/^/    /'
}

echo "== 1. a 3-node NATS JetStream cluster on loopback =="
nats_dir=$work/nats
servers=$("$root/scripts/nats_cluster.sh" start "$nats_dir" 3)
echo "servers $servers"
echo

echo "== 2. the primary (member-a) and a hot standby (member-b) =="
read -r pa pb <<<"$(free_udp_ports 2)"
printf '[sessions.1]\naccounts = "any"\n[sessions.2]\naccounts = "any"\n' \
  >"$work/service.toml"
common=(--nats "$servers" --engine-name "$engine" --replicas 3 --lease-ms 1500
  --config "$work/service.toml")
# Right after the cluster starts an R3 stream may not be placeable for a
# moment (scripts/nats_cluster.sh): the primary is started again then.
a=""
for _ in 1 2 3 4 5; do
  "$ow" serve --durability replicated --lease "${common[@]}" \
    --journal "$work/a" --listen "127.0.0.1:$pa" --member-name member-a \
    2>"$work/a.log" &
  a=$!
  track_pid "$a"
  if wait_for_log "$work/a.log" "listening on" 20 "$a"; then break; fi
  a=""
  sleep 0.5
done
[ -n "$a" ] || {
  cat "$work/a.log" >&2
  exit 1
}
echo "primary  member-a: pid $a, 127.0.0.1:$pa, journal $work/a"
"$ow" serve --standby "${common[@]}" --journal "$work/b" \
  --listen "127.0.0.1:$pb" --member-name member-b 2>"$work/b.log" &
b=$!
track_pid "$b"
wait_for_log "$work/b.log" "standby (answering no client" 20 "$b" || {
  cat "$work/b.log" >&2
  exit 1
}
echo "standby  member-b: pid $b, takes over on 127.0.0.1:$pb, journal $work/b"
sleep 1 # the members' reports reach the members bucket
echo "orderwire cluster status:"
status
echo

echo "== 3. two sessions trade; the primary is killed mid-load =="
clients=()
for s in 1 2; do
  "$ow" submit --session "$s" --target "127.0.0.1:$pa,127.0.0.1:$pb" \
    --failover-timeout-ms 500 --workload mixed --count "$count" --seed "$s" \
    --rate 5000 --window 256 --give-up-ms 30000 \
    --reports "$work/client-$s.bin" >"$work/client-$s.out" 2>"$work/client-$s.log" &
  clients+=($!)
  track_pid "$!"
done
until [ "$(stream_last_index)" -ge $((2 * count / 3)) ]; do sleep 0.05; done
t0=$(now_ms)
kill -KILL "$a"
wait "$a" 2>/dev/null || true # reaped here: no job notice later
echo "$(date -u +%T.%3N) SIGKILL the primary (pid $a) at journal index ~$(stream_last_index)"
wait_for_log "$work/b.log" "serving on 127.0.0.1:$pb as primary" 30 "$b" || {
  echo "the standby did not take over:" >&2
  cat "$work/b.log" >&2
  exit 1
}
echo "the standby took over in $(($(now_ms) - t0)) ms; its log:"
grep -E "lease acquired|caught up|epoch marker|serving on" "$work/b.log" | sed 's/^/    /'
for i in 0 1; do
  wait "${clients[$i]}"
  echo "session $((i + 1)):"
  grep -E "failing over" "$work/client-$((i + 1)).log" | sed 's/^/    /' || true
  grep -E "acknowledged|failover" "$work/client-$((i + 1)).out" | sed 's/^/    /' || true
done
echo "orderwire cluster status:"
status
echo

echo "== 4. the old primary restarts as a standby on its own journal =="
"$ow" serve --standby "${common[@]}" --journal "$work/a" \
  --listen "127.0.0.1:$pa" --member-name member-a 2>"$work/rejoin.log" &
r=$!
track_pid "$r"
wait_for_log "$work/rejoin.log" "standby (answering no client" 30 "$r" || {
  echo "the old primary did not start as a standby:" >&2
  cat "$work/rejoin.log" >&2
  exit 1
}
# What it journaled that the stream never acknowledged (killed between its
# journal and the stream's acknowledgement) is cut and kept aside.
grep -E "REJOINING" "$work/rejoin.log" | sed 's/^/    /' ||
  echo "    (nothing to cut: its journal ends where the new epoch began)"
last=$(stream_last_index)
deadline=$((SECONDS + 30))
until "$ow" cluster status --nats "$servers" --engine-name "$engine" --json |
  python3 -c '
import json, sys
status = json.load(sys.stdin)
sys.exit(0 if any(m["name"] == "member-a" and m["role"] == "standby"
                  and m["applied_index"] >= int(sys.argv[1])
                  for m in status["members"]) else 1)' "$last"; do
  [ $SECONDS -lt $deadline ] || {
    echo "member-a did not catch up to $last" >&2
    exit 1
  }
  sleep 0.1
done
echo "orderwire cluster status:"
status
kill -TERM "$r" "$b"
wait "$r" "$b" || true
if cmp -s <(journal_records "$work/a") <(journal_records "$work/b"); then
  echo "member-a's journal equals member-b's: $(journal_records "$work/b" | wc -l) records"
else
  echo "DIFFERENT: member-a's journal is not member-b's" >&2
  exit 1
fi
echo

echo "== 5. the new primary's journal replays into what each client received =="
"$ow" replay --journal "$work/b" --no-snapshot --reports-dir "$work/replay" >/dev/null
for s in 1 2; do
  client="$work/client-$s.bin"
  bytes=$(stat -c %s "$client")
  # The other session may fill this one's resting orders after it left:
  # those reports are in the replay after the ones it received.
  if cmp -s -n "$bytes" "$client" "$work/replay/session-$s.bin"; then
    echo "session $s: its $bytes bytes of reports are the replay's first $bytes, byte for byte"
  else
    echo "DIFFERENT: session $s's reports are not the replay's" >&2
    exit 1
  fi
done
echo "done: every process stopped, $work removed."
