//! Rules of Chang–Roberts / LCR (Chang & Roberts 1979; the "simpler version" of the
//! seed textbook chapter on ring elections), checked one transition at a time on a
//! single node.
//!
//! The ring order is deliberately not sorted: 3 → 1 → 5 → 2 → 4 → 3 (clockwise).

use super::Lcr;
use crate::algorithms::tests::*;
use crate::contract::algorithm::{Algorithm, LeaderLoss, Timer};
use crate::contract::message::Message;
use crate::NodeId;

const RING: [NodeId; 5] = [3, 1, 5, 2, 4];

fn node(me: NodeId) -> Lcr {
    Lcr::new(cfg(me, &RING))
}

fn id(candidate: NodeId, round: u64) -> Message {
    Message::LcrElection { candidate, round }
}

fn elected(leader: NodeId, epoch: u64) -> Message {
    Message::LcrElected { leader, epoch }
}

/// Node `me` has started a round; returns the round number it sent.
fn in_round(me: NodeId) -> (Lcr, u64) {
    let mut l = node(me);
    let fx = start_electing(&mut l);
    let round = match fx.sends()[..] {
        [(_, Message::LcrElection { candidate, round })] if candidate == me => round,
        ref other => panic!("expected its own id on the wire, got {other:?}"),
    };
    (l, round)
}

#[test]
fn a_round_starts_with_the_nodes_own_id_sent_clockwise() {
    // Chang–Roberts: a process entering the election sends its own id to its clockwise
    // neighbour; electd numbers the round (above any epoch it knows).
    let mut l = node(2);
    let before = l.term();
    let fx = start_electing(&mut l);
    match fx.sends()[..] {
        [(
            4,
            Message::LcrElection {
                candidate: 2,
                round,
            },
        )] => assert!(round > before),
        ref other => panic!("own id to the successor 4, got {other:?}"),
    }
    assert!(fx.armed(Timer::Retry));
    assert!(l.is_electing());
}

#[test]
fn a_sleeping_node_joins_the_round_with_its_own_id_then_forwards_a_larger_one() {
    // Chang–Roberts: a larger id is passed on. The textbook's asleep processor wakes
    // on its first message: it sends its own id first, then handles the message.
    let mut l = node(1);
    let _ = start(&mut l, false);
    let fx = deliver(&mut l, 3, id(3, 1));
    assert_eq!(fx.sends(), vec![(5, id(1, 1)), (5, id(3, 1))]);
    assert!(fx.started_election());
    assert!(l.is_electing());
    // Its own id is sent once per round, however many ids arrive.
    let fx = deliver(&mut l, 3, id(4, 1));
    assert_eq!(fx.sends(), vec![(5, id(4, 1))]);
}

#[test]
fn a_smaller_id_is_swallowed() {
    // Chang–Roberts: an id smaller than the receiver's goes no further.
    let (mut l, round) = in_round(5);
    for smaller in [1, 2, 3, 4] {
        let fx = deliver(&mut l, 1, id(smaller, round));
        assert!(fx.is_empty(), "{smaller}: {fx:?}");
    }
}

#[test]
fn a_node_that_gets_its_own_id_back_leads_and_sends_one_elected_lap() {
    // Chang–Roberts: only the largest id makes a full lap; its owner is the leader
    // and announces it with one ELECTED lap.
    let (mut l, round) = in_round(5);
    let fx = deliver(&mut l, 1, id(5, round));
    assert_eq!(
        fx.leader_changes(),
        vec![(Some(5), round)],
        "round r elects epoch r"
    );
    assert_eq!(fx.sends(), vec![(2, elected(5, round))]);
    assert!(fx.cancelled(Timer::Retry));
    assert!(!l.is_electing());
    assert_eq!(l.state(), "leader");
    // A duplicate of its id does not announce twice; its ELECTED lap ends at it.
    assert!(deliver(&mut l, 1, id(5, round)).is_quiet());
    assert!(deliver(&mut l, 1, elected(5, round)).is_quiet());
}

#[test]
fn the_elected_lap_is_adopted_and_forwarded() {
    // Chang–Roberts: the ELECTED message goes round once; each process records the
    // leader, leaves the election and passes it on.
    let (mut l, round) = in_round(2);
    let fx = deliver(&mut l, 5, elected(5, round));
    assert_eq!(fx.leader_changes(), vec![(Some(5), round)]);
    assert_eq!(fx.sends(), vec![(4, elected(5, round))]);
    assert!(fx.cancelled(Timer::Retry));
    assert!(!l.is_electing());
    assert_eq!(l.leader(), Some(5));
}

#[test]
fn an_elected_lap_naming_a_lower_leader_is_forwarded_and_a_new_round_started() {
    // A live node never follows a lower id: the round that chose 3 missed 4's id.
    let mut l = node(4);
    let _ = start(&mut l, false);
    let fx = deliver(&mut l, 2, elected(3, 6));
    assert_eq!(fx.sends()[0], (3, elected(3, 6)), "the lap goes on");
    assert!(fx.started_election());
    assert!(fx
        .sends()
        .iter()
        .any(|(_, m)| matches!(m, Message::LcrElection { candidate: 4, round } if *round > 6)));
    assert_ne!(l.leader(), Some(3));
}

