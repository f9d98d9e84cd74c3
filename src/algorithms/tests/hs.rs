//! Rules of Hirschberg–Sinclair (1980; seed textbook chapter, Lemma 13.9 and Theorem
//! 13.10), checked one transition at a time on a single node.
//!
//! The ring order is deliberately not sorted: 3 → 1 → 5 → 2 → 4 → 3, where "right" is
//! clockwise. Node 2's right neighbour is 4 and its left neighbour 5.

use super::Hs;
use crate::algorithms::tests::*;
use crate::contract::algorithm::{Algorithm, LeaderLoss, Timer};
use crate::contract::message::Message;
use crate::NodeId;

const RING: [NodeId; 5] = [3, 1, 5, 2, 4];

fn node(me: NodeId) -> Hs {
    Hs::new(cfg(me, &RING))
}

fn probe(candidate: NodeId, phase: u32, hops: u32, to_right: bool, round: u64) -> Message {
    Message::Probe {
        candidate,
        phase,
        hops,
        to_right,
        round,
    }
}

fn reply(candidate: NodeId, phase: u32, to_right: bool, round: u64) -> Message {
    Message::Reply {
        candidate,
        phase,
        to_right,
        round,
    }
}

/// Node `me` has started a round; returns the round number of its probes.
fn in_round(me: NodeId) -> (Hs, u64) {
    let mut h = node(me);
    let fx = start_electing(&mut h);
    let rounds: Vec<u64> = fx
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            Message::Probe { round, .. } => Some(round),
            _ => None,
        })
        .collect();
    assert_eq!(rounds.len(), 2, "a probe each way: {fx:?}");
    (h, rounds[0])
}

#[test]
fn phase_zero_probes_both_neighbours_with_a_ttl_of_one() {
    // Seed textbook: entering phase 0 a processor sends a probe carrying its id in both
    // directions, with time-to-live 2^0 = 1 hop.
    let mut h = node(2);
    let fx = start_electing(&mut h);
    let (_, round) = in_round(2);
    assert_eq!(
        fx.sends(),
        vec![
            (4, probe(2, 0, 1, true, round)),
            (5, probe(2, 0, 1, false, round))
        ]
    );
    assert!(fx.armed(Timer::Retry));
    assert!(h.is_electing());
}

#[test]
fn a_larger_probe_travels_exactly_two_to_the_phase_hops_then_bounces() {
    // HS: a probe with a larger id is passed on, one hop more, until it has made 2^phase
    // hops; then it is bounced back towards its candidate as a reply.
    let (mut h, round) = in_round(2);
    for phase in 0..6u32 {
        let ttl = 1u32 << phase;
        for hops in 1..ttl {
            let fx = deliver(&mut h, 5, probe(5, phase, hops, true, round));
            assert_eq!(
                fx.sends(),
                vec![(4, probe(5, phase, hops + 1, true, round))],
                "phase {phase}, hop {hops} of {ttl}"
            );
        }
        let fx = deliver(&mut h, 5, probe(5, phase, ttl, true, round));
        assert_eq!(
            fx.sends(),
            vec![(5, reply(5, phase, false, round))],
            "phase {phase}: bounced after {ttl} hops, back the way it came"
        );
    }
    // The same going left.
    let fx = deliver(&mut h, 4, probe(3, 1, 1, false, round));
    assert_eq!(fx.sends(), vec![(5, probe(3, 1, 2, false, round))]);
    let fx = deliver(&mut h, 4, probe(3, 1, 2, false, round));
    assert_eq!(fx.sends(), vec![(4, reply(3, 1, true, round))]);
}

#[test]
fn a_smaller_probe_is_swallowed() {
    let (mut h, round) = in_round(5);
    for (from, smaller) in [(2, 2), (1, 1), (1, 3), (2, 4)] {
        let fx = deliver(&mut h, from, probe(smaller, 0, 1, from == 1, round));
        assert!(fx.is_empty(), "{smaller}: {fx:?}");
    }
}

#[test]
fn replies_are_relayed_towards_their_candidate() {
    // Seed textbook: a processor receiving a reply that is not its own passes it on in
    // the direction it travels.
    let (mut h, round) = in_round(2);
    let fx = deliver(&mut h, 4, reply(5, 1, false, round));
    assert_eq!(fx.sends(), vec![(5, reply(5, 1, false, round))]);
    let fx = deliver(&mut h, 5, reply(3, 2, true, round));
    assert_eq!(fx.sends(), vec![(4, reply(3, 2, true, round))]);
}

#[test]
fn the_next_phase_starts_only_after_both_replies() {
    // HS: a candidate that gets its reply back from both sides enters phase k + 1 and
    // probes again with twice the time-to-live.
    let (mut h, round) = in_round(2);
    // From the right side (travelling left).
    let fx = deliver(&mut h, 4, reply(2, 0, false, round));
    assert!(fx.is_empty(), "one side is not enough: {fx:?}");
    // The same side again changes nothing.
    assert!(deliver(&mut h, 4, reply(2, 0, false, round)).is_empty());
    let fx = deliver(&mut h, 5, reply(2, 0, true, round));
    assert_eq!(
        fx.sends(),
        vec![
            (4, probe(2, 1, 1, true, round)),
            (5, probe(2, 1, 1, false, round))
        ]
    );
    // A late reply of phase 0 does not count for phase 1.
    assert!(deliver(&mut h, 4, reply(2, 0, false, round)).is_empty());
    assert!(deliver(&mut h, 5, reply(2, 0, true, round)).is_empty());
    let _ = deliver(&mut h, 4, reply(2, 1, false, round));
    let fx = deliver(&mut h, 5, reply(2, 1, true, round));
    assert_eq!(fx.messages().len(), 2);
    assert!(fx.messages().iter().all(|m| matches!(
        m,
        Message::Probe {
            phase: 2,
            hops: 1,
            ..
        }
    )));
}

