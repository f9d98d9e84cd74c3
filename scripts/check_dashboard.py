#!/usr/bin/env python3
"""Query every panel expression of an electd Grafana dashboard through a real
Prometheus and require each to return data (used by system-prometheus.sh).

Checks, for dashboards/electd.json:
  * structure: stable uid, a `datasource` template variable, and every panel and
    every target using `${datasource}`;
  * every template variable query (label_values) returns values;
  * every panel target, with the template variables substituted, returns at least one
    series with a finite value -- for each algorithm separately when the expression
    uses $algorithm (the dashboard compares algorithms side by side), and for "All".

Usage: check_dashboard.py DASHBOARD PROM_URL --set job=electd --set cluster=c
       --set node=.* --set window=5m --algorithms bully,raft [--deadline 90]
Retries failing queries until the deadline (scrapes and rule evaluations take time).
Exit status 0 when everything returned data, 1 otherwise (and prints what failed).
"""
import argparse
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request


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


def structure(d):
    errors = []
    if d.get("uid") != "electd-overview":
        errors.append(f"uid is {d.get('uid')!r}, expected the stable 'electd-overview'")
    names = {v["name"]: v for v in d["templating"]["list"]}
    for v in ("datasource", "algorithm", "node"):
        if v not in names:
            errors.append(f"template variable {v} missing")
    if names.get("datasource", {}).get("type") != "datasource":
        errors.append("variable datasource is not of type datasource")
    panels = [p for p in d["panels"] if p["type"] != "row"]
    for p in panels:
        if p.get("datasource", {}).get("uid") != "${datasource}":
            errors.append(f"panel {p['title']!r} does not use ${{datasource}}")
        if not p.get("targets"):
            errors.append(f"panel {p['title']!r} has no query")
        for t in p.get("targets", []):
            if t.get("datasource", {}).get("uid") != "${datasource}":
                errors.append(f"panel {p['title']!r} target {t['refId']} does not use ${{datasource}}")
    return panels, names, errors


def jobs(panels, names, values, algorithms):
    """(description, kind, query) for every check."""
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
    for p in panels:
        for t in p["targets"]:
            expr = t["expr"]
            algos = algorithms + [".*"] if re.search(r"\$\{?algorithm\b", expr) else [".*"]
            for a in algos:
                vals = dict(values, algorithm=a)
                label = "All" if a == ".*" else a
                out.append((f"panel {p['title']!r} {t['refId']} [{label}]", "query", substitute(expr, vals)))
    return out


def run_check(url, kind, arg):
    if kind == "error":
        return False, arg
    if kind == "label":
        label, selector = arg
        vals = prom(url, f"/api/v1/label/{label}/values", {"match[]": selector})
        return bool(vals), f"{len(vals)} values"
    data = prom(url, "/api/v1/query", {"query": arg})
    result = data["result"]
    if data["resultType"] == "vector":
        finite = [s for s in result if math.isfinite(float(s["value"][1]))]
    else:
        finite = result
    if not finite:
        return False, f"{len(result)} series, none finite: {arg}"
    return True, f"{len(finite)} series"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dashboard")
    ap.add_argument("prometheus")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--algorithms", required=True)
    ap.add_argument("--deadline", type=float, default=90)
    args = ap.parse_args()
    with open(args.dashboard) as f:
        d = json.load(f)
    panels, names, errors = structure(d)
    for e in errors:
        print(f"FAIL structure: {e}")
    values = dict(kv.split("=", 1) for kv in args.set)
    algorithms = [a for a in args.algorithms.split(",") if a]
    todo = jobs(panels, names, values, algorithms)
    print(f"{len(panels)} panels, {len(todo)} checks (algorithms: {', '.join(algorithms)})")
    end = time.monotonic() + args.deadline
    results = {}
    while True:
        pending = [j for j in todo if not results.get(j[0], (False,))[0]]
        for desc, kind, arg in pending:
            try:
                results[desc] = run_check(args.prometheus, kind, arg)
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
        print(f"{failed} checks without data, {len(errors)} structure errors")
        return 1
    print("every panel returned data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
