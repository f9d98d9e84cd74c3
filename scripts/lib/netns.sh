# Shared by the system tests that run `electd run` processes in network namespaces
# (system-netns.sh, system-fencing.sh, system-loss.sh, system-keepalived.sh). Source it after setting NAME
# (the script's name in messages); it defines:
#   netns_require_root        skip loudly (exit 0) without root
#   netns_tools               install iproute2, nftables, curl with apt-get if missing
#   netns_electd              ELECTD: the given binary, else a fresh release build
#   log MSG                   a timestamped progress line
#   ns ID                     the namespace of node ID (prefix $P)
#   stop_pid PID              SIGTERM, bounded wait, SIGKILL (a process we started)
#   netns_cleanup             the EXIT trap: processes in PID, namespaces in NSES and
#                             their /etc/netns dirs; log tails and the kept WORK dir
#                             when STATUS is not 0 (or KEEP=1)
#   netns_bridge N NET [OPT…] namespaces $P-sw (bridge br0 with OPT…) and $P-1..N, node
#                             i at NET.i/24 on eth0; appends "i ns ip" lines to $ADDRS
# The caller owns PID (an associative array), NSES, STATUS, WORK, P, ADDRS and T0.

netns_require_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "!!! $NAME.sh: SKIPPED, NOT RUN: needs root (network namespaces, nft)."
        echo "!!! Run it as root: sudo scripts/$NAME.sh"
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        exit 0
    fi
}

netns_tools() {
    local need=()
    command -v ip >/dev/null || need+=(iproute2)
    command -v nft >/dev/null || need+=(nftables)
    command -v curl >/dev/null || need+=(curl)
    if [ "${#need[@]}" -gt 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
    fi
    command -v python3 >/dev/null || { echo "$NAME: python3 is required" >&2; exit 2; }
}

netns_electd() {
    if [ -z "${ELECTD:-}" ]; then
        . "$ROOT/scripts/lib/target.sh"
        ELECTD="$(target_dir)/release/electd"
        # Always build: a no-op when up to date, and never a stale binary after a change.
        (cd "$ROOT" && cargo build --release --quiet --bin electd)
    fi
}

log() { printf '\n[%s +%ss] %s\n' "$(date +%T)" "$((SECONDS - T0))" "$*"; }
ns() { echo "$P-$1"; }

stop_pid() { # stop one process we started (by PID): SIGTERM, bounded wait, SIGKILL
    local pid=$1 i
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

netns_cleanup() {
    local id n f
    for id in "${!PID[@]}"; do stop_pid "${PID[$id]}"; done
    for n in "${NSES[@]}"; do
        ip netns del "$n" 2>/dev/null || true
        rm -rf "/etc/netns/$n"
    done
    if [ "$STATUS" -ne 0 ]; then
        for f in "$WORK"/n*.log; do
            [ -f "$f" ] || continue
            echo "---- tail of $f"; tail -n 15 "$f"
        done
        echo "$NAME: FAILED"
    fi
    if [ "${KEEP:-0}" = 1 ] || [ "$STATUS" -ne 0 ]; then
        echo "work dir kept: $WORK"
    else
        rm -rf "$WORK"
    fi
}

netns_bridge() { # netns_bridge N NET [bridge options...]
    local n_nodes=$1 net=$2 i n
    shift 2
    log "creating $n_nodes namespaces on a private bridge ($net.0/24, inside the namespaces only)"
    ip netns add "$P-sw"; NSES+=("$P-sw")
    ip -n "$P-sw" link add br0 type bridge "$@"
    ip -n "$P-sw" link set br0 up
    for i in $(seq "$n_nodes"); do
        n=$(ns "$i")
        ip netns add "$n"; NSES+=("$n")
        mkdir -p "/etc/netns/$n"
        ip link add eth0 netns "$n" type veth peer name "p$i" netns "$P-sw"
        ip -n "$P-sw" link set "p$i" master br0 up
        ip -n "$n" addr add "$net.$i/24" dev eth0
        ip -n "$n" link set eth0 up
        ip -n "$n" link set lo up
        echo "$i $n $net.$i" >>"$ADDRS"
    done
}
