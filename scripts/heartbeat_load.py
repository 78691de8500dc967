#!/usr/bin/env python3
"""Idle sessions that heartbeat: the neighbour of scripts/bench_heartbeats.sh.

    heartbeat_load.py HOST:PORT [--sessions N] [--interval S] [--first-id ID]

Each of N sessions (ids FIRST_ID, FIRST_ID + 1, ...) first sends one
command, a CancelByOrder of an order that does not exist (answered
Rejected: the session then has state, as a logged-on idle session does),
then a Heartbeat every S seconds (docs/CONTROLS.md "Heartbeats"), the
sessions' heartbeats spread evenly over each interval. The sessions come
from 127.0.0.2, 127.0.0.3, ... (200 a source address, below the service's
max_sessions_per_source of 256). Answers are read and counted. On SIGINT
or SIGTERM it prints one JSON object (heartbeats sent, acks and other
frames received) and exits 0.
"""

import argparse
import json
import select
import signal
import socket
import struct
import sys
import time

PER_SOURCE = 200
HEADER = "<2sBBIHH"  # magic, version, flags, session_id, frame_count, reserved


def datagram(session_id, frame):
    return struct.pack(HEADER, b"OW", 1, 0, session_id, 1, 0) + frame


def cancel_by_order(session_id):
    # sequence 1, kind 0x03: account 1, an order id nobody has.
    return datagram(session_id, struct.pack("<QBQQ", 1, 0x03, 1, 2**63))


def heartbeat(session_id, nonce):
    return datagram(session_id, struct.pack("<QBQ", 0, 0x07, nonce))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--first-id", type=int, default=100000)
    args = parser.parse_args()
    host, port = args.target.rsplit(":", 1)
    target = (host, int(port))
    sockets = []
    for i in range((args.sessions + PER_SOURCE - 1) // PER_SOURCE):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.%d" % (2 + i), 0))
        s.setblocking(False)
        sockets.append(s)
    counts = {"sessions": args.sessions, "heartbeats": 0, "acks": 0,
              "other_frames": 0}
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))

    def drain():
        for s in sockets:
            while True:
                try:
                    data = s.recv(2048)
                except BlockingIOError:
                    break
                kind = data[12 + 8] if len(data) > 20 else None
                if kind == 0x4A:
                    counts["acks"] += 1
                else:
                    counts["other_frames"] += 1

    for n in range(args.sessions):
        sockets[n // PER_SOURCE].sendto(cancel_by_order(args.first_id + n),
                                        target)
        if n % 50 == 49:
            time.sleep(0.01)
            drain()
    step = args.interval / args.sessions
    next_send = time.monotonic()
    nonce = 0
    while not stop:
        now = time.monotonic()
        if now < next_send:
            select.select(sockets, [], [], next_send - now)
            drain()
            continue
        n = nonce % args.sessions
        nonce += 1
        sockets[n // PER_SOURCE].sendto(heartbeat(args.first_id + n, nonce),
                                        target)
        counts["heartbeats"] += 1
        # Behind by more than an interval (descheduled): no burst to catch up.
        next_send = max(next_send + step, now - args.interval)
    drain()
    print(json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
