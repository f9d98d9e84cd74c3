//! What the daemon's beat thread may send for an idle leader ([`Node::beat_only`],
//! [`Node::beat_datagrams`], [`Node::beats_sent`]): exactly the node's own beats, only
//! when a beat is all the node owes, and booked as the node's own.

use super::*;
use crate::contract::algorithm::LeaseOptions;
use crate::contract::policy::{Policy, Preempt};

const N: NodeId = 5;

pub(super) fn nodes(algorithms: &[AlgorithmKind], options: Options) -> Vec<Node> {
    (1..=N)
        .map(|id| {
            Node::new(NodeConfig {
                id,
                ring: (1..=N).collect(),
                algorithms: algorithms.to_vec(),
                timing: Timing::default(),
                options: options.clone(),
                link: LinkConfig::default(),
                incarnation: 1,
                seed: 7,
            })
            .unwrap()
        })
        .collect()
}

/// The default options with `[policy] preempt = false`.
pub(super) fn without_preemption() -> Options {
    Options {
        policy: Policy {
            preempt: Preempt {
                preempt: false,
                delay: Duration::ZERO,
            },
            ..Policy::default()
        },
        ..Options::default()
    }
}

/// Deliver every transmit at `now` until nobody has anything to send (bounded).
pub(super) fn settle(ns: &mut [Node], now: Time) {
    for _ in 0..20 {
        let mut moved = false;
        for i in 0..ns.len() {
            let out: Vec<(NodeId, Datagram)> = ns[i].drain_transmits().collect();
            for (to, d) in out {
                moved = true;
                ns[to as usize - 1].handle_datagram(now, d);
            }
        }
        if !moved {
            return;
        }
    }
    panic!("still talking after 20 rounds");
}

/// Node 5 leading `algorithms` over nodes 1–4, every message delivered and acked.
pub(super) fn settled(algorithms: &[AlgorithmKind], options: Options) -> Vec<Node> {
    let mut ns = nodes(algorithms, options);
    for n in ns.iter_mut() {
        n.start(Time::ZERO, n.id == N);
    }
    // Time moves a heartbeat at a time until every node follows node 5 in every group,
    // everything delivered and acknowledged (bounded: a second of simulated time).
    let hb = Timing::default().heartbeat;
    let mut now = Time::ZERO;
    for _ in 0..100 {
        settle(&mut ns, now);
        let led = algorithms
            .iter()
            .all(|&k| ns.iter().all(|n| n.leader(k) == Some(N)));
        if led {
            return ns;
        }
        now += hb;
        for n in ns.iter_mut() {
            n.handle_timeout(now);
        }
    }
    panic!("node 5 does not lead {algorithms:?} after 100 heartbeats");
}

fn heartbeats_sent(n: &Node, k: AlgorithmKind) -> u64 {
    n.group_stats(k).unwrap().sent[MessageType::Heartbeat as usize]
}

#[test]
fn an_idle_leaders_next_beat_is_all_it_owes_and_is_what_it_would_send() {
    let kinds = [AlgorithmKind::Bully, AlgorithmKind::Lcr];
    let mut ns = settled(&kinds, Options::default());
    let leader = &mut ns[4];
    let (at, other) = leader.beat_only().expect("an idle leader owes only beats");
    assert_eq!(other, None, "nothing else is due");
    assert_eq!(
        leader.poll_timeout(),
        Some(at),
        "the beat is its next deadline"
    );

    // What the thread would send is what the node sends at that instant.
    let planned = leader.beat_datagrams();
    assert_eq!(planned.len(), kinds.len() * (N as usize - 1));
    let before: Vec<u64> = kinds.iter().map(|&k| heartbeats_sent(leader, k)).collect();
    let datagrams_before = leader.link.stats.datagrams_sent;
    leader.handle_timeout(at);
    let sent: Vec<(NodeId, Datagram)> = leader.drain_transmits().collect();
    assert_eq!(planned, sent);
    let after: Vec<u64> = kinds.iter().map(|&k| heartbeats_sent(leader, k)).collect();
    let by_node: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    let by_link = leader.link.stats.datagrams_sent - datagrams_before;

    // Three beats left without the node: booked as its own, and the next is its.
    let (next, _) = leader.beat_only().expect("still idle");
    assert_eq!(next, at + Timing::default().heartbeat);
    // The node's counts after `beats` beats besides the one it sent.
    let booked = |leader: &Node, beats: u64| {
        for (i, &k) in kinds.iter().enumerate() {
            let want = after[i] + beats * by_node[i];
            assert_eq!(heartbeats_sent(leader, k), want, "{k:?}");
        }
        let want = datagrams_before + (1 + beats) * by_link;
        assert_eq!(leader.link.stats.datagrams_sent, want);
    };
    leader.beats_sent(3, 3);
    booked(leader, 3);
    let hb = Timing::default().heartbeat;
    assert_eq!(leader.poll_timeout(), Some(next + hb * 3));
    assert_eq!(leader.beat_only().map(|b| b.0), Some(next + hb * 3));
    // Nothing was sent by the booking itself.
    assert_eq!(leader.drain_transmits().count(), 0);
    leader.beats_sent(0, 0);
    assert_eq!(
        leader.poll_timeout(),
        Some(next + hb * 3),
        "zero beats: no change"
    );
    // Two instants passed, one beat skipped: one counted, the schedule two on.
    leader.beats_sent(2, 1);
    assert_eq!(leader.poll_timeout(), Some(next + hb * 5));
    booked(leader, 4);
}

