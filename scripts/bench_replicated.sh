#!/usr/bin/env bash
# `orderwire serve` with --durability batch, replicated on R1 and replicated
# on R3, loaded by `orderwire submit`, beside a raw JetStream publish of
# the same message size in the same run (docs/BENCHMARKS.md "Replicated
# durability").
#
#   scripts/bench_replicated.sh BUILD_DIR
#
# BUILD_DIR holds cli/orderwire and, for the raw figure,
# bench/replication_publish_rate (configure with -DORDERWIRE_BUILD_BENCH=ON;
# without it the raw line is skipped and says so). Each repetition (RUNS,
# default 3), for each mode: a fresh journal under $TMPDIR and, for
# replicated, a fresh stream (engine name per run) on a NATS cluster of 1 or
# 3 servers started by scripts/nats_cluster.sh; serve pinned to SERVER_CPU
# (0), submit to CLIENT_CPU (1):
#   1. throughput: `submit --workload mixed --count COUNT` (1000000) with
#      --window WINDOW (32768): acknowledged commands/s. The window keeps
#      ~20-30 messages' worth of commands in flight, as the raw publish
#      keeps 32 (4096 was ~3 messages: the client's window was measured,
#      not the primary); the count makes the run ~2 s, so the 60 ms
#      pipeline's fill and drain do not weigh (200000 was ~0.4 s);
#   2. latency: `submit --rate RATE` (100000) of LAT_COUNT (200000)
#      commands: round trip p50 and p99 (send to first report).
# Then, for R1 and R3, the mean message size that mode's throughput runs
# published (from --stats-json) is published raw with
# replication_publish_rate (window 32, RUNS repeats), and their ratio is
# printed: replicated acknowledged cmd/s over the raw msg/s times the
# replicated runs' commands per message (docs/BENCHMARKS.md "Replicated
# durability"). The load average is printed first: the machine is shared,
# and R3 runs three servers on the same cores.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: scripts/bench_replicated.sh BUILD_DIR" >&2; exit 2; }
build=$1
orderwire=$build/cli/orderwire
raw=$build/bench/replication_publish_rate
[ -x "$orderwire" ] || { echo "bench_replicated.sh: $orderwire missing" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
runs=${RUNS:-3}
count=${COUNT:-1000000}
window=${WINDOW:-32768}
rate=${RATE:-100000}
lat_count=${LAT_COUNT:-200000}
server_cpu=${SERVER_CPU:-0}
client_cpu=${CLIENT_CPU:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_replicated.XXXXXX")
cleanup() {
  for n in 1 3; do
    [ -d "$work/nats$n" ] && "$here/nats_cluster.sh" stop "$work/nats$n" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
results=$work/results.jsonl
: >"$results"
for n in 1 3; do
  "$here/nats_cluster.sh" start "$work/nats$n" "$n" >/dev/null
done

# run MODE KIND RUN ARGS...: one serve + one submit; appends a JSON line.
run() {
  local mode=$1 kind=$2 i=$3
  shift 3
  local journal=$work/journal port
  rm -rf "$journal"
  port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local durability=(--durability batch)
  case $mode in
    r1|r3)
      durability=(--durability replicated --nats "$(cat "$work/nats${mode#r}/servers")"
                  --replicas "${mode#r}" --engine-name "bench_${mode}_${kind}_$i") ;;
  esac
  taskset -c "$server_cpu" "$orderwire" serve --journal "$journal" \
    --listen "127.0.0.1:$port" "${durability[@]}" --quiet \
    --stats-json "$work/stats.json" >"$work/serve.log" 2>&1 &
  local server=$!
  sleep 1
  if ! taskset -c "$client_cpu" "$orderwire" submit --target "127.0.0.1:$port" \
      --session 1 --workload mixed --json "$@" >"$work/submit.json" \
      2>"$work/submit.err"; then
    kill -INT "$server"; wait "$server" || true
    echo "$mode $kind: submit failed:" >&2; cat "$work/submit.err" "$work/serve.log" >&2
    return 1
  fi
  kill -INT "$server"; wait "$server" || true
  python3 - "$mode" "$kind" "$work/submit.json" "$work/stats.json" >>"$results" <<'PY'
import json, sys
mode, kind, submit, stats = sys.argv[1:5]
r = json.load(open(submit))
s = json.load(open(stats))
print(json.dumps({"mode": mode, "kind": kind,
                  "commands_per_second": r["commands_per_second"],
                  "p50_us": r["latency_us"]["p50"],
                  "p99_us": r["latency_us"]["p99"],
                  "retransmitted": r["retransmitted"],
                  "messages": s.get("replication_published_messages", 0),
                  "message_bytes": s.get("replication_published_bytes", 0),
                  "groups": s["journal_groups"]}))
PY
  tail -1 "$results"
}

for ((i = 1; i <= runs; ++i)); do
  for mode in batch r1 r3; do
    run "$mode" throughput "$i" --count "$count" --window "$window"
    run "$mode" latency "$i" --count "$lat_count" --rate "$rate"
  done
done

python3 - "$results" "$count" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
count = int(sys.argv[2])
def med(mode, kind, key):
    return statistics.median(r[key] for r in rows
                             if r["mode"] == mode and r["kind"] == kind)
print(f"{'medians':8} {'acked cmd/s':>12} {'p50 us':>9} {'p99 us':>10} "
      f"{'bytes/msg':>10} {'cmds/msg':>9}")
for mode in ("batch", "r1", "r3"):
    tput = [r for r in rows if r["mode"] == mode and r["kind"] == "throughput"]
    size = per_msg = "-"
    if mode != "batch":
        messages = statistics.median(r["messages"] for r in tput)
        size = f"{statistics.median(r['message_bytes'] / r['messages'] for r in tput):.0f}"
        per_msg = f"{count / messages:.1f}"
    print(f"{mode:8} {med(mode, 'throughput', 'commands_per_second'):12.0f} "
          f"{med(mode, 'latency', 'p50_us'):9.1f} "
          f"{med(mode, 'latency', 'p99_us'):10.1f} {size:>10} {per_msg:>9}")
PY
# The raw baseline per replica count: the mean message size that mode's
# throughput runs published, window 32 (the raw publisher's own in-flight
# bound), RUNS repeats; then replicated cmd/s / (raw msg/s x cmds/msg).
raw_lines=$work/raw.txt
: >"$raw_lines"
for n in 1 3; do
  size=$(python3 - "$results" "r$n" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
sizes = [r["message_bytes"] / r["messages"] for r in rows
         if r["mode"] == sys.argv[2] and r["kind"] == "throughput" and r["messages"]]
print(int(statistics.median(sizes)) if sizes else 4096)
PY
  )
  if [ -x "$raw" ]; then
    echo "raw JetStream R$n, $size-byte messages, window 32:"
    "$raw" --replicas "$n" --messages 5000 --size "$size" --window 32 \
      --repeat "$runs" | tee -a "$raw_lines" | sed 's/^/  /'
  fi
done
if [ -x "$raw" ]; then
  python3 - "$results" "$raw_lines" "$count" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
count = int(sys.argv[3])
raw = {}
for line in open(sys.argv[2]):
    f = dict(kv.split("=", 1) for kv in line.split())
    if f.get("publisher") == "raw":
        raw.setdefault(int(f["replicas"]), []).append(float(f["msgs_per_s"]))
for n in (1, 3):
    tput = [r for r in rows if r["mode"] == f"r{n}" and r["kind"] == "throughput"]
    if not tput or n not in raw:
        continue
    acked = statistics.median(r["commands_per_second"] for r in tput)
    per_msg = count / statistics.median(r["messages"] for r in tput)
    raw_cmds = statistics.median(raw[n]) * per_msg
    print(f"R{n}: replicated {acked:.0f} cmd/s; raw {statistics.median(raw[n]):.0f} "
          f"msg/s x {per_msg:.1f} cmds/msg = {raw_cmds:.0f} cmd/s; "
          f"ratio {acked / raw_cmds:.2f}")
PY
else
  echo "raw JetStream: $raw missing (configure with -DORDERWIRE_BUILD_BENCH=ON" \
    "and build replication_publish_rate); not measured"
fi
