#!/usr/bin/env bash
# System test: the README's "see the demo live" path, with Debian's Prometheus.
#
#  1. static: scripts/check_dashboard.py --lint-only (one cluster, $__rate_interval,
#     the comparison first, no isDefault), scripts/check_alerts.py (Electd… names,
#     severity, runbooks that exist, a firing and a quiet promtool test per alert),
#     promtool check/test rules;
#  2. `electd demo --prometheus-file-sd FILE` with frequent chaos, and Prometheus
#     scraping it through that file_sd file (scrape and evaluation every 1 s, the
#     project's rules);
#  3. once every algorithm has failed over FAILOVERS times: every panel and variable
#     of dashboards/electd.json returns data per algorithm, the failover quantiles
#     included (scripts/check_dashboard.py), and no rule is unhealthy;
#  4. `electd bench --only failover --failover-modes pause` (the demo's take-down is a
#     pause; the demo runs the bench's timing) with a small sample count, then for each
#     algorithm the median failover Prometheus reports for the demo must be within
#     TOLERANCE (20%) of the bench's median.
#
# Needs: prometheus, promtool (Debian package `prometheus`), python3 with PyYAML
# (python3-yaml), curl; installed as root when missing.
# Every process started is stopped by PID on exit; every wait is bounded.
# Env: ELECTD=path to a built binary (else cargo build --release), KEEP=1 keeps the
# work dir, FAILOVERS (default 30) per algorithm, BENCH_SAMPLES (default 30).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${ELECTD:-}" ]; then
    (cd "$ROOT" && cargo build --quiet --release --bin electd)
    . "$ROOT/scripts/lib/target.sh"
    ELECTD="$(target_dir)/release/electd"
fi
FAILOVERS=${FAILOVERS:-30}
BENCH_SAMPLES=${BENCH_SAMPLES:-30}
TOLERANCE=0.20
WORK=$(mktemp -d "${TMPDIR:-/tmp}/electd-grafana.XXXXXX")
PIDS=()
STATUS=1
NAME=system-grafana
STOP_SIGNAL=INT   # the demo cleans up on Ctrl-C
. "$ROOT/scripts/lib/prometheus.sh"
trap prom_cleanup EXIT
prom_tools $(python3 -c 'import yaml' 2>/dev/null || echo python3-yaml)



# ---------------------------------------------------------------- static checks
log "lint: dashboard, datasource provisioning, alerts, rules"
python3 "$ROOT/scripts/check_dashboard.py" "$ROOT/dashboards/electd.json" --lint-only \
    --datasource "$ROOT/dashboards/provisioning/datasources/electd-prometheus.yml"
# The lint must reject what it is there to reject: a 5m rate, a query without the
# cluster, a multi-cluster selection, isDefault.
python3 - "$ROOT/dashboards/electd.json" "$WORK" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def broken(name, change):
    b = json.loads(json.dumps(d)); change(b)
    json.dump(b, open(f"{sys.argv[2]}/broken-{name}.json", "w"))
last = lambda b: [p for p in b["panels"] if p.get("targets")][-1]["targets"][0]
broken("rate5m", lambda b: last(b).update(expr=last(b)["expr"].replace("$__rate_interval", "5m")))
broken("nocluster", lambda b: last(b).update(expr=last(b)["expr"].replace('cluster="$cluster", ', "")))
broken("allclusters", lambda b: next(v for v in b["templating"]["list"] if v["name"] == "cluster").update(includeAll=True))
PY
printf 'datasources:\n  - name: x\n    isDefault: true\n' >"$WORK/broken-datasource.yml"
for f in "$WORK"/broken-*.json; do
    if python3 "$ROOT/scripts/check_dashboard.py" "$f" --lint-only >/dev/null; then
        log "check_dashboard.py accepted $(basename "$f")"; exit 1
    fi
done
if python3 "$ROOT/scripts/check_dashboard.py" "$ROOT/dashboards/electd.json" --lint-only \
    --datasource "$WORK/broken-datasource.yml" >/dev/null; then
    log "check_dashboard.py accepted isDefault: true"; exit 1
