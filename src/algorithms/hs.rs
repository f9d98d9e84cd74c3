//! Hirschberg–Sinclair on a bidirectional ring (D. S. Hirschberg and J. B. Sinclair,
//! "Decentralized extrema-finding in circular configurations of processors", CACM
//! 23(11), 1980). The seed textbook chapter presents exactly this algorithm under the
//! name "Bully"; it has nothing to do with Garcia-Molina's Bully algorithm
//! ([`super::bully`]), so electd calls it by its authors' names.
//!
//! # Assumptions (as in the source)
//! A bidirectional ring whose members agree on the orientation (clockwise = the
//! roster's ring order, called *right* here), unique ids, reliable delivery, nobody
//! fails during the election. Members need not know the ring size.
//!
//! # The algorithm
//! A node works in phases 0, 1, 2, …. Entering phase k it sends a `probe` of its id
//! both ways with time-to-live 2^k hops. A node forwards a probe carrying a larger
//! id until the probe has made 2^k hops, then bounces it back as a `reply`; it
//! swallows a probe carrying a smaller id. Replies are relayed back to their
//! candidate. A candidate that gets both replies of phase k enters phase k + 1. A
//! probe that comes all the way round to its own candidate (2^k ≥ n) makes that node
//! the leader, which sends one `terminate` lap clockwise; every node adopts the leader
//! and forwards it until the lap is back at the leader.
//!
//! # Triggering in electd, and the count
//! The textbook wakes every processor eventually ("asleep" processors wake up on
//! their first message). electd does the same per *round*: one node (failure
//! detector or operator) starts a round in phase 0, and every node joins the round
//! (enters phase 0) the first time it hears of it, then handles that message. Whether
//! a probe is forwarded, bounced or swallowed depends only on the ids and the hop
//! count, never on timing or on who triggered, so the textbook's analysis holds:
//! at most ⌈n / (2^(k−1) + 1)⌉ nodes enter phase k ≥ 1 (all n enter phase 0), each
//! sends at most 4·2^k messages in it, so every phase costs at most 8n messages; the
//! highest id enters at most phases 0..=⌈log₂ n⌉, so there are at most
//! **1 + ⌈log₂ n⌉ phases** and at most **8n(1 + ⌈log₂ n⌉)** probe and reply
//! messages, plus **n** for the terminate lap (seed textbook, Lemma 13.9 and
//! Theorem 13.10). Probes and replies still in flight when the leader is known are
//! handled as usual (they die out), so the count is the same in every run.
//!
//! Round r elects epoch r; a node starts round max(round, epoch) + 1.
//!
//! # Beyond the textbook (recovery after faults)
//! - Dead neighbours are skipped in both directions ([`super::ring_common`]); a hop to
//!   a skipped member is not counted in the time-to-live (the ring is re-formed over
//!   live members). A probe or reply whose candidate is skipped is dropped. A
//!   neighbour is skipped only after the link gave up on the same message
//!   [`super::ring_common::STRIKES`] times in a row: the first give-up sends it again
//!   (a reply lost on its way to the candidate costs a retransmission, not the round).
//! - A probe that comes back to its candidate while that node follows a higher leader
//!   (it left the round on hearing the leader its detector wrongly gave up on) does
//!   not make it leader: the probe passed that leader by.
//! - Every node in a round arms a restart timer ([`super::ring_common::election_bound`],
//!   10 hops per member: ≤ n/2 for the joining wave, Σ 2·2^k < 8n for the phases, n
//!   for the terminate lap); if the round has not ended by then it starts round + 1.
//! - A message of an older round reaching a node that is not electing means its
//!   sender missed the last result: the node starts a new round. So does an electing
//!   node whose own round never left it (it won its last rounds alone, cut off).
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

/// Sequential hops of one round per member (see the module documentation).
pub const HOPS_PER_MEMBER: u32 = 10;

/// One node's state in Hirschberg–Sinclair (see the module documentation).
#[derive(Debug)]
pub(crate) struct Hs {
    cfg: GroupConfig,
    view: RingView,
    lead: Leadership,
    round: u64,
    /// In `round` and the round has not ended here.
    active: bool,
    /// The phase this node's candidacy is in (meaningful while replies may come).
    phase: u32,
    /// Replies of `phase` received from the right (clockwise) and the left side.
    replied: [bool; 2],
    /// The round this node last won.
    won: u64,
    bound: Duration,
}

