#!/usr/bin/env bash
# System test: the container path, for real (issue 32). What a user does first:
#
#  1. build the image: `podman build -f deploy/docker/Dockerfile` (the Dockerfile as
#     shipped: both stages, the cargo build inside the builder);
#  2. run the compose cluster: `podman-compose -f deploy/compose/compose.yaml up` of the
#     keygen service and the five electd services (their own network, volumes, ports),
#     scraped by Prometheus with deploy/compose/prometheus.yml (the host's Prometheus:
#     no image can be pulled here; only the rule paths are rewritten to the host's);
#  3. SIGKILL the leader's container; the failover must show in
#     electd_failover_seconds through Prometheus and the others agree on a new leader;
#  4. start the container again: its state volume (electd-state-N) kept the fencing
#     token (the state file in the volume holds the token it had before the kill, and
#     the node leads again with a larger one).
#
# What this machine needs, all installed here with apt-get (CI starts fresh): podman
# with runc (crun refuses hybrid cgroup hierarchies; the containers.conf written here
# names runc and sets `default_ulimits = []`, as the default nofile limit is refused),
# podman-compose, mmdebstrap, prometheus, curl, python3.
#
# Base images cannot be pulled, so the Dockerfile's FROM images are made locally, once
# (kept in podman's storage and reused by later runs):
#   debian:<release>-slim   mmdebstrap --variant=minbase <release>, imported;
#   rust:<version>-<release>  that image plus gcc and libc6-dev, and the host's own Rust
#                           toolchain (rustup's sysroot: Debian's rustc is older than
#                           Cargo.toml's rust-version) and the CA certificates the host
#                           trusts (crates.io may be reached through a TLS proxy).
# The image build itself fetches crates from crates.io and Debian packages (tini,
# busybox) from the Debian mirror, as a user's build does.
#
# Skipped loudly (exit 0) without root or when podman cannot run a container here.
# Every container, volume and network it creates is removed on exit (podman-compose
# down -v); every process it starts is stopped by PID. Env: KEEP=1 keeps the cluster
# and the work dir; REBUILD_BASE=1 makes the base images again.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=system-containers
skip() {
    echo "!!! SKIPPING $NAME: $*"
    echo "!!! deploy/docker, deploy/compose were NOT run in containers on this machine."
    exit 0
}
[ "$(id -u)" -eq 0 ] || skip "needs root (podman, apt-get)"

need=()
# aardvark-dns: the compose network's DNS (the roster names the services).
for pkg in podman runc podman-compose aardvark-dns mmdebstrap prometheus curl python3; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/electd-containers.XXXXXX")
PIDS=()
STATUS=1
PROJECT=electd-systest
COMPOSE=(podman-compose -p "$PROJECT" -f "$ROOT/deploy/compose/compose.yaml")
. "$ROOT/scripts/lib/prometheus.sh"
cleanup() {
    if [ "${KEEP:-0}" != 1 ] && [ -n "${CLUSTER_UP:-}" ]; then
        "${COMPOSE[@]}" down -v >"$WORK/down.log" 2>&1 || cat "$WORK/down.log"
        # podman-compose 1.0.3 leaves the project's network behind.
        podman network rm -f "${PROJECT}_electd" >/dev/null 2>&1 || true
    fi
    if [ "$STATUS" -ne 0 ] && [ -n "${CLUSTER_UP:-}" ]; then
        for i in 1 2 3 4 5; do
            echo "---- podman logs of electd-$i (last 15 lines)"
            podman logs --tail 15 "$(cid "$i" 2>/dev/null)" 2>&1 || true
        done
    fi
    prom_cleanup
}
trap cleanup EXIT

# podman's configuration for this run only (CONTAINERS_CONF replaces the system's
# files for every podman that podman-compose starts too).
cat >"$WORK/containers.conf" <<'CONF'
[containers]
# The default nofile ulimit is refused on these machines.
default_ulimits = []

[engine]
# crun refuses a hybrid cgroup v1/v2 hierarchy; runc runs.
runtime = "runc"
CONF
export CONTAINERS_CONF="$WORK/containers.conf"
podman info >"$WORK/podman-info.txt" 2>&1 || skip "podman does not work here: $(tail -n 3 "$WORK/podman-info.txt")"

