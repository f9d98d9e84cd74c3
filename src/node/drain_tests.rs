//! The run-time ineligible switch ([`Node::set_ineligible`]) in the seeded simulator,
//! for every algorithm: a leader made ineligible hands over to the next-ranked node
//! within a bound derived from the timeouts, is not re-elected while ineligible (not
//! even when the new leader crashes), and, eligible again, takes leadership back where
//! the algorithm preempts (the highest id wins) and keeps following where it does not
//! (Raft).

use crate::contract::algorithm::{AlgorithmKind, Timing};
use crate::contract::policy::Ineligible;
use crate::sim::{Sim, SimConfig};
use crate::NodeId;
use std::time::Duration;

const N: NodeId = 5;
const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// Run in 1 ms steps until every live node agrees on a leader that satisfies `ok`, for
/// at most `max`. Returns that leader and how long it took.
fn run_until_agreed(
    sim: &mut Sim,
    kind: AlgorithmKind,
    max: Duration,
    ok: impl Fn(NodeId) -> bool,
) -> Option<(NodeId, Duration)> {
    let start = sim.now();
    let step = Duration::from_millis(1);
    for _ in 0..max.as_millis() {
        sim.run_for(step);
        if let Some(l) = sim.agreement(kind).filter(|&l| ok(l)) {
            return Some((l, sim.now() - start));
        }
    }
    None
}

/// The longest a hand-over may take, from the timeouts: Raft's followers campaign
/// within an election timeout; the others elect within a failure timeout plus an
/// answer and a coordinator window, plus a lap of the ring at the simulator's 1 ms per
/// hop (HS: a few laps).
fn handover_bound(kind: AlgorithmKind, t: &Timing) -> Duration {
    let hops = Duration::from_millis(8 * u64::from(N));
    if kind.info().uses_failure_detector() {
        t.failure_timeout + t.answer_timeout + t.coordinator_timeout + hops
    } else {
        t.election_timeout_max + hops
    }
}

fn started(kind: AlgorithmKind, seed: u64) -> (Sim, Timing) {
    let cfg = SimConfig::new(kind, N as usize, seed);
    let timing = cfg.timing.clone();
    (
        super::sim_start::settled(cfg, &format!("{kind} seed {seed}")),
        timing,
    )
}

#[test]
fn an_ineligible_leader_hands_over_and_is_not_reelected() {
    for kind in AlgorithmKind::available() {
        for seed in SEEDS {
            let (mut sim, timing) = started(kind, seed);
            let old = sim.agreement(kind).expect("a leader");
            let bound = handover_bound(kind, &timing);
            sim.set_ineligible(old, Some(kind), Ineligible::Drained, true)
                .expect("drain");
            let (new, took) =
                run_until_agreed(&mut sim, kind, bound, |l| l != old).unwrap_or_else(|| {
                    panic!("{kind} seed {seed}: no hand-over from {old} within {bound:?}")
                });
            let live: Vec<NodeId> = (1..=N).filter(|&i| i != old).collect();
            if kind.elects_highest_id() {
                assert_eq!(
                    Some(new),
                    live.iter().copied().max(),
                    "{kind} seed {seed}: the next-ranked node leads"
                );
            }
            assert!(took <= bound, "{kind} seed {seed}: {took:?} > {bound:?}");
            assert_eq!(
                sim.node(old).and_then(|n| n.ineligible(kind)),
                Some(vec![Ineligible::Drained])
            );
            // Stays out: a long quiet spell, then the new leader crashes.
            sim.run_for(Duration::from_secs(1));
            assert_eq!(sim.agreement(kind), Some(new), "{kind} seed {seed}: stable");
            sim.crash(new).expect("crash");
            let (next, _) =
                run_until_agreed(&mut sim, kind, timing.failure_timeout + bound, |l| l != new)
                    .unwrap_or_else(|| panic!("{kind} seed {seed}: no leader after {new} crashed"));
            assert_ne!(
                next, old,
                "{kind} seed {seed}: an ineligible node was elected"
            );
            sim.run_for(Duration::from_millis(500));
            assert_eq!(sim.agreement(kind), Some(next), "{kind} seed {seed}");
            // Eligible again: where the highest id leads, it takes over (preempt =
            // true, the default); Raft keeps its leader.
            sim.set_ineligible(old, Some(kind), Ineligible::Drained, false)
                .expect("undrain");
            assert_eq!(sim.node(old).and_then(|n| n.ineligible(kind)), Some(vec![]));
            if kind.elects_highest_id() {
                let back = run_until_agreed(&mut sim, kind, bound, |l| l == old);
                assert!(
                    back.is_some(),
                    "{kind} seed {seed}: {old} did not take over again"
                );
            } else {
                sim.run_for(Duration::from_millis(500));
                assert_eq!(
                    sim.agreement(kind),
                    Some(next),
                    "{kind} seed {seed}: Raft does not preempt"
                );
            }
        }
    }
}

#[test]
fn reasons_add_up_and_only_the_last_cleared_makes_a_node_eligible() {
    let kind = AlgorithmKind::Bully;
    let (mut sim, _) = started(kind, 9);
    let top = sim.agreement(kind).expect("a leader");
    sim.set_ineligible(top, None, Ineligible::Drained, true)
        .expect("drain");
    sim.set_ineligible(top, None, Ineligible::Fault, true)
        .expect("fault");
    sim.run_for(Duration::from_secs(1));
    let other = sim.agreement(kind).expect("agreed");
    assert_ne!(other, top);
    sim.set_ineligible(top, None, Ineligible::Drained, false)
        .expect("undrain");
    sim.run_for(Duration::from_secs(1));
    assert_eq!(
        sim.agreement(kind),
        Some(other),
        "still failing its check: stays out"
    );
    assert_eq!(
        sim.node(top).and_then(|n| n.ineligible(kind)),
        Some(vec![Ineligible::Fault])
    );
    sim.set_ineligible(top, None, Ineligible::Fault, false)
        .expect("healthy");
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.agreement(kind), Some(top));
}

#[test]
fn a_follower_made_ineligible_changes_nothing_until_the_leader_goes() {
    for kind in AlgorithmKind::available() {
        let (mut sim, timing) = started(kind, 3);
        let leader = sim.agreement(kind).expect("a leader");
        let follower = (1..=N).find(|&i| i != leader).expect("a follower");
        let before = sim.totals(kind);
        sim.set_ineligible(follower, Some(kind), Ineligible::Drained, true)
            .expect("drain");
        sim.run_for(timing.failure_timeout * 3);
        assert_eq!(sim.agreement(kind), Some(leader), "{kind}");
        let after = sim.totals(kind);
        let election = |t: &[u64]| -> u64 {
            crate::contract::message::MessageType::ALL
                .iter()
                .filter(|m| !m.is_liveness())
                .map(|m| t[*m as usize])
                .sum()
        };
        assert_eq!(
            election(&after),
            election(&before),
            "{kind}: draining a follower sent election messages"
        );
    }
}
