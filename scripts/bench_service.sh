#!/usr/bin/env bash
# The service end to end on loopback, beside its transport baseline, in one
# run: what docs/BENCHMARKS.md "Service" records.
#
#   scripts/bench_service.sh BUILD_DIR
#
# 1. Baseline: BUILD_DIR/bench/net_bench (recvmmsg/sendmmsg one-way stream,
#    windowed echo of full datagrams, 1-frame ping-pong blocking and
#    busy-polling), its echo/receive side on SERVER_CPU and its sender/client
#    on CLIENT_CPU, 3 repetitions; JSON in BUILD_DIR/bench/net_bench.json.
#    With `batch` in MODES, also the device's floor: BUILD_DIR/bench/
#    journal_bench BM_DeviceWrite (4 KiB O_DIRECT | O_DSYNC writes one at a
#    time, latency percentiles) on the file system of the runs' journals,
#    RUNS repetitions.
# 2. Highest rate: for each durability (none, batch) and each window (4096,
#    16384, 65536 commands), RUNS times and, within each, once per send path
#    of SENDS (alternating, so both see the same conditions): `orderwire
#    serve --send PATH` with a fresh
#    journal under $TMPDIR, then `orderwire submit` of COUNT `mixed`
#    commands as fast as the window allows (`submit --send PATH` too);
#    commands/s acknowledged. With two paths the summary gives, per
#    durability and window, the ratios of the medians (rate and server CPU
#    per command) of the second path to the first.
# 3. Latency: for each durability, RUNS times, `submit --rate RATE` of
#    LAT_COUNT commands; round-trip percentiles (send to first report).
#    With SNAPSHOT_EVERY (e.g. 1s or 100000), each run is followed by the
#    same run with `serve --snapshot-every SNAPSHOT_EVERY` (figure
#    "latency_snapshot"), so both see the same conditions.
#
# Every run: the server pinned to SERVER_CPU (`taskset -c 0`), the client to
# CLIENT_CPU (`taskset -c 1`), both at normal priority (never `chrt -f`: a
# real-time server starves the kernel threads that complete its journal
# I/O and its loopback traffic). The server listens on a port the kernel
# picks, is stopped with SIGINT, and its final counters (--stats-json) show
# any loss: send_failures (reports the kernel refused), reports_resent,
# duplicates, gaps; the client's retransmitted and out_of_order_reports show
# it from the other side. A run is "clean" when all of them are 0. The
# server's CPU per command is its user + system time (/proc/PID/stat, read
# once it listens and again just before the stop, so neither its start-up
# nor its shutdown counts; clock ticks of 1/CLK_TCK s) over the commands. The load
# average and the CPU and I/O pressure (/proc/pressure, "some avg10") are
# recorded at the start of each run: the machine is shared, and the figures
# move with it.
#
# Each run also counts the journal's segment files when the server has
# stopped: a run of `segments` files crossed segments - 1 boundaries, where
# the next segment's preparation and rotation happened (the table's
# "boundaries" column, the fewest of the runs). SEGMENT_SIZE passes
# --segment-size to serve, so that a short run crosses several.
#
# Output: a table on stdout (medians of the runs), one JSON object per run
# and one per summary row in BUILD_DIR/bench/service.jsonl (replaced).
#
# Environment (defaults): RUNS (3), COUNT (1000000), LAT_COUNT (500000),
# RATE (100000), WINDOWS ("4096 16384 65536"; empty: no highest-rate runs),
# MODES ("none batch"), LAT_WINDOW (4096), SERVER_CPU (0), CLIENT_CPU (1),
# TMPDIR (/tmp), SEGMENT_SIZE (serve's default), BASELINE (1; 0 skips
# net_bench), BASELINE_FILTER (net_bench's --benchmark_filter; the default
# runs the one-way stream, the windowed echo and both ping-pongs),
# DEVICE_BASELINE (1; 0 skips journal_bench BM_DeviceWrite),
# ORDERWIRE (BUILD_DIR/cli/orderwire: another binary to measure, e.g. the
# build before a change, against the same baseline), SENDS ("sendmmsg gso":
# the send paths of serve and submit, docs/SERVICE.md "Sending reports";
# "auto" for a binary without --send), INPUT (command frames for `submit
# --input` instead of the mixed workload; COUNT is then what the client
# acknowledged).
# SNAPSHOT_EVERY (empty: no snapshot runs). FEEDS ("off"; "off on": each
# run also once with the market-data feed on, alternating): `serve
# --md-target` to a unicast port on loopback where `orderwire md record
# --from-start` (on CLIENT_CPU) records the whole feed, and
# `--md-request-listen`; its rows are labelled SEND+feed, the summary gives
# the ratios to the same send path without, and the feed's publication lag
# (the service's md_publication_lag: records found answerable to their
# packets sent, per pass) as its mean and the bucket bounds holding p50 and
# p99. A feed run is clean when md record got every message published.
# FEEDS may also name "flood": the feed on as above while BUILD_DIR/bench/
# md_flood sends FLOOD_RATE (200000) requests a second from 1,024 source
# addresses to the request server (on CLIENT_CPU under SCHED_IDLE, so it
# does not starve the client), rows SEND+feed+flood: a hostile neighbour,
# against the same runs without it. FLOOD_TARGET ("requests"; "sink": the
# same flood to a socket of another process that never reads it, on the
# client's CPU: the kernel's cost of the datagrams without the request
# server's).
#
# Exit status: 0 when every run completed (clean or not: the table says),
# 1 when a server or client failed, 2 on a usage error. Needs python3 (for
# the medians; scripts/setup.sh installs it).
set -euo pipefail

