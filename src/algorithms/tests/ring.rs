//! Rules of the ring election with a list of ids (Tanenbaum & van Steen §6.5.1; seed
//! slides "The Ring Algorithm", seed course notes "Ring-based Elections"), checked one
//! transition at a time on a single node.
//!
//! The ring order is deliberately not sorted: 3 → 1 → 5 → 2 → 4 → 3.

use super::Ring;
use crate::algorithms::tests::*;
use crate::contract::algorithm::{Algorithm, LeaderLoss, Timer};
use crate::contract::message::Message;
use crate::NodeId;

const RING: [NodeId; 5] = [3, 1, 5, 2, 4];

fn node(me: NodeId) -> Ring {
    Ring::new(cfg(me, &RING))
}

fn election(initiator: NodeId, ids: &[NodeId], epoch: u64) -> Message {
    Message::RingElection {
        initiator,
        ids: ids.to_vec(),
        epoch,
    }
}

fn coordinator(initiator: NodeId, leader: NodeId, epoch: u64) -> Message {
    Message::RingCoordinator {
        initiator,
        leader,
        epoch,
    }
}

#[test]
fn an_initiator_sends_its_id_to_its_successor() {
    // Course notes: the process that notices the coordinator is gone sends ELECTION,
    // holding its own number, to its successor.
    let mut r = node(2);
    let fx = start_electing(&mut r);
    assert_eq!(fx.sends(), vec![(4, election(2, &[2], 0))]);
    assert!(
        fx.armed(Timer::Retry),
        "restarts an election that never ends"
    );
    assert!(r.is_electing());
}

#[test]
fn each_member_appends_its_id_and_forwards() {
    // "each process that receives it adds its own process number and forwards it to
    // its successor".
    let mut r = node(5);
    let _ = start(&mut r, false);
    let fx = deliver(&mut r, 1, election(3, &[3, 1], 0));
    assert_eq!(fx.sends(), vec![(2, election(3, &[3, 1, 5], 0))]);
    assert!(fx.started_election(), "it takes part from now on");
    assert!(fx.leader_changes().is_empty());
    assert!(r.is_electing());
}

#[test]
fn back_at_the_initiator_the_highest_id_is_chosen_and_one_coordinator_lap_starts() {
    // Slides: "When the message returns to p, it sees its own process ID in the list
    // and knows that the circuit is complete"; it circulates COORDINATOR with the
    // highest number.
    let mut r = node(2);
    let _ = start_electing(&mut r);
    let before = r.term();
    let fx = deliver(&mut r, 5, election(2, &[2, 4, 3, 1, 5], 0));
    let epoch = r.term();
    assert!(epoch > before, "a new epoch for the decision");
    assert_eq!(fx.sends(), vec![(4, coordinator(2, 5, epoch))]);
    assert_eq!(fx.leader_changes(), vec![(Some(5), epoch)]);
    assert!(fx.cancelled(Timer::Retry));
    assert!(!r.is_electing());
    assert_eq!(r.leader(), Some(5));
}

#[test]
fn a_lap_reaching_another_member_of_its_list_is_decided_there() {
    // Beyond the textbook: the initiator 2 died and was skipped, so its ELECTION comes
    // back to 3, already in the list. The part of the list from 3 on is a full lap of
    // the live ring: 3 decides on it and sends the COORDINATOR lap itself.
    let mut r = node(3);
    let _ = start(&mut r, false);
    let fx = deliver(&mut r, 4, election(2, &[2, 3, 1, 5, 4], 0));
    assert_eq!(fx.new_leader(), Some(Some(5)));
    assert!(matches!(
        fx.sent_to(1)[..],
        [Message::RingCoordinator {
            initiator: 3,
            leader: 5,
            ..
        }]
    ));
}

#[test]
fn the_coordinator_lap_is_adopted_and_forwarded_until_it_is_back_at_its_sender() {
    // Slides: the COORDINATOR message circulates once; every member records the new
    // leader and passes it on, until it is back where it started.
    let mut r = node(1);
    let _ = start(&mut r, false);
    let _ = deliver(&mut r, 3, election(2, &[2, 4, 3], 0));
    let fx = deliver(&mut r, 3, coordinator(2, 5, 7));
    assert_eq!(fx.leader_changes(), vec![(Some(5), 7)], "epoch carried");
    assert_eq!(fx.sends(), vec![(5, coordinator(2, 5, 7))]);
    assert!(fx.cancelled(Timer::Retry));
    assert!(!r.is_electing());
    assert_eq!(r.state(), "follower");

    // At its sender the lap ends: no further message.
    let mut r = node(2);
    let _ = start_electing(&mut r);
    let _ = deliver(&mut r, 5, election(2, &[2, 4, 3, 1, 5], 0));
    let epoch = r.term();
    let fx = deliver(&mut r, 5, coordinator(2, 5, epoch));
    assert!(fx.is_quiet(), "{fx:?}");
}

