#!/usr/bin/env python3
"""Two 5-node clusters side by side on 127.0.0.1 (builds A and B, ports 176xx and 178xx),
the leaders' (node 5) CPU over three 10 s windows; then the clusters' places swapped.
Every process is stopped by its PID.

    python3 docs/bench/idle/pair.py BUILD_A BUILD_B ['"bully"']

The third argument is the TOML list of algorithms without its brackets (e.g.
'"bully", "ring"'); every group must elect node 5 (the Bully and ring families do).
Used in docs/bench/ANALYSIS.md, round 22 (round 19 used a shell version of it): one run
of the cost section cannot tell a change of 5-25 %, two clusters side by side can."""
import os, sys, time, subprocess, glob, json, urllib.request, signal
A, B = sys.argv[1], sys.argv[2]
ALG = sys.argv[3] if len(sys.argv) > 3 else '"bully"'
def config(d, base):
    peers = "".join(f'\n[[peer]]\nid = {i}\naddr = "127.0.0.1:{base+i}"\nhttp = "127.0.0.1:{base+100+i}"\n' for i in range(1, 6))
    text = (f'cluster = "pair{base}"\nalgorithms = [{ALG}]\n\n[timing]\nheartbeat = "10ms"\nfailure_timeout = "100ms"\n'
            f'answer_timeout = "10ms"\ncoordinator_timeout = "50ms"\nelection_timeout = "100ms..200ms"\n\n'
            f'[security]\ninsecure = true\n' + peers)
    os.makedirs(d, exist_ok=True)
    open(f"{d}/electd.toml", "w").write(text)
def cpu_ns(pid):
    t = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try: t += int(open(f).read().split()[0])
        except OSError: pass
    return t
def leader(base, i):
    try:
        v = json.load(urllib.request.urlopen(f"http://127.0.0.1:{base+100+i}/status", timeout=1))
        return [g["leader"] for g in v["groups"]]
    except Exception: return None
def run(binA, binB, label):
    procs = {}
    out = {}
    try:
        for (b, base) in ((binA, 17600), (binB, 17800)):
            d = f"/tmp/pair{base}"; config(d, base)
            for i in range(1, 6):
                env = dict(os.environ, ELECTD_LOG="warn", ELECTD_STATE_FILE=f"{d}/{i}.state")
                procs[(base, i)] = subprocess.Popen([b, "run", "--config", f"{d}/electd.toml", "--node-id", str(i)],
                    env=env, stdout=subprocess.DEVNULL, stderr=open(f"{d}/node{i}.log", "w"))
        deadline = time.time() + 20
        while time.time() < deadline:
            if all(leader(base, i) and all(l == 5 for l in leader(base, i)) for base in (17600, 17800) for i in range(1, 6)):
                break
            time.sleep(0.2)
        else:
            sys.exit(f"{label}: no agreement on node 5 within 20 s")
        time.sleep(3)
        for base, name in ((17600, binA), (17800, binB)):
            out[base] = []
        for w in range(3):
            c0 = {base: cpu_ns(procs[(base, 5)].pid) for base in (17600, 17800)}
            t0 = time.monotonic(); time.sleep(10); dt = time.monotonic() - t0
            for base in (17600, 17800):
                out[base].append(100 * (cpu_ns(procs[(base, 5)].pid) - c0[base]) / 1e9 / dt)
        print(f"{label}: {os.path.basename(binA)} (ports 176xx) " + ", ".join(f"{x:.2f}" for x in out[17600]) + " %; "
              f"{os.path.basename(binB)} (ports 178xx) " + ", ".join(f"{x:.2f}" for x in out[17800]) + " %")
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGKILL); p.wait()
run(A, B, "first")
run(B, A, "swapped")