#[test]
fn a_message_of_an_older_round_makes_an_idle_node_start_a_new_one() {
    // Its sender missed the last result (e.g. it restarted): a new round, numbered
    // above everything this node knows, brings it up to date.
    let (mut l, round) = in_round(2);
    let _ = deliver(&mut l, 5, elected(5, round));
    let fx = deliver(&mut l, 5, id(3, round - 1));
    assert!(fx.started_election());
    assert!(fx
        .sends()
        .iter()
        .any(|(_, m)| matches!(m, Message::LcrElection { candidate: 2, round: r } if *r > round)));
    // While electing, an old message is just dropped.
    let (mut l, round) = in_round(2);
    let stale = deliver(&mut l, 5, id(3, round - 1));
    assert!(stale.is_empty(), "{stale:?}");
}

#[test]
fn a_dead_successor_is_skipped_and_the_id_of_a_dead_candidate_dropped() {
    // Beyond the textbook (no failures during the election there): a successor the link
    // gave up on twice in a row is skipped, as in the ring algorithm (the first
    // give-up sends the id to it again).
    let (mut l, round) = in_round(2);
    let fx = step(&mut l, |a, out| a.on_peer_unreachable(4, id(2, round), out));
    assert_eq!(
        fx.sends(),
        vec![(4, id(2, round))],
        "first strike: sent again"
    );
    let fx = step(&mut l, |a, out| a.on_peer_unreachable(4, id(2, round), out));
    assert_eq!(fx.sends(), vec![(3, id(2, round))]);
    // 1 forwards 5's id to its successor, 5 itself. With 5 unreachable its candidacy
    // is over: the id is dropped, not sent round the ring again.
    let mut l = node(1);
    let _ = deliver(&mut l, 3, id(5, round));
    let fx = step(&mut l, |a, out| a.on_peer_unreachable(5, id(5, round), out));
    assert_eq!(
        fx.sends(),
        vec![(5, id(5, round))],
        "first strike: sent again"
    );
    let fx = step(&mut l, |a, out| a.on_peer_unreachable(5, id(5, round), out));
    assert!(fx.messages().is_empty(), "{fx:?}");
}

#[test]
fn the_restart_bound_and_a_lost_leader_start_a_new_round() {
    // Beyond the textbook: a round that has not ended within its bound is replaced by a
    // newer one; losing the leader starts a round as in every election algorithm.
    let (mut l, round) = in_round(2);
    let fx = fire(&mut l, Timer::Retry);
    assert!(fx
        .sends()
        .iter()
        .any(|(_, m)| matches!(m, Message::LcrElection { candidate: 2, round: r } if *r > round)));

    let mut l = node(2);
    let _ = deliver(&mut l, 5, elected(5, 3));
    let fx = step(&mut l, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert_eq!(fx.leader_changes().first().map(|c| c.0), Some(None));
    assert!(fx.started_election());
}

#[test]
fn nonsense_from_the_network_is_ignored() {
    // The Algorithm contract: input from the network may be anything; ids outside the
    // roster or other algorithms' messages are ignored, never a panic.
    let mut l = node(2);
    let _ = start(&mut l, false);
    for from in [5, 2, 0, 999] {
        for msg in garbage() {
            let fx = deliver(&mut l, from, msg.clone());
            assert!(fx.is_empty(), "{msg:?} from {from}: {fx:?}");
        }
    }
    for msg in [id(9, 1), elected(9, 1), id(0, 1)] {
        let fx = deliver(&mut l, 4, msg.clone());
        assert!(fx.is_empty(), "{msg:?}: {fx:?}");
    }
    assert_eq!(l.leader(), None);
    // The largest round there is does not overflow anything.
    let _ = deliver(&mut l, 4, id(5, u64::MAX));
    let _ = fire(&mut l, Timer::Retry);
    let _ = deliver(&mut l, 4, elected(5, u64::MAX));
}

// ---- Policy: priorities (off by default) ----

#[test]
fn a_candidate_is_forwarded_by_rank_and_a_never_leader_is_swallowed() {
    // Node 1 has the highest priority, node 5 never leads: at node 2 (in a round), the
    // candidate 1 outranks it and is forwarded; 5 is swallowed although its id is larger.
    let mut c = cfg(2, &RING);
    c.options.policy.priority = [(1, 200), (5, 0)].into_iter().collect();
    let mut l = Lcr::new(c);
    let fx = start_electing(&mut l);
    let round = match fx.sends()[..] {
        [(_, Message::LcrElection { round, .. })] => round,
        ref other => panic!("own id on the wire, got {other:?}"),
    };
    let fx = deliver(&mut l, 5, id(5, round));
    assert!(
        fx.sends().is_empty(),
        "the never-leader is swallowed: {fx:?}"
    );
    let fx = deliver(&mut l, 5, id(1, round));
    assert_eq!(fx.sends(), vec![(4, id(1, round))], "{fx:?}");
}

#[test]
fn a_never_leader_whose_id_comes_back_does_not_announce() {
    let mut c = cfg(2, &RING);
    c.options.policy.priority = [(2, 0)].into_iter().collect();
    let mut l = Lcr::new(c);
    let fx = start_electing(&mut l);
    let round = match fx.sends()[..] {
        [(_, Message::LcrElection { round, .. })] => round,
        ref other => panic!("own id on the wire, got {other:?}"),
    };
    let fx = deliver(&mut l, 5, id(2, round));
    assert!(fx.leader_changes().is_empty(), "{fx:?}");
    assert!(fx.sends().is_empty(), "no ELECTED: {fx:?}");
    assert_eq!(l.leader(), None);
}
