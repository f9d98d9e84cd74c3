//! Weighted health checks ([`Node::set_penalty`]) in the seeded simulator, for every
//! algorithm where the highest-ranked node leads: a leader whose priority drops below
//! a follower's hands over to it (the follower sees the advertised priority and takes
//! over), takes the leadership back once restored (preemption), and a follower whose
//! priority dropped is passed over when the leader fails.

use crate::contract::algorithm::{AlgorithmKind, Options, Timing};
use crate::contract::policy::Policy;
use crate::sim::{Sim, SimConfig};
use crate::NodeId;
use std::time::Duration;

const N: NodeId = 5;

fn started(kind: AlgorithmKind, seed: u64) -> (Sim, Timing) {
    let mut cfg = SimConfig::new(kind, N as usize, seed);
    cfg.options = Options {
        policy: Policy {
            priority: [(5, 150), (4, 140)].into_iter().collect(),
            ..Policy::default()
        },
        ..Options::default()
    };
    let timing = cfg.timing.clone();
    (
        super::sim_start::settled(cfg, &format!("{kind} seed {seed}")),
        timing,
    )
}

fn until_leader(sim: &mut Sim, kind: AlgorithmKind, want: NodeId, max: Duration) -> bool {
    for _ in 0..max.as_millis() {
        sim.run_for(Duration::from_millis(1));
        if sim.agreement(kind) == Some(want) {
            return true;
        }
    }
    false
}

#[test]
fn a_lowered_leader_hands_over_and_takes_back_once_restored() {
    for kind in AlgorithmKind::available()
        .into_iter()
        .filter(|k| k.elects_highest_id())
    {
        for seed in 1..=5 {
            let (mut sim, t) = started(kind, seed);
            assert_eq!(sim.agreement(kind), Some(5), "{kind} seed {seed}");
            // One heartbeat to advertise, then an election (a ring lap at most).
            let bound = t.heartbeat + t.answer_timeout + t.coordinator_timeout + t.failure_timeout;
            sim.set_penalty(5, Some(kind), 20).expect("penalty"); // 150 → 130 < 140
            assert!(
                until_leader(&mut sim, kind, 4, bound),
                "{kind} seed {seed}: 4 does not take over from the lowered 5: {:?}",
                sim.agreement(kind)
            );
            sim.run_for(Duration::from_secs(1));
            assert_eq!(sim.agreement(kind), Some(4), "{kind} seed {seed}: stable");
            sim.set_penalty(5, Some(kind), 0).expect("restored");
            assert!(
                until_leader(&mut sim, kind, 5, bound),
                "{kind} seed {seed}: the restored 5 does not take back"
            );
        }
    }
}

#[test]
fn a_lowered_follower_is_passed_over_when_the_leader_fails() {
    for kind in AlgorithmKind::available()
        .into_iter()
        .filter(|k| k.elects_highest_id())
    {
        for seed in 1..=3 {
            let (mut sim, t) = started(kind, seed);
            sim.set_penalty(4, Some(kind), 50).expect("penalty"); // 140 → 90 < 100
            sim.run_for(Duration::from_millis(200));
            assert_eq!(
                sim.agreement(kind),
                Some(5),
                "{kind} seed {seed}: no change yet"
            );
            sim.crash(5).expect("crash");
            let bound = 2 * t.failure_timeout
                + t.answer_timeout
                + t.coordinator_timeout
                + Duration::from_millis(50);
            assert!(
                until_leader(&mut sim, kind, 3, bound),
                "{kind} seed {seed}: 3 (priority 100) should lead, not 4 (90): {:?}",
                sim.agreement(kind)
            );
            sim.run_for(Duration::from_secs(1));
            assert_eq!(sim.agreement(kind), Some(3), "{kind} seed {seed}: stable");
        }
    }
}
