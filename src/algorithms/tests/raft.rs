//! Rules of Raft's leader election (Ongaro & Ousterhout 2014, §5.1–§5.2, Figure 2) and
//! of the thesis extensions electd enables (Ongaro 2014: pre-vote §9.6, leader
//! stickiness §4.2.3, check-quorum §6.2), checked one transition at a time on a single
//! node of a five-member roster (majority 3).

use super::Raft;
use crate::algorithms::tests::*;
use crate::contract::algorithm::{Algorithm, Durable, LeaderLoss, Timer};
use crate::contract::message::{Message, MessageType};
use crate::NodeId;

const RING: [NodeId; 5] = [1, 2, 3, 4, 5];

/// A node with pre-vote on or off (check-quorum on).
fn node(me: NodeId, pre_vote: bool) -> Raft {
    let mut c = cfg(me, &RING);
    c.options.pre_vote = pre_vote;
    Raft::new(c)
}

fn request(term: u64) -> Message {
    Message::RequestVote {
        term,
        pre_vote: false,
        transfer: false,
    }
}

fn pre_request(term: u64) -> Message {
    Message::RequestVote {
        term,
        pre_vote: true,
        transfer: false,
    }
}

fn vote(term: u64, granted: bool) -> Message {
    Message::Vote {
        term,
        granted,
        pre_vote: false,
    }
}

/// The single Vote `fx` sends to `to`: `(term, granted)`.
fn answer(fx: &Fx, to: NodeId) -> (u64, bool) {
    match fx.sent_to(to)[..] {
        [Message::Vote { term, granted, .. }] => (term, granted),
        ref other => panic!("expected one vote to {to}, got {other:?}"),
    }
}

/// A candidate (pre-vote off) that has just asked for votes; returns its term.
fn candidate(me: NodeId) -> (Raft, u64) {
    let mut r = node(me, false);
    let _ = start(&mut r, false);
    let fx = fire(&mut r, Timer::Election);
    let term = r.term();
    assert!(fx.broadcasts().contains(&request(term)));
    (r, term)
}

/// A leader of `term` (pre-vote off), elected with the votes of 2 and 3.
fn leader(me: NodeId) -> (Raft, u64) {
    let (mut r, term) = candidate(me);
    let voters: Vec<NodeId> = RING.iter().copied().filter(|&p| p != me).take(2).collect();
    for v in voters {
        let _ = deliver(&mut r, v, vote(term, true));
    }
    assert_eq!(r.state(), "leader");
    (r, term)
}

#[test]
fn a_follower_waits_a_randomized_election_timeout() {
    // §5.2: election timeouts are chosen randomly from a fixed interval, so that in most
    // cases only one server times out first (the textbook draw: ranked timeouts off).
    let mut c = cfg(1, &RING);
    c.options.ranked_timeouts = false;
    let (min, max) = (c.timing.election_timeout_min, c.timing.election_timeout_max);
    let mut r = Raft::new(c);
    let fx = start(&mut r, false);
    assert_eq!(fx.armed_range(Timer::Election), Some((min, max)));
    assert!(min < max, "a range, not a fixed delay");
    assert!(fx.messages().is_empty());
    assert_eq!(r.state(), "follower");
}

#[test]
fn ranked_timeouts_let_the_highest_follower_fire_first() {
    // electd's ranked timeouts (option `ranked_timeouts`): each follower's window lies
    // in the configured interval, one slot per rank, the highest id first and the
    // leader it follows not counted; the windows of two ranks do not overlap.
    let c = cfg(1, &RING);
    let (min, max) = (c.timing.election_timeout_min, c.timing.election_timeout_max);
    let window = |me: NodeId| {
        let mut r = node(me, true);
        let _ = start(&mut r, false);
        let fx = deliver(&mut r, 5, Message::Heartbeat { term: 1, leader: 5 });
        let (lo, hi) = fx.armed_range(Timer::Election).expect("timeout re-armed");
        assert!(min <= lo && lo <= hi && hi <= max, "{me}: {lo:?}..{hi:?}");
        (lo, hi)
    };
    let windows: Vec<_> = [4, 3, 2, 1].into_iter().map(window).collect();
    for pair in windows.windows(2) {
        assert!(
            pair[0].1 < pair[1].0,
            "higher id strictly first: {windows:?}"
        );
    }
}

