//! Rules of the Improved Bully algorithm (Soundarabai et al. 2014, as summarised in the
//! seed student report §3.2), checked one transition at a time on a single node.

use super::ImprovedBully;
use crate::algorithms::tests::*;
use crate::contract::algorithm::{Algorithm, LeaderLoss, Timer};
use crate::contract::message::{ElectionTag, Message, MessageType};
use crate::NodeId;

const RING: [NodeId; 5] = [1, 2, 3, 4, 5];

fn node(me: NodeId) -> ImprovedBully {
    ImprovedBully::new(cfg(me, &RING))
}

/// Node `me` following 5, announced in epoch 1.
fn following_5(me: NodeId) -> ImprovedBully {
    let mut b = node(me);
    let _ = deliver(
        &mut b,
        5,
        Message::Coordinator {
            leader: 5,
            epoch: 1,
            tag: tag_of(5),
        },
    );
    b
}

fn tag_of(initiator: NodeId) -> ElectionTag {
    ElectionTag {
        initiator,
        seq: 4097,
    }
}

fn election_tag(fx: &Fx) -> ElectionTag {
    let tags: Vec<ElectionTag> = fx
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            Message::Election { tag, .. } => Some(tag),
            _ => None,
        })
        .collect();
    assert!(!tags.is_empty(), "no ELECTION in {fx:?}");
    assert!(tags.iter().all(|t| *t == tags[0]), "one election: {tags:?}");
    tags[0]
}

fn coordinator_of(fx: &Fx) -> Option<NodeId> {
    fx.messages().into_iter().find_map(|m| match m {
        Message::Coordinator { leader, .. } => Some(leader),
        _ => None,
    })
}

/// Node `me` has initiated an election; returns the tag it sent.
fn initiating(me: NodeId) -> (ImprovedBully, ElectionTag) {
    let mut b = node(me);
    let fx = start_electing(&mut b);
    let tag = election_tag(&fx);
    (b, tag)
}

fn ok(from: NodeId, tag: ElectionTag) -> Message {
    Message::Ok {
        responder: from,
        tag,
    }
}

#[test]
fn the_initiator_asks_every_higher_id_and_waits_t() {
    // Report §3.2: the initiator sends ELECTION to all processes with a higher id and
    // waits T for their answers.
    let mut b = node(2);
    let fx = start_electing(&mut b);
    assert_eq!(fx.recipients(), vec![3, 4, 5]);
    assert!(fx
        .sends()
        .iter()
        .all(|(_, m)| m.kind() == MessageType::Election));
    assert_eq!(election_tag(&fx).initiator, 2);
    assert!(fx.armed(Timer::Answer));
    assert!(b.is_electing());
}

#[test]
fn a_receiver_answers_ok_with_its_id_and_raises_its_flag_without_electing() {
    // Soundarabai et al.: a receiver of ELECTION answers OK carrying its own id and does
    // not start an election of its own (this is what saves the Bully cascade); its
    // election flag is raised and it waits T' for the outcome.
    let mut b = node(3);
    let _ = start(&mut b, false);
    let fx = deliver(
        &mut b,
        1,
        Message::Election {
            tag: tag_of(1),
            epoch: 0,
        },
    );
    assert_eq!(fx.sends(), vec![(1, ok(3, tag_of(1)))]);
    assert!(!fx.started_election(), "no election of its own");
    assert!(fx.armed(Timer::Coordinator), "waits T' for COORDINATOR");
    assert!(b.is_electing(), "flag raised");
    // Another ELECTION meanwhile is answered, still without an election.
    let fx = deliver(
        &mut b,
        2,
        Message::Election {
            tag: tag_of(2),
            epoch: 0,
        },
    );
    assert_eq!(fx.sends(), vec![(2, ok(3, tag_of(2)))]);
    assert!(!fx.started_election());
}

