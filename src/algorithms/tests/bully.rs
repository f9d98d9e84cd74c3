//! Rules of the Bully algorithm (Garcia-Molina 1982, in the textbook form of the seed
//! course notes and slides), checked one transition at a time on a single node.

use super::Bully;
use crate::algorithms::tests::*;
use crate::contract::algorithm::{Algorithm, LeaderLoss, Timer};
use crate::contract::message::{ElectionTag, Message, MessageType};
use crate::NodeId;

const RING: [NodeId; 5] = [1, 2, 3, 4, 5];

fn node(me: NodeId) -> Bully {
    Bully::new(cfg(me, &RING))
}

/// The tag of the ELECTION messages in `fx` (they must all carry the same one).
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
    assert!(tags.iter().all(|t| *t == tags[0]), "one cascade: {tags:?}");
    tags[0]
}

fn coordinator_of(fx: &Fx) -> Option<(NodeId, u64)> {
    fx.messages().into_iter().find_map(|m| match m {
        Message::Coordinator { leader, epoch, .. } => Some((leader, epoch)),
        _ => None,
    })
}

/// Node `me` has called an election; returns the tag of its cascade.
fn electing(me: NodeId) -> (Bully, ElectionTag) {
    let mut b = node(me);
    let fx = start_electing(&mut b);
    let tag = election_tag(&fx);
    (b, tag)
}

/// Node `me`, started without an election, following 5 (its COORDINATOR heard).
fn follower(me: NodeId) -> Bully {
    let mut b = node(me);
    let _ = start(&mut b, false);
    let tag = ElectionTag {
        initiator: 5,
        seq: 4097,
    };
    let _ = deliver(
        &mut b,
        5,
        Message::Coordinator {
            leader: 5,
            epoch: 1,
            tag,
        },
    );
    assert_eq!(b.leader(), Some(5));
    b
}

#[test]
fn an_election_goes_to_every_higher_id_and_arms_the_answer_timer() {
    // Course notes: "P sends an ELECTION message to processes with higher numbers" and
    // waits T = 2·Ttrans + Tprocess for an answer.
    let mut b = node(2);
    let fx = start_electing(&mut b);
    assert_eq!(fx.recipients(), vec![3, 4, 5], "only the higher ids");
    assert!(fx
        .sends()
        .iter()
        .all(|(_, m)| m.kind() == MessageType::Election));
    assert_eq!(election_tag(&fx).initiator, 2, "a fresh cascade of its own");
    assert!(fx.armed(Timer::Answer), "waits T for an answer");
    assert!(fx.leader_changes().is_empty());
    assert!(b.is_electing());
    assert_eq!(b.leader(), None);
}

#[test]
fn the_highest_id_elects_itself_with_one_coordinator_to_everyone() {
    // Slides: "If the election is started by the highest ID process n−1 messages are
    // enough": no ELECTION, one COORDINATOR to every other member.
    let mut b = node(5);
    let before = b.term();
    let fx = start_electing(&mut b);
    assert!(fx.sends().is_empty(), "nobody higher to ask: {fx:?}");
    assert_eq!(fx.messages().len(), 1);
    let (leader, epoch) = coordinator_of(&fx).expect("COORDINATOR broadcast");
    assert_eq!(leader, 5);
    assert!(epoch > before, "a new epoch");
    assert_eq!(fx.leader_changes(), vec![(Some(5), epoch)]);
    assert_eq!(b.leader(), Some(5));
    assert_eq!(b.term(), epoch);
    assert!(!b.is_electing());
}

