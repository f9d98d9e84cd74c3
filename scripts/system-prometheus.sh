#!/usr/bin/env bash
# System test: a 5-node electd cluster on 127.0.0.1 scraped by a real Prometheus.
#
#  1. promtool: check config (shipped and generated), check rules, test rules;
#  2. start Prometheus (scrape and evaluation every 1 s, the project's rules), then 5
#     `electd run` processes from one config (key, admin token), wait until every
#     group agrees on a leader (the highest id for the Bully family) and Prometheus
#     scrapes all 5 nodes;
#  3. one election (every group's leader paused): on each other node, increase() of
#     electd_messages_sent_total over a window from a scrape before it to one after it
#     equals the change of the node's /metrics, per algorithm (issue 32: series that
#     exist at 0 from the start, so a node's first message of a type is not lost);
#  4. force failovers through the admin API: pause the leader (a simulated crash),
#     wait for the others to agree on a new leader, resume it, wait again; call an
#     election on the lowest node; a /watch client on node 1 must see the change;
#     send stray datagrams (counted as invalid);
#  5. `promtool check metrics` on every node's /metrics;
#  6. every rule evaluates without error, no critical alert fires on the healthy
#     cluster, and every panel expression of dashboards/electd.json returns data
#     through Prometheus's HTTP API, per algorithm (scripts/check_dashboard.py).
#
# Needs: prometheus and promtool (Debian package `prometheus`, installed if missing),
# python3, curl, cargo.
# Every process started is stopped by PID on exit; every wait is bounded.
# Env: ELECTD=path to a built binary (else cargo build), KEEP=1 keeps the work dir.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${ELECTD:-}" ]; then
    (cd "$ROOT" && cargo build --quiet --bin electd)
    . "$ROOT/scripts/lib/target.sh"
    ELECTD="$(target_dir)/debug/electd"
fi
N=5
CLUSTER=systest
WORK=$(mktemp -d "${TMPDIR:-/tmp}/electd-prom.XXXXXX")
PIDS=()
STATUS=1
NAME=system-prometheus
. "$ROOT/scripts/lib/prometheus.sh"
trap prom_cleanup EXIT
prom_tools



free_ports() { # $1 TCP then $1 UDP ports free right now
    python3 - "$1" <<'PY'
import socket, sys
n = int(sys.argv[1]); keep = []
for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
    for _ in range(n):
        s = socket.socket(socket.AF_INET, kind); s.bind(("127.0.0.1", 0)); keep.append(s)
print(" ".join(str(s.getsockname()[1]) for s in keep))
PY
}

json_field() { python3 -c 'import json,sys; v=json.load(sys.stdin)[sys.argv[1]]; print("" if v is None else v)' "$1"; }

