//! The heartbeat failure detector of the groups that use it: a leader's heartbeats
//! and their answers, resignations, stale claims answered with the token held, and
//! what a lost leader leaves behind in the link.

use super::timers::Slot;
use super::{Node, Time};
use crate::contract::algorithm::{AlgorithmKind, LeaderLoss, Token};
use crate::contract::message::Message;
use crate::contract::policy::Ineligible;
use crate::NodeId;

impl Node {
    /// A heartbeat of `from` at `term`: the detector's deadline moved for the leader
    /// followed, a claim heard from another, and a claim below the token held answered.
    pub(super) fn on_heartbeat(&mut self, g: usize, now: Time, from: NodeId, term: u64) {
        let grp = &self.groups[g];
        let answers_heartbeats = self.options.lease.require_quorum.contains(&grp.kind);
        if grp.leader == Some(from) && answers_heartbeats {
            // require_quorum: answer the leader's heartbeat with the token it
            // holds (equal to its own: the leader only records the contact).
            let ack = Message::HeartbeatAck {
                term: term.max(grp.term),
                leader: from,
            };
            self.send(g, now, from, ack);
        }
        let grp = &mut self.groups[g];
        if grp.leader == Some(from) {
            // Stepped down for want of a quorum, and following a leader that
            // has kept its own for a whole failure timeout: this node may stand
            // again. A leader without a quorum steps down at its first beat after
            // leading a failure timeout and sends no heartbeat from then on, so a
            // heartbeat heard a failure timeout and one more beat into the
            // leadership is one of a leader that kept its quorum (the beat covers
            // a heartbeat slower than the announcement). At exactly a failure
            // timeout, two nodes cut off together took turns leading for the
            // whole partition (lease_tests::a_minority_of_two_stops_taking_turns).
            if grp.ineligible.contains(&Ineligible::NoQuorum)
                && now >= grp.since + self.timing.failure_timeout + self.timing.heartbeat
            {
                let kind = grp.kind;
                self.set_ineligible(now, Some(kind), Ineligible::NoQuorum, false);
            }
            // Standing again may have made this node the leader at once (it outranks
            // `from`: Bully announces without asking anyone). The heartbeat then no
            // longer feeds a detector: armed here, it fired a failure timeout later on
            // the node's own leadership, which it "lost" and took again in a new term
            // (seen after every heal of the keepalived bench's partition).
            if self.groups[g].leader == Some(from) {
                let deadline = now + self.timing.failure_timeout;
                self.arm(g, Slot::Detector, deadline);
                self.groups[g].detector_grace = false;
                if term > self.groups[g].term {
                    self.groups[g]
                        .algo
                        .on_leader_term(from, term, &mut self.out);
                    self.apply(g, now);
                }
            }
        } else {
            grp.algo.on_foreign_leader(from, term, &mut self.out);
            self.apply(g, now);
        }
        // A claim below the token this node holds (a leader that came back
        // without its state, the losing side of a partition, or a leadership
        // of the same term under a lower id): answer with the token held, term
        // and leader, so that the claimant takes a new term above it, once per
        // claim and held token (again after `failure_timeout`: the answer may be
        // lost; see `stale_answered`). (An old heartbeat of the leader itself,
        // reordered, draws an answer with the leader's own token, which it
        // ignores.) Unless the algorithm answers that claim itself (see
        // `Algorithm::answers_stale_claim`).
        let grp = &mut self.groups[g];
        let (held, claim) = (Token::new(grp.term, grp.holder), Token::new(term, from));
        if !held.admits(claim) && !grp.algo.answers_stale_claim(from) {
            let again = match grp.stale_answered.get(&from) {
                Some(&(c, h, at)) => {
                    (c, h) != (claim, held) || now >= at + self.timing.failure_timeout
                }
                None => true,
            };
            if again {
                grp.stale_answered.insert(from, (claim, held, now));
                // The held token's leader is named only while this node follows it
                // or leads: a leadership that ended (stepped down for want of a
                // quorum, given up by the detector) is no claim, and a leader
                // deferring to it would wait a failure timeout for nobody (issue 28:
                // a healed partition's majority leader followed the minority's
                // stepped-down one). The term alone (leader 0) makes the claimant
                // take a term above it.
                let live = grp.leader == Some(held.leader);
                let ack = Message::HeartbeatAck {
                    term: held.term,
                    leader: if live { held.leader } else { 0 },
                };
                self.send(g, now, from, ack);
            }
        }
    }

