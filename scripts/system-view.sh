#!/usr/bin/env bash
# System test: `electd view` in a real browser (Debian's headless Chromium).
#
#  1. `electd view --simulate --nodes 6 --scenario leader-crash` runs every algorithm
#     on the same seed and faults, saves each trace and writes one HTML page;
#  2. Chromium loads the page from disk (no network) scrubbed to the end (#t=end: the
#     page sets its time slider and fires the slider's own input handler), and the DOM
#     it dumps must show, per algorithm:
#       - as many arrows drawn as the trace has messages (send + retransmit records,
#         counted here from the JSON Lines),
#       - the election messages and the leader that `electd simulate` reports for the
#         same algorithm, nodes, scenario and seed;
#     and a click (mouse events at the middle of the first Bully arrow, through the
#     page's own hit test) shows that message's fields;
#  3. a 64-node chaos run of every algorithm (several seconds of virtual time) is
#     rendered and scrubbed 40 times in the browser; the time per frame is printed
#     (a figure, not an assertion: the machine may be loaded);
#  4. screenshots: the 6-node comparison and the README's `electd compare --nodes 2..64`
#     plot, taken at the figure's own size; nothing of the figure may touch the
#     screenshot's border (scripts/png_border.py: the outermost pixels are background).
#     With UPDATE_SCREENSHOTS=1 they replace docs/img/view.png and docs/img/compare.png
#     (the images the README shows).
#
# Needs: chromium (Debian package, installed if missing; as root), python3, cargo.
# Env: ELECTD=path to a built binary (else cargo build), KEEP=1 keeps the work dir.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v chromium >/dev/null; then
    [ "$(id -u)" -eq 0 ] || { echo "system-view: needs chromium; run as root to install it" >&2; exit 2; }
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
for tool in chromium python3; do
    command -v "$tool" >/dev/null || { echo "system-view: $tool is required" >&2; exit 2; }
done
if [ -z "${ELECTD:-}" ]; then
    (cd "$ROOT" && cargo build --quiet --bin electd)
    . "$ROOT/scripts/lib/target.sh"
    ELECTD="$(target_dir)/debug/electd"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/electd-view.XXXXXX")
cleanup() {
    if [ "${KEEP:-0}" = 1 ]; then echo "work dir kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }

# Headless, offline, no profile of the user's, bounded in time.
chrome() {
    timeout 300 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d "$WORK/profile.XXXXXX")" --hide-scrollbars "$@" 2>>"$WORK/chromium.log"
}

NODES=6
SCENARIO=leader-crash
SEED=1
log "view --simulate --nodes $NODES --scenario $SCENARIO --seed $SEED"
"$ELECTD" view --simulate --nodes "$NODES" --scenario "$SCENARIO" --seed "$SEED" \
    --save-traces "$WORK/traces" -o "$WORK/view.html" --no-open
grep -Eq '<(script|link|img)[^>]+(src|href)=' "$WORK/view.html" \
    && { echo "FAIL: the page loads an external resource" >&2; exit 1; }

log "chromium: load the page, scrub to the end, dump the DOM"
chrome --virtual-time-budget=10000 --dump-dom "file://$WORK/view.html#t=end" >"$WORK/dom.html"
log "chromium: click the first bully message (mouse events at its middle), dump the DOM"
chrome --virtual-time-budget=10000 --window-size=1500,1200 --dump-dom \
    "file://$WORK/view.html#t=end&click=bully:0" >"$WORK/dom-click.html"

