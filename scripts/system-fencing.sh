#!/usr/bin/env bash
# System test: the fencing token over real processes, every algorithm.
#
# Five `electd run` processes in five network namespaces (<prefix>-1..5, 10.232.0.<id>)
# on a private bridge (<prefix>-sw), all six algorithms side by side, each node with its
# own state file. After every step every node must report, for every algorithm, the
# same token (term and leader; the highest live id for the Bully and ring families),
# and that token must not be below any token seen before (term first, then leader id;
# equal only when the same leadership simply goes on) — checked by
# scripts/fencing_tokens.py, which polls /status with a deadline:
#  1. cold start: every node on node 5;
#  2. SIGKILL the leader: nodes 1-4 on node 4;
#  3. node 5 comes back with an EMPTY state directory (its tokens lost): it leads again
#     with a token above node 4's (the others' answers teach it the current term);
#  4. node 5 is killed and restarted at once with an empty state directory, before the
#     others noticed: still a token above its previous one;
#  5. a 3+2 partition (nft drops everything between {1,2,3} and {4,5}): side {1,2,3}
#     settles on node 3 above every token so far, side {4,5}'s tokens are recorded;
#     heal: one leader again, above both sides.
# Everything created (namespaces, bridge, nft tables, processes by PID, the work dir)
# is removed on exit, failure included. Needs root; installs iproute2, nftables, curl
# with apt-get if missing. Env: ELECTD=path to a release binary (else
# the release build in cargo's target directory), KEEP=1 keeps the work dir.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=system-fencing
. "$ROOT/scripts/lib/netns.sh"
netns_require_root
TOK="python3 $ROOT/scripts/fencing_tokens.py"
netns_tools
netns_electd

N=5
P="fencing-fc$$"                # namespace prefix (unique per run)
NET=10.232.0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/electd-fencing.XXXXXX")
export ADDRS="$WORK/addrs" TOKENS="$WORK/tokens.json"
declare -A PID=()
NSES=()
STATUS=1
T0=$SECONDS

# Fast timings (ms); the settle bound covers the slowest algorithm (HS restarts an
# unfinished round after its bound, Raft needs randomized timeouts) with room to spare
# on a loaded machine.
HB=20 FT=200 ANSWER=60 COORD=200 EMIN=200 EMAX=400 RETX=20 ATTEMPTS=3
BOUND=20
export ELECTD_TIMING_HEARTBEAT=${HB}ms ELECTD_TIMING_FAILURE_TIMEOUT=${FT}ms \
    ELECTD_TIMING_ANSWER_TIMEOUT=${ANSWER}ms ELECTD_TIMING_COORDINATOR_TIMEOUT=${COORD}ms \
    ELECTD_TIMING_ELECTION_TIMEOUT=${EMIN}ms..${EMAX}ms ELECTD_TRANSPORT_RETRANSMIT=${RETX}ms \
    ELECTD_TRANSPORT_MAX_ATTEMPTS=$ATTEMPTS

trap netns_cleanup EXIT
trap 'exit 130' INT TERM

netns_bridge $N "$NET"
peers=()
for i in $(seq $N); do
    peers+=("$NET.$i")
    mkdir -p "$WORK/state-$i"
done

"$ELECTD" config init --nodes $N --hosts "$(IFS=,; echo "${peers[*]}")" --cluster fencing \
    --algorithms bully,improved-bully,ring,lcr,hs,raft --out "$WORK/electd.toml"
grep -q '^\[state\]' "$WORK/electd.toml" || { echo "config init wrote no [state]" >&2; exit 1; }
HTTP_PORT=$(sed -n 's/^http = ".*:\([0-9]*\)".*/\1/p' "$WORK/electd.toml" | head -n 1)
[ -n "$HTTP_PORT" ] || { echo "no http port in the config" >&2; exit 1; }
export HTTP_PORT

start_node() { # start_node ID: its own state directory
    local id=$1
    ip netns exec "$(ns "$id")" env ELECTD_STATE_FILE="$WORK/state-$id/electd.state" \
        "$ELECTD" run --config "$WORK/electd.toml" --node-id "$id" >>"$WORK/n$id.log" 2>&1 &
    PID[$id]=$!
}
kill9() { kill -9 "${PID[$1]}" 2>/dev/null || true; wait "${PID[$1]}" 2>/dev/null || true; unset "PID[$1]"; }
settle() { $TOK settle "$BOUND" "$@" || exit 1; }

nft_ns() { ip netns exec "$(ns "$1")" nft "${@:2}"; }

log "1. cold start"
for i in $(seq $N); do start_node "$i"; done
settle "cold start" 5 1 2 3 4 5
[ -s "$WORK/state-5/electd.state" ] || { echo "node 5 wrote no state file" >&2; exit 1; }

log "2. SIGKILL the leader (node 5)"
kill9 5
settle "leader killed" 4 1 2 3 4

log "3. node 5 back with an empty state directory"
rm -f "$WORK/state-5/"*
start_node 5
settle "leader back, empty state" 5 1 2 3 4 5

log "4. node 5 killed and restarted at once with an empty state directory"
kill9 5
rm -f "$WORK/state-5/"*
start_node 5
settle "leader restarted at once, empty state" 5 1 2 3 4 5

log "5. partition {1,2,3} | {4,5}"
for i in $(seq $N); do
    nft_ns "$i" add table inet fencing_test
    nft_ns "$i" add chain inet fencing_test input '{ type filter hook input priority 0; }'
done
for i in 1 2 3; do
    for j in 4 5; do
        nft_ns "$i" add rule inet fencing_test input ip saddr "$NET.$j" drop
        nft_ns "$j" add rule inet fencing_test input ip saddr "$NET.$i" drop
    done
done
# Side {1,2,3} settles on node 3 (Raft: its majority elects), above every token so
# far; side {4,5} keeps node 5 for the Bully and ring families (Raft: no majority).
settle "partition, side 1-3" 3 1 2 3
$TOK record 4 5
log "5. heal"
for i in $(seq $N); do nft_ns "$i" delete table inet fencing_test; done
settle "partition healed" 5 1 2 3 4 5

STATUS=0
log "system-fencing: OK"
