//! The Bully algorithm (Garcia-Molina, "Elections in a Distributed Computing System",
//! IEEE Trans. Computers C-31(1), 1982), in the textbook form the seeds teach
//! (Coulouris et al. §6.4 / the seed course notes, slides and student report).
//!
//! # Assumptions (as in the source)
//! - A synchronous system: every reply arrives within T = 2·Ttrans + Tprocess
//!   (`answer_timeout`), so silence within T means the peer is down.
//! - Reliable delivery (electd's reliable link retransmits under it).
//! - Crash-stop processes that may restart; a restarted process calls an election.
//! - Every process knows every other process's id.
//!
//! # The cascade
//! A node calling an election sends ELECTION to every higher roster member (alive or
//! not) and waits T. Each node receiving ELECTION from a lower id answers OK and, if it
//! has not joined this election yet, calls its own — the cascade. A node that hears no
//! OK within T wins and sends COORDINATOR to every other roster member; a node that
//! got an OK waits T' (`coordinator_timeout`) for COORDINATOR and starts again if none
//! comes.
//!
//! Every ELECTION carries the tag of the cascade it belongs to (initiator, sequence),
//! and COORDINATOR carries the tag of the cascade it ends; a node joins each cascade
//! once. This is how "unless it has begun one already" is made precise, and it gives
//! the literature's count on a synchronous network: initiator k of N (ids 1..N) causes
//! (N−k+1)(N−k) + N − 1 messages (seed report, Eq. 1), N² − 1 for k = 1.
//!
//! # Beyond the textbook (recovery after faults)
//! - A node that hears a heartbeat or COORDINATOR from a lower id while it is alive
//!   calls an election to bully it (split brain after a partition heals).
//! - A node started without calling an election arms a watchdog so that it is never
//!   left without a leader forever.
//! - Each COORDINATOR carries an epoch (max seen + 1): the group's fencing token.
//! - On a graceful resignation only the next-highest node calls an election at once;
//!   when the failure detector declares the leader lost, the next-highest and the one
//!   below it do (the leader's silence may be its successor's too: both killed, or cut
//!   off together; Improved Bully keeps one caller). The others wait for a COORDINATOR
//!   one turn (T + 2H) per member ranked between them and those who called, and call
//!   one if none comes (a further dead or drained member costs one turn;
//!   `bully_common::turns_before`). Every survivor
//!   notices a silent leader within a heartbeat of the others: the textbook's "every
//!   node that notices calls an election" made N survivors send about N²/2 ELECTION
//!   and OK messages at once (the storm of 64 processes on two cores). The simulator's
//!   explicit detection step (`LeaderLoss::Told`) keeps the textbook reaction.
//! - No self-inflicted storms:
//!   - a (re)started node listens a random [H, 2H] (H = heartbeat) plus one rank
//!     step, T + H or F/2 if longer, per member ranked above it before calling its
//!     election (the highest id announces at once; [`super::rank_step`]);
//!   - a leader that receives ELECTION of a new cascade answers OK and its unchanged
//!     COORDINATOR to that cascade's members only (ids from its initiator up), not a
//!     new epoch to everyone;
//!   - a leader that hears a lower claimant sends its unchanged COORDINATOR to that
//!     claimant alone, once per claimed epoch (its heartbeats win over the claimant's
//!     followers); a follower of a higher leader leaves lower claims to that leader;
//!   - a node electing or awaiting COORDINATOR takes a higher node's heartbeat as the
//!     announcement.
//!
//!   None of this changes the synchronous counts above: there, no leader is alive
//!   when a cascade runs.

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Following a leader, or waiting without one.
    Follower,
    /// Sent ELECTION to the higher ids, waiting up to T for an OK.
    Electing,
    /// Got an OK, waiting up to T' for COORDINATOR.
    AwaitingCoordinator,
    Leader,
}

/// One node's state in Garcia-Molina's Bully algorithm (see the module documentation).
#[derive(Debug)]
pub(crate) struct Bully {
    cfg: GroupConfig,
    higher: Vec<NodeId>,
    state: State,
    lead: Leadership,
    /// The cascade this node is currently part of.
    tag: ElectionTag,
    joined: Joined,
    hold: Holdback,
}

impl Bully {
    /// On a silent leader the member below the successor calls at once too
    /// (`bully_common::turns_before`).
    const SECOND_CALLS: bool = true;

    /// A node of group `cfg`, not yet started.
    pub(crate) fn new(cfg: GroupConfig) -> Self {
        Bully {
            higher: cfg.higher(),
            joined: Joined::new(cfg.incarnation),
            hold: Holdback::new(&cfg, AlgorithmKind::Bully),
            cfg,
            state: State::Follower,
            lead: Leadership::default(),
            tag: ElectionTag::default(),
        }
    }

    fn me(&self) -> NodeId {
        self.cfg.me
    }

    fn electing(&self) -> bool {
        matches!(self.state, State::Electing | State::AwaitingCoordinator)
    }