for f in "$WORK"/traces/*.jsonl; do
    alg=$(basename "$f" .jsonl)
    "$ELECTD" simulate --algorithm "$alg" --nodes "$NODES" --scenario "$SCENARIO" --seed "$SEED" \
        --format json >"$WORK/$alg.report.json"
done

python3 - "$WORK" <<'PY'
import html.parser, json, pathlib, sys
work = pathlib.Path(sys.argv[1])

class Panels(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.panels, self.body = {}, {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if tag == "section" and "panel" in a.get("class", "").split():
            self.panels[a["data-alg"]] = a
        if tag == "aside":
            self.details = a

dom = Panels()
dom.feed((work / "dom.html").read_text())
if dom.body.get("data-ready") != "1":
    sys.exit("FAIL: the page did not finish its script (data-ready missing)")
traces = sorted((work / "traces").glob("*.jsonl"))
if len(traces) != len(dom.panels) or not traces:
    sys.exit(f"FAIL: {len(traces)} traces but {len(dom.panels)} diagrams in the page")
failures = []
for t in traces:
    alg = t.stem
    lines = t.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "electd-trace" and header["version"] == 1, header
    recs = [json.loads(l) for l in lines[1:] if l.strip()]
    messages = sum(1 for r in recs if r["ev"] in ("send", "retransmit"))
    report = json.loads((work / f"{alg}.report.json").read_text())
    p = dom.panels.get(alg)
    if p is None:
        failures.append(f"{alg}: no diagram in the page")
        continue
    drawn = int(p["data-arrows-drawn"])
    shown_leader = p["data-leader"]
    want_leader = str(report["leader"]) if report["leader"] is not None else "none"
    election = int(p["data-election-messages"])
    print(f"  {alg:15} arrows drawn {drawn:5} (trace: {messages:5})  "
          f"election messages {election:4} (simulate: {report['messages']['total']:4})  "
          f"leader at the end {shown_leader} (simulate: {want_leader})")
    if drawn != messages:
        failures.append(f"{alg}: {drawn} arrows drawn, the trace has {messages} messages")
    if election != report["messages"]["total"]:
        failures.append(f"{alg}: page counts {election} election messages, simulate {report['messages']['total']}")
    if shown_leader != want_leader:
        failures.append(f"{alg}: page shows leader {shown_leader} at the end, simulate reports {want_leader}")

# The click: the page shows the fields of the message clicked.
click = Panels()
click.details = {}
click.feed((work / "dom-click.html").read_text())
first = next(json.loads(l) for l in (work / "traces" / "bully.jsonl").read_text().splitlines()[1:]
             if json.loads(l)["ev"] in ("send", "retransmit"))
shown = click.details.get("data-body")
print(f"  click on bully message 0 shows: {shown!r} (trace: {first['body']!r})")
if click.details.get("data-selected") != "bully:0" or shown != first["body"]:
    failures.append(f"click: selected {click.details.get('data-selected')}, shows {shown!r}")
if failures:
    sys.exit("FAIL:\n  " + "\n  ".join(failures))
print("  every diagram matches its trace and the simulator")
PY

log "screenshots"
chrome --virtual-time-budget=10000 --window-size=1500,1580 --screenshot="$WORK/view.png" \
    "file://$WORK/view.html#t=end" >/dev/null
# The README's command; the screenshot is taken at the figure's own size (its <svg>
# width and height), so the whole figure is in it, and no text may touch its border.
"$ELECTD" compare --nodes 2..64 --plot "$WORK/compare.svg" >/dev/null
SVG_SIZE=$(python3 -c '
import re, sys
m = re.search(r"<svg[^>]*\swidth=\"(\d+)\"[^>]*\sheight=\"(\d+)\"", open(sys.argv[1]).read())
print(f"{m.group(1)},{m.group(2)}" if m else "")' "$WORK/compare.svg")
[ -n "$SVG_SIZE" ] || { echo "FAIL: compare.svg names no width and height" >&2; exit 1; }
chrome --virtual-time-budget=5000 --window-size="$SVG_SIZE" --screenshot="$WORK/compare.png" \
    "file://$WORK/compare.svg" >/dev/null
for png in view compare; do
    [ -s "$WORK/$png.png" ] || { echo "FAIL: no $png.png screenshot" >&2; exit 1; }
done
python3 "$ROOT/scripts/png_border.py" "$WORK/compare.png"
if [ "${UPDATE_SCREENSHOTS:-0}" = 1 ]; then
    mkdir -p "$ROOT/docs/img"
    cp "$WORK/view.png" "$WORK/compare.png" "$ROOT/docs/img/"
    log "docs/img/view.png and docs/img/compare.png updated"
fi

log "large trace: 64 nodes x every algorithm, chaos scenario, render and scrub"
"$ELECTD" view --simulate --nodes 64 --scenario chaos --seed 1 -o "$WORK/big.html" --no-open 2>/dev/null
chrome --virtual-time-budget=120000 --window-size=1500,1300 --dump-dom "file://$WORK/big.html#t=end&bench" \
    >"$WORK/big-dom.html"
python3 - "$WORK/big-dom.html" <<'PY'
import re, sys
body = re.search(r"<body([^>]*)>", open(sys.argv[1]).read()).group(1)
a = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body))
if a.get("ready") != "1":
    sys.exit("FAIL: the large page did not finish its script")
print(f"  {a['total-messages']} messages: last full render {a['render-ms']} ms, "
      f"scrub {a['scrub-ms']} ms per frame (mean of 40); load average "
      + open("/proc/loadavg").read().split()[0])
PY
log "system-view: passed"
