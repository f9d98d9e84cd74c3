//! The heartbeat schedule of a node that leads several groups ([`heartbeat_grid`]).

use super::*;

fn leader_of_two_groups() -> Node {
    node_of(5, vec![AlgorithmKind::Bully, AlgorithmKind::ImprovedBully])
}

/// Node `id` of five running `algorithms`.
fn node_of(id: NodeId, algorithms: Vec<AlgorithmKind>) -> Node {
    Node::new(NodeConfig {
        id,
        ring: (1..=5).collect(),
        algorithms,
        timing: Timing::default(),
        options: Options::default(),
        link: LinkConfig::default(),
        incarnation: 1,
        seed: 7,
    })
    .unwrap()
}

/// The heartbeat deadline of every group, in group order.
fn beats(n: &Node) -> Vec<Option<Time>> {
    (0..n.groups.len())
        .map(|g| {
            n.timers
                .iter()
                .find(|t| t.0 as usize == g && matches!(t.1, Slot::Heartbeat))
                .map(|t| t.2)
        })
        .collect()
}

#[test]
fn every_group_led_beats_on_one_schedule_of_multiples_of_the_period() {
    let hb = Timing::default().heartbeat;
    let mut n = leader_of_two_groups();
    // Won at an instant off the schedule: both groups at once (the highest id).
    let start = hb * 3 + hb / 3;
    n.start(start, true);
    assert_eq!(n.leader(AlgorithmKind::Bully), Some(5));
    assert_eq!(n.leader(AlgorithmKind::ImprovedBully), Some(5));
    let first = beats(&n);
    let at = first[0].expect("the Bully group's heartbeat is armed");
    assert_eq!(first, vec![Some(at); 2], "one schedule for both groups");
    assert_eq!(at.as_nanos() % hb.as_nanos(), 0, "a multiple of the period");
    assert!(at >= start + hb / 2 && at <= start + hb / 2 + hb, "{at:?}");

    // Fired a little late: the next beat keeps the schedule.
    n.handle_timeout(at + hb / 10);
    assert_eq!(beats(&n), vec![Some(at + hb); 2]);
    // After a stall of several periods: the next multiple, no burst of missed beats.
    let late = at + hb * 4 + hb / 4;
    n.handle_timeout(late);
    assert_eq!(beats(&n), vec![Some(at + hb * 5); 2]);
}

#[test]
fn the_grid_is_the_next_multiple_after_t() {
    let hb = Duration::from_millis(10);
    assert_eq!(heartbeat_grid(Duration::ZERO, hb), hb);
    assert_eq!(heartbeat_grid(Duration::from_micros(9_999), hb), hb);
    assert_eq!(heartbeat_grid(hb, hb), hb * 2, "strictly after t");
    assert_eq!(
        heartbeat_grid(Duration::from_millis(35), hb),
        Duration::from_millis(40)
    );
}

/// Node `id` of five running Bully alone.
fn bully_node(id: NodeId) -> Node {
    node_of(id, vec![AlgorithmKind::Bully])
}

/// Hand `to` (node `id`) what `from` sends it, as arrived at `now`; the rest is dropped.
fn deliver(from: &mut Node, to: &mut Node, id: NodeId, now: Time) {
    let dgs: Vec<Datagram> = from
        .drain_transmits()
        .filter(|(dst, _)| *dst == id)
        .map(|(_, d)| d)
        .collect();
    for d in dgs {
        to.handle_datagram(now, d);
    }
}

