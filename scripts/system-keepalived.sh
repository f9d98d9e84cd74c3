#!/usr/bin/env bash
# System test: the virtual-IP example of docs/keepalived.md, in network namespaces.
#
# Three `electd run` processes in three namespaces (<prefix>-1..3, 10.233.<x>.<id>/24 on
# a private bridge), Bully, with the guide's hook as shipped (deploy/hooks/electd-vip:
# `ip addr replace/del` of the virtual IP .100 on the leader's eth0, by ELECTD_STATE,
# gratuitous ARPs in the background). Checked, each with a deadline:
#  1. the VIP is on exactly the leader's namespace (node 3), and answers ping from node 1;
#  2. the leader's machine dies (SIGKILL of electd and its link down): the VIP appears
#     on the new leader (node 2), on no other live namespace, and answers there (the
#     dead namespace keeps the address, unreachable, as a crashed machine would);
#  3. node 3 restarted: its hook runs again (Bully: it leads again), node 2's hook
#     removes the VIP there: exactly one live namespace holds it;
#  4. SIGTERM of every node: each `stopped` run removes it; no namespace holds it;
#  4b. the same VIP held by the daemons themselves (`[[vip]]`, no hook): an address
#     left on node 1 by hand (as a killed daemon leaves it) is deleted at start, the
#     VIP is on the leader only and answers; after node 3's SIGKILL it is on node 2,
#     and node 1's neighbour entry for it names node 2's MAC without a new ping (the
#     gratuitous ARP arrived); node 3 back takes it; SIGTERM deletes it everywhere; a
#     start without CAP_NET_ADMIN or CAP_NET_RAW is refused, naming the capability;
#  5. a short run of `electd bench --quick --only keepalived` (keepalived beside electd,
#     3 rounds per fault): it must run (not skip) and write its table and plot;
#  6. that bench again, sent SIGTERM during its first rounds: it must end by itself,
#     its daemons stopped and its namespaces deleted.
# Everything created (namespaces, processes by PID, the work dir) is removed on exit.
# Needs root; installs iproute2, nftables, curl, iputils-ping, iputils-arping and
# keepalived if missing.
# Env: ELECTD=path to a release binary (else the release build in cargo's target directory, CARGO_TARGET_DIR honoured).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=system-keepalived
. "$ROOT/scripts/lib/netns.sh"
netns_require_root
netns_tools
need=()
command -v ping >/dev/null || need+=(iputils-ping)
command -v arping >/dev/null || need+=(iputils-arping)
command -v keepalived >/dev/null || need+=(keepalived)
if [ "${#need[@]}" -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
netns_electd

N=3
P="kad-s$$"
NET="10.233.$(($$ % 250 + 1))"
VIP="$NET.100"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/electd-keepalived.XXXXXX")
export ADDRS="$WORK/addrs"
declare -A PID=()
NSES=()
STATUS=1
T0=$SECONDS
export ELECTD_TIMING_HEARTBEAT=20ms ELECTD_TIMING_FAILURE_TIMEOUT=200ms \
    ELECTD_TIMING_ANSWER_TIMEOUT=60ms ELECTD_TIMING_COORDINATOR_TIMEOUT=200ms \
    ELECTD_TRANSPORT_RETRANSMIT=20ms
trap netns_cleanup EXIT
trap 'exit 130' INT TERM

netns_bridge $N "$NET"
hosts=()
for i in $(seq $N); do hosts+=("$NET.$i"); done

# The guide's hook as shipped (docs/keepalived.md), with this run's address; each node
# keeps its arping's pid file in a directory of its own.
cp "$ROOT/deploy/hooks/electd-vip" "$WORK/vip-hook"
chmod +x "$WORK/vip-hook"
export VIP_ADDRESS="$VIP/24" VIP_DEV=eth0
"$ELECTD" config init --nodes $N --hosts "$(IFS=,; echo "${hosts[*]}")" --cluster vip \
    --algorithms bully --insecure --out "$WORK/electd.toml" >/dev/null
export ELECTD_HOOKS_ON_LEADER_CHANGE="$WORK/vip-hook"

start_node() {
    mkdir -p "$WORK/run-$1"
    ip netns exec "$(ns "$1")" env ELECTD_STATE_FILE="$WORK/state-$1" VIP_RUN_DIR="$WORK/run-$1" \
        "$ELECTD" run --config "$WORK/electd.toml" --node-id "$1" >>"$WORK/n$1.log" 2>&1 &
    PID[$1]=$!
}
holders() { # the live namespaces (given ids) holding the VIP
    local i
    for i in "$@"; do
        ip -n "$(ns "$i")" -4 addr show dev eth0 | grep -q " $VIP/" && printf '%s ' "$i"
    done
    true
}
expect_holders() { # expect_holders WHAT WANT IDS...: bounded wait until exactly WANT
    local what=$1 want=$2 i got=""
    shift 2
    for i in $(seq 100); do
        got=$(holders "$@")
        [ "$got" = "$want" ] && { log "$what: VIP on [${got% }]"; return 0; }
        sleep 0.1
    done
    echo "system-keepalived: $what: VIP on [${got% }], expected [${want% }]" >&2
    exit 1
}

log "0. the hook alone (namespace 1): a leader run returns before its gratuitous ARPs end"
hook() { # hook STATE: one run as electd makes it, in namespace 1
    ip netns exec "$(ns 1)" env ELECTD_ALGORITHM=bully ELECTD_STATE="$1" VIP_RUN_DIR="$WORK/run-0" \
        VIP_GARPS=5 /bin/sh -c "$WORK/vip-hook"
}
is_arping() { # is_arping PID: a live (not zombie) arping
    local comm
    read -r comm <"/proc/$1/comm" 2>/dev/null && [ "$comm" = arping ] \
        && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}
mkdir -p "$WORK/run-0"
# A veth's carrier comes up a moment after `link set up`: arping refuses a link without
# it and exits at once (a CI run failed here once: "no arping announcing the VIP").
for i in $(seq 100); do
    ip -n "$(ns 1)" link show dev eth0 | grep -q LOWER_UP && break
    sleep 0.05
done
t=$(date +%s%N); hook leader; t=$(( ($(date +%s%N) - t) / 1000000 ))
# 5 ARPs 1 s apart take 4 s in the foreground: the run must return long before.
[ "$t" -lt 1000 ] || { echo "system-keepalived: the leader run took $t ms (arping in the foreground?)" >&2; exit 1; }
expect_holders "hook leader run ($t ms)" "1 " 1
read -r apid <"$WORK/run-0/electd-vip-bully.arping"
is_arping "$apid" || {
    echo "system-keepalived: no arping announcing the VIP; eth0 in namespace 1 and arping's own word:" >&2
    ip -n "$(ns 1)" link show dev eth0 >&2
    ip netns exec "$(ns 1)" arping -U -c 1 -I eth0 "$VIP" >&2
    exit 1
}
hook follower
expect_holders "hook follower run" "" 1
for i in $(seq 50); do is_arping "$apid" || break; sleep 0.01; done
! is_arping "$apid" || { echo "system-keepalived: the arping outlived the let-go" >&2; exit 1; }

log "1. start: the VIP on the leader (node 3) only"
for i in $(seq $N); do start_node "$i"; done
expect_holders "cold start" "3 " 1 2 3
ip netns exec "$(ns 1)" ping -c 1 -W 2 "$VIP" >/dev/null || { echo "VIP does not answer" >&2; exit 1; }

log "2. node 3's machine dies (SIGKILL, its link down): the VIP moves to node 2"
kill -9 "${PID[3]}"; wait "${PID[3]}" 2>/dev/null || true; unset "PID[3]"
ip -n "$(ns 3)" link set eth0 down
expect_holders "leader killed" "2 " 1 2
ip -n "$(ns 1)" neigh flush dev eth0
ip netns exec "$(ns 1)" ping -c 1 -W 2 -I eth0 "$VIP" >/dev/null || { echo "moved VIP does not answer" >&2; exit 1; }

log "3. node 3 back (Bully: it leads again); exactly one holder"
ip -n "$(ns 3)" link set eth0 up
start_node 3
expect_holders "node 3 back" "3 " 1 2 3

log "4. SIGTERM every node: the stopped runs remove it"
for i in 1 2 3; do stop_pid "${PID[$i]}"; unset "PID[$i]"; done
expect_holders "all stopped" "" 1 2 3

log "4b. the VIP held by the daemons themselves ([[vip]], no hook)"
cp "$WORK/electd.toml" "$WORK/electd-vip.toml"
printf '\n[[vip]]\naddress = "%s/24"\ninterface = "eth0"\ngarp_interval = "100ms"\n' "$VIP" \
    >>"$WORK/electd-vip.toml"
start_vip_node() {
    ip netns exec "$(ns "$1")" env -u ELECTD_HOOKS_ON_LEADER_CHANGE \
        ELECTD_STATE_FILE="$WORK/state-$1" ELECTD_LOG=info \
        "$ELECTD" run --config "$WORK/electd-vip.toml" --node-id "$1" >>"$WORK/v$1.log" 2>&1 &
    PID[$1]=$!
}
ip -n "$(ns 1)" addr add "$VIP/24" dev eth0
# Node 2's leftover has another prefix (keepalived's /32): a delete of the /24 alone
# left it there.
ip -n "$(ns 2)" addr add "$VIP/32" dev eth0
for i in $(seq $N); do start_vip_node "$i"; done
expect_holders "[[vip]] cold start (nodes 1's and 2's stale addresses deleted)" "3 " 1 2 3
for i in 1 2; do
    grep -q "deleted an address left behind" "$WORK/v$i.log" \
        || { echo "system-keepalived: node $i did not report deleting the stale address" >&2; exit 1; }
done
# Deleted by hand on the holder: put back within the check period (1 s) and announced.
ip -n "$(ns 3)" addr del "$VIP/24" dev eth0
expect_holders "[[vip]] deleted by hand on node 3: put back" "3 " 1 2 3
grep -q "the address was gone from the interface" "$WORK/v3.log" \
    || { echo "system-keepalived: node 3 did not report putting the address back" >&2; exit 1; }
ip -n "$(ns 1)" neigh flush dev eth0
ip netns exec "$(ns 1)" ping -c 1 -W 2 "$VIP" >/dev/null || { echo "[[vip]] VIP does not answer" >&2; exit 1; }
mac_of() { ip -n "$(ns "$1")" link show eth0 | awk '/link\/ether/ {print $2}'; }
neigh_mac() { ip -n "$(ns 1)" neigh show "$VIP" dev eth0 | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}'; }
[ "$(neigh_mac)" = "$(mac_of 3)" ] || { echo "system-keepalived: node 1 resolved the VIP to $(neigh_mac), not node 3's $(mac_of 3)" >&2; exit 1; }
kill -9 "${PID[3]}"; wait "${PID[3]}" 2>/dev/null || true; unset "PID[3]"
ip -n "$(ns 3)" link set eth0 down
expect_holders "[[vip]] leader killed" "2 " 1 2
# No ping since: only node 2's gratuitous ARP can have moved node 1's entry.
for i in $(seq 100); do [ "$(neigh_mac)" = "$(mac_of 2)" ] && break; sleep 0.05; done
[ "$(neigh_mac)" = "$(mac_of 2)" ] \
    || { echo "system-keepalived: node 1's entry for the VIP is $(neigh_mac), not node 2's $(mac_of 2): no gratuitous ARP" >&2; exit 1; }
log "[[vip]] node 1's neighbour entry moved to node 2's MAC by its gratuitous ARP"
ip netns exec "$(ns 1)" ping -c 1 -W 2 -I eth0 "$VIP" >/dev/null || { echo "[[vip]] moved VIP does not answer" >&2; exit 1; }
ip -n "$(ns 3)" link set eth0 up
start_vip_node 3
expect_holders "[[vip]] node 3 back (its stale address deleted, then taken again)" "3 " 1 2 3
for i in 1 2 3; do stop_pid "${PID[$i]}"; unset "PID[$i]"; done
expect_holders "[[vip]] all stopped" "" 1 2 3
# Root without CAP_NET_ADMIN (dropped from the bounding and inheritable sets), then
# without CAP_NET_RAW: each refused at start, naming the capability.
for cap in net_admin net_raw; do
    rc=0
    ip netns exec "$(ns 1)" setpriv --bounding-set="-$cap" --inh-caps="-$cap" \
        env -u ELECTD_HOOKS_ON_LEADER_CHANGE ELECTD_STATE_FILE="$WORK/state-1" \
        "$ELECTD" run --config "$WORK/electd-vip.toml" --node-id 1 >"$WORK/nocap.log" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] && grep -q "needs CAP_${cap^^}" "$WORK/nocap.log" \
        || { echo "system-keepalived: a [[vip]] node without CAP_${cap^^} was not refused (exit $rc):" >&2; cat "$WORK/nocap.log" >&2; exit 1; }
    log "[[vip]] start without CAP_${cap^^} refused: $(grep -o 'needs CAP_[A-Z_]*' "$WORK/nocap.log" | head -1)"
