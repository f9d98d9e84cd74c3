#!/usr/bin/env bash
# System test: no spurious leader changes under loss and link flaps. Five `electd run`
# nodes (bully, ring, raft) in five network namespaces on a private bridge, heartbeat
# 20 ms, failure_timeout 200 ms, Raft election timeout 200..400 ms:
#  1. node 1 down, 30% loss on every node's election port (nft `numgen random`, inbound)
#     for 60 s: no group changes leader (electd_leader_changes_total of every node
#     unchanged, the same leaders before and after);
#  2. the Raft leader's link down/up every 150 ms for 3 s (each outage shorter than
#     failure_timeout and than the minimum election timeout): no group changes leader.
# Namespaces `electd-ls<pid>-*`; everything created (namespaces, processes by PID,
# /etc/netns dirs, the work dir) is removed on exit. About 1.5 minutes.
# Needs root; installs iproute2, nftables, curl with apt-get if missing.
# Env: ELECTD=path to a release binary (else the release build in cargo's target directory, CARGO_TARGET_DIR honoured),
#      LOSS_SECONDS (default 60), KEEP=1 keeps the work dir.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=system-loss
. "$ROOT/scripts/lib/netns.sh"
netns_require_root
POLL="python3 $ROOT/scripts/netns_poll.py"
netns_tools
netns_electd

N=5
P="electd-ls$$"
NET=10.232.0
LOSS_SECONDS=${LOSS_SECONDS:-60}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/electd-loss.XXXXXX")
export ADDRS="$WORK/addrs"
declare -A PID=()
NSES=()
STATUS=1
T0=$SECONDS
export ELECTD_TIMING_HEARTBEAT=20ms ELECTD_TIMING_FAILURE_TIMEOUT=200ms \
    ELECTD_TIMING_ANSWER_TIMEOUT=60ms ELECTD_TIMING_COORDINATOR_TIMEOUT=200ms \
    ELECTD_TIMING_ELECTION_TIMEOUT=200ms..400ms ELECTD_TRANSPORT_RETRANSMIT=20ms \
    ELECTD_TRANSPORT_RTO_MAX=40ms
# Durable state per node in the work directory (raft refuses to run without it).
export ELECTD_STATE_FILE="$WORK/{node}.state"

trap netns_cleanup EXIT
trap 'exit 130' INT TERM

netns_bridge $N "$NET"
hosts=$(seq -s, -f "$NET.%g" 1 $N)
"$ELECTD" config init --nodes $N --hosts "$hosts" --cluster loss \
    --algorithms bully,ring,raft --out "$WORK/electd.toml"

start_node() {
    ip netns exec "$(ns "$1")" "$ELECTD" run --config "$WORK/electd.toml" \
        --node-id "$1" >>"$WORK/n$1.log" 2>&1 &
    PID[$1]=$!
}
wait_leader() { $POLL wait "$@" || { echo "system-loss: no agreement" >&2; exit 1; }; }
nft_ns() { ip netns exec "$(ns "$1")" nft "${@:2}"; }
# Leader changes of one algorithm summed over the live nodes 2..5.
changes() {
    local a=$1 i sum=0 v
    for i in 2 3 4 5; do
        v=$(ip netns exec "$(ns "$i")" curl -s -m 2 "http://$NET.$i:9100/metrics" |
            awk -v a="$a" '$1 ~ "^electd_leader_changes_total" && $1 ~ "algorithm=\"" a "\"" { s += $2 } END { print s + 0 }')
        sum=$((sum + ${v%.*}))
    done
    echo "$sum"
}
snapshot() { local a; for a in bully ring raft; do printf '%s=%s ' "$a" "$(changes "$a")"; done; }

log "starting nodes 2..5 (node 1 stays down)"
for i in 2 3 4 5; do start_node "$i"; done
wait_leader 15 bully 5 2 3 4 5
wait_leader 15 ring 5 2 3 4 5
wait_leader 15 raft same 2 3 4 5
sleep 1   # let every follower settle on its leader's heartbeats
before=$(snapshot)
raft_before=$($POLL views raft 2 3 4 5)
log "1. 30% inbound loss on every node's election port for ${LOSS_SECONDS}s; changes before: $before"
for i in 2 3 4 5; do
    nft_ns "$i" add table inet electd_loss
    nft_ns "$i" add chain inet electd_loss input '{ type filter hook input priority 0; }'
    nft_ns "$i" add rule inet electd_loss input udp dport 7946 numgen random mod 100 '<' 30 counter drop
done
sleep "$LOSS_SECONDS"
for i in 2 3 4 5; do nft_ns "$i" delete table inet electd_loss; done
after=$(snapshot)
raft_after=$($POLL views raft 2 3 4 5)
echo "changes after: $after"
echo "raft before: $raft_before"; echo "raft after:  $raft_after"
[ "$before" = "$after" ] || { echo "system-loss: leader changes under 30% loss: $before -> $after" >&2; exit 1; }
[ "$raft_before" = "$raft_after" ] || { echo "system-loss: the raft leader changed under loss" >&2; exit 1; }

log "2. the Raft leader's link down/up every 150 ms for 3 s"
wait_leader 5 raft same 2 3 4 5
leader=$($POLL views raft 2 | sed -n 's/.*n2=\([0-9]*\).*/\1/p')
[ -n "$leader" ] || { echo "system-loss: cannot read the raft leader" >&2; $POLL views raft 2; exit 1; }
before=$(snapshot)
for k in $(seq 10); do
    ip -n "$(ns "$leader")" link set eth0 down; sleep 0.15
    ip -n "$(ns "$leader")" link set eth0 up; sleep 0.15
done
sleep 1
after=$(snapshot)
echo "raft leader $leader; changes before: $before after: $after"
[ "$before" = "$after" ] || { echo "system-loss: leader changes through link flaps: $before -> $after" >&2; exit 1; }
STATUS=0
log "system-loss: OK"
