//! What an operator or a health check asks of the node, through the policy: an
//! election now, resignation, ineligibility (drain, FAULT, no quorum, transfer),
//! weighted penalties, and a leader's advertised priority.

use super::{Node, Time};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::Message;
use crate::contract::policy::Ineligible;
use crate::NodeId;

impl Node {
    /// Operator request: call an election in `group` now.
    pub fn call_election(&mut self, now: Time, group: AlgorithmKind) -> bool {
        let Some(g) = self.group_index(group) else {
            return false;
        };
        self.groups[g].algo.call_election(&mut self.out);
        self.apply(g, now);
        true
    }

    /// Graceful leave: every group this node leads tells the others it resigns.
    /// Returns how many groups resigned.
    pub fn resign(&mut self, now: Time) -> usize {
        let mut n = 0;
        for g in 0..self.groups.len() {
            if self.groups[g].leader == Some(self.id) {
                let msg = Message::Resign {
                    epoch: self.groups[g].term,
                };
                self.broadcast(g, now, msg);
                n += 1;
            }
        }
        n
    }

    /// Set (`on`) or clear one reason for this node to be ineligible in `algorithm`'s
    /// group (every group: `None`); returns how many groups' reasons changed.
    ///
    /// A node is ineligible while any reason holds, and then ranks like a never-leader
    /// (priority 0) in its own eyes: it never announces itself, never campaigns, and
    /// answers no ELECTION as a candidate (a Bully caller hears nothing from it and
    /// wins after T, as if it were down). If it leads, it steps down at once: the
    /// groups on the heartbeat failure detector broadcast RESIGN (the successor calls
    /// an election at once, the others wait for it), Raft hands over as on
    /// `POST /admin/election` at a leader. Eligible again, it treats the current
    /// leader like a claim it just heard: with `preempt = true` a node that outranks
    /// it takes over (after `preempt_delay`), without preemption it keeps following.
    pub fn set_ineligible(
        &mut self,
        now: Time,
        algorithm: Option<AlgorithmKind>,
        why: Ineligible,
        on: bool,
    ) -> usize {
        let mut changed = 0;
        for g in 0..self.groups.len() {
            if algorithm.is_some_and(|k| k != self.groups[g].kind) {
                continue;
            }
            let grp = &mut self.groups[g];
            let was_eligible = grp.ineligible.is_empty();
            let did = if on {
                grp.ineligible.insert(why)
            } else {
                grp.ineligible.remove(&why)
            };
            if !did {
                continue;
            }
            changed += 1;
            let eligible = grp.ineligible.is_empty();
            if eligible != was_eligible {
                grp.algo.config_mut().set_eligible(eligible);
            }
            // A transfer keeps leading until the target announces itself; every other
            // reason steps down at once.
            if on && why != Ineligible::Transfer && grp.leader == Some(self.id) {
                if grp.algo.uses_failure_detector() {
                    let msg = Message::Resign { epoch: grp.term };
                    self.broadcast(g, now, msg);
                }
                self.groups[g].algo.step_down(&mut self.out);
                self.apply(g, now);
            } else if eligible && !was_eligible {
                let (leader, term) = (grp.leader, grp.term);
                if let Some(l) = leader.filter(|&l| l != self.id) {
                    grp.algo.on_foreign_leader(l, term, &mut self.out);
                    self.apply(g, now);
                }
            }
        }
        changed
    }

    /// This node's priority in group `g` now: the configured one lowered by the
    /// penalty of failing weighted health checks, never below 1 (a never-leader stays
    /// at 0).
    pub(super) fn effective_priority(&self, g: usize) -> u8 {
        let p = self.policy.priority(self.id);
        if p == 0 {
            0
        } else {
            p.saturating_sub(self.groups[g].penalty).max(1)
        }
    }

    /// Lower this node's priority by `penalty` in `algorithm`'s group (every group:
    /// `None`), or restore it (`0`): weighted health checks (keepalived's
    /// `track_script … weight`). This node ranks itself by the lowered priority (it
    /// answers ELECTION only from nodes it still outranks, and asks the ones that now
    /// outrank it); while it leads, it advertises the lowered priority with its
    /// heartbeats ([`Message::Priority`]), so that a follower that now outranks it
    /// takes over (where the algorithm preempts). Restored, a node that outranks its
    /// leader again takes over as a returning node would. Raft has no preemption: a
    /// penalty only moves its ranked election timeout. Returns the groups changed.
    pub fn set_penalty(
        &mut self,
        now: Time,
        algorithm: Option<AlgorithmKind>,
        penalty: u8,
    ) -> usize {
        let mut changed = 0;
        for g in 0..self.groups.len() {
            if algorithm.is_some_and(|k| k != self.groups[g].kind)
                || self.groups[g].penalty == penalty
            {
                continue;
            }
            changed += 1;
            let was = self.groups[g].penalty;
            self.groups[g].penalty = penalty;
            let p = self.effective_priority(g);
            let me = self.id;
            let grp = &mut self.groups[g];
            grp.algo.config_mut().options.policy.priority.insert(me, p);
            grp.algo.policy_changed();
            let (leader, term) = (grp.leader, grp.term);
            if leader == Some(me) && grp.algo.uses_failure_detector() {
                // Tell the followers now (and with every heartbeat while lowered).
                let msg = Message::Priority {
                    term,
                    priority: u32::from(p),
                };
                self.broadcast(g, now, msg);
            } else if let Some(l) = leader.filter(|&l| l != me && penalty < was) {
                // Back up: outranking the leader again, take over as a returning node.
                if self.groups[g].ineligible.is_empty() {
                    self.groups[g]
                        .algo
                        .on_foreign_leader(l, term, &mut self.out);
                    self.apply(g, now);
                }
            }
        }
        changed
    }

    /// The leader's lowered (or restored) priority: rank it by that while it
    /// leads; a node that now outranks it takes over where the algorithm
    /// preempts (the claim path, with its hold-back rules).
    pub(super) fn on_priority(
        &mut self,
        g: usize,
        now: Time,
        from: NodeId,
        term: u64,
        priority: u32,
    ) {
        let grp = &mut self.groups[g];
        if grp.leader == Some(from) && term == grp.term {
            let p = u8::try_from(priority).unwrap_or(u8::MAX).max(1);
            if grp.leader_priority != Some((from, p)) {
                grp.leader_priority = Some((from, p));
                grp.algo
                    .config_mut()
                    .options
                    .policy
                    .priority
                    .insert(from, p);
                grp.algo.policy_changed();
                if grp.kind.elects_highest_id() && grp.ineligible.is_empty() {
                    grp.algo.on_foreign_leader(from, term, &mut self.out);
                }
                self.apply(g, now);
            }
        }
    }

    /// The groups this node is drained in ([`Ineligible::Drained`]), in configuration
    /// order (what the state file keeps across restarts).
    pub(crate) fn drained(&self) -> impl Iterator<Item = AlgorithmKind> + '_ {
        self.groups
            .iter()
            .filter(|g| g.ineligible.contains(&Ineligible::Drained))
            .map(|g| g.kind)
    }

    /// What weighted health checks take off this node's priority in `kind`'s group.
    pub(crate) fn penalty(&self, kind: AlgorithmKind) -> u8 {
        self.group_index(kind).map_or(0, |g| self.groups[g].penalty)
    }

    /// Why this node may not lead `kind`'s group now (empty: it may; `None`: no such
    /// group).
    pub(crate) fn ineligible(&self, kind: AlgorithmKind) -> Option<Vec<Ineligible>> {
        let g = self.group_index(kind)?;
        Some(self.groups[g].ineligible.iter().copied().collect())
    }
}