#[test]
fn once_every_higher_id_answered_the_highest_responder_is_told_it_is_coordinator() {
    // Report §3.2: the initiator picks the highest id among the OKs and sends it
    // YOU_ARE_COORDINATOR — one message, not a cascade.
    let (mut b, tag) = initiating(2);
    assert!(
        deliver(&mut b, 5, ok(5, tag)).is_quiet(),
        "3 and 4 still to answer"
    );
    assert!(deliver(&mut b, 3, ok(3, tag)).is_quiet());
    let fx = deliver(&mut b, 4, ok(4, tag));
    assert!(fx.cancelled(Timer::Answer), "no need to wait T any more");
    assert_eq!(fx.messages().len(), 1, "{fx:?}");
    match &fx.sent_to(5)[..] {
        [Message::YouAreCoordinator { tag: t, .. }] => assert_eq!(*t, tag),
        other => panic!("expected YOU_ARE_COORDINATOR to 5, got {other:?}"),
    }
    assert!(fx.armed(Timer::Coordinator), "waits T' for COORDINATOR");
    assert_eq!(b.leader(), None);
}

#[test]
fn after_t_the_highest_of_the_responders_so_far_is_chosen() {
    // Report §3.2: the initiator waits T for the OKs; whoever answered by then is a
    // candidate, and the highest of them is chosen.
    // With 5 dead, only 3 and 4 answer; after T the initiator hands over to 4.
    let (mut b, tag) = initiating(2);
    let _ = deliver(&mut b, 4, ok(4, tag));
    let _ = deliver(&mut b, 3, ok(3, tag));
    let fx = fire(&mut b, Timer::Answer);
    assert_eq!(fx.recipients(), vec![4]);
    assert!(matches!(
        fx.sent_to(4)[..],
        [Message::YouAreCoordinator { .. }]
    ));
}

#[test]
fn no_answer_within_t_makes_the_initiator_coordinator() {
    // Report §3.2: if no higher process answers within T, the initiator is the highest
    // alive and announces itself to everyone.
    let (mut b, _) = initiating(3);
    let before = b.term();
    let fx = fire(&mut b, Timer::Answer);
    assert_eq!(coordinator_of(&fx), Some(3));
    assert_eq!(fx.new_leader(), Some(Some(3)));
    assert!(b.term() > before);
    assert_eq!(b.state(), "leader");
}

#[test]
fn you_are_coordinator_makes_the_receiver_cross_check_above_itself() {
    // Soundarabai et al.: the chosen node checks that nobody above it is alive by
    // sending ELECTION to the ids above itself, in the same election.
    let mut b = node(4);
    let _ = start(&mut b, false);
    let tag = tag_of(2);
    let _ = deliver(&mut b, 2, Message::Election { tag, epoch: 0 });
    let fx = deliver(&mut b, 2, Message::YouAreCoordinator { tag, epoch: 0 });
    assert_eq!(fx.recipients(), vec![5]);
    assert_eq!(election_tag(&fx), tag, "the same election");
    assert!(fx.armed(Timer::Answer));
    // 5 answers: the election is handed on to it in the same way.
    let fx = deliver(&mut b, 5, ok(5, tag));
    assert!(matches!(
        fx.sent_to(5)[..],
        [Message::YouAreCoordinator { .. }]
    ));
    // A duplicate YOU_ARE_COORDINATOR while cross-checking does not restart it.
    let mut b = node(4);
    let _ = deliver(&mut b, 2, Message::YouAreCoordinator { tag, epoch: 0 });
    let fx = deliver(&mut b, 2, Message::YouAreCoordinator { tag, epoch: 0 });
    assert!(fx.is_empty(), "{fx:?}");
}

#[test]
fn the_highest_id_told_it_is_coordinator_announces_itself_at_once() {
    let mut b = node(5);
    let _ = start(&mut b, false);
    let fx = deliver(
        &mut b,
        2,
        Message::YouAreCoordinator {
            tag: tag_of(2),
            epoch: 6,
        },
    );
    assert!(fx.sends().is_empty(), "nobody above 5 to check");
    assert_eq!(coordinator_of(&fx), Some(5));
    assert!(b.term() > 6, "above the epoch it was handed");
}

#[test]
fn without_coordinator_within_t_prime_a_flagged_or_handing_node_elects() {
    // Report §3.2: a node whose flag is raised and that sees no COORDINATOR within T'
    // starts an election itself; so does an initiator whose chosen node died.
    let mut b = node(3);
    let _ = start(&mut b, false);
    let _ = deliver(
        &mut b,
        1,
        Message::Election {
            tag: tag_of(1),
            epoch: 0,
        },
    );
    let fx = fire(&mut b, Timer::Coordinator);
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![4, 5]);
    assert_eq!(election_tag(&fx).initiator, 3, "its own election");

    let (mut b, tag) = initiating(3);
    let _ = deliver(&mut b, 4, ok(4, tag));
    let _ = deliver(&mut b, 5, ok(5, tag));
    let fx = fire(&mut b, Timer::Coordinator);
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![4, 5]);
    assert!(election_tag(&fx).seq > tag.seq, "a new election");
}