    /// Call an election as part of cascade `tag` (a fresh one if `None`).
    fn elect(&mut self, tag: Option<ElectionTag>, out: &mut Out) {
        self.tag = tag.unwrap_or_else(|| self.joined.fresh(self.cfg.me));
        out.election_started();
        common::cancel_election_timers(out);
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

    /// Nobody ranked above answered: announce, unless this node may never lead
    /// (priority 0), which waits under the watchdog for an eligible node instead.
    fn win(&mut self, out: &mut Out) {
        let won = common::win(&self.cfg, &mut self.hold, &mut self.lead, self.tag, out);
        self.state = if won { State::Leader } else { State::Follower };
    }

    /// Bully runs only elections of its own: a claim does not restart one.
    fn driving(&self) -> bool {
        self.electing()
    }

    common::shared_claim_methods!();
}

impl Algorithm for Bully {
    fn on_message(&mut self, from: NodeId, msg: Message, out: &mut Out) {
        match msg {
            Message::Election { tag, epoch } if self.cfg.outranks(self.me(), from) => {
                // A leader whose epoch nobody has passed still leads unchanged.
                let unchanged = self.state == State::Leader && epoch <= self.lead.epoch();
                // Holding back behind a live leader that outranks the caller (which
                // answers the cascade): answer OK but call no cascade; this node does
                // not take over. Holding back with no leader known (after a restart),
                // it takes the cascade over as the textbook does, the caller having no
                // leader either, once it has listened two heartbeat periods (a live
                // leader's heartbeat would have come: an ELECTION retransmitted from
                // before the restart must not unseat that leader). Until then it
                // answers OK and calls its election when the listening ends, unless a
                // leader shows up. (Otherwise the caller would wait T' for a
                // COORDINATOR nobody sends until this node's watchdog fires.)
                let held = self.holding()
                    && self.lead.leader.is_some_and(|l| {
                        self.cfg.outranks(self.me(), l) && self.cfg.outranks(l, from)
                    });
                let listening =
                    self.holding() && self.lead.leader.is_none() && self.hold.listening();
                self.lead.observe(epoch);
                out.send(
                    from,
                    Message::Ok {
                        responder: self.me(),
                        tag,
                    },
                );
                if unchanged {
                    if self.joined.join(tag) {
                        let to = common::cascade_members(&self.cfg, from, tag);
                        common::reassert(self.me(), &self.lead, tag, &to, out);
                    }
                } else if held {
                    self.joined.join(tag);
                } else if listening {
                    self.joined.join(tag);
                    self.hold.ask();
                } else if self.joined.join(tag) && !self.electing() {
                    self.elect(Some(tag), out);
                }
            }
            // Only an answer to this node's current cascade: a late OK of an abandoned
            // one must not make it wait T' for nobody.
            Message::Ok { tag, .. }
                if self.cfg.outranks(from, self.me())
                    && self.state == State::Electing
                    && tag == self.tag =>
            {
                self.state = State::AwaitingCoordinator;
                out.cancel_timer(Timer::Answer);
                out.set_timer_exact(Timer::Coordinator, self.cfg.timing.coordinator_timeout);
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
            // Nobody higher answered within T: this node is the highest alive.
            (Timer::Answer, State::Electing) => self.win(out),
            // A higher node answered but never announced: it died; start over.
            (Timer::Coordinator, State::AwaitingCoordinator) => self.elect(None, out),
            (Timer::Retry, State::Follower) if self.lead.leader.is_none() => self.elect(None, out),
            (Timer::Preempt, State::Follower) => self.preempt_fired(out),
            // Listened two heartbeat periods after a restart, asked to take over an
            // election meanwhile, and still no leader: call it now.
            (Timer::Listen, _) => {
                let asked = self.hold.listened();
                if asked && self.state == State::Follower && self.lead.leader.is_none() {
                    self.elect(None, out);
                }
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
            State::AwaitingCoordinator => "awaiting-coordinator",
            State::Leader => "leader",
        }
    }
}

/// What the program knows about Bully (see [`crate::contract::info`]).
pub(crate) const INFO: Info = Info {
    name: "bully",
    aliases: &[],
    title: "Bully (Garcia-Molina 1982)",
    summary: "Garcia-Molina's Bully: the highest live id wins",
    build: |c| Box::new(Bully::new(c)),
    elects: Elects::HighestLiveId,
    recovery: Recovery::Cascade { answer_rounds: 1 },
    message_types: &[
        MessageType::Election,
        MessageType::Ok,
        MessageType::Coordinator,
    ],
    cases: || {
        vec![Case {
            algorithm: AlgorithmKind::Bully,
            order: RingOrder::Ascending,
            label: "bully".into(),
            formula: "N²−1 (Garcia-Molina 1982; seed report Eq. 1, k=1)",
            expected: Some(|n| formulas::bully(n, 1) as f64),
            exact: true,
        }]
    },
    policy_preempt: true,
    durable_vote: false,
};
#[cfg(test)]
#[path = "tests/bully.rs"]
mod tests;
