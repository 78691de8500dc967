#!/usr/bin/env bash
# How long a takeover takes (docs/REPLICATION.md "The takeover"):
# from SIGKILL of the primary to the standby serving, timed from the UTC
# stamps the standby prints for each step.
#
#   scripts/takeover_time.sh BUILD_DIR LEASE_MS [RUNS]
#
# One nats-server (scripts/nats_cluster.sh, R1). Each run (RUNS, default 5),
# on a fresh engine name and fresh journals under $TMPDIR:
#   1. `serve --durability replicated --lease --lease-ms LEASE_MS` (the
#      primary) and `serve --standby --lease-ms LEASE_MS --listen ...`;
#   2. `submit --workload mixed --count COUNT` (2000) to the primary;
#   3. the kill time (date +%s.%N), then SIGKILL of the primary;
#   4. the standby's lines "lease acquired epoch 2", "epoch marker
#      published", "serving on ... as primary of epoch 2": kill -> lease,
#      lease -> marker (catch-up and marker), marker -> serving (Service
#      start), kill -> serving;
#   5. `submit` of another session to the new primary (it must answer), then
#      SIGINT to it.
# Prints one line per run, then the median, minimum and maximum of each
# interval (SHOW_LOG=1: and the last run's standby log). The load average is
# printed first: the machine may be shared.
set -euo pipefail

[ $# -ge 2 ] || {
  echo "usage: scripts/takeover_time.sh BUILD_DIR LEASE_MS [RUNS]" >&2
  exit 2
}
build=$1
lease_ms=$2
runs=${3:-5}
count=${COUNT:-2000}
orderwire=$build/cli/orderwire
[ -x "$orderwire" ] || { echo "takeover_time.sh: $orderwire missing" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/takeover_time.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  "$here/nats_cluster.sh" stop "$work/nats" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for FILE TEXT SECONDS: until FILE holds TEXT.
wait_for() {
  local deadline=$((SECONDS + $3))
  until grep -q -- "$2" "$1" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      echo "takeover_time.sh: no '$2' in $1 within $3 s:" >&2
      cat "$1" >&2
      return 1
    fi
    sleep 0.02
  done
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; lease $lease_ms ms"
"$here/nats_cluster.sh" start "$work/nats" 1 >/dev/null
nats=$(cat "$work/nats/servers")
results=$work/results.txt
: >"$results"

for ((i = 1; i <= runs; ++i)); do
  engine=takeover_${lease_ms}_$i
  primary_port=$(free_port)
  standby_port=$(free_port)
  rm -rf "$work/p" "$work/s"
  "$orderwire" serve --journal "$work/p" --listen "127.0.0.1:$primary_port" \
    --durability replicated --nats "$nats" --engine-name "$engine" \
    --lease --lease-ms "$lease_ms" --member-name primary \
    >"$work/primary.log" 2>&1 &
  primary=$!
  pids+=("$primary")
  wait_for "$work/primary.log" "listening on" 30
  "$orderwire" serve --standby --journal "$work/s" --nats "$nats" \
    --engine-name "$engine" --lease-ms "$lease_ms" \
    --listen "127.0.0.1:$standby_port" --member-name standby \
    >"$work/standby.log" 2>&1 &
  standby=$!
  pids+=("$standby")
  wait_for "$work/standby.log" "standby (answering no client" 30
  "$orderwire" submit --target "127.0.0.1:$primary_port" --session 1 \
    --workload mixed --count "$count" --json >"$work/submit1.json"
  kill_time=$(date +%s.%N)
  kill -KILL "$primary"
  wait "$primary" 2>/dev/null || true
  wait_for "$work/standby.log" "as primary of epoch" 60
  "$orderwire" submit --target "127.0.0.1:$standby_port" --session 2 \
    --workload mixed --count 200 --json >"$work/submit2.json"
  kill -INT "$standby"
  wait "$standby" || { echo "takeover_time.sh: the new primary did not stop cleanly:" >&2; cat "$work/standby.log" >&2; exit 1; }
  python3 - "$kill_time" "$work/standby.log" >>"$results" <<'PY'
import datetime, re, sys
kill = float(sys.argv[1])
stamps = {}
for line in open(sys.argv[2]):
    m = re.search(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})Z (.*)", line)
    if not m:
        continue
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
    t = t.replace(tzinfo=datetime.timezone.utc).timestamp()
    for key, text in (("lease", "lease acquired epoch"),
                      ("marker", "epoch marker published"),
                      ("serving", "as primary of epoch")):
        if m.group(2).startswith(text) or (key == "serving" and text in m.group(2)):
            stamps.setdefault(key, t)
print(f"{stamps['lease'] - kill:.3f} {stamps['marker'] - stamps['lease']:.3f} "
      f"{stamps['serving'] - stamps['marker']:.3f} {stamps['serving'] - kill:.3f}")
PY
  echo "run $i: $(tail -1 "$results" | awk '{printf "kill->lease %s s, lease->marker %s s, marker->serving %s s, kill->serving %s s", $1, $2, $3, $4}')"
done
# SHOW_LOG=1: the last run's standby log (what an operator sees).
[ "${SHOW_LOG:-0}" = 1 ] && cat "$work/standby.log"

python3 - "$results" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
names = ("kill->lease", "lease->marker (catch-up + marker)",
         "marker->serving (Service start)", "kill->serving")
for k, name in enumerate(names):
    v = [r[k] for r in rows]
    print(f"{name:34} median {statistics.median(v):.3f} s  "
          f"min {min(v):.3f} s  max {max(v):.3f} s  ({len(v)} runs)")
PY
