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

use crate::algorithm::{Algorithm, AlgorithmKind, GroupConfig, LeaderLoss, Out, Timer};
use crate::algorithms::tags::Joined;
use crate::message::{ElectionTag, Message};
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

#[derive(Debug)]
pub struct ImprovedBully {
    cfg: GroupConfig,
    higher: Vec<NodeId>,
    state: State,
    leader: Option<NodeId>,
    epoch: u64,
    tag: ElectionTag,
    responders: BTreeSet<NodeId>,
    joined: Joined,
}

impl ImprovedBully {
    pub fn new(cfg: GroupConfig) -> Self {
        ImprovedBully {
            higher: cfg.higher(),
            joined: Joined::new(cfg.incarnation),
            cfg,
            state: State::Follower,
            leader: None,
            epoch: 0,
            tag: ElectionTag::default(),
            responders: BTreeSet::new(),
        }
    }

    fn me(&self) -> NodeId {
        self.cfg.me
    }

    fn electing(&self) -> bool {
        matches!(
            self.state,
            State::Electing | State::Handing | State::Flagged
        )
    }

    /// Send ELECTION to every higher id (initiating, or cross-checking for `tag`).
    fn elect(&mut self, tag: Option<ElectionTag>, out: &mut Out) {
        self.tag = match tag {
            Some(t) => t,
            None => self.joined.fresh(self.me()),
        };
        out.election_started();
        out.cancel_timer(Timer::Retry);
        out.cancel_timer(Timer::Coordinator);
        self.responders.clear();
        if self.higher.is_empty() {
            self.win(out);
            return;
        }
        self.state = State::Electing;
        for &h in &self.higher {
            out.send(
                h,
                Message::Election {
                    tag: self.tag,
                    epoch: self.epoch,
                },
            );
        }
        out.set_timer_exact(Timer::Answer, self.cfg.timing.answer_timeout);
    }

    /// Every higher id answered, or T passed.
    fn conclude(&mut self, out: &mut Out) {
        out.cancel_timer(Timer::Answer);
        match self.responders.iter().next_back().copied() {
            None => self.win(out),
            Some(highest) => {
                self.state = State::Handing;
                out.send(
                    highest,
                    Message::YouAreCoordinator {
                        tag: self.tag,
                        epoch: self.epoch,
                    },
                );
                out.set_timer_exact(Timer::Coordinator, self.cfg.timing.coordinator_timeout);
            }
        }
    }

    fn win(&mut self, out: &mut Out) {
        self.state = State::Leader;
        self.epoch = self.epoch.saturating_add(1);
        self.leader = Some(self.me());
        out.cancel_timer(Timer::Answer);
        out.cancel_timer(Timer::Coordinator);
        out.cancel_timer(Timer::Retry);
        out.broadcast(Message::Coordinator {
            leader: self.me(),
            epoch: self.epoch,
            tag: self.tag,
        });
        out.leader_changed(self.leader, self.epoch);
    }

    fn follow(&mut self, leader: NodeId, epoch: u64, out: &mut Out) {
        self.state = State::Follower;
        self.epoch = self.epoch.max(epoch);
        self.leader = Some(leader);
        out.cancel_timer(Timer::Answer);
        out.cancel_timer(Timer::Coordinator);
        out.cancel_timer(Timer::Retry);
        out.leader_changed(self.leader, self.epoch);
    }

    fn on_claim(&mut self, leader: NodeId, epoch: u64, out: &mut Out) {
        if leader < self.me() {
            self.epoch = self.epoch.max(epoch);
            if !matches!(self.state, State::Electing | State::Handing) {
                self.elect(None, out);
            }
            return;
        }
        let stale = epoch < self.epoch && self.leader.is_some() && self.leader != Some(leader);
        if stale {
            return;
        }
        if self.leader != Some(leader) || self.electing() || self.state == State::Leader {
            self.follow(leader, epoch, out);
        } else {
            self.epoch = self.epoch.max(epoch);
        }
    }
}

impl Algorithm for ImprovedBully {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::ImprovedBully
    }

    fn on_start(&mut self, call_election: bool, out: &mut Out) {
        self.state = State::Follower;
        self.leader = None;
        if call_election {
            self.elect(None, out);
        } else {
            let t = self.cfg.timing.failure_timeout;
            out.set_timer(Timer::Retry, t, t * 2);
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Message, out: &mut Out) {
        match msg {
            Message::Election { tag, epoch } if from < self.me() => {
                self.epoch = self.epoch.max(epoch);
                self.joined.join(tag);
                out.send(
                    from,
                    Message::Ok {
                        responder: self.me(),
                        tag,
                    },
                );
                // Raise the election flag: someone runs an election; do not start one.
                if self.state == State::Follower {
                    self.state = State::Flagged;
                    out.cancel_timer(Timer::Retry);
                    out.set_timer_exact(Timer::Coordinator, self.cfg.timing.coordinator_timeout);
                }
            }
            Message::Ok { responder, tag }
                if from > self.me() && self.state == State::Electing && tag == self.tag =>
            {
                // The responder's id is taken from the authenticated sender, not the body.
                let _ = responder;
                self.responders.insert(from);
                if self.responders.len() == self.higher.len() {
                    self.conclude(out);
                }
            }
            Message::YouAreCoordinator { tag, epoch } if from < self.me() => {
                self.epoch = self.epoch.max(epoch);
                match self.state {
                    // Already cross-checking this election: the announcement will come.
                    State::Electing if self.tag == tag => {}
                    // Otherwise cross-check (a leader re-announces, un-flagging everyone).
                    _ => {
                        self.joined.join(tag);
                        self.elect(Some(tag), out);
                    }
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
            (Timer::Retry, State::Follower) if self.leader.is_none() => self.elect(None, out),
            _ => {}
        }
    }

    fn on_peer_unreachable(&mut self, _peer: NodeId, _msg: Message, _out: &mut Out) {}

    fn on_leader_lost(&mut self, why: LeaderLoss, out: &mut Out) {
        let old = self.leader.take();
        if old.is_some() {
            if self.state == State::Leader {
                self.state = State::Follower;
            }
            out.leader_changed(None, self.epoch);
        }
        // One election at a time: a raised flag means one is already running.
        if self.electing() {
            return;
        }
        let successor = match (why, old) {
            (LeaderLoss::Resigned, Some(old)) => self.higher.iter().all(|&h| h >= old),
            _ => true,
        };
        if successor {
            self.elect(None, out);
        } else {
            let t = self.cfg.timing.answer_timeout + self.cfg.timing.coordinator_timeout;
            out.set_timer(Timer::Retry, t, t * 2);
        }
    }

    fn on_foreign_leader(&mut self, from: NodeId, epoch: u64, out: &mut Out) {
        if matches!(self.state, State::Electing | State::Handing) {
            return;
        }
        self.on_claim(from, epoch, out);
    }

    fn call_election(&mut self, out: &mut Out) {
        if !matches!(self.state, State::Electing | State::Handing) {
            self.elect(None, out);
        }
    }

    fn leader(&self) -> Option<NodeId> {
        self.leader
    }

    fn term(&self) -> u64 {
        self.epoch
    }

    fn state(&self) -> &'static str {
        match self.state {
            State::Follower if self.leader.is_some() => "follower",
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
