#!/usr/bin/env bash
# System test: `electd exec` never lets two copies of a command run at once beyond
# its documented bound, while leaders are killed, stopped and paused.
#
# Three `electd run` processes on loopback addresses (127.<a>.<b>.1-3, ports picked
# per run), Bully and Raft side by side; on every node two `electd exec` (one per
# algorithm) run scripts/exec_log.py, which appends start/tick/stop lines with a
# CLOCK_MONOTONIC timestamp to one file per algorithm. Six rounds, each on the
# current leader of one algorithm (alternating): SIGKILL of the daemon, SIGSTOP,
# POST /admin/pause; once another node leads and its copy has started, the old
# leader is restarted, SIGCONT'd or resumed (Bully: it takes over again). Then every copy's interval is read from the log: no two
# copies on different nodes may overlap by more than
#   max(0, poll + timeout + grace - failure_timeout) + one tick of the log (20 ms)
# (a copy runs at most poll + timeout + grace after its node last confirmed its
# leadership; the others cannot elect before failure_timeout; see docs/exec.md), and
# at least one handover must have happened. Every process is stopped by PID; the work
# dir is removed (kept on failure or with KEEP=1). Needs root only because the system
# stage runs as root (no namespaces are created); installs curl if missing.
# Env: ELECTD=path to a release binary (else the release build in cargo's target directory, CARGO_TARGET_DIR honoured).
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "!!! system-exec.sh: SKIPPED, NOT RUN: needs root (system stage)."
    echo "!!! Run it as root: sudo scripts/system-exec.sh"
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    exit 0
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOGPY="$ROOT/scripts/exec_log.py"
if ! command -v curl >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl
fi
command -v python3 >/dev/null || { echo "system-exec: python3 is required" >&2; exit 2; }
if [ -z "${ELECTD:-}" ]; then
    . "$ROOT/scripts/lib/target.sh"
    ELECTD="$(target_dir)/release/electd"
    (cd "$ROOT" && cargo build --release --quiet --bin electd)
fi

N=3
NET="127.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1))"
UDP=$((20000 + $$ % 20000))
HTTP=$((UDP + 1))
WORK=$(mktemp -d "${TMPDIR:-/tmp}/electd-exec.XXXXXX")
declare -A PID=() XPID=()
STATUS=1
T0=$SECONDS

HB=20 FT=400 ANSWER=60 COORD=300 EMIN=400 EMAX=700 RETX=20
POLL=20 TIMEOUT=150 GRACE=150 SETTLE=400 TICK=20
BOUND=$(( (POLL + TIMEOUT + GRACE > FT ? POLL + TIMEOUT + GRACE - FT : 0) + TICK ))
export ELECTD_TIMING_HEARTBEAT=${HB}ms ELECTD_TIMING_FAILURE_TIMEOUT=${FT}ms \
    ELECTD_TIMING_ANSWER_TIMEOUT=${ANSWER}ms ELECTD_TIMING_COORDINATOR_TIMEOUT=${COORD}ms \
    ELECTD_TIMING_ELECTION_TIMEOUT=${EMIN}ms..${EMAX}ms ELECTD_TRANSPORT_RETRANSMIT=${RETX}ms \
    ELECTD_ADMIN_TOKEN_FILE="$WORK/admin.token"

log() { printf '\n[%s +%ss] %s\n' "$(date +%T)" "$((SECONDS - T0))" "$*"; }
http_of() { echo "$NET.$1:$HTTP"; }