T0=$SECONDS
secs() { echo "$((SECONDS - $1)) s"; }

# ------------------------------------------------------------------ base images
DOCKERFILE="$ROOT/deploy/docker/Dockerfile"
arg() { sed -n "s/^ARG $1=//p" "$DOCKERFILE" | head -n 1; }
RELEASE=$(arg DEBIAN_RELEASE)
RUST_VERSION=$(arg RUST_VERSION)
[ -n "$RELEASE" ] && [ -n "$RUST_VERSION" ] || { echo "FAIL: the Dockerfile lost its ARG defaults" >&2; exit 1; }
BASE="debian:$RELEASE-slim"
BUILDER="rust:$RUST_VERSION-$RELEASE"
for want in "$BUILDER" "$BASE"; do
    grep -q "^FROM ${want%%:*}:" "$DOCKERFILE" ||
        { echo "FAIL: the Dockerfile no longer starts a stage FROM ${want%%:*} (update this script)" >&2; exit 1; }
done
[ "${REBUILD_BASE:-0}" = 1 ] && podman rmi -f "$BUILDER" "$BASE" >/dev/null 2>&1 || true

if ! podman image exists "$BASE"; then
    log "base image $BASE: mmdebstrap --variant=minbase $RELEASE"
    t=$SECONDS
    mmdebstrap --quiet --variant=minbase --mode=root "$RELEASE" "$WORK/base.tar"
    podman import "$WORK/base.tar" "$BASE" >/dev/null
    rm -f "$WORK/base.tar"
    log "$BASE made in $(secs $t)"
fi
podman run --rm --network none "$BASE" true 2>"$WORK/run.err" ||
    skip "podman cannot run a container here: $(tail -n 3 "$WORK/run.err")"

if ! podman image exists "$BUILDER"; then
    command -v rustc >/dev/null || skip "no Rust toolchain on the host to make $BUILDER from"
    SYSROOT=$(rustc --print sysroot)
    log "builder image $BUILDER: $BASE + gcc + the host's $(rustc --version)"
    t=$SECONDS
    mkdir -p "$WORK/builder" "$WORK/ca"
    cp /usr/local/share/ca-certificates/*.crt "$WORK/ca/" 2>/dev/null || true
    cat >"$WORK/builder/Containerfile" <<EOF
FROM $BASE
RUN apt-get update \\
    && apt-get install -y --no-install-recommends ca-certificates gcc libc6-dev \\
    && rm -rf /var/lib/apt/lists/*
RUN cp /host-ca/. /usr/local/share/ca-certificates/ -r && update-ca-certificates \\
    && mkdir -p /usr/local/rust /usr/local/cargo \\
    && cp -a /toolchain/bin /toolchain/lib /usr/local/rust/ \\
    && /usr/local/rust/bin/rustc --version && /usr/local/rust/bin/cargo --version
ENV RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo \\
    PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
EOF
    podman build --pull=never --format docker -v "$SYSROOT:/toolchain:ro" -v "$WORK/ca:/host-ca:ro" \
        -t "$BUILDER" "$WORK/builder" >"$WORK/builder.log" 2>&1 ||
        { tail -n 20 "$WORK/builder.log"; echo "FAIL: could not make $BUILDER" >&2; exit 1; }
    log "$BUILDER made in $(secs $t)"
fi

# ------------------------------------------------------------------ the image
log "podman build -f deploy/docker/Dockerfile -t electd:local ."
t=$SECONDS
if ! (cd "$ROOT" && podman build --pull=never --format docker -f deploy/docker/Dockerfile \
    -t electd:local . >"$WORK/build.log" 2>&1); then
    tail -n 40 "$WORK/build.log"
    echo "FAIL: deploy/docker/Dockerfile does not build" >&2
    exit 1
fi
BUILD_TIME=$(secs $t)
log "image built in $BUILD_TIME: $(podman image inspect electd:local --format '{{.Size}}' |
    awk '{ printf "%.1f MB", $1 / 1e6 }')"
podman run --rm --no-healthcheck --network none electd:local --version
[ "$(podman run --rm --no-healthcheck --network none --entrypoint id electd:local -u)" = 10001 ] ||
    { echo "FAIL: the image does not run as uid 10001" >&2; exit 1; }
podman image inspect electd:local --format '{{json .Config.Healthcheck}}' | grep -q healthz ||
    { echo "FAIL: the image lost its HEALTHCHECK" >&2; exit 1; }

# ------------------------------------------------------------------ the cluster
# A left-over cluster of an interrupted run would hold the addresses and volumes.
"${COMPOSE[@]}" down -v >/dev/null 2>&1 || true
SERVICES=(keygen electd-1 electd-2 electd-3 electd-4 electd-5)
log "podman-compose up: ${SERVICES[*]}"
CLUSTER_UP=1
"${COMPOSE[@]}" up -d "${SERVICES[@]}" >"$WORK/up.log" 2>&1 ||
    { tail -n 30 "$WORK/up.log"; echo "FAIL: podman-compose up" >&2; exit 1; }
cid() { podman ps -aq --filter "label=io.podman.compose.project=$PROJECT" \
    --filter "label=com.docker.compose.service=electd-$1" | head -n 1; }
http() { echo "127.0.0.1:575$1"; }   # compose.yaml publishes node N's 5741 on 575N

# Prometheus: the compose file's own scrape configuration, with what differs on the
# host: the targets (electd-N:5741 resolve only on the compose network) are the ports
# compose.yaml publishes, the rules are the repository's, and a 1 s interval (5 s in
# the file) keeps this short.
sed -e "s#/etc/prometheus/electd/#$ROOT/deploy/prometheus/#" \
    -e 's/"electd-\([1-9]\):5741"/"127.0.0.1:575\1"/' \
    -e 's/^\(  *scrape_interval:\).*/\1 1s/' -e 's/^\(  *evaluation_interval:\).*/\1 1s/' \
    "$ROOT/deploy/compose/prometheus.yml" >"$WORK/prometheus.yml"
