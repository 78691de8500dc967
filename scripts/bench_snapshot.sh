#!/usr/bin/env bash
# Snapshot figures (docs/BENCHMARKS.md, "Snapshots"): a journal of N
# resting limit orders (default 1,000,000: 64 accounts, 1024 instruments,
# bids below and asks above the mid, so nothing trades and every order
# stays live), then, RUNS times each:
#   - `orderwire snapshot` (the write: encode + write + fsync + rename +
#     directory fsync, as printed by the command; the replay before it is
#     not counted),
#   - `orderwire snapshot inspect` (the load: read, verify everything,
#     build the state; wall time of the process),
#   - `cat FILE > /dev/null` (the baseline: reading the file alone),
# and prints the median of each and the file's size.
#
#   scripts/bench_snapshot.sh [BUILD_DIR] [N] [RUNS]
set -euo pipefail
build_dir=${1:-build/release}
count=${2:-1000000}
runs=${3:-5}
orderwire=$build_dir/cli/orderwire
work=$(mktemp -d "${TMPDIR:-/tmp}/ow-bench-snapshot-XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 - "$count" > "$work/orders.bin" <<'PY'
import struct, sys
count = int(sys.argv[1])
out = sys.stdout.buffer
for i in range(count):
    side = 1 + (i & 1)  # Buy, Sell
    offset = 1 + (i // 2048) % 5000
    price = 100_000 - offset if side == 1 else 100_000 + offset
    # NewLimit: sequence, kind 0x01, account, client_order_id, instrument,
    # side, GoodTillCancel, price, quantity.
    out.write(struct.pack("<QBQQIBBqQ", i + 1, 0x01, 1 + i % 64, i + 1,
                          1 + i % 1024, side, 1, price, 10))
PY
"$orderwire" journal write --journal "$work/j" --durability none \
  < "$work/orders.bin" > /dev/null
rm "$work/orders.bin"

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# "wall cpu" seconds of a command (cpu = user + system).
timed() {
  /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" > /dev/null
  awk '{printf "%s %.2f\n", $1, $2 + $3}' "$work/time"
}
write_s=() load_wall=() load_cpu=() cat_wall=() cat_cpu=()
file=
for _ in $(seq "$runs"); do
  out=$("$orderwire" snapshot --journal "$work/j" --no-snapshot)
  write_s+=("$(sed -n 's/.*written in \([0-9.]*\) s.*/\1/p' <<<"$out")")
  file=$(sed -n 's/^snapshot: wrote \([^:]*\):.*/\1/p' <<<"$out")
  read -r wall cpu < <(timed "$orderwire" snapshot inspect "$file")
  load_wall+=("$wall") load_cpu+=("$cpu")
  read -r wall cpu < <(timed cat "$file")
  cat_wall+=("$wall") cat_cpu+=("$cpu")
done
m() { printf '%s\n' "$@" | median; }
echo "snapshot of $count live orders: $(stat -c %s "$file") bytes; medians of $runs runs"
echo "  write (encode, write, fsync, rename, dir fsync): $(m "${write_s[@]}") s wall"
echo "  load (snapshot inspect: read, verify, build):    $(m "${load_wall[@]}") s wall, $(m "${load_cpu[@]}") s CPU"
echo "  baseline: cat FILE > /dev/null (page cache):     $(m "${cat_wall[@]}") s wall, $(m "${cat_cpu[@]}") s CPU"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
