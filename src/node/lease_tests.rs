//! The quorum lease ([`Node::lease`]) in the seeded simulator: who holds one, how long
//! it is, and that a leader cut off from the majority sees its lease run out before
//! the majority side has elected another leader.

use super::Node;
use crate::contract::algorithm::{AlgorithmKind, Timing};
use crate::sim::{Sim, SimConfig};
use crate::NodeId;
use std::time::Duration;

const N: NodeId = 5;

/// The lease's base timeout and the default drift bound (a tenth of it).
fn base(kind: AlgorithmKind, t: &Timing) -> Duration {
    if kind.info().uses_failure_detector() {
        t.failure_timeout
    } else {
        t.election_timeout_min
    }
}

fn sim(kind: AlgorithmKind, require_quorum: bool, seed: u64) -> Sim {
    let mut cfg = SimConfig::new(kind, N as usize, seed);
    if require_quorum {
        cfg.options.lease.require_quorum = vec![kind];
    }
    super::sim_start::settled(cfg, &format!("{kind}"))
}

fn node(sim: &Sim, id: NodeId) -> &Node {
    sim.node(id).expect("live node")
}

#[test]
fn a_lease_is_kept_only_where_configured_and_held_only_by_the_leader() {
    for kind in AlgorithmKind::available() {
        let quorum = !kind.info().leads_by_majority();
        let plain = sim(kind, false, 3);
        let leader = plain.agreement(kind).expect("agreed");
        let want_lease = kind.info().leads_by_majority();
        assert_eq!(
            node(&plain, leader).lease(kind, plain.now()).is_some(),
            want_lease,
            "{kind}: without require_quorum only Raft (check-quorum) keeps a lease"
        );
        if !quorum {
            continue;
        }
        let s = sim(kind, true, 3);
        let leader = s.agreement(kind).expect("agreed");
        let timing = s.config().timing.clone();
        let max = base(kind, &timing) - base(kind, &timing) / 10;
        let left = node(&s, leader).lease(kind, s.now()).expect("kept");
        // A majority answered within the last heartbeat or two: most of the lease left.
        assert!(
            left > Duration::ZERO && left <= max,
            "{kind}: {left:?} of {max:?}"
        );
        assert!(
            left + 3 * timing.heartbeat >= max,
            "{kind}: {left:?}: the answers are older than a few heartbeats"
        );
        for id in (1..=N).filter(|&i| i != leader) {
            assert_eq!(
                node(&s, id).lease(kind, s.now()),
                Some(Duration::ZERO),
                "{kind}: follower {id}"
            );
        }
    }
}

#[test]
fn raft_keeps_its_lease_from_check_quorum_too() {
    let s = sim(AlgorithmKind::Raft, false, 5);
    let leader = s.agreement(AlgorithmKind::Raft).expect("agreed");
    let t = s.config().timing.clone();
    let left = node(&s, leader)
        .lease(AlgorithmKind::Raft, s.now())
        .expect("kept");
    let max = t.election_timeout_min - t.election_timeout_min / 10;
    assert!(left > Duration::ZERO && left <= max, "{left:?} of {max:?}");
}

/// The leader and one follower are cut off from the three others: the leader's lease
/// runs out before any node of the majority side leads.
#[test]
fn a_partitioned_leader_loses_its_lease_before_the_majority_elects() {
    for kind in AlgorithmKind::available() {
        for seed in 1..=5 {
            let mut s = sim(kind, !kind.info().leads_by_majority(), seed);
            let old = s.agreement(kind).expect("agreed");
            let held = node(&s, old).lease(kind, s.now()).expect("kept");
            assert!(
                held > Duration::ZERO,
                "{kind} seed {seed}: no lease before the cut"
            );
            let buddy = (1..=N).find(|&i| i != old).expect("a follower");
            let majority: Vec<NodeId> = (1..=N).filter(|&i| i != old && i != buddy).collect();
            s.cuts_mut()
                .partition(&[vec![old, buddy], majority.clone()]);
            let start = s.now();
            let mut expired = None;
            let mut elected = None;
            for _ in 0..5000 {
                s.run_for(Duration::from_millis(1));
                if expired.is_none() && node(&s, old).lease(kind, s.now()) == Some(Duration::ZERO) {
                    expired = Some(s.now() - start);
                }
                if majority
                    .iter()
                    .any(|&m| node(&s, m).leader(kind) == Some(m))
                {
                    elected = Some(s.now() - start);
                    break;
                }
            }
            let elected = elected.unwrap_or_else(|| panic!("{kind} seed {seed}: no election"));
            let expired = expired.unwrap_or_else(|| panic!("{kind} seed {seed}: lease held"));
            assert!(
                expired < elected,
                "{kind} seed {seed}: lease ran out at {expired:?}, majority elected at {elected:?}"
            );
        }
    }
}