# ---------------------------------------------------------------- static checks
log "promtool: shipped config, rules and rule unit tests"
promtool check config "$ROOT/deploy/prometheus/prometheus.yml"
promtool check rules "$ROOT"/deploy/prometheus/rules/*.yml
promtool test rules "$ROOT"/deploy/prometheus/tests/*.yml
python3 -m json.tool "$ROOT/dashboards/electd.json" >/dev/null

# ---------------------------------------------------------------- the cluster
# Algorithms this build implements (the simulator refuses the others).
ALGOS=()
for a in bully improved-bully ring lcr hs raft; do
    if "$ELECTD" simulate --algorithm "$a" --nodes 3 --format json >/dev/null 2>&1; then ALGOS+=("$a"); fi
done
[ "${#ALGOS[@]}" -gt 0 ] || { log "no algorithm implemented?"; exit 1; }
ALGO_LIST=$(IFS=,; echo "${ALGOS[*]}")
log "algorithms: $ALGO_LIST"

read -r -a PORTS <<<"$(free_ports $((N + 1)))"
PROM_PORT=${PORTS[$N]}            # TCP ports: N for HTTP, 1 for Prometheus
HTTP=() UDP=()
for i in $(seq 1 $N); do
    HTTP[$i]=127.0.0.1:${PORTS[$((i - 1))]}
    UDP[$i]=${PORTS[$((N + 1 + i - 1))]}
done
"$ELECTD" keygen --out "$WORK/electd.key" >/dev/null
TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
printf '%s\n' "$TOKEN" >"$WORK/admin.token"
{
    echo "cluster = \"$CLUSTER\""
    printf 'algorithms = [%s]\n' "$(printf '"%s",' "${ALGOS[@]}" | sed 's/,$//')"
    cat <<'TOML'
[timing]
heartbeat = "20ms"
failure_timeout = "200ms"
answer_timeout = "40ms"
coordinator_timeout = "120ms"
election_timeout = "300ms..600ms"

[security]
key_file = "electd.key"

[state]
file = "{node}.state"

[admin]
token_file = "admin.token"
TOML
    for i in $(seq 1 $N); do
        printf '\n[[peer]]\nid = %d\naddr = "127.0.0.1:%d"\nhttp = "%s"\n' "$i" "${UDP[$i]}" "${HTTP[$i]}"
    done
} >"$WORK/electd.toml"

# ---------------------------------------------------------------- Prometheus
# Started before the nodes: it scrapes them from their first second on.
{
    cat <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files:
  - $ROOT/deploy/prometheus/rules/electd.rules.yml
scrape_configs:
  - job_name: electd
    honor_labels: true
    static_configs:
YAML
    for i in $(seq 1 $N); do
        printf '      - targets: ["%s"]\n        labels: { cluster: %s, node: "%d" }\n' "${HTTP[$i]}" "$CLUSTER" "$i"
    done
} >"$WORK/prometheus.yml"
PROM_STARTED=$(date +%s)
prom_start "$WORK/prometheus.yml" "$PROM_PORT"

# ---------------------------------------------------------------- the nodes
for i in $(seq 1 $N); do
    ELECTD_LOG=info "$ELECTD" run --config "$WORK/electd.toml" --node-id "$i" >"$WORK/node$i.log" 2>&1 &
    PIDS+=($!)
done
healthy() { local i; for i in $(seq 1 $N); do curl -fsS "http://${HTTP[$i]}/healthz" >/dev/null 2>&1 || return 1; done; }
wait_for 20 "every node's /healthz" healthy
log "5 nodes up: ${HTTP[*]}"

admin() { curl -fsS -X POST -H "Authorization: Bearer $TOKEN" "http://${HTTP[$1]}$2" >/dev/null; }
leader_at() { curl -fsS "http://${HTTP[$1]}/leader?algorithm=$2" 2>/dev/null | json_field leader; }

# agreed ALGO "live nodes" [excluded]: every live node follows the same leader, and
# that leader is live; sets AGREED.
agreed() {
    local algo=$1 live=$2 first="" i l
    for i in $live; do
        l=$(leader_at "$i" "$algo") || return 1
        [ -n "$l" ] || return 1
        if [ -z "$first" ]; then first=$l; elif [ "$l" != "$first" ]; then return 1; fi
    done
    case " $live " in *" $first "*) AGREED=$first; return 0 ;; *) return 1 ;; esac
}

expect_leader() { # ALGO LIVE EXPECTED-FOR-BULLY-FAMILY
    local algo=$1 live=$2 want=$3
    wait_for 20 "agreement on a leader of $algo among nodes $live" agreed "$algo" "$live"
    case "$algo" in
        raft) ;;  # Raft elects whoever wins a majority
        *) [ "$AGREED" = "$want" ] || { log "$algo elected $AGREED, expected $want (highest live id)"; return 1; } ;;
    esac
    log "$algo: nodes $live agree on leader $AGREED"
}

ALL=$(seq -s ' ' 1 $N)
for a in "${ALGOS[@]}"; do expect_leader "$a" "$ALL" "$N"; done

# ------------------------------------------------- every message of an election counted
# Issue 32: a counter series created only when first incremented loses, in increase(),
# everything counted before the first scrape that saw it. Every series whose labels are
# known at start is exported at 0, so increase() over a window that spans one election
# equals the change of each node's /metrics, per algorithm, even for the message types a
# node sends for the first time (the new Bully leader's first COORDINATOR).
# The window runs from a scrape before the election to a scrape after it, both sample
# times of that node (so increase() extrapolates nothing); liveness traffic excluded.
ELECTION_TYPES='type!~"heartbeat|heartbeat_ack"'
election_counts() { # NODE -> "algorithm count" lines from its /metrics, liveness excluded
    curl -fsS "http://${HTTP[$1]}/metrics" | python3 -c '
import re, sys
tot = {}
for l in sys.stdin:
    m = re.match(r"electd_messages_sent_total\{(.*)\} (\S+)$", l.strip())
    if not m: continue
    lab = dict(re.findall(r"(\w+)=\"([^\"]*)\"", m.group(1)))
    if lab["type"] in ("heartbeat", "heartbeat_ack"): continue
    tot[lab["algorithm"]] = tot.get(lab["algorithm"], 0) + float(m.group(2))
for a, n in sorted(tot.items()): print(a, int(n))'
}
last_scrape() { prom_value "timestamp(up{job=\"electd\",node=\"$1\"})"; }
# scraped_since NODE T: Prometheus has a scrape of NODE later than T, and what it got
# then is what the node's /metrics says now (nothing moved since).
scraped_counts() { # NODE -> the same lines as election_counts, from the last scrape
    curl -fsS --data-urlencode "query=sum by (algorithm) (electd_messages_sent_total{node=\"$1\",$ELECTION_TYPES})" \
        "$PROM/api/v1/query" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
for a, n in sorted((x["metric"]["algorithm"], int(float(x["value"][1]))) for x in r): print(a, n)'
}
settled() { # NODE: the last scrape shows what /metrics shows now
    local now; now=$(election_counts "$1") || return 1
    [ -n "$now" ] && [ "$now" = "$(scraped_counts "$1")" ]
}
all_up() { [ "$(prom_value "sum(up{job=\"electd\"})")" = "$N" ]; }
wait_for 30 "Prometheus scraping all $N nodes" all_up
log "Prometheus on $PROM scrapes all $N nodes"
agreed raft "$ALL" 2>/dev/null || true
RAFT_LEADER=${AGREED:-$N}
case " ${ALGOS[*]} " in *" raft "*) ;; *) RAFT_LEADER=$N ;; esac
DOWN="$N"; [ "$RAFT_LEADER" != "$N" ] && DOWN="$N $RAFT_LEADER"
SURV=$(for i in $ALL; do case " $DOWN " in *" $i "*) ;; *) printf '%s ' "$i" ;; esac; done)
SURV=${SURV% }
declare -A T0 C0
for i in $SURV; do
    wait_for 20 "node $i's counts scraped as they are" settled "$i"
    T0[$i]=$(last_scrape "$i")
    C0[$i]=$(election_counts "$i")
done
log "one election: pause node(s) $DOWN (every group's leader)"
for i in $DOWN; do admin "$i" /admin/pause; done
BULLY_NEXT=$(for i in $SURV; do echo "$i"; done | sort -n | tail -1)
for a in "${ALGOS[@]}"; do expect_leader "$a" "$SURV" "$BULLY_NEXT"; done
for i in $SURV; do
    t0=${T0[$i]}
    after() { python3 -c "import sys; sys.exit(0 if float('$(last_scrape "$1")' or 0) > float('$2') else 1)"; }
    wait_for 20 "a scrape of node $i after the election" after "$i" "$t0"
    wait_for 20 "node $i's counts scraped as they are" settled "$i"
    t1=$(last_scrape "$i")
    c1=$(election_counts "$i")
    window_ms=$(python3 -c "print(round((float('$t1') - float('$t0')) * 1000))")
    got=$(curl -fsS --data-urlencode "query=sum by (algorithm) (increase(electd_messages_sent_total{node=\"$i\",$ELECTION_TYPES}[${window_ms}ms]))" \
        --data-urlencode "time=$t1" "$PROM/api/v1/query")
    python3 - "$i" "${C0[$i]}" "$c1" "$got" "${ALGOS[*]}" "$window_ms" <<'PY' || exit 1
import json, sys
node, c0, c1, got, algos, window = sys.argv[1:]
parse = lambda s: {a: int(n) for a, n in (l.split() for l in s.splitlines() if l.strip())}
c0, c1 = parse(c0), parse(c1)
inc = {r["metric"]["algorithm"]: float(r["value"][1]) for r in json.loads(got)["data"]["result"]}
bad = []
for a in algos.split():
    want = c1.get(a, 0) - c0.get(a, 0)
    have = inc.get(a)
    # Prometheus 3 opens the window on the left: 1 ms of extrapolation at most.
    if have is None or round(have) != want:
        bad.append(f"{a}: increase() over {window} ms = {have}, /metrics went {c0.get(a, 0)} -> {c1.get(a, 0)} (+{want})")
print(f"  node {node}: " + ", ".join(f"{a} +{c1.get(a, 0) - c0.get(a, 0)}" for a in algos.split()))
if bad:
    sys.exit("FAIL: election messages lost by increase():\n  " + "\n  ".join(bad))
PY
done
moved() { # some survivor sent election messages in every group (the check is not vacuous)
    local a i
    for a in "${ALGOS[@]}"; do
        local sum=0 n0 n1
        for i in $SURV; do
            n0=$(awk -v a="$a" '$1 == a { print $2 }' <<<"${C0[$i]}")
            n1=$(election_counts "$i" | awk -v a="$a" '$1 == a { print $2 }')
            sum=$((sum + ${n1:-0} - ${n0:-0}))
        done
        [ "$sum" -gt 0 ] || { log "$a: no election message in the window"; return 1; }
    done
}
moved
log "increase() counts every election message of every algorithm on nodes $SURV"
for i in $DOWN; do admin "$i" /admin/resume; done
for a in "${ALGOS[@]}"; do expect_leader "$a" "$ALL" "$N"; done

# Two more scrapes, so that every counter has a sample before the failovers.
scraped_twice() { [ "$(prom_value "min(count_over_time(up{job=\"electd\"}[1m]))")" -ge 3 ] 2>/dev/null; }
wait_for 30 "three scrapes of every node" scraped_twice

# ---------------------------------------------------------------- failovers
FIRST=${ALGOS[0]}
curl -sN "http://${HTTP[1]}/watch?algorithm=$FIRST" >"$WORK/watch.txt" 2>/dev/null &
PIDS+=($!)
watch_has() { grep -q "$1" "$WORK/watch.txt" 2>/dev/null; }
# watch_change LEADER: a non-initial event in which node 1 follows LEADER (the fields
# are matched one by one: their order in the JSON object is not part of the contract).
watch_change() {
    grep '"initial":false' "$WORK/watch.txt" 2>/dev/null | grep "\"leader\":$1," |
        grep -q '"role":"follower"'
}
wait_for 10 "the /watch stream's initial state" watch_has '"initial":true'

printf 'not an electd datagram' >"/dev/udp/127.0.0.1/${UDP[1]}"

LEADER=$N
log "failover 1: pause node $LEADER (simulated crash)"
admin "$LEADER" /admin/pause
node_down() { [ "$(prom_value "up{job=\"electd\",node=\"$LEADER\"}")" = 0 ]; }
SURVIVORS=$(seq -s ' ' 1 $((N - 1)))
for a in "${ALGOS[@]}"; do expect_leader "$a" "$SURVIVORS" $((N - 1)); done
wait_for 20 "Prometheus to see node $LEADER down" node_down
NEW=$AGREED
wait_for 10 "/watch on node 1 to report the new $FIRST leader" \
    watch_change $((N - 1))
log "/watch on node 1 saw the failover"

log "failover 2: resume node $LEADER"
admin "$LEADER" /admin/resume
for a in "${ALGOS[@]}"; do expect_leader "$a" "$ALL" "$N"; done
wait_for 10 "/watch to report node $N back" \
    watch_change "$N"

# Raft elects whoever wins a majority: if its leader is not node $N, the two failovers
# above did not touch it. Take its own leader down and bring it back.
for a in "${ALGOS[@]}"; do
    [ "$a" = raft ] || continue
    agreed raft "$ALL" || true
    R=${AGREED:-}
    if [ -n "$R" ] && [ "$R" != "$N" ]; then
        OTHERS=$(for i in $ALL; do [ "$i" != "$R" ] && printf '%s ' "$i"; done)
        log "raft: failover of its own leader: pause node $R"
        admin "$R" /admin/pause
        expect_leader raft "${OTHERS% }" 0
        admin "$R" /admin/resume
        expect_leader raft "$ALL" 0
    fi
done

log "forced elections from node 1 (POST /admin/election)"
started_total() { # elections started in group $1 over every node, from their /metrics
    local i sum=0 v
    for i in $(seq 1 $N); do
        v=$(curl -fsS "http://${HTTP[$i]}/metrics" |
            sed -n "s/^electd_elections_started_total{algorithm=\"$1\",cluster=\"$CLUSTER\",node=\"$i\"} //p")
        sum=$((sum + ${v:-0}))
    done
    echo "$sum"
}
for a in "${ALGOS[@]}"; do
    # At a follower this starts an election; at a Raft leader it hands leadership over
    # (the others campaign): either way the cluster starts at least one election.
    before=$(started_total "$a")
    admin 1 "/admin/election?algorithm=$a"
    started() { [ "$(started_total "$a")" -gt "$before" ]; }
    wait_for 10 "an election in $a after POST /admin/election on node 1" started
    expect_leader "$a" "$ALL" "$N"
done
printf 'still not an electd datagram' >"/dev/udp/127.0.0.1/${UDP[2]}"
[ -n "$NEW" ]

# ---------------------------------------------------------------- checks
log "promtool check metrics on every node"
for i in $(seq 1 $N); do
    curl -fsS "http://${HTTP[$i]}/metrics" >"$WORK/metrics$i.txt"
    promtool check metrics <"$WORK/metrics$i.txt"
    grep -q "^electd_build_info{cluster=\"$CLUSTER\",node=\"$i\"" "$WORK/metrics$i.txt"
done

rules_ok() {
    curl -fsS "$PROM/api/v1/rules" | python3 -c '
import json, sys
rules = [r for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]]
bad = [(r["name"], r["health"], r.get("lastError", "")) for r in rules if r["health"] != "ok"]
sys.exit(1 if bad or len(rules) < 8 else 0)'
}
wait_for 20 "every rule to evaluate without error" rules_ok
log "all rules healthy"

# Elections happened and Prometheus saw them (the recording rule has a value).
per_election() { [ -n "$(prom_value "cluster_algorithm:electd_messages_per_election:ratio5m{cluster=\"$CLUSTER\",algorithm=\"$FIRST\"}")" ]; }
wait_for 30 "the messages-per-election recording rule" per_election
log "messages per election ($FIRST, 5m): $(prom_value "cluster_algorithm:electd_messages_per_election:ratio5m{algorithm=\"$FIRST\"}")"

# What the panels must show after this run, not only "some data":
invalid_seen() { [ "$(prom_value "min(sum by (node) (electd_invalid_datagrams_total{cluster=\"$CLUSTER\",node=~\"1|2\"}))")" -ge 1 ] 2>/dev/null; }
wait_for 20 "the stray datagrams counted as invalid on nodes 1 and 2" invalid_seen
for a in "${ALGOS[@]}"; do
    # The bully and ring families fail over and back (2 new leaders, node $N leads
    # again); Raft keeps its new leader after the failback (at least 1).
    want_won=1.5 want_leader=$N
    if [ "$a" = raft ]; then agreed raft "$ALL"; want_won=0.5 want_leader=$AGREED; fi
    won=$(prom_value "sum(increase(electd_elections_won_total{algorithm=\"$a\"}[5m]))")
    python3 -c "import sys; sys.exit(0 if float('${won:-0}') >= $want_won else 1)" ||
        { log "$a: Prometheus saw ${won:-no} new leaders, expected more than $want_won"; exit 1; }
    leads=$(prom_value "max(electd_leader{algorithm=\"$a\"} and electd_is_leader{algorithm=\"$a\"} == 1)")
    [ "$leads" = "$want_leader" ] || { log "$a: the leader panel shows $leads, expected $want_leader"; exit 1; }
done

python3 "$ROOT/scripts/check_dashboard.py" "$ROOT/dashboards/electd.json" "$PROM" \
    --set cluster="$CLUSTER" --set node='.*' --algorithms "$ALGO_LIST" \
    --rate-interval 4s --lookback "$(( $(date +%s) - PROM_STARTED + 5 ))" --deadline 60

firing=$(prom_value 'count(ALERTS{alertstate="firing",severity="critical"})')
if [ -n "$firing" ]; then
    log "critical alerts firing on a healthy cluster:"
    curl -fsS "$PROM/api/v1/alerts"; echo
    exit 1
fi
STATUS=0
log "system-prometheus: PASS"
