#!/usr/bin/env bash
# System test: a 5-node electd cluster in 5 network namespaces on a private bridge.
#
# Topology: namespaces <prefix>-1..5 (one `electd run` each, 10.231.0.<id>/24 on eth0)
# and <prefix>-sw (the bridge br0, multicast snooping off); veth pairs are created
# directly inside those namespaces, so no interface, route or firewall rule of the
# host is touched. The roster names the nodes by DNS name (n<id>.electd.test), served
# by a per-namespace /etc/netns/<ns>/hosts file (what `ip netns exec` mounts over
# /etc/hosts). Config from `electd config init` (with a generated key); fast timings
# through ELECTD_* overrides. Algorithms: bully, ring (highest live id wins) and raft.
#
# Scenarios, each a bounded poll of /status (scripts/netns_poll.py via ip netns exec curl):
#  1. SIGKILL the leader: the survivors agree on node 4 (bully, ring) and on one raft
#     leader within a bound derived from the timings; restart it, it takes over.
#  2. Cut the leader's link (ip link set eth0 down): the other 4 agree on 4; restore:
#     node 5 rejoins and leads again.
#  3. One-way partition (node 5's datagrams dropped by nft, it still hears the others),
#     then heal: converged. 30% loss (nft `numgen random mod 100 < 30 drop` on every
#     node's election port): kill the leader, survivors converge under loss.
#  4. Multicast off, then on (restart with ELECTD_TRANSPORT_MULTICAST): datagrams sent by
#     the leader grow slower than its coordinator+heartbeat messages only with multicast;
#     a SIGKILL failover with multicast on. Scenarios 5 and 6 also run with multicast.
#  5. Split 3+2: raft keeps a leader on the majority side only, bully elects one on each
#     side (both views printed); heal: one leader again.
#  6. DNS: node 5 comes back with a new IP (a recreated pod): the others re-resolve its
#     name and reach it again.
# Everything created (namespaces with their veths, bridge and nft tables, processes by
# PID, /etc/netns/<ns> dirs, the work dir) is removed on exit, failure included.
# Needs root; installs iproute2, nftables, curl with apt-get if missing.
# Env: ELECTD=path to a release binary (else the release build in cargo's target directory, CARGO_TARGET_DIR honoured),
#      KEEP=1 keeps the work dir.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=system-netns
. "$ROOT/scripts/lib/netns.sh"
netns_require_root
POLL="python3 $ROOT/scripts/netns_poll.py"
netns_tools
netns_electd

N=5
P="electd-nt$$"                 # namespace prefix (unique per run)
NET=10.231.0
GROUP=239.255.70.1:5740
WORK=$(mktemp -d "${TMPDIR:-/tmp}/electd-netns.XXXXXX")
export ADDRS="$WORK/addrs"
declare -A PID=()
NSES=()
STATUS=1
T0=$SECONDS

# Timings (ms), also the bounds' inputs.
HB=20 FT=200 ANSWER=60 COORD=200 EMIN=200 EMAX=400 RETX=20 ATTEMPTS=3
# Link give-up time: retransmit * (1 + 2 + 4 + 8 + 8 + ...) over ATTEMPTS sends.
GIVE_UP=0
for a in $(seq "$ATTEMPTS"); do m=$((a - 1 < 3 ? a - 1 : 3)); GIVE_UP=$((GIVE_UP + RETX * (1 << m))); done
# Failover: detect (FT), give up on the dead (GIVE_UP), the Bully wait T' or one Raft
# timeout, doubled for a second round; plus 1 s of polling slack.
BOUND_MS=$(( 2 * (FT + GIVE_UP + COORD + EMAX) + 1000 ))
BOUND=$(python3 -c "print($BOUND_MS/1000)")
LOSS_BOUND=$(python3 -c "print(3*$BOUND_MS/1000)")
export ELECTD_TIMING_HEARTBEAT=${HB}ms ELECTD_TIMING_FAILURE_TIMEOUT=${FT}ms \
    ELECTD_TIMING_ANSWER_TIMEOUT=${ANSWER}ms ELECTD_TIMING_COORDINATOR_TIMEOUT=${COORD}ms \
    ELECTD_TIMING_ELECTION_TIMEOUT=${EMIN}ms..${EMAX}ms ELECTD_TRANSPORT_RETRANSMIT=${RETX}ms \
    ELECTD_TRANSPORT_MAX_ATTEMPTS=$ATTEMPTS ELECTD_TRANSPORT_RESOLVE_EVERY=2s \
    ELECTD_STATE_FILE="$WORK/{node}.state"

