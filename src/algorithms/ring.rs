//! The ring election with a list of ids (Tanenbaum & van Steen, *Distributed
//! Systems*, §6.5.1 "A ring algorithm"; seed slides "The Ring Algorithm" and seed
//! course notes "Ring-based Elections").
//!
//! # Assumptions (as in the source)
//! Members form a logical ring in the roster's ring order ([`GroupConfig::ring`]) and
//! every member knows the whole order, so it can skip a dead successor. Delivery is
//! reliable (electd's link retransmits under it).
//!
//! # The algorithm
//! A node that calls an election sends ELECTION (`ring_election`) carrying the list
//! `[own id]` to its first live successor. Each receiver appends its id and forwards
//! the message to its own first live successor. When the message comes back to its
//! initiator (its own id is in the list), the lap is complete: the leader is the
//! highest id in the list, and one COORDINATOR (`ring_coordinator`) lap follows,
//! naming the leader; every node adopts it and forwards it, until it is back at the
//! node that sent it.
//!
//! One initiator on a ring of N live members sends exactly N ELECTION hops and N
//! COORDINATOR hops: **2N messages**, whatever the ring order.
//!
//! Two concurrent initiators are allowed (as in the slides): both laps collect every
//! live member, so both name the same leader. To avoid N concurrent laps when every
//! follower's failure detector fires at once, a node whose own election is still
//! travelling swallows the ELECTION of a lower initiator (Chang–Roberts' extinction
//! applied to initiators): that initiator learns the result from the surviving
//! COORDINATOR lap, which passes every member.
//!
//! # Beyond the textbook (recovery after faults)
//! - A successor the link declares unreachable twice in a row for the same message
//!   ([`super::ring_common::STRIKES`]; the first time the message is sent to it again)
//!   is skipped and the undelivered message goes to the next member (see
//!   [`super::ring_common`]).
//! - A lap that comes back to a node following a leader ranked above the lap's choice
//!   (it left the election on hearing the leader its detector wrongly gave up on) is
//!   not decided: the lap skipped that leader.
//! - The lap is also complete when it reaches *any* node already in its list (its
//!   initiator died and was skipped): that node decides on the part of the list from
//!   its own entry onwards, which is a full lap of the live ring, and sends the
//!   COORDINATOR lap itself.
//! - Every node that forwarded an ELECTION arms a restart timer
//!   ([`super::ring_common::election_bound`], 2 hops per member); with no COORDINATOR by
//!   then it calls a new election. A node without leader that is not electing calls
//!   one after a watchdog (`failure_timeout`).
//! - A node that follows a leader drops an ELECTION whose epoch is below its token's:
//!   a dead lap of an election already decided, which would only name the same
//!   leader again with one more term (see [`super::ring_common`], "Dead laps").
//! - The epoch travels in both messages (maximum over the lap); the decision is
//!   that maximum + 1. A COORDINATOR with an epoch below this node's is forwarded
//!   but not adopted, so the exported term only grows.
//! - A node never follows a leader lower than itself: a COORDINATOR naming one is
//!   forwarded, and the node (skipped by that lap) calls an election.
//! - Split brain after a heal is resolved by [`super::ring_common::on_foreign`]; an
//!   electing node applies that rule too when the claim's epoch is newer than its own
//!   (the election it waits for finished without it).

use crate::algorithms::ring_common::{
    self, arm_restart, election_bound, Hop, Leadership, RingMember, RingView, Strike,
};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::algorithm::{Algorithm, Durable, GroupConfig, LeaderLoss, Out, Timer};
use crate::contract::formulas::{self, Case, RingOrder};
use crate::contract::info::{Elects, Info, Recovery};
use crate::contract::message::Message;
use crate::contract::message::MessageType;
use crate::NodeId;
use std::time::Duration;

/// Sequential hops of one election per member: an ELECTION lap and a COORDINATOR lap.
pub const HOPS_PER_MEMBER: u32 = 2;

/// One node's state in the ring algorithm (see the module documentation).
#[derive(Debug)]
pub struct Ring {
    cfg: GroupConfig,
    view: RingView,
    lead: Leadership,
    /// Forwarded (or sent) an ELECTION and has not seen a COORDINATOR since.
    participant: bool,
    /// This node's own ELECTION is still travelling.
    initiated: bool,
    bound: Duration,
}

impl Ring {
    /// A node of group `cfg`, not yet started.
    pub fn new(cfg: GroupConfig) -> Self {
        let hold = crate::algorithms::bully_common::Holdback::new(&cfg, AlgorithmKind::Ring);
        Ring {
            view: RingView::new(&cfg),
            bound: election_bound(&cfg.timing, cfg.ring.len(), HOPS_PER_MEMBER),
            cfg,
            lead: Leadership::with_hold(hold),
            participant: false,
            initiated: false,
        }
    }

