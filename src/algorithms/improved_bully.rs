//! Improved Bully (P. Beulah Soundarabai et al., "Improved Bully Election Algorithm for
//! Distributed Systems", arXiv:1403.3255, 2014), as described in the seed report §3.2.
//!
//! # Assumptions
//! As for [`super::bully`]: a synchronous bound T = 2·Ttrans + Tprocess
//! (`answer_timeout`), reliable delivery, crash-stop with restart, a known roster.
//!
//! # The algorithm
//! Only one election runs at a time. The initiator sends ELECTION to every higher id;
//! each receiver answers OK carrying its own id, raises its *election flag* and does
//! **not** start an election of its own. Once every higher id has answered (or T has
//! passed) the initiator sends YOU_ARE_COORDINATOR to the highest responder, which
//! cross-checks by sending ELECTION to the ids above itself: with no answer within T
//! it becomes coordinator and sends COORDINATOR to every other roster member; with an
//! answer it hands on to its own highest responder the same way. A node whose flag is
//! raised and that sees no COORDINATOR within T' starts an election itself.
//!
//! Initiator k of N (ids 1..N) on a synchronous network with everyone alive sends
//! (N−k) ELECTION + (N−k) OK + 1 YOU_ARE_COORDINATOR + (N−1) COORDINATOR = 3N − 2k
//! messages (seed report, Eq. 2; Soundarabai et al., Table 1); 3N − 2 for k = 1.
//!
//! When the top node is dead the initiator and then the cross-checking node each wait
//! T for it: failover costs about 2·T after detection, by design.
//!
//! No self-inflicted storms (as in [`super::bully`]): a (re)started node listens a
//! random [H, 2H] before calling its election; a leader handed YOU_ARE_COORDINATOR
//! answers with its unchanged COORDINATOR to the nodes that election flagged (the ids
//! from its initiator up) instead of a new epoch to everyone; a leader answers a lower
//! claimant alone, and a follower of a higher leader leaves lower claims to it; a node
//! driving an election takes a higher node's heartbeat as the announcement.

use crate::algorithms::bully_common::{self as common, Claim, Holdback, Leadership};
use crate::algorithms::tags::Joined;
use crate::contract::algorithm::{
    Algorithm, AlgorithmKind, Durable, GroupConfig, LeaderLoss, Out, Timer,
};
use crate::contract::message::{ElectionTag, Message};
use crate::NodeId;
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Follower,
    /// Sent ELECTION to the higher ids (as initiator or as cross-check), collecting OKs.
    Electing,
    /// Sent YOU_ARE_COORDINATOR, waiting T' for COORDINATOR.
    Handing,
    /// Election flag raised by someone else's ELECTION; waiting T' for COORDINATOR.
    Flagged,
    Leader,
}

/// One node's state in the Improved Bully algorithm (see the module documentation).
#[derive(Debug)]
pub struct ImprovedBully {
    cfg: GroupConfig,
    higher: Vec<NodeId>,
    state: State,
    lead: Leadership,
    tag: ElectionTag,
    responders: BTreeSet<NodeId>,
    joined: Joined,
    hold: Holdback,
}

impl ImprovedBully {
    /// A node of group `cfg`, not yet started.
    pub fn new(cfg: GroupConfig) -> Self {
        ImprovedBully {
            higher: cfg.higher(),
            joined: Joined::new(cfg.incarnation),
            hold: Holdback::new(&cfg, AlgorithmKind::ImprovedBully),
            cfg,
            state: State::Follower,
            lead: Leadership::default(),
            tag: ElectionTag::default(),
            responders: BTreeSet::new(),
        }
    }

    fn me(&self) -> NodeId {
        self.cfg.me
    }

    /// Flag raised: an election runs (this node's or someone else's).
    fn electing(&self) -> bool {
        matches!(
            self.state,
            State::Electing | State::Handing | State::Flagged
        )
    }

    /// This node itself drives an election (initiating, cross-checking or handing over).
    fn driving(&self) -> bool {
        matches!(self.state, State::Electing | State::Handing)
    }

