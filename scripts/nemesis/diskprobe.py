#!/usr/bin/env python3
"""The nemesis run's disk probe: what a write with fdatasync costs, seen from outside
the daemon, on the filesystem that holds the nodes' state files.

An election's claim leaves only once its state write is on disk (docs/architecture.md,
"The layers", daemon), so a disk that stalls holds every claim made meanwhile. The checker
(check.py) adds the longest write this probe saw during a leaderless stretch to that
stretch's bound, as the disk's share, measured independently of electd.

Usage: diskprobe.py FILE OUT.jsonl DEADLINE
Every PERIOD it rewrites 64 bytes of FILE and fdatasyncs it; OUT.jsonl gets one line per
write, {"t": monotonic end, "ms": duration}. Bounded: it stops at DEADLINE (monotonic
seconds) or on SIGTERM.
"""
import json
import os
import signal
import sys
import time

PERIOD = 0.05


def main():
    path, out_path, deadline = sys.argv[1], sys.argv[2], float(sys.argv[3])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    payload = b"x" * 64
    with open(out_path, "a", buffering=1) as out:
        while time.monotonic() < deadline:  # bounded by the deadline
            start = time.monotonic()
            os.pwrite(fd, payload, 0)
            os.fdatasync(fd)
            end = time.monotonic()
            out.write(json.dumps({"t": end, "ms": round((end - start) * 1000, 2)}) + "\n")
            time.sleep(max(0.0, PERIOD - (end - start)))
    os.close(fd)


if __name__ == "__main__":
    main()
