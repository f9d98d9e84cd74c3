//! Chang–Roberts / LCR on a unidirectional ring (E. Chang and R. Roberts, "An
//! improved algorithm for decentralized extrema-finding in circular configurations of
//! processes", CACM 22(5), 1979; Le Lann 1977). The seed textbook chapter describes it
//! as "the simpler version" before Hirschberg–Sinclair.
//!
//! # Assumptions (as in the source)
//! A unidirectional ring (clockwise in the roster's ring order), unique ids, reliable
//! FIFO-free delivery, nobody fails during the election.
//!
//! # The algorithm
//! Every node sends its own id clockwise (`lcr_election`). A node forwards an id
//! larger than its own and swallows a smaller one. Only the largest id makes a full
//! lap; the node that gets its own id back is the leader and sends one ELECTED lap
//! (`lcr_elected`) that every node adopts and forwards until it is back at the leader.
//!
//! # Triggering in electd, and the count
//! The literature starts every node at once. In electd one node (its failure detector
//! or the operator) starts a *round*: it sends its own id tagged with the round
//! number; every node **joins** the round the first time it hears of it (any message
//! with a higher round) by sending its own id, then handles the message it got —
//! exactly the textbook's "asleep" processor waking up on its first message. Every
//! node therefore sends its own id exactly once per round, and whether an id is
//! forwarded depends only on the ids, never on timing. So the count is the classic
//! one whoever triggers, and several nodes triggering at once (same round number)
//! cost nothing extra:
//! - ids increasing clockwise (ascending): every id but the largest dies after one
//!   hop, the largest makes n hops: **2n − 1** election messages (best case);
//! - ids decreasing clockwise (descending): id i travels i hops before a larger id
//!   swallows it: **n(n+1)/2** (worst case);
//! - random order: **n·H_n** on average (Chang & Roberts 1979);
//!
//! plus **n** for the ELECTED lap.
//!
//! Round r elects epoch r; a node starts round max(round, epoch) + 1.
//!
//! # Beyond the textbook (recovery after faults)
//! - Dead successors are skipped ([`super::ring_common`]); an id whose owner is
//!   skipped is dropped (its owner can no longer win). A successor is skipped only
//!   after the link gave up on the same message [`super::ring_common::STRIKES`] times
//!   in a row (the first give-up sends it again), so loss does not make an id pass a
//!   live higher node.
//! - An id that comes back to its owner while the owner follows a higher leader (it
//!   left the round on hearing the leader its detector wrongly gave up on) does not
//!   make it leader: the id passed that leader by.
//! - Every node in a round arms a restart timer ([`super::ring_common::election_bound`],
//!   3 hops per member: the joining wave, the largest id's lap, the ELECTED lap); if
//!   the round has not ended by then it starts round + 1.
//! - A message of an older round reaching a node that is not electing means its
//!   sender missed the last result (e.g. it restarted): the node starts a new round.
//!   So does an electing node whose own round never left it (it won its last rounds
//!   alone, cut off): no older-round member would ever hear of that round.
//! - A node never follows a leader lower than itself: the announcement is forwarded
//!   and the node (whose id that round missed) starts a new round.
//! - Split brain after a heal is resolved by [`super::ring_common::on_foreign`]; an
//!   electing node applies that rule too when the claim's epoch is at least its
//!   round (that round was decided without it), and a new round is numbered above
//!   the claim's epoch so that every member joins it.

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

/// Sequential hops of one round per member (join wave, winning lap, ELECTED lap).
pub const HOPS_PER_MEMBER: u32 = 3;

/// One node's state in Chang–Roberts (LCR) (see the module documentation).
#[derive(Debug)]
pub(crate) struct Lcr {
    cfg: GroupConfig,
    view: RingView,
    lead: Leadership,
    /// Highest round this node has joined (or learned of through an epoch).
    round: u64,
    /// In `round` and the round has not ended here.
    active: bool,
    /// The round this node last won (its own id came back).
    won: u64,
    bound: Duration,
}

impl Lcr {
    /// A node of group `cfg`, not yet started.
    pub(crate) fn new(cfg: GroupConfig) -> Self {
        let hold = crate::algorithms::bully_common::Holdback::new(&cfg, AlgorithmKind::Lcr);
        Lcr {
            view: RingView::new(&cfg).handing_back(),
            bound: election_bound(&cfg.timing, cfg.ring.len(), HOPS_PER_MEMBER),
            cfg,
            lead: Leadership::with_hold(hold),
            round: 0,
            active: false,
            won: 0,
        }
    }

    fn me(&self) -> NodeId {
        self.cfg.me
    }

    /// Start a new round.
    fn elect(&mut self, out: &mut Out) {
        let r = self.round.max(self.lead.highest()).saturating_add(1);
        self.join(r, out);
    }

    /// Join round `r`: send this node's own id.
    fn join(&mut self, r: u64, out: &mut Out) {
        self.round = r;
        self.active = true;
        self.lead.new_round();
        out.election_started();
        arm_restart(self.bound, out);
        let msg = Message::LcrElection {
            candidate: self.me(),
            round: r,
        };
        self.route(msg, out);
    }

    fn route(&mut self, msg: Message, out: &mut Out) {
        let origin = match &msg {
            Message::LcrElection { candidate, .. } => *candidate,
            Message::LcrElected { leader, .. } => *leader,
            _ => return,
        };
        match self.view.hop(true, origin) {
            Hop::To(next) => out.send(next, msg),
            Hop::OriginGone => {}
            Hop::Alone => {
                // Nobody else is alive: this node's own id wins its round.
                if let Message::LcrElection { candidate, round } = msg {
                    if candidate == self.me() && round == self.round {
                        self.view.won_alone();
                        self.win(out);
                    }
                }
            }
        }
    }

