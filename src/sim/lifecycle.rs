//! The simulated nodes' lives: boot (with or without their durable state), crash,
//! pause, slow down, operator requests, and each input handled at its processing cost.

use super::queue::Payload;
use super::{Sim, SimError};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::MessageType;
use crate::contract::policy::Ineligible;
use crate::node::{Datagram, Node, TransferError};
use crate::trace::{self, Record};
use crate::NodeId;
use std::borrow::Cow;
use std::time::Duration;

impl Sim {
    /// Boot (or reboot) node `id`.
    pub fn start(&mut self, id: NodeId, elect: bool) -> Result<(), SimError> {
        self.boot(id, elect, true)
    }

    /// Reboot node `id` with an empty disk: its durable state (terms, Raft's vote) is
    /// lost, as on a machine replaced or a state directory wiped.
    pub fn start_blank(&mut self, id: NodeId, elect: bool) -> Result<(), SimError> {
        self.boot(id, elect, false)
    }

    pub(super) fn boot(
        &mut self,
        id: NodeId,
        elect: bool,
        keep_state: bool,
    ) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if self.nodes[i].alive {
            return Ok(());
        }
        // Stable storage survives the crash: the previous life's durable state (Raft's
        // term and vote) is handed to the new one, as a disk would.
        let mut durable = Vec::new();
        if let Some(old) = self.nodes[i].node.take() {
            self.retire(&old);
            if keep_state {
                durable = old.durable();
            } else {
                self.tokens.forget(id);
            }
        }
        let sn = &mut self.nodes[i];
        sn.incarnation += 1;
        let seed = sn.seed ^ sn.incarnation.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let cfg = Self::node_config(&self.cfg, &self.roster, id, sn.incarnation, seed);
        let mut node = Node::new(cfg)?;
        node.restore(&durable);
        node.start(self.now, elect);
        sn.node = Some(node);
        sn.alive = true;
        sn.next_wake = None;
        let incarnation = sn.incarnation;
        if let Some(t) = self.trace.as_mut() {
            t.forget(id);
            t.push(Record::Start {
                t: trace::ns(self.now),
                node: id,
                incarnation,
            });
        }
        self.after(i);
        Ok(())
    }

    pub(super) fn retire(&mut self, old: &Node) {
        for kind in old.algorithms() {
            if let Some(s) = old.group_stats(kind) {
                let t = self
                    .retired
                    .entry(kind)
                    .or_insert([0; MessageType::ALL.len()]);
                for (a, b) in t.iter_mut().zip(s.sent.iter()) {
                    *a += b;
                }
            }
        }
        let l = old.link_stats();
        self.retired_link[0] += l.acks_sent;
        self.retired_link[1] += l.retransmissions;
        self.retired_link[2] += l.delivery_failures;
    }

    /// Crash `id`: its state and inbox are lost (crashing a crashed node does nothing).
    pub fn crash(&mut self, id: NodeId) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if self.nodes[i].alive {
            self.trace_record(|t| Record::Crash { t, node: id });
        }
        self.nodes[i].alive = false;
        self.nodes[i].next_wake = None;
        self.tokens.crashed(id);
        self.drop_inbox(i);
        Ok(())
    }

    /// A crashed node loses what waited in its inbox.
    pub(super) fn drop_inbox(&mut self, i: usize) {
        let sn = &mut self.nodes[i];
        sn.timer_due = false;
        sn.busy_until = Duration::ZERO;
        sn.slow = None;
        for d in std::mem::take(&mut sn.inbox) {
            if d.body.as_ref().is_some_and(|b| !b.kind().is_liveness()) {
                self.election_in_flight -= 1;
            }
        }
    }

    /// `id` stops for `d` (a paused process): nothing is handled until then; what
    /// arrives meanwhile waits and is handled afterwards, one input at a time.
    pub(crate) fn pause(&mut self, id: NodeId, d: Duration) -> Result<(), SimError> {
        let i = self.idx(id)?;
        let until = self.now + d;
        let sn = &mut self.nodes[i];
        if sn.alive {
            sn.busy_until = sn.busy_until.max(until);
        }
        Ok(())
    }

    /// `id` spends at least `cost` on every input for `d` (a starved CPU).
    pub(crate) fn slow(&mut self, id: NodeId, cost: Duration, d: Duration) -> Result<(), SimError> {
        let i = self.idx(id)?;
        self.nodes[i].slow = Some((self.now + d, cost));
        Ok(())
    }

    /// The cost of one input at node `i` now.
    pub(super) fn cost_of(&self, i: usize, base: Duration) -> Duration {
        match self.nodes[i].slow {
            Some((until, cost)) if self.now < until => base.max(cost),
            _ => base,
        }
    }

    pub(super) fn busy(&self, i: usize) -> bool {
        self.now < self.nodes[i].busy_until
    }

    /// Queue a `Ready` for node `i` when it is free, unless one is queued.
    pub(super) fn ready_later(&mut self, i: usize) {
        if !self.nodes[i].ready_queued {
            self.nodes[i].ready_queued = true;
            let at = self.nodes[i].busy_until.max(self.now);
            self.push(at, Payload::Ready { node: i as u32 });
        }
    }

    pub(super) fn handle_datagram_at(&mut self, i: usize, datagram: Datagram) {
        if datagram
            .body
            .as_ref()
            .is_some_and(|b| !b.kind().is_liveness())
        {
            self.election_in_flight -= 1;
        }
        self.delivered += 1;
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.handle_datagram(now, datagram);
        }
        self.nodes[i].busy_until = now + self.cost_of(i, self.cfg.cost.datagram);
        self.after(i);
    }

    pub(super) fn handle_timeout_at(&mut self, i: usize) {
        let now = self.now;
        let sn = &mut self.nodes[i];
        sn.next_wake = None;
        if let (Some(t), Some(n)) = (self.trace.as_mut(), sn.node.as_ref()) {
            for (alg, timer) in n.due_timers(now) {
                t.push(Record::Timer {
                    t: trace::ns(now),
                    node: sn.id,
                    alg: Cow::Borrowed(alg.as_str()),
                    timer: Cow::Borrowed(timer),
                });
            }
        }
        if let Some(n) = sn.node.as_mut() {
            n.handle_timeout(now);
        }
        self.nodes[i].busy_until = now + self.cost_of(i, self.cfg.cost.timer);
        self.after(i);
    }

    /// `id` calls an election in every group.
    pub fn elect(&mut self, id: NodeId) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if !self.nodes[i].alive {
            return Ok(());
        }
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            for kind in self.cfg.algorithms.clone() {
                node.call_election(now, kind);
            }
        }
        self.after(i);
        Ok(())
    }

    /// `id`'s failure detector fires now in every group.
    pub fn detect(&mut self, id: NodeId) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if !self.nodes[i].alive {
            return Ok(());
        }
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.force_leader_lost(now);
        }
        self.after(i);
        Ok(())
    }

    #[cfg(test)]
    /// Make `id` ineligible in `group` (every group: `None`) for `why`, or clear that
    /// reason ([`Node::set_ineligible`]).
    pub(crate) fn set_ineligible(
        &mut self,
        id: NodeId,
        group: Option<AlgorithmKind>,
        why: Ineligible,
        on: bool,
    ) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if !self.nodes[i].alive {
            return Ok(());
        }
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.set_ineligible(now, group, why, on);
        }
        self.after(i);
        Ok(())
    }

    #[cfg(test)]
    /// Lower `id`'s priority by `penalty` in `group` (every group: `None`), or restore
    /// it with 0 ([`Node::set_penalty`]).
    pub(crate) fn set_penalty(
        &mut self,
        id: NodeId,
        group: Option<AlgorithmKind>,
        penalty: u8,
    ) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if !self.nodes[i].alive {
            return Ok(());
        }
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.set_penalty(now, group, penalty);
        }
        self.after(i);
        Ok(())
    }

    /// `id` hands the leadership of `group` to `to` ([`Node::transfer`]): the node's
    /// answer (the bound, or why not); [`SimError::Down`] when `id` is down.
    pub fn transfer(
        &mut self,
        id: NodeId,
        group: AlgorithmKind,
        to: NodeId,
    ) -> Result<Result<Duration, TransferError>, SimError> {
        let i = self.idx(id)?;
        let now = self.now;
        let alive = self.nodes[i].alive;
        let answer = match self.nodes[i].node.as_mut() {
            Some(node) if alive => Some(node.transfer(now, group, to)),
            _ => None,
        };
        self.after(i);
        answer.ok_or(SimError::Down(id))
    }

    /// The operator drains `id` (`on`) or undrains it, every group ([`Node::set_ineligible`]
    /// with [`Ineligible::Drained`]); [`SimError::Down`] when `id` is down.
    pub fn drain(&mut self, id: NodeId, on: bool) -> Result<(), SimError> {
        let i = self.idx(id)?;
        let now = self.now;
        let alive = self.nodes[i].alive;
        let done = match self.nodes[i].node.as_mut() {
            Some(node) if alive => Some(node.set_ineligible(now, None, Ineligible::Drained, on)),
            _ => None,
        };
        self.after(i);
        done.map(|_| ()).ok_or(SimError::Down(id))
    }

    /// Graceful stop: resign, flush the datagrams, then crash.
    pub(crate) fn resign(&mut self, id: NodeId) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if !self.nodes[i].alive {
            return Ok(());
        }
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.resign(now);
        }
        self.after(i);
        self.crash(id)
    }
}