#[test]
fn an_election_from_a_lower_id_is_answered_and_joined_once_per_cascade() {
    // Garcia-Molina 1982 / course notes: a process receiving ELECTION answers OK and
    // begins an election of its own — unless it has begun one already. The cascade tag
    // makes "already" precise: node 3 joins 1's cascade once however many ELECTIONs of
    // it arrive (from 1 and from 2, which joined it too).
    let mut b = node(3);
    let _ = start(&mut b, false);
    let tag = ElectionTag {
        initiator: 1,
        seq: 4097,
    };
    let fx = deliver(&mut b, 1, Message::Election { tag, epoch: 0 });
    assert_eq!(
        fx.sent_to(1),
        vec![Message::Ok { responder: 3, tag }],
        "OK back to the sender, same tag"
    );
    assert!(fx.started_election());
    assert_eq!(
        fx.sends()
            .iter()
            .filter(|(_, m)| m.kind() == MessageType::Election)
            .map(|(to, _)| *to)
            .collect::<Vec<_>>(),
        vec![4, 5],
        "its own ELECTION to the ids above it"
    );
    assert_eq!(
        election_tag(&Fx(fx.0[1..].to_vec())),
        tag,
        "in the same cascade"
    );
    assert!(fx.armed(Timer::Answer));

    // The same cascade again, through node 2: OK, but no second election.
    let fx = deliver(&mut b, 2, Message::Election { tag, epoch: 0 });
    assert_eq!(fx.sends(), vec![(2, Message::Ok { responder: 3, tag })]);
    assert!(!fx.started_election());
}

#[test]
fn a_finished_node_does_not_rejoin_a_cascade_it_has_already_joined() {
    // The cascade tag, not the node's state, decides "unless it has begun one already":
    // 5 won 1's cascade at once; the same cascade reaching it again through 2 is
    // answered but not announced a second time.
    let mut b = node(5);
    let _ = start(&mut b, false);
    let tag = ElectionTag {
        initiator: 1,
        seq: 4097,
    };
    let fx = deliver(&mut b, 1, Message::Election { tag, epoch: 0 });
    assert!(coordinator_of(&fx).is_some());
    let epoch = b.term();
    let fx = deliver(&mut b, 2, Message::Election { tag, epoch: 0 });
    assert_eq!(fx.sends(), vec![(2, Message::Ok { responder: 5, tag })]);
    assert_eq!(coordinator_of(&fx), None, "no second COORDINATOR: {fx:?}");
    assert_eq!(b.term(), epoch);
    // A new cascade is joined.
    let newer = ElectionTag { seq: 4098, ..tag };
    let fx = deliver(
        &mut b,
        1,
        Message::Election {
            tag: newer,
            epoch: 0,
        },
    );
    assert!(coordinator_of(&fx).is_some());
}

#[test]
fn an_electing_node_answers_other_cascades_without_starting_again() {
    // "… unless it has begun one already": while its own election runs, a node still
    // answers OK (it is alive and higher) but does not start a second one.
    let (mut b, _) = electing(3);
    let other = ElectionTag {
        initiator: 2,
        seq: 4097,
    };
    let fx = deliver(
        &mut b,
        2,
        Message::Election {
            tag: other,
            epoch: 0,
        },
    );
    assert_eq!(
        fx.sends(),
        vec![(
            2,
            Message::Ok {
                responder: 3,
                tag: other
            }
        )]
    );
    assert!(!fx.started_election());
}

#[test]
fn no_answer_within_t_makes_the_node_coordinator() {
    // Course notes: "If none arrives within time T, the process considers itself as
    // the coordinator and sends a coordinator message" to the others.
    let (mut b, tag) = electing(3);
    let before = b.term();
    let fx = fire(&mut b, Timer::Answer);
    let (leader, epoch) = coordinator_of(&fx).expect("COORDINATOR");
    assert_eq!(leader, 3);
    assert!(epoch > before);
    assert!(
        fx.messages()
            .iter()
            .any(|m| matches!(m, Message::Coordinator { tag: t, .. } if *t == tag)),
        "COORDINATOR ends the cascade it won"
    );
    assert_eq!(fx.new_leader(), Some(Some(3)));
    for t in [Timer::Answer, Timer::Coordinator, Timer::Retry] {
        assert!(fx.cancelled(t), "{t:?} cancelled once a leader is known");
    }
    assert_eq!(b.state(), "leader");
}