#[test]
fn on_timeout_a_candidate_raises_its_term_votes_for_itself_and_asks_everyone() {
    // §5.2: a follower whose election timeout elapses increments its term, becomes a
    // candidate, votes for itself and sends RequestVote to every other server.
    let mut r = node(1, false);
    let _ = start(&mut r, false);
    let before = r.term();
    let fx = fire(&mut r, Timer::Election);
    assert!(fx.started_election());
    assert!(r.term() > before);
    assert_eq!(fx.broadcasts(), vec![request(r.term())]);
    assert!(
        fx.armed(Timer::Election),
        "a split vote times out and retries"
    );
    assert_eq!(
        r.durable(),
        Some(Durable {
            term: r.term(),
            voted_for: Some(1)
        }),
        "its own vote is stored (Figure 2)"
    );
    assert_eq!(r.state(), "candidate");
    assert_eq!(r.leader(), None);
}

#[test]
fn a_node_grants_at_most_one_vote_per_term() {
    // §5.2: each server votes for at most one candidate in a given term, first come
    // first served; a repeated request from the same candidate is granted again (a lost
    // reply must not cost the election).
    let mut r = node(4, false);
    let _ = start(&mut r, false);
    let fx = deliver(&mut r, 2, request(1));
    assert_eq!(answer(&fx, 2), (1, true));
    assert!(
        fx.armed(Timer::Election),
        "granting a vote resets the timeout"
    );
    assert_eq!(r.durable().and_then(|d| d.voted_for), Some(2));

    let fx = deliver(&mut r, 3, request(1));
    assert_eq!(answer(&fx, 3), (1, false), "already voted in term 1");
    let fx = deliver(&mut r, 2, request(1));
    assert_eq!(answer(&fx, 2), (1, true));

    // A new term is a new vote.
    let fx = deliver(&mut r, 3, request(2));
    assert_eq!(answer(&fx, 3), (2, true));
    assert_eq!(r.term(), 2);
}

#[test]
fn a_request_of_an_older_term_is_refused_with_the_newer_term() {
    // §5.1: a request with a stale term is rejected; the reply carries the current term
    // so the sender updates itself.
    let mut r = node(4, false);
    let _ = deliver(&mut r, 2, request(5));
    let fx = deliver(&mut r, 3, request(3));
    assert_eq!(answer(&fx, 3), (5, false));
    assert_eq!(r.term(), 5);
}

#[test]
fn votes_from_a_majority_make_the_candidate_leader() {
    // §5.2: a candidate that receives votes from a majority of the servers for the same
    // term becomes leader and sends heartbeats to establish its authority. Each voter
    // counts once.
    let (mut r, term) = candidate(1);
    let fx = deliver(&mut r, 2, vote(term, true));
    assert!(fx.is_quiet(), "2 of 5 is no majority");
    let fx = deliver(&mut r, 2, vote(term, true));
    assert!(fx.is_quiet(), "a duplicate vote counts once");
    let fx = deliver(&mut r, 3, vote(term, false));
    assert!(fx.is_quiet(), "a rejection is no vote");
    let fx = deliver(&mut r, 4, vote(term, true));
    assert_eq!(fx.leader_changes(), vec![(Some(1), term)]);
    assert!(fx
        .broadcasts()
        .contains(&Message::Heartbeat { term, leader: 1 }));
    assert!(fx.armed(Timer::Heartbeat));
    assert!(fx.cancelled(Timer::Election));
    assert_eq!(r.state(), "leader");
    // A vote of an older term never counts.
    let (mut r, term) = candidate(1);
    let _ = deliver(&mut r, 2, vote(term - 1, true));
    let _ = deliver(&mut r, 3, vote(term - 1, true));
    assert_eq!(r.state(), "candidate");
}

#[test]
fn a_majority_of_rejections_sends_the_candidate_back_to_follower() {
    // Every request is answered (§5.2 RequestVote results); as in etcd, a candidate
    // rejected by a majority cannot win this term and waits as a follower.
    let (mut r, term) = candidate(1);
    for v in [2, 3] {
        assert!(deliver(&mut r, v, vote(term, false)).is_quiet());
    }
    let fx = deliver(&mut r, 4, vote(term, false));
    assert_eq!(r.state(), "follower");
    assert!(
        fx.armed(Timer::Election),
        "tries again after a fresh timeout"
    );
    assert_eq!(r.term(), term, "the term stays");
}

