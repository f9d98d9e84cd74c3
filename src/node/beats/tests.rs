//! One liveness datagram per peer per period: nodes running every algorithm, wired
//! together in memory (sans-IO), and what [`pack`] makes of their transmits.

use super::super::*;
use super::{pack, Packet};

const N: u32 = 5;

fn cluster() -> Vec<Node> {
    (1..=N)
        .map(|id| {
            Node::new(NodeConfig {
                id,
                ring: (1..=N).collect(),
                algorithms: AlgorithmKind::ALL.to_vec(),
                timing: Timing::default(),
                options: Options::default(),
                link: LinkConfig::default(),
                incarnation: 1,
                seed: u64::from(id) * 7919,
            })
            .unwrap()
        })
        .collect()
}

/// Deliver everything in flight at `now` (and what it provokes) at once.
fn settle(nodes: &mut [Node], now: Time) {
    for _ in 0..1_000 {
        let mut wire = Vec::new();
        for n in nodes.iter_mut() {
            wire.extend(n.drain_transmits());
            n.discard_events();
        }
        if wire.is_empty() {
            return;
        }
        for (to, d) in wire {
            nodes[to as usize - 1].handle_datagram(now, d);
        }
    }
    panic!("messages still in flight after 1000 rounds at {now:?}");
}

/// Run the cluster in steps of `step` until `done` holds (at most `limit`).
fn run_until(
    nodes: &mut [Node],
    from: Time,
    step: Duration,
    limit: Time,
    done: impl Fn(&[Node]) -> bool,
) -> Time {
    let mut now = from;
    while now <= limit {
        for n in nodes.iter_mut() {
            if n.poll_timeout().is_some_and(|t| t <= now) {
                n.handle_timeout(now);
            }
        }
        settle(nodes, now);
        if done(nodes) {
            return now;
        }
        now += step;
    }
    panic!("not done by {limit:?}");
}

/// Node N leads every group, as every node sees it.
fn all_led_by_n(nodes: &[Node]) -> bool {
    nodes
        .iter()
        .all(|n| AlgorithmKind::ALL.iter().all(|&k| n.leader(k) == Some(N)))
}

/// A cluster in which node N leads all six groups (Raft's ranked timeouts let the
/// highest id campaign first), every message delivered, at the returned time.
fn six_groups_led_by_n() -> (Vec<Node>, Time) {
    let mut nodes = cluster();
    for n in &mut nodes {
        n.start(Duration::ZERO, true);
    }
    let ms = Duration::from_millis(1);
    let at = run_until(
        &mut nodes,
        Duration::ZERO,
        ms,
        Duration::from_secs(10),
        all_led_by_n,
    );
    (nodes, at)
}

#[test]
fn a_node_leading_six_groups_sends_one_datagram_per_peer_per_period() {
    let (mut nodes, at) = six_groups_led_by_n();
    let hb = Timing::default().heartbeat;
    let groups = AlgorithmKind::ALL.len();
    let leader = N as usize - 1;
    // Ten periods from a beat on: each period, what the leader puts on the wire.
    let mut now = at;
    for period in 0..10 {
        let next = nodes[leader].poll_timeout().expect("the leader beats");
        assert!(
            next <= now + hb,
            "period {period}: nothing due within a period"
        );
        now = next.max(now);
        nodes[leader].handle_timeout(now);
        let transmits: Vec<(NodeId, Datagram)> = nodes[leader].drain_transmits().collect();
        let beats = transmits
            .iter()
            .filter(|(_, d)| matches!(d.body, Some(Message::Heartbeat { .. })))
            .count();
        if beats == 0 {
            // Another timer of the leader (a check-quorum tick): deliver, go on.
            for (to, d) in transmits {
                nodes[to as usize - 1].handle_datagram(now, d);
            }
            settle(&mut nodes, now);
            continue;
        }
        // Every group's heartbeat to every peer, in this one turn…
        assert_eq!(beats, groups * (N as usize - 1), "period {period}");
        // …on the wire as one datagram per peer, holding every group's.
        let packets = pack(&transmits);
        assert_eq!(
            packets.len(),
            N as usize - 1,
            "period {period}: {packets:?}"
        );
        for p in &packets {
            let Packet::Beats(_, msgs) = p else {
                panic!("period {period}: {p:?} is not a BEATS");
            };
            let mut kinds: Vec<AlgorithmKind> = msgs.iter().filter_map(|d| d.group).collect();
            kinds.sort();
            assert_eq!(kinds, AlgorithmKind::ALL.to_vec(), "period {period}");
        }
        for (to, d) in transmits {
            nodes[to as usize - 1].handle_datagram(now, d);
        }
        // Raft's followers answer each heartbeat: one ack each, alone (one group).
        let acks: Vec<(NodeId, Datagram)> = nodes
            .iter_mut()
            .flat_map(|n| n.drain_transmits().collect::<Vec<_>>())
            .collect();
        for (_, d) in &acks {
            assert!(
                matches!(d.body, Some(Message::HeartbeatAck { .. })),
                "{d:?}"
            );
        }
        assert_eq!(pack(&acks).len(), N as usize - 1);
        for (to, d) in acks {
            nodes[to as usize - 1].handle_datagram(now, d);
        }
        settle(&mut nodes, now);
        now += Duration::from_nanos(1);
    }
    assert!(all_led_by_n(&nodes), "nothing changed meanwhile");
}

