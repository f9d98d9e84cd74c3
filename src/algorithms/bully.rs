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
//!   the others wait for its COORDINATOR under a watchdog.

use crate::algorithm::{Algorithm, AlgorithmKind, GroupConfig, LeaderLoss, Out, Timer};
use crate::algorithms::tags::Joined;
use crate::message::{ElectionTag, Message};
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

#[derive(Debug)]
pub struct Bully {
    cfg: GroupConfig,
    higher: Vec<NodeId>,
    state: State,
    leader: Option<NodeId>,
    epoch: u64,
    /// The cascade this node is currently part of.
    tag: ElectionTag,
    joined: Joined,
}

impl Bully {
    pub fn new(cfg: GroupConfig) -> Self {
        Bully {
            higher: cfg.higher(),
            joined: Joined::new(cfg.incarnation),
            cfg,
            state: State::Follower,
            leader: None,
            epoch: 0,
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
        self.tag = match tag {
            Some(t) => t,
            None => self.joined.fresh(self.me()),
        };
        out.election_started();
        out.cancel_timer(Timer::Retry);
        out.cancel_timer(Timer::Coordinator);
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

    fn drop_leader(&mut self, out: &mut Out) {
        if self.leader.take().is_some() {
            if self.state == State::Leader {
                self.state = State::Follower;
            }
            out.leader_changed(None, self.epoch);
        }
    }

    /// Someone claims leadership with `epoch` (COORDINATOR or a foreign heartbeat).
    fn on_claim(&mut self, leader: NodeId, epoch: u64, out: &mut Out) {
        if leader < self.me() {
            // A lower node leads while this one is alive: bully it.
            self.epoch = self.epoch.max(epoch);
            if !self.electing() {
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

impl Algorithm for Bully {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::Bully
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
                out.send(
                    from,
                    Message::Ok {
                        responder: self.me(),
                        tag,
                    },
                );
                if self.joined.join(tag) && !self.electing() {
                    self.elect(Some(tag), out);
                }
            }
            Message::Ok { .. } if from > self.me() && self.state == State::Electing => {
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
            (Timer::Retry, State::Follower) if self.leader.is_none() => self.elect(None, out),
            _ => {}
        }
    }

    fn on_peer_unreachable(&mut self, _peer: NodeId, _msg: Message, _out: &mut Out) {
        // Silence is already handled by T and T'; nothing to add.
    }

    fn on_leader_lost(&mut self, why: LeaderLoss, out: &mut Out) {
        let old = self.leader;
        self.drop_leader(out);
        if self.electing() {
            return;
        }
        let successor = match (why, old) {
            // Only the highest id below the resigning leader calls at once.
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
        if self.electing() {
            return;
        }
        self.on_claim(from, epoch, out);
    }

    fn call_election(&mut self, out: &mut Out) {
        if !self.electing() {
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
            State::AwaitingCoordinator => "awaiting-coordinator",
            State::Leader => "leader",
        }
    }

    fn is_electing(&self) -> bool {
        self.electing()
    }
}
