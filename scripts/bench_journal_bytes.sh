#!/usr/bin/env bash
# Journal bytes per record, the service end to end on loopback: what
# docs/BENCHMARKS.md "Journal bytes per record" records.
#
#   scripts/bench_journal_bytes.sh ORDERWIRE [ORDERWIRE_BEFORE]
#
# For each offered rate (RATES, commands/s; 0 = as fast as the window
# allows) and each binary, RUNS times, interleaved: `orderwire serve
# --durability batch` with a fresh journal under $TMPDIR, `orderwire submit`
# of the rate's count of `mixed` commands (session 1, seed 1), SIGINT, then
# `orderwire journal inspect`: journal bytes per record = the bytes the
# groups take (each segment's data end - 4096, the header block left out)
# over the records; the records' own mean size (24-byte header + frame, the
# frames of `orderwire gen` for the same count) beside it, and the records
# per group (the journal's groups over its records: a quiet machine at low
# rates makes one group per record, a loaded one fewer). With
# ORDERWIRE_BEFORE (e.g. a build of the parent commit, or of a commit that
# writes another format version) both run in the same loop, so the
# machine's load is the same for both. The format version each binary
# wrote is taken from `journal inspect` and printed with its figures.
#
# Output: one line per run and a table of medians on stdout. Environment
# (defaults): RUNS (3), RATES ("1000 10000 100000 0"), SECONDS_PER_RUN (3: a
# rate's count is rate x seconds; the max rate sends MAX_COUNT, 1000000),
# TMPDIR (/tmp; it should be a disk file system: O_DIRECT, the default
# method of batch, is what packs groups by rewriting blocks).
set -euo pipefail

usage() {
  echo "usage: scripts/bench_journal_bytes.sh ORDERWIRE [ORDERWIRE_BEFORE]" >&2
  exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
binaries=("$1")
names=(after)
if [ $# -eq 2 ]; then
  binaries+=("$2")
  names+=(before)
fi
for b in "${binaries[@]}"; do
  [ -x "$b" ] || { echo "bench_journal_bytes.sh: $b is not executable" >&2; exit 2; }
done
runs=${RUNS:-3}
rates=${RATES:-1000 10000 100000 0}
seconds=${SECONDS_PER_RUN:-3}
max_count=${MAX_COUNT:-1000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/orderwire-bytes.XXXXXX")
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -INT "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "# $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $work ($(df -T "$work" | awk 'NR==2 {print $2}'))"
results=$work/results.txt
: >"$results"

run_one() {  # binary name rate run
  local ow=$1 name=$2 rate=$3 run=$4
  local count=$((rate * seconds))
  [ "$rate" -eq 0 ] && count=$max_count
  local dir=$work/$name-$rate-$run
  mkdir -p "$dir"
  "$ow" serve --listen 127.0.0.1:0 --journal "$dir/journal" \
    --durability batch 2>"$dir/serve.log" &
  server_pid=$!
  local port=
  for _ in $(seq 1 200); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' \
      "$dir/serve.log" 2>/dev/null | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$dir/serve.log" >&2; return 1; }
    sleep 0.05
  done
  [ -n "$port" ] || { echo "serve did not start" >&2; return 1; }
  "$ow" submit --target "127.0.0.1:$port" --session 1 --workload mixed \
    --count "$count" --seed 1 --rate "$rate" >"$dir/client.out" 2>&1
  kill -INT "$server_pid"
  wait "$server_pid"
  server_pid=
  "$ow" journal inspect "$dir/journal" >"$dir/inspect.txt"
  # The records' own size: the frames `gen` makes for this count, plus a
  # 24-byte record header each.
  local frame_bytes
  frame_bytes=$("$ow" gen --workload mixed --count "$count" --seed 1 | wc -c)
  python3 - "$dir/inspect.txt" "$name" "$rate" "$run" "$count" \
    "$frame_bytes" >>"$results" <<'EOF'
import re, sys
path, name, rate, run, count, frame_bytes = sys.argv[1:7]
used = records = groups = 0
versions = set()
for line in open(path):
    m = re.search(r"capacity \d+ bytes, (\d+) used", line)
    if m:
        used += int(m.group(1)) - 4096
    m = re.search(r"(\d+) groups, (\d+) records", line)
    if m:
        groups += int(m.group(1))
        records += int(m.group(2))
    m = re.search(r"format version (\d+)", line)
    if m:
        versions.add(m.group(1))
record_bytes = (int(frame_bytes) + 24 * int(count)) * records // int(count)
version = "+".join(sorted(versions)) or "?"
print(f"{name} {rate} {run} {records} {used} {record_bytes} {groups} v{version}")
EOF
  rm -rf "$dir/journal"
  tail -n 1 "$results" | awk '{printf "%-6s %s rate %7s run %s: %8d records, %5.2f records/group, %6.1f journal bytes/record, record %5.1f bytes: %.2fx\n", $1, $8, $2, $3, $4, $4/$7, $5/$4, $6/$4, $5/$6}'
}

for rate in $rates; do
  for run in $(seq 1 "$runs"); do
    for i in "${!binaries[@]}"; do
      run_one "${binaries[$i]}" "${names[$i]}" "$rate" "$run"
    done
  done
done

echo
echo "# medians of $runs runs: journal bytes per record (x the record's own mean size)"
python3 - "$results" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, rate, run, records, used, record_bytes, groups, version = line.split()
    rows[(int(rate), name, version)].append(
        (int(used) / int(records), int(record_bytes) / int(records),
         int(records) / int(groups)))
print(f"{'rate/s':>8} {'binary':>7} {'format':>6} {'bytes/record':>13} {'record':>7} {'ratio':>6} {'records/group':>14}")
for (rate, name, version) in sorted(rows, key=lambda k: (k[0] == 0, k[0], k[1])):
    per = rows[(rate, name, version)]
    b = statistics.median(p[0] for p in per)
    r = statistics.median(p[1] for p in per)
    g = statistics.median(p[2] for p in per)
    print(f"{rate if rate else 'max':>8} {name:>7} {version:>6} {b:13.1f} {r:7.1f} {b / r:6.2f} {g:14.2f}")
EOF
