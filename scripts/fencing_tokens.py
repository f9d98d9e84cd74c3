#!/usr/bin/env python3
"""Helper of scripts/system-fencing.sh: wait, bounded, until every node of a
network-namespace cluster reports the same fencing token (leader and term) for every
algorithm, and that token is above every token recorded before (term first, then leader
id, as electd orders them); then record the tokens.

  fencing_tokens.py settle SECONDS STEP LEADER NODE...   every NODE agrees, for every
        algorithm, on one token; the Bully and ring families on leader LEADER, with a
        token above the highest recorded (each step gives them a new leadership); Raft
        at or above it (it keeps its leader unless the step took it away); then records
        them.
  fencing_tokens.py record NODE...                       record every node's token
        (e.g. both sides of a partition), without checking agreement.

The node map is read from $ADDRS (lines `id ns ip`); the highest token seen per
algorithm is kept in $TOKENS (JSON: algorithm -> [term, leader]). Tokens are ordered
as electd orders them: term first, then leader id. Exit 1 with every view printed at
the deadline.
"""
import json
import os
import subprocess
import sys
import time

PORT = int(os.environ.get("HTTP_PORT", "9100"))
ALGORITHMS = ["bully", "improved-bully", "ring", "lcr", "hs", "raft"]


def nodes():
    out = {}
    with open(os.environ["ADDRS"]) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                out[int(parts[0])] = (parts[1], parts[2])
    return out


def status(node):
    ns, ip = nodes()[node]
    try:
        r = subprocess.run(
            ["ip", "netns", "exec", ns, "curl", "-s", "-m", "1", f"http://{ip}:{PORT}/status"],
            capture_output=True, text=True, timeout=3,
        )
        if r.returncode != 0:
            return None
        return {g["algorithm"]: (g["term"], g["leader"]) for g in json.loads(r.stdout)["groups"]}
    except (subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
        return None


def check(views, seen, expect):
    """None if settled, on `expect` (Bully and ring families) and not below `seen`."""
    for a in ALGORITHMS:
        tokens = {n: (v or {}).get(a) for n, v in views.items()}
        distinct = set(tokens.values())
        if len(distinct) != 1 or None in distinct:
            return f"{a}: nodes disagree: {tokens}"
        term, leader = distinct.pop()
        if leader is None:
            return f"{a}: no leader: {tokens}"
        if a != "raft" and leader != expect:
            return f"{a}: leader {leader}, expected {expect}"
        before = tuple(seen.get(a, (0, 0)))
        # Every step of the script gives the Bully and ring families a new leadership:
        # its token must exceed every one seen. Raft may keep its leader (same token).
        if (term, leader) < before or ((term, leader) == before and a != "raft"):
            return f"{a}: token ({term}, {leader}) is not above ({before[0]}, {before[1]})"
    return None


def record(ids, seen):
    for n in ids:
        for a, (term, leader) in (status(n) or {}).items():
            if leader is not None:
                seen[a] = max(tuple(seen.get(a, (0, 0))), (term, leader))


def main():
    path = os.environ["TOKENS"]
    seen = json.load(open(path)) if os.path.exists(path) else {}
    if len(sys.argv) >= 3 and sys.argv[1] == "record":
        record([int(x) for x in sys.argv[2:]], seen)
        json.dump(seen, open(path, "w"))
        print("recorded: " + ", ".join(f"{a} {tuple(t)}" for a, t in sorted(seen.items())))
        return 0
    if len(sys.argv) < 6 or sys.argv[1] != "settle":
        print(__doc__, file=sys.stderr)
        return 2
    secs, step, expect = float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    ids = [int(x) for x in sys.argv[5:]]
    start = time.monotonic()
    deadline = start + secs
    reason = "no poll"
    while time.monotonic() < deadline:
        views = {n: status(n) for n in ids}
        reason = check(views, seen, expect)
        if reason is None:
            # Settled: still the same a moment later (not a passing agreement).
            time.sleep(0.5)
            again = {n: status(n) for n in ids}
            if again == views:
                for a in ALGORITHMS:
                    term, leader = views[ids[0]][a]
                    seen[a] = max(tuple(seen.get(a, (0, 0))), (term, leader))
                json.dump(seen, open(path, "w"))
                print(f"{step}: tokens agree after {time.monotonic() - start:.1f}s: "
                      + ", ".join(f"{a} ({views[ids[0]][a][0]}, {views[ids[0]][a][1]})"
                                  for a in ALGORITHMS))
                return 0
            reason = "changed while checking"
        time.sleep(0.2)
    print(f"{step}: not settled within {secs}s: {reason}", file=sys.stderr)
    for n in ids:
        print(f"  node {n}: {status(n)}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