#[test]
fn a_dead_successor_is_skipped() {
    // Slides: "Processes are able to skip faulty systems: instead of sending to
    // process j, send to j + 1." The link reports 4 unreachable twice in a row
    // (ring_common::STRIKES; the first time the message is sent to 4 again); the same
    // message goes to 4's successor, and later messages skip 4 at once.
    let mut r = node(2);
    let fx = start_electing(&mut r);
    let (to, msg) = fx.sends().pop().expect("ELECTION");
    assert_eq!(to, 4);
    let fx = step(&mut r, |a, out| a.on_peer_unreachable(4, msg.clone(), out));
    assert_eq!(
        fx.sends(),
        vec![(4, msg.clone())],
        "first strike: sent again"
    );
    let fx = step(&mut r, |a, out| a.on_peer_unreachable(4, msg.clone(), out));
    assert_eq!(fx.sends(), vec![(3, msg)]);
    let fx = deliver(&mut r, 5, election(2, &[2, 3, 1, 5], 0));
    assert_eq!(fx.recipients(), vec![3], "COORDINATOR skips 4 too");
    // Heard from again, 4 is trusted again.
    let _ = step(&mut r, |a, out| a.on_peer_alive(4, out));
    let fx = step(&mut r, |a, out| a.call_election(out));
    assert_eq!(fx.recipients(), vec![4]);
}

#[test]
fn a_running_initiator_swallows_a_lower_initiators_election_but_forwards_a_higher_one() {
    // Two elections at once are allowed (slides); the lower initiator's lap is
    // extinguished at a node whose own lap still travels, since both name the same
    // leader and the surviving COORDINATOR lap reaches everyone.
    let mut r = node(4);
    let _ = start_electing(&mut r);
    let fx = deliver(&mut r, 2, election(2, &[2], 0));
    assert!(fx.is_quiet(), "{fx:?}");
    let fx = deliver(&mut r, 2, election(5, &[5, 2], 0));
    assert_eq!(fx.sends(), vec![(3, election(5, &[5, 2, 4], 0))]);
}

#[test]
fn a_coordinator_naming_a_lower_leader_is_forwarded_and_answered_with_an_election() {
    // A live node is never led by a lower id: the lap that chose 3 missed 4. It passes
    // the announcement on and calls an election, whose lap collects it.
    let mut r = node(4);
    let _ = start(&mut r, false);
    let fx = deliver(&mut r, 2, coordinator(1, 3, 5));
    assert!(fx.sent_to(3).contains(&coordinator(1, 3, 5)));
    assert!(fx.started_election());
    assert!(fx
        .sent_to(3)
        .iter()
        .any(|m| matches!(m, Message::RingElection { initiator: 4, epoch, .. } if *epoch >= 5)));
    assert_ne!(r.leader(), Some(3));
}

#[test]
fn an_unfinished_election_and_a_leaderless_wait_end_in_a_new_election() {
    // Beyond the textbook (which assumes nobody fails mid-election): a node without a
    // leader calls an election after a watchdog, and one whose election never ends
    // restarts it after the restart bound.
    let mut r = node(1);
    let fx = start(&mut r, false);
    assert!(fx.messages().is_empty());
    assert!(fx.armed(Timer::Retry), "watchdog");
    let fx = fire(&mut r, Timer::Retry);
    assert_eq!(fx.sends(), vec![(5, election(1, &[1], 0))]);
    // Still no COORDINATOR when the restart bound passes: elect again.
    let fx = fire(&mut r, Timer::Retry);
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![5]);
}

#[test]
fn a_lost_leader_is_skipped_and_an_election_called() {
    // Course notes: a process that notices the coordinator is dead starts an election;
    // the dead coordinator is skipped at once (slides: "send to j + 1").
    let mut r = node(2);
    let _ = start(&mut r, false);
    let _ = deliver(&mut r, 5, coordinator(3, 4, 2));
    assert_eq!(r.leader(), Some(4));
    let fx = step(&mut r, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert_eq!(fx.leader_changes().first().map(|c| c.0), Some(None));
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![3], "the lost leader 4 is skipped");
}

#[test]
fn a_lone_member_elects_itself() {
    // A ring of one: the ELECTION lap is complete before it starts.
    let mut r = Ring::new(cfg(7, &[7]));
    let fx = start(&mut r, false);
    assert_eq!(fx.new_leader(), Some(Some(7)));
    assert!(fx.messages().is_empty());
}

