#!/usr/bin/env bash
# Repeated failovers (docs/REPLICATION.md "Failover test and runs"): RUNS
# runs (default 20) of each variant, on a fresh 3-node NATS cluster on
# loopback (scripts/nats_cluster.sh) with an R3 journal stream, a replicated
# primary holding the lease (member-a), a hot standby (member-b) and two
# `orderwire submit` sessions with both as targets, trading the mixed
# workload on shared accounts. Mid-load (a third of the commands on the
# stream) the variant's fault:
#
#   kill-primary      SIGKILL the primary
#   kill-nats-leader  SIGKILL the nats-server leading the journal stream
#                     (found from the monitoring endpoint's /jsz)
#   kill-both         both at once
#   pause-primary     SIGSTOP the primary until the standby serves, then
#                     SIGCONT: it must stop saying it lost the lease or
#                     was fenced
#
# The clients finish; then the member holding the lease is the new primary
# and its journal is the truth: for each session, the commands the client
# got acknowledged (a session acknowledges in order: 1..acknowledged) that
# its journal lacks are "lost", commands it holds twice "duplicated", and
# the reports the client received must be the first ones of
# `orderwire replay --reports-dir` of that journal, byte for byte. An old
# primary that the standby replaced restarts as `serve --standby` on its own
# journal; it must say "REJOINING AS A STANDBY" exactly when its journal
# goes past the new epoch's first index (a tail to cut), and once caught up
# its records must equal the new primary's.
#
# Prints a table: variant, runs, takeovers, takeover time (fault to the
# standby's "serving on" line) p50 and max, acknowledged-lost, duplicated,
# reports differing, rejoins with an equal journal, failed runs. Exit 1 if
# anything was lost, duplicated or differed or a run failed; a failed run's
# directory is kept and named.
#
#   scripts/failover_runs.sh [RUNS]        (build/release/cli/orderwire)
#   VARIANTS="kill-primary pause-primary" COUNT=4000 scripts/failover_runs.sh 3
#   LEASE_MS=12000 ACK_TIMEOUT_MS=15000 VARIANTS=kill-nats-leader \
#     scripts/failover_runs.sh 3   (sized to ride out NATS re-elections:
#     docs/REPLICATION.md "When NATS loses a leader"; defaults 1500, 5000)
#
# One run takes 10-20 s. Needs nats-server, curl, python3.
set -euo pipefail

runs=${1:-20}
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || {
  echo "usage: scripts/failover_runs.sh [RUNS]" >&2
  exit 2
}
root=$(cd "$(dirname "$0")/.." && pwd)
ow=${OW:-$root/build/release/cli/orderwire}
[ -x "$ow" ] || {
  echo "failover_runs.sh: $ow not built (make build)" >&2
  exit 1
}
variants=${VARIANTS:-kill-primary kill-nats-leader kill-both pause-primary}
count=${COUNT:-4000}  # commands per session
lease_ms=${LEASE_MS:-1500}
ack_timeout_ms=${ACK_TIMEOUT_MS:-5000}
engine=runs
servers=
nats_dir=
# shellcheck source=scripts/cluster_lib.sh
source "$root/scripts/cluster_lib.sh"

