//! Raft's vote rules driven directly through the sans-IO trait (`Algorithm::on_message`),
//! without the simulator: one vote per term across a restart, pre-vote changing no
//! state, leader stickiness, a stale leader told the newer term (Ongaro & Ousterhout
//! §5.1, §5.2, Figure 2; thesis §9.6, §4.2.3). The helpers and imports of the parent module
//! (`tests/sim/raft.rs`) are in scope.

use super::*;
use electd::algorithms::raft::Raft;
use electd::contract::algorithm::{Algorithm, Durable, Effect, GroupConfig, Out, Timer};
use electd::contract::message::Message;

fn raft(me: NodeId, options: Options) -> Raft {
    let mut r = Raft::new(GroupConfig {
        me,
        ring: vec![1, 2, 3, 4, 5].into(),
        timing: Timing::default(),
        options,
        incarnation: 1,
    });
    let mut out = Out::new();
    r.on_start(false, &mut out);
    r
}

/// Feed one message; the replies it sends.
fn feed(r: &mut Raft, from: NodeId, msg: Message) -> Vec<(NodeId, Message)> {
    let mut out = Out::new();
    r.on_message(from, msg, &mut out);
    out.drain()
        .filter_map(|e| match e {
            Effect::Send { to, msg } => Some((to, msg)),
            _ => None,
        })
        .collect()
}

fn vote(term: u64, granted: bool, pre_vote: bool) -> Message {
    Message::Vote {
        term,
        granted,
        pre_vote,
    }
}

/// Reference: §5.2 "each server will vote for at most one candidate in a given
/// term, on a first-come-first-served basis"; Figure 2 (votedFor is persistent).
#[test]
fn one_vote_per_term_even_across_a_restart() {
    let mut r = raft(3, opts(false, true));
    let req = |term| Message::RequestVote {
        term,
        pre_vote: false,
        transfer: false,
    };
    assert_eq!(feed(&mut r, 1, req(1)), vec![(1, vote(1, true, false))]);
    // Duplicate from the same candidate: granted again (idempotent).
    assert_eq!(feed(&mut r, 1, req(1)), vec![(1, vote(1, true, false))]);
    assert_eq!(feed(&mut r, 2, req(1)), vec![(2, vote(1, false, false))]);
    // A restart with the durable state keeps the vote.
    let saved = r.durable().expect("raft has durable state");
    assert_eq!(
        saved,
        Durable {
            term: 1,
            voted_for: Some(1)
        }
    );
    let mut again = raft(3, opts(false, true));
    again.restore(saved);
    let mut out = Out::new();
    again.on_start(true, &mut out);
    assert_eq!(again.term(), 1);
    assert_eq!(
        feed(&mut again, 2, req(1)),
        vec![(2, vote(1, false, false))]
    );
    // A newer term frees the vote (§5.1: a higher term resets votedFor).
    assert_eq!(feed(&mut again, 2, req(2)), vec![(2, vote(2, true, false))]);
    assert_eq!(again.term(), 2);
}

/// Reference: thesis §9.6. Granting a pre-vote changes neither the term nor the
/// vote; a stale pre-vote is refused with the current term.
#[test]
fn pre_vote_changes_no_state() {
    let mut r = raft(3, opts(true, true));
    let pre = |term| Message::RequestVote {
        term,
        pre_vote: true,
        transfer: false,
    };
    assert_eq!(feed(&mut r, 1, pre(1)), vec![(1, vote(1, true, true))]);
    assert_eq!(feed(&mut r, 2, pre(1)), vec![(2, vote(1, true, true))]);
    assert_eq!(r.term(), 0);
    assert_eq!(r.durable().map(|d| d.voted_for), Some(None));
    assert_eq!(
        feed(
            &mut r,
            2,
            Message::RequestVote {
                term: 4,
                pre_vote: false,
                transfer: false,
            }
        ),
        vec![(2, vote(4, true, false))]
    );
    assert_eq!(feed(&mut r, 1, pre(3)), vec![(1, vote(4, false, true))]);
}

/// Reference: thesis §4.2.3 (leader stickiness). A follower that heard its leader
/// within the minimum election timeout refuses votes and pre-votes of a higher term
/// without adopting that term; once the lease lapses it grants them.
#[test]
fn follower_with_a_live_leader_refuses_higher_terms() {
    for pre_vote in [true, false] {
        let mut r = raft(3, opts(pre_vote, true));
        let hb = Message::Heartbeat { term: 2, leader: 1 };
        assert_eq!(
            feed(&mut r, 1, hb),
            vec![(1, Message::HeartbeatAck { term: 2, leader: 0 })]
        );
        assert_eq!(r.leader(), Some(1));
        let req = Message::RequestVote {
            term: 3,
            pre_vote,
            transfer: false,
        };
        assert_eq!(
            feed(&mut r, 2, req.clone()),
            vec![(2, vote(2, false, pre_vote))]
        );
        assert_eq!(
            r.term(),
            2,
            "the term must not move while the leader is alive"
        );
        // The lease (timer Quorum at a follower) lapses: now it grants.
        let mut out = Out::new();
        r.on_timer(Timer::Quorum, &mut out);
        assert_eq!(feed(&mut r, 2, req), vec![(2, vote(3, true, pre_vote))]);
    }
}

/// Reference: §5.1 (a stale leader learns the newer term from any reply and steps
/// down). A heartbeat of a lower term is answered with the higher term.
#[test]
fn stale_leader_is_told_the_newer_term() {
    let mut r = raft(3, opts(true, true));
    feed(
        &mut r,
        2,
        Message::RequestVote {
            term: 5,
            pre_vote: false,
            transfer: false,
        },
    );
    let stale = Message::Heartbeat { term: 4, leader: 1 };
    assert_eq!(
        feed(&mut r, 1, stale),
        vec![(1, Message::HeartbeatAck { term: 5, leader: 0 })]
    );
    assert_eq!(r.leader(), None);
}
