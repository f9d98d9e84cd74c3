#!/usr/bin/env python3
"""The workload `electd exec` runs on every host during the nemesis run.

  writer.py STORE_SOCKET LOG HOST DEADLINE

Reads its fencing token from the environment `electd exec` gives it (ELECTD_ALGORITHM,
ELECTD_TERM, ELECTD_LEADER) and appends (token, host, sequence) to the fenced store every
TICK (50 ms). Its own log (one file per algorithm, shared by every copy, each line one
O_APPEND write(2) so copies never mix) gets a JSON line per event with CLOCK_MONOTONIC
`t`: `start`, `write` (with the store's verdict, or `error` when the store did not
answer) and `stop` (SIGTERM). A copy killed by SIGKILL simply has no `stop`. DEADLINE (CLOCK_MONOTONIC seconds)
bounds its loop: past it the writer exits even if nobody stopped it.
"""
import json
import os
import signal
import socket
import sys
import time

TICK = 0.05


def main():
    store, path, host = sys.argv[1], sys.argv[2], int(sys.argv[3])
    deadline = float(sys.argv[4])
    alg = os.environ.get("ELECTD_ALGORITHM", "?")
    term = int(os.environ.get("ELECTD_TERM") or 0)
    leader = int(os.environ.get("ELECTD_LEADER") or 0)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    base = {"alg": alg, "host": host, "pid": os.getpid(), "term": term, "leader": leader}

    def line(ev, **kw):
        rec = dict(base, t=time.clock_gettime(time.CLOCK_MONOTONIC), ev=ev, **kw)
        os.write(fd, (json.dumps(rec) + "\n").encode())

    def on_term(_sig, _frame):
        line("stop")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    line("start")
    conn = None
    seq = 0
    while time.clock_gettime(time.CLOCK_MONOTONIC) < deadline:
        seq += 1
        try:
            if conn is None:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(1.0)
                s.connect(store)
                conn = s.makefile("rwb", buffering=0)
            req = dict(base, seq=seq)
            conn.write((json.dumps(req) + "\n").encode())
            answer = json.loads(conn.readline())
            line("write", seq=seq, ok=bool(answer.get("ok")))
        except (OSError, ValueError):
            conn = None
            line("write", seq=seq, ok=None, error=True)
        time.sleep(TICK)


if __name__ == "__main__":
    main()