#[test]
fn a_follower_measures_the_gaps_between_its_leaders_heartbeats_as_they_arrive() {
    let hb = Timing::default().heartbeat;
    let (mut leader, mut follower) = (bully_node(5), bully_node(1));
    leader.start(Duration::ZERO, true);
    follower.start(Duration::ZERO, false);
    deliver(&mut leader, &mut follower, 1, Duration::ZERO);
    let _ = follower.drain_transmits().count();
    assert_eq!(follower.leader(AlgorithmKind::Bully), Some(5));
    assert_eq!(follower.drain_gaps().count(), 0, "no heartbeat yet");
    // Heartbeats sent on the schedule, arriving with delays of 0, 3, 1 and 7 ms.
    let delays = [0u64, 3, 1, 7].map(Duration::from_millis);
    let mut arrivals = Vec::new();
    for delay in delays {
        let at = beats(&leader)[0].expect("the next heartbeat is armed");
        leader.handle_timeout(at);
        deliver(&mut leader, &mut follower, 1, at + delay);
        arrivals.push(at + delay);
    }
    let gaps: Vec<(AlgorithmKind, Duration)> = follower.drain_gaps().collect();
    let expected: Vec<(AlgorithmKind, Duration)> = arrivals
        .windows(2)
        .map(|w| (AlgorithmKind::Bully, w[1] - w[0]))
        .collect();
    assert_eq!(gaps, expected, "one gap per heartbeat after the first");
    assert!(
        gaps.iter().any(|g| g.1 != hb),
        "the gaps are the arrivals', not the schedule's"
    );
    assert_eq!(follower.drain_gaps().count(), 0, "drained");
    assert_eq!(leader.drain_gaps().count(), 0, "a leader follows nobody");
}

#[test]
fn a_follower_that_wakes_a_period_late_gives_its_leader_one_more_period() {
    let t = Timing::default();
    let (mut leader, mut follower) = (bully_node(5), bully_node(1));
    leader.start(Duration::ZERO, true);
    follower.start(Duration::ZERO, false);
    deliver(&mut leader, &mut follower, 1, Duration::ZERO);
    let _ = follower.drain_transmits().count();
    let at = beats(&leader)[0].expect("the first heartbeat is armed");
    leader.handle_timeout(at);
    deliver(&mut leader, &mut follower, 1, at);
    assert_eq!(follower.leader(AlgorithmKind::Bully), Some(5));
    let due = at + t.failure_timeout;
    assert_eq!(
        follower.poll_timeout(),
        Some(due),
        "the detector's deadline"
    );

    // The whole machine stalled: the follower runs again three periods after its
    // deadline, the leader's overdue heartbeat not read yet. One more period.
    let woke = due + t.heartbeat * 3;
    follower.handle_timeout(woke);
    assert_eq!(
        follower.leader(AlgorithmKind::Bully),
        Some(5),
        "not lost yet"
    );
    assert_eq!(follower.poll_timeout(), Some(woke + t.heartbeat));
    // The leader, stalled alike, sends the heartbeat it owes: followed as before.
    leader.handle_timeout(woke);
    deliver(&mut leader, &mut follower, 1, woke + t.heartbeat / 2);
    assert_eq!(follower.leader(AlgorithmKind::Bully), Some(5));
    assert_eq!(
        follower
            .group_stats(AlgorithmKind::Bully)
            .unwrap()
            .elections_started,
        0,
        "no election"
    );
    let _ = follower.drain_transmits().count();

    // The leader is gone now. A late deadline gets the grace once more (it came back
    // with the heartbeat above); the second late deadline of the same silence does not.
    let due = woke + t.heartbeat / 2 + t.failure_timeout;
    follower.handle_timeout(due + t.heartbeat * 2);
    assert_eq!(
        follower.leader(AlgorithmKind::Bully),
        Some(5),
        "one grace per silence"
    );
    let next = follower.poll_timeout().expect("postponed");
    follower.handle_timeout(next + t.heartbeat * 2);
    assert_ne!(
        follower.leader(AlgorithmKind::Bully),
        Some(5),
        "the second late deadline of one silence declares the leader lost"
    );

    // Handled on time (the simulator, a node not stalled): no grace at all.
    let (mut leader, mut follower) = (bully_node(5), bully_node(1));
    leader.start(Duration::ZERO, true);
    follower.start(Duration::ZERO, false);
    deliver(&mut leader, &mut follower, 1, Duration::ZERO);
    let due = follower.poll_timeout().expect("the detector's deadline");
    follower.handle_timeout(due + t.heartbeat / 2);
    assert_ne!(
        follower.leader(AlgorithmKind::Bully),
        Some(5),
        "lost at once"
    );
}
