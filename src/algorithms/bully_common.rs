//! What the two Bully variants share: the leader/epoch bookkeeping, the announcement,
//! and the rule for a leadership claim (COORDINATOR or a foreign heartbeat).

use crate::algorithm::{LeaderLoss, Out, Timer, Timing};
use crate::message::{ElectionTag, Message};
use crate::NodeId;

/// The timers of an election attempt; all are cancelled once a leader is known.
const ELECTION_TIMERS: [Timer; 3] = [Timer::Answer, Timer::Coordinator, Timer::Retry];

/// How to answer a leadership claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// A lower id claims to lead while this node is alive: call an election (bully it).
    Bully,
    /// Older than what this node already follows (a reordered or retransmitted
    /// announcement of a past leader): ignore.
    Stale,
    /// Adopt the claimant as leader.
    Follow,
    /// Already following it: nothing changes.
    Keep,
}

/// Leader belief and epoch of one Bully-family node.
#[derive(Debug, Default)]
pub struct Leadership {
    pub leader: Option<NodeId>,
    /// Grows with every announcement (max seen + 1 at the winner): the fencing token.
    pub epoch: u64,
}

impl Leadership {
    /// Learn an epoch from any message (ELECTION carries the sender's).
    pub fn observe(&mut self, epoch: u64) {
        self.epoch = self.epoch.max(epoch);
    }

    /// Classify a claim by `leader` with `epoch`; `settled` is true when this node is a
    /// plain follower (not electing, not leading).
    pub fn claim(&mut self, me: NodeId, leader: NodeId, epoch: u64, settled: bool) -> Claim {
        if leader < me {
            self.observe(epoch);
            return Claim::Bully;
        }
        if epoch < self.epoch && self.leader.is_some() && self.leader != Some(leader) {
            return Claim::Stale;
        }
        if settled && self.leader == Some(leader) {
            self.observe(epoch);
            return Claim::Keep;
        }
        Claim::Follow
    }

    /// Become leader: a new epoch, COORDINATOR to every other roster member.
    pub fn announce(&mut self, me: NodeId, tag: ElectionTag, out: &mut Out) {
        self.epoch = self.epoch.saturating_add(1);
        self.leader = Some(me);
        cancel_election_timers(out);
        out.broadcast(Message::Coordinator {
            leader: me,
            epoch: self.epoch,
            tag,
        });
        out.leader_changed(self.leader, self.epoch);
    }

    pub fn follow(&mut self, leader: NodeId, epoch: u64, out: &mut Out) {
        self.observe(epoch);
        self.leader = Some(leader);
        cancel_election_timers(out);
        out.leader_changed(self.leader, self.epoch);
    }

    /// Forget the leader (reported lost); returns who it was.
    pub fn lose(&mut self, out: &mut Out) -> Option<NodeId> {
        let old = self.leader.take();
        if old.is_some() {
            out.leader_changed(None, self.epoch);
        }
        old
    }
}

pub fn cancel_election_timers(out: &mut Out) {
    for t in ELECTION_TIMERS {
        out.cancel_timer(t);
    }
}

/// Send ELECTION to every higher id and wait T for answers.
pub fn send_elections(higher: &[NodeId], tag: ElectionTag, epoch: u64, t: &Timing, out: &mut Out) {
    for &h in higher {
        out.send(h, Message::Election { tag, epoch });
    }
    out.set_timer_exact(Timer::Answer, t.answer_timeout);
}

/// A node that starts without calling an election still calls one if no leader shows
/// up within [F, 2F] (F = failure timeout): nobody is left without a leader forever.
pub fn arm_watchdog(t: &Timing, out: &mut Out) {
    out.set_timer(Timer::Retry, t.failure_timeout, t.failure_timeout * 2);
}

/// After losing the leader `old`: should this node call an election at once? On a
/// graceful resignation only the highest id below the resigning leader does (the others
/// wait under a watchdog of T + T'); on silence everybody does, as in the textbook.
pub fn calls_at_once(why: LeaderLoss, old: Option<NodeId>, higher: &[NodeId]) -> bool {
    match (why, old) {
        (LeaderLoss::Resigned, Some(old)) => higher.iter().all(|&h| h >= old),
        _ => true,
    }
}

/// The watchdog of a node that lets the successor of a resigning leader go first.
pub fn arm_successor_watchdog(t: &Timing, out: &mut Out) {
    let wait = t.answer_timeout + t.coordinator_timeout;
    out.set_timer(Timer::Retry, wait, wait * 2);
}