work=$(mktemp -d /tmp/orderwire-failover-runs.XXXXXX)
keep=0
cleanup() {
  kill_tracked
  if [ -n "$nats_dir" ]; then "$root/scripts/nats_cluster.sh" stop "$nats_dir" || true; fi
  if [ "$keep" = 0 ]; then rm -rf "$work"; else echo "kept: $work" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

results=$work/results.tsv
: >"$results"

# analyse DIR JOURNAL: prints "lost duplicated differing" over sessions 1, 2.
analyse() {
  local dir=$1 journal=$2
  "$ow" replay --journal "$journal" --no-snapshot --reports-dir "$dir/replay" \
    >/dev/null 2>&1
  journal_records "$journal" >"$dir/records.jsonl"
  python3 - "$dir" <<'EOF'
import json, os, sys
d = sys.argv[1]
seqs = {}
for line in open(os.path.join(d, "records.jsonl")):  # empty: no journal
    r = json.loads(line)
    seqs.setdefault(r["session_id"], []).append(r["frame"]["sequence"])
lost = duplicated = differing = 0
for s in (1, 2):
    try:  # a client that failed printed no summary: nothing acknowledged
        acked = json.load(open(os.path.join(d, f"client-{s}.json")))["acknowledged"]
    except (OSError, ValueError, KeyError):
        acked = 0
    held = seqs.get(s, [])
    lost += len(set(range(1, acked + 1)) - set(held))
    duplicated += len(held) - len(set(held))
    live = open(os.path.join(d, f"client-{s}.bin"), "rb").read()
    path = os.path.join(d, "replay", f"session-{s}.bin")
    replayed = open(path, "rb").read() if os.path.exists(path) else b""
    if replayed[: len(live)] != live:
        differing += 1
print(lost, duplicated, differing)
EOF
}

# One run of variant $1 number $2 in its own directory; appends a line to
# $results: variant takeover_ms(- if none) lost duplicated differing
# rejoin(yes/no/-) ok(1/0).
run_once() {
  local variant=$1 n=$2
  local dir=$work/$variant-$n
  mkdir -p "$dir"
  nats_dir=$dir/nats
  servers=$("$root/scripts/nats_cluster.sh" start "$nats_dir" 3)
  local pa pb
  read -r pa pb <<<"$(free_udp_ports 2)"
  printf '[sessions.1]\naccounts = "any"\n[sessions.2]\naccounts = "any"\n' \
    >"$dir/service.toml"
  local common=(--nats "$servers" --engine-name "$engine" --replicas 3
    --lease-ms "$lease_ms" --ack-timeout-ms "$ack_timeout_ms"
    --config "$dir/service.toml")
  # Right after the cluster starts an R3 stream may not be placeable yet
  # (scripts/nats_cluster.sh): the primary is started again then.
  local a=""
  for _ in 1 2 3 4 5; do
    "$ow" serve --durability replicated --lease "${common[@]}" \
      --journal "$dir/a" --listen "127.0.0.1:$pa" --member-name member-a \
      2>"$dir/a.log" &
    a=$!
    track_pid "$a"
    if wait_for_log "$dir/a.log" "listening on" 20 "$a"; then break; fi
    kill -KILL "$a" 2>/dev/null || true
    wait "$a" 2>/dev/null || true
    a=""
    sleep 0.5
  done
  [ -n "$a" ] || { echo "run $variant $n: the primary did not start" >&2; return 1; }
  "$ow" serve --standby "${common[@]}" --journal "$dir/b" \
    --listen "127.0.0.1:$pb" --member-name member-b \
    2>"$dir/b.log" &
  local b=$!
  track_pid "$b"
  wait_for_log "$dir/b.log" "standby (answering no client" 20 "$b" || {
    echo "run $variant $n: the standby did not start" >&2
    return 1
  }
  local clients=() s
  for s in 1 2; do
    "$ow" submit --session "$s" --target "127.0.0.1:$pa,127.0.0.1:$pb" \
      --failover-timeout-ms 500 --workload mixed --count "$count" --seed "$s" \
      --rate 2000 --window 256 --give-up-ms 40000 \
      --reports "$dir/client-$s.bin" --json \
      >"$dir/client-$s.json" 2>"$dir/client-$s.log" &
    clients+=($!)
    track_pid "$!"
  done
  local deadline=$((SECONDS + 60))
  until [ "$(stream_last_index)" -ge $((2 * count / 3)) ]; do
    if [ $SECONDS -ge $deadline ]; then
      echo "run $variant $n: the load never reached a third" >&2
      return 1
    fi
    sleep 0.05
  done
  local leader="" t0
  case $variant in
    kill-nats-leader | kill-both)
      leader=$(stream_leader_node)
      [ -n "$leader" ] || { echo "run $variant $n: no stream leader found" >&2; return 1; }
      ;;
  esac
  t0=$(now_ms)
  case $variant in
    kill-primary)
      kill -KILL "$a"
      wait "$a" 2>/dev/null || true # reaped now: no job notice later
      ;;
    kill-nats-leader) kill -KILL "$(nats_node_pid "$leader")" ;;
    kill-both)
      kill -KILL "$a" "$(nats_node_pid "$leader")"
      wait "$a" 2>/dev/null || true
      ;;
    pause-primary) kill -STOP "$a" ;;
  esac
  local serving="serving on 127.0.0.1:$pb as primary" took="-"
  case $variant in
    kill-nats-leader)
      # The primary rides it out (or fail-stops and the standby takes over).
      ;;
    *)
      if ! wait_for_log "$dir/b.log" "$serving" 40 "$b"; then
        echo "run $variant $n: the standby never took over" >&2
        return 1
      fi
      took=$(($(now_ms) - t0))
      ;;
  esac
  if [ "$variant" = pause-primary ]; then
    kill -CONT "$a"
    # It must stop as no longer the primary: its lease check or the
    # stream's fence, whichever it meets first.
    deadline=$((SECONDS + 20))
    while kill -0 "$a" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
    if ! grep -qE "lost the lease|fenced" "$dir/a.log"; then
      echo "run $variant $n: the resumed primary did not stop as no longer the primary" >&2
      return 1
    fi
  fi
  local c alive=1
  while [ "$variant" = kill-nats-leader ] && [ "$alive" = 1 ]; do
    # A takeover here is timed as the others are (to 20 ms).
    if [ "$took" = - ] && grep -qF "$serving" "$dir/b.log"; then
      took=$(($(now_ms) - t0))
    fi
    alive=0
    for c in "${clients[@]}"; do
      if kill -0 "$c" 2>/dev/null; then alive=1; fi
    done
    sleep 0.02
  done
  local clients_ok=1
  for c in "${clients[@]}"; do
    wait "$c" || clients_ok=0
  done
  local holder journal old_dir
  holder=$(lease_holder 60)
  case $holder in
    member-a) journal=$dir/a old_dir="" ;;
    member-b) journal=$dir/b old_dir=$dir/a ;;
    *)
      echo "run $variant $n: no lease holder: $("$ow" cluster status \
        --nats "$servers" --engine-name "$engine" 2>&1 | tail -n 3)" >&2
      return 1
      ;;
  esac
  # The old primary rejoins as a standby on its own journal.
  local rejoin="-"
  if [ -n "$old_dir" ]; then
    kill -KILL "$a" 2>/dev/null || true
    wait "$a" 2>/dev/null || true
    # It cuts its tail (and says so) exactly when its journal goes past the
    # index where the new primary's epoch began.
    local old_last takeover_index must_cut=no
    old_last=$(journal_records "$old_dir" | tail -n 1 |
      python3 -c 'import json, sys; t = sys.stdin.read(); print(json.loads(t)["index"] if t else 0)')
    takeover_index=$(grep -o 'epoch marker published at sequence [0-9]* (epoch [0-9]*, next index [0-9]*' \
      "$dir/b.log" | tail -n 1 | grep -o '[0-9]*$' || echo 0)
    [ "${takeover_index:-0}" -gt 0 ] && [ "$old_last" -ge "$takeover_index" ] && must_cut=yes
    "$ow" serve --standby "${common[@]}" --journal "$old_dir" \
      --listen "127.0.0.1:$pa" --member-name member-a 2>"$dir/rejoin.log" &
    local r=$!
    track_pid "$r"
    rejoin=no
    local last
    last=$(stream_last_index)
    deadline=$((SECONDS + 30))
    while [ $SECONDS -lt $deadline ] && kill -0 "$r" 2>/dev/null; do
      if python3 -c '
