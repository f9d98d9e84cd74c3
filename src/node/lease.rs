//! Leases: the contacts a leader's heartbeats bring back, the quorum lease computed
//! from them, and `[lease] require_quorum`'s step-down when a majority is lost.

use super::{Node, Time};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::Message;
use crate::NodeId;
use std::time::Duration;

impl Node {
    /// A follower's answer to this leadership's heartbeat (Raft's names no leader):
    /// a lease contact.
    pub(super) fn note_lease_contact(&mut self, g: usize, now: Time, from: NodeId, msg: &Message) {
        let grp = &mut self.groups[g];
        if let Message::HeartbeatAck { term, leader } = *msg {
            // Leader 0 is Raft's answer; in the failure detector's groups it is a
            // stale-claim answer (a higher leadership of this term that ended), no
            // contact.
            let raft_answer = leader == 0 && !grp.algo.uses_failure_detector();
            if grp.leader == Some(self.id) && (leader == self.id || raft_answer) && term == grp.term
            {
                grp.contacts.insert(from, now);
            }
        }
    }

    /// The quorum lease of this node's leadership of `kind`'s group at `now`:
    /// `None` when the group keeps no lease (not Raft with check-quorum, and no
    /// `[lease] require_quorum`); otherwise how long no other leader can be elected,
    /// `Some(ZERO)` when this node does not lead or no majority answered recently.
    ///
    /// The rule: the leader and the ⌈(N+1)/2⌉−1 peers that answered its heartbeats most
    /// recently form a majority; take the oldest of those answers, `t`. Each of those
    /// peers heard this leader at `t` or later, and a follower that heard its leader
    /// neither votes for another candidate (Raft: pre-vote and leader stickiness, for
    /// `election_timeout` min) nor calls an election (failure detector, for
    /// `failure_timeout`) before that base timeout has passed; any new leader needs one
    /// of them. So the lease ends at `t + base − clock_drift`. Only answers received
    /// since this leadership began count.
    pub fn lease(&self, kind: AlgorithmKind, now: Time) -> Option<Duration> {
        let g = self.group_index(kind)?;
        let grp = &self.groups[g];
        let (base, drift) = self.lease_terms(g)?;
        if grp.leader != Some(self.id) {
            return Some(Duration::ZERO);
        }
        let need = self.members.len() / 2; // peers besides this node for a majority
        let t = if need == 0 {
            now
        } else {
            let mut recent: Vec<Time> = grp
                .contacts
                .values()
                .copied()
                .filter(|&t| t >= grp.since)
                .collect();
            if recent.len() < need {
                return Some(Duration::ZERO);
            }
            recent.sort_unstable_by(|a, b| b.cmp(a));
            recent[need - 1]
        };
        Some((t + base).saturating_sub(drift).saturating_sub(now))
    }

    /// `(base, clock_drift)` of group `g`'s lease ([`Node::lease`]); `None` when the
    /// group keeps none.
    fn lease_terms(&self, g: usize) -> Option<(Duration, Duration)> {
        let grp = &self.groups[g];
        let (base, kept) = if grp.algo.uses_failure_detector() {
            (
                self.timing.failure_timeout,
                self.options.lease.require_quorum.contains(&grp.kind),
            )
        } else {
            (self.timing.election_timeout_min, self.options.check_quorum)
        };
        if !kept {
            return None;
        }
        let drift = self
            .options
            .lease
            .clock_drift
            .iter()
            .find(|(k, _)| *k == grp.kind)
            .map_or(base / 10, |(_, d)| *d);
        Some((base, drift))
    }

    /// May the answers that renew group `g`'s lease be read up to a heartbeat late
    /// ([`Node::quiet_acks`])? Read at once, a lease of `base − clock_drift` is renewed
    /// every heartbeat; read at the next heartbeat, it must outlast two, and a third is
    /// kept as slack for late timers. A group that keeps no lease may always wait.
    pub(super) fn answers_may_wait(&self, g: usize) -> bool {
        self.lease_terms(g)
            .is_none_or(|(base, drift)| base.saturating_sub(drift) > 3 * self.timing.heartbeat)
    }

    /// `[lease] require_quorum` on a group of the failure detector: this node has led
    /// it for a failure timeout and no majority of the roster (itself included) has
    /// answered its heartbeats within the last failure timeout. It then steps down
    /// ([`Ineligible::NoQuorum`]) and stands again only once it has followed another
    /// leader for a failure timeout: a leader cut off in a minority neither keeps
    /// naming itself nor re-elects itself in a loop. (Raft's check-quorum does the
    /// same within the algorithm.)
    pub(super) fn quorum_lost(&self, g: usize, now: Time) -> bool {
        let grp = &self.groups[g];
        let f = self.timing.failure_timeout;
        if !grp.algo.uses_failure_detector()
            || !self.options.lease.require_quorum.contains(&grp.kind)
            || grp.leader != Some(self.id)
            || now < grp.since + f
        {
            return false;
        }
        let need = self.members.len() / 2;
        if need == 0 {
            return false;
        }
        // Fewer than `need` peers answered within the last failure timeout (counted,
        // not sorted: this runs for every message a leader receives).
        let fresh = grp
            .contacts
            .values()
            .filter(|&&t| t >= grp.since && now < t + f)
            .count();
        fresh < need
    }
}
