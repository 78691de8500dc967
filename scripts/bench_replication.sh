#!/usr/bin/env bash
# JetStream publish of journal-group-sized messages, R1 and R3: runs
# BUILD_DIR/bench/replication_publish_rate (which starts its own nats-server
# processes on loopback) REPEAT times per replica count and prints the median
# of each figure, the raw libnats async publish beside JournalPublisher
# (docs/BENCHMARKS.md "Replication").
#
#   scripts/bench_replication.sh BUILD_DIR [REPEAT]
#
# Environment: MESSAGES (default 20000), SIZE (4096), WINDOW (32).
# The servers and the publisher share the machine's cores (3 servers on a
# 2-core machine for R3): the figures measure the machine as much as the
# code; the script prints the load first.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: scripts/bench_replication.sh BUILD_DIR [REPEAT]" >&2
  exit 2
fi
bench=$1/bench/replication_publish_rate
repeat=${2:-5}
if [ ! -x "$bench" ]; then
  echo "bench_replication.sh: $bench missing (cmake --build $1 --target" \
    "replication_publish_rate)" >&2
  exit 2
fi
messages=${MESSAGES:-20000}
size=${SIZE:-4096}
window=${WINDOW:-32}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
for replicas in 1 3; do
  out=$("$bench" --replicas "$replicas" --messages "$messages" \
    --size "$size" --window "$window" --repeat "$repeat")
  printf '%s\n' "$out" | sed 's/^/  /'
  for publisher in raw raw_headers journal; do
    printf '%s\n' "$out" | awk -v p="publisher=$publisher" -v r="$replicas" '
      $2 == p {
        for (i = 1; i <= NF; i++) {
          split($i, kv, "=")
          if (kv[1] ~ /msgs_per_s|ack_p50_us|ack_p99_us/) v[kv[1], ++n[kv[1]]] = kv[2]
        }
      }
      function median(k,   m, i, j, t, a) {
        m = n[k]; if (m == 0) return "-"
        for (i = 1; i <= m; i++) a[i] = v[k, i] + 0
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
          if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
      }
      END {
        printf "median R%d %-11s msgs/s %s  ack p50 us %s  ack p99 us %s  (%d runs)\n",
          r, substr(p, 11), median("msgs_per_s"), median("ack_p50_us"),
          median("ack_p99_us"), n["msgs_per_s"]
      }'
  done
done