import json, sys
status = json.loads(sys.argv[1] or "{}")
sys.exit(0 if any(m["name"] == "member-a" and m["role"] == "standby"
                  and m["applied_index"] >= int(sys.argv[2])
                  for m in status.get("members", [])) else 1)' \
        "$(cluster_json)" "$last"; then
        rejoin=yes
        break
      fi
      sleep 0.1
    done
    kill -TERM "$r" 2>/dev/null || true
    wait "$r" 2>/dev/null || true
    local did_cut=no
    grep -qF "REJOINING AS A STANDBY" "$dir/rejoin.log" && did_cut=yes
    [ "$did_cut" = "$must_cut" ] || rejoin=no
  fi
  # Stop the new primary so that its journal is still; then compare.
  local p
  [ "$holder" = member-a ] && p=$a || p=$b
  kill -TERM "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
  if [ "$rejoin" = yes ] &&
    ! cmp -s <(journal_records "$old_dir") <(journal_records "$journal"); then
    rejoin=no
  fi
  local figures
  figures=$(analyse "$dir" "$journal")
  kill_tracked
  "$root/scripts/nats_cluster.sh" stop "$nats_dir"
  nats_dir=
  read -r lost dup differ <<<"$figures"
  local ok=1
  if [ "$clients_ok" = 1 ] && [ "$lost$dup$differ" = 000 ] && [ "$rejoin" != no ]; then
    rm -rf "$dir"
  else
    ok=0
    keep=1
    echo "run $variant $n failed: clients finished $clients_ok, lost $lost, duplicated $dup," \
      "reports differing $differ, rejoin $rejoin: $dir" >&2
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$took" "$lost" "$dup" \
    "$differ" "$rejoin" "$ok" >>"$results"
  printf '  %-16s run %2d: takeover %6s ms, lost %s, duplicated %s, reports differing %s, rejoin %s\n' \
    "$variant" "$n" "$took" "$lost" "$dup" "$differ" "$rejoin"
}