    /// Send ELECTION to every higher id (initiating, or cross-checking for `tag`).
    fn elect(&mut self, tag: Option<ElectionTag>, out: &mut Out) {
        self.tag = tag.unwrap_or_else(|| self.joined.fresh(self.cfg.me));
        out.election_started();
        common::cancel_election_timers(out);
        self.responders.clear();
        if self.higher.is_empty() {
            self.win(out);
            return;
        }
        self.state = State::Electing;
        common::send_elections(
            &self.higher,
            self.tag,
            self.lead.highest(),
            &self.cfg.timing,
            out,
        );
    }

    /// Every higher id answered, or T passed.
    fn conclude(&mut self, out: &mut Out) {
        out.cancel_timer(Timer::Answer);
        let policy = &self.cfg.options.policy;
        match policy.best(self.responders.iter().copied()) {
            None => self.win(out),
            Some(highest) => {
                self.state = State::Handing;
                out.send(
                    highest,
                    Message::YouAreCoordinator {
                        tag: self.tag,
                        epoch: self.lead.highest(),
                    },
                );
                out.set_timer_exact(Timer::Coordinator, self.cfg.timing.coordinator_timeout);
            }
        }
    }

    /// Nobody ranked above answered: announce, unless this node may never lead
    /// (priority 0), which waits under the watchdog for an eligible node instead.
    fn win(&mut self, out: &mut Out) {
        let won = common::win(&self.cfg, &mut self.hold, &mut self.lead, self.tag, out);
        self.state = if won { State::Leader } else { State::Follower };
    }

    /// A plain follower holding back (no preemption, or its delay not yet passed).
    fn holding(&self) -> bool {
        self.state == State::Follower && self.hold.holding()
    }

    /// A plain follower of a leader above this node.
    fn following_higher(&self) -> bool {
        self.state == State::Follower
            && self
                .lead
                .leader
                .is_some_and(|l| self.cfg.outranks(l, self.me()))
    }

    fn on_claim(&mut self, leader: NodeId, epoch: u64, out: &mut Out) {
        let settled = self.state == State::Follower;
        let below = self.cfg.outranks(self.me(), leader) && !self.holding();
        match self.lead.claim(below, leader, epoch, settled) {
            // A leader answers a lower claimant below its token with its unchanged
            // COORDINATOR, to it alone, once per claimed epoch (its heartbeats win
            // over the claimant's followers), and does not announce again to
            // everyone: its leadership did not change. A claim above its epoch would
            // find that COORDINATOR stale: it takes a new epoch above the claim.
            Claim::Bully if self.state == State::Leader => {
                let (me, tag) = (self.me(), self.tag);
                if self.lead.answer_lower(me, leader, epoch, tag, out) {
                    self.elect(None, out);
                }
            }
            // Following a higher leader: that leader hears the claim too and answers
            // it; a cascade from here would only reach the nodes above.
            Claim::Bully if self.following_higher() => {}
            Claim::Bully if !self.driving() => self.elect(None, out),
            Claim::Follow => {
                self.state = State::Follower;
                self.lead.follow(leader, epoch, out);
                let below = self.cfg.outranks(self.me(), leader);
                self.hold.following(below, out);
            }
            Claim::Bully | Claim::Stale | Claim::Keep => {}
        }
    }
}

