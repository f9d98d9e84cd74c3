//! Multicast sends, broadcast-sequence reliability and unreachable reports of [`Node`]
//! (sans-IO, no socket).

use super::link::BROADCAST_SEQ;
use super::*;

fn node(id: NodeId, n: u32, multicast: bool) -> Node {
    let mut node = Node::new(NodeConfig {
        id,
        ring: (1..=n).collect(),
        algorithms: vec![AlgorithmKind::Bully],
        timing: Timing::default(),
        options: Options::default(),
        link: LinkConfig::default(),
        incarnation: 1,
        seed: 7,
    })
    .unwrap();
    node.set_multicast(multicast);
    node
}

fn is_heartbeat(d: &Datagram) -> bool {
    matches!(d.body, Some(Message::Heartbeat { .. }))
}

fn is_coordinator(d: &Datagram) -> bool {
    matches!(d.body, Some(Message::Coordinator { .. }))
}

fn ack(from: NodeId, seq: u64) -> Datagram {
    Datagram {
        from,
        incarnation: 1,
        seq: 0,
        ack: seq,
        group: None,
        body: None,
    }
}

/// What a node put on the wire: unicast (to, datagram) and multicast datagrams.
type Wire = (Vec<(NodeId, Datagram)>, Vec<Datagram>);

fn drain(n: &mut Node) -> Wire {
    (
        n.drain_transmits().collect(),
        n.drain_multicasts().collect(),
    )
}

/// The highest node wins at once (Bully) and announces COORDINATOR to all others.
fn started_leader(n: u32, multicast: bool) -> (Node, Wire) {
    let mut leader = node(n, n, multicast);
    leader.start(Duration::ZERO, true);
    assert_eq!(leader.leader(AlgorithmKind::Bully), Some(n));
    let wire = drain(&mut leader);
    (leader, wire)
}

/// The leader after everybody acked its COORDINATOR and its first heartbeat went out.
fn leader_after_one_heartbeat(n: u32, multicast: bool) -> (Node, Wire) {
    let (mut leader, (unicast, multi)) = started_leader(n, multicast);
    for (to, d) in &unicast {
        leader.handle_datagram(Duration::ZERO, ack(*to, d.seq));
    }
    for d in &multi {
        for to in 1..n {
            leader.handle_datagram(Duration::ZERO, ack(to, d.seq));
        }
    }
    assert_eq!(leader.in_flight(), 0, "every COORDINATOR acked");
    let t = leader.poll_timeout().expect("the heartbeat timer is armed");
    assert_eq!(t, Timing::default().heartbeat);
    leader.handle_timeout(t);
    let wire = drain(&mut leader);
    (leader, wire)
}

#[test]
fn broadcasts_are_one_datagram_each_and_counted_once_per_recipient() {
    for n in [2u32, 5, 9] {
        let others = u64::from(n - 1);
        let (on, (unicast, multi)) = leader_after_one_heartbeat(n, true);
        assert!(unicast.is_empty(), "nothing by unicast: {unicast:?}");
        assert_eq!(
            multi.len(),
            1,
            "one heartbeat datagram for the whole roster"
        );
        assert!(is_heartbeat(&multi[0]));
        assert_eq!(
            (multi[0].seq, multi[0].from),
            (0, n),
            "unreliable, from the leader"
        );
        let stats = on.group_stats(AlgorithmKind::Bully).unwrap();
        // Logical counts are per recipient (docs/architecture.md), with multicast or not.
        assert_eq!(stats.sent_of(MessageType::Heartbeat), others);
        assert_eq!(stats.sent_of(MessageType::Coordinator), others);

        let (off, (unicast_off, multi_off)) = leader_after_one_heartbeat(n, false);
        assert!(multi_off.is_empty());
        assert_eq!(
            unicast_off.iter().filter(|(_, d)| is_heartbeat(d)).count() as u64,
            others
        );
        let off_stats = off.group_stats(AlgorithmKind::Bully).unwrap();
        assert_eq!(off_stats.sent_of(MessageType::Heartbeat), others);
        assert_eq!(off_stats.sent_of(MessageType::Coordinator), others);
        // Datagrams: one COORDINATOR and one heartbeat, against N-1 of each.
        assert_eq!(on.link_stats().datagrams_sent, 2);
        assert_eq!(off.link_stats().datagrams_sent, 2 * others);
    }
}