/// `require_quorum` on the failure detector's algorithms: the leader cut off alone
/// stops naming itself within two failure timeouts and does not re-elect itself while
/// cut off; the majority elects; healed, the cluster agrees on one leader again.
#[test]
fn a_leader_without_a_quorum_steps_down_and_stays_down_until_healed() {
    use crate::contract::policy::Ineligible;
    for kind in AlgorithmKind::available()
        .into_iter()
        .filter(|&k| !k.info().leads_by_majority())
    {
        for seed in 1..=5 {
            let mut s = sim(kind, true, seed);
            let t = s.config().timing.clone();
            let old = s.agreement(kind).expect("agreed");
            let rest: Vec<NodeId> = (1..=N).filter(|&i| i != old).collect();
            s.cuts_mut().partition(&[vec![old], rest.clone()]);
            let start = s.now();
            let mut stepped_down = None;
            // Two seconds cut off, sampled every millisecond.
            for _ in 0..2000 {
                s.run_for(Duration::from_millis(1));
                let leads = node(&s, old).leader(kind) == Some(old);
                match stepped_down {
                    None if !leads => stepped_down = Some(s.now() - start),
                    Some(at) => assert!(
                        !leads,
                        "{kind} seed {seed}: {old} led again at {:?} after stepping down at {at:?}",
                        s.now() - start
                    ),
                    None => {}
                }
            }
            let at = stepped_down
                .unwrap_or_else(|| panic!("{kind} seed {seed}: {old} never stepped down"));
            assert!(
                at <= 2 * t.failure_timeout + t.heartbeat,
                "{kind} seed {seed}: stepped down after {at:?}"
            );
            assert_eq!(
                node(&s, old).ineligible(kind),
                Some(vec![Ineligible::NoQuorum]),
                "{kind} seed {seed}"
            );
            let majority_leader = rest
                .iter()
                .find(|&&m| node(&s, m).leader(kind) == Some(m))
                .copied();
            assert!(
                majority_leader.is_some(),
                "{kind} seed {seed}: the majority has no leader"
            );
            s.cuts_mut().heal();
            // Healed: the cluster agrees on one leader and the old leader, following
            // it for a failure timeout, may stand again (within three seconds).
            let mut healed = false;
            for _ in 0..3000 {
                s.run_for(Duration::from_millis(1));
                if s.agreement(kind).is_some() && node(&s, old).ineligible(kind) == Some(vec![]) {
                    healed = true;
                    break;
                }
            }
            assert!(
                healed,
                "{kind} seed {seed}: after healing: agreed on {:?}, {old}: {:?}",
                s.agreement(kind),
                node(&s, old).group_status(kind)
            );
        }
    }
}

