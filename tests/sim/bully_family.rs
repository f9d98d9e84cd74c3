//! Bully and Improved Bully against the literature, on the simulator's synchronous
//! network (constant 1 ms delay, nothing lost), ids 1..N.
//!
//! Expected counts are computed here from the published formulas, independently of
//! `electd::contract::formulas`:
//! - Bully, initiator k: 2·Σ_{i=k}^{N}(N−i) + (N−1) = (N−k+1)(N−k) + N − 1
//!   (seed report "P1 Leader Election" §4.2.1, Eq. 1; Garcia-Molina 1982), N² − 1 for k = 1.
//! - Improved Bully, initiator k < N: (N−k) + (N−k) + 1 + (N−1) = 3N − 2k
//!   (seed report §4.2.2, Eq. 2; Soundarabai et al. 2014, Table 1).

use electd::contract::algorithm::AlgorithmKind;
use electd::contract::message::MessageType;
use electd::sim::report::SimReport;
use electd::sim::runner::{simulate, SimulateParams};
use electd::sim::scenario::{Initiator, Scenario};

fn run(kind: AlgorithmKind, n: usize, k: u32, scenario: Scenario) -> SimReport {
    let mut p = SimulateParams::new(kind, n);
    p.initiator = Initiator::Id(k);
    p.scenario = scenario;
    let r = simulate(&p).expect("simulate");
    assert!(
        r.agreed,
        "{kind} N={n} k={k}: nodes did not agree\n{}",
        r.to_table()
    );
    r
}

/// Initiators worth checking for N: all of them for small N, a spread for large N.
fn initiators(n: u32) -> Vec<u32> {
    if n <= 12 {
        (1..=n).collect()
    } else {
        vec![1, 2, n / 2, n - 1, n]
    }
}

#[test]
fn bully_lowest_initiator_sends_n_squared_minus_one() {
    for n in 2..=64u64 {
        let r = run(AlgorithmKind::Bully, n as usize, 1, Scenario::Startup);
        let e = &r.elections[0];
        assert_eq!(e.messages.total, n * n - 1, "N={n}\n{}", r.to_table());
        // By type: every node i < N sends N−i ELECTIONs and gets as many OKs back.
        let elections: u64 = (1..n).map(|i| n - i).sum();
        assert_eq!(e.messages.of(MessageType::Election), elections, "N={n}");
        assert_eq!(e.messages.of(MessageType::Ok), elections, "N={n}");
        assert_eq!(e.messages.of(MessageType::Coordinator), n - 1, "N={n}");
        assert_eq!(e.leader, Some(n as u32));
    }
}

#[test]
fn bully_initiator_k_matches_equation_1() {
    for n in 2..=64u32 {
        for k in initiators(n) {
            let (nn, kk) = (n as u64, k as u64);
            let r = run(AlgorithmKind::Bully, n as usize, k, Scenario::Startup);
            let e = &r.elections[0];
            let expected = (nn - kk + 1) * (nn - kk) + nn - 1;
            assert_eq!(e.messages.total, expected, "N={n} k={k}\n{}", r.to_table());
            let elections = (nn - kk) * (nn - kk + 1) / 2;
            assert_eq!(
                e.messages.of(MessageType::Election),
                elections,
                "N={n} k={k}"
            );
            assert_eq!(e.messages.of(MessageType::Ok), elections, "N={n} k={k}");
            assert_eq!(
                e.messages.of(MessageType::Coordinator),
                nn - 1,
                "N={n} k={k}"
            );
            assert_eq!(e.leader, Some(n));
        }
    }
}

#[test]
fn improved_bully_lowest_initiator_sends_3n_minus_2() {
    for n in 2..=64u64 {
        let r = run(
            AlgorithmKind::ImprovedBully,
            n as usize,
            1,
            Scenario::Startup,
        );
        let e = &r.elections[0];
        assert_eq!(e.messages.total, 3 * n - 2, "N={n}\n{}", r.to_table());
        assert_eq!(e.messages.of(MessageType::Election), n - 1, "N={n}");
        assert_eq!(e.messages.of(MessageType::Ok), n - 1, "N={n}");
        assert_eq!(e.messages.of(MessageType::YouAreCoordinator), 1, "N={n}");
        assert_eq!(e.messages.of(MessageType::Coordinator), n - 1, "N={n}");
        assert_eq!(e.leader, Some(n as u32));
    }
}

#[test]
fn improved_bully_initiator_k_matches_equation_2() {
    for n in 2..=64u32 {
        for k in initiators(n) {
            let (nn, kk) = (n as u64, k as u64);
            let r = run(
                AlgorithmKind::ImprovedBully,
                n as usize,
                k,
                Scenario::Startup,
            );
            let e = &r.elections[0];
            // Eq. 2 holds for k < N; the highest node just announces: N − 1 (seed slides).
            let expected = if k < n { 3 * nn - 2 * kk } else { nn - 1 };
            assert_eq!(e.messages.total, expected, "N={n} k={k}\n{}", r.to_table());
            assert_eq!(e.messages.of(MessageType::Election), nn - kk, "N={n} k={k}");
            assert_eq!(e.messages.of(MessageType::Ok), nn - kk, "N={n} k={k}");
        }
    }
}