#[test]
fn raft_beats_on_the_grid_only_beside_other_groups() {
    let hb = Timing::default().heartbeat;
    for (algorithms, aligned) in [
        (vec![AlgorithmKind::Raft], false),
        (vec![AlgorithmKind::Bully, AlgorithmKind::Raft], true),
    ] {
        let mut nodes: Vec<Node> = (1..=3)
            .map(|id| {
                Node::new(NodeConfig {
                    id,
                    ring: (1..=3).collect(),
                    algorithms: algorithms.clone(),
                    timing: Timing::default(),
                    options: Options::default(),
                    link: LinkConfig::default(),
                    incarnation: 1,
                    seed: u64::from(id),
                })
                .unwrap()
            })
            .collect();
        for n in &mut nodes {
            n.start(Duration::ZERO, true);
        }
        // Steps off the grid, so that Raft is won at an instant off it.
        let step = Duration::from_micros(1_300);
        let led = |ns: &[Node]| ns.iter().all(|n| n.leader(AlgorithmKind::Raft) == Some(3));
        let won = run_until(
            &mut nodes,
            Duration::ZERO,
            step,
            Duration::from_secs(10),
            led,
        );
        let raft = nodes[2]
            .timers
            .iter()
            .find(|t| {
                matches!(
                    t.1,
                    Slot::Algo(crate::contract::algorithm::Timer::Heartbeat)
                )
            })
            .map(|t| t.2)
            .expect("Raft's heartbeat timer is armed");
        assert!(
            raft <= won + hb,
            "{algorithms:?}: never later than Raft asks"
        );
        let on_grid = raft.as_nanos() % hb.as_nanos() == 0;
        assert_eq!(
            on_grid, aligned,
            "{algorithms:?}: {raft:?} (won at {won:?})"
        );
    }
}

fn beat(to: NodeId, group: AlgorithmKind, msg: Message) -> (NodeId, Datagram) {
    (
        to,
        Datagram {
            from: 9,
            incarnation: 4,
            seq: 0,
            ack: 0,
            group: Some(group),
            body: Some(msg),
        },
    )
}

#[test]
fn pack_keeps_reliable_datagrams_and_lone_beats_as_they_are() {
    let hb = |term| Message::Heartbeat { term, leader: 9 };
    let ack = Message::HeartbeatAck { term: 2, leader: 0 };
    let coordinator = (
        1,
        Datagram {
            from: 9,
            incarnation: 4,
            seq: 3,
            ack: 0,
            group: Some(AlgorithmKind::Bully),
            body: Some(Message::Resign { epoch: 1 }),
        },
    );
    let t = vec![
        beat(1, AlgorithmKind::Bully, hb(1)),
        coordinator.clone(),
        beat(2, AlgorithmKind::Bully, hb(1)),
        beat(1, AlgorithmKind::Raft, ack.clone()),
        // A second ack of one group to one peer: alone.
        beat(1, AlgorithmKind::Raft, ack.clone()),
        beat(1, AlgorithmKind::Ring, hb(5)),
    ];
    let p = pack(&t);
    assert_eq!(
        p,
        vec![
            Packet::Beats(1, vec![&t[0].1, &t[3].1, &t[5].1]),
            Packet::One(1, &coordinator.1),
            Packet::One(2, &t[2].1),
            Packet::One(1, &t[4].1),
        ]
    );
    // Every message is on the wire exactly once.
    let carried: usize = p
        .iter()
        .map(|x| match x {
            Packet::One(..) => 1,
            Packet::Beats(_, m) => m.len(),
        })
        .sum();
    assert_eq!(carried, t.len());
}
