#!/usr/bin/env python3
"""Helper of scripts/system-exec.sh.

worker LOG NAME: the command `electd exec` runs. Appends `start`, then `tick` every
20 ms, and `stop` on SIGTERM, each line `<CLOCK_MONOTONIC ns> <event> <NAME> <pid>
<ELECTD_TERM>` (one machine: the monotonic clock is comparable across processes),
written with O_APPEND in one write(2) so lines of concurrent copies never mix.

check LOG BOUND_MS: reads every copy's interval (start to stop, or to its last line if
it was killed by SIGKILL) and fails if two copies ran at once for more than BOUND_MS;
prints the copies, the largest overlap and the number of handovers.
"""
import os
import signal
import sys
import time

TICK = 0.02


def worker(path, name):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    term = os.environ.get("ELECTD_TERM", "?")

    def line(event):
        os.write(fd, f"{time.monotonic_ns()} {event} {name} {os.getpid()} {term}\n".encode())

    def on_term(_sig, _frame):
        line("stop")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    line("start")
    while True:
        time.sleep(TICK)
        line("tick")


def check(path, bound_ms):
    copies = {}  # pid -> [name, start, end, stopped]
    with open(path) as f:
        for raw in f:
            parts = raw.split()
            if len(parts) != 5:
                continue
            t, event, name, pid = int(parts[0]), parts[1], parts[2], parts[3]
            c = copies.setdefault(pid, [name, t, t, False])
            c[2] = max(c[2], t)
            if event == "stop":
                c[3] = True
    runs = sorted(copies.values(), key=lambda c: c[1])
    worst = 0.0
    worst_pair = None
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            if b[0] == a[0]:
                continue
            overlap = (min(a[2], b[2]) - max(a[1], b[1])) / 1e6
            if overlap > worst:
                worst, worst_pair = overlap, (a, b)
    handovers = sum(1 for a, b in zip(runs, runs[1:]) if a[0] != b[0])
    for name, start, end, stopped in runs:
        how = "SIGTERM" if stopped else "killed/last line"
        print(f"  copy on {name}: {start / 1e9:.3f}s .. {end / 1e9:.3f}s ({how})")
    print(f"{len(runs)} copies, {handovers} handovers, largest overlap {worst:.1f} ms (bound {bound_ms} ms)")
    if len(runs) < 2 or handovers < 1:
        print("FAIL: fewer than two copies ran: nothing was handed over", file=sys.stderr)
        sys.exit(1)
    if worst > bound_ms:
        print(f"FAIL: two copies ran at once for {worst:.1f} ms: {worst_pair}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "check":
        check(sys.argv[2], float(sys.argv[3]))
    else:
        sys.exit(f"unknown subcommand {sys.argv[1]}")
