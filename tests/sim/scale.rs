//! Scale: the crowd effects of many processes started on few cores, reproduced in the
//! simulator (`electd::sim::crowd`, issue 31). The comparison with real processes is
//! in the system stage (`scripts/system-scale.sh`, from the bench's results).

use electd::contract::algorithm::{AlgorithmKind, Timing};
use electd::node::link::LinkConfig;
use electd::sim::crowd::{busy_start, BusyCost, BusyStart, StartOrder};
use std::time::Duration;

const N: usize = 64;

/// The bench's process timing (heartbeat 10 ms, failure_timeout 100 ms, answer 10 ms).
fn timing() -> Timing {
    electd::testkit::procs::ClusterTiming::failover().timing()
}

/// A busy start whose nodes take no time to handle a datagram.
fn run(kind: AlgorithmKind, gap: Duration, order: StartOrder) -> BusyCost {
    busy(kind, gap, Duration::ZERO, order)
}

/// The rank step (`electd::algorithms::rank_step`): T + H, or F/2 if longer.
fn step(t: &Timing) -> Duration {
    electd::algorithms::rank_step(t)
}

/// The step is the documented rule at the README's timing (F/2 = 50 ms, above T + H =
/// 20 ms), at the 256-member row of deploy/README.md (F/2 = 200 ms against 80 ms), and
/// T + H where that is the longer.
#[test]
fn the_rank_step_is_an_answer_window_and_a_heartbeat_or_half_a_failure_timeout() {
    let ms = Duration::from_millis;
    let t = timing();
    assert_eq!(step(&t), t.failure_timeout / 2);
    assert!(step(&t) > t.answer_timeout + t.heartbeat);
    let mut big = t.clone();
    (big.heartbeat, big.failure_timeout, big.answer_timeout) = (ms(40), ms(400), ms(40));
    assert_eq!(step(&big), ms(200));
    let mut slow_answer = t.clone();
    slow_answer.answer_timeout = t.failure_timeout;
    assert_eq!(step(&slow_answer), t.failure_timeout + t.heartbeat);
}

/// Booted highest first, or in id order with less than one rank step between two
/// boots, a Bully cold start costs the top node's announcement alone: its rank wait is
/// the shortest, and its COORDINATOR ends the waits of the others (N − 1 messages).
/// The messages sent to nodes not booted yet are retransmitted until they boot. Before the rank wait lost
/// its ceiling (a failure timeout), every gap above (F + 2H)/N − here 2 ms — cost the
/// all-initiating count (issue 31: 5,117 messages at 64 processes, 14 ms apart).
#[test]
fn a_busy_start_within_the_rank_step_costs_one_announcement() {
    let t = timing();
    for (gap, order) in [
        (step(&t), StartOrder::Descending),
        (t.answer_timeout / 4, StartOrder::Ascending),
        (step(&t) - t.heartbeat / 2, StartOrder::Ascending),
    ] {
        for kind in [AlgorithmKind::Bully, AlgorithmKind::ImprovedBully] {
            let c = run(kind, gap, order);
            assert_eq!(c.leader, Some(N as u32), "{kind} {order:?} {gap:?}: {c:?}");
            let announcement = N as u64 - 1;
            if gap < t.heartbeat {
                assert_eq!(c.election_messages, announcement, "{kind} {gap:?}: {c:?}");
            } else {
                // Node N − 1 listens [H, 2H] and one step: booted one gap before the
                // top, it may still ask it (an ELECTION, its OK) — a few messages, no
                // cascade.
                assert!(
                    (announcement..announcement + 8).contains(&c.election_messages),
                    "{kind} {order:?} {gap:?}: {c:?}"
                );
            }
            if order == StartOrder::Ascending {
                // Nobody sends to a node before it boots (booted highest first, the top
                // node's COORDINATOR goes to nodes not booted yet, retransmitted until
                // they boot or the link gives up).
                assert_eq!(c.delivery_failures, 0, "{kind} {order:?} {gap:?}: {c:?}");
                assert_eq!(c.retransmissions, 0, "{kind} {order:?} {gap:?}: {c:?}");
            }
        }
    }
}

/// The ring family waits its rank too (`ring_common::start`): booted in id order less
/// than a rank step apart, the top member's lap goes first and finds every member up,
/// the others join it instead of sending laps of their own towards successors still
/// booting. The ring algorithm's count is then the literature's one-initiator 2N (an
/// ELECTION lap and a COORDINATOR lap), plus one message for each member whose wait
/// ends before the top's lap reaches it (its own lap is swallowed at the next member
/// above, which stands too): the member j places below the top waits j steps less
/// j gaps plus at least H after the top boots, and the lap reaches it after N − j
/// hops of the simulator's 1 ms. LCR's count is 3N − 1 either way (every member joins
/// with its own candidacy, swallowed by its higher successor after one hop; the top's
/// travels N hops and the ELECTED lap N more). Nothing is retransmitted (before: one
/// retransmission per hop of the first lap, 63 at N = 64).
#[test]
fn a_ring_family_busy_start_in_id_order_is_one_lap_of_the_top_member() {
    let t = timing();
    let gap = step(&t) - t.heartbeat / 2;
    let (step, hop) = (step(&t), Duration::from_millis(1));
    let early = (1..N as u32)
        .filter(|&j| (step - gap) * j + t.heartbeat < hop * (N as u32 - j))
        .count() as u64;
    let n = N as u64;
    for (kind, count) in [
        (AlgorithmKind::Ring, Some(2 * n..=2 * n + early)),
        (AlgorithmKind::Lcr, Some(3 * n - 1..=3 * n - 1)),
        (AlgorithmKind::Hs, None),
    ] {
        let c = run(kind, gap, StartOrder::Ascending);
        assert_eq!(c.leader, Some(N as u32), "{kind}: {c:?}");
        if let Some(count) = count {
            assert!(
                count.contains(&c.election_messages),
                "{kind} {count:?}: {c:?}"
            );
        }
        assert_eq!(c.retransmissions, 0, "{kind}: {c:?}");
        assert_eq!(c.delivery_failures, 0, "{kind}: {c:?}");
    }
}

