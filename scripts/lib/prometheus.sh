# Shared by the system tests that run a real Prometheus against electd
# (system-prometheus.sh, system-grafana.sh). Source it after setting NAME, ROOT, WORK,
# PIDS (an array) and STATUS; it defines:
#   prom_tools [PKG…]     install Debian's prometheus (with promtool) and curl, and the
#                         extra PKGs, with apt-get when missing (root only); exit 2
#                         when a tool is still missing
#   log MSG               a timestamped progress line
#   stop_pid PID          stop a process we started: STOP_SIGNAL (default TERM; INT
#                         lets a demo clean up as on Ctrl-C), bounded wait, SIGKILL
#   prom_cleanup          the EXIT trap: every PID, the log tails and the kept WORK
#                         dir when STATUS is not 0 (or KEEP=1)
#   wait_for SECS WHAT CMD…  retry CMD every 0.2 s for at most SECS seconds
#   prom_start CONFIG [PORT]  check CONFIG with promtool and start Prometheus on
#                         127.0.0.1:PORT (default: a free port; tsdb and log in WORK);
#                         sets PROM (its URL) and waits until it is ready
#   prom_value QUERY      the first value of an instant query (empty if none)

prom_tools() {
    local missing=() tool
    command -v prometheus >/dev/null && command -v promtool >/dev/null || missing+=(prometheus)
    command -v curl >/dev/null || missing+=(curl)
    missing+=("$@")
    if [ "${#missing[@]}" -gt 0 ]; then
        [ "$(id -u)" -eq 0 ] || { echo "$NAME: needs ${missing[*]}; run as root to install" >&2; exit 2; }
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    for tool in prometheus promtool python3 curl; do
        command -v "$tool" >/dev/null || { echo "$NAME: $tool is required" >&2; exit 2; }
    done
}

log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }

stop_pid() {
    local pid=$1 i
    kill -"${STOP_SIGNAL:-TERM}" "$pid" 2>/dev/null || return 0
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

prom_cleanup() {
    local pid f
    for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
    if [ "$STATUS" -ne 0 ]; then
        for f in "$WORK"/*.log; do
            [ -f "$f" ] || continue
            echo "---- tail of $f"; tail -n 30 "$f"
        done
    fi
    if [ "${KEEP:-0}" = 1 ] || [ "$STATUS" -ne 0 ]; then
        echo "work dir kept: $WORK"
    else
        rm -rf "$WORK"
    fi
}

wait_for() {
    local secs=$1 what=$2; shift 2
    local tries=$((secs * 5)) i
    for i in $(seq "$tries"); do
        if "$@"; then return 0; fi
        sleep 0.2
    done
    log "timed out after ${secs}s waiting for: $what"
    return 1
}

prom_value() {
    curl -fsS --data-urlencode "query=$1" "$PROM/api/v1/query" 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}

prom_ready() { curl -fsS "$PROM/-/ready" >/dev/null 2>&1; }

prom_start() {
    local config=$1 port=${2:-}
    promtool check config "$config"
    [ -n "$port" ] || port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    prometheus --config.file="$config" --storage.tsdb.path="$WORK/tsdb" \
        --web.listen-address="127.0.0.1:$port" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
    PIDS+=($!)
    PROM="http://127.0.0.1:$port"
    wait_for 30 "Prometheus ready" prom_ready
}