#[test]
fn a_higher_term_makes_a_candidate_or_leader_step_down() {
    // §5.1: if a server learns of a larger term it updates its term and reverts to
    // follower.
    let (mut r, term) = leader(1);
    let fx = deliver(
        &mut r,
        3,
        Message::Heartbeat {
            term: term + 1,
            leader: 3,
        },
    );
    assert_eq!(r.state(), "follower");
    assert_eq!(r.term(), term + 1);
    assert_eq!(r.leader(), Some(3));
    assert!(fx.cancelled(Timer::Heartbeat));
    assert_eq!(fx.new_leader(), Some(Some(3)));

    let (mut r, term) = candidate(1);
    let _ = deliver(&mut r, 2, vote(term + 3, false));
    assert_eq!(r.state(), "follower");
    assert_eq!(r.term(), term + 3);
    assert_eq!(
        r.durable().and_then(|d| d.voted_for),
        None,
        "a new term, no vote yet"
    );

    let (mut r, term) = leader(1);
    let _ = deliver(
        &mut r,
        2,
        Message::HeartbeatAck {
            term: term + 1,
            leader: 0,
        },
    );
    assert_eq!(r.state(), "follower");
}

#[test]
fn a_candidate_that_hears_a_leader_of_its_term_follows_it() {
    // §5.2: a candidate receiving AppendEntries (here: the heartbeat) from a leader whose
    // term is at least its own recognises that leader and returns to follower.
    let (mut r, term) = candidate(1);
    let fx = deliver(&mut r, 4, Message::Heartbeat { term, leader: 4 });
    assert_eq!(r.state(), "follower");
    assert_eq!(r.leader(), Some(4));
    assert_eq!(
        fx.sent_to(4),
        vec![Message::HeartbeatAck { term, leader: 0 }]
    );
    // But a stale leader is told the newer term and not followed.
    let fx = deliver(
        &mut r,
        5,
        Message::Heartbeat {
            term: term - 1,
            leader: 5,
        },
    );
    assert_eq!(
        fx.sent_to(5),
        vec![Message::HeartbeatAck { term, leader: 0 }]
    );
    assert_eq!(r.leader(), Some(4));
}

#[test]
fn pre_vote_asks_for_the_next_term_without_raising_its_own() {
    // Thesis §9.6: a pre-candidate asks whether it could win term + 1 before raising its
    // term; only with a majority of yes does it start the real election.
    let mut r = node(1, true);
    let _ = start(&mut r, false);
    let term = r.term();
    let fx = fire(&mut r, Timer::Election);
    assert!(fx.started_election());
    assert_eq!(fx.broadcasts(), vec![pre_request(term + 1)]);
    assert_eq!(r.term(), term, "the term is untouched");
    assert_eq!(r.state(), "pre-candidate");

    let pre_yes = Message::Vote {
        term: term + 1,
        granted: true,
        pre_vote: true,
    };
    assert!(deliver(&mut r, 2, pre_yes.clone()).is_quiet());
    let fx = deliver(&mut r, 3, pre_yes);
    assert_eq!(r.state(), "candidate");
    assert_eq!(r.term(), term + 1);
    assert_eq!(fx.broadcasts(), vec![request(term + 1)]);
}

#[test]
fn a_pre_vote_changes_neither_the_term_nor_the_vote_of_the_receiver() {
    let mut r = node(4, true);
    let _ = start(&mut r, false);
    let fx = deliver(&mut r, 2, pre_request(1));
    assert!(matches!(
        fx.sent_to(2)[..],
        [Message::Vote {
            term: 1,
            granted: true,
            pre_vote: true
        }]
    ));
    assert_eq!(r.durable(), Some(Durable::default()));
    // The real vote of term 1 is still free.
    let fx = deliver(&mut r, 3, request(1));
    assert_eq!(answer(&fx, 3), (1, true));
}

#[test]
fn a_follower_that_hears_its_leader_refuses_to_help_depose_it() {
    // Thesis §4.2.3 (leader stickiness): a server that heard from a current leader
    // within the minimum election timeout neither grants nor adopts a higher term; a
    // node cut off and back cannot disrupt a healthy leader.
    let mut r = node(4, true);
    let _ = start(&mut r, false);
    let _ = deliver(&mut r, 1, Message::Heartbeat { term: 2, leader: 1 });
    let fx = deliver(&mut r, 3, pre_request(3));
    assert!(matches!(
        fx.sent_to(3)[..],
        [Message::Vote { granted: false, .. }]
    ));
    let fx = deliver(&mut r, 3, request(7));
    assert_eq!(answer(&fx, 3), (2, false));
    assert_eq!(r.term(), 2, "the disruptive term is not adopted");
    assert_eq!(r.leader(), Some(1));
    // Once the lease has run out the vote is granted.
    let _ = fire(&mut r, Timer::Quorum);
    let fx = deliver(&mut r, 3, request(7));
    assert_eq!(answer(&fx, 3), (7, true));
}