/// The limit of the rank wait, and the crowd effect the 64 processes showed
/// (docs/bench/ANALYSIS.md, round 8): booted in id order with more than a rank step
/// between two boots, every Bully node's wait runs out before the nodes above it
/// exist, so every node elects: at least the literature's all-initiating count of
/// ELECTION messages (Σ (N − i) = N(N − 1)/2), and the messages to nodes not booted
/// yet are retransmitted until the link gives up.
#[test]
fn a_busy_start_in_id_order_slower_than_the_rank_step_is_all_initiating() {
    let t = timing();
    let gap = step(&t) + t.answer_timeout;
    let c = run(AlgorithmKind::Bully, gap, StartOrder::Ascending);
    let all_initiating = (N * (N - 1) / 2) as u64;
    assert_eq!(c.leader, Some(N as u32), "{c:?}");
    assert!(c.election_messages >= all_initiating, "{c:?}");
    assert!(c.delivery_failures > 0, "{c:?}");
    assert!(c.retransmissions > c.election_messages / 10, "{c:?}");
}

/// The gap between two boots of 64 `electd run` processes spawned by the bench on two
/// cores (0.87 s over 63 gaps, docs/bench/ANALYSIS.md round 8).
const BENCH_GAP: Duration = Duration::from_micros(13_800);

fn busy(kind: AlgorithmKind, gap: Duration, cost: Duration, order: StartOrder) -> BusyCost {
    let timing = timing();
    let link = LinkConfig::for_failure_timeout(timing.failure_timeout);
    busy_start(&BusyStart {
        algorithm: kind,
        nodes: N,
        timing,
        link,
        gap,
        cost,
        order,
        boots: None,
        seed: 1,
    })
    .expect("simulation")
}

/// The bench feeds the simulator the boot times its processes measured (their
/// incarnations, `/status`), in place of an even gap: given explicitly, the boot times
/// of an even gap in either order reproduce that order's busy start, and the two
/// orders differ (the top node first: its announcement alone, N − 1 messages; last:
/// every node elects before it exists, at least N(N − 1)/2).
#[test]
fn measured_boot_times_replace_the_even_gap() {
    let t = timing();
    let gap = step(&t) * 2;
    for order in [StartOrder::Ascending, StartOrder::Descending] {
        let even = run(AlgorithmKind::Bully, gap, order);
        let boots: Vec<Duration> = (0..N as u32)
            .map(|k| match order {
                StartOrder::Ascending => gap * k,
                StartOrder::Descending => gap * (N as u32 - 1 - k),
            })
            .collect();
        let measured = busy_start(&BusyStart {
            algorithm: AlgorithmKind::Bully,
            nodes: N,
            timing: timing(),
            link: LinkConfig::for_failure_timeout(t.failure_timeout),
            // Not used when `boots` is given: a zero gap in id order would cost one
            // announcement, not the all-initiating count.
            gap: Duration::ZERO,
            cost: Duration::ZERO,
            order: StartOrder::Ascending,
            boots: Some(boots),
            seed: 1,
        })
        .expect("simulation");
        assert_eq!(measured, even, "{order:?}");
        let n = N as u64;
        match order {
            StartOrder::Descending => assert_eq!(measured.election_messages, n - 1),
            StartOrder::Ascending => assert!(measured.election_messages >= n * (n - 1) / 2),
        }
    }
    let wrong = busy_start(&BusyStart {
        algorithm: AlgorithmKind::Bully,
        nodes: N,
        timing: timing(),
        link: LinkConfig::for_failure_timeout(t.failure_timeout),
        gap,
        cost: Duration::ZERO,
        order: StartOrder::Ascending,
        boots: Some(vec![Duration::ZERO; N - 1]),
        seed: 1,
    });
    assert!(wrong.is_err(), "{wrong:?}");
}

/// Raft's busy start (issue 31): booted in id order at the bench's gap, or all at
/// once, the top member campaigns first and alone (its cold-start wait is the
/// shortest, every member below waits one step of two heartbeats more), so the cold
/// start costs one pre-vote round and one vote round, 4(N − 1) messages, none of them
/// to a node not booted yet. Before the ranked cold start every node campaigned
/// within `max − min` of its boot towards peers not running yet: booted 14 ms apart,
/// 3,303 messages, 3,805 retransmissions and 1,485 give-ups, and a low node (9) won;
/// 2.5 ms apart, 481 messages and 140 retransmissions.
#[test]
fn a_raft_busy_start_in_id_order_is_one_campaign_of_the_top_member() {
    let one_campaign = 4 * (N as u64 - 1);
    for gap in [Duration::ZERO, Duration::from_micros(2_500), BENCH_GAP] {
        let c = busy(
            AlgorithmKind::Raft,
            gap,
            Duration::ZERO,
            StartOrder::Ascending,
        );
        assert_eq!(c.leader, Some(N as u32), "{gap:?}: {c:?}");
        assert_eq!(c.election_messages, one_campaign, "{gap:?}: {c:?}");
        assert_eq!(
            (c.retransmissions, c.delivery_failures),
            (0, 0),
            "{gap:?}: {c:?}"
        );
    }
}