#[test]
fn coordinator_from_above_is_followed_and_from_below_is_bullied() {
    // COORDINATOR lowers the flag and sets the leader; a lower id claiming to lead
    // while this node is alive is answered with an election, as in Bully.
    let mut b = node(3);
    let _ = start(&mut b, false);
    let _ = deliver(
        &mut b,
        1,
        Message::Election {
            tag: tag_of(1),
            epoch: 0,
        },
    );
    let fx = deliver(
        &mut b,
        5,
        Message::Coordinator {
            leader: 5,
            epoch: 3,
            tag: tag_of(1),
        },
    );
    assert_eq!(fx.new_leader(), Some(Some(5)));
    assert!(fx.cancelled(Timer::Coordinator));
    assert!(!b.is_electing(), "flag lowered");
    assert!(b.term() >= 3);
    assert!(fire(&mut b, Timer::Coordinator).is_empty(), "T' is over");

    let mut b = node(3);
    let _ = start(&mut b, false);
    let fx = deliver(
        &mut b,
        2,
        Message::Coordinator {
            leader: 2,
            epoch: 3,
            tag: tag_of(2),
        },
    );
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![4, 5]);
    assert_eq!(b.leader(), None);
}

#[test]
fn a_flagged_node_does_not_start_a_second_election_when_the_leader_is_lost() {
    // "Only one election at a time": a raised flag means an election is already
    // running, so losing the leader then adds no ELECTION messages.
    let mut b = node(3);
    let _ = start(&mut b, false);
    let _ = deliver(
        &mut b,
        5,
        Message::Coordinator {
            leader: 5,
            epoch: 1,
            tag: tag_of(5),
        },
    );
    let _ = deliver(
        &mut b,
        1,
        Message::Election {
            tag: tag_of(1),
            epoch: 1,
        },
    );
    let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert!(fx.messages().is_empty(), "{fx:?}");
    assert!(!fx.started_election());
    // A plain follower does call one (told; on silence only the successor does).
    let mut b = following_5(3);
    let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Told, out));
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![4, 5]);
    // On silence the member below the successor waits its turn here (unlike Bully:
    // its election would hand the group to the successor a T late).
    let mut b = following_5(3);
    let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert!(!fx.started_election(), "{fx:?}");
    assert!(fx.messages().is_empty(), "{fx:?}");
}

#[test]
fn nonsense_from_the_network_is_ignored() {
    // The Algorithm contract: input from the network may be anything; what does not fit
    // the rules is ignored, never a panic.
    let mut b = node(3);
    let _ = start(&mut b, false);
    let own = [
        MessageType::Election,
        MessageType::Ok,
        MessageType::Coordinator,
        MessageType::YouAreCoordinator,
    ];
    for from in [1, 3, 5, 0, 999] {
        for msg in foreign_vocabulary(&own) {
            let fx = deliver(&mut b, from, msg.clone());
            assert!(fx.is_empty(), "{msg:?} from {from}: {fx:?}");
        }
    }
    let tag = tag_of(5);
    for (from, msg) in [
        // ELECTION and YOU_ARE_COORDINATOR only ever come from below.
        (5, Message::Election { tag, epoch: 0 }),
        (4, Message::YouAreCoordinator { tag, epoch: 0 }),
        (3, Message::YouAreCoordinator { tag, epoch: 0 }),
        // An OK nobody asked for; a COORDINATOR speaking for someone else.
        (4, ok(4, tag)),
        (
            4,
            Message::Coordinator {
                leader: 5,
                epoch: 1,
                tag,
            },
        ),
    ] {
        let fx = deliver(&mut b, from, msg.clone());
        assert!(fx.is_empty(), "{msg:?} from {from}: {fx:?}");
    }
    assert_eq!(b.leader(), None);
    assert!(!b.is_electing());
    // An OK whose body names another responder counts for its authenticated sender.
    let (mut b, tag) = initiating(3);
    let _ = deliver(&mut b, 4, ok(99, tag));
    let fx = fire(&mut b, Timer::Answer);
    assert_eq!(fx.recipients(), vec![4]);
}

