#!/usr/bin/env python3
"""hops.py: electd's time per ring hop on an idle cluster, beside the machine's floor.

    docs/bench/hops/hops.py [--nodes 256] [--rounds 20] [--exe target/release/electd]

(from the repository root, after `cargo build --release`; needs gcc and python3).

electd: N `electd run` processes of one LCR group on 127.0.61.x (timing scaled as
deploy/README.md advises: every period × ceil(N/64)). Once they agree, ROUNDS times:
an operator election at node 1 (POST /admin/election), timed from just before the
request to node N's own adoption of itself (the `at_us` stamp of the event on its
/watch). Chang-Roberts' path from node 1 is sequential: node 1's id is beaten at every
member up to N (N - 1 hops), then N's id goes round (N hops), so the time per hop is
that time / (2N - 1). Also printed: the CPU of all N processes beyond their idle rate
over the rounds, per hop (the whole election's: its N announcement hops, the adoptions'
state writes and every acknowledgement count too).

floor: ringfloor.c at the same N (separate processes passing a token round a ring,
each hop acknowledged): the kernel's and the scheduler's share of a hop, nothing else.

Every process started is stopped by its PID; every wait has a deadline.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "hops-bench-admin-token"


def addr(i, port):
    return f"127.0.61.{i % 250 + 1}", port + i


def config(d, n, base):
    k = max(1, -(-n // 64))
    lines = [
        'cluster = "hops"', 'algorithms = ["lcr"]', "[timing]",
        f'heartbeat = "{10 * k}ms"', f'failure_timeout = "{100 * k}ms"',
        f'answer_timeout = "{10 * k}ms"', f'coordinator_timeout = "{50 * k}ms"',
        f'election_timeout = "{100 * k}ms..{200 * k}ms"',
        "[security]", "insecure = true",
        "[admin]", f'token_file = "{d}/admin.token"',
        "[state]", f'file = "{d}/{{node}}.state"',
    ]
    for i in range(1, n + 1):
        (h, up), (_, hp) = addr(i, base), addr(i, base + 10000)
        lines += ["[[peer]]", f"id = {i}", f'addr = "{h}:{up}"', f'http = "{h}:{hp}"']
    with open(f"{d}/admin.token", "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(f"{d}/admin.token", 0o600)
    with open(f"{d}/c.toml", "w") as f:
        f.write("\n".join(lines) + "\n")
    return k


def get(i, base, path):
    h, p = addr(i, base + 10000)
    with urllib.request.urlopen(f"http://{h}:{p}{path}", timeout=2) as r:
        return r.read().decode()


def leader(i, base):
    try:
        return json.loads(get(i, base, "/status"))["groups"][0].get("leader")
    except (OSError, ValueError, KeyError, IndexError):
        return None


def cpu_s(pids):
    tck = os.sysconf("SC_CLK_TCK")
    t = 0
    for p in pids:
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            t += int(f[11]) + int(f[12])
        except OSError:
            pass
    return t / tck


class Watch:
    """Node N's /watch stream: its events, one at a time, each read with a deadline."""

    def __init__(self, n, base):
        h, p = addr(n, base + 10000)
        self.s = socket.create_connection((h, p), timeout=5)
        self.s.sendall(b"GET /watch HTTP/1.1\r\nHost: electd\r\n\r\n")
        self.buf = b""

    def next(self, within=10.0):
        end = time.monotonic() + within
        while b"\n\n" not in self.buf:
            if time.monotonic() > end or len(self.buf) > 1 << 20:
                raise TimeoutError("no event on /watch")
            self.s.settimeout(max(0.01, end - time.monotonic()))
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("/watch closed")
            self.buf += chunk
        ev, self.buf = self.buf.split(b"\n\n", 1)
        for line in ev.split(b"\n"):
            if line.startswith(b"data:"):
                return json.loads(line[5:])
        return {}


def electd_hops(exe, n, rounds, base, d):
    k = config(d, n, base)
    procs = []
    try:
        for i in range(1, n + 1):
            with open(f"{d}/{i}.log", "w") as log:
                procs.append(subprocess.Popen(
                    [exe, "run", "-c", f"{d}/c.toml", "--node-id", str(i)],
                    stdout=subprocess.DEVNULL, stderr=log))
        end = time.monotonic() + 60
        while not all(leader(i, base) == n for i in (1, n // 2, n)):
            if time.monotonic() > end:
                sys.exit(f"no agreement on node {n} within 60 s (logs in {d})")
            time.sleep(0.2)
        pids = [p.pid for p in procs]
        w = Watch(n, base)
        term = w.next().get("term", 0)
        pause = 0.3 * k
        c0, t0 = cpu_s(pids), time.monotonic()
        time.sleep(rounds * pause)
        idle = (cpu_s(pids) - c0) / (time.monotonic() - t0)
        c1, t1 = cpu_s(pids), time.monotonic()
        per = []
        h1, p1 = addr(1, base + 10000)
        for r in range(rounds):
            req = urllib.request.Request(
                f"http://{h1}:{p1}/admin/election?algorithm=lcr", method="POST",
                headers={"Authorization": f"Bearer {TOKEN}"})
            start_us = time.time() * 1e6
            urllib.request.urlopen(req, timeout=5).read()
            for _ in range(100):
                e = w.next()
                if e.get("leader") == n and e.get("term", 0) > term:
                    term = e["term"]
                    break
            else:
                sys.exit(f"round {r + 1}: node {n} never adopted itself again")
            per.append((e["at_us"] - start_us) / (2 * n - 1))
            time.sleep(pause)
        busy = cpu_s(pids) - c1 - idle * (time.monotonic() - t1)
        return per, busy / rounds / (2 * n - 1) * 1e6
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
        for p in procs:
            p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--exe", default="target/release/electd")
    ap.add_argument("--base-port", type=int, default=20000)
    a = ap.parse_args()
    if not 2 <= a.nodes <= 1000 or not 1 <= a.rounds <= 200:
        sys.exit("--nodes must be 2..1000 and --rounds 1..200")
    if not 1024 <= a.base_port <= 65535 - 10000 - a.nodes:
        sys.exit(f"--base-port must be 1024..{65535 - 10000 - a.nodes}")
    if not os.access(a.exe, os.X_OK):
        sys.exit(f"{a.exe}: not an executable (cargo build --release first)")
    d = tempfile.mkdtemp(prefix="electd-hops-")
    try:
        subprocess.run(["gcc", "-O2", "-o", f"{d}/ringfloor", f"{HERE}/ringfloor.c"], check=True)
        floor = subprocess.run([f"{d}/ringfloor", str(a.nodes), "20"], check=True,
                               capture_output=True, text=True).stdout.strip()
        per, cpu = electd_hops(os.path.abspath(a.exe), a.nodes, a.rounds, a.base_port, d)
        fmed = float(floor.split("median ")[1].split()[0])
        med = statistics.median(per)
        print(f"floor (ringfloor.c): {floor}")
        print(f"electd lcr n={a.nodes} rounds={a.rounds} per-hop us: median {med:.1f} "
              f"min {min(per):.1f} max {max(per):.1f} ({med / fmed:.1f} x the floor)")
        print(f"electd CPU beyond idle per hop of the path: {cpu:.0f} us "
              f"(the whole election's, over {2 * a.nodes - 1} hops)")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
