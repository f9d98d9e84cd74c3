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
//! random [H, 2H] plus one rank step (T + H, or F/2 if longer) per member ranked
//! above it before calling its election; a leader handed YOU_ARE_COORDINATOR
//! answers with its unchanged COORDINATOR to the nodes that election flagged (the ids
//! from its initiator up) instead of a new epoch to everyone; a leader answers a lower
//! claimant alone, and a follower of a higher leader leaves lower claims to it; a node
//! driving an election takes a higher node's heartbeat as the announcement.

use crate::algorithms::bully_common::{self as common, Claim, Holdback, Leadership};
use crate::algorithms::tags::Joined;
use crate::contract::algorithm::{
    Algorithm, AlgorithmKind, Durable, GroupConfig, LeaderLoss, Out, Timer,
};
use crate::contract::formulas::{self, Case, RingOrder};
use crate::contract::info::{Elects, Info, Recovery};
use crate::contract::message::MessageType;
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
pub(crate) struct ImprovedBully {
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
    /// On a silent leader only the successor calls at once
    /// (`bully_common::turns_before`).
    const SECOND_CALLS: bool = false;

    /// A node of group `cfg`, not yet started.
    pub(crate) fn new(cfg: GroupConfig) -> Self {
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

    common::shared_claim_methods!();
}

impl Algorithm for ImprovedBully {
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
            (Timer::Preempt, State::Follower) => self.preempt_fired(out),
            // A caller that finds no leader hands its election over (YOU_ARE_COORDINATOR):
            // the end of a restarted node's listening changes nothing here.
            (Timer::Listen, _) => {
                self.hold.listened();
            }
            _ => {}
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
}

/// What the program knows about Improved Bully (see [`crate::contract::info`]).
pub(crate) const INFO: Info = Info {
    name: "improved-bully",
    aliases: &["improvedbully", "improved_bully"],
    title: "Improved Bully (Soundarabai et al. 2014)",
    summary: "Bully where the initiator hands the election to its highest responder",
    build: |c| Box::new(ImprovedBully::new(c)),
    elects: Elects::HighestLiveId,
    recovery: Recovery::Cascade { answer_rounds: 2 },
    message_types: &[
        MessageType::Election,
        MessageType::Ok,
        MessageType::Coordinator,
        MessageType::YouAreCoordinator,
    ],
    cases: || {
        vec![Case {
            algorithm: AlgorithmKind::ImprovedBully,
            order: RingOrder::Ascending,
            label: "improved-bully".into(),
            formula: "3N−2 (Soundarabai et al. 2014 Table 1; seed report Eq. 2, k=1)",
            expected: Some(|n| formulas::improved_bully(n, 1) as f64),
            exact: true,
        }]
    },
    policy_preempt: true,
    durable_vote: false,
};
#[cfg(test)]
#[path = "tests/improved_bully.rs"]
mod tests;
