#!/usr/bin/env python3
"""Lint an electd Grafana dashboard, then query every panel through a real Prometheus
and require each to return data (used by the system stage).

Lint (always; alone with --lint-only), for dashboards/electd.json:
  * stable uid; template variables datasource, cluster, algorithm, node; `cluster` is
    single-select without "All", so no panel can sum over two clusters; no `job` or
    `window` variable;
  * every panel, target and annotation uses ${datasource};
  * every selector of an electd_* or process_* series has cluster="$cluster" (exact
    match); `up`, which carries only the scrape's labels, appears only joined
    `on (instance)` to such a selector (job-agnostic);
  * every rate(), irate() and increase() uses [$__rate_interval], except in the
    instant panels (table, stat, bargauge, gauge), which may summarize the time range
    shown with [$__range];
  * the first panel is the per-algorithm comparison table: failover p50 and p99,
    availability, messages per election, bytes per second and retransmissions, each
    `by (algorithm)`;
  * an annotation marks leader changes;
  * with --datasource FILE: the provisioned datasource does not set isDefault: true.

Data (unless --lint-only): every template variable query returns values; every
target, with the variables substituted, returns at least one finite value -- for each
algorithm separately when it uses $algorithm (the board compares algorithms side by
side), and for "All". Range panels are queried over --lookback seconds (as Grafana
draws them); instant panels at the current time with $__range = the lookback.

Usage: check_dashboard.py DASHBOARD [PROM_URL] --set cluster=c --algorithms bully,raft
       [--set node=.*] [--rate-interval 4s] [--lookback 600] [--deadline 90]
       [--datasource FILE] [--lint-only]
Retries failing queries until the deadline (scrapes and rule evaluations take time).
Exit status 0 when everything passed, 1 otherwise (and prints what failed).
"""
import argparse
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request

INSTANT_PANELS = {"table", "stat", "bargauge", "gauge"}
SERIES = re.compile(r"\b((?:electd|process)_[a-z0-9_]+)\s*(\{[^}]*\})?")
RANGE_FN = re.compile(r"\b(rate|irate|increase)\s*\(([^\[\]]*)\[([^\]]*)\]")
COMPARISON = {
    "failover p50": r"histogram_quantile\(0\.5, sum by \(algorithm, le\) \(\w+\(electd_failover_seconds_bucket",
    "failover p99": r"histogram_quantile\(0\.99, sum by \(algorithm, le\) \(\w+\(electd_failover_seconds_bucket",
    "availability": r"by \(algorithm\) \(rate\(electd_leaderless_seconds_total",
    "messages per election": r"by \(algorithm\) \(increase\(electd_messages_sent_total.*electd_elections_won_total",
    "bytes per second": r"by \(algorithm\) \(rate\(electd_group_bytes_sent_total",
    "retransmissions": r"by \(algorithm\) \(rate\(electd_group_retransmissions_total",
}