usage() {
  echo "usage: scripts/bench_service.sh BUILD_DIR" >&2
  exit 2
}
[ $# -eq 1 ] || usage
build=$1
ow=${ORDERWIRE:-$build/cli/orderwire}
net_bench=$build/bench/net_bench
journal_bench=$build/bench/journal_bench
runs=${RUNS:-3}
count=${COUNT:-1000000}
lat_count=${LAT_COUNT:-500000}
rate=${RATE:-100000}
windows=${WINDOWS-4096 16384 65536}
modes=${MODES:-none batch}
lat_window=${LAT_WINDOW:-4096}
server_cpu=${SERVER_CPU:-0}
client_cpu=${CLIENT_CPU:-1}
baseline=${BASELINE:-1}
device_baseline=${DEVICE_BASELINE:-1}
case " $modes " in *" batch "*) ;; *) device_baseline=0 ;; esac
baseline_filter=${BASELINE_FILTER:-'BM_OneWay/recvmmsg/full|BM_EchoWindow/full|BM_PingPong/(block|spin)/1/'}
segment_args=()
if [ -n "${SEGMENT_SIZE:-}" ]; then segment_args=(--segment-size "$SEGMENT_SIZE"); fi
snapshot_every=${SNAPSHOT_EVERY:-}
sends=${SENDS:-sendmmsg gso}
input=${INPUT:-}
feeds=${FEEDS:-off}
flood_rate=${FLOOD_RATE:-200000}
flood_target=${FLOOD_TARGET:-requests}
case "$flood_target" in requests | sink) ;; *) usage ;; esac
needed=("$ow")
[ "$baseline" != 0 ] && needed+=("$net_bench")
[ "$device_baseline" != 0 ] && needed+=("$journal_bench")
for f in "${needed[@]}"; do
  if [ ! -x "$f" ]; then
    echo "bench_service.sh: $f is not built (cmake --build $build --target" \
      "orderwire net_bench journal_bench)" >&2
    exit 2
  fi
done
command -v python3 >/dev/null || {
  echo "bench_service.sh: python3 is needed (scripts/setup.sh)" >&2
  exit 2
}
if ! taskset -c "$server_cpu" true 2>/dev/null ||
  ! taskset -c "$client_cpu" true 2>/dev/null; then
  echo "bench_service.sh: cannot pin to CPUs $server_cpu and $client_cpu" >&2
  exit 2
fi