ip_of() { awk -v id="$1" '$1 == id { print $3 }' "$ADDRS"; }

trap netns_cleanup EXIT
trap 'exit 130' INT TERM

# ---- topology
netns_bridge $N "$NET" mcast_snooping 0

write_hosts() { # every namespace resolves every node name to its current address
    local i n
    for i in $(seq $N); do
        n=$(ns "$i")
        { echo "127.0.0.1 localhost"
          awk '{ printf "%s n%s.electd.test\n", $3, $1 }' "$ADDRS"; } >"/etc/netns/$n/hosts"
    done
}
write_hosts

# ---- configuration (electd config init, with a generated key)
hosts=$(seq -s, -f 'n%g.electd.test' 1 $N)
"$ELECTD" config init --nodes $N --hosts "$hosts" --cluster netns \
    --algorithms bully,ring,raft --out "$WORK/electd.toml"
[ -f "$WORK/electd.key" ] || { echo "config init did not write the key" >&2; exit 1; }

start_node() { # start_node ID [extra env...]
    local id=$1; shift
    ip netns exec "$(ns "$id")" env "$@" "$ELECTD" run --config "$WORK/electd.toml" \
        --node-id "$id" >>"$WORK/n$id.log" 2>&1 &
    PID[$id]=$!
}
kill9() { kill -9 "${PID[$1]}" 2>/dev/null || true; wait "${PID[$1]}" 2>/dev/null || true; unset "PID[$1]"; }
stop_all() { local id; for id in "${!PID[@]}"; do stop_pid "${PID[$id]}"; unset "PID[$id]"; done; }

wait_leader() { # wait_leader SECONDS ALGORITHM EXPECT NODE...
    $POLL wait "$@" || { echo "system-netns: scenario failed" >&2; exit 1; }
}
views() { local a; for a in bully ring raft; do $POLL views "$a" "$@"; done; }
agreed_all() { # every node: bully and ring on $1, raft on one leader
    wait_leader "$2" bully "$1" $(seq $N)
    wait_leader "$2" ring "$1" $(seq $N)
    wait_leader "$2" raft same $(seq $N)
}

nft_ns() { ip netns exec "$(ns "$1")" nft "${@:2}"; }
nft_setup() { # one table per node namespace; chains flushed to heal
    local i
    for i in $(seq $N); do
        nft_ns "$i" add table inet electd_test
        nft_ns "$i" add chain inet electd_test input '{ type filter hook input priority 0; }'
        nft_ns "$i" add chain inet electd_test output '{ type filter hook output priority 0; }'
    done
}
heal() { local i; for i in $(seq $N); do nft_ns "$i" flush table inet electd_test; done; }

log "starting $N nodes (unicast); failover bound ${BOUND}s (give-up ${GIVE_UP}ms)"
for i in $(seq $N); do start_node "$i"; done
agreed_all 5 15
nft_setup

# ---- 1. SIGKILL the leader
log "1. SIGKILL the leader (node 5)"
kill9 5
wait_leader "$BOUND" bully 4 1 2 3 4
wait_leader "$BOUND" ring 4 1 2 3 4
wait_leader "$BOUND" raft same:1,2,3,4 1 2 3 4
start_node 5
agreed_all 5 "$BOUND"

