#!/usr/bin/env python3
"""Polls one node's GET /status and appends what it saw: the checker's view of a node.

  poller.py NODE URL LOG PERIOD_S DEADLINE_S

Run inside the node's network namespace (`ip netns exec`). Every PERIOD_S it asks
URL/status (timeout 0.3 s) and appends one JSON line: `t` (CLOCK_MONOTONIC, when the
answer came: the node reads its state while answering, so a stopped node's answer,
queued until SIGCONT, is dated after the SIGCONT and not before it), `t0` (when the
request was sent), `node`, and either `groups` ({algorithm: [term, leader, state,
ineligible]}) or `down` (no answer: killed, stopped, or still starting). Stops by
itself after DEADLINE_S seconds (a bounded loop) or on SIGTERM.
"""
import json
import os
import signal
import sys
import time
import urllib.request


def main():
    node, url, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    period, deadline = float(sys.argv[4]), time.monotonic() + float(sys.argv[5])
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    out = open(path, "a", buffering=1)
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        rec = {"node": node}
        try:
            with urllib.request.urlopen(url + "/status", timeout=0.3) as r:
                st = json.loads(r.read())
            rec["groups"] = {
                g["algorithm"]: [g["term"], g["leader"], g.get("state"), g.get("ineligible", [])]
                for g in st["groups"]
            }
        except Exception as e:  # any failure is "no answer"; the checker only needs that
            rec["down"] = type(e).__name__
        t1 = time.monotonic()
        rec["t"], rec["t0"] = t1, t0
        out.write(json.dumps(rec) + "\n")
        time.sleep(max(0.0, period - (t1 - t0)))


if __name__ == "__main__":
    main()