/// `require_quorum`, a 3+2 partition with the leader on the side of two (the keepalived
/// bench, docs/keepalived.md): the two take their turns at most once each, then the
/// minority stays without a leader. Before, the follower of the second leader became
/// eligible again on the very heartbeat at which that leader stepped down (it had
/// followed it for a failure timeout, and the leader steps down once it has led that
/// long), so the two took turns every failure timeout for the whole partition — each
/// turn a `leader` hook run adding the virtual IP beside the majority's.
#[test]
fn a_minority_of_two_stops_taking_turns() {
    for kind in AlgorithmKind::available()
        .into_iter()
        .filter(|&k| !k.info().leads_by_majority())
    {
        for seed in 1..=5 {
            let mut s = sim(kind, true, seed);
            let t = s.config().timing.clone();
            let old = s.agreement(kind).expect("agreed");
            let buddy = (1..=N).rev().find(|&i| i != old).expect("a follower");
            let minority = [old, buddy];
            let majority: Vec<NodeId> = (1..=N).filter(|i| !minority.contains(i)).collect();
            s.cuts_mut().partition(&[minority.to_vec(), majority]);
            // Each of the two may lead once: a turn is at most two failure timeouts
            // and a heartbeat (see the test above), plus an election (the ring
            // family's passes the cut members by retransmission); then a second
            // with no leader on that side.
            let settle = 3 * (2 * t.failure_timeout + t.heartbeat) + Duration::from_secs(1);
            let start = s.now();
            let mut turns = 0;
            let mut leading = None;
            let mut last = None;
            while s.now() - start < settle + Duration::from_secs(1) {
                s.run_for(Duration::from_millis(1));
                let now = minority
                    .iter()
                    .copied()
                    .find(|&m| node(&s, m).leader(kind) == Some(m));
                if now.is_some() && now != leading {
                    turns += 1;
                }
                if now.is_some() {
                    last = Some(s.now() - start);
                }
                leading = now;
            }
            assert!(
                turns <= 2 && last.is_none_or(|l| l <= settle),
                "{kind} seed {seed}: the minority {minority:?} took {turns} turns at leading, \
                 the last at {last:?} (settle {settle:?})"
            );
        }
    }
}