stop_pid() { # SIGCONT (it may be stopped), SIGTERM, bounded wait, SIGKILL
    local pid=$1 i
    kill -CONT "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local k
    for k in "${!XPID[@]}"; do stop_pid "${XPID[$k]}"; done
    for k in "${!PID[@]}"; do stop_pid "${PID[$k]}"; done
    if [ "$STATUS" -ne 0 ]; then
        for f in "$WORK"/*.out; do
            [ -f "$f" ] || continue
            echo "---- tail of $f"; tail -n 15 "$f"
        done
        echo "system-exec: FAILED"
    fi
    if [ "${KEEP:-0}" = 1 ] || [ "$STATUS" -ne 0 ]; then
        echo "work dir kept: $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/admin.token"
chmod 600 "$WORK/admin.token"
"$ELECTD" config init --nodes $N --base-addr "$NET.1" --udp-port $UDP --http-port $HTTP \
    --cluster exec --algorithms bully,raft --insecure --out "$WORK/electd.toml" >/dev/null

start_node() {
    local id=$1
    ELECTD_STATE_FILE="$WORK/state-$id" "$ELECTD" run --config "$WORK/electd.toml" \
        --node-id "$id" >>"$WORK/n$id.out" 2>&1 &
    PID[$id]=$!
}
start_exec() { # start_exec ID ALGORITHM
    local id=$1 a=$2
    "$ELECTD" exec --algorithm "$a" --url "http://$(http_of "$id")" --poll ${POLL}ms \
        --timeout ${TIMEOUT}ms --grace ${GRACE}ms --settle ${SETTLE}ms \
        -- python3 "$LOGPY" worker "$WORK/$a.log" "n$id" >>"$WORK/x$id-$a.out" 2>&1 &
    XPID[$id-$a]=$!
}
leader_of() { # leader_of ALGORITHM [EXCEPT]: the node answering 200 on /is-leader
    local a=$1 except=${2:-0} i
    for i in $(seq $N); do
        [ "$i" = "$except" ] && continue
        if curl -sf -m 0.5 "http://$(http_of "$i")/is-leader?algorithm=$a" >/dev/null; then
            echo "$i"; return 0
        fi
    done
    return 1
}
wait_leader() { # wait_leader ALGORITHM [EXCEPT]: bounded wait, prints the id
    local i l
    for i in $(seq 100); do
        if l=$(leader_of "$@"); then echo "$l"; return 0; fi
        sleep 0.1
    done
    echo "system-exec: no leader of $1 (other than ${2:-none}) within 10 s" >&2
    exit 1
}
admin() { curl -sf -m 2 -X POST -H "Authorization: Bearer $(cat "$WORK/admin.token")" \
    "http://$(http_of "$1")/admin/$2" >/dev/null; }
running_copies() { # copies started on a log, for progress waits
    grep -c ' start ' "$WORK/$1.log" 2>/dev/null || echo 0
}
wait_copy() { # wait_copy ALGORITHM NODE SKIP: a copy starts on NODE after line SKIP
    local i
    for i in $(seq 100); do
        tail -n +$(($3 + 1)) "$WORK/$1.log" | grep -q " start n$2 " && return 0
        sleep 0.1
    done
    echo "system-exec: no $1 copy started on node $2 within 10 s" >&2
    exit 1
}

log "3 nodes on $NET.1-3 (udp $UDP, http $HTTP), an exec per node and algorithm"
for i in $(seq $N); do start_node "$i"; done
for i in $(seq $N); do start_exec "$i" bully; start_exec "$i" raft; done
for a in bully raft; do
    wait_leader "$a" >/dev/null
    for i in $(seq 50); do [ "$(running_copies $a)" -ge 1 ] && break; sleep 0.1; done
    [ "$(running_copies $a)" -ge 1 ] || { echo "no $a copy started within 5 s" >&2; exit 1; }
done

for round in 1 2 3 4 5 6; do
    a=$([ $((round % 2)) = 1 ] && echo raft || echo bully)
    l=$(wait_leader "$a")
    lines=$(wc -l <"$WORK/$a.log")
    case $((round % 3)) in
    1)
        log "round $round: SIGKILL node $l (leader of $a)"
        kill -9 "${PID[$l]}"; wait "${PID[$l]}" 2>/dev/null || true; unset "PID[$l]"
        n=$(wait_leader "$a" "$l")
        wait_copy "$a" "$n" "$lines"
        log "node $n leads $a; restarting node $l"
        start_node "$l"
        ;;
    2)
        log "round $round: SIGSTOP node $l (leader of $a)"
        kill -STOP "${PID[$l]}"
        n=$(wait_leader "$a" "$l")
        wait_copy "$a" "$n" "$lines"
        log "node $n leads $a; SIGCONT node $l"
        kill -CONT "${PID[$l]}"
        ;;
    0)
        log "round $round: /admin/pause node $l (leader of $a)"
        admin "$l" pause
        n=$(wait_leader "$a" "$l")
        wait_copy "$a" "$n" "$lines"
        log "node $n leads $a; /admin/resume node $l"
        admin "$l" resume
        ;;
    esac
    # Pace: let a preemption by the returning node play out before the next round.
    sleep 1.5
done

log "stopping every exec (their copies get SIGTERM) and node"
for k in "${!XPID[@]}"; do stop_pid "${XPID[$k]}"; unset "XPID[$k]"; done
for a in bully raft; do
    if pgrep -f "exec_log.py worker $WORK/$a.log" >/dev/null; then
        echo "a $a copy outlived its electd exec" >&2; exit 1
    fi
done
for k in "${!PID[@]}"; do stop_pid "${PID[$k]}"; unset "PID[$k]"; done

for a in bully raft; do
    log "$a: copies and overlaps"
    python3 "$LOGPY" check "$WORK/$a.log" "$BOUND"
done
STATUS=0
log "system-exec: OK"