impl Algorithm for ImprovedBully {
    fn on_start(&mut self, call_election: bool, out: &mut Out) {
        self.state = State::Follower;
        self.lead.leader = None;
        self.hold.reset();
        if call_election {
            if !self.hold.textbook() {
                // Without preemption even the top node listens first, for as long as a
                // follower waits for a silent leader ([F, 2F]): a live leader heard
                // meanwhile is followed.
                common::arm_watchdog(&self.cfg.timing, out);
            } else if common::listen_before_electing(&self.higher, &self.cfg.timing, false, out) {
                self.elect(None, out);
            }
        } else {
            common::arm_watchdog(&self.cfg.timing, out);
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Message, out: &mut Out) {
        match msg {
            // Holding back behind a live leader that outranks the caller: stay silent,
            // so that the caller hands the election to that leader (the highest that
            // answered), which re-asserts itself; this node does not take over.
            Message::Election { epoch, .. }
                if self.holding()
                    && self.lead.leader.is_some_and(|l| {
                        self.cfg.outranks(self.me(), l) && self.cfg.outranks(l, from)
                    }) =>
            {
                self.lead.observe(epoch);
            }
            Message::Election { tag, epoch } if self.cfg.outranks(self.me(), from) => {
                self.lead.observe(epoch);
                self.joined.join(tag);
                out.send(
                    from,
                    Message::Ok {
                        responder: self.me(),
                        tag,
                    },
                );
                // Raise the election flag: someone runs an election; do not start one.
                // (Holding back while listening for a leader after a restart: answer,
                // but wait for the leader's heartbeat under the watchdog; a caller that
                // finds no leader hands the election over with YOU_ARE_COORDINATOR.)
                if self.state == State::Follower && !self.holding() {
                    self.state = State::Flagged;
                    out.cancel_timer(Timer::Retry);
                    out.set_timer_exact(Timer::Coordinator, self.cfg.timing.coordinator_timeout);
                }
            }
            // The responder's id is taken from the authenticated sender, not the body.
            Message::Ok { tag, .. }
                if self.cfg.outranks(from, self.me())
                    && self.state == State::Electing
                    && tag == self.tag =>
            {
                self.responders.insert(from);
                if self.responders.len() == self.higher.len() {
                    self.conclude(out);
                }
            }
            // A leader whose epoch nobody has passed still leads unchanged.
            Message::YouAreCoordinator { tag, epoch }
                if self.cfg.outranks(self.me(), from)
                    && self.state == State::Leader
                    && epoch <= self.lead.epoch() =>
            {
                self.joined.join(tag);
                let flagged = common::cascade_members(&self.cfg, from, tag);
                common::reassert(self.me(), &self.lead, tag, &flagged, out);
            }
            Message::YouAreCoordinator { tag, epoch } if self.cfg.outranks(self.me(), from) => {
                self.lead.observe(epoch);
                // Already cross-checking this election: the announcement will come.
                // Otherwise cross-check (a leader re-announces, un-flagging everyone).
                if !(self.state == State::Electing && self.tag == tag) {
                    self.joined.join(tag);
                    self.elect(Some(tag), out);
                }
            }
            Message::Coordinator { leader, epoch, tag } if leader == from => {
                self.joined.join(tag);
                self.on_claim(leader, epoch, out);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, timer: Timer, out: &mut Out) {
        match (timer, self.state) {
            (Timer::Answer, State::Electing) => self.conclude(out),
            (Timer::Coordinator, State::Handing | State::Flagged) => self.elect(None, out),
            (Timer::Retry, State::Follower) if self.lead.leader.is_none() => self.elect(None, out),
            (Timer::Preempt, State::Follower) => {
                let below = self
                    .lead
                    .leader
                    .is_some_and(|l| self.cfg.outranks(self.me(), l));
                let take_over = self.hold.fired(below);
                if take_over {
                    self.elect(None, out);
                }
            }
            _ => {}
        }
    }

    fn on_peer_unreachable(&mut self, _peer: NodeId, _msg: Message, _out: &mut Out) {}

    fn on_leader_lost(&mut self, why: LeaderLoss, out: &mut Out) {
        let old = self.lead.lose(out);
        if self.state == State::Leader {
            self.state = State::Follower;
        }
        // One election at a time: a raised flag means one is already running.
        if self.electing() {
            return;
        }
        match common::turns_before(why, old, &self.higher, &self.cfg) {
            0 => self.elect(None, out),
            turns => common::arm_successor_watchdog(turns, &self.cfg.timing, out),
        }
    }

    fn on_foreign_leader(&mut self, from: NodeId, epoch: u64, out: &mut Out) {
        // Driving an election, a higher node's heartbeat is the awaited answer.
        let answer = self.driving() && self.cfg.outranks(from, self.me());
        if !self.driving() || answer {
            self.on_claim(from, epoch, out);
        }
    }

    fn call_election(&mut self, out: &mut Out) {
        if !self.driving() {
            self.elect(None, out);
        }
    }

    common::shared_algorithm_methods!();

    fn state(&self) -> &'static str {
        match self.state {
            State::Follower if self.lead.leader.is_some() => "follower",
            State::Follower => "no-leader",
            State::Electing => "electing",
            State::Handing => "handing-over",
            State::Flagged => "election-flag",
            State::Leader => "leader",
        }
    }

    fn is_electing(&self) -> bool {
        self.electing()
    }
}
#[cfg(test)]
#[path = "tests/improved_bully.rs"]
mod tests;