def prom(url, path, params):
    q = urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(f"{url}{path}?{q}", timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{path} {params}: {body}")
    return body["data"]


def substitute(expr, values):
    def repl(m):
        name = m.group(1) or m.group(2)
        if name not in values:
            raise KeyError(f"no value for template variable ${name} in {expr}")
        return values[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", repl, expr)


def lint_expr(where, expr, instant):
    errors = []
    for m in SERIES.finditer(expr):
        name, labels = m.group(1), m.group(2) or ""
        if 'cluster="$cluster"' not in labels:
            errors.append(f"{where}: {name} without cluster=\"$cluster\": {expr}")
    if re.search(r"\bup\b", expr) and not re.search(r"\bup\s*\*?\s*on\s*\(instance\)", expr):
        errors.append(f"{where}: `up` not joined on (instance) to the cluster's series: {expr}")
    allowed = {"$__rate_interval", "$__range"} if instant else {"$__rate_interval"}
    for m in RANGE_FN.finditer(expr):
        if m.group(3) not in allowed:
            errors.append(f"{where}: {m.group(1)}() over [{m.group(3)}], expected "
                          f"{' or '.join(sorted(allowed))}: {expr}")
    if "$window" in expr or "${window}" in expr:
        errors.append(f"{where}: uses $window: {expr}")
    return errors


def lint(d, datasource_file=None):
    errors = []
    if d.get("uid") != "electd-overview":
        errors.append(f"uid is {d.get('uid')!r}, expected the stable 'electd-overview'")
    names = {v["name"]: v for v in d["templating"]["list"]}
    for v in ("datasource", "cluster", "algorithm", "node"):
        if v not in names:
            errors.append(f"template variable {v} missing")
    for v in ("job", "window"):
        if v in names:
            errors.append(f"template variable {v} present (the board is job-agnostic and uses $__rate_interval)")
    if names.get("datasource", {}).get("type") != "datasource":
        errors.append("variable datasource is not of type datasource")
    cl = names.get("cluster", {})
    if cl.get("multi") or cl.get("includeAll"):
        errors.append("variable cluster must be single-select without All: panels would sum over clusters")
    for name, v in names.items():
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if v.get("type") == "query" and name != "cluster" and 'cluster="$cluster"' not in (q or ""):
            errors.append(f"variable {name} does not select the cluster: {q}")
    panels = [p for p in d["panels"] if p["type"] != "row"]
    for p in panels:
        title = p.get("title")
        if p.get("datasource", {}).get("uid") != "${datasource}":
            errors.append(f"panel {title!r} does not use ${{datasource}}")
        if not p.get("targets"):
            errors.append(f"panel {title!r} has no query")
        for t in p.get("targets", []):
            if t.get("datasource", {}).get("uid") != "${datasource}":
                errors.append(f"panel {title!r} target {t['refId']} does not use ${{datasource}}")
            errors += lint_expr(f"panel {title!r} {t['refId']}", t["expr"], p["type"] in INSTANT_PANELS)
    ordered = sorted(panels, key=lambda p: (p["gridPos"]["y"], p["gridPos"]["x"]))
    first = ordered[0] if ordered else {}
    if first.get("type") != "table":
        errors.append(f"the first panel is {first.get('title')!r}, expected the per-algorithm comparison table")
    exprs = [t["expr"] for t in first.get("targets", [])]
    for what, pattern in COMPARISON.items():
        if not any(re.search(pattern, e) for e in exprs):
            errors.append(f"the comparison table has no {what} column by algorithm")
    annotations = [a for a in d.get("annotations", {}).get("list", []) if a.get("expr")]
    if not any(re.search(r"electd_(elections_won_total|leader)\b", a["expr"]) for a in annotations):
        errors.append("no annotation marks leader changes")
    for a in annotations:
        if a.get("datasource", {}).get("uid") != "${datasource}":
            errors.append(f"annotation {a.get('name')!r} does not use ${{datasource}}")
        errors += lint_expr(f"annotation {a.get('name')!r}", a["expr"], False)
    if datasource_file:
        with open(datasource_file) as f:
            text = f.read()
        if re.search(r"^\s*isDefault:\s*true\b", text, re.M):
            errors.append(f"{datasource_file}: isDefault: true would replace the user's default datasource")
    return panels, names, errors


def jobs(d, panels, names, values, algorithms):
    """(description, kind, argument) for every check."""
    out = []
    for name, v in names.items():
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q.strip())
        if not m:
            out.append((f"variable {name}", "error", f"unsupported variable query {q}"))
            continue
        out.append((f"variable ${name}", "label", (m.group(2), substitute(m.group(1), values))))
    targets = [(p["title"], p["type"], t) for p in panels for t in p["targets"]]
    targets += [(f"annotation {a['name']}", "annotation", dict(a, refId="A"))
                for a in d.get("annotations", {}).get("list", []) if a.get("expr")]
    for title, ptype, t in targets:
        kind = "instant" if ptype in INSTANT_PANELS else "range"
        expr = t["expr"]
        algos = algorithms + [".*"] if re.search(r"\$\{?algorithm\b", expr) else [".*"]
        for a in algos:
            vals = dict(values, algorithm=a)
            label = "All" if a == ".*" else a
            out.append((f"panel {title!r} {t['refId']} [{label}]", kind, substitute(expr, vals)))
    return out


def finite(result, matrix):
    if matrix:
        return [s for s in result if any(math.isfinite(float(v[1])) for v in s["values"])]
    return [s for s in result if math.isfinite(float(s["value"][1]))]


def run_check(url, kind, arg, lookback):
    if kind == "error":
        return False, arg
    if kind == "label":
        label, selector = arg
        vals = prom(url, f"/api/v1/label/{label}/values", {"match[]": selector})
        return bool(vals), f"{len(vals)} values"
    if kind == "range":
        end = time.time()
        data = prom(url, "/api/v1/query_range",
                    {"query": arg, "start": end - lookback, "end": end, "step": max(1, lookback // 300)})
    else:
        data = prom(url, "/api/v1/query", {"query": arg})
    result = data["result"]
    ok = finite(result, data["resultType"] == "matrix")
    if not ok:
        return False, f"{len(result)} series, none finite: {arg}"
    return True, f"{len(ok)} series"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dashboard")
    ap.add_argument("prometheus", nargs="?")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--algorithms", default="")
    ap.add_argument("--rate-interval", default="20s",
                    help="what Grafana makes of $__rate_interval (4 x the scrape interval)")
    ap.add_argument("--lookback", type=int, default=600, help="seconds of the time range shown")
    ap.add_argument("--deadline", type=float, default=90)
    ap.add_argument("--datasource", help="provisioned datasource YAML to check")
    ap.add_argument("--lint-only", action="store_true")
    args = ap.parse_args()
    with open(args.dashboard) as f:
        d = json.load(f)
    panels, names, errors = lint(d, args.datasource)
    for e in errors:
        print(f"FAIL lint: {e}")
    if args.lint_only:
        print(f"{len(panels)} panels, {len(errors)} lint errors")
        return 1 if errors else 0
    if not args.prometheus:
        ap.error("PROM_URL is required unless --lint-only")
    values = dict(kv.split("=", 1) for kv in args.set)
    values.setdefault("node", ".*")
    values["__rate_interval"] = args.rate_interval
    values["__range"] = f"{args.lookback}s"
    algorithms = [a for a in args.algorithms.split(",") if a]
    todo = jobs(d, panels, names, values, algorithms)
    print(f"{len(panels)} panels, {len(todo)} checks (algorithms: {', '.join(algorithms)})")
    end = time.monotonic() + args.deadline
    results = {}
    while True:
        pending = [j for j in todo if not results.get(j[0], (False,))[0]]
        for desc, kind, arg in pending:
            try:
                results[desc] = run_check(args.prometheus, kind, arg, args.lookback)
            except Exception as e:  # report, retry until the deadline
                results[desc] = (False, f"error: {e}")
        if all(results[j[0]][0] for j in todo) or time.monotonic() > end:
            break
        time.sleep(2)
    failed = 0
    for desc, _, _ in todo:
        ok, note = results[desc]
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {desc}: {note}")
    if failed or errors:
        print(f"{failed} checks without data, {len(errors)} lint errors")
        return 1
    print("every panel returned data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