#[test]
fn a_beat_that_is_not_all_the_node_owes_stays_with_it() {
    let hb = Timing::default().heartbeat;
    // A follower owes no beat.
    let mut ns = settled(&[AlgorithmKind::Bully], Options::default());
    assert_eq!(ns[0].beat_only(), None, "a follower");

    // A hand-over under way: the leader falls silent, and its deadline is the
    // transfer's (without preemption, which would take the leadership back).
    let mut ns = settled(&[AlgorithmKind::Bully], without_preemption());
    let leader = &mut ns[4];
    assert!(leader.beat_only().is_some());
    leader
        .transfer(Time::ZERO, AlgorithmKind::Bully, 4)
        .unwrap();
    assert_eq!(leader.beat_only(), None, "a transfer under way");

    // A reliable message not acknowledged yet: its retransmission is a deadline of
    // its own, and no beat may be handed at or after it.
    let mut ns = nodes(&[AlgorithmKind::Bully], Options::default());
    ns[4].start(Time::ZERO, true);
    let retx = ns[4].poll_timeout().expect("a retransmission or a beat");
    assert!(
        ns[4].drain_transmits().count() > 0,
        "COORDINATOR to every member"
    );
    match ns[4].beat_only() {
        None => {}
        Some((beat, other)) => {
            let other = other.expect("the retransmission is another deadline");
            assert!(beat < other && retx == beat, "{beat:?} {other:?} {retx:?}");
        }
    }

    // Followers that answer each beat (`require_quorum`): the node decides at each
    // beat whether it still has a majority.
    let options = Options {
        lease: LeaseOptions {
            require_quorum: vec![AlgorithmKind::Bully],
            clock_drift: Vec::new(),
        },
        ..Options::default()
    };
    let mut ns = settled(&[AlgorithmKind::Bully], options);
    assert_eq!(ns[4].beat_only(), None, "require_quorum");

    // Raft's heartbeats are its own timer's (it reads its followers' answers to
    // each): never handed over.
    let mut ns = nodes(&[AlgorithmKind::Raft], Options::default());
    for n in ns.iter_mut() {
        n.start(Time::ZERO, true);
    }
    let mut now = Time::ZERO;
    for _ in 0..40 {
        settle(&mut ns, now);
        if ns
            .iter()
            .any(|n| n.leader(AlgorithmKind::Raft) == Some(n.id))
        {
            break;
        }
        now += hb;
        for n in ns.iter_mut() {
            n.handle_timeout(now);
        }
    }
    let l = ns
        .iter_mut()
        .find(|n| n.leader(AlgorithmKind::Raft) == Some(n.id))
        .expect("a Raft leader within 40 periods");
    assert_eq!(l.beat_only(), None, "Raft");
}

#[test]
fn multicast_beats_stay_with_the_node() {
    let mut ns = settled(&[AlgorithmKind::Bully], Options::default());
    ns[4].set_multicast(true);
    assert_eq!(ns[4].beat_only(), None);
}