/// 2^phase hops, saturating (a phase from the network may be anything).
fn ttl(phase: u32) -> u64 {
    1u64.checked_shl(phase).unwrap_or(u64::MAX)
}

impl Hs {
    /// A node of group `cfg`, not yet started.
    pub(crate) fn new(cfg: GroupConfig) -> Self {
        let hold = crate::algorithms::bully_common::Holdback::new(&cfg, AlgorithmKind::Hs);
        Hs {
            view: RingView::new(&cfg).handing_back(),
            bound: election_bound(&cfg.timing, cfg.ring.len(), HOPS_PER_MEMBER),
            cfg,
            lead: Leadership::with_hold(hold),
            round: 0,
            active: false,
            phase: 0,
            replied: [false; 2],
            won: 0,
        }
    }

    fn me(&self) -> NodeId {
        self.cfg.me
    }

    fn elect(&mut self, out: &mut Out) {
        let r = self.round.max(self.lead.highest()).saturating_add(1);
        self.join(r, out);
    }

    /// Join round `r` in phase 0.
    fn join(&mut self, r: u64, out: &mut Out) {
        self.round = r;
        self.active = true;
        self.lead.new_round();
        self.phase = 0;
        out.election_started();
        arm_restart(self.bound, out);
        self.send_probes(out);
    }

    /// Enter `self.phase`: probe both ways.
    fn send_probes(&mut self, out: &mut Out) {
        self.replied = [false; 2];
        for to_right in [true, false] {
            let msg = Message::Probe {
                candidate: self.me(),
                phase: self.phase,
                hops: 1,
                to_right,
                round: self.round,
            };
            match self.view.hop(to_right, self.me()) {
                Hop::To(next) => out.send(next, msg),
                Hop::OriginGone => {}
                Hop::Alone => {
                    self.view.won_alone();
                    self.win(out);
                    return;
                }
            }
        }
    }

    /// Send `msg` one hop in direction `to_right` on the lap of `origin`.
    fn route(&mut self, to_right: bool, origin: NodeId, msg: Message, out: &mut Out) {
        match self.view.hop(to_right, origin) {
            Hop::To(next) => out.send(next, msg),
            Hop::OriginGone => {}
            // Alone while relaying someone else's message: that node is gone.
            Hop::Alone => {
                if self.active {
                    self.view.won_alone();
                    self.win(out);
                }
            }
        }
    }

    fn win(&mut self, out: &mut Out) {
        // A never-leader (priority 0) whose probes came back: no eligible member is
        // alive; the restart timer tries again.
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
        let msg = Message::Terminate {
            leader: self.me(),
            epoch: self.lead.highest(),
        };
        self.route(true, self.me(), msg, out);
    }

    /// Common round handling of a probe or reply; false if the message is stale.
    fn enter_round(&mut self, round: u64, out: &mut Out) -> bool {
        if round < self.round {
            // Its sender missed this node's round: a new one above both, unless the
            // round under way here is on its way round the ring (it reached somebody).
            if !self.active || self.view.back_in_touch() {
                self.elect(out);
            }
            return false;
        }
        if round > self.round {
            self.join(round, out);
        }
        true
    }

    fn on_probe(
        &mut self,
        candidate: NodeId,
        phase: u32,
        hops: u32,
        to_right: bool,
        round: u64,
        out: &mut Out,
    ) {
        if !self.view.contains(candidate) {
            return;
        }
        self.view.trust(candidate);
        if !self.enter_round(round, out) {
            return;
        }
        self.lead.heard_in_round(candidate);
        if candidate == self.me() {
            // The probe went all the way round: no larger id anywhere — unless this
            // node left the round to follow a live higher leader, which the probe
            // passed by.
            if !ring_common::follows_above(self, candidate) {
                self.win(out);
            }
        } else if self.cfg.outranks(candidate, self.me()) {
            let msg = if u64::from(hops) < ttl(phase) {
                Message::Probe {
                    candidate,
                    phase,
                    hops: hops.saturating_add(1),
                    to_right,
                    round,
                }
            } else {
                Message::Reply {
                    candidate,
                    phase,
                    to_right: !to_right,
                    round,
                }
            };
            let dir = match &msg {
                Message::Reply { to_right, .. } | Message::Probe { to_right, .. } => *to_right,
                _ => to_right,
            };
            self.route(dir, candidate, msg, out);
        }
        // A smaller id is swallowed.
    }

