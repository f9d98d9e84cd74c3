#!/usr/bin/env python3
"""Helper of scripts/system-netns.sh: query electd nodes that live in network
namespaces (through `ip netns exec NS curl`) and wait, bounded, for a condition.

The node map is read from the file $ADDRS on every poll (lines `id ns ip`), so a node
that moves to a new address is followed.

  netns_poll.py wait SECONDS ALGORITHM EXPECT NODE...   exit 0 when every NODE reports
        a leader matching EXPECT for ALGORITHM: an id, `none` (no leader), `same` (one
        leader all agree on), or `same:1,2,3` (agreed and among these ids); prints the
        time taken. Exit 1 with every view printed at the deadline.
  netns_poll.py views ALGORITHM NODE...                 print each node's leader
  netns_poll.py metrics NODE                           print `datagrams messages_hb_coord
        messages_all` of one node (electd_datagrams_sent_total, and the sum of
        electd_messages_sent_total over the coordinator and heartbeat types / all types)
"""
import json
import os
import subprocess
import sys
import time

PORT = int(os.environ.get("HTTP_PORT", "5741"))


def nodes():
    out = {}
    with open(os.environ["ADDRS"]) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                out[int(parts[0])] = (parts[1], parts[2])
    return out


def get(node, path):
    ns, ip = nodes()[node]
    try:
        r = subprocess.run(
            ["ip", "netns", "exec", ns, "curl", "-s", "-m", "1", f"http://{ip}:{PORT}{path}"],
            capture_output=True, text=True, timeout=3,
        )
        return r.stdout if r.returncode == 0 else None
    except subprocess.TimeoutExpired:
        return None


def leader(node, algorithm):
    """The node's leader for ALGORITHM: an int, None (no leader), or '?' (no answer)."""
    text = get(node, "/status")
    if not text:
        return "?"
    try:
        for g in json.loads(text)["groups"]:
            if g["algorithm"] == algorithm:
                return g["leader"]
    except (ValueError, KeyError, TypeError):
        pass
    return "?"


def matches(views, expect):
    values = list(views.values())
    if expect == "none":
        return all(v is None for v in values)
    if expect.startswith("same"):
        first = values[0]
        if not isinstance(first, int) or any(v != first for v in values):
            return False
        if ":" in expect:
            return first in {int(x) for x in expect.split(":", 1)[1].split(",")}
        return True
    return all(v == int(expect) for v in values)


def show(views):
    return " ".join(f"n{n}={'-' if v is None else v}" for n, v in sorted(views.items()))


def main():
    cmd = sys.argv[1]
    if cmd == "wait":
        secs, algorithm, expect = float(sys.argv[2]), sys.argv[3], sys.argv[4]
        ids = [int(x) for x in sys.argv[5:]]
        start = time.monotonic()
        polls = 0
        while True:
            views = {n: leader(n, algorithm) for n in ids}
            polls += 1
            took = time.monotonic() - start
            if matches(views, expect):
                print(f"{algorithm}: {show(views)} (expected {expect}) after {took:.2f}s, {polls} polls")
                return 0
            if took > secs:
                print(f"TIMEOUT after {secs}s: {algorithm} expected {expect}, views: {show(views)}")
                return 1
            time.sleep(0.1)
    if cmd == "views":
        algorithm = sys.argv[2]
        views = {int(n): leader(int(n), algorithm) for n in sys.argv[3:]}
        print(f"{algorithm}: {show(views)}")
        return 0
    if cmd == "invalid":
        # Sum of electd_invalid_datagrams_total over the given nodes.
        # Every node must answer: the series are pre-registered at zero, so a node
        # without them was not read and "0" would prove nothing.
        total = 0.0
        for n in sys.argv[2:]:
            lines = [
                l for l in (get(int(n), "/metrics") or "").splitlines()
                if l.startswith("electd_invalid_datagrams_total{")
            ]
            if not lines:
                print(f"node {n}: no metrics", file=sys.stderr)
                return 1
            total += sum(float(l.rsplit(" ", 1)[1]) for l in lines)
        print(f"{total:.0f}")
        return 0
    if cmd == "metrics":
        text = get(int(sys.argv[2]), "/metrics") or ""
        dg = hb = total = 0.0
        for line in text.splitlines():
            if line.startswith("electd_datagrams_sent_total"):
                dg += float(line.rsplit(" ", 1)[1])
            elif line.startswith("electd_messages_sent_total{"):
                v = float(line.rsplit(" ", 1)[1])
                total += v
                if 'type="heartbeat"' in line or 'type="coordinator"' in line:
                    hb += v
        print(f"{dg:.0f} {hb:.0f} {total:.0f}")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