    /// Compared as tokens, not terms: a leadership can be below another of its
    /// own term (announced at the same time, unaware of it), and only the
    /// answer's leader id tells. Where the highest id is meant to lead, an
    /// answer naming a higher id is that id's claim, heard second hand: this
    /// leader defers to it as to its heartbeat (and its failure detector calls
    /// an election if that leader is gone). Only a leadership that outranks
    /// the answer's takes a new term; a new term for every self-made leader of a
    /// cold start would start a race in which each bumps the others' terms.
    ///
    /// An answer naming no leader (0) at this leader's own term is above it too: the
    /// answering node holds a leadership of this term above the claim that has ended
    /// (it names its leader only while that leadership is live, see `on_heartbeat`),
    /// so this leader takes a term above it without deferring to anyone.
    pub(super) fn on_heartbeat_ack(&mut self, g: usize, now: Time, term: u64, leader: NodeId) {
        let grp = &mut self.groups[g];
        let above = if leader == 0 {
            term > 0 && term >= grp.term
        } else {
            Token::new(term, leader) > Token::new(grp.term, grp.holder)
        };
        if grp.leader == Some(self.id) && above {
            if grp.kind.elects_highest_id() && self.policy.outranks(leader, self.id) {
                grp.algo.on_foreign_leader(leader, term, &mut self.out);
            } else {
                grp.algo.on_term_behind(term, &mut self.out);
            }
            self.apply(g, now);
        }
    }

    /// The leader followed resigns: lost at once.
    pub(super) fn on_resign(&mut self, g: usize, now: Time, from: NodeId) {
        let grp = &mut self.groups[g];
        if grp.leader == Some(from) {
            grp.algo.on_leader_lost(LeaderLoss::Resigned, &mut self.out);
            self.apply(g, now);
            self.abandon(g, Some(from), now);
        }
    }

    /// The leader `old` of group `g` was declared lost (silent for `failure_timeout`,
    /// or resigned): what the link still tries to deliver to it in this group is
    /// handed back as undeliverable at once, so that an algorithm routing around dead
    /// members (the ring family) does not wait for the link's whole retry budget. A
    /// ring member that forwarded an ELECTION to the old leader just before its own
    /// detector fired would otherwise add that budget (75 ms by default) to the
    /// failover.
    pub(super) fn abandon(&mut self, g: usize, old: Option<NodeId>, now: Time) {
        let Some(old) = old.filter(|&l| l != self.id) else {
            return;
        };
        let kind = self.groups[g].kind;
        for u in self.link.abandon(old, kind) {
            self.groups[g]
                .algo
                .on_peer_unreachable(u.peer, u.msg, &mut self.out);
            self.apply(g, now);
        }
    }

    /// Make every group's failure detector report the leader lost now (the simulator's
    /// "this node detects the crash" step).
    pub(crate) fn force_leader_lost(&mut self, now: Time) {
        for g in 0..self.groups.len() {
            self.groups[g]
                .algo
                .on_leader_lost(LeaderLoss::Told, &mut self.out);
            self.apply(g, now);
        }
    }

    /// The answers to this node's heartbeats that would only be recorded, as (group,
    /// follower, term, the answer's leader field): in every group this node leads
    /// whose followers answer each heartbeat (Raft, whose answers name no leader, and
    /// `[lease] require_quorum`, whose answers name this node), an answer of the
    /// leadership's own term from each other member. Such an answer only marks the
    /// follower as heard (Raft's check-quorum, the lease), with the time it arrived, so
    /// it may be read late, as of that time ([`crate::daemon::heartbeats`]); an answer
    /// of another term (a follower ahead) is read at once, and so is every answer of a
    /// group whose lease is too short to wait a heartbeat for its renewal
    /// ([`Node::answers_may_wait`]).
    pub(crate) fn quiet_acks(
        &self,
    ) -> impl Iterator<Item = (AlgorithmKind, NodeId, u64, NodeId)> + '_ {
        self.groups
            .iter()
            .enumerate()
            .filter(|&(g, grp)| {
                grp.leader == Some(self.id)
                    && (!grp.algo.uses_failure_detector()
                        || self.options.lease.require_quorum.contains(&grp.kind))
                    && self.answers_may_wait(g)
            })
            .map(|(_, grp)| grp)
            .flat_map(move |grp| {
                let named = if grp.algo.uses_failure_detector() {
                    self.id
                } else {
                    0
                };
                self.members
                    .iter()
                    .filter(move |&&m| m != self.id)
                    .map(move |&m| (grp.kind, m, grp.term, named))
            })
    }

    /// The groups whose leader's next heartbeat would only move the failure detector's
    /// deadline, as (group, leader, term): a group of the failure detector that follows
    /// another node's leadership at the token it holds, not electing, not stepped down
    /// for want of a quorum, and not answering heartbeats (`[lease] require_quorum`).
    /// Such a heartbeat may be read late, as of the time it arrived
    /// ([`crate::daemon::heartbeats`]); any other heartbeat is read at once.
    pub(crate) fn quiet_heartbeats(
        &self,
    ) -> impl Iterator<Item = (AlgorithmKind, NodeId, u64)> + '_ {
        self.groups.iter().filter_map(|grp| {
            let leader = grp.leader.filter(|&l| l != self.id)?;
            let quiet = grp.algo.uses_failure_detector()
                && !self.options.lease.require_quorum.contains(&grp.kind)
                && !grp.algo.is_electing()
                && grp.transfer.is_none()
                && !grp.ineligible.contains(&Ineligible::NoQuorum)
                && Token::new(grp.term, grp.holder).admits(Token::new(grp.term, leader));
            quiet.then_some((grp.kind, leader, grp.term))
        })
    }
}