# ---- 2. cut the leader's link
log "2. cut node 5's link (ip link set eth0 down)"
ip -n "$(ns 5)" link set eth0 down
wait_leader "$BOUND" bully 4 1 2 3 4
wait_leader "$BOUND" raft same:1,2,3,4 1 2 3 4
views 1 2 3 4 5
log "2. restore node 5's link"
ip -n "$(ns 5)" link set eth0 up
agreed_all 5 "$BOUND"

# ---- 3. one-way partition, then 30% loss
log "3a. one-way: node 5's datagrams are dropped, it still hears the others"
nft_ns 5 add rule inet electd_test output ip daddr "$NET.0/24" udp dport 5740 drop
wait_leader "$BOUND" bully 4 1 2 3 4
views 1 2 3 4 5
heal
log "3a. healed"
agreed_all 5 "$BOUND"
log "3b. 30% loss on every node's election traffic; SIGKILL the leader under loss"
for i in $(seq $N); do
    nft_ns "$i" add rule inet electd_test input udp dport 5740 numgen random mod 100 '<' 30 counter drop
done
kill9 5
wait_leader "$LOSS_BOUND" bully 4 1 2 3 4
wait_leader "$LOSS_BOUND" raft same:1,2,3,4 1 2 3 4
dropped=$(nft_ns 1 list chain inet electd_test input | { grep -o 'packets [0-9]*' || true; } | awk '{s+=$2} END {print s+0}')
echo "nft dropped $dropped datagrams at node 1 alone"
[ "$dropped" -gt 0 ] || { echo "the loss rule dropped nothing" >&2; exit 1; }
start_node 5
agreed_all 5 "$LOSS_BOUND"
heal

# ---- 4. multicast off, then on
sample() { # datagrams and coordinator+heartbeat messages sent by node $1 over 3 s
    local a b
    a=$($POLL metrics "$1"); sleep 3; b=$($POLL metrics "$1")
    echo "$a $b" | awk '{ print $4 - $1, $5 - $2 }'
}
log "4. node 5 (bully and ring leader): datagrams vs coordinator+heartbeat messages, unicast"
read -r dg_u msg_u < <(sample 5)
echo "unicast:   +$dg_u datagrams, +$msg_u coordinator/heartbeat messages in 3 s"
# Node 5 leads two groups (bully, ring): each turn's heartbeats to one peer go as one
# BEATS datagram (docs/wire.md §12), so the datagrams grow slower than the messages.
[ "$msg_u" -gt 0 ] && [ "$dg_u" -lt "$msg_u" ] \
    || { echo "unicast: a leader of two groups must pack each peer's heartbeats in one BEATS datagram" >&2; exit 1; }
log "4. restart every node with transport.multicast = $GROUP"
stop_all
for i in $(seq $N); do start_node "$i" ELECTD_TRANSPORT_MULTICAST=$GROUP; done
agreed_all 5 15
grep -q "broadcasts go by multicast" "$WORK/n1.log" || { echo "multicast not enabled" >&2; exit 1; }
read -r dg_m msg_m < <(sample 5)
echo "multicast: +$dg_m datagrams, +$msg_m coordinator/heartbeat messages in 3 s"
[ "$msg_m" -gt 0 ] && [ "$dg_m" -lt "$msg_m" ] \
    || { echo "with multicast, datagrams must grow slower than messages" >&2; exit 1; }
python3 -c "print(f'datagrams per coordinator/heartbeat message: unicast {$dg_u/$msg_u:.2f}, multicast {$dg_m/$msg_m:.2f}')"
# One group datagram per heartbeat reaches every peer; BEATS still sends one per peer.
[ $((dg_m * msg_u)) -lt $((dg_u * msg_m)) ] \
    || { echo "multicast must send fewer datagrams per message than unicast BEATS" >&2; exit 1; }