/// Run the leader's quorum checks: before each, the peers in `ackers` acknowledge a
/// heartbeat. `period` is the delay the check was last armed with. Returns the time
/// from the first of these checks' periods to the step-down (`None`: still leading
/// after `checks` checks) and the period armed last.
fn quorum_checks(
    r: &mut Raft,
    term: u64,
    mut period: std::time::Duration,
    ackers: &[NodeId],
    checks: usize,
) -> (Option<std::time::Duration>, std::time::Duration) {
    let mut elapsed = std::time::Duration::ZERO;
    for _ in 0..checks {
        for &a in ackers {
            let _ = deliver(r, a, Message::HeartbeatAck { term, leader: 0 });
        }
        elapsed += period;
        let fx = fire(r, Timer::Quorum);
        if r.state() == "follower" {
            assert_eq!(fx.new_leader(), Some(None));
            assert!(
                fx.cancelled(Timer::Heartbeat),
                "a follower sends no heartbeats"
            );
            return (Some(elapsed), period);
        }
        period = match fx.armed_range(Timer::Quorum) {
            Some((min, max)) if min == max => max,
            other => panic!("a leader re-arms its quorum check: {other:?}"),
        };
    }
    (None, period)
}

#[test]
fn check_quorum_makes_a_leader_without_a_majority_step_down() {
    // Thesis §6.2: a leader that has not heard from a majority of the cluster (itself
    // included) for a minimum election timeout steps down; a leader that hears a
    // majority keeps leading. (The check period is not asserted, only that bound.)
    let timeout = cfg(1, &RING).timing.election_timeout_min;
    let elected = |me| {
        let (mut r, term) = candidate(me);
        let _ = deliver(&mut r, 2, vote(term, true));
        let fx = deliver(&mut r, 3, vote(term, true));
        let (first, _) = fx.armed_range(Timer::Quorum).expect("check-quorum armed");
        (r, term, first)
    };

    // Only 2 answers: 2 of 5. Down within one minimum election timeout.
    let (mut r, term, first) = elected(1);
    let (down, _) = quorum_checks(&mut r, term, first, &[2], 20);
    let down = down.expect("a leader heard by a minority steps down");
    assert!(down <= timeout, "{down:?} > {timeout:?}");

    // 2 and 3 answer every period: 3 of 5, it keeps leading.
    let (mut r, term, first) = elected(1);
    let (down, period) = quorum_checks(&mut r, term, first, &[2, 3], 20);
    assert_eq!(down, None, "a leader heard by a majority stays");
    // Then silence: down within one minimum election timeout of the last answers.
    let (down, _) = quorum_checks(&mut r, term, period, &[], 20);
    let down = down.expect("a leader nobody answers steps down");
    assert!(down <= timeout, "{down:?} > {timeout:?}");
}

#[test]
fn a_new_leader_is_judged_on_a_whole_election_timeout() {
    // Thesis §6.2 asks for a majority within an election timeout. The check runs every
    // half of one and looks at two periods; a new leader's first check has only one
    // period of answers, so the votes of its term stand for the period before. A leader
    // of hundreds of members on a busy host reads the first answers late (round 21:
    // a leader of 255 stepped down 200 ms after its election at min = 400 ms).
    let timeout = cfg(1, &RING).timing.election_timeout_min;
    let (mut r, term) = candidate(1);
    let _ = deliver(&mut r, 2, vote(term, true));
    let fx = deliver(&mut r, 3, vote(term, true));
    let (first, _) = fx.armed_range(Timer::Quorum).expect("check-quorum armed");
    assert!(first < timeout, "the check runs within the timeout");
    // No answer before the first check: still leading.
    let (down, period) = quorum_checks(&mut r, term, first, &[], 1);
    assert_eq!(down, None, "judged on half an election timeout");
    // Answers in the second period: the two periods hold a majority.
    let (down, period) = quorum_checks(&mut r, term, period, &[2, 3], 1);
    assert_eq!(down, None, "a majority answered within the timeout");
    // Silence from then on: down within one minimum election timeout of the answers.
    let (down, _) = quorum_checks(&mut r, term, period, &[], 20);
    let down = down.expect("a leader nobody answers steps down");
    assert!(down <= timeout, "{down:?} > {timeout:?}");

    // A new leader nobody ever answers is down within one timeout of its election.
    let (mut r, term) = candidate(1);
    let _ = deliver(&mut r, 2, vote(term, true));
    let fx = deliver(&mut r, 3, vote(term, true));
    let (first, _) = fx.armed_range(Timer::Quorum).expect("check-quorum armed");
    let (down, _) = quorum_checks(&mut r, term, first, &[], 20);
    let down = down.expect("a leader nobody answers steps down");
    assert!(down <= timeout, "{down:?} > {timeout:?}");
}