#[test]
fn several_lower_claimants_are_each_answered_once_per_claimed_epoch() {
    // electd's storm rule (module docs): the once-per-claimed-epoch answer is kept per
    // claimant; claimants whose heartbeats alternate are not each answered again at
    // every heartbeat (a COORDINATOR storm in a saturated cold start).
    let (mut b, _) = initiating(3);
    let _ = fire(&mut b, Timer::Answer);
    let term = b.term();
    for round in 0..3 {
        for claimant in [1, 2] {
            let fx = step(&mut b, |a, out| a.on_foreign_leader(claimant, term, out));
            let want = if round == 0 { vec![claimant] } else { vec![] };
            assert_eq!(fx.recipients(), want, "round {round}, claimant {claimant}");
            assert!(!fx.started_election());
        }
    }
    assert_eq!((b.leader(), b.term()), (Some(3), term));
}

#[test]
fn after_a_heal_a_lower_leader_is_bullied_and_a_higher_one_followed() {
    // Beyond the paper (split brain after a partition heals): a heartbeat from a
    // leader this node does not follow is a leadership claim. electd's storm rule (see
    // the module docs): a leader answers a lower claimant below its token with its
    // unchanged COORDINATOR, to that claimant alone, once per claimed epoch: no
    // election, no new epoch, no announcement to everyone. (Fencing: the node layer
    // leaves that claim to this answer and sends no HeartbeatAck, which would make
    // the claimant re-elect above the leader it is to follow.) A lower claimant above
    // the leader's epoch would find that COORDINATOR stale: the leader takes a new
    // epoch above the claim by an election. A higher claimant with a newer epoch is
    // followed, and a leader steps down for it.
    let (mut b, tag) = initiating(3);
    let _ = fire(&mut b, Timer::Answer);
    assert_eq!(b.leader(), Some(3));
    let term = b.term();
    assert!(b.answers_stale_claim(2));
    let fx = step(&mut b, |a, out| a.on_foreign_leader(2, term, out));
    assert!(!fx.started_election());
    assert!(fx.broadcasts().is_empty());
    assert_eq!(
        fx.sends(),
        vec![(
            2,
            Message::Coordinator {
                leader: 3,
                epoch: term,
                tag,
            }
        )]
    );
    assert_eq!(fx.new_leader(), None);
    assert_eq!((b.leader(), b.term(), b.state()), (Some(3), term, "leader"));
    // Once per claimed epoch: the claimant's next heartbeat draws nothing.
    let fx = step(&mut b, |a, out| a.on_foreign_leader(2, term, out));
    assert!(fx.is_quiet());
    assert!(!fx.started_election());
    // A claim above the leader's epoch: a new epoch above it, by an election.
    let fx = step(&mut b, |a, out| a.on_foreign_leader(2, term + 1, out));
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![4, 5]);

    let (mut b, _) = initiating(3);
    let _ = fire(&mut b, Timer::Answer);
    let newer = b.term() + 1;
    let fx = step(&mut b, |a, out| a.on_foreign_leader(5, newer, out));
    assert_eq!(fx.new_leader(), Some(Some(5)));
    assert!(fx.messages().is_empty());
    assert_eq!(b.state(), "follower");
}

// ---- Policy: priorities (off by default) ----

#[test]
fn the_highest_ranked_responder_is_told_it_is_coordinator_not_the_highest_id() {
    // Node 3 has the highest priority: the initiator 2 asks 4, 5 and 3 (everyone ranked
    // above it) and hands the election to 3.
    let mut c = cfg(2, &RING);
    c.options.policy.priority = [(3, 200)].into_iter().collect();
    let mut b = ImprovedBully::new(c);
    let fx = start_electing(&mut b);
    let tag = election_tag(&fx);
    assert_eq!(fx.recipients(), vec![4, 5, 3]);
    assert!(deliver(&mut b, 5, ok(5, tag)).is_quiet());
    assert!(deliver(&mut b, 3, ok(3, tag)).is_quiet());
    let fx = deliver(&mut b, 4, ok(4, tag));
    match &fx.sent_to(3)[..] {
        [Message::YouAreCoordinator { tag: t, .. }] => assert_eq!(*t, tag),
        other => panic!("expected YOU_ARE_COORDINATOR to 3, got {other:?}"),
    }
}