#[test]
fn an_ok_ends_the_wait_for_answers_and_arms_t_prime() {
    // Course notes: "Otherwise, the process waits a further period T' for a
    // coordinator message … If none arrives, it begins another election."
    let (mut b, tag) = electing(3);
    let fx = deliver(&mut b, 5, Message::Ok { responder: 5, tag });
    assert!(fx.cancelled(Timer::Answer));
    assert!(fx.armed(Timer::Coordinator), "waits T' for COORDINATOR");
    assert!(fx.messages().is_empty());
    assert!(b.is_electing(), "still waiting for the outcome");

    // A late answer timer does not make it leader any more.
    let fx = fire(&mut b, Timer::Answer);
    assert!(fx.is_quiet(), "{fx:?}");
    assert_eq!(b.leader(), None);

    // No COORDINATOR within T': a new election (a new cascade) to the higher ids.
    let fx = fire(&mut b, Timer::Coordinator);
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![4, 5]);
    let again = election_tag(&fx);
    assert_eq!(again.initiator, 3);
    assert!(again.seq > tag.seq, "a fresh cascade");
}

#[test]
fn an_ok_of_another_cascade_or_from_below_is_ignored() {
    // Only an answer to the node's current ELECTION counts: a late OK of an abandoned
    // cascade, or an OK from a lower id (which was never asked), changes nothing.
    let (mut b, tag) = electing(3);
    let stale = ElectionTag {
        seq: tag.seq.wrapping_sub(1),
        ..tag
    };
    assert!(deliver(
        &mut b,
        5,
        Message::Ok {
            responder: 5,
            tag: stale
        }
    )
    .is_empty());
    assert!(deliver(&mut b, 2, Message::Ok { responder: 2, tag }).is_empty());
    // So T still passes without an answer and the node wins.
    let fx = fire(&mut b, Timer::Answer);
    assert_eq!(coordinator_of(&fx).map(|(l, _)| l), Some(3));
}

#[test]
fn a_coordinator_from_a_higher_id_is_followed_and_ends_the_election() {
    // Course notes: "If a process receives a coordinator message, it sets its variable
    // elected to the identifier of the coordinator contained within it."
    let (mut b, tag) = electing(3);
    let fx = deliver(&mut b, 5, Message::Ok { responder: 5, tag });
    assert!(fx.armed(Timer::Coordinator));
    let fx = deliver(
        &mut b,
        5,
        Message::Coordinator {
            leader: 5,
            epoch: 9,
            tag,
        },
    );
    assert_eq!(fx.new_leader(), Some(Some(5)));
    assert!(
        fx.leader_changes().iter().all(|(_, term)| *term >= 9),
        "epoch carried"
    );
    assert!(fx.cancelled(Timer::Coordinator));
    assert!(fx.messages().is_empty());
    assert_eq!(b.leader(), Some(5));
    assert!(b.term() >= 9);
    assert!(!b.is_electing());
    // T' firing late does not restart anything.
    assert!(fire(&mut b, Timer::Coordinator).is_empty());
}

#[test]
fn a_coordinator_from_a_lower_id_is_bullied() {
    // The Bully rule: a live process with a higher id does not accept a lower
    // coordinator; it calls an election, which it (or someone higher) will win.
    let mut b = node(3);
    let _ = start(&mut b, false);
    let tag = ElectionTag {
        initiator: 2,
        seq: 4097,
    };
    let fx = deliver(
        &mut b,
        2,
        Message::Coordinator {
            leader: 2,
            epoch: 4,
            tag,
        },
    );
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![4, 5]);
    assert!(fx.leader_changes().is_empty(), "does not follow 2");
    assert_eq!(b.leader(), None);
    // Its own announcement, once it wins, is numbered above the lower claimant's.
    let fx = fire(&mut b, Timer::Answer);
    let (_, epoch) = coordinator_of(&fx).expect("COORDINATOR");
    assert!(epoch > 4);
}

#[test]
fn a_restarted_node_calls_an_election_and_a_waiting_one_arms_a_watchdog() {
    // Course notes: "When a process is started to replace a crashed process, it begins
    // an election." Started without an election, a node still calls one if no leader
    // shows up (the watchdog), but not if one did.
    let mut b = node(2);
    let fx = start(&mut b, false);
    assert!(fx.messages().is_empty());
    assert!(!fx.started_election());
    assert!(fx.armed(Timer::Retry));
    let fx = fire(&mut b, Timer::Retry);
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![3, 4, 5]);

    let mut b = node(2);
    let _ = start(&mut b, false);
    let tag = ElectionTag {
        initiator: 5,
        seq: 4097,
    };
    let _ = deliver(
        &mut b,
        5,
        Message::Coordinator {
            leader: 5,
            epoch: 1,
            tag,
        },
    );
    assert!(fire(&mut b, Timer::Retry).is_empty(), "a leader is known");
}

