//! Leadership transfer: the operator's request checked and started, the hand-over
//! message answered or refused by the target, and the transfer settled.

use super::{Node, Time};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::Message;
use crate::contract::policy::Ineligible;
use crate::NodeId;
use std::time::Duration;

/// Why [`Node::transfer`] refused to start a transfer. Its text (`Display`) is the
/// reason `POST /admin/transfer` answers (409) and `electd transfer` prints.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransferError {
    /// This node does not run the group.
    #[error("this node does not run {0}")]
    NotRun(AlgorithmKind),
    /// The target is this node.
    #[error("node {0} is this node")]
    ToSelf(NodeId),
    /// The target is not on the roster.
    #[error("node {0} is not on the roster")]
    NotMember(NodeId),
    /// Another node leads the group: the request belongs there.
    #[error("this node does not lead {kind}: node {leader} does (ask it)")]
    LedBy {
        /// The group.
        kind: AlgorithmKind,
        /// Its leader, as this node believes.
        leader: NodeId,
    },
    /// This node knows no leader of the group.
    #[error("this node does not lead {0} (no leader known)")]
    NoLeader(AlgorithmKind),
    /// A transfer of the group is under way already.
    #[error("a transfer of {0} is already under way")]
    UnderWay(AlgorithmKind),
    /// The target is a never-leader (priority 0).
    #[error("node {0} may never lead (priority 0)")]
    NeverLeader(NodeId),
    /// Another member outranks the target where the highest-ranked node leads with
    /// `preempt = true`: it would take the leadership back at once.
    #[error(
        "node {by} outranks node {to} and [policy] preempt = true for {kind}: \
         {by} would take the leadership back at once; set preempt = false for \
         {kind} (or drain {by}) first"
    )]
    Outranked {
        /// The group.
        kind: AlgorithmKind,
        /// The target asked for.
        to: NodeId,
        /// The highest-ranked member above it.
        by: NodeId,
    },
}

/// Why a transfer under way ended without the target leading
/// ([`Node::take_transfer_refusals`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The target handed the leadership back: it may not lead now (drained, failing a
    /// health check).
    MayNotLead,
    /// The link gave up on the hand-over message: the target is down or cut off.
    Unreachable,
}

impl Node {
    /// Hand the leadership of `kind`'s group to `to` (`POST /admin/transfer`). Raft
    /// sends TimeoutNow (thesis §3.10): the target campaigns at once and the voters
    /// grant it although they heard this leader recently. The other algorithms send
    /// HANDOFF: the target announces itself (COORDINATOR, the ring's result lap) with
    /// a token above this leadership's, and this node stops heartbeating meanwhile
    /// (its heartbeats would be a higher-ranked claim to the target). This node is
    /// ineligible ([`Ineligible::Transfer`]) until the target leads or the returned
    /// bound passes, so that it is not re-elected meanwhile. A target that hands the
    /// leadership back (it may not lead), or that the link gives up on (down or cut
    /// off: the hand-over message went unacknowledged for `give_up`), ends the
    /// transfer and this node leads on; if the target got the message but never
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
    ) -> Result<Duration, TransferError> {
        let g = self.group_index(kind).ok_or(TransferError::NotRun(kind))?;
        if to == self.id {
            return Err(TransferError::ToSelf(to));
        }
        if !self.is_member(to) {
            return Err(TransferError::NotMember(to));
        }
        let grp = &self.groups[g];
        match grp.leader {
            Some(l) if l == self.id => {}
            Some(l) => return Err(TransferError::LedBy { kind, leader: l }),
            None => return Err(TransferError::NoLeader(kind)),
        }
        if grp.transfer.is_some() {
            return Err(TransferError::UnderWay(kind));
        }
        if self.policy.priority(to) == 0 {
            return Err(TransferError::NeverLeader(to));
        }
        if kind.elects_highest_id() && self.policy.preempt_for(kind).preempt {
            let above = self
                .ring
                .iter()
                .copied()
                .filter(|&m| m != to && self.policy.outranks(m, to))
                .max_by_key(|&m| self.policy.rank(m));
            if let Some(m) = above {
                return Err(TransferError::Outranked { kind, to, by: m });
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

    /// The target `by` refused group `g`'s transfer (or cannot be reached): it is
    /// over, this node leads on (eligible again, heartbeating again) and the refusal
    /// waits to be taken.
    pub(super) fn transfer_refused(&mut self, g: usize, by: NodeId, now: Time, why: Refusal) {
        self.groups[g].transfer = None;
        self.groups[g].transfer_refused = Some((by, why));
        let kind = self.groups[g].kind;
        self.set_ineligible(now, Some(kind), Ineligible::Transfer, false);
    }

    /// The transfers refused by their target, or ended because the link gave up on
    /// it, since the last call, as (group, target, why); this node leads on.
    pub(crate) fn take_transfer_refusals(&mut self) -> Vec<(AlgorithmKind, NodeId, Refusal)> {
        self.groups
            .iter_mut()
            .filter_map(|g| g.transfer_refused.take().map(|(by, why)| (g.kind, by, why)))
            .collect()
    }

    /// The link gave up on `msg` to `peer` in group `g`: if it was the hand-over of
    /// the transfer under way to `peer`, the target is down or cut off, and waiting
    /// for it would only leave the group silent until the followers' failure
    /// detectors fire. The transfer ends; this node leads on.
    pub(super) fn transfer_unreachable(
        &mut self,
        g: usize,
        peer: NodeId,
        msg: &Message,
        now: Time,
    ) {
        let handover = matches!(msg, Message::Handoff { .. } | Message::TimeoutNow { .. });
        if handover && self.groups[g].transfer.is_some_and(|(to, _)| to == peer) {
            self.transfer_refused(g, peer, now, Refusal::Unreachable);
        }
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
            self.transfer_refused(g, from, now, Refusal::MayNotLead);
        }
    }

    /// Raft's hand-over, refused the same way by a target that may not lead (it
    /// would not campaign), and the refusal read by the leader.
    pub(super) fn on_timeout_now(&mut self, g: usize, now: Time, from: NodeId, term: u64) {
        let grp = &self.groups[g];
        let may_not_lead = !grp.ineligible.is_empty();
        if self.is_refusal(g, from, term) {
            self.transfer_refused(g, from, now, Refusal::MayNotLead);
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