#[test]
fn a_probe_back_at_its_candidate_makes_it_leader_with_one_terminate_lap() {
    // HS: a probe that went all the way round met no larger id: its candidate leads and
    // sends terminate clockwise.
    let (mut h, round) = in_round(5);
    let fx = deliver(&mut h, 1, probe(5, 3, 5, true, round));
    assert_eq!(
        fx.leader_changes(),
        vec![(Some(5), round)],
        "round r elects epoch r"
    );
    assert_eq!(
        fx.sends(),
        vec![(
            2,
            Message::Terminate {
                leader: 5,
                epoch: round
            }
        )]
    );
    assert!(fx.cancelled(Timer::Retry));
    assert_eq!(h.state(), "leader");
    // The probe of the other direction arrives too: no second announcement.
    assert!(deliver(&mut h, 2, probe(5, 3, 5, false, round)).is_quiet());
    // The terminate lap ends at the leader.
    let fx = deliver(
        &mut h,
        1,
        Message::Terminate {
            leader: 5,
            epoch: round,
        },
    );
    assert!(fx.is_quiet());
}

#[test]
fn terminate_is_adopted_and_forwarded_and_a_lower_leader_is_answered_with_a_new_round() {
    // Seed textbook: every processor that receives terminate records the leader and
    // passes it on. Beyond it: a live node never follows a lower id.
    let (mut h, round) = in_round(2);
    let t = Message::Terminate {
        leader: 5,
        epoch: round,
    };
    let fx = deliver(&mut h, 5, t.clone());
    assert_eq!(fx.leader_changes(), vec![(Some(5), round)]);
    assert_eq!(fx.sends(), vec![(4, t)]);
    assert!(!h.is_electing());

    // 4 is alive and above 3: the round that chose 3 missed it.
    let mut h = node(4);
    let _ = start(&mut h, false);
    let t = Message::Terminate {
        leader: 3,
        epoch: 6,
    };
    let fx = deliver(&mut h, 2, t.clone());
    assert_eq!(fx.sends()[0], (3, t), "the lap goes on");
    assert!(fx.started_election());
    assert!(fx
        .messages()
        .iter()
        .any(|m| matches!(m, Message::Probe { candidate: 4, round, .. } if *round > 6)));
    assert_ne!(h.leader(), Some(3));
}

#[test]
fn a_sleeping_node_joins_the_round_on_its_first_message() {
    // Seed textbook: every processor eventually enters phase 0; an asleep one does so
    // on its first message, then handles that message.
    let mut h = node(2);
    let _ = start(&mut h, false);
    let fx = deliver(&mut h, 5, probe(5, 0, 1, true, 3));
    assert!(fx.started_election());
    assert_eq!(
        fx.sends(),
        vec![
            (4, probe(2, 0, 1, true, 3)),
            (5, probe(2, 0, 1, false, 3)),
            (5, reply(5, 0, false, 3))
        ]
    );
}

#[test]
fn dead_neighbours_are_skipped_and_a_lost_leader_starts_a_round() {
    // Beyond the textbook (no failures during the election there): a neighbour the link
    // gave up on twice in a row (ring_common::STRIKES) is skipped in that direction —
    // the first give-up costs a retransmission, not the neighbour; a lost leader
    // starts a round.
    let (mut h, round) = in_round(2);
    let p = probe(2, 0, 1, true, round);
    let fx = step(&mut h, |a, out| a.on_peer_unreachable(4, p.clone(), out));
    assert_eq!(fx.sends(), vec![(4, p.clone())], "first strike: sent again");
    let fx = step(&mut h, |a, out| a.on_peer_unreachable(4, p.clone(), out));
    assert_eq!(fx.sends(), vec![(3, p)]);

    let mut h = node(2);
    let _ = deliver(
        &mut h,
        5,
        Message::Terminate {
            leader: 5,
            epoch: 2,
        },
    );
    let fx = step(&mut h, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert_eq!(fx.leader_changes().first().map(|c| c.0), Some(None));
    assert!(fx.started_election());
    // The lost leader 5 (left neighbour) is skipped at once: the left probe goes to 1.
    assert!(fx.sends().iter().any(|(to, m)| *to == 1
        && matches!(
            m,
            Message::Probe {
                to_right: false,
                ..
            }
        )));
}

#[test]
fn nonsense_from_the_network_is_ignored() {
    // The Algorithm contract: input from the network may be anything; ids outside the
    // roster, other algorithms' messages, absurd phases are handled without a panic.
    let mut h = node(2);
    let _ = start(&mut h, false);
    for from in [5, 2, 0, 999] {
        for msg in garbage() {
            let fx = deliver(&mut h, from, msg.clone());
            assert!(fx.is_empty(), "{msg:?} from {from}: {fx:?}");
        }
    }
    assert_eq!(h.leader(), None);
    // Any phase and hop count from a member: the 2^phase time-to-live saturates, so a
    // huge phase is forwarded, never panics.
    let (mut h, round) = in_round(2);
    let fx = deliver(&mut h, 5, probe(5, u32::MAX, u32::MAX, true, round));
    assert_eq!(
        fx.sends(),
        vec![(4, probe(5, u32::MAX, u32::MAX, true, round))]
    );
    let fx = deliver(&mut h, 5, probe(5, 64, 0, true, round));
    assert_eq!(fx.recipients(), vec![4]);
    let _ = deliver(&mut h, 4, reply(2, u32::MAX, false, round));
    let _ = deliver(&mut h, 4, probe(3, 0, 1, false, u64::MAX));
}
