#!/usr/bin/env bash
# Starts and stops a local NATS JetStream cluster for demos and manual
# benchmarks: 1 or 3 nats-server processes on free loopback ports, JetStream
# on, their stores and logs under DIR. (The tests and replication_publish_rate
# use the C++ harness tests/support/nats_cluster.h instead.)
#
#   scripts/nats_cluster.sh start DIR [1|3]   # prints the servers URL list
#   scripts/nats_cluster.sh stop DIR          # kills them, keeps DIR
#
# start writes DIR/servers (nats://127.0.0.1:P,... for --servers options),
# DIR/pids and DIR/monitors (node i's pid and monitoring URL on line i+1; its
# server name is n<i>, as JetStream names a stream's leader), and returns once every server's /healthz answers 200 (JetStream
# current; for 3 servers that needs the meta leader), or fails after 30 s
# printing the logs. Right after that, creating an R3 stream may still fail
# with JetStream error 10005 (no suitable peers) for a moment: retry (the C++
# harness waits for a probe R3 stream instead). Needs nats-server
# (scripts/setup.sh), curl and python3.
set -euo pipefail

usage() {
  echo "usage: scripts/nats_cluster.sh start DIR [1|3] | stop DIR" >&2
  exit 2
}
[ $# -ge 2 ] || usage
cmd=$1
dir=$2

server=$(command -v nats-server || true)
[ -n "$server" ] || [ ! -x /usr/sbin/nats-server ] || server=/usr/sbin/nats-server
if [ -z "$server" ]; then
  echo "nats_cluster.sh: nats-server not found (Debian package nats-server;" \
    "scripts/setup.sh installs it)" >&2
  exit 1
fi

stop() {
  [ -f "$dir/pids" ] || return 0
  while read -r pid; do
    kill "$pid" 2>/dev/null || true
  done <"$dir/pids"
  rm -f "$dir/pids"
}

case "$cmd" in
  stop)
    stop
    ;;
  start)
    nodes=${3:-1}
    [ "$nodes" = 1 ] || [ "$nodes" = 3 ] || usage
    mkdir -p "$dir"
    if [ -f "$dir/pids" ]; then
      echo "nats_cluster.sh: $dir/pids exists: stop that cluster first" >&2
      exit 1
    fi
    # 3 ports per node (client, cluster, monitoring), all free at once.
    read -r -a ports <<<"$(python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()' $((3 * nodes)))"
    urls=()
    : >"$dir/pids"
    : >"$dir/monitors"
    for ((i = 0; i < nodes; i++)); do
      client=${ports[$((3 * i))]}
      urls+=("nats://127.0.0.1:$client")
    done
    for ((i = 0; i < nodes; i++)); do
      client=${ports[$((3 * i))]}
      cluster=${ports[$((3 * i + 1))]}
      monitor=${ports[$((3 * i + 2))]}
      args=(-a 127.0.0.1 -p "$client" -m "$monitor" -n "n$i" -js
        --store_dir "$dir/n$i-store")
      if [ "$nodes" = 3 ]; then
        routes=()
        for ((j = 0; j < nodes; j++)); do
          [ "$j" = "$i" ] || routes+=("nats://127.0.0.1:${ports[$((3 * j + 1))]}")
        done
        args+=(--cluster_name orderwire-demo
          --cluster "nats://127.0.0.1:$cluster"
          --routes "$(IFS=,; echo "${routes[*]}")")
      fi
      "$server" "${args[@]}" >"$dir/n$i.log" 2>&1 &
      echo $! >>"$dir/pids"
      echo "http://127.0.0.1:$monitor" >>"$dir/monitors"
    done
    deadline=$((SECONDS + 30))
    for ((i = 0; i < nodes; i++)); do
      monitor=${ports[$((3 * i + 2))]}
      until [ "$(curl -s -o /dev/null -w '%{http_code}' \
        "http://127.0.0.1:$monitor/healthz" || true)" = 200 ]; do
        if [ $SECONDS -ge $deadline ]; then
          echo "nats_cluster.sh: n$i not healthy after 30 s; logs:" >&2
          tail -n 20 "$dir"/n*.log >&2
          stop
          exit 1
        fi
        sleep 0.1
      done
    done
    (IFS=,; echo "${urls[*]}") | tee "$dir/servers"
    ;;
  *)
    usage
    ;;
esac