    fn on_reply(
        &mut self,
        candidate: NodeId,
        phase: u32,
        to_right: bool,
        round: u64,
        out: &mut Out,
    ) {
        if !self.view.contains(candidate) {
            return;
        }
        self.view.trust(candidate);
        if !self.enter_round(round, out) {
            return;
        }
        self.lead.heard_in_round(candidate);
        if candidate != self.me() {
            let msg = Message::Reply {
                candidate,
                phase,
                to_right,
                round,
            };
            self.route(to_right, candidate, msg, out);
            return;
        }
        if phase != self.phase || self.won == self.round {
            return;
        }
        // A reply travelling left comes from the right side, and vice versa.
        let side = usize::from(!to_right);
        self.replied[side] = true;
        if self.replied == [true, true] {
            self.phase = self.phase.saturating_add(1);
            self.send_probes(out);
        }
    }

    fn on_terminate(&mut self, leader: NodeId, epoch: u64, out: &mut Out) {
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
        self.route(true, leader, Message::Terminate { leader, epoch }, out);
        if lower && !self.active {
            // The round that chose a lower leader missed this live node: elect.
            self.round = self.round.max(epoch);
            self.elect(out);
        }
    }
}

ring_common::ring_member_with_rounds!(Hs);

impl Algorithm for Hs {
    fn on_start(&mut self, call_election: bool, out: &mut Out) {
        self.lead.leader = None;
        self.active = false;
        self.lead.hold.reset();
        ring_common::start(self, call_election, out);
    }

    fn on_message(&mut self, _from: NodeId, msg: Message, out: &mut Out) {
        self.view.heard_election();
        match msg {
            Message::Probe {
                candidate,
                phase,
                hops,
                to_right,
                round,
            } => self.on_probe(candidate, phase, hops, to_right, round, out),
            Message::Reply {
                candidate,
                phase,
                to_right,
                round,
            } => self.on_reply(candidate, phase, to_right, round, out),
            Message::Terminate { leader, epoch } => self.on_terminate(leader, epoch, out),
            _ => {}
        }
    }

    fn on_peer_unreachable(&mut self, peer: NodeId, msg: Message, out: &mut Out) {
        // A probe or reply of an older round is not needed any more: dropped.
        let current = match &msg {
            Message::Probe { round, .. } | Message::Reply { round, .. } => *round >= self.round,
            Message::Terminate { .. } => true,
            _ => false,
        };
        if !current || self.view.gave_up(peer, &msg, self.bound, out) == Strike::Resend {
            return;
        }
        match msg {
            Message::Probe {
                candidate,
                to_right,
                ..
            }
            | Message::Reply {
                candidate,
                to_right,
                ..
            } => self.route(to_right, candidate, msg, out),
            Message::Terminate { leader, .. } => self.route(true, leader, msg, out),
            _ => {}
        }
    }

    ring_common::rounds_algorithm_methods!();
}

/// What the program knows about Hirschberg–Sinclair (see [`crate::contract::info`]).
pub(crate) const INFO: Info = Info {
    name: "hs",
    aliases: &["hirschberg-sinclair"],
    title: "Hirschberg–Sinclair (Hirschberg & Sinclair 1980)",
    summary: "Hirschberg–Sinclair: probes both ways in doubling phases, O(n log n)",
    build: |c| Box::new(Hs::new(c)),
    elects: Elects::HighestLiveId,
    recovery: Recovery::RingLaps {
        hops_per_member: HOPS_PER_MEMBER,
    },
    message_types: &[
        MessageType::Probe,
        MessageType::Reply,
        MessageType::Terminate,
    ],
    cases: || {
        const HS: &str =
            "≤ 8N(1+⌈log₂N⌉) + N (Hirschberg & Sinclair 1980; seed textbook Thm 13.10)";
        [RingOrder::Descending, RingOrder::Random]
            .into_iter()
            .map(|order| Case {
                algorithm: AlgorithmKind::Hs,
                order,
                label: match order {
                    RingOrder::Descending => "hs (descending)".into(),
                    _ => "hs (random)".into(),
                },
                formula: HS,
                expected: Some(|n| (formulas::hs_bound(n) + n) as f64),
                exact: false,
            })
            .collect()
    },
    policy_preempt: true,
    durable_vote: false,
};
#[cfg(test)]
#[path = "tests/hs.rs"]
mod tests;
