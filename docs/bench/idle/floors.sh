#!/usr/bin/env bash
# floors.sh: what an idle receiver costs on this machine, below electd. Three copies of
# each receiver get 100 datagrams a second each (75 bytes, like a heartbeat) from one
# sender, in turn, for WINDOW seconds (default 20); prints each copy's share of a core
# and their mean. Three copies, because on a small machine the receiver woken second
# in a burst pays measurably more than the others (see README.md).
#
#   docs/bench/idle/floors.sh        (from the repository root; needs gcc, python3, cargo)
#
# Receivers: `c` (udpfloor.c: epoll_wait and recv, nothing else), `thread` (Rust, one OS
# thread, blocking recv with a deadline), `tokio` (Rust, a tokio task with a deadline
# timer, as electd runs). Only 127.0.31.1-3 are used; every process is stopped by PID.
set -euo pipefail
cd "$(dirname "$0")/../../.."
window=${WINDOW:-20}
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
gcc -O2 -o "$work/udpfloor" docs/bench/idle/udpfloor.c
cargo build --release --quiet --example idle_floor
floor=target/release/examples/idle_floor
cat > "$work/send.py" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
targets = [("127.0.31.%d" % i, 7301) for i in (1, 2, 3)]
t = time.monotonic(); end = t + float(sys.argv[1])
while t < end:
    for a in targets:
        s.sendto(b"x" * 75, a)
    t += 0.01
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)
PY
cpu_ns() { local s=0 t; for t in /proc/"$1"/task/*/schedstat; do s=$((s + $(cut -d' ' -f1 "$t"))); done; echo "$s"; }
for kind in c thread tokio; do
    run=()
    for i in 1 2 3; do
        case $kind in
            c) "$work/udpfloor" 127.0.31.$i 7301 & ;;
            *) "$floor" 127.0.31.$i:7301 "$kind" & ;;
        esac
        run+=($!); pids+=($!)
    done
    python3 "$work/send.py" $((window + 3)) & sender=$!; pids+=($sender)
    # The receivers are up and the sender is running before the window opens.
    sleep 2
    before=(); for p in "${run[@]}"; do before+=("$(cpu_ns "$p")"); done
    sleep "$window"
    line="$kind:"; sum=0
    for i in 0 1 2; do
        d=$(( $(cpu_ns "${run[$i]}") - ${before[$i]} ))
        sum=$((sum + d))
        line="$line $(awk -v d="$d" -v w="$window" 'BEGIN { printf "%.3f %%", d / 1e9 / w * 100 }')"
    done
    echo "$line  mean $(awk -v d="$sum" -v w="$window" 'BEGIN { printf "%.3f %%", d / 3e9 / w * 100 }')"
    for p in "${run[@]}" "$sender"; do kill "$p" 2>/dev/null || true; done
    wait "${run[@]}" "$sender" 2>/dev/null || true
done