done

log "5. a short run of the bench beside keepalived"
"$ELECTD" bench --quick --only keepalived --out "$WORK/bench" 2>&1 | tee "$WORK/bench.log"
grep -q "SKIPPED" "$WORK/bench.log" && { echo "system-keepalived: the bench skipped" >&2; exit 1; }
grep -q "^| sigkill | electd |" "$WORK/bench/report.md" \
    || { echo "system-keepalived: no electd row in the bench report" >&2; exit 1; }
grep -q "^| partition | keepalived |" "$WORK/bench/report.md" \
    || { echo "system-keepalived: no keepalived row in the bench report" >&2; exit 1; }
[ -s "$WORK/bench/keepalived.svg" ] || { echo "system-keepalived: no plot" >&2; exit 1; }
sed -n '/^## Beside keepalived/,/^!\[/p' "$WORK/bench/report.md"

log "6. the bench interrupted (SIGTERM) stops its daemons and deletes its namespaces"
"$ELECTD" bench --quick --only keepalived --out "$WORK/bench-term" >"$WORK/bench-term.log" 2>&1 &
PID[bench]=$!
bp="kad-b$((PID[bench] % 100000))"
for i in $(seq 200); do ip netns list | grep -q "^$bp-sw" && break; sleep 0.05; done
ip netns list | grep -q "^$bp-sw" || { echo "system-keepalived: the bench made no namespaces" >&2; exit 1; }
# into the rounds: the daemons run (the first round's line is logged)
for i in $(seq 300); do grep -q "sigkill 1/" "$WORK/bench-term.log" && break; sleep 0.1; done
kill -TERM "${PID[bench]}"
for i in $(seq 300); do kill -0 "${PID[bench]}" 2>/dev/null || break; sleep 0.1; done
rc=0; wait "${PID[bench]}" || rc=$?; unset "PID[bench]"
[ "$rc" -ne 143 ] || { echo "system-keepalived: SIGTERM killed the bench (no cleanup)" >&2; exit 1; }
left=$(ip netns list | grep -c "^$bp-" || true)
[ "$left" -eq 0 ] || { echo "system-keepalived: $left namespaces $bp-* left behind" >&2; ip netns list | grep "^$bp-" | cut -d' ' -f1 | xargs -r -n1 ip netns del; exit 1; }
log "interrupted bench (exit $rc): no namespace left"

STATUS=0
log "system-keepalived: OK"