#[test]
fn the_leader_heartbeats_every_period() {
    // §5.2: the leader sends periodic heartbeats (empty AppendEntries) to maintain its
    // authority.
    let (mut r, term) = leader(1);
    let fx = fire(&mut r, Timer::Heartbeat);
    assert_eq!(
        fx.broadcasts(),
        vec![Message::Heartbeat { term, leader: 1 }]
    );
    assert!(fx.armed(Timer::Heartbeat));
    // A follower ignores a stray heartbeat timer.
    let mut f = node(2, true);
    assert!(fire(&mut f, Timer::Heartbeat).is_empty());
}

#[test]
fn term_and_vote_survive_a_restart_and_never_go_back() {
    // Figure 2: currentTerm and votedFor are persistent; a restarted server must not
    // vote twice in one term.
    let mut r = node(4, false);
    let _ = deliver(&mut r, 2, request(5));
    let saved = r.durable().expect("Raft keeps durable state");
    let mut again = node(4, false);
    again.restore(saved);
    let fx = start(&mut again, false);
    assert_eq!(again.term(), 5);
    assert_eq!(
        fx.leader_changes(),
        vec![(None, 5)],
        "the restored term is published"
    );
    let fx = deliver(&mut again, 3, request(5));
    assert_eq!(answer(&fx, 3), (5, false), "already voted for 2 in term 5");
    // An older copy does not undo the newer state.
    again.restore(Durable {
        term: 1,
        voted_for: None,
    });
    assert_eq!(again.durable(), Some(saved));
}