    fn win(&mut self, out: &mut Out) {
        // A never-leader (priority 0) whose id came back: no eligible member is alive;
        // the restart timer tries again.
        if self.won == self.round || !self.cfg.eligible() {
            return;
        }
        if !self.lead.accepts(self.me(), self.round) {
            // A token of this round's number (or above) is already held: its leader
            // re-announces in a round above it.
            self.elect(out);
            return;
        }
        self.won = self.round;
        self.active = false;
        out.cancel_timer(Timer::Retry);
        self.lead.adopt(self.me(), self.round, out);
        let msg = Message::LcrElected {
            leader: self.me(),
            epoch: self.lead.highest(),
        };
        self.route(msg, out);
    }

    fn on_election(&mut self, candidate: NodeId, round: u64, out: &mut Out) {
        if !self.view.contains(candidate) {
            return;
        }
        self.view.trust(candidate);
        if round < self.round {
            // Its sender missed this node's round: a new one above both, unless the
            // round under way here is on its way round the ring (it reached somebody).
            if !self.active || self.view.back_in_touch() {
                self.elect(out);
            }
            return;
        }
        if round > self.round {
            self.join(round, out);
        }
        self.lead.heard_in_round(candidate);
        if candidate == self.me() {
            // Not if this node left the round to follow a live higher leader: the id
            // came back past it.
            if !ring_common::follows_above(self, candidate) {
                self.win(out);
            }
        } else if self.cfg.outranks(candidate, self.me()) {
            self.route(Message::LcrElection { candidate, round }, out);
        }
        // A smaller id is swallowed.
    }

    fn on_elected(&mut self, leader: NodeId, epoch: u64, out: &mut Out) {
        if !self.view.contains(leader) {
            return;
        }
        self.view.trust(leader);
        if leader == self.me() {
            return; // the lap is back at the leader
        }
        let lower = self.cfg.outranks(self.me(), leader)
            && self.cfg.eligible()
            && (self.active || !self.lead.hold.holding());
        if epoch >= self.round && epoch >= self.lead.highest() && !lower {
            self.round = epoch;
            self.active = false;
            out.cancel_timer(Timer::Retry);
            self.lead.adopt(leader, epoch, out);
            let below = self.cfg.outranks(self.me(), leader);
            self.lead.hold.following(below, out);
        }
        self.route(Message::LcrElected { leader, epoch }, out);
        if lower && !self.active {
            // The round that chose a lower leader lost this live node's id: elect.
            self.round = self.round.max(epoch);
            self.elect(out);
        }
    }
}

ring_common::ring_member_with_rounds!(Lcr);

impl Algorithm for Lcr {
    fn on_start(&mut self, call_election: bool, out: &mut Out) {
        self.lead.leader = None;
        self.active = false;
        self.lead.hold.reset();
        ring_common::start(self, call_election, out);
    }

    fn on_message(&mut self, _from: NodeId, msg: Message, out: &mut Out) {
        self.view.heard_election();
        match msg {
            Message::LcrElection { candidate, round } => self.on_election(candidate, round, out),
            Message::LcrElected { leader, epoch } => self.on_elected(leader, epoch, out),
            _ => {}
        }
    }

    fn on_peer_unreachable(&mut self, peer: NodeId, msg: Message, out: &mut Out) {
        // An id of an older round is not needed any more: dropped.
        let current = match &msg {
            Message::LcrElection { round, .. } => *round >= self.round,
            Message::LcrElected { .. } => true,
            _ => false,
        };
        if current && self.view.gave_up(peer, &msg, self.bound, out) == Strike::Skip {
            self.route(msg, out);
        }
    }

    ring_common::rounds_algorithm_methods!();
}

/// What the program knows about LCR (see [`crate::contract::info`]).
pub(crate) const INFO: Info = Info {
    name: "lcr",
    aliases: &["chang-roberts"],
    title: "Chang–Roberts / LCR (Chang & Roberts 1979)",
    summary: "Chang–Roberts: ids travel clockwise, only higher ones are forwarded",
    build: |c| Box::new(Lcr::new(c)),
    elects: Elects::HighestLiveId,
    recovery: Recovery::RingLaps {
        hops_per_member: HOPS_PER_MEMBER,
    },
    message_types: &[MessageType::LcrElection, MessageType::LcrElected],
    cases: || {
        vec![
            Case {
                algorithm: AlgorithmKind::Lcr,
                order: RingOrder::Descending,
                label: "lcr (descending)".into(),
                formula: "N(N+1)/2 + N (Chang & Roberts 1979 worst case + ELECTED lap)",
                expected: Some(|n| (formulas::lcr_worst(n) + n) as f64),
                exact: true,
            },
            Case {
                algorithm: AlgorithmKind::Lcr,
                order: RingOrder::Ascending,
                label: "lcr (ascending)".into(),
                formula: "2N−1 + N (Chang & Roberts 1979 best case + ELECTED lap)",
                expected: Some(|n| (formulas::lcr_best(n) + n) as f64),
                exact: true,
            },
            Case {
                algorithm: AlgorithmKind::Lcr,
                order: RingOrder::Random,
                label: "lcr (random)".into(),
                formula: "N·H_N + N (Chang & Roberts 1979 average + ELECTED lap)",
                expected: Some(|n| formulas::lcr_average(n) + n as f64),
                exact: false,
            },
        ]
    },
    policy_preempt: true,
    durable_vote: false,
};
#[cfg(test)]
#[path = "tests/lcr.rs"]
mod tests;
