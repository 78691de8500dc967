# shellcheck shell=bash disable=SC2154
# Shell functions for the scripts that run a replicated orderwire cluster on
# loopback: scripts/failover_runs.sh and scripts/demo_cluster.sh. Sourced,
# not run. The caller sets:
#   ow       the orderwire binary
#   engine   the engine name (the stream orderwire_<engine>_journal)
#   servers  the NATS URL list (scripts/nats_cluster.sh start prints it)
#   nats_dir the nats_cluster.sh directory (for DIR/pids and DIR/monitors)
# and calls track_pid for every process it starts, and kill_tracked in its
# EXIT trap: only those processes are ever signalled.

tracked_pids=()
track_pid() { tracked_pids+=("$1"); }
kill_tracked() {
  local pid
  for pid in "${tracked_pids[@]}"; do
    kill -CONT "$pid" 2>/dev/null || true
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in "${tracked_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  tracked_pids=()
}

# N free loopback UDP ports, space separated.
free_udp_ports() {
  python3 -c '
import socket, sys
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()' "$1"
}

# Milliseconds since the epoch.
now_ms() { date +%s%3N; }

# wait_for_log FILE TEXT SECONDS [PID]: returns 0 once FILE holds TEXT, 1
# after SECONDS or as soon as PID (if given) has exited without it.
wait_for_log() {
  local file=$1 text=$2 deadline=$((SECONDS + $3)) pid=${4:-}
  until grep -qF -- "$text" "$file" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then return 1; fi
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      grep -qF -- "$text" "$file" 2>/dev/null
      return
    fi
    sleep 0.02
  done
}

# `orderwire cluster status --json`, or nothing when it cannot be read.
cluster_json() {
  "$ow" cluster status --nats "$servers" --engine-name "$engine" --json \
    2>/dev/null || true
}

# json_field JSON NAME: a top-level field of cluster_json's object ("" when
# absent or null).
json_field() {
  python3 -c '
import json, sys
try:
    value = json.loads(sys.argv[1]).get(sys.argv[2])
except ValueError:
    value = None
print("" if value is None else value)' "$1" "$2"
}

# The last journal index on the stream (0 when it cannot be read).
stream_last_index() {
  local index
  index=$(json_field "$(cluster_json)" stream_last_index)
  echo "${index:-0}"
}

# The member holding the lease, asked until it can be read for up to
# ${1:-60} s ("" then): right after a NATS node is killed the lease bucket
# may still be electing its leader ("open bucket ...: Timeout").
lease_holder() {
  local holder deadline=$((SECONDS + ${1:-60}))
  while :; do
    holder=$(json_field "$(cluster_json)" leader)
    if [ -n "$holder" ] || [ $SECONDS -ge $deadline ]; then break; fi
    sleep 0.5
  done
  echo "$holder"
}

# The node (0, 1, 2) leading the journal stream's RAFT group, from the
# monitoring endpoint's JetStream report (/jsz) of any node that answers;
# "" when none names a leader.
stream_leader_node() {
  local monitor
  while read -r monitor; do
    curl -s --max-time 2 "$monitor/jsz?accounts=true&streams=true" |
      python3 -c '
import json, sys
try:
    jsz = json.load(sys.stdin)
except ValueError:
    sys.exit(1)
for account in jsz.get("account_details") or []:
    for stream in account.get("stream_detail") or []:
        if stream.get("name") == sys.argv[1]:
            leader = (stream.get("cluster") or {}).get("leader", "")
            if leader.startswith("n"):
                print(leader[1:])
                sys.exit(0)
sys.exit(1)' "orderwire_${engine}_journal" && return 0
  done <"$nats_dir/monitors"
  return 0
}

# The pid of NATS node N (nats_cluster.sh's DIR/pids, line N+1).
nats_node_pid() { sed -n "$(($1 + 1))p" "$nats_dir/pids"; }

# A journal's records as JSON Lines (`journal inspect --records`): two
# members' journals are equal when these are.
journal_records() { "$ow" journal inspect "$1" --records 2>/dev/null | grep '^{' || true; }
