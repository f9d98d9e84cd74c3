//! Multicast sends and unreachable reports of [`Node`] (sans-IO, no socket).

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

/// The highest node wins at once (Bully), then heartbeats every `timing.heartbeat`.
/// Returns the node after its first heartbeat, with transmits and multicasts drained.
type Sent = (
    Node,
    Vec<(NodeId, Datagram)>,
    Vec<(NodeId, Datagram)>,
    Vec<Datagram>,
);

/// Returns (leader, first transmits, transmits at the heartbeat, multicasts).
fn leader_after_one_heartbeat(n: u32, multicast: bool) -> Sent {
    let mut leader = node(n, n, multicast);
    leader.start(Duration::ZERO, true);
    assert_eq!(leader.leader(AlgorithmKind::Bully), Some(n));
    // Everybody acks the COORDINATOR announcements so no retransmission interferes.
    let first: Vec<_> = leader.drain_transmits().collect();
    for (to, d) in &first {
        leader.handle_datagram(
            Duration::ZERO,
            Datagram {
                from: *to,
                incarnation: 1,
                seq: 0,
                ack: d.seq,
                group: None,
                body: None,
            },
        );
    }
    assert_eq!(leader.in_flight(), 0);
    let t = leader.poll_timeout().expect("the heartbeat timer is armed");
    assert_eq!(t, Timing::default().heartbeat);
    leader.handle_timeout(t);
    let unicast: Vec<_> = leader.drain_transmits().collect();
    let multi: Vec<_> = leader.drain_multicasts().collect();
    (leader, first, unicast, multi)
}

#[test]
fn a_heartbeat_is_one_multicast_datagram_counted_once_per_recipient() {
    for n in [2u32, 5, 9] {
        let others = u64::from(n - 1);
        let (on, _, unicast, multi) = leader_after_one_heartbeat(n, true);
        assert!(
            unicast.iter().all(|(_, d)| !is_heartbeat(d)),
            "no unicast heartbeat"
        );
        assert_eq!(multi.len(), 1, "one datagram for the whole roster");
        assert!(is_heartbeat(&multi[0]));
        assert_eq!(
            (multi[0].seq, multi[0].from),
            (0, n),
            "unreliable, from the leader"
        );
        let stats = on.group_stats(AlgorithmKind::Bully).unwrap();
        // The logical count is per recipient (DESIGN.md), with multicast or not.
        assert_eq!(stats.sent_of(MessageType::Heartbeat), others);

        let (off, _, unicast_off, multi_off) = leader_after_one_heartbeat(n, false);
        assert!(multi_off.is_empty());
        assert_eq!(
            unicast_off.iter().filter(|(_, d)| is_heartbeat(d)).count() as u64,
            others
        );
        let off_stats = off.group_stats(AlgorithmKind::Bully).unwrap();
        assert_eq!(off_stats.sent_of(MessageType::Heartbeat), others);
        // Datagrams: N-1 COORDINATOR in both, then 1 heartbeat datagram instead of N-1.
        assert_eq!(on.link_stats().datagrams_sent, others + 1);
        assert_eq!(off.link_stats().datagrams_sent, 2 * others);
        // COORDINATOR (reliable) still goes by unicast with multicast on.
        assert_eq!(
            stats.sent_of(MessageType::Coordinator),
            off_stats.sent_of(MessageType::Coordinator)
        );
    }
}

#[test]
fn a_multicast_heartbeat_is_received_like_a_unicast_one_without_an_ack() {
    let (_, first, _, multi) = leader_after_one_heartbeat(3, true);
    let coordinator = first.iter().find(|(to, _)| *to == 1).unwrap().1.clone();
    let mut follower = node(1, 3, true);
    follower.start(Duration::ZERO, false);
    // Learn the leader from its COORDINATOR first.
    assert!(matches!(
        coordinator.body,
        Some(Message::Coordinator { leader: 3, .. })
    ));
    follower.handle_datagram(Duration::ZERO, coordinator);
    assert_eq!(follower.leader(AlgorithmKind::Bully), Some(3));
    let _ = follower.drain_transmits().count();
    let hb = Timing::default().heartbeat;
    follower.handle_datagram(hb, multi[0].clone());
    assert_eq!(
        follower.drain_transmits().count(),
        0,
        "liveness traffic is not acked"
    );
    let stats = follower.group_stats(AlgorithmKind::Bully).unwrap();
    assert_eq!(stats.received_of(MessageType::Heartbeat), 1);
    // The heartbeat re-armed the failure detector: no leader loss before hb + failure_timeout.
    let deadline = follower.poll_timeout().unwrap();
    assert_eq!(deadline, hb + Timing::default().failure_timeout);
}

#[test]
fn peers_the_link_gives_up_on_are_reported_once() {
    let mut leader = node(4, 4, false);
    leader.start(Duration::ZERO, true);
    let _ = leader.drain_transmits().count();
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