mkdir -p "$build/bench"
out=$build/bench/service.jsonl
: >"$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/ow-bench-service.XXXXXX")
server_pid=
recorder_pid=
flood_pid=
sink_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -INT "$server_pid" 2>/dev/null || true; fi
  if [ -n "$recorder_pid" ]; then kill -INT "$recorder_pid" 2>/dev/null || true; fi
  if [ -n "$flood_pid" ]; then kill "$flood_pid" 2>/dev/null || true; fi
  if [ -n "$sink_pid" ]; then kill "$sink_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

load() { cut -d ' ' -f 1-3 /proc/loadavg; }
# Pressure stall: the share of the last 10 s in which some runnable task
# waited for a CPU / for I/O (other engineers' work shows here first).
psi() { sed -n 's/^some avg10=\([0-9.]*\).*/\1/p' "/proc/pressure/$1" 2>/dev/null || echo "?"; }

cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
echo "# bench_service.sh: ${cpu_model:-unknown CPU}, $(nproc) CPUs," \
  "kernel $(uname -r), $(date -u +%FT%TZ)"
echo "# server: taskset -c $server_cpu, client: taskset -c $client_cpu," \
  "normal priority; $runs runs of each figure (medians below)"
echo "# uptime: $(uptime); cpu psi $(psi cpu)%, io psi $(psi io)%"
printf '{"kind":"machine","cpu":"%s","cpus":%d,"kernel":"%s","date":"%s","load":"%s","runs":%d,"server_cpu":%d,"client_cpu":%d}\n' \
  "${cpu_model:-unknown}" "$(nproc)" "$(uname -r)" "$(date -u +%FT%TZ)" \
  "$(load)" "$runs" "$server_cpu" "$client_cpu" >>"$out"

# --- 1. baseline -------------------------------------------------------------
# baseline NAME JSON CPUS BINARY FILTER: runs a Google Benchmark binary's
# FILTER, RUNS repetitions, and appends the medians to $out as "baseline"
# rows (the counters ending in _per_s, _us, per_dgram, per_rtt, per_second,
# and lost).
baseline() {
  local name=$1 json=$2 cpus=$3 binary=$4 filter=$5
  echo "# baseline: $name (load $(load))"
  taskset -c "$cpus" "$binary" --benchmark_filter="$filter" \
    --benchmark_repetitions="$runs" --benchmark_report_aggregates_only=true \
    --benchmark_out="$json" --benchmark_out_format=json \
    >"$work/baseline.txt" 2>&1 || {
    cat "$work/baseline.txt" >&2
    echo "bench_service.sh: $name failed" >&2
    exit 1
  }
  python3 - "$json" "$(load)" >>"$out" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
# The medians of the repetitions (or the single run when there was one).
medians = [b for b in data["benchmarks"] if b.get("aggregate_name") == "median"]
for b in medians or data["benchmarks"]:
    keep = {k: b[k] for k in b if k.endswith(("_per_s", "_us", "per_dgram",
            "per_rtt", "per_second")) or k == "lost"}
    print(json.dumps({"kind": "baseline", "name": b["run_name"],
                      "load": sys.argv[2], **keep}))
EOF
}
if [ "$baseline" != 0 ]; then
  baseline net_bench "$build/bench/net_bench.json" "$server_cpu,$client_cpu" \
    "$net_bench" "$baseline_filter"
fi
if [ "$device_baseline" != 0 ]; then
  # On the file system of the runs' journals.
  OW_BENCH_DIR=$work baseline "journal_bench BM_DeviceWrite under $work" \
    "$work/device.json" "$server_cpu" "$journal_bench" BM_DeviceWrite
fi

# --- 2 and 3: the service -----------------------------------------------------
# Two free UDP ports on loopback (the kernel's choice, released at once).
free_udp_ports() {
  python3 -c 'import socket
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))'
}