#[test]
fn a_lost_leader_makes_the_node_elect_and_a_resignation_lets_the_successor_go_first() {
    // Silence (the failure detector): the two highest below the lost leader call an
    // election at once. A graceful resignation of 5: only 4, the highest below it,
    // calls one at once; the others wait for its COORDINATOR under a watchdog.
    // Told (the simulator's detection step): the textbook, elect at once.
    let mut b = follower(2);
    let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Told, out));
    assert_eq!(fx.leader_changes().first().map(|c| c.0), Some(None));
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![3, 4, 5]);

    // Silence (the failure detector): the successor and the one below it elect at
    // once (each to every node above it), the others wait for a COORDINATOR under the
    // watchdog.
    let mut b = follower(4);
    let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![5]);
    let mut b = follower(3);
    let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![4, 5]);
    let mut b = follower(2);
    let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert_eq!(fx.leader_changes().first().map(|c| c.0), Some(None));
    assert!(!fx.started_election());
    assert!(fx.messages().is_empty());
    assert!(fx.armed(Timer::Retry));

    let mut b = follower(4);
    let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Resigned, out));
    assert!(fx.started_election());
    assert_eq!(fx.recipients(), vec![5]);

    let mut b = follower(2);
    let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Resigned, out));
    assert!(!fx.started_election());
    assert!(fx.messages().is_empty());
    assert!(fx.armed(Timer::Retry));
    assert_eq!(b.leader(), None);
}

#[test]
fn a_lost_leader_lets_each_member_between_go_first_for_one_turn_each() {
    // Issue 28 (the nemesis run): with the successor dead, cut off or drained, the
    // others waited a whole watchdog of [T + T', 2(T + T')] before anyone called an
    // election. Now the member k ranks below the successor waits k turns of
    // T + 2H (drawn within one heartbeat more): the successor's election, plus the
    // members' detectors firing up to a heartbeat apart.
    // On silence the member just below the successor calls at once too (both may be
    // gone: killed together, cut off together), so every turn comes one earlier.
    let t = crate::contract::algorithm::Timing::default();
    let turn = t.answer_timeout + t.heartbeat * 2;
    for (me, resigned_turns) in [(4u32, 0u32), (3, 1), (2, 2), (1, 3)] {
        let mut b = follower(me);
        for why in [LeaderLoss::Silent, LeaderLoss::Resigned] {
            let turns = match why {
                LeaderLoss::Silent => resigned_turns.saturating_sub(1),
                _ => resigned_turns,
            };
            let mut b2 = follower(me);
            let fx = step(&mut b2, |a, out| a.on_leader_lost(why, out));
            if turns == 0 {
                assert!(fx.started_election(), "node {me}: calls at once ({why:?})");
                continue;
            }
            assert!(!fx.started_election(), "node {me} waits its turn ({why:?})");
            let (lo, hi) = fx.armed_range(Timer::Retry).expect("a turn watchdog");
            assert_eq!(lo, turn * turns, "node {me}: {turns} turns");
            assert_eq!(
                hi,
                turn * turns + t.heartbeat,
                "node {me}: one heartbeat of draw"
            );
            // Its turn comes and nobody announced: it calls its election.
            let fx = fire(&mut b2, Timer::Retry);
            assert!(fx.started_election(), "node {me} calls when its turn comes");
        }
        // A COORDINATOR before its turn: it follows and the turn passes silently.
        let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
        if resigned_turns > 1 {
            assert!(!fx.started_election());
            let _ = deliver(
                &mut b,
                4,
                Message::Coordinator {
                    leader: 4,
                    epoch: 2,
                    tag: ElectionTag {
                        initiator: 4,
                        seq: 1,
                    },
                },
            );
            assert_eq!(b.leader(), Some(4));
            assert!(
                fire(&mut b, Timer::Retry).is_empty(),
                "a leader came in time"
            );
        }
    }
}