/// Issue 28, seen in the nemesis run: after a partition [4, 5] | [1, 2, 3] healed, the
/// majority's leader followed the minority's stepped-down leader and the whole group
/// waited a failure timeout for nobody. On the minority side 4 and 5 had taken turns
/// leading and stepping down for want of a quorum, which lifted their term above the
/// majority's. A node holding a token above a claim it hears answers with that token;
/// it named the token's leader even when that leadership had ended (node 5 had
/// stepped down), and the majority's leader, hearing a higher id named, deferred to
/// it. Now a node names the held token's leader only while it follows it or leads;
/// otherwise it answers with the term alone (leader 0), and the claimant takes a term
/// above it and leads on (docs/wire.md, HEARTBEAT_ACK).
#[test]
fn a_stepped_down_leader_answers_a_lower_claim_with_its_term_alone() {
    use crate::contract::message::Message;
    use crate::contract::policy::Ineligible;
    use crate::node::{Datagram, NodeConfig};
    let kind = AlgorithmKind::Bully;
    let mut options = crate::contract::algorithm::Options::default();
    options.lease.require_quorum = vec![kind];
    let mut five = Node::new(NodeConfig {
        id: N,
        ring: (1..=N).collect(),
        algorithms: vec![kind],
        timing: Timing::default(),
        options,
        link: crate::node::link::LinkConfig::default(),
        incarnation: 1,
        seed: 7,
    })
    .expect("node");
    five.start(Duration::ZERO, true);
    assert_eq!(five.leader(kind), Some(N), "the highest id wins at once");
    let term = five.group_status(kind).expect("group").term;
    let _ = five.drain_transmits().count();
    // A claim below the held token: node 3 leading the same term (a lower id).
    let mut at = Duration::from_millis(1);
    let answer_to_claim = |five: &mut Node, at: Duration, seq: u64| {
        five.handle_datagram(
            at,
            Datagram {
                from: 3,
                incarnation: 1,
                seq,
                ack: 0,
                group: Some(kind),
                body: Some(Message::Heartbeat { term, leader: 3 }),
            },
        );
        five.drain_transmits()
            .filter_map(|(to, d)| match d.body {
                Some(Message::HeartbeatAck { term, leader }) if to == 3 => Some((term, leader)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // (Leading, it answers a lower claimant with its COORDINATOR instead.)
    let _ = answer_to_claim(&mut five, at, 1);
    // Stepped down for want of a quorum: the term alone.
    at += Timing::default().failure_timeout;
    five.set_ineligible(at, Some(kind), Ineligible::NoQuorum, true);
    assert_eq!(five.leader(kind), None, "stepped down");
    at += Timing::default().failure_timeout * 2;
    let answers = answer_to_claim(&mut five, at, 2);
    assert!(
        !answers.is_empty(),
        "a claim below the held token is answered"
    );
    assert!(
        answers.iter().all(|&(t, l)| t == term && l == 0),
        "a leadership that ended is not named: {answers:?}"
    );
}

/// The answers a leader may read a heartbeat late ([`Node::quiet_acks`]): every other
/// member's in Raft and in a `require_quorum` group, at the leadership's term, none on
/// a follower and none in a group that answers nothing; and none where the lease would
/// not outlast the wait (`base − clock_drift` of three heartbeats or less).
#[test]
fn a_leader_reads_answers_late_only_where_its_lease_outlasts_the_wait() {
    for (kind, require_quorum) in [
        (AlgorithmKind::Raft, false),
        (AlgorithmKind::Bully, true),
        (AlgorithmKind::Bully, false),
    ] {
        let s = sim(kind, require_quorum, 7);
        let leader = s.agreement(kind).expect("agreed");
        let quiet: Vec<_> = node(&s, leader).quiet_acks().collect();
        let answers = require_quorum || kind == AlgorithmKind::Raft;
        let term = node(&s, leader).leadership(kind).expect("a group").1;
        let named = if kind == AlgorithmKind::Raft {
            0
        } else {
            leader
        };
        let want: Vec<_> = if answers {
            (1..=N)
                .filter(|&m| m != leader)
                .map(|m| (kind, m, term, named))
                .collect()
        } else {
            vec![]
        };
        assert_eq!(quiet, want, "{kind}, require_quorum {require_quorum}");
        for id in (1..=N).filter(|&i| i != leader) {
            assert_eq!(
                node(&s, id).quiet_acks().count(),
                0,
                "{kind}: follower {id}"
            );
        }
        if !answers {
            continue;
        }
        // The same cluster with a drift bound that leaves three heartbeats of lease,
        // and just over three.
        let t = s.config().timing.clone();
        let b = base(kind, &t);
        let over = Duration::from_micros(1);
        for (drift, late) in [
            (b - 3 * t.heartbeat, false),
            (b - 3 * t.heartbeat - over, true),
        ] {
            let mut cfg = SimConfig::new(kind, N as usize, 7);
            if require_quorum {
                cfg.options.lease.require_quorum = vec![kind];
            }
            cfg.options.lease.clock_drift = vec![(kind, drift)];
            let s = super::sim_start::settled(cfg, &format!("{kind}"));
            let leader = s.agreement(kind).expect("agreed");
            assert_eq!(
                node(&s, leader).quiet_acks().count() > 0,
                late,
                "{kind}: base {b:?}, drift {drift:?}, heartbeat {:?}",
                t.heartbeat
            );
        }
    }
}

/// Seen in the keepalived bench (round 20): after a 3+2 partition with the leader on
/// the side of two heals, the returning best-ranked node takes the group back — and,
/// a failure timeout later, "lost" its own leadership and took it again in a new term:
/// a needless term and, with `[[vip]]`, the address deleted and added again. It stood
/// again on a heartbeat of the majority's leader (its `no_quorum` step-down lifted),
/// won at once, and the rest of that heartbeat's handling armed the failure detector
/// for the leader it no longer followed. Once it leads after the heal it must lead on
/// in that term.
#[test]
fn the_leader_back_from_a_partition_keeps_the_term_it_retakes() {
    for kind in [AlgorithmKind::Bully, AlgorithmKind::ImprovedBully] {
        for seed in 1..=5 {
            let mut s = sim(kind, true, seed);
            let t = s.config().timing.clone();
            assert_eq!(s.agreement(kind), Some(N), "{kind}: the highest id leads");
            s.cuts_mut()
                .partition(&[vec![N, N - 1], (1..N - 1).collect()]);
            s.run_for(Duration::from_secs(1));
            s.cuts_mut().heal();
            let mut terms = Vec::new();
            for _ in 0..2000 {
                s.run_for(Duration::from_millis(1));
                let five = node(&s, N);
                if five.leader(kind) == Some(N) {
                    let term = five.group_status(kind).expect("group").term;
                    if terms.last() != Some(&term) {
                        terms.push(term);
                    }
                }
            }
            assert_eq!(
                terms.len(),
                1,
                "{kind} seed {seed}: node {N} led in terms {terms:?} after the heal \
                 (failure timeout {:?})",
                t.failure_timeout
            );
        }
    }
}

/// `require_quorum` with `preempt = false`: a leader stopped (SIGSTOP) long enough for
/// the others to elect another, then resumed, must not take the leadership back while
/// the new leader's lease holds. As the daemon does, the resumed node reads what waited
/// in its socket before its timers fire; it took the answers and heartbeats naming the
/// new leader for claims against the leadership it still believed it held, and took a
/// term above by rank within milliseconds (the audit's two nodes answering 200 with a
/// lease for 345 ms, and two `exec` copies for 500 ms). It now steps down first
/// (`no_quorum`, its quorum having lapsed) and follows: with preemption off, for good.
#[test]
fn a_resumed_stale_leader_does_not_take_back_a_leased_leadership() {
    use super::beat_only_tests::{settle, settled, without_preemption};
    use super::{Datagram, Time};
    for kind in AlgorithmKind::available()
        .into_iter()
        .filter(|&k| !k.info().leads_by_majority())
    {
        let mut options = without_preemption();
        options.lease.require_quorum = vec![kind];
        // Node 5 leads; then it stops: what is sent to it waits in its socket.
        let mut ns = settled(&[kind], options);
        let t = Timing::default();
        let (stopped, others) = ns.split_last_mut().expect("five nodes");
        let mut waiting: Vec<Datagram> = Vec::new();
        let mut now = Time::ZERO + Duration::from_secs(1);
        let mut new = None;
        for _ in 0..400 {
            now += Duration::from_millis(1);
            for n in others.iter_mut() {
                n.handle_timeout(now);
            }
            for _ in 0..20 {
                let mut moved = false;
                for i in 0..others.len() {
                    let out: Vec<(NodeId, Datagram)> = others[i].drain_transmits().collect();
                    for (to, d) in out {
                        moved = true;
                        if to == N {
                            waiting.push(d);
                        } else {
                            others[to as usize - 1].handle_datagram(now, d);
                        }
                    }
                }
                if !moved {
                    break;
                }
            }
            new = (1..N).find(|&i| {
                others[i as usize - 1].leader(kind) == Some(i)
                    && others
                        .iter()
                        .all(|n| n.leader(kind) == Some(i) && n.lease(kind, now).is_some())
            });
            if new.is_some() && now > Time::ZERO + Duration::from_secs(1) + 3 * t.failure_timeout {
                break;
            }
        }
        let new = new.unwrap_or_else(|| panic!("{kind}: the others elected no leader"));
        let held = others[new as usize - 1]
            .lease(kind, now)
            .expect("keeps a lease");
        assert!(!held.is_zero(), "{kind}: the new leader holds its lease");
        let term = others[new as usize - 1]
            .group_status(kind)
            .expect("runs")
            .term;
        // Resumed: the waiting datagrams first, then its timers.
        for d in waiting.drain(..) {
            stopped.handle_datagram(now, d);
        }
        stopped.handle_timeout(now);
        settle(&mut ns, now);
        for later in 1..=10u32 {
            let at = now + t.heartbeat * later;
            for n in ns.iter_mut() {
                n.handle_timeout(at);
            }
            settle(&mut ns, at);
            for n in &ns {
                assert_ne!(
                    n.leader(kind),
                    Some(N),
                    "{kind}: node {} follows the resumed node 5 ({:?})",
                    n.id,
                    n.group_status(kind)
                );
            }
        }
        let s = ns[new as usize - 1].group_status(kind).expect("runs");
        assert_eq!(
            (s.leader, s.term),
            (Some(new), term),
            "{kind}: the leadership moved"
        );
    }
}