# run_once KIND MODE WINDOW RATE COUNT RUN SEND FEED
run_once() {
  local kind=$1 mode=$2 window=$3 rate_arg=$4 n=$5 run=$6 send=${7:-auto}
  local feed=${8:-off}
  local send_args=()
  if [ "$send" != auto ]; then send_args=(--send "$send"); fi
  local dir=$work/run
  rm -rf "$dir"
  mkdir -p "$dir"
  local start_load
  start_load="$(load), cpu psi $(psi cpu)%, io psi $(psi io)%"
  local snapshot_args=()
  if [ "$kind" = latency_snapshot ]; then
    snapshot_args=(--snapshot-every "$snapshot_every")
  fi
  local feed_args=() md_port= md_request=
  if [ "$feed" != off ]; then
    read -r md_port md_request < <(free_udp_ports)
    feed_args=(--md-target "127.0.0.1:$md_port"
      --md-request-listen "127.0.0.1:$md_request")
    taskset -c "$client_cpu" "$ow" md record --target "127.0.0.1:$md_port" \
      --request "127.0.0.1:$md_request" --from-start \
      --output "$dir/feed.bin" 2>"$dir/record.err" &
    recorder_pid=$!
  fi
  taskset -c "$server_cpu" "$ow" serve --listen 127.0.0.1:0 \
    --journal "$dir/journal" --durability "$mode" "${segment_args[@]}" \
    "${snapshot_args[@]}" "${send_args[@]}" "${feed_args[@]}" \
    --stats-json "$dir/stats.json" 2>"$dir/serve.log" &
  server_pid=$!
  local port=
  for _ in $(seq 1 200); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' \
      "$dir/serve.log" 2>/dev/null | head -n 1)
    [ -n "$port" ] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
      cat "$dir/serve.log" >&2
      server_pid=
      return 1
    fi
    sleep 0.05
  done
  [ -n "$port" ] || { echo "bench_service.sh: serve did not start" >&2; return 1; }
  # Its CPU time so far (start-up): not counted in the figure.
  local start_ticks
  start_ticks=$(awk '{print $14 + $15}' "/proc/$server_pid/stat" 2>/dev/null || echo 0)
  if [ "$feed" = flood ]; then
    local session
    session=0x$("$ow" journal inspect "$dir/journal" |
      sed -n 's/.*journal id \([0-9a-f]*\).*/\1/p' | head -n 1)
    # SCHED_IDLE: the flood (and the loopback receive work its sends do)
    # takes only the CPU the client leaves, so what the figures show is
    # the service's, not the client's starvation.
    local flood_to=$md_request
    if [ "$flood_target" = sink ]; then
      # A socket that is never read: the kernel queues what fits, then drops.
      taskset -c "$client_cpu" python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
time.sleep(3600)' >"$dir/sink.port" &
      sink_pid=$!
      while [ ! -s "$dir/sink.port" ]; do sleep 0.05; done
      flood_to=$(cat "$dir/sink.port")
    fi
    chrt --idle 0 taskset -c "$client_cpu" "$build/bench/md_flood" \
      --target "127.0.0.1:$flood_to" --session "$session" \
      --rate "$flood_rate" --seconds 3600 >"$dir/flood.out" 2>&1 &
    flood_pid=$!
  fi
  local client_rc=0
  local workload_args=(--workload mixed --count "$n" --seed 1)
  if [ -n "$input" ]; then workload_args=(--input "$input"); fi
  taskset -c "$client_cpu" "$ow" submit --target "127.0.0.1:$port" \
    --session 1 "${workload_args[@]}" --window "$window" \
    --rate "$rate_arg" "${send_args[@]}" --json >"$dir/client.json" 2>"$dir/client.err" ||
    client_rc=$?
  if [ -n "$flood_pid" ]; then
    kill "$flood_pid" 2>/dev/null || true
    wait "$flood_pid" 2>/dev/null || true
    flood_pid=
  fi
  if [ -n "$sink_pid" ]; then
    kill "$sink_pid" 2>/dev/null || true
    wait "$sink_pid" 2>/dev/null || true
    sink_pid=
  fi
  # The server's CPU time (user + system, clock ticks) while it served:
  # read before the stop, so the shutdown is not counted.
  local ticks
  ticks=$(awk -v s="$start_ticks" '{print $14 + $15 - s}' "/proc/$server_pid/stat" 2>/dev/null || echo 0)
  kill -INT "$server_pid"
  local server_rc=0
  wait "$server_pid" || server_rc=$?
  server_pid=
  local recorded=-1
  if [ -n "$recorder_pid" ]; then
    # It stops at the EndOfSession once it holds every message before it.
    local waited=0
    while kill -0 "$recorder_pid" 2>/dev/null && [ "$waited" -lt 300 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    kill -INT "$recorder_pid" 2>/dev/null || true
    wait "$recorder_pid" || true
    recorder_pid=
    recorded=$(sed -n 's/.*messages applied \([0-9]*\).*/\1/p' \
      "$dir/record.err" | tail -n 1)
    recorded=${recorded:--1}
  fi
  if [ "$client_rc" -ne 0 ] || [ "$server_rc" -ne 0 ] ||
    [ ! -s "$dir/client.json" ]; then
    echo "bench_service.sh: $kind $mode window $window run $run failed" \
      "(client $client_rc, server $server_rc)" >&2
    cat "$dir/client.err" "$dir/serve.log" >&2
    return 1
  fi
  if [ -n "$input" ]; then
    n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["acknowledged"])' "$dir/client.json")
  fi
  local segments
  segments=$(find "$dir/journal" -maxdepth 1 -name '*.owj' | wc -l)
  local cpu_s
  cpu_s=$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.3f", t / hz}')
  local label=$send
  [ "$feed" = on ] && label=$send+feed
  [ "$feed" = flood ] && label=$send+feed+flood
  printf '{"kind":"%s","send":"%s","feed":"%s","recorded":%d,"durability":"%s","window":%d,"rate":%s,"count":%d,"run":%d,"load":"%s","server_cpu_s":%s,"segments":%d,"client":%s,"server":%s}\n' \
    "$kind" "$label" "$feed" "$recorded" "$mode" "$window" "$rate_arg" "$n" "$run" "$start_load" "$cpu_s" \
    "$segments" \
    "$(cat "$dir/client.json")" "$(cat "$dir/stats.json")" >>"$out"
  python3 - "$out" <<'EOF'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
c, s = r["client"], r["server"]
lat = c["latency_us"]
print(f'  {r["kind"]:8} {r["send"]:8} {r["durability"]:5} w={r["window"]:<6} run {r["run"]}: '
      f'{c["commands_per_second"]:>9,.0f} cmd/s  p50 {lat["p50"]:.0f} '
      f'p99 {lat["p99"]:.0f} p99.9 {lat["p99.9"]:.0f} max {lat["max"]:.0f} us  '
      f'server cpu {r["server_cpu_s"] * 1e9 / r["count"]:.0f} ns/cmd  '
      f'segments {r["segments"]}  '
      f'retx {c["retransmitted"]} send_fail {s["send_failures"]} '
      f'resent {s["reports_resent"]} dup {s["duplicates"]} gaps {s["gaps"]}  '
      + (f'dgrams/send {s["segmented_datagrams"] / s["segmented_sends"]:.2f}  '
         if s.get("segmented_sends") else '')
      + (f'snapshots {s.get("snapshots_taken", 0)} fork max '
         f'{s.get("fork_ns_max", 0) / 1e3:.0f} us  '
         if s.get("snapshots_taken", 0) or s.get("snapshots_failed", 0)
         else '')
      + (f'feed {s.get("md_messages", 0)} messages, recorded {r["recorded"]}, '
         f'lag mean {s["md_publication_lag"]["sum_ns"] / max(1, s["md_publication_lag"]["count"]) / 1e3:.1f} us  '
         if r["feed"] != "off" else '')
      + (f'requests dropped {s.get("md_requests_dropped", 0)}, refused '
         f'{sum(s.get("md_refused", {}).values())}, malformed '
         f'{sum(s.get("md_malformed", {}).values())}  '
         if r["feed"] == "flood" else '')
      + f'(load {r["load"]})')
EOF
}