#[test]
fn a_resigning_leader_lets_the_followers_campaign_soon() {
    // Graceful leave: the leader hands over, its followers forget it and campaign after
    // a short random delay instead of a full timeout.
    let (mut r, term) = leader(1);
    let fx = step(&mut r, |a, out| a.call_election(out));
    assert!(fx.broadcasts().contains(&Message::Resign { epoch: term }));
    assert_eq!(r.state(), "follower");

    let mut f = node(2, true);
    let _ = deliver(&mut f, 1, Message::Heartbeat { term, leader: 1 });
    let fx = deliver(&mut f, 1, Message::Resign { epoch: term });
    assert_eq!(fx.new_leader(), Some(None));
    assert!(fx.armed(Timer::Election));
    // A resignation of someone else or of another term is ignored.
    let mut f = node(2, true);
    let _ = deliver(&mut f, 1, Message::Heartbeat { term, leader: 1 });
    assert!(deliver(&mut f, 3, Message::Resign { epoch: term }).is_empty());
    assert!(deliver(&mut f, 1, Message::Resign { epoch: term + 1 }).is_empty());
    assert_eq!(f.leader(), Some(1));
    // Told by the failure detector, a leader keeps leading; a follower campaigns.
    let (mut r, _) = leader(1);
    let _ = step(&mut r, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert_eq!(r.state(), "leader");
    let mut f = node(2, true);
    let _ = deliver(&mut f, 1, Message::Heartbeat { term, leader: 1 });
    let fx = step(&mut f, |a, out| a.on_leader_lost(LeaderLoss::Silent, out));
    assert!(fx.started_election());
    assert_eq!(f.state(), "pre-candidate");
}

#[test]
fn nonsense_from_the_network_is_ignored() {
    // The Algorithm contract: input from the network may be anything; strangers, other
    // algorithms' messages and forged claims are ignored, never a panic.
    let mut r = node(3, true);
    let _ = start(&mut r, false);
    // Strangers and this node's own id are not voters.
    for from in [0, 3, 6, 999] {
        for msg in garbage() {
            let fx = deliver(&mut r, from, msg.clone());
            assert!(fx.is_empty(), "{msg:?} from {from}: {fx:?}");
        }
    }
    // Other algorithms' vocabulary from a member.
    let own = [
        MessageType::RequestVote,
        MessageType::PreVote,
        MessageType::Vote,
        MessageType::PreVoteResponse,
        MessageType::Heartbeat,
        MessageType::HeartbeatAck,
        MessageType::Resign,
    ];
    for msg in foreign_vocabulary(&own) {
        let fx = deliver(&mut r, 1, msg.clone());
        assert!(fx.is_empty(), "{msg:?}: {fx:?}");
    }
    // A heartbeat speaking for another node; a vote nobody asked for.
    assert!(deliver(&mut r, 1, Message::Heartbeat { term: 9, leader: 2 }).is_empty());
    assert!(deliver(&mut r, 1, vote(0, true)).is_empty());
    assert_eq!(r.term(), 0);
    assert_eq!(r.leader(), None);
    // The largest term there is does not overflow.
    let _ = deliver(&mut r, 1, request(u64::MAX));
    let _ = fire(&mut r, Timer::Election);
    let _ = deliver(&mut r, 2, pre_request(u64::MAX));
    assert!(
        r.term() > 0,
        "a real request of a higher term is still a real request"
    );
}

/// The election window of every member: after `start` (no leader known), or after a
/// heartbeat of `leader` when one is given.
fn windows(
    ranked: bool,
    leader: Option<NodeId>,
) -> Vec<(NodeId, (std::time::Duration, std::time::Duration))> {
    RING.iter()
        .copied()
        .filter(|&me| Some(me) != leader)
        .map(|me| {
            let mut c = cfg(me, &RING);
            c.options.ranked_timeouts = ranked;
            let mut r = Raft::new(c);
            let mut fx = start(&mut r, false);
            if let Some(l) = leader {
                let term = 1;
                fx = deliver(&mut r, l, Message::Heartbeat { term, leader: l });
            }
            (me, fx.armed_range(Timer::Election).expect("election timer"))
        })
        .collect()
}

#[test]
fn ranked_timeouts_fire_the_highest_follower_first_and_stay_in_the_range() {
    // electd's ranked timeouts (config [raft] ranked_timeouts, on by default): each
    // follower draws from its own slot of [min, max], higher ids first, the leader it
    // follows not counted; the first slot starts a margin (an eighth of a heartbeat)
    // after the lease.
    let t = crate::contract::algorithm::Timing::default();
    for leader in [None, Some(5), Some(3)] {
        let mut w = windows(true, leader);
        for (me, (lo, hi)) in &w {
            assert!(lo < hi, "node {me}: a jittered slot, not a fixed delay");
            assert!(
                *lo > t.election_timeout_min && *hi <= t.election_timeout_max,
                "node {me}: {lo:?}..{hi:?} outside the election timeout range"
            );
        }
        w.sort_by_key(|x| std::cmp::Reverse(x.0));
        for pair in w.windows(2) {
            let ((high, (_, high_end)), (low, (low_start, _))) = (pair[0], pair[1]);
            assert!(
                high_end < low_start,
                "leader {leader:?}: node {high} must fire before node {low}"
            );
        }
    }
}

#[test]
fn without_ranking_every_follower_draws_from_the_whole_range() {
    // §5.2, the textbook: one interval for everyone.
    let t = crate::contract::algorithm::Timing::default();
    for (me, range) in windows(false, Some(5)) {
        assert_eq!(
            range,
            (t.election_timeout_min, t.election_timeout_max),
            "node {me}"
        );
    }
}

#[test]
fn ranked_slots_are_at_least_a_heartbeat_wide_and_the_lowest_ranks_share_the_rest() {
    // 64 members at the default timing (spread 100 ms, heartbeat 10 ms): 100/64 ms
    // slots would let the next rank fire before a vote round on a loaded host is
    // over. Slots are a heartbeat wide instead, in rank order; the ranks past them
    // share the second half of the range (what the slots leave was 5 ms for 55
    // members), and each of their campaigns without result doubles the end of it.
    let t = crate::contract::algorithm::Timing::default();
    let ring: Vec<NodeId> = (1..=64).collect();
    let spread = t.election_timeout_max - t.election_timeout_min;
    // After the margin (no leader yet: the lease rule applies), the whole
    // heartbeat-wide slots that fit.
    let margin = t.heartbeat / crate::algorithms::raft::LEASE_MARGIN_DIV;
    let slots = ((spread - margin).as_nanos() / t.heartbeat.as_nanos()) as usize;
    let window = |me: NodeId| {
        let mut r = Raft::new(cfg(me, &ring));
        let fx = start(&mut r, false);
        fx.armed_range(Timer::Election).expect("election timer")
    };
    // No leader known: rank = members above.
    let ranked: Vec<_> = (0..64usize)
        .map(|rank| window(64 - rank as NodeId))
        .collect();
    for (rank, &(lo, hi)) in ranked.iter().enumerate().take(slots) {
        assert!(
            t.election_timeout_min <= lo && lo < hi && hi <= t.election_timeout_max,
            "rank {rank}: {lo:?}..{hi:?}"
        );
    }
    for rank in 1..slots {
        let (prev, this) = (ranked[rank - 1], ranked[rank]);
        assert!(
            this.0 >= prev.0 + t.heartbeat && prev.1 < this.0,
            "rank {rank} starts a heartbeat after rank {}: {prev:?} {this:?}",
            rank - 1
        );
    }
    let last = ranked[slots];
    for (rank, w) in ranked.iter().enumerate().skip(slots) {
        assert_eq!(*w, last, "rank {rank} shares the last slot");
    }
    assert_eq!(
        last.1,
        t.election_timeout_min + spread * 4,
        "on past the range, to 4 of them after min"
    );
    assert_eq!(
        last.0,
        t.election_timeout_min + spread / 2,
        "the second half of the range"
    );
    assert!(last.0 > ranked[0].1, "after the first slot");

    // A member past the slots whose campaigns found no leader backs off: each one
    // doubles the end of its window, up to 32 ranges; hearing a leader ends it. One
    // ranked within the slots keeps its slot.
    let min = t.election_timeout_min;
    let mut r = Raft::new(cfg(1, &ring));
    let _ = start(&mut r, false);
    let mut last_hi = std::time::Duration::ZERO;
    for k in 1..=7u32 {
        let fx = fire(&mut r, Timer::Election);
        let (_, hi) = fx.armed_range(Timer::Election).expect("armed");
        let want = min + spread * (1 << (2 + k.min(3)));
        assert_eq!(hi, want, "after {k} campaigns");
        assert!(hi >= last_hi);
        last_hi = hi;
    }
    let fx = deliver(
        &mut r,
        64,
        Message::Heartbeat {
            term: 1,
            leader: 64,
        },
    );
    let (_, hi) = fx.armed_range(Timer::Election).expect("armed");
    assert_eq!(hi, min + spread * 4, "a leader heard ends the back-off");
    let mut top = Raft::new(cfg(64, &ring));
    let _ = start(&mut top, false);
    for _ in 0..3 {
        let fx = fire(&mut top, Timer::Election);
        let (_, hi) = fx.armed_range(Timer::Election).expect("armed");
        assert!(
            hi <= t.election_timeout_max,
            "the top keeps its slot: {hi:?}"
        );
    }
}

#[test]
fn a_cold_start_listens_a_heartbeat_plus_one_step_per_member_ranked_above() {
    // electd's ranked cold start (issue 31): node k of N listens H + (N − k)·step with
    // a quarter step of jitter, step = max(2H, (max − min)/N, min/2), no ceiling; the
    // top member first. Before, every member drew from [0, max − min] (100 ms at the
    // default timing): 54 of 64 in its last 2.5 ms. Round 25: with a step of 2H, at 256
    // processes the members ranked just below the top often stopped listening before
    // the top member's pre-vote reached them (a cold start of 1,020 to 3,060 messages
    // where the literature counts 4(N − 1) = 1,020).
    let t = crate::contract::algorithm::Timing::default();
    for n in [5 as NodeId, 64, 256] {
        let ring: Vec<NodeId> = (1..=n).collect();
        let spread = t.election_timeout_max - t.election_timeout_min;
        let step = (spread / n)
            .max(t.heartbeat * 2)
            .max(t.election_timeout_min / 2);
        for me in [n, n - 1, 1] {
            let mut r = Raft::new(cfg(me, &ring));
            let fx = start(&mut r, true);
            let lo = t.heartbeat + step * (n - me);
            assert_eq!(
                fx.armed_range(Timer::Election),
                Some((lo, lo + step / 4)),
                "N={n} node {me}"
            );
        }
    }
}

#[test]
fn in_a_cold_start_a_vote_or_a_deferral_never_shortens_the_rank_wait() {
    // Round 21: at 256 processes the members that deferred to the top members'
    // pre-votes fired `min` plus their slot later, long before their rank's cold-start
    // wait, and some 190 campaigned together. Until a leader is heard, every wait is
    // at least the cold-start wait of the rank.
    let t = crate::contract::algorithm::Timing::default();
    let ring: Vec<NodeId> = (1..=64).collect();
    let mut r = Raft::new(cfg(1, &ring));
    let fx = start(&mut r, true);
    let (cold_lo, _) = fx.armed_range(Timer::Election).expect("cold-start wait");
    assert!(
        cold_lo > t.election_timeout_max,
        "rank 63 waits 63 steps: {cold_lo:?}"
    );
    let fx = deliver(&mut r, 64, pre_request(1));
    assert_eq!(answer(&fx, 64), (1, true));
    assert_eq!(
        fx.armed_range(Timer::Election).map(|w| w.0),
        Some(cold_lo),
        "deferred"
    );
    let fx = deliver(&mut r, 63, request(1));
    assert_eq!(answer(&fx, 63), (1, true));
    assert_eq!(
        fx.armed_range(Timer::Election).map(|w| w.0),
        Some(cold_lo),
        "voted"
    );
    // A leader heard: the cold start is over, the usual slots apply.
    let fx = deliver(
        &mut r,
        63,
        Message::Heartbeat {
            term: 1,
            leader: 63,
        },
    );
    let (lo, hi) = fx.armed_range(Timer::Election).expect("election timeout");
    let spread = t.election_timeout_max - t.election_timeout_min;
    assert!(
        lo >= t.election_timeout_min && lo < t.election_timeout_max,
        "{lo:?}..{hi:?}"
    );
    assert_eq!(hi, t.election_timeout_min + spread * 4, "rank 62 shares");
    // Not a cold start (`call_election` false): the usual timeout from the start.
    let mut warm = Raft::new(cfg(1, &ring));
    let _ = start(&mut warm, false);
    let fx = deliver(&mut warm, 64, pre_request(1));
    let (lo, _) = fx.armed_range(Timer::Election).expect("deferred");
    assert!(lo < t.election_timeout_max, "{lo:?}");
}

#[test]
fn a_pre_vote_of_a_higher_ranked_member_restarts_a_leaderless_followers_timeout() {
    // Ranked deferral: the higher member's campaign runs alone. A pre-vote granted to
    // a lower member restarts nothing, nor is one granted while the lease holds.
    let mut r = node(3, true);
    let _ = start(&mut r, true);
    let fx = deliver(&mut r, 5, pre_request(1));
    assert_eq!(answer(&fx, 5), (1, true));
    assert!(fx.armed_range(Timer::Election).is_some(), "deferred to 5");
    let fx = deliver(&mut r, 1, pre_request(1));
    assert_eq!(answer(&fx, 1), (1, true));
    assert_eq!(fx.armed_range(Timer::Election), None, "1 ranks below 3");

    // A failover: the follower of 4 whose lease ran out defers to 5 as well, so the
    // next rank does not start a round beside the first's (round 21).
    let mut r = node(3, true);
    let _ = start(&mut r, false);
    let _ = deliver(&mut r, 4, Message::Heartbeat { term: 2, leader: 4 });
    let fx = deliver(&mut r, 5, pre_request(3));
    assert_eq!(answer(&fx, 5), (2, false), "refused while the lease holds");
    assert_eq!(fx.armed_range(Timer::Election), None);
    let _ = fire(&mut r, Timer::Quorum);
    let fx = deliver(&mut r, 5, pre_request(3));
    assert_eq!(answer(&fx, 5), (3, true));
    assert!(fx.armed_range(Timer::Election).is_some(), "deferred to 5");
    assert_eq!(fx.new_leader(), Some(None), "the dead leader is given up");
    assert_eq!(r.term(), 2, "a pre-vote changes no term");
    let fx = deliver(&mut r, 1, pre_request(3));
    assert_eq!(answer(&fx, 1), (3, true));
    assert_eq!(fx.armed_range(Timer::Election), None, "1 ranks below 3");
    // Once per term: 5's next round (its last one did not win) holds 3 back no more.
    let fx = deliver(&mut r, 5, pre_request(3));
    assert_eq!(answer(&fx, 5), (3, true));
    assert_eq!(
        fx.armed_range(Timer::Election),
        None,
        "deferred once in term 2"
    );

    // A pre-candidate ends its round for a member above, not for one below.
    let mut r = node(3, true);
    let _ = start(&mut r, true);
    let _ = fire(&mut r, Timer::Election);
    assert_eq!(r.state(), "pre-candidate");
    let fx = deliver(&mut r, 1, pre_request(1));
    assert_eq!(answer(&fx, 1), (1, true));
    assert_eq!(r.state(), "pre-candidate", "1 ranks below 3");
    let fx = deliver(&mut r, 5, pre_request(1));
    assert_eq!(answer(&fx, 5), (1, true));
    assert_eq!(r.state(), "follower", "deferred to 5");
    assert!(fx.armed_range(Timer::Election).is_some());
    // Its own round's grants no longer count.
    for p in [1, 2, 4] {
        let fx = deliver(
            &mut r,
            p,
            Message::Vote {
                term: 1,
                granted: true,
                pre_vote: true,
            },
        );
        assert!(fx.broadcasts().is_empty(), "no real round from a dead one");
    }
    assert_eq!((r.state(), r.term()), ("follower", 0));
}