prom_start "$WORK/prometheus.yml"
all_up() { [ "$(prom_value 'sum(up{job="electd"})')" = 5 ]; }
wait_for 90 "Prometheus scraping the five containers" all_up
log "Prometheus on $PROM scrapes the five containers"

leader_of() { curl -fsS "http://$(http "$1")/leader?algorithm=bully" 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["leader"] if d["leader"] is not None else "", d["term"])'; }
# agreed "NODES" WANT: every node of NODES follows WANT in the bully group.
agreed() {
    local i l
    for i in $1; do
        l=$(leader_of "$i") || return 1
        [ "${l%% *}" = "$2" ] || return 1
    done
}
wait_for 60 "the five nodes to agree on node 5 (Bully: the highest id)" agreed "1 2 3 4 5" 5
TERM_BEFORE=$(leader_of 5 | cut -d' ' -f2)
log "bully: node 5 leads, term (fencing token) $TERM_BEFORE"

# ------------------------------------------------------------------ SIGKILL the leader
STATE_VOL=$(podman volume ls -q --filter "label=io.podman.compose.project=$PROJECT" | grep 'electd-state-5$')
STATE_DIR=$(podman volume inspect "$STATE_VOL" --format '{{.Mountpoint}}')
state_token() { # the bully term in node 5's state file (the intact record of highest sequence)
    python3 - "$STATE_DIR/5.state" <<'PY'
import json, sys
data = open(sys.argv[1], "rb").read()
best = None
for off in range(0, len(data), 4096):
    lines = data[off:off + 4096].decode("utf-8", "replace").split("\n")
    head = lines[0].split()
    if len(head) == 4 and head[0] == "electd-state":
        rec = json.loads(lines[1])
        if best is None or int(head[2]) > best[0]:
            best = (int(head[2]), rec["groups"].get("bully", {}).get("term"))
print(f"{best[0]} {best[1]}" if best else "")
PY
}
failovers() { prom_value 'sum(electd_failover_seconds_count{job="electd",algorithm="bully"})'; }
FAILOVERS_BEFORE=$(failovers)
C5=$(cid 5)
log "podman kill --signal KILL electd-5 ($C5)"
podman kill --signal KILL "$C5" >/dev/null
T_KILL=$(date +%s.%N)
wait_for 30 "nodes 1-4 to agree on node 4" agreed "1 2 3 4" 4
TERM_FAILOVER=$(leader_of 4 | cut -d' ' -f2)
log "nodes 1-4 follow node 4 $(python3 -c "print(f'{$(date +%s.%N) - $T_KILL:.1f}')") s after the kill"
failover_seen() {
    local n; n=$(failovers)
    python3 -c "import sys; sys.exit(0 if float('${n:-0}') >= float('${FAILOVERS_BEFORE:-0}') + 4 else 1)"
}
wait_for 30 "electd_failover_seconds to count the failover on nodes 1-4 (Prometheus)" failover_seen
MEAN=$(prom_value 'sum(increase(electd_failover_seconds_sum{algorithm="bully"}[2m])) / sum(increase(electd_failover_seconds_count{algorithm="bully"}[2m]))')
P99=$(prom_value 'histogram_quantile(0.99, sum by (le) (increase(electd_failover_seconds_bucket{algorithm="bully"}[2m])))')
log "Prometheus: failover seen by the four followers, mean ${MEAN} s, p99 ${P99} s (failure_timeout 1 s)"
python3 -c "import sys; m=float('${MEAN:-nan}'); sys.exit(0 if 0.5 <= m <= 10 else 1)" ||
    { echo "FAIL: a failover of ${MEAN} s is not one of a 1 s failure timeout" >&2; exit 1; }

