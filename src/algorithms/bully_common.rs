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
    /// An older announcement of a leader lower than the one followed now (reordered or
    /// retransmitted from a past election): ignore.
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
        // An older announcement is stale only if it names a lower leader than the one
        // followed now. A higher claimant is accepted whatever its epoch: a restarted
        // node starts again from epoch 0 and, being higher, is the rightful leader.
        if epoch < self.epoch && self.leader.is_some_and(|l| leader < l) {
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

/// A (re)started node that is to call an election first listens for a random
/// [H, 2H] (H = heartbeat period): a live leader's heartbeat or COORDINATOR, or a
/// cascade already under way, makes its own election unnecessary, and at a cold start
/// of many nodes the elections are spread instead of all called in the same instant.
/// The highest id has nobody to ask and announces at once (returns true).
pub fn listen_before_electing(higher: &[NodeId], t: &Timing, out: &mut Out) -> bool {
    if higher.is_empty() {
        return true;
    }
    out.set_timer(Timer::Retry, t.heartbeat, t.heartbeat * 2);
    false
}

/// A leader asked by a lower node's election (`tag`) answers with its current
/// leadership, unchanged (same epoch), to the members of that cascade only, instead of
/// announcing a new epoch to everyone: its leadership did not change.
pub fn reassert(me: NodeId, lead: &Leadership, tag: ElectionTag, to: &[NodeId], out: &mut Out) {
    let msg = Message::Coordinator {
        leader: me,
        epoch: lead.epoch,
        tag,
    };
    for &n in to {
        out.send(n, msg.clone());
    }
}

/// The members a cascade `tag` reached (every id from its initiator up, and `from`),
/// this node excepted.
pub fn cascade_members(ring: &[NodeId], me: NodeId, from: NodeId, tag: ElectionTag) -> Vec<NodeId> {
    ring.iter()
        .copied()
        .filter(|&n| n != me && (n >= tag.initiator || n == from))
        .collect()
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