for variant in $variants; do
  case $variant in
    kill-primary | kill-nats-leader | kill-both | pause-primary) ;;
    *)
      echo "failover_runs.sh: unknown variant '$variant'" >&2
      exit 2
      ;;
  esac
  for ((n = 1; n <= runs; n++)); do
    if ! run_once "$variant" "$n"; then
      keep=1
      kill_tracked
      if [ -n "$nats_dir" ]; then "$root/scripts/nats_cluster.sh" stop "$nats_dir" || true; fi
      nats_dir=
      printf '%s\t-\t-\t-\t-\t-\t0\n' "$variant" >>"$results"
    fi
  done
done

python3 - "$results" <<'EOF'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
print()
print(f"{'variant':<17} {'runs':>4} {'takeovers':>9} {'p50 ms':>7} {'max ms':>7} "
      f"{'acked-lost':>10} {'duplicated':>10} {'reports-differ':>14} {'rejoined':>8} {'failed':>6}")
bad = False
for variant in dict.fromkeys(r[0] for r in rows):
    mine = [r for r in rows if r[0] == variant]
    took = [int(r[1]) for r in mine if r[1] != "-"]
    total = lambda i: sum(int(r[i]) for r in mine if r[i].isdigit())
    failed = sum(1 for r in mine if r[6] != "1")
    rejoined = sum(1 for r in mine if r[5] == "yes")
    p50 = f"{statistics.median(took):.0f}" if took else "-"
    top = f"{max(took)}" if took else "-"
    print(f"{variant:<17} {len(mine):>4} {len(took):>9} {p50:>7} {top:>7} "
          f"{total(2):>10} {total(3):>10} {total(4):>14} {rejoined:>8} {failed:>6}")
    bad = bad or failed or total(2) or total(3) or total(4)
sys.exit(1 if bad else 0)
EOF
