//! The failover a follower experiences ([`Event::Failover`], `GroupStats::failovers`),
//! in the simulator: a crashed leader gives every survivor one failover, bounded
//! below by the silence its detector needs; a live higher id taking leadership back
//! is a handover, not a failover.

use crate::contract::algorithm::AlgorithmKind;
use crate::sim::{Sim, SimConfig};
use crate::NodeId;
use std::time::Duration;

const N: NodeId = 5;

fn failovers(sim: &Sim, id: NodeId, kind: AlgorithmKind) -> (u64, Option<Duration>) {
    let s = sim
        .node(id)
        .and_then(|n| n.group_stats(kind))
        .expect("live node runs the group");
    (s.failovers, s.last_failover)
}

fn leader_of(sim: &Sim, kind: AlgorithmKind) -> NodeId {
    sim.agreement(kind).expect("the cluster agrees")
}

#[test]
fn crash_is_one_failover_per_survivor_and_a_returning_leader_is_none() {
    for kind in AlgorithmKind::available() {
        let cfg = SimConfig::new(kind, N as usize, 7);
        let timing = cfg.timing.clone();
        let mut sim = Sim::new(cfg).expect("sim");
        for id in 1..=N {
            sim.start(id, true).expect("start");
        }
        assert!(
            sim.run_until_settled(Duration::from_secs(5)),
            "{kind}: startup"
        );
        sim.run_for(Duration::from_millis(500));
        let old = leader_of(&sim, kind);
        for id in 1..=N {
            assert_eq!(
                failovers(&sim, id, kind).0,
                0,
                "{kind}: startup is no failover"
            );
        }
        sim.crash(old).expect("crash");
        sim.run_for(Duration::from_secs(3));
        let new = leader_of(&sim, kind);
        assert_ne!(new, old, "{kind}");
        // The detector needs `failure_timeout` of silence (Raft: its shortest
        // election timeout); the simulator's clean network delays every datagram 1 ms.
        let silence = if kind.info().uses_failure_detector() {
            timing.failure_timeout
        } else {
            timing.election_timeout_min
        };
        for id in (1..=N).filter(|&i| i != old) {
            let (n, last) = failovers(&sim, id, kind);
            assert_eq!(n, 1, "{kind}: node {id} saw one failover");
            let last = last.expect("a failover has a duration");
            assert!(
                last >= silence.saturating_sub(Duration::from_millis(1)),
                "{kind}: node {id}: {last:?} shorter than the detector's {silence:?}"
            );
        }
        // The old leader returns (a new incarnation) and, where the algorithm elects
        // the highest id, takes leadership back from a live leader: no new failover.
        sim.start(old, true).expect("restart");
        sim.run_for(Duration::from_secs(3));
        leader_of(&sim, kind);
        for id in (1..=N).filter(|&i| i != old) {
            assert_eq!(
                failovers(&sim, id, kind).0,
                1,
                "{kind}: node {id}: a handover between live nodes counted as a failover"
            );
        }
    }
}

/// On a clean network every delivery failure after a leader's crash is addressed to
/// the crashed leader, and the link counts each of them as a failure to a lost peer
/// (`electd_delivery_failures_to_lost_total`): none is charged to a live peer. Bully's
/// survivors always send the dead leader an ELECTION, so there are some to count.
#[test]
fn failures_after_a_crash_are_all_to_the_lost_leader() {
    for kind in AlgorithmKind::available() {
        let mut sim = Sim::new(SimConfig::new(kind, N as usize, 3)).expect("sim");
        for id in 1..=N {
            sim.start(id, true).expect("start");
        }
        assert!(sim.run_until_settled(Duration::from_secs(5)), "{kind}");
        sim.run_for(Duration::from_millis(500));
        let old = leader_of(&sim, kind);
        sim.crash(old).expect("crash");
        sim.run_for(Duration::from_secs(3));
        assert_ne!(leader_of(&sim, kind), old, "{kind}");
        let (mut all, mut lost) = (0, 0);
        for id in (1..=N).filter(|&i| i != old) {
            let s = sim.node(id).expect("survivor").link_stats();
            all += s.delivery_failures;
            lost += s.delivery_failures_to_lost;
        }
        assert_eq!(all, lost, "{kind}: failures to live peers");
        if kind == AlgorithmKind::Bully {
            assert!(lost > 0, "{kind}: the ELECTION to the dead leader fails");
        }
        eprintln!("{kind}: {lost} delivery failures, all to the lost leader");
    }
}

/// An election that chooses the same leader again (the leader calls one) is counted
/// as any other: one win in the cluster, and every node's election time is that
/// election's. Left pending, its start was taken for the next real change's: a crash
/// seconds later read as one election as long as the gap (the audit's ring hand-over
/// of milliseconds recorded as 21.97 s on every node).
#[test]
fn an_election_that_keeps_the_leader_is_counted_and_timed() {
    for kind in AlgorithmKind::available() {
        let cfg = SimConfig::new(kind, N as usize, 11);
        let mut sim = Sim::new(cfg).expect("sim");
        for id in 1..=N {
            sim.start(id, true).expect("start");
        }
        assert!(sim.run_until_settled(Duration::from_secs(5)), "{kind}");
        sim.run_for(Duration::from_millis(500));
        let stats = |sim: &Sim, id: NodeId| {
            let s = sim
                .node(id)
                .and_then(|n| n.group_stats(kind))
                .expect("live");
            (s.elections_won, s.last_election)
        };
        let won = |sim: &Sim, ids: &[NodeId]| ids.iter().map(|&i| stats(sim, i).0).sum::<u64>();
        let all: Vec<NodeId> = (1..=N).collect();
        let before = won(&sim, &all);
        let leader = leader_of(&sim, kind);
        sim.elect(leader).expect("elect");
        assert!(sim.run_until_settled(Duration::from_secs(5)), "{kind}");
        assert_eq!(
            won(&sim, &all),
            before + 1,
            "{kind}: the election the leader called has one winner"
        );
        // Long after, the leader crashes: each survivor's last election is the one
        // that follows, not the gap since the leader's own.
        let gap = Duration::from_secs(20);
        sim.run_for(gap);
        let leader = leader_of(&sim, kind);
        sim.crash(leader).expect("crash");
        sim.run_for(Duration::from_secs(3));
        assert_ne!(leader_of(&sim, kind), leader, "{kind}");
        let timed: Vec<(NodeId, Duration)> = all
            .iter()
            .filter(|&&i| i != leader)
            .filter_map(|&i| stats(&sim, i).1.map(|d| (i, d)))
            .collect();
        assert!(!timed.is_empty(), "{kind}: no survivor timed an election");
        for (id, last) in timed {
            assert!(
                last < gap / 4,
                "{kind}: node {id} timed an election of {last:?}"
            );
        }
    }
}
