//! The node's one deadline table: every group's algorithm timers, heartbeats and
//! failure-detector deadlines beside the link's retransmissions, what fires when one
//! is due, and the heartbeat schedule.

use super::{Datagram, Node, Time};
use crate::contract::algorithm::{AlgorithmKind, LeaderLoss, Timer};
use crate::contract::message::Message;
use crate::contract::policy::Ineligible;
use crate::NodeId;
use std::time::Duration;

/// What a deadline of the table is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    Algo(Timer),
    Heartbeat,
    Detector,
}

impl Node {
    /// The earliest deadline (timer or retransmission), if any.
    pub fn poll_timeout(&mut self) -> Option<Time> {
        let transfers = self.groups.iter().filter_map(|g| g.transfer.map(|t| t.1));
        let timers = self.timers.iter().map(|t| t.2).chain(transfers).min();
        match (timers, self.link.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fire everything due at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        let mut failed = Vec::new();
        let before = self.transmits.len();
        self.link.on_timeout(now, &mut self.transmits, &mut failed);
        for i in before..self.transmits.len() {
            if let Some(g) = self.transmits[i].1.group.and_then(|k| self.group_index(k)) {
                self.groups[g].stats.retransmissions += 1;
            }
        }
        for u in failed {
            if let Some(g) = self.group_index(u.group) {
                self.groups[g].stats.delivery_failures += 1;
            }
            if !self.unreachable.contains(&u.peer) {
                self.unreachable.push(u.peer);
            }
            if let Some(g) = self.group_index(u.group) {
                self.transfer_unreachable(g, u.peer, &u.msg, now);
                self.groups[g]
                    .algo
                    .on_peer_unreachable(u.peer, u.msg, &mut self.out);
                self.apply(g, now);
            }
        }
        // Fire due timers in deadline order; a handler may re-arm or cancel others.
        loop {
            let due = self
                .timers
                .iter()
                .enumerate()
                .filter(|(_, t)| t.2 <= now)
                .min_by_key(|(_, t)| t.2)
                .map(|(i, _)| i);
            let Some(i) = due else { break };
            let (g, slot, deadline) = self.timers.swap_remove(i);
            let g = g as usize;
            match slot {
                Slot::Algo(timer) => {
                    self.groups[g].algo.on_timer(timer, &mut self.out);
                    self.apply(g, now);
                }
                Slot::Heartbeat => {
                    let grp = &self.groups[g];
                    // A leader handing over (HANDOFF) falls silent: its heartbeats
                    // would reach the target as a higher-ranked claim, which the ring
                    // family resolves by electing the higher id again.
                    let handing_over = grp.transfer.is_some() && grp.algo.uses_failure_detector();
                    if handing_over {
                        let next = now + self.timing.heartbeat;
                        self.arm(g, Slot::Heartbeat, next);
                    } else if grp.leader == Some(self.id) && self.quorum_lost(g, now) {
                        // Step down before this beat, not after it: a follower that
                        // hears a heartbeat sent after a failure timeout of leading
                        // takes it for one of a leader that kept its quorum, and may
                        // stand again (see `on_heartbeat`).
                        let kind = grp.kind;
                        self.set_ineligible(now, Some(kind), Ineligible::NoQuorum, true);
                    } else if grp.leader == Some(self.id) {
                        let msg = Message::Heartbeat {
                            term: grp.term,
                            leader: self.id,
                        };
                        let advert =
                            (grp.penalty > 0 && grp.algo.uses_failure_detector()).then(|| {
                                Message::Priority {
                                    term: grp.term,
                                    priority: u32::from(self.effective_priority(g)),
                                }
                            });
                        self.broadcast(g, now, msg);
                        if let Some(advert) = advert {
                            self.broadcast(g, now, advert);
                        }
                        // The next beat is due one period after this one was due, not
                        // after it fired: a runtime that wakes a little late (timer
                        // granularity, a busy batch) must not stretch every period and
                        // eat the failure detector's margin. After a long stall (a
                        // paused process) it resumes at the next beat of its schedule,
                        // no burst: every group this node leads keeps the same schedule
                        // (see `heartbeat_grid`).
                        let hb = self.timing.heartbeat;
                        let next = deadline + hb;
                        let next = if next > now {
                            next
                        } else {
                            heartbeat_grid(now, hb)
                        };
                        self.arm(g, Slot::Heartbeat, next);
                    }
                }
                Slot::Detector => {
                    // Handled a heartbeat period or more after it fell due: this node
                    // was not running (a stalled process, or the whole machine), and
                    // the leader, stalled alike, may be sending the heartbeat it owes
                    // just now. Its silence is then this node's as much as the
                    // leader's: one more period, once per silence (a leader really
                    // gone costs one period more, and only after such a stall).
                    let late = now.saturating_sub(deadline);
                    if late >= self.timing.heartbeat && !self.groups[g].detector_grace {
                        self.groups[g].detector_grace = true;
                        self.arm(g, Slot::Detector, now + self.timing.heartbeat);
                        continue;
                    }
                    let old = self.groups[g].leader;
                    self.groups[g]
                        .algo
                        .on_leader_lost(LeaderLoss::Silent, &mut self.out);
                    self.apply(g, now);
                    self.abandon(g, old, now);
                }
            }
        }
        self.settle_transfers(now);
    }

    /// The heartbeat this node owes next, when it is all the node owes then: every
    /// heartbeat deadline belongs to a group it leads that would send nothing but a
    /// heartbeat to every other member (no hand-over under way, no priority advert, no
    /// quorum to check first, no multicast), all on one instant, and no other deadline
    /// (timer, retransmission, transfer) comes at or before it. Returns that instant and
    /// the earliest other deadline. The daemon may then send the next beats itself from
    /// [`Node::beat_datagrams`] and tell the node with [`Node::beats_sent`]
    /// (`crate::daemon::beater`).
    pub fn beat_only(&mut self) -> Option<(Time, Option<Time>)> {
        if self.multicast {
            return None;
        }
        let mut beat: Option<Time> = None;
        let mut other: Option<Time> = None;
        for &(g, slot, at) in &self.timers {
            if slot != Slot::Heartbeat {
                other = Some(other.map_or(at, |o: Time| o.min(at)));
                continue;
            }
            let grp = &self.groups[g as usize];
            let plain = grp.leader == Some(self.id)
                && grp.transfer.is_none()
                && grp.penalty == 0
                && !self.options.lease.require_quorum.contains(&grp.kind);
            if !plain || beat.is_some_and(|b| b != at) {
                return None;
            }
            beat = Some(at);
        }
        let beat = beat?;
        let transfers = self.groups.iter().filter_map(|g| g.transfer.map(|t| t.1));
        let other = transfers
            .chain(other)
            .chain(self.link.next_deadline())
            .min();
        match other {
            Some(o) if o <= beat => None,
            _ => Some((beat, other)),
        }
    }

    /// The datagrams of one beat as [`Node::handle_timeout`] would send them now, when
    /// [`Node::beat_only`] holds: each group's heartbeat to every other member, in the
    /// order of the roster ring.
    pub fn beat_datagrams(&self) -> Vec<(NodeId, Datagram)> {
        let mut out = Vec::new();
        for &(g, slot, _) in &self.timers {
            if slot != Slot::Heartbeat {
                continue;
            }
            let grp = &self.groups[g as usize];
            let msg = Message::Heartbeat {
                term: grp.term,
                leader: self.id,
            };
            for &to in self.ring.iter().filter(|&&p| p != self.id) {
                out.push((
                    to,
                    self.link.datagram(0, 0, Some(grp.kind), Some(msg.clone())),
                ));
            }
        }
        out
    }

    /// The `passed` beats of [`Node::beat_datagrams`] due from the heartbeat deadline
    /// [`Node::beat_only`] gave, one period apart, were dealt with without the node,
    /// `beats` of them sent (the others skipped after a stall, as
    /// [`Node::handle_timeout`] skips the beats a stall overran): those are counted as
    /// sent, and the next beat is due one period after the last that passed.
    pub fn beats_sent(&mut self, passed: u32, beats: u32) {
        if passed == 0 {
            return;
        }
        let hb = self.timing.heartbeat;
        let others = self.ring.iter().filter(|&&p| p != self.id).count() as u64;
        let n = u64::from(beats);
        for i in 0..self.timers.len() {
            let (g, slot, at) = self.timers[i];
            if slot != Slot::Heartbeat {
                continue;
            }
            self.timers[i].2 = at + hb * passed;
            let grp = &mut self.groups[g as usize];
            grp.stats.sent[crate::contract::message::MessageType::Heartbeat as usize] += n * others;
            self.link.stats.datagrams_sent += n * others;
        }
    }

    /// The timers due at `now` as (group, timer name), in no particular order: what
    /// [`Node::handle_timeout`] is about to fire, for drivers that record a trace.
    pub(crate) fn due_timers(&self, now: Time) -> Vec<(AlgorithmKind, &'static str)> {
        self.timers
            .iter()
            .filter(|t| t.2 <= now)
            .map(|&(g, slot, _)| {
                let name = match slot {
                    Slot::Algo(Timer::Answer) => "answer",
                    Slot::Algo(Timer::Coordinator) => "coordinator",
                    Slot::Algo(Timer::Retry) => "retry",
                    Slot::Algo(Timer::Election) => "election",
                    Slot::Algo(Timer::Heartbeat) => "heartbeat",
                    Slot::Algo(Timer::Quorum) => "quorum",
                    Slot::Algo(Timer::Suspicion) => "suspicion",
                    Slot::Algo(Timer::Preempt) => "preempt",
                    Slot::Algo(Timer::Listen) => "listen",
                    Slot::Heartbeat => "heartbeat",
                    Slot::Detector => "failure_detector",
                };
                (self.groups[g as usize].kind, name)
            })
            .collect()
    }

    pub(super) fn arm(&mut self, g: usize, slot: Slot, at: Time) {
        let g8 = g as u8;
        if let Some(t) = self.timers.iter_mut().find(|t| t.0 == g8 && t.1 == slot) {
            t.2 = at;
        } else {
            self.timers.push((g8, slot, at));
        }
    }

    pub(super) fn disarm(&mut self, g: usize, slot: Slot) {
        let g8 = g as u8;
        self.timers.retain(|t| !(t.0 == g8 && t.1 == slot));
    }
}

/// The first beat after `t` on the schedule every group of a node beats to: the
/// multiples of `hb` in driver time. A node that leads several groups then wakes once
/// per period and sends their heartbeats together, and its followers read them in one
/// wakeup, instead of one wakeup per group at phases set by when each was won.
pub(super) fn heartbeat_grid(t: Time, hb: Duration) -> Time {
    let hb_ns = hb.as_nanos().max(1);
    let beats = t.as_nanos() / hb_ns + 1;
    Duration::from_nanos(u64::try_from(beats * hb_ns).unwrap_or(u64::MAX))
}