[ "$(podman inspect "$C5" --format '{{.State.Running}}')" = false ] ||
    { echo "FAIL: electd-5 runs again by itself after a SIGKILL from podman kill" >&2; exit 1; }
read -r SEQ_KEPT TOKEN_KEPT <<<"$(state_token)"
[ -n "${TOKEN_KEPT:-}" ] && [ "$TOKEN_KEPT" -ge "$TERM_BEFORE" ] ||
    { echo "FAIL: node 5's state volume holds token '${TOKEN_KEPT:-}', it led with $TERM_BEFORE" >&2; exit 1; }
log "the state volume $STATE_VOL holds node 5's token $TOKEN_KEPT (record $SEQ_KEPT) after the kill; node 4 leads with $TERM_FAILOVER"

# ------------------------------------------------------------------ restart
log "podman start electd-5"
podman start "$C5" >/dev/null
wait_for 60 "node 5 to lead the five again" agreed "1 2 3 4 5" 5
TERM_AFTER=$(leader_of 5 | cut -d' ' -f2)
# The token is (term, leader id), term first: node 5's must be above node 4's.
[ "$TERM_AFTER" -ge "$TERM_FAILOVER" ] && [ "$TERM_AFTER" -ge "$TOKEN_KEPT" ] ||
    { echo "FAIL: node 5 leads again with token ($TERM_AFTER, 5), below node 4's ($TERM_FAILOVER, 4) or its kept $TOKEN_KEPT" >&2; exit 1; }
# The restarted container wrote on in the same file: its records continue the sequence
# of the ones before the kill (a fresh file would start again from the first).
read -r SEQ_AFTER TOKEN_FILE <<<"$(state_token)"
[ "$SEQ_AFTER" -gt "$SEQ_KEPT" ] && [ "$TOKEN_FILE" -ge "$TOKEN_KEPT" ] ||
    { echo "FAIL: node 5's state file went from record $SEQ_KEPT (token $TOKEN_KEPT) to $SEQ_AFTER ($TOKEN_FILE)" >&2; exit 1; }
log "node 5 leads again with token ($TERM_AFTER, 5) > ($TERM_FAILOVER, 4); its state file continued from record $SEQ_KEPT to $SEQ_AFTER (token $TOKEN_FILE)"
# The image's HEALTHCHECK, run by hand (podman schedules it with systemd timers, and
# there may be no systemd), on every node.
healthy() { podman healthcheck run "$(cid "$1")" >/dev/null 2>&1; }
for i in 1 2 3 4 5; do wait_for 20 "the HEALTHCHECK of electd-$i" healthy "$i"; done
log "the image's HEALTHCHECK passes on every node"

log "build $BUILD_TIME, whole run $(secs $T0)"
STATUS=0
echo "$NAME: image built, compose cluster ran, leader SIGKILLed and back with its token"