/// Leader crash, lowest node detects (seed slides: "started by the lowest: n(n−1)").
/// Counting convention (docs/architecture.md): ELECTION goes to every higher id, the dead top one
/// included; only live nodes answer; COORDINATOR goes to every other roster member.
#[test]
fn bully_leader_crash_lowest_detects() {
    for n in 3..=40u64 {
        let r = run(AlgorithmKind::Bully, n as usize, 1, Scenario::LeaderCrash);
        assert_eq!(r.elections.len(), 2);
        let e = &r.elections[1];
        let elections: u64 = (1..n).map(|i| n - i).sum(); // N(N−1)/2, node N included
        let oks: u64 = (1..n - 1).map(|i| n - 1 - i).sum(); // only 2..N−1 answer
        assert_eq!(e.messages.of(MessageType::Election), elections, "N={n}");
        assert_eq!(e.messages.of(MessageType::Ok), oks, "N={n}");
        assert_eq!(e.messages.of(MessageType::Coordinator), n - 1, "N={n}");
        assert_eq!(e.messages.total, n * (n - 1), "N={n}\n{}", r.to_table());
        assert_eq!(e.leader, Some(n as u32 - 1));
    }
}

/// Improved Bully after a leader crash: the initiator waits T for the dead top node,
/// hands over to N−1, which cross-checks with one ELECTION to the dead node, waits T
/// again and announces: (N−1) + (N−2) + 1 + 1 + (N−1) = 3N − 2.
#[test]
fn improved_bully_leader_crash_lowest_detects() {
    for n in 3..=40u64 {
        let r = run(
            AlgorithmKind::ImprovedBully,
            n as usize,
            1,
            Scenario::LeaderCrash,
        );
        let e = &r.elections[1];
        assert_eq!(e.messages.of(MessageType::Election), n, "N={n}");
        assert_eq!(e.messages.of(MessageType::Ok), n - 2, "N={n}");
        assert_eq!(e.messages.of(MessageType::YouAreCoordinator), 1, "N={n}");
        assert_eq!(e.messages.of(MessageType::Coordinator), n - 1, "N={n}");
        assert_eq!(e.messages.total, 3 * n - 2, "N={n}\n{}", r.to_table());
        assert_eq!(e.leader, Some(n as u32 - 1));
        // Two answer timeouts by design (initiator, then the cross-check).
        let t = electd::contract::algorithm::Timing::default()
            .answer_timeout
            .as_secs_f64()
            * 1e3;
        assert!(e.virtual_ms >= 2.0 * t, "N={n}: {} ms", e.virtual_ms);
    }
}

#[test]
fn simulate_is_deterministic_per_seed() {
    let mut p = SimulateParams::new(AlgorithmKind::Bully, 12);
    p.loss = 0.1;
    p.scenario = Scenario::LeaderCrash;
    p.seed = 42;
    let a = simulate(&p).expect("a");
    let b = simulate(&p).expect("b");
    assert_eq!(a.elections, b.elections);
    p.seed = 43;
    let c = simulate(&p).expect("c");
    // Different seeds draw different losses: the link statistics differ.
    assert_ne!(
        (a.acks, a.retransmissions, a.virtual_ms),
        (c.acks, c.retransmissions, c.virtual_ms)
    );
}

/// A crashed highest node that restarts calls an election and, being the highest,
/// wins at once (Garcia-Molina 1982; seed course notes: "a process that was down …
/// starts a new election"): exactly its N − 1 COORDINATOR messages, accepted by every
/// node although its epoch restarted from zero, and no other node claims leadership.
#[test]
fn restarted_highest_node_takes_over_with_n_minus_1_messages() {
    use electd::sim::scenario::Op;
    use electd::sim::{Sim, SimConfig};
    use std::time::Duration;
    for kind in [AlgorithmKind::Bully, AlgorithmKind::ImprovedBully] {
        for n in 3..=12u32 {
            let mut sim = Sim::new(SimConfig::new(kind, n as usize, 7)).expect("sim");
            let settle = Duration::from_secs(5);
            sim.run_ops(&[
                Op::StartAll,
                Op::Elect(1),
                Op::Settle { max: settle },
                Op::Crash(n),
                Op::DetectLowest,
                Op::Settle { max: settle },
            ])
            .expect("ops");
            assert_eq!(sim.agreement(kind), Some(n - 1), "{kind} N={n}");
            let claims_before = sim.claims.len();
            sim.run_ops(&[
                Op::Measure("restart".into()),
                Op::Restart {
                    node: n,
                    elect: true,
                },
                Op::Settle { max: settle },
            ])
            .expect("ops");
            let e = sim.elections.last().expect("measured");
            assert_eq!(e.leader, Some(n), "{kind} N={n}");
            assert_eq!(
                e.messages.of(MessageType::Coordinator),
                u64::from(n) - 1,
                "{kind} N={n}"
            );
            assert_eq!(
                e.messages.total,
                u64::from(n) - 1,
                "{kind} N={n}: {:?}",
                e.messages
            );
            let claimants: Vec<u32> = sim.claims[claims_before..].iter().map(|c| c.node).collect();
            assert_eq!(
                claimants,
                vec![n],
                "{kind} N={n}: only the restarted node claims"
            );
        }
    }
}