#[test]
fn a_reliable_broadcast_carries_a_broadcast_sequence_acked_per_recipient() {
    let (mut leader, (unicast, multi)) = started_leader(4, true);
    assert!(unicast.is_empty());
    assert_eq!(multi.len(), 1);
    let c = &multi[0];
    assert!(is_coordinator(c));
    assert_ne!(c.seq & BROADCAST_SEQ, 0, "a broadcast sequence");
    assert_eq!(leader.in_flight(), 3, "one pending entry per recipient");

    // Receivers: deliver once, ack by unicast with the broadcast sequence; a second
    // copy (the unicast retransmission of a lost ack) is acked again, not delivered.
    for id in 1..=3u32 {
        let mut r = node(id, 4, true);
        r.start(Duration::ZERO, false);
        let _ = drain(&mut r);
        for _copy in 0..2 {
            r.handle_datagram(Duration::ZERO, c.clone());
            let (acks, _) = drain(&mut r);
            assert_eq!(acks.len(), 1);
            assert_eq!((acks[0].0, acks[0].1.ack, acks[0].1.seq), (4, c.seq, 0));
        }
        let stats = r.group_stats(AlgorithmKind::Bully).unwrap();
        assert_eq!(
            stats.received_of(MessageType::Coordinator),
            1,
            "delivered once"
        );
        assert_eq!(r.leader(AlgorithmKind::Bully), Some(4));
        // The broadcast window does not swallow a unicast sequence of the same number.
        let mut uni = c.clone();
        uni.seq = c.seq & !BROADCAST_SEQ;
        r.handle_datagram(Duration::ZERO, uni);
        assert_eq!(
            r.group_stats(AlgorithmKind::Bully)
                .unwrap()
                .received_of(MessageType::Coordinator),
            2
        );
    }

    // Nodes 1 and 2 ack; node 3 never does: only node 3 gets retransmissions, by
    // unicast, of the same datagram; then it is declared unreachable.
    leader.handle_datagram(Duration::ZERO, ack(1, c.seq));
    leader.handle_datagram(Duration::ZERO, ack(2, c.seq));
    assert_eq!(leader.in_flight(), 1);
    let cfg = LinkConfig::default();
    let mut now = Duration::ZERO;
    let mut retransmitted = 0;
    while now <= cfg.give_up_after() {
        now += Duration::from_millis(1);
        leader.handle_timeout(now);
        let (unicast, _) = drain(&mut leader);
        for (to, d) in unicast.iter().filter(|(_, d)| is_coordinator(d)) {
            assert_eq!(
                (*to, d.seq),
                (3, c.seq),
                "same datagram, to the silent peer only"
            );
            retransmitted += 1;
        }
    }
    // The schedule of a silent peer: RTO `retransmit`, doubling up to `rto_max`, every
    // send before the give-up time.
    let (mut expected, mut at, mut rto) = (0, Duration::ZERO, cfg.retransmit);
    while at + rto < cfg.give_up {
        at += rto;
        rto = (rto * 2).min(cfg.rto_max);
        expected += 1;
    }
    assert!(expected >= 3, "{cfg:?} leaves room for a few retries");
    assert_eq!(retransmitted, expected);
    assert_eq!(leader.drain_unreachable().collect::<Vec<_>>(), vec![3]);
    assert_eq!(leader.link_stats().delivery_failures, 1);
}

#[test]
fn a_multicast_heartbeat_is_received_like_a_unicast_one_without_an_ack() {
    let (_, (_, multi)) = leader_after_one_heartbeat(3, true);
    let (_, (_, first)) = started_leader(3, true);
    let mut follower = node(1, 3, true);
    follower.start(Duration::ZERO, false);
    follower.handle_datagram(Duration::ZERO, first[0].clone());
    assert_eq!(follower.leader(AlgorithmKind::Bully), Some(3));
    let _ = drain(&mut follower);
    let hb = Timing::default().heartbeat;
    follower.handle_datagram(hb, multi[0].clone());
    let (acks, _) = drain(&mut follower);
    assert!(acks.is_empty(), "liveness traffic is not acked");
    let stats = follower.group_stats(AlgorithmKind::Bully).unwrap();
    assert_eq!(stats.received_of(MessageType::Heartbeat), 1);
    // The heartbeat re-armed the failure detector: no leader loss before hb + failure_timeout.
    assert_eq!(
        follower.poll_timeout().unwrap(),
        hb + Timing::default().failure_timeout
    );
}

#[test]
fn peers_the_link_gives_up_on_are_reported_once() {
    let mut leader = node(4, 4, false);
    leader.start(Duration::ZERO, true);
    let _ = drain(&mut leader);
    // Nobody acks: after the last attempt every peer is reported unreachable.
    let give_up = LinkConfig::default().give_up_after();
    let mut now = Duration::ZERO;
    while now <= give_up {
        now += Duration::from_millis(1);
        leader.handle_timeout(now);
    }
    let mut gone: Vec<NodeId> = leader.drain_unreachable().collect();
    gone.sort_unstable();
    assert_eq!(gone, vec![1, 2, 3]);
    assert_eq!(leader.drain_unreachable().count(), 0);
}

/// A runtime that wakes late (timer granularity, a long batch) must not stretch the
/// heartbeat period: the next beat is due one period after the previous one was due.
/// After a stall longer than a period the beat resumes one period later, in one send.
#[test]
fn late_wakeups_do_not_stretch_the_heartbeat_period() {
    let hb = Timing::default().heartbeat;
    let late = hb / 3;
    let (mut leader, _) = leader_after_one_heartbeat(3, true);
    // The first beat fired exactly on time at `hb`; fire the next ones late.
    for k in 2..=10u32 {
        let due = leader.poll_timeout().expect("the heartbeat timer is armed");
        assert_eq!(due, hb * k, "beat {k} is due on the period's grid");
        leader.handle_timeout(due + late);
        let (_, multi) = drain(&mut leader);
        assert_eq!(multi.iter().filter(|d| is_heartbeat(d)).count(), 1);
    }
    // A stall of five periods: one beat, then the grid restarts from the wakeup.
    let due = leader.poll_timeout().expect("armed");
    let woke = due + hb * 5;
    leader.handle_timeout(woke);
    let (_, multi) = drain(&mut leader);
    assert_eq!(
        multi.iter().filter(|d| is_heartbeat(d)).count(),
        1,
        "no burst"
    );
    assert_eq!(leader.poll_timeout(), Some(woke + hb));
}
