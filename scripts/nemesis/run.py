#!/usr/bin/env python3
"""The nemesis run's driver: start the cluster, the workload and the observers, then
inject a randomized, overlapping fault schedule from a fixed seed.

Called by scripts/system-nemesis.sh, which owns the namespaces (created with
scripts/lib/netns.sh) and the cleanup; this program owns every process it starts and
stops each by its PID (also on SIGTERM/SIGINT), and writes every PID it starts to
WORK/pids so that the shell's EXIT trap can stop a leftover by PID too.

What it writes into WORK, for the checker (scripts/nemesis/check.py), which reads
nothing else:
  schedule.jsonl   one line per fault action, CLOCK_MONOTONIC `t` (the action done) and
                   `t_start` (the action begun): {"t", "t_start", "id", "kind",
                   "ev": "start"|"end"|"step", "nodes", ...}; the first line is the
                   run's parameters ("ev": "run")
  poll-N.jsonl     node N's /status, as seen from outside (scripts/nemesis/poller.py)
  store.jsonl      every write the fenced store received, with its verdict
  writer-A.jsonl   every copy of algorithm A's writer: start / write / stop
Faults (one process fault, one drain and one network fault at a time, plus instant
transfers and spoofed datagrams; each from the seeded generator):
  kill        SIGKILL a node's daemon, restart it (same state file) after d
  kill-wipe   SIGKILL, restart after d with the state file removed
  stop        SIGSTOP the daemon, SIGCONT after d
  exec-kill   SIGKILL one `electd exec` (its writer may be left behind), restart it after d
  drain       `electd drain` a node (every group), `electd undrain` after d; half of them
              also SIGKILL and restart the node while it is drained
  partition   nft: two sides that drop each other's election datagrams, healed after d
  one-way     nft: a node's outgoing election datagrams dropped, healed after d
  loss        nft: 30 % of every node's incoming election datagrams dropped, for d
  transfer    `electd transfer` of one group from its leader to a random node
  spoof       a forged datagram (spoof.py) to a follower: a heartbeat "from" its
              group's leader with an incarnation 9 s ahead or a term 10^6 ahead, a
              COORDINATOR "from" another member (Bully family), a TIMEOUT_NOW "from" the
              leader (Raft)
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ALGORITHMS = ["bully", "improved-bully", "ring", "lcr", "hs", "raft"]


class Run:
    def __init__(self, a):
        self.a = a
        # Every draw of the schedule comes from rng, a fixed number per fault, so one
        # seed gives one sequence of kinds, durations, gaps and fallbacks; only which
        # node "the leader" is depends on the run. Asking order has its own generator.
        self.rng = random.Random(a.seed)
        self.order_rng = random.Random(a.seed + 1)
        self.work = a.work
        self.nodes = list(range(1, a.nodes + 1))
        self.daemon = {}  # node -> Popen
        self.execs = {}  # (node, alg) -> Popen
        self.others = []  # pollers, store
        self.sched = open(os.path.join(self.work, "schedule.jsonl"), "a", buffering=1)
        self.pids = open(os.path.join(self.work, "pids"), "a", buffering=1)
        self.t0 = time.monotonic()
        # Every helper process's own bound: it exits by then even if nobody stops it.
        self.deadline = self.t0 + a.duration + a.warmup + a.cooldown + 300
        self.counts = {}
        self.next_id = 0
        self.nft_tables = set()
        self.threads = []
        self.held = {}  # slot -> the node a running fault holds

    # ---- helpers
    def ns(self, n):
        return f"{self.a.prefix}-{n}"

    def ip(self, n):
        return f"{self.a.net}.{n}"

    def url(self, n):
        return f"http://{self.ip(n)}:{self.a.http_port}"

    def note(self, **rec):
        rec["t"] = time.monotonic()
        self.sched.write(json.dumps(rec) + "\n")

    def progress(self, msg):
        el = time.monotonic() - self.t0
        total = sum(self.counts.values())
        print(f"[nemesis +{el:6.1f}s] {msg}  (faults so far: {total})", flush=True)

    def spawn(self, argv, out, env=None):
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                             stdin=subprocess.DEVNULL)
        self.pids.write(f"{p.pid}\n")
        return p

    def nsexec(self, n):
        return ["ip", "netns", "exec", self.ns(n)]

    # ---- processes
    def state_file(self, n):
        return os.path.join(self.work, f"state-{n}", "electd.state")

    def start_node(self, n):
        env = dict(os.environ, ELECTD_STATE_FILE=self.state_file(n))
        out = open(os.path.join(self.work, f"n{n}.log"), "ab")
        self.daemon[n] = self.spawn(self.nsexec(n) + [self.a.electd, "run", "--config",
                                    self.a.config, "--node-id", str(n)], out, env)

    def kill_node(self, n, sig=signal.SIGKILL):
        p = self.daemon.get(n)
        if p is None:
            return
        try:
            p.send_signal(signal.SIGCONT)
            p.send_signal(sig)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
        del self.daemon[n]

    def start_exec(self, n, alg):
        out = open(os.path.join(self.work, f"x{n}-{alg}.log"), "ab")
        argv = self.nsexec(n) + [
            self.a.electd, "exec", "--algorithm", alg, "--url", self.url(n),
            "--poll", self.a.exec_poll, "--timeout", self.a.exec_timeout,
            "--grace", self.a.exec_grace, "--settle", self.a.exec_settle, "--",
            sys.executable, os.path.join(HERE, "writer.py"),
            os.path.join(self.work, "store.sock"),
            os.path.join(self.work, f"writer-{alg}.jsonl"), str(n), str(self.deadline)]
        self.execs[(n, alg)] = self.spawn(argv, out)

    def stop_proc(self, p):
        try:
            p.send_signal(signal.SIGCONT)
            p.terminate()
            p.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                p.kill()
                p.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass

    def status(self, n):
        """Node n's /status groups, asked through `ip netns exec curl` (None: no answer)."""
        try:
            r = subprocess.run(self.nsexec(n) + ["curl", "-s", "-m", "0.5", self.url(n) + "/status"],
                               capture_output=True, text=True, timeout=3)
            return {g["algorithm"]: g for g in json.loads(r.stdout)["groups"]}
        except (subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
            return None

    def leader_of(self, alg):
        """(leader, term) of alg as the first answering live node sees it, or (None, 0)."""
        for n in self.order_rng.sample(self.nodes, len(self.nodes)):
            if n in self.daemon:
                st = self.status(n)
                if st and alg in st and st[alg]["leader"]:
                    return st[alg]["leader"], st[alg]["term"]
        return None, 0

    def admin(self, n, argv, timeout=8):
        try:
            r = subprocess.run(self.nsexec(n) + [self.a.electd] + argv + [
                "--url", self.url(n), "--token-file", self.a.token_file, "--timeout", "5s"],
                capture_output=True, text=True, timeout=timeout)
            return r.returncode, (r.stdout + r.stderr).strip().replace("\n", " | ")[:300]
        except subprocess.TimeoutExpired:
            return None, "timed out"

    def nft(self, n, *args):
        subprocess.run(self.nsexec(n) + ["nft"] + list(args), check=True, capture_output=True)

    def nft_table(self, n, table, rules):
        """A table of its own per fault and node, so overlapping faults heal apart."""
        self.nft(n, "add", "table", "inet", table)
        self.nft(n, "add", "chain", "inet", table, "input",
                 "{ type filter hook input priority 0; }")
        self.nft(n, "add", "chain", "inet", table, "output",
                 "{ type filter hook output priority 0; }")
        for chain, rule in rules:
            self.nft(n, "add", "rule", "inet", table, chain, *rule.split())
        self.nft_tables.add((n, table))

    def nft_drop(self, n, table):
        subprocess.run(self.nsexec(n) + ["nft", "delete", "table", "inet", table],
                       capture_output=True)
        self.nft_tables.discard((n, table))

    # ---- faults: each returns (description, nodes, end action or None)
    def pick_target(self):
        """Half the time the leader of a random group (the interesting case), else any
        live node; never a node another running fault holds (killed, stopped, drained)."""
        free = [n for n in self.nodes if n in self.daemon and n not in self.held.values()]
        want_leader = self.rng.random() < 0.5
        alg = self.rng.choice(ALGORITHMS)
        fallback = free[self.rng.randrange(len(free))]
        if want_leader:
            leader, _ = self.leader_of(alg)
            if leader in free:
                return leader, f"leader of {alg}"
        return fallback, "random"

    def f_kill(self, fid, wipe):
        n, why = self.pick_target()
        self.kill_node(n)
        if wipe:
            for f in os.listdir(os.path.join(self.work, f"state-{n}")):
                os.unlink(os.path.join(self.work, f"state-{n}", f))

        def end():
            self.start_node(n)
        return f"SIGKILL node {n} ({why}){', state file removed' if wipe else ''}", [n], end

    def f_stop(self, fid):
        n, why = self.pick_target()
        p = self.daemon[n]
        p.send_signal(signal.SIGSTOP)

        def end():
            try:
                p.send_signal(signal.SIGCONT)
            except ProcessLookupError:
                pass
        return f"SIGSTOP node {n} ({why})", [n], end

    def f_exec_kill(self, fid):
        alg = self.rng.choice(self.a.exec_algorithms)
        fallback = self.rng.choice(self.nodes)
        leader, _ = self.leader_of(alg)
        n = leader if leader in self.nodes else fallback
        p = self.execs.pop((n, alg))
        p.kill()
        p.wait(timeout=5)

        def end():
            self.start_exec(n, alg)
        return f"SIGKILL the {alg} `electd exec` on node {n}", [n], end, {"alg": alg}

    def admin_async(self, fid, kind, n, argv, what):
        """An admin call (it may wait seconds for a hand-over) off the fault loop."""
        def go():
            rc, out = self.admin(n, argv)
            self.note(id=fid, kind=kind, ev="step", nodes=[n], what=what, rc=rc, out=out)
        th = threading.Thread(target=go, daemon=True)
        th.start()
        self.threads.append(th)

    def f_drain(self, fid):
        n, why = self.pick_target()
        self.admin_async(fid, "drain", n, ["drain"], "drained")
        restart = self.rng.random() < 0.5
        steps = []
        if restart:
            def kill():
                t_start = time.monotonic()
                self.kill_node(n)
                self.note(id=fid, kind="drain", ev="step", nodes=[n], what="killed",
                          t_start=t_start)

            def again():
                t_start = time.monotonic()
                self.start_node(n)
                self.note(id=fid, kind="drain", ev="step", nodes=[n], what="restarted",
                          t_start=t_start)
            steps = [(1.0, kill), (1.5, again)]

        def end():
            self.admin_async(fid, "drain", n, ["undrain"], "undrained")
        desc = f"drain node {n} ({why}){', SIGKILL + restart while drained' if restart else ''}"
        return desc, [n], end, {"restart": restart}, steps

    def f_partition(self, fid):
        k = self.rng.choice([1, 2])
        side = sorted(self.rng.sample(self.nodes, k))
        other = [n for n in self.nodes if n not in side]
        table = f"nem{fid}"
        for a, b in ((side, other), (other, side)):
            srcs = ", ".join(self.ip(x) for x in b)
            for n in a:
                self.nft_table(n, table, [("input", f"ip saddr {{ {srcs} }} udp dport {self.a.udp_port} drop")])

        def end():
            for n in self.nodes:
                self.nft_drop(n, table)
        return f"partition {side} | {other}", side, end, {"sides": [side, other]}

    def f_oneway(self, fid):
        n, why = self.pick_target()
        table = f"nem{fid}"
        self.nft_table(n, table, [("output", f"udp dport {self.a.udp_port} drop")])

        def end():
            self.nft_drop(n, table)
        return f"one-way: node {n}'s datagrams dropped, it still hears ({why})", [n], end

    def f_loss(self, fid):
        table = f"nem{fid}"
        for n in self.nodes:
            self.nft_table(n, table, [("input", f"udp dport {self.a.udp_port} numgen random mod 100 < 30 drop")])

        def end():
            for n in self.nodes:
                self.nft_drop(n, table)
        return "30 % loss on every node's incoming election datagrams", list(self.nodes), end

    def f_transfer(self, fid):
        alg = self.rng.choice(ALGORITHMS)
        pick = self.rng.randrange(len(self.nodes) - 1)
        leader, term = self.leader_of(alg)
        if leader not in self.daemon:
            return f"transfer {alg}: no leader to ask", [], None, {"alg": alg, "skipped": True}
        to = [n for n in self.nodes if n != leader][pick]
        self.admin_async(fid, "transfer", leader,
                         ["transfer", "--algorithm", alg, "--to", str(to)], "answered")
        return (f"transfer {alg} from node {leader} (term {term}) to node {to}",
                [leader, to], None, {"alg": alg, "to": to})

    def f_spoof(self, fid):
        alg = self.rng.choice(ALGORITHMS)
        pick = self.rng.randrange(len(self.nodes) - 1)
        claimant = self.rng.randrange(len(self.nodes) - 2)
        kinds = ["future-heartbeat", "far-term-heartbeat"] + (
            ["coordinator"] if alg in ("bully", "improved-bully") else
            ["timeout-now"] if alg == "raft" else [])
        kind = kinds[self.rng.randrange(4) % len(kinds)]
        leader, term = self.leader_of(alg)
        if leader is None:
            return f"spoof {alg}: no leader", [], None, {"alg": alg, "skipped": True}
        victim = [n for n in self.nodes if n != leader][pick]
        sender = leader
        if kind == "coordinator":  # a member other than the leader and the victim claims
            sender = [n for n in self.nodes if n not in (leader, victim)][claimant]
        argv = ["ip", "netns", "exec", f"{self.a.prefix}-att", sys.executable,
                os.path.join(HERE, "spoof.py"), kind, "--src", self.ip(sender), "--dst",
                self.ip(victim), "--port", str(self.a.udp_port), "--cluster", self.a.cluster,
                "--sender", str(sender), "--receiver", str(victim), "--algorithm", alg,
                "--term", str(term)]
        if self.a.key:
            argv += ["--key", self.a.key]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (f"spoof {kind} {alg} 'from' {'leader ' if sender == leader else 'node '}{sender} "
                f"to node {victim} "
                f"({'insider, signed' if self.a.key else 'insecure'})",
                [victim], None, {"alg": alg, "spoof": kind, "leader": leader, "sender": sender,
                                 "out": (r.stdout + r.stderr).strip()[:200]})

    # ---- the run
    def start(self):
        for n in self.nodes:
            os.makedirs(os.path.join(self.work, f"state-{n}"), exist_ok=True)
        self.others.append(self.spawn([sys.executable, os.path.join(HERE, "store.py"),
                                       os.path.join(self.work, "store.sock"),
                                       os.path.join(self.work, "store.jsonl"),
                                       str(self.deadline)],
                                      open(os.path.join(self.work, "store.log"), "ab")))
        # The disk's own latency beside the state files (diskprobe.py): the checker
        # adds what it saw to a leaderless stretch's bound.
        self.others.append(self.spawn([sys.executable, os.path.join(HERE, "diskprobe.py"),
                                       os.path.join(self.work, "disk-probe.dat"),
                                       os.path.join(self.work, "disk-probe.jsonl"),
                                       str(self.deadline)],
                                      open(os.path.join(self.work, "disk-probe.log"), "ab")))
        horizon = self.a.duration + self.a.warmup + self.a.cooldown + 120
        for n in self.nodes:
            self.others.append(self.spawn(self.nsexec(n) + [
                sys.executable, os.path.join(HERE, "poller.py"), str(n), self.url(n),
                os.path.join(self.work, f"poll-{n}.jsonl"), str(self.a.poll), str(horizon)],
                open(os.path.join(self.work, f"poller-{n}.log"), "ab")))
        for n in self.nodes:
            self.start_node(n)
        for n in self.nodes:
            for alg in self.a.exec_algorithms:
                self.start_exec(n, alg)

    def run(self):
        a = self.a
        self.note(ev="run", seed=a.seed, duration=a.duration, nodes=self.nodes,
                  algorithms=ALGORITHMS, exec_algorithms=a.exec_algorithms,
                  timing=json.loads(a.timing), exec={"poll": a.exec_poll,
                  "timeout": a.exec_timeout, "grace": a.exec_grace, "settle": a.exec_settle},
                  insecure=not a.key, poll=a.poll,
                  # Wall clock minus the monotonic clock of every `t`: the nodes' logs
                  # are stamped in UTC, and the checker maps them onto the run's time.
                  wall_offset=time.time() - time.monotonic())
        self.start()
        self.progress(f"cluster of {len(self.nodes)} started; warm-up {a.warmup}s")
        time.sleep(a.warmup)
        self.note(ev="faults-begin")
        end_at = time.monotonic() + a.duration
        pending = []  # (time, fid, kind, slot, action, final)
        busy = set()
        makers = {
            "kill": ("proc", lambda i: self.f_kill(i, False)),
            "kill-wipe": ("proc", lambda i: self.f_kill(i, True)),
            "stop": ("proc", self.f_stop),
            "exec-kill": ("proc", self.f_exec_kill),
            "drain": ("drain", self.f_drain),
            "partition": ("net", self.f_partition),
            "one-way": ("net", self.f_oneway),
            "loss": ("net", self.f_loss),
            "transfer": (None, self.f_transfer),
            "spoof": (None, self.f_spoof),
        }
        weights = {"kill": 3, "kill-wipe": 1, "stop": 2, "exec-kill": 1, "drain": 2,
                   "partition": 2, "one-way": 1, "loss": 1, "transfer": 2, "spoof": 2}
        next_start = time.monotonic()
        loops = 0
        while loops < 100000:  # bounded: the loop also ends at the deadline below
            loops += 1
            now = time.monotonic()
            for item in sorted(pending, key=lambda x: x[0]):
                t, fid, kind, slot, action, final = item
                if t <= now:
                    pending.remove(item)
                    t_start = time.monotonic()  # effects can show from here on
                    action()
                    if final:
                        busy.discard(slot)
                        self.held.pop(slot, None)
                        self.note(id=fid, kind=kind, ev="end", t_start=t_start)
                        self.progress(f"end   #{fid} {kind}")
            if now >= end_at and not pending:
                break
            if now < end_at and now >= next_start:
                # One process fault, one drain, one network fault at a time (never more
                # than two of five nodes down or drained), instant ones any time.
                free = [k for k, (slot, _) in makers.items() if slot is None or slot not in busy]
                kind = self.rng.choices(free, [weights[k] for k in free])[0]
                slot, make = makers[kind]
                self.next_id += 1
                fid = self.next_id
                t_start = time.monotonic()
                res = make(fid)
                desc, nodes, end = res[:3]
                extra = res[3] if len(res) > 3 else {}
                steps = res[4] if len(res) > 4 else []
                self.note(id=fid, kind=kind, ev="start", nodes=nodes, desc=desc, t_start=t_start,
                          **extra)
                self.counts[kind] = self.counts.get(kind, 0) + 1
                self.progress(f"start #{fid} {kind}: {desc}")
                if end is not None:
                    d = self.rng.uniform(1.0, 4.0) if kind != "drain" else self.rng.uniform(3.0, 6.0)
                    for delay, step in steps:
                        pending.append((time.monotonic() + delay, fid, kind, slot, step, False))
                    pending.append((time.monotonic() + d, fid, kind, slot, end, True))
                    if slot:
                        busy.add(slot)
                        if slot in ("proc", "drain") and nodes:
                            self.held[slot] = nodes[0]
                else:
                    self.note(id=fid, kind=kind, ev="end")
                next_start = time.monotonic() + self.rng.uniform(1.0, 3.0)
            time.sleep(0.05)
        self.note(ev="faults-end")
        self.progress(f"faults over: {json.dumps(self.counts, sort_keys=True)}; cool-down {a.cooldown}s")
        time.sleep(a.cooldown)
        self.note(ev="stop")

    def stop_leftover_writers(self):
        """Writers that outlived their `electd exec` (a SIGKILLed exec may leave its
        command behind): each is a process this run started, found by the PID its
        `start` line logged and stopped only if that PID still runs writer.py."""
        left = []
        for alg in self.a.exec_algorithms:
            try:
                lines = open(os.path.join(self.work, f"writer-{alg}.jsonl")).read().splitlines()
            except OSError:
                continue
            for line in lines:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("ev") != "start":
                    continue
                pid = int(rec["pid"])
                try:
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read()
                except OSError:
                    continue
                if b"writer.py" in cmd:
                    left.append(pid)
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        self.note(ev="leftover-writers", pids=left)
        if left:
            print(f"nemesis: {len(left)} writer(s) outlived every `electd exec`: {left} (killed)",
                  flush=True)

    def stop(self):
        for p in self.execs.values():
            self.stop_proc(p)
        self.execs.clear()
        for n in list(self.daemon):
            self.kill_node(n, signal.SIGTERM)
        for p in self.others:
            self.stop_proc(p)
        for th in self.threads:
            th.join(timeout=15)
        self.stop_leftover_writers()
        for n, table in list(self.nft_tables):
            self.nft_drop(n, table)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", required=True)
    p.add_argument("--electd", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--key", default="", help="cluster key file (empty: insecure cluster)")
    p.add_argument("--cluster", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--net", required=True)
    p.add_argument("--udp-port", type=int, required=True)
    p.add_argument("--http-port", type=int, required=True)
    p.add_argument("--nodes", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--duration", type=float, default=600)
    p.add_argument("--warmup", type=float, default=8)
    p.add_argument("--cooldown", type=float, default=8)
    p.add_argument("--poll", type=float, default=0.1)
    p.add_argument("--timing", required=True, help="JSON of the timing values (ms)")
    p.add_argument("--exec-algorithms", default="raft,bully")
    p.add_argument("--exec-poll", default="50ms")
    p.add_argument("--exec-timeout", default="150ms")
    p.add_argument("--exec-grace", default="150ms")
    p.add_argument("--exec-settle", default="400ms")
    a = p.parse_args()
    a.exec_algorithms = [x for x in a.exec_algorithms.split(",") if x]
    r = Run(a)

    def on_signal(_sig, _frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    try:
        r.run()
    except KeyboardInterrupt:
        print("nemesis: interrupted, stopping everything", flush=True)
        return 130
    finally:
        r.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