    fn me(&self) -> NodeId {
        self.cfg.me
    }

    /// Start a new election with this node as initiator.
    fn elect(&mut self, out: &mut Out) {
        out.election_started();
        if !self.participant {
            self.lead.new_round();
        }
        self.participant = true;
        self.initiated = true;
        arm_restart(self.bound, out);
        let msg = Message::RingElection {
            initiator: self.me(),
            ids: vec![self.me()],
            epoch: self.lead.highest(),
        };
        self.route_election(msg, out);
    }

    /// Send an ELECTION (whose list already holds this node) to the next live member.
    fn route_election(&mut self, msg: Message, out: &mut Out) {
        match self.view.hop(true, self.me()) {
            Hop::To(next) => out.send(next, msg),
            // Nobody else is alive: the lap is complete here.
            hop @ (Hop::Alone | Hop::OriginGone) => {
                if hop == Hop::Alone {
                    self.view.won_alone();
                }
                if let Message::RingElection { ids, epoch, .. } = msg {
                    self.lap_complete(&ids, epoch, out);
                }
            }
        }
    }

    /// An ELECTION came back to a node of its list: decide and send COORDINATOR.
    fn lap_complete(&mut self, ids: &[NodeId], epoch: u64, out: &mut Out) {
        let Some(p) = ids.iter().position(|&x| x == self.me()) else {
            return;
        };
        let policy = &self.cfg.options.policy;
        let leader = policy.best(ids[p..].iter().copied()).unwrap_or(self.me());
        if !policy.eligible(leader) {
            // Every live member is a never-leader (priority 0): nobody to announce;
            // the restart timer tries again.
            return;
        }
        if ring_common::follows_above(self, leader) {
            // This node left the election to follow a live leader ranked above the
            // lap's choice: the lap skipped that leader. Not announced.
            return;
        }
        let epoch = epoch.max(self.lead.highest()).saturating_add(1);
        self.participant = false;
        self.initiated = false;
        out.cancel_timer(Timer::Retry);
        self.lead.adopt(leader, epoch, out);
        let msg = Message::RingCoordinator {
            initiator: self.me(),
            leader,
            epoch: self.lead.highest(),
        };
        if let Hop::To(next) = self.view.hop(true, self.me()) {
            out.send(next, msg);
        }
    }

    fn on_election(&mut self, initiator: NodeId, mut ids: Vec<NodeId>, epoch: u64, out: &mut Out) {
        if !self.view.contains(initiator) || ids.iter().any(|&x| !self.view.contains(x)) {
            return;
        }
        for &x in &ids {
            self.view.trust(x);
        }
        if self.lead.dead_lap(epoch) {
            // Started before the token this node follows: completing it would only
            // name the same leader with a higher term (ring_common, "Dead laps").
            return;
        }
        if !self.participant {
            self.lead.new_round();
        }
        for &x in ids.iter().chain([&initiator]) {
            self.lead.heard_in_round(x);
        }
        if ids.contains(&self.me()) {
            self.lap_complete(&ids, epoch, out);
            return;
        }
        if self.initiated && self.cfg.outranks(self.me(), initiator) {
            // Extinction: this node's own, higher election carries the result.
            return;
        }
        if !self.participant {
            out.election_started();
        }
        self.participant = true;
        arm_restart(self.bound, out);
        // A node that may not lead (priority 0, drained, failing a check) forwards
        // without standing: the others cannot know its run-time standing, so it keeps
        // its id off the list they choose from.
        if self.cfg.eligible() {
            ids.push(self.me());
        }
        let msg = Message::RingElection {
            initiator,
            ids,
            epoch: epoch.max(self.lead.highest()),
        };
        self.route_election(msg, out);
    }

    fn on_coordinator(&mut self, initiator: NodeId, leader: NodeId, epoch: u64, out: &mut Out) {
        if !self.view.contains(initiator) || !self.view.contains(leader) {
            return;
        }
        self.view.trust(leader);
        self.view.trust(initiator);
        if initiator == self.me() {
            return; // the lap is back where it started
        }
        let lower = self.cfg.outranks(self.me(), leader)
            && self.cfg.eligible()
            && (self.participant || !self.lead.hold.holding());
        // A lap that chose this node although it may not lead now (it became
        // ineligible while the lap ran): it does not adopt itself; its watchdog elects
        // again without it.
        let refused = leader == self.me() && !self.cfg.eligible();
        if epoch >= self.lead.highest() && !lower && !refused {
            self.participant = false;
            self.initiated = false;
            out.cancel_timer(Timer::Retry);
            self.lead.adopt(leader, epoch, out);
            let below = self.cfg.outranks(self.me(), leader);
            self.lead.hold.following(below, out);
        }
        self.route_coordinator(initiator, leader, epoch, out);
        if lower && !self.participant {
            // The lap that chose a lower leader skipped this live node: elect.
            self.lead.observe(epoch);
            self.elect(out);
        }
    }

