#!/usr/bin/env bash
# `orderwire submit` of two binaries against the same service, alternating
# in one run: what docs/BENCHMARKS.md "Client" records (RunClient as a loop
# over client::Session against the RunClient before it).
#
#   scripts/bench_client.sh BASELINE_ORDERWIRE CANDIDATE_ORDERWIRE
#
# Each repetition (RUNS, default 5) runs, for the baseline and then the
# candidate: a fresh journal under $TMPDIR, `orderwire serve --durability
# none` of SERVE (default: the baseline binary, so only the client differs)
# pinned to SERVER_CPU (0), then the client pinned to CLIENT_CPU (1):
#   1. throughput: `submit --workload mixed --count COUNT` (200000) with
#      --window WINDOW (4096): commands/s acknowledged;
#   2. latency: `submit --rate RATE` (20000) of LAT_COUNT (100000) commands:
#      round trip p50 and p99 (send to primary report).
# Every run's report hash must be the same for both binaries (the same
# workload on a fresh journal): a difference fails the script. Output: one
# line per run, then the medians per binary and the candidate/baseline
# ratios. The load average is printed at the start: the machine is shared.
#
# Exit status: 0 when every run completed with equal hashes, 1 otherwise,
# 2 on a usage error. Needs python3 (the JSON and the medians).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: scripts/bench_client.sh BASELINE CANDIDATE" >&2; exit 2; }
baseline=$1
candidate=$2
serve=${SERVE:-$baseline}
runs=${RUNS:-5}
count=${COUNT:-200000}
window=${WINDOW:-4096}
rate=${RATE:-20000}
lat_count=${LAT_COUNT:-100000}
server_cpu=${SERVER_CPU:-0}
client_cpu=${CLIENT_CPU:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_client.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
results=$work/results.jsonl
: >"$results"

# run NAME BINARY KIND ARGS...: one serve + one submit; appends a JSON line.
run() {
  local name=$1 binary=$2 kind=$3
  shift 3
  local journal=$work/journal port_file=$work/port
  rm -rf "$journal"
  # A free port: bind 0, read it back, let go (the race is harmless here).
  local port
  port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  taskset -c "$server_cpu" "$serve" serve --journal "$journal" \
    --listen "127.0.0.1:$port" --durability none --quiet \
    >"$work/serve.log" 2>&1 &
  local server=$!
  sleep 0.5
  if ! taskset -c "$client_cpu" "$binary" submit --target "127.0.0.1:$port" \
      --session 1 --workload mixed --json "$@" >"$work/submit.json" \
      2>"$work/submit.err"; then
    kill -INT "$server"; wait "$server" || true
    echo "$name $kind: submit failed:" >&2; cat "$work/submit.err" >&2
    return 1
  fi
  kill -INT "$server"; wait "$server" || true
  python3 - "$name" "$kind" "$work/submit.json" >>"$results" <<'EOF'
import json, sys
name, kind, path = sys.argv[1:4]
r = json.load(open(path))
print(json.dumps({"binary": name, "kind": kind,
                  "commands_per_second": r["commands_per_second"],
                  "p50_us": r["latency_us"]["p50"],
                  "p99_us": r["latency_us"]["p99"],
                  "retransmitted": r["retransmitted"],
                  "hash": r["report_hash"]}))
EOF
  tail -1 "$results"
}

for ((i = 1; i <= runs; ++i)); do
  for pair in "baseline:$baseline" "candidate:$candidate"; do
    name=${pair%%:*}
    binary=${pair#*:}
    run "$name" "$binary" throughput --count "$count" --window "$window"
    run "$name" "$binary" latency --count "$lat_count" --rate "$rate"
  done
done

python3 - "$results" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ok = True
for kind in ("throughput", "latency"):
    hashes = {r["hash"] for r in rows if r["kind"] == kind}
    if len(hashes) != 1:
        print(f"{kind}: report hashes differ: {sorted(hashes)}")
        ok = False
def med(name, kind, key):
    return statistics.median(r[key] for r in rows
                             if r["binary"] == name and r["kind"] == kind)
print(f"{'medians':12} {'commands/s':>12} {'p50 us':>9} {'p99 us':>9}")
for name in ("baseline", "candidate"):
    print(f"{name:12} {med(name, 'throughput', 'commands_per_second'):12.0f} "
          f"{med(name, 'latency', 'p50_us'):9.1f} "
          f"{med(name, 'latency', 'p99_us'):9.1f}")
def ratio(kind, key):
    return med("candidate", kind, key) / med("baseline", kind, key)
print(f"{'ratio':12} {ratio('throughput', 'commands_per_second'):12.3f} "
      f"{ratio('latency', 'p50_us'):9.3f} {ratio('latency', 'p99_us'):9.3f}")
sys.exit(0 if ok else 1)
EOF
