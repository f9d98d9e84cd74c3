#!/usr/bin/env python3
"""The nemesis run's fenced store: a stand-in for a database that fences writes.

  store.py SOCKET LOG DEADLINE

Listens on a Unix stream socket (reachable from every network namespace: a path, not
an address, so the network faults never cut a writer off from it). Each request is one
JSON line `{"alg", "term", "leader", "host", "seq", "pid"}`; the store keeps, per
algorithm, the highest fencing token (term, leader) it accepted and refuses any write
whose token is below it, as a fenced database does (equal is accepted: the same
leadership goes on). Every request is appended to LOG as one JSON line with the
store's CLOCK_MONOTONIC receive time `t`, the verdict `ok` and the highest token before
it `max`; the answer is `{"ok": bool, "max": [term, leader]}`.

The store is part of the test, not of electd: the checker re-reads LOG and verifies the
fence independently, so a broken store is caught too.
"""
import json
import os
import signal
import socket
import sys
import threading
import time

LOCK = threading.Lock()
HIGHEST = {}  # algorithm -> (term, leader)


def serve(conn, log):
    with conn:
        f = conn.makefile("rwb", buffering=0)
        for raw in f:
            try:
                req = json.loads(raw)
                token = (int(req["term"]), int(req["leader"]))
                alg = str(req["alg"])
            except (ValueError, KeyError, TypeError):
                f.write(b'{"ok": false, "error": "bad request"}\n')
                continue
            with LOCK:
                before = HIGHEST.get(alg, (0, 0))
                ok = token >= before
                if ok:
                    HIGHEST[alg] = token
                t = time.clock_gettime(time.CLOCK_MONOTONIC)
                rec = dict(req, t=t, ok=ok, max=list(before))
                log.write((json.dumps(rec) + "\n").encode())
            f.write((json.dumps({"ok": ok, "max": list(max(before, token))}) + "\n").encode())


def main():
    path, logpath, deadline = sys.argv[1], sys.argv[2], float(sys.argv[3])
    log = open(logpath, "ab", buffering=0)
    if os.path.exists(path):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chmod(path, 0o666)
    srv.listen(64)
    srv.settimeout(1.0)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while time.clock_gettime(time.CLOCK_MONOTONIC) < deadline:  # bounded; else SIGTERM
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        conn.settimeout(None)
        threading.Thread(target=serve, args=(conn, log), daemon=True).start()


if __name__ == "__main__":
    main()
