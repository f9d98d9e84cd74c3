#!/usr/bin/env python3
"""Check electd's alerting rules against the project's conventions (system stage):

  * every alert is named Electd…, has a `severity` label (critical or warning) and
    `summary`, `description` and `runbook_url` annotations;
  * every runbook_url is docs/observability.md#<alert name in lower case>, and that
    anchor exists: a heading `### <alert name>` in docs/observability.md;
  * every alert has a promtool unit test in which it fires and one in which it stays
    quiet (deploy/prometheus/tests/*.yml).

Usage: check_alerts.py RULES.yml DOCS.md TEST.yml...   (needs PyYAML)
Exit status 0 when all hold, 1 otherwise (and prints what is wrong).
"""
import re
import sys

import yaml


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    rules_file, docs_file, tests = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(rules_file) as f:
        rules = yaml.safe_load(f)
    with open(docs_file) as f:
        headings = {m.group(1).strip() for m in re.finditer(r"^#{2,4}\s+(.+)$", f.read(), re.M)}
    fires, quiet = set(), set()
    for t in tests:
        with open(t) as f:
            for case in yaml.safe_load(f).get("tests", []):
                for a in case.get("alert_rule_test", []):
                    (fires if a.get("exp_alerts") else quiet).add(a["alertname"])
    errors = []
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    for r in alerts:
        name = r["alert"]
        if not name.startswith("Electd"):
            errors.append(f"{name}: not named Electd…")
        if r.get("labels", {}).get("severity") not in ("critical", "warning"):
            errors.append(f"{name}: severity is {r.get('labels', {}).get('severity')!r}")
        ann = r.get("annotations", {})
        for key in ("summary", "description", "runbook_url"):
            if not str(ann.get(key, "")).strip():
                errors.append(f"{name}: no {key}")
        want = f"docs/observability.md#{name.lower()}"
        if ann.get("runbook_url") != want:
            errors.append(f"{name}: runbook_url {ann.get('runbook_url')!r}, expected {want!r}")
        if name not in headings:
            errors.append(f"{name}: no heading '### {name}' in {docs_file} (the runbook anchor)")
        if name not in fires:
            errors.append(f"{name}: no promtool test in which it fires")
        if name not in quiet:
            errors.append(f"{name}: no promtool test in which it stays quiet")
    for e in errors:
        print(f"FAIL {e}")
    print(f"{len(alerts)} alerts, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
