#!/usr/bin/env bash
# Compare two builds of electd on a set of seeded simulations: every run's report
# (without its wall-clock fields) and its whole trace (every send, delivery, drop,
# retransmission, timer and leader change in virtual time) must be byte-identical.
#
#   scripts/sim-compare.sh OLD_ELECTD NEW_ELECTD
#
# Build the old binary from the commit before a change (e.g. `git worktree add` of
# it, `cargo build --release`, copy target/release/electd aside) and the new one from
# the change. Used for refactorings of the link and the simulator that must not
# change any outcome. Takes about a minute; needs python3 (to drop wall-clock fields).
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 OLD_ELECTD NEW_ELECTD" >&2
    exit 2
fi
old=$1
new=$2
for b in "$old" "$new"; do
    [ -x "$b" ] || { echo "$b: not an executable" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A report without the figures that depend on the machine (wall time, throughput).
strip() {
    python3 -c 'import json,sys
d = json.load(sys.stdin)
d.pop("wall_ms", None); d.pop("datagrams_per_sec", None)
print(json.dumps(d, sort_keys=True, indent=1))'
}

runs=0
diffs=0
compare() { # name, then the simulate arguments
    local name=$1
    shift
    for side in old new; do
        local bin=$old
        [ "$side" = new ] && bin=$new
        "$bin" simulate "$@" --format json --trace "$work/$side.trace" 2>/dev/null \
            | strip >"$work/$side.json"
    done
    runs=$((runs + 1))
    if ! cmp -s "$work/old.json" "$work/new.json" || ! cmp -s "$work/old.trace" "$work/new.trace"; then
        diffs=$((diffs + 1))
        echo "DIFFERENT: $name (electd simulate $*)"
        diff "$work/old.json" "$work/new.json" | head -5 || true
        diff "$work/old.trace" "$work/new.trace" | head -5 || true
    fi
}

algorithms="bully improved-bully ring lcr hs raft"
for alg in $algorithms; do
    for seed in 1 2 3; do
        compare "$alg startup n=9 seed=$seed" -a "$alg" -n 9 --seed "$seed" --ring-order random
        compare "$alg startup lossy n=12 seed=$seed" -a "$alg" -n 12 --seed "$seed" --loss 0.2 \
            --initiator highest
        compare "$alg leader-crash n=7 seed=$seed" -a "$alg" -n 7 --seed "$seed" --scenario leader-crash
        compare "$alg leader-crash lossy n=16 seed=$seed" -a "$alg" -n 16 --seed "$seed" \
            --scenario leader-crash --loss 0.3 --ring-order descending
        compare "$alg chaos basic n=7 seed=$seed" -a "$alg" -n 7 --seed "$seed" --scenario chaos \
            --faults basic
        compare "$alg chaos full n=7 seed=$seed" -a "$alg" -n 7 --seed "$seed" --scenario chaos \
            --faults full --ring-order random
        compare "$alg chaos full lossy n=24 seed=$seed" -a "$alg" -n 24 --seed "$seed" \
            --scenario chaos --faults full --loss 0.3
        compare "$alg chaos full ids seed=$seed" --ids 40,7,900,3,12 -a "$alg" --seed "$seed" \
            --scenario chaos --faults full
    done
done
# Larger rosters: the burst of a Bully election, and a ring lap.
compare "bully startup n=200" -a bully -n 200
compare "bully startup lossy n=64" -a bully -n 64 --loss 0.1 --seed 7
compare "ring startup n=300 random" -a ring -n 300 --ring-order random --seed 4
compare "raft leader-crash n=50 lossy" -a raft -n 50 --scenario leader-crash --loss 0.1 --seed 5

# The chaos campaign's verdicts (the summary without its timing line).
for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    "$bin" chaos --seeds 40 --threads 1 2>&1 | grep -v ' s$' | grep -v 'runs$' >"$work/$side.chaos"
done
runs=$((runs + 1))
if ! cmp -s "$work/old.chaos" "$work/new.chaos"; then
    diffs=$((diffs + 1))
    echo "DIFFERENT: electd chaos --seeds 40"
    diff "$work/old.chaos" "$work/new.chaos" | head -10 || true
fi

echo "$runs comparisons, $diffs different"
[ "$diffs" -eq 0 ]