    fn route_coordinator(&mut self, initiator: NodeId, leader: NodeId, epoch: u64, out: &mut Out) {
        if let Hop::To(next) = self.view.hop(true, initiator) {
            out.send(
                next,
                Message::RingCoordinator {
                    initiator,
                    leader,
                    epoch,
                },
            );
        }
    }
}

impl RingMember for Ring {
    ring_common::ring_member_accessors!();
    fn busy(&self) -> bool {
        self.participant
    }
    fn running_is_newer(&self, epoch: u64) -> bool {
        epoch <= self.lead.highest()
    }
    fn elect_above(&mut self, epoch: u64, out: &mut Out) {
        self.lead.observe(epoch);
        self.elect(out);
    }
    fn stand_down(&mut self, epoch: u64, out: &mut Out) {
        let _ = epoch;
        self.participant = false;
        self.initiated = false;
        out.cancel_timer(Timer::Retry);
    }
}

impl Algorithm for Ring {
    fn on_start(&mut self, call_election: bool, out: &mut Out) {
        self.lead.leader = None;
        self.participant = false;
        self.initiated = false;
        self.lead.hold.reset();
        ring_common::start(self, call_election, out);
    }

    fn on_message(&mut self, _from: NodeId, msg: Message, out: &mut Out) {
        self.view.heard_election();
        match msg {
            Message::RingElection {
                initiator,
                ids,
                epoch,
            } => self.on_election(initiator, ids, epoch, out),
            Message::RingCoordinator {
                initiator,
                leader,
                epoch,
            } => self.on_coordinator(initiator, leader, epoch, out),
            _ => {}
        }
    }

    fn on_timer(&mut self, timer: Timer, out: &mut Out) {
        ring_common::timer_fired(self, timer, out);
    }

    fn on_peer_unreachable(&mut self, peer: NodeId, msg: Message, out: &mut Out) {
        if !matches!(
            msg,
            Message::RingElection { .. } | Message::RingCoordinator { .. }
        ) || self.view.gave_up(peer, &msg, self.bound, out) == Strike::Resend
        {
            return;
        }
        match msg {
            msg @ Message::RingElection { .. } => self.route_election(msg, out),
            Message::RingCoordinator {
                initiator,
                leader,
                epoch,
            } => self.route_coordinator(initiator, leader, epoch, out),
            _ => {}
        }
    }

    fn on_peer_alive(&mut self, peer: NodeId, _out: &mut Out) {
        self.view.trust(peer);
    }

    fn config_mut(&mut self) -> &mut GroupConfig {
        &mut self.cfg
    }

    fn take_over(&mut self, out: &mut Out) -> bool {
        if !self.cfg.eligible() {
            return false;
        }
        // The result lap alone, with an epoch above every one seen.
        let epoch = self.lead.highest().saturating_add(1);
        self.participant = false;
        self.initiated = false;
        out.cancel_timer(Timer::Retry);
        self.lead.adopt(self.me(), epoch, out);
        let msg = Message::RingCoordinator {
            initiator: self.me(),
            leader: self.me(),
            epoch: self.lead.highest(),
        };
        if let Hop::To(next) = self.view.hop(true, self.me()) {
            out.send(next, msg);
        }
        true
    }

    ring_common::ring_leadership_methods!(participant);
}

/// What the program knows about the ring algorithm (see [`crate::contract::info`]).
pub(crate) const INFO: Info = Info {
    name: "ring",
    aliases: &[],
    title: "Ring with id lists (Tanenbaum & van Steen §6.5.1)",
    summary: "ring election: a message collects every id around the ring",
    build: |c| Box::new(Ring::new(c)),
    elects: Elects::HighestLiveId,
    recovery: Recovery::RingLaps {
        hops_per_member: HOPS_PER_MEMBER,
    },
    message_types: &[MessageType::RingElection, MessageType::RingCoordinator],
    cases: || {
        vec![Case {
            algorithm: AlgorithmKind::Ring,
            order: RingOrder::Ascending,
            label: "ring".into(),
            formula: "2N (Tanenbaum §6.5.1; seed slides: ELECTION lap + COORDINATOR lap)",
            expected: Some(|n| formulas::ring(n) as f64),
            exact: true,
        }]
    },
    policy_preempt: true,
    durable_vote: false,
};
#[cfg(test)]
#[path = "tests/ring.rs"]
mod tests;