status=0
for mode in $modes; do
  for window in $windows; do
    for run in $(seq 1 "$runs"); do
      for send in $sends; do
        for feed in $feeds; do
          run_once max_rate "$mode" "$window" 0 "$count" "$run" "$send" \
            "$feed" || status=1
        done
      done
    done
  done
  for run in $(seq 1 "$runs"); do
    for send in $sends; do
      for feed in $feeds; do
        run_once latency "$mode" "$lat_window" "$rate" "$lat_count" "$run" \
          "$send" "$feed" || status=1
      done
      if [ -n "$snapshot_every" ]; then
        run_once latency_snapshot "$mode" "$lat_window" "$rate" "$lat_count" \
          "$run" "$send" || status=1
      fi
    done
  done
done
echo "# uptime at the end: $(uptime)"

# --- summary -------------------------------------------------------------------
python3 - "$out" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
runs = next((r["runs"] for r in rows if r["kind"] == "machine"), 0)
def med(xs):
    return statistics.median(xs) if xs else float("nan")
def loss(r):
    c, s = r["client"], r["server"]
    feed_lost = 0
    if r.get("feed", "off") != "off":
        feed_lost = (s.get("md_send_failures", 0)
                     + abs(s.get("md_messages", 0) - r["recorded"]))
    return (c["retransmitted"] + c["out_of_order_reports"] + s["send_failures"]
            + s["reports_resent"] + s["duplicates"] + s["gaps"] + feed_lost)