#[test]
fn nonsense_from_the_network_is_ignored() {
    // The Algorithm contract: input from the network may be anything; ids outside the
    // roster or other algorithms' messages are ignored, never a panic.
    let mut r = node(2);
    let _ = start(&mut r, false);
    for from in [3, 2, 0, 999] {
        for msg in garbage() {
            let fx = deliver(&mut r, from, msg.clone());
            assert!(fx.is_empty(), "{msg:?} from {from}: {fx:?}");
        }
    }
    // Strangers in the list or as initiator/leader; an empty list from a member.
    for msg in [
        election(3, &[3, 8], 0),
        election(9, &[3], 0),
        coordinator(3, 9, 1),
        coordinator(9, 5, 1),
    ] {
        let fx = deliver(&mut r, 3, msg.clone());
        assert!(fx.is_empty(), "{msg:?}: {fx:?}");
    }
    let _ = deliver(&mut r, 3, election(3, &[], u64::MAX));
    assert_eq!(r.leader(), None);
}

#[test]
fn after_a_heal_the_split_brain_rule_elects_or_follows() {
    // Beyond the textbook (ring_common's split-brain rule, on a heartbeat from a leader
    // this node does not follow): a leader hearing a lower leader calls an election,
    // whose lap elects the highest live id, numbered above the claim; a node without a
    // leader follows a higher one; a follower of someone else leaves it to its leader.
    let mut r = node(5);
    let _ = start_electing(&mut r);
    let _ = deliver(&mut r, 1, election(5, &[5, 2, 4, 3, 1], 0));
    assert_eq!(r.leader(), Some(5));
    let fx = step(&mut r, |a, out| a.on_foreign_leader(3, 9, out));
    assert!(fx.started_election());
    assert!(fx
        .messages()
        .iter()
        .any(|m| matches!(m, Message::RingElection { initiator: 5, epoch, .. } if *epoch >= 9)));

    let mut r = node(4);
    let _ = start(&mut r, false);
    let fx = step(&mut r, |a, out| a.on_foreign_leader(5, 9, out));
    assert_eq!(fx.new_leader(), Some(Some(5)));
    assert!(fx.messages().is_empty());
    assert!(r.term() >= 9);

    let mut r = node(2);
    let _ = deliver(&mut r, 3, coordinator(3, 5, 4));
    assert_eq!(r.leader(), Some(5));
    let fx = step(&mut r, |a, out| a.on_foreign_leader(1, 9, out));
    assert!(fx.is_quiet(), "5 hears 1 too and acts: {fx:?}");
    assert_eq!(r.leader(), Some(5));
}

#[test]
fn a_member_heard_from_between_two_give_ups_is_not_skipped() {
    // A give-up is a strike, not a verdict (ring_common::STRIKES): anything heard from
    // the member between two give-ups (here: the link says it is alive again) starts
    // the count again, so the message goes to it once more instead of past it.
    let mut r = node(2);
    let fx = start_electing(&mut r);
    let (to, msg) = fx.sends().pop().expect("ELECTION");
    assert_eq!(to, 4);
    let fx = step(&mut r, |a, out| a.on_peer_unreachable(4, msg.clone(), out));
    assert_eq!(fx.sends(), vec![(4, msg.clone())]);
    let _ = step(&mut r, |a, out| a.on_peer_alive(4, out));
    let fx = step(&mut r, |a, out| a.on_peer_unreachable(4, msg.clone(), out));
    assert_eq!(
        fx.sends(),
        vec![(4, msg.clone())],
        "heard from: a first strike again"
    );
    let fx = step(&mut r, |a, out| a.on_peer_unreachable(4, msg.clone(), out));
    assert_eq!(fx.sends(), vec![(3, msg)], "two in a row: skipped");
}

#[test]
fn a_follower_drops_a_dead_lap_but_forwards_a_lap_of_its_token_or_after_losing_its_leader() {
    // ring_common, "Dead laps": an ELECTION numbered below the token a follower holds
    // was started before that token was decided; completing it would name the leader
    // again with one more term. A lap numbered at the token (its leader died and a
    // node that knew the token started it), or any lap once the leader is lost, goes on.
    let mut r = node(1);
    let _ = start(&mut r, false);
    let _ = deliver(&mut r, 3, coordinator(2, 5, 7));
    assert_eq!(r.leader(), Some(5));
    let fx = deliver(&mut r, 3, election(3, &[3], 6));
    assert!(fx.is_quiet(), "a dead lap is dropped: {fx:?}");
    assert!(!r.is_electing());
    assert_eq!(r.term(), 7);

    let fx = deliver(&mut r, 3, election(3, &[3], 7));
    assert_eq!(fx.sends(), vec![(5, election(3, &[3, 1], 7))]);

    let mut r = node(1);
    let _ = start(&mut r, false);
    let _ = deliver(&mut r, 3, coordinator(2, 5, 7));
    let _ = step(&mut r, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    let fx = deliver(&mut r, 3, election(3, &[3], 6));
    assert_eq!(
        fx.sends(),
        vec![(2, election(3, &[3, 1], 7))],
        "without a leader every lap is forwarded (numbered at the highest epoch known)"
    );
}