#[test]
fn the_epoch_only_grows_and_is_carried_by_election_messages() {
    // The fencing token: an ELECTION carries the sender's epoch; the winner announces
    // above every epoch it has seen.
    let mut b = node(5);
    let _ = start(&mut b, false);
    let tag = ElectionTag {
        initiator: 1,
        seq: 4097,
    };
    let fx = deliver(&mut b, 1, Message::Election { tag, epoch: 41 });
    assert_eq!(fx.sent_to(1), vec![Message::Ok { responder: 5, tag }]);
    let (leader, epoch) = coordinator_of(&fx).expect("the highest id wins at once");
    assert_eq!(leader, 5);
    assert!(epoch > 41);
    assert!(b.term() > 41);

    // A lower node's ELECTION carries the epoch it knows.
    let mut b = node(1);
    let _ = start(&mut b, false);
    let _ = deliver(
        &mut b,
        4,
        Message::Coordinator {
            leader: 4,
            epoch: 17,
            tag,
        },
    );
    let fx = step(&mut b, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert!(fx
        .messages()
        .iter()
        .all(|m| matches!(m, Message::Election { epoch, .. } if *epoch >= 17)));
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
    ];
    for from in [1, 3, 5, 0, 999] {
        for msg in foreign_vocabulary(&own) {
            let fx = deliver(&mut b, from, msg.clone());
            assert!(fx.is_empty(), "{msg:?} from {from}: {fx:?}");
        }
    }
    let tag = ElectionTag {
        initiator: 5,
        seq: 1,
    };
    // ELECTION from a higher id (it should have gone the other way), an OK nobody asked
    // for, a COORDINATOR speaking for someone else, a node's own id echoed back.
    for (from, msg) in [
        (5, Message::Election { tag, epoch: 0 }),
        (3, Message::Election { tag, epoch: 0 }),
        (4, Message::Ok { responder: 4, tag }),
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
    // Extreme values do not overflow, and the epoch never goes back.
    let before = b.term();
    let _ = deliver(
        &mut b,
        1,
        Message::Election {
            tag: ElectionTag {
                initiator: 1,
                seq: u64::MAX,
            },
            epoch: u64::MAX,
        },
    );
    let _ = fire(&mut b, Timer::Answer);
    assert!(b.term() >= before);
}

#[test]
fn several_lower_claimants_are_each_answered_once_per_claimed_epoch() {
    // electd's storm rule (module docs): the once-per-claimed-epoch answer is kept per
    // claimant; claimants whose heartbeats alternate are not each answered again at
    // every heartbeat (a COORDINATOR storm in a saturated cold start).
    let (mut b, _) = electing(3);
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
    // Beyond the textbook (split brain after a partition heals): a heartbeat from a
    // leader this node does not follow is a leadership claim. electd's storm rule (see
    // the module docs): a leader answers a lower claimant below its token with its
    // unchanged COORDINATOR, to that claimant alone, once per claimed epoch: no
    // election, no new epoch, no announcement to everyone. (Fencing: the node layer
    // leaves that claim to this answer and sends no HeartbeatAck, which would make
    // the claimant re-elect above the leader it is to follow.) A lower claimant above
    // the leader's epoch would find that COORDINATOR stale: the leader takes a new
    // epoch above the claim by an election. A higher claimant with a newer epoch is
    // followed, and a leader steps down for it.
    let (mut b, tag) = electing(3);
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

    let (mut b, _) = electing(3);
    let _ = fire(&mut b, Timer::Answer);
    let newer = b.term() + 1;
    let fx = step(&mut b, |a, out| a.on_foreign_leader(5, newer, out));
    assert_eq!(fx.new_leader(), Some(Some(5)));
    assert!(fx.messages().is_empty());
    assert_eq!(b.state(), "follower");
    assert!(b.term() >= newer);
}

/// Storm rules (electd, not the paper): a node awaiting COORDINATOR takes a higher
/// node's heartbeat as the answer.
mod storms {
    use super::super::*;
    use crate::contract::algorithm::{Effect, Timing};

    fn node(me: NodeId, n: NodeId) -> Bully {
        Bully::new(GroupConfig {
            me,
            ring: (1..=n).collect(),
            timing: Timing::default(),
            options: Default::default(),
            incarnation: 1,
        })
    }

    /// A node that got an OK and waits for COORDINATOR follows the higher node whose
    /// heartbeat arrives instead (its announcement may have been lost), rather than
    /// waiting T' and starting over.
    #[test]
    fn awaiting_coordinator_a_higher_heartbeat_is_the_answer() {
        let mut b = node(1, 3);
        let mut out = Out::new();
        b.on_start(false, &mut out);
        b.call_election(&mut out);
        let tag = b.tag;
        b.on_message(3, Message::Ok { responder: 3, tag }, &mut out);
        assert_eq!(b.state(), "awaiting-coordinator");
        out.drain().for_each(drop);
        // A lower node's heartbeat is no answer.
        b.on_foreign_leader(0, 1, &mut out);
        assert_eq!(b.state(), "awaiting-coordinator");
        b.on_foreign_leader(3, 1, &mut out);
        assert_eq!((b.state(), b.leader()), ("follower", Some(3)));
        let effects: Vec<Effect> = out.drain().collect();
        assert!(
            effects
                .iter()
                .any(|e| matches!(e, Effect::CancelTimer(Timer::Coordinator))),
            "the T' timer is cancelled: {effects:?}"
        );
    }
}

// ---- Policy: priorities and preemption (off by default) ----

fn with_policy(me: NodeId, policy: crate::contract::policy::Policy) -> Bully {
    let mut c = cfg(me, &RING);
    c.options.policy = policy;
    Bully::new(c)
}

fn priorities(pairs: &[(NodeId, u8)]) -> crate::contract::policy::Policy {
    crate::contract::policy::Policy {
        priority: pairs.iter().copied().collect(),
        ..Default::default()
    }
}

#[test]
fn an_election_goes_to_the_members_ranked_above_not_the_higher_ids() {
    // 1 has the highest priority, 5 never leads: node 3 asks 1 and 4 (4 outranks 3 by
    // id at equal priority), lowest rank first.
    let mut b = with_policy(3, priorities(&[(1, 200), (5, 0)]));
    let fx = start_electing(&mut b);
    assert_eq!(fx.recipients(), vec![4, 1]);
}

#[test]
fn a_never_leader_that_nobody_answers_does_not_announce() {
    let mut b = with_policy(5, priorities(&[(5, 0)]));
    start_electing(&mut b);
    let fx = fire(&mut b, Timer::Answer);
    assert_eq!(coordinator_of(&fx), None, "{fx:?}");
    assert!(fx.leader_changes().is_empty());
    assert!(fx.armed(Timer::Retry), "waits under the watchdog");
    assert_eq!(b.leader(), None);
}

#[test]
fn without_preemption_a_lower_leaders_coordinator_is_followed_not_bullied() {
    let policy = crate::contract::policy::Policy {
        preempt: crate::contract::policy::Preempt {
            preempt: false,
            delay: std::time::Duration::ZERO,
        },
        ..Default::default()
    };
    let mut b = with_policy(5, policy);
    let fx = start(&mut b, true);
    assert!(
        fx.sends().is_empty(),
        "listens first, even the top node: {fx:?}"
    );
    assert!(fx.armed(Timer::Retry));
    let tag = ElectionTag {
        initiator: 4,
        seq: 1,
    };
    let fx = deliver(
        &mut b,
        4,
        Message::Coordinator {
            leader: 4,
            epoch: 3,
            tag,
        },
    );
    assert_eq!(fx.leader_changes(), vec![(Some(4), 3)]);
    assert!(
        fx.sends().is_empty(),
        "no cascade against the leader: {fx:?}"
    );
    // An ELECTION of a node below that leader is answered, but joins no cascade.
    let fx = deliver(
        &mut b,
        2,
        Message::Election {
            tag: ElectionTag {
                initiator: 2,
                seq: 1,
            },
            epoch: 3,
        },
    );
    assert_eq!(fx.recipients(), vec![2]);
    assert!(!b.is_electing());
    // Textbook control: the same COORDINATOR makes a preempting node bully it (the
    // top node announces itself above the claimed epoch).
    let mut t = node(5);
    let _ = start(&mut t, false);
    let fx = deliver(
        &mut t,
        4,
        Message::Coordinator {
            leader: 4,
            epoch: 3,
            tag,
        },
    );
    assert_eq!(coordinator_of(&fx), Some((5, 4)), "{fx:?}");
}