def lag_bound(rs, q):
    # The bound of the bucket holding quantile q of md_publication_lag, all
    # runs' buckets summed (us; inf past the last bound).
    bounds = rs[0]["server"]["bounds_ns"]
    counts = [sum(x) for x in zip(*[r["server"]["md_publication_lag"]["buckets"]
                                    for r in rs])]
    total, seen = sum(counts), 0
    for i, c in enumerate(counts):
        seen += c
        if total and seen >= q * total:
            return bounds[i] / 1e3 if i < len(bounds) else float("inf")
    return float("nan")
summary = []
groups = {}
for r in rows:
    if r["kind"] in ("max_rate", "latency", "latency_snapshot"):
        groups.setdefault((r["kind"], r.get("send", "auto"), r["durability"],
                           r["window"]), []).append(r)
print()
print("| figure | send | durability | window | runs | commands/s (median) | "
      "p50 us | p90 us | p99 us | p99.9 us | max us | server CPU ns/cmd | "
      "boundaries | clean runs | load (1 min) |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
best = {}
by_send = {}
for (kind, send, mode, window), rs in groups.items():
    cps = med([r["client"]["commands_per_second"] for r in rs])
    lat = {p: med([r["client"]["latency_us"][p] for r in rs])
           for p in ("p50", "p90", "p99", "p99.9", "max")}
    cpu = med([r.get("server_cpu_s", float("nan")) * 1e9 / r["count"]
               for r in rs])
    clean = sum(1 for r in rs if loss(r) == 0)
    boundaries = min(r["segments"] for r in rs) - 1
    loads = ", ".join(r["load"].split()[0] for r in rs)
    label = {"max_rate": "highest rate", "latency": "at offered rate",
             "latency_snapshot": "at offered rate, snapshots"}[kind]
    snaps = [r["server"].get("snapshots_taken", 0) for r in rs]
    forks = [r["server"].get("fork_ns_max", 0) / 1e3 for r in rs]
    if kind == "latency_snapshot":
        label += (f" ({med(snaps):.0f} per run, fork max {med(forks):.0f} us"
                  " median)")
    print(f"| {label} | {send} | {mode} | {window} | {len(rs)} | {cps:,.0f} | "
          f"{lat['p50']:.0f} | {lat['p90']:.0f} | {lat['p99']:.0f} | "
          f"{lat['p99.9']:.0f} | {lat['max']:.0f} | {cpu:.0f} | "
          f"{boundaries} | {clean}/{len(rs)} | {loads} |")
    row = {"kind": "summary", "figure": kind, "send": send, "durability": mode,
           "window": window, "runs": len(rs), "commands_per_second": cps,
           "latency_us": lat, "server_cpu_ns_per_command": cpu,
           "boundaries": boundaries, "clean_runs": clean, "loads": loads}
    summary.append(row)
    by_send.setdefault((kind, mode, window), {})[send] = row
    if kind == "max_rate" and clean == len(rs):
        if (mode, send) not in best or \
                cps > best[(mode, send)]["commands_per_second"]:
            best[(mode, send)] = row
for b in rows:
    if b["kind"] != "baseline":
        continue
    name = b["name"].split("/iterations")[0]
    load1 = b["load"].split()[0]
    if name.startswith("BM_DeviceWrite"):
        print(f"| baseline device write, 4 KiB O_DIRECT + O_DSYNC (1 in flight) | - | "
              f"- | - | {runs} | - | {b['p50_us']:.1f} | {b['p90_us']:.1f} | "
              f"{b['p99_us']:.1f} | {b['p999_us']:.1f} | {b['max_us']:.0f} | - | - | "
              f"- | {load1} |")
    elif "p50_us" in b:
        print(f"| baseline {name} (1 datagram in flight) | - | - | - | {runs} | - | "
              f"{b['p50_us']:.1f} | {b['p90_us']:.1f} | {b['p99_us']:.1f} | "
              f"{b['p999_us']:.1f} | {b['max_us']:.0f} | - | - | lost {b['lost']:.0f} | {load1} |")
    else:
        print(f"| baseline {name}: {b['dgrams_per_s']:,.0f} datagrams/s | - | - | - | "
              f"{runs} | {b['items_per_second']:,.0f} frames/s | | | | | | | | "
              f"lost {b['lost']:.0f} | {load1} |")
print()
# The feed's publication lag, per figure with the feed on.
for (kind, send, mode, window), rs in groups.items():
    if "+feed" not in send:
        continue
    lags = [r["server"]["md_publication_lag"] for r in rs]
    mean = sum(l["sum_ns"] for l in lags) / max(1, sum(l["count"] for l in lags))
    p50, p99 = lag_bound(rs, 0.5), lag_bound(rs, 0.99)
    print(f"feed publication lag, {kind} {send} {mode} window {window}: "
          f"mean {mean / 1e3:.1f} us, p50 <= {p50:g} us, p99 <= {p99:g} us "
          f"({sum(l['count'] for l in lags)} passes)")
    summary.append({"kind": "summary", "figure": "md_publication_lag",
                    "run_kind": kind, "send": send, "durability": mode,
                    "window": window, "mean_us": mean / 1e3,
                    "p50_bound_us": p50, "p99_bound_us": p99})
print()
# The second send path against the first, in the same invocation.
for (kind, mode, window), paths in by_send.items():
    names = [p for p in paths]
    for other in names[1:]:
        a, b = paths[names[0]], paths[other]
        rate = b["commands_per_second"] / a["commands_per_second"]
        cpu = b["server_cpu_ns_per_command"] / a["server_cpu_ns_per_command"]
        p50 = b["latency_us"]["p50"] / a["latency_us"]["p50"]
        p99 = b["latency_us"]["p99"] / a["latency_us"]["p99"]
        print(f"{other} / {names[0]}, {kind} {mode}, window {window}: rate "
              f"x{rate:.2f}, server CPU per command x{cpu:.2f}, p50 x{p50:.2f}, "
              f"p99 x{p99:.2f}")
        summary.append({"kind": "summary", "figure": "send_ratio",
                        "run_kind": kind, "durability": mode, "window": window,
                        "paths": [other, names[0]], "rate_ratio": rate,
                        "server_cpu_ratio": cpu, "p50_ratio": p50,
                        "p99_ratio": p99})
print()
for (mode, send), row in sorted(best.items()):
    print(f"highest rate with no loss, {mode}, send {send}: "
          f"{row['commands_per_second']:,.0f} "
          f"commands/s (window {row['window']})")
    summary.append({"kind": "summary", "figure": "best_clean_rate",
                    "send": send,
                    "durability": mode, "window": row["window"],
                    "commands_per_second": row["commands_per_second"]})
with open(sys.argv[1], "a") as f:
    for s in summary:
        f.write(json.dumps(s) + "\n")
EOF
exit $status