# Group datagrams pass the security gate: none is refused (the sender's own looped-back
# copies are not counted as invalid either).
invalid=$($POLL invalid 1 2 3 4 5)
echo "invalid datagrams on all nodes with multicast: $invalid"
[ "$invalid" = 0 ] || { echo "multicast datagrams were refused by the gate" >&2; exit 1; }
log "4. SIGKILL the leader with multicast on (COORDINATOR by multicast, acked by unicast)"
kill9 5
wait_leader "$BOUND" bully 4 1 2 3 4
wait_leader "$BOUND" ring 4 1 2 3 4
wait_leader "$BOUND" raft same:1,2,3,4 1 2 3 4
start_node 5 ELECTD_TRANSPORT_MULTICAST=$GROUP
agreed_all 5 "$BOUND"
log "4. 30% loss with multicast on: SIGKILL the leader, converge (lost group datagrams are retransmitted by unicast)"
for i in $(seq $N); do
    nft_ns "$i" add rule inet electd_test input udp dport 5740 numgen random mod 100 '<' 30 counter drop
done
kill9 5
wait_leader "$LOSS_BOUND" bully 4 1 2 3 4
wait_leader "$LOSS_BOUND" raft same:1,2,3,4 1 2 3 4
start_node 5 ELECTD_TRANSPORT_MULTICAST=$GROUP
agreed_all 5 "$LOSS_BOUND"
retx=$(ip netns exec "$(ns 5)" curl -s "http://$(ip_of 5):5741/metrics" | awk '/^electd_retransmissions_total/ { s += $2 } END { print s + 0 }')
echo "node 5 retransmissions under loss with multicast: $retx"
heal

# ---- 5. split 3 + 2 (still multicast)
log "5. split {1,2,3} | {4,5}"
for i in 1 2 3; do nft_ns "$i" add rule inet electd_test input ip saddr "{ $NET.4, $NET.5 }" drop; done
for i in 4 5; do nft_ns "$i" add rule inet electd_test input ip saddr "{ $NET.1, $NET.2, $NET.3 }" drop; done
wait_leader "$BOUND" bully 3 1 2 3
wait_leader "$BOUND" bully 5 4 5
wait_leader "$BOUND" raft same:1,2,3 1 2 3
wait_leader "$LOSS_BOUND" raft none 4 5
# It must stay so: the minority never elects a Raft leader (no majority of 5), however
# many election timeouts pass (here 3 of the longest plus the failure timeout).
sleep "$(python3 -c "print((3 * $EMAX + $FT) / 1000)")"
wait_leader 0 raft none 4 5
wait_leader 0 raft same:1,2,3 1 2 3
echo "majority side:"; $POLL views bully 1 2 3; $POLL views raft 1 2 3
echo "minority side:"; $POLL views bully 4 5; $POLL views raft 4 5
log "5. heal"
heal
agreed_all 5 "$BOUND"

# ---- 6. node 5 comes back with a new address (DNS re-resolution)
log "6. node 5 restarts with a new IP ($NET.105); the others must find it by name"
kill9 5
ip -n "$(ns 5)" addr del "$NET.5/24" dev eth0
ip -n "$(ns 5)" addr add "$NET.105/24" dev eth0
sed -i "s/^5 \(.*\) $NET.5\$/5 \1 $NET.105/" "$ADDRS"
write_hosts
wait_leader "$BOUND" bully 4 1 2 3 4
start_node 5 ELECTD_TRANSPORT_MULTICAST=$GROUP
agreed_all 5 "$LOSS_BOUND"
found=0
for s in $(seq 50); do
    found=0
    for i in 1 2 3 4; do
        grep -q "peer address changed.*peer=5.*new=$NET.105:5740" "$WORK/n$i.log" && found=$((found + 1))
    done
    [ "$found" -eq 4 ] && break
    sleep 0.2
done
echo "nodes that re-resolved node 5's new address: $found of 4"
[ "$found" -eq 4 ] || { echo "not every node found node 5's new address" >&2; exit 1; }
wait_leader "$BOUND" raft same $(seq $N)

STATUS=0
log "system-netns: all scenarios passed in $((SECONDS - T0)) s"
