//! Leadership transfer: the operator's request checked and started, the hand-over
//! message answered or refused by the target, and the transfer settled.

use super::{Node, Time};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::Message;
use crate::contract::policy::Ineligible;
use crate::NodeId;
use std::time::Duration;

impl Node {
    /// Hand the leadership of `kind`'s group to `to` (`POST /admin/transfer`). Raft
    /// sends TimeoutNow (thesis §3.10): the target campaigns at once and the voters
    /// grant it although they heard this leader recently. The other algorithms send
    /// HANDOFF: the target announces itself (COORDINATOR, the ring's result lap) with
    /// a token above this leadership's, and this node stops heartbeating meanwhile
    /// (its heartbeats would be a higher-ranked claim to the target). This node is
    /// ineligible ([`Ineligible::Transfer`]) until the target leads or the returned
    /// bound passes, so that it is not re-elected meanwhile; if the target never
    /// announces itself the followers' failure detectors elect another node.
    ///
    /// Refused, with the reason: a group this node does not run or does not lead, a
    /// target that is this node, not a member or a never-leader, a transfer already
    /// under way, and, where the highest-ranked node leads with `preempt = true`, a
    /// target outranked by another member (this node included): that member would
    /// take the leadership back at once.
    pub fn transfer(
        &mut self,
        now: Time,
        kind: AlgorithmKind,
        to: NodeId,
    ) -> Result<Duration, String> {
        let g = self
            .group_index(kind)
            .ok_or_else(|| format!("this node does not run {kind}"))?;
        if to == self.id {
            return Err(format!("node {to} is this node"));
        }
        if !self.is_member(to) {
            return Err(format!("node {to} is not on the roster"));
        }
        let grp = &self.groups[g];
        match grp.leader {
            Some(l) if l == self.id => {}
            Some(l) => {
                return Err(format!(
                    "this node does not lead {kind}: node {l} does (ask it)"
                ))
            }
            None => return Err(format!("this node does not lead {kind} (no leader known)")),
        }
        if grp.transfer.is_some() {
            return Err(format!("a transfer of {kind} is already under way"));
        }
        if self.policy.priority(to) == 0 {
            return Err(format!("node {to} may never lead (priority 0)"));
        }
        if kind.elects_highest_id() && self.policy.preempt_for(kind).preempt {
            let above = self
                .ring
                .iter()
                .copied()
                .filter(|&m| m != to && self.policy.outranks(m, to))
                .max_by_key(|&m| self.policy.rank(m));
            if let Some(m) = above {
                return Err(format!(
                    "node {m} outranks node {to} and [policy] preempt = true for {kind}: \
                     {m} would take the leadership back at once; set preempt = false for \
                     {kind} (or drain {m}) first"
                ));
            }
        }
        let term = grp.term;
        let msg = if grp.algo.uses_failure_detector() {
            Message::Handoff { epoch: term, to }
        } else {
            Message::TimeoutNow { term }
        };
        let bound = self
            .timing
            .failure_timeout
            .max(self.timing.election_timeout_max);
        self.send(g, now, to, msg);
        self.groups[g].transfer = Some((to, now + bound));
        self.groups[g].transfer_refused = None;
        self.set_ineligible(now, Some(kind), Ineligible::Transfer, true);
        Ok(bound)
    }

    /// Is a hand-over message from `from` at `term` the refusal of the transfer group
    /// `g` has under way to it (the target handing it back)?
    pub(super) fn is_refusal(&self, g: usize, from: NodeId, term: u64) -> bool {
        let grp = &self.groups[g];
        grp.leader == Some(self.id)
            && term == grp.term
            && grp.transfer.is_some_and(|(to, _)| to == from)
    }

    /// The target `by` refused group `g`'s transfer: it is over, this node leads on
    /// (eligible again, heartbeating again) and the refusal waits to be taken.
    pub(super) fn transfer_refused(&mut self, g: usize, by: NodeId, now: Time) {
        self.groups[g].transfer = None;
        self.groups[g].transfer_refused = Some(by);
        let kind = self.groups[g].kind;
        self.set_ineligible(now, Some(kind), Ineligible::Transfer, false);
    }

    /// The transfers refused by their target since the last call, as (group, target):
    /// the target may not lead (drained, failing a health check), and this node leads
    /// on.
    pub fn take_transfer_refusals(&mut self) -> Vec<(AlgorithmKind, NodeId)> {
        self.groups
            .iter_mut()
            .filter_map(|g| g.transfer_refused.take().map(|by| (g.kind, by)))
            .collect()
    }

    /// End the transfers whose target leads now, or whose time is up.
    pub(super) fn settle_transfers(&mut self, now: Time) {
        for g in 0..self.groups.len() {
            let Some((to, until)) = self.groups[g].transfer else {
                continue;
            };
            if self.groups[g].leader == Some(to) || now >= until {
                self.groups[g].transfer = None;
                let kind = self.groups[g].kind;
                self.set_ineligible(now, Some(kind), Ineligible::Transfer, false);
            }
        }
    }

    /// Only from the leader of the token this node holds, naming this node. A
    /// node that may not lead (drained, failing a check) hands it back: the
    /// leader then goes on leading instead of falling silent until the
    /// followers' failure detectors elect a node nobody asked for.
    pub(super) fn on_handoff(&mut self, g: usize, now: Time, from: NodeId, epoch: u64, to: NodeId) {
        let grp = &mut self.groups[g];
        if grp.leader == Some(from) && to == self.id && epoch == grp.term {
            let took = grp.algo.take_over(&mut self.out);
            self.apply(g, now);
            if !took {
                self.send(g, now, from, Message::Handoff { epoch, to: from });
            }
        } else if to == self.id && self.is_refusal(g, from, epoch) {
            self.transfer_refused(g, from, now);
        }
    }

    /// Raft's hand-over, refused the same way by a target that may not lead (it
    /// would not campaign), and the refusal read by the leader.
    pub(super) fn on_timeout_now(&mut self, g: usize, now: Time, from: NodeId, term: u64) {
        let grp = &self.groups[g];
        let may_not_lead = !grp.ineligible.is_empty();
        if self.is_refusal(g, from, term) {
            self.transfer_refused(g, from, now);
        } else if grp.leader == Some(from) && term == grp.term && may_not_lead {
            self.send(g, now, from, Message::TimeoutNow { term });
        } else {
            self.groups[g]
                .algo
                .on_message(from, Message::TimeoutNow { term }, &mut self.out);
            self.apply(g, now);
        }
    }
}