fi
python3 "$ROOT/scripts/check_alerts.py" "$ROOT/deploy/prometheus/rules/electd.rules.yml" \
    "$ROOT/docs/observability.md" "$ROOT"/deploy/prometheus/tests/*.yml
promtool check rules "$ROOT"/deploy/prometheus/rules/*.yml
promtool test rules "$ROOT"/deploy/prometheus/tests/*.yml

# ---------------------------------------------------------------- the demo
SD="$WORK/electd-demo.json"
"$ELECTD" demo --nodes 5 --chaos-every 0.8 --down-for 0.4 --duration 900 \
    --prometheus-file-sd "$SD" >"$WORK/demo.log" 2>&1 &
PIDS+=($!)
wait_for 20 "the demo's file_sd file" test -s "$SD"
log "demo running; file_sd: $SD"

cat >"$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files:
  - $ROOT/deploy/prometheus/rules/electd.rules.yml
scrape_configs:
  - job_name: electd-demo
    honor_labels: true
    file_sd_configs:
      - files: ["$SD"]
YAML
STARTED=$(date +%s)
prom_start "$WORK/prometheus.yml"
five() { [ "$(prom_value 'count(electd_build_info{cluster="demo"})')" = 5 ]; }
wait_for 30 "Prometheus scraping the demo's 5 nodes through file_sd" five
log "Prometheus on $PROM scrapes the demo"

ALGOS=$(curl -fsSG --data-urlencode 'match[]=electd_leader{cluster="demo"}' "$PROM/api/v1/label/algorithm/values" |
    python3 -c 'import json,sys; print(",".join(json.load(sys.stdin)["data"]))')
[ -n "$ALGOS" ] || { log "no algorithm label on the demo's series"; exit 1; }
log "algorithms: $ALGOS"
# Failovers per algorithm, counted once per failover (the most any node saw).
enough() {
    curl -fsS --data-urlencode 'query=max by (algorithm) (electd_failover_seconds_count{cluster="demo"})' \
        "$PROM/api/v1/query" | python3 -c '
import json, sys
r = {s["metric"]["algorithm"]: float(s["value"][1]) for s in json.load(sys.stdin)["data"]["result"]}
want, algos = float(sys.argv[1]), sys.argv[2].split(",")
print(" ".join(f"{a}={r.get(a, 0):.0f}" for a in algos), file=sys.stderr)
sys.exit(0 if all(r.get(a, 0) >= want for a in algos) else 1)' "$FAILOVERS" "$ALGOS" 2>"$WORK/progress.txt"
}
wait_for 420 "$FAILOVERS failovers of every algorithm in the demo" enough
log "failovers seen: $(cat "$WORK/progress.txt")"

# ---------------------------------------------------------------- panels
LOOKBACK=$(( $(date +%s) - STARTED + 5 ))
python3 "$ROOT/scripts/check_dashboard.py" "$ROOT/dashboards/electd.json" "$PROM" \
    --set cluster=demo --set node='.*' --algorithms "$ALGOS" \
    --rate-interval 4s --lookback "$LOOKBACK" --deadline 60
rules_ok() {
    curl -fsS "$PROM/api/v1/rules" | python3 -c '
import json, sys
rules = [r for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]]
bad = [(r["name"], r["health"], r.get("lastError", "")) for r in rules if r["health"] != "ok"]
print(bad) if bad else None
sys.exit(1 if bad or not rules else 0)'
}
wait_for 20 "every rule to evaluate without error" rules_ok

# The medians Prometheus reports over the whole demo, per algorithm (every node's
# failovers; bucket interpolation within a tenth of failure_timeout).
curl -fsS --data-urlencode 'query=histogram_quantile(0.5, sum by (algorithm, le) (electd_failover_seconds_bucket{cluster="demo"}))' \
    "$PROM/api/v1/query" >"$WORK/prom-median.json"
stop_pid "${PIDS[0]}"   # the demo: the bench must not share the CPU with it
log "demo stopped: $(grep -c 'failover to node' "$WORK/demo.log") failovers in its log"
[ ! -e "$SD" ] || { log "the demo left its file_sd file behind"; exit 1; }

# ---------------------------------------------------------------- bench
log "electd bench: failover, pause mode, $BENCH_SAMPLES per algorithm"
ELECTD_LOG=warn "$ELECTD" bench --only failover --failover-modes pause \
    --failover-samples "$BENCH_SAMPLES" --out "$WORK/bench" >"$WORK/bench.log" 2>&1
python3 - "$WORK/prom-median.json" "$WORK/bench/results.json" "$TOLERANCE" <<'PY'
import json, math, sys
prom = {s["metric"]["algorithm"]: float(s["value"][1]) * 1e3
        for s in json.load(open(sys.argv[1]))["data"]["result"]}
bench = {r["algorithm"]: r["stats"]["median"]
         for r in json.load(open(sys.argv[2]))["failover"]["runs"] if r["mode"] == "pause"}
tol = float(sys.argv[3])
bad = 0
print(f"{'algorithm':<16} {'prometheus p50':>15} {'bench median':>13} {'ratio':>7}")
for a in sorted(bench):
    p, b = prom.get(a, math.nan), bench[a]
    ratio = p / b if b > 0 else math.nan
    ok = math.isfinite(ratio) and abs(ratio - 1) <= tol
    bad += not ok
    print(f"{a:<16} {p:>12.1f} ms {b:>10.1f} ms {ratio:>7.2f} {'ok' if ok else 'FAIL'}")
missing = sorted(set(prom) - set(bench))
if missing or not bench:
    print(f"no bench figure for {missing or 'any algorithm'}")
    bad += 1
sys.exit(1 if bad else 0)
PY
STATUS=0
log "system-grafana: PASS"
