//! A group, one algorithm at this node: its state beside the algorithm's, the effects
//! the algorithm produces applied (sends, broadcasts, timers, events), and its leader
//! belief with what follows from a change of it (failovers, the detector's deadlines).

use super::timers::{heartbeat_grid, Slot};
use super::{Event, FailoverPhases, GroupStats, Node, Time};
use crate::contract::algorithm::{Algorithm, AlgorithmKind, Effect, Timer, Token};
use crate::contract::message::Message;
use crate::contract::policy::Ineligible;
use crate::NodeId;
use std::collections::BTreeMap;

/// Effects buffers larger than this are freed after use rather than kept.
const OUT_KEEP_CAPACITY: usize = 64;

/// One group's state at this node, beside its algorithm's.
#[derive(Debug)]
pub(super) struct Group {
    pub(super) kind: AlgorithmKind,
    pub(super) algo: Box<dyn Algorithm>,
    pub(super) leader: Option<NodeId>,
    pub(super) term: u64,
    /// Leader of `term` (the token's leader; kept when the leader is lost).
    pub(super) holder: NodeId,
    /// Highest term, epoch or round accepted from the network or held: a datagram more
    /// than [`MAX_TERM_AHEAD`] above it is refused.
    pub(super) seen: u64,
    /// A datagram between one and two [`MAX_TERM_AHEAD`] above `seen` was refused:
    /// the next one there is taken.
    pub(super) far_refused: bool,
    pub(super) since: Time,
    pub(super) election_started_at: Option<Time>,
    pub(super) stats: GroupStats,
    /// The other node this node last followed (kept while it has no leader after it).
    pub(super) followed: Option<NodeId>,
    /// Last datagram heard from `followed` (or when it was adopted).
    pub(super) heard: Time,
    /// The failure detector's deadline was postponed once, by a heartbeat period,
    /// because this node handled it a period or more late (see `Slot::Detector` in
    /// [`Node::handle_timeout`]); cleared by the next heartbeat of the leader.
    pub(super) detector_grace: bool,
    /// The last heartbeat of the leader followed: (that leader, when).
    pub(super) beat: Option<(NodeId, Time)>,
    /// While leaderless after losing `followed`: (last heard from it then, loss time).
    pub(super) lost: Option<(Time, Time)>,
    /// Since when the node has had no leader (`None` while it has one, or before start).
    pub(super) leaderless_since: Option<Time>,
    /// Stale claims answered with the term held: claimant → (its claim, the token
    /// held, when). A claim is answered once per claimed and held token, and again
    /// only after `failure_timeout` (the answer is fire-and-forget): not at every
    /// heartbeat, from every node holding the higher token, which would bury the
    /// claimant in answers it can no longer work off in time.
    pub(super) stale_answered: BTreeMap<NodeId, (Token, Token, Time)>,
    /// While leading: per peer, the last heartbeat answer carrying this leadership's
    /// token (the contacts a lease is computed from).
    pub(super) contacts: BTreeMap<NodeId, Time>,
    /// Why this node may not lead this group now (empty: it may).
    pub(super) ineligible: std::collections::BTreeSet<Ineligible>,
    /// A leadership transfer under way from this node: (target, give up at).
    pub(super) transfer: Option<(NodeId, Time)>,
    /// The target of the last transfer and why it ended without it leading (it refused:
    /// it may not lead; or the link gave up on it); taken by
    /// [`Node::take_transfer_refusals`].
    pub(super) transfer_refused: Option<(NodeId, super::transfer::Refusal)>,
    /// The last peer heard with a term more than [`MAX_TERM_AHEAD`] below this node's
    /// (peer, its term): that peer drops this node's datagrams as `future_epoch`. Cleared
    /// when a peer is heard within reach again. See [`Node::terms_out_of_reach`].
    pub(super) out_of_reach: Option<(NodeId, u64)>,
    /// How much weighted health checks lower this node's priority now.
    pub(super) penalty: u8,
    /// The leader's advertised priority ([`Message::Priority`]), applied to the
    /// ranking while it leads.
    pub(super) leader_priority: Option<(NodeId, u8)>,
}

impl Node {
    pub(super) fn group_index(&self, kind: AlgorithmKind) -> Option<usize> {
        self.groups.iter().position(|g| g.kind == kind)
    }

    pub(super) fn send(&mut self, g: usize, now: Time, to: NodeId, msg: Message) {
        if to == self.id {
            return; // never counted: nothing is sent
        }
        let grp = &mut self.groups[g];
        grp.stats.sent[msg.kind() as usize] += 1;
        let d = self.link.send(now, to, grp.kind, msg);
        self.transmits.push((to, d));
    }

    pub(super) fn broadcast(&mut self, g: usize, now: Time, msg: Message) {
        if self.multicast {
            let others: Vec<NodeId> = self
                .ring
                .iter()
                .copied()
                .filter(|&p| p != self.id)
                .collect();
            if others.is_empty() {
                return;
            }
            let grp = &mut self.groups[g];
            grp.stats.sent[msg.kind() as usize] += others.len() as u64;
            let d = self.link.send_to_all(now, &others, grp.kind, msg);
            self.multicasts.push(d);
            return;
        }
        for i in 0..self.ring.len() {
            let to = self.ring[i];
            if to != self.id {
                self.send(g, now, to, msg.clone());
            }
        }
    }

    /// Apply the effects the algorithm of group `g` just produced.
    pub(super) fn apply(&mut self, g: usize, now: Time) {
        let mut out = std::mem::take(&mut self.out);
        let mut suspected = Vec::new();
        for effect in out.drain() {
            match effect {
                Effect::Send { to, msg } => self.send(g, now, to, msg),
                Effect::Broadcast { msg } => self.broadcast(g, now, msg),
                Effect::SetTimer { timer, min, max } => {
                    let after = self.rng.duration(min, max);
                    let mut at = now + after;
                    if timer == Timer::Heartbeat && self.groups.len() > 1 {
                        // An algorithm's own heartbeat (Raft's) beats on the node's
                        // schedule when the node runs several groups, never later than
                        // asked: the beats of every group this node leads then leave
                        // in one turn, one datagram per peer (see `beats`).
                        let hb = self.timing.heartbeat;
                        at = heartbeat_grid(at.saturating_sub(hb), hb).min(at);
                    }
                    self.arm(g, Slot::Algo(timer), at);
                }
                Effect::CancelTimer(timer) => self.disarm(g, Slot::Algo(timer)),
                Effect::ElectionStarted => {
                    let grp = &mut self.groups[g];
                    grp.stats.elections_started += 1;
                    if grp.election_started_at.is_none() {
                        grp.election_started_at = Some(now);
                    }
                    self.events.push(Event::ElectionStarted {
                        group: grp.kind,
                        at: now,
                    });
                }
                Effect::LeaderChanged { leader, term } => self.leader_changed(g, now, leader, term),
                Effect::Suspected(peer) => suspected.push(peer),
            }
        }
        // Keep the buffer for the next call unless a burst made it large.
        if out.capacity() <= OUT_KEEP_CAPACITY {
            self.out = out;
        }
        // Messages still pending to a member just suspected come back now, to be
        // routed past it (the algorithm skips a suspected member: this ends).
        for peer in suspected {
            self.abandon(g, Some(peer), now);
        }
    }

    pub(super) fn leader_changed(
        &mut self,
        g: usize,
        now: Time,
        leader: Option<NodeId>,
        term: u64,
    ) {
        let me = self.id;
        let external_fd = self.groups[g].algo.uses_failure_detector();
        // A live leader is heard every heartbeat; one silent for longer than halfway
        // from there to the timeout that declares it lost (failure_timeout, or Raft's
        // shortest election timeout) has failed, even if this node adopts its successor
        // before declaring anything itself.
        let timeout = if external_fd {
            self.timing.failure_timeout
        } else {
            self.timing.election_timeout_min
        };
        let silent_after = (self.timing.heartbeat + timeout) / 2;
        let grp = &mut self.groups[g];
        let changed = grp.leader != leader;
        let new_term = grp.term != term;
        // An advertised priority holds while that node leads: back to the configured
        // one (in this node's ranking) once another leads.
        if let Some((l, _)) = grp.leader_priority.filter(|&(l, _)| leader != Some(l)) {
            grp.leader_priority = None;
            let policy = &mut grp.algo.config_mut().options.policy;
            match self.policy.priority.get(&l) {
                Some(&p) => policy.priority.insert(l, p),
                None => policy.priority.remove(&l),
            };
            grp.algo.policy_changed();
        }
        grp.term = term;
        grp.seen = grp.seen.max(term);
        if let Some(l) = leader {
            grp.holder = l;
        }
        if !changed {
            if let Some(l) = leader.filter(|_| new_term) {
                // Same leader, a new token (an election that chose it again, or a
                // re-announcement above a term it learned): observers that fence on
                // the token must hear of it.
                grp.since = now;
                let kind = grp.kind;
                // An election this node took part in ends here as any other does: its
                // time is recorded and the winner counts it won. (Left pending, its
                // start was taken for the next real change's, and the histogram held
                // an "election" as long as the gap between the two.)
                let finished = grp.election_started_at.take().map(|start| {
                    let duration = now.saturating_sub(start);
                    grp.stats.last_election = Some(duration);
                    if l == me {
                        grp.stats.elections_won += 1;
                    }
                    (duration, l == me)
                });
                self.events.push(Event::LeaderChanged {
                    group: kind,
                    leader,
                    term,
                    at: now,
                });
                if let Some((duration, won)) = finished {
                    self.events.push(Event::ElectionFinished {
                        group: kind,
                        duration,
                        won,
                    });
                }
            }
            return;
        }
        match leader {
            None => {
                if grp.leaderless_since.is_none() {
                    grp.leaderless_since = Some(now);
                }
                if grp.leader.is_some() && grp.followed.is_some() {
                    grp.lost = Some((grp.heard, now));
                }
                // Left leaderless after the leader's silence (Raft's election timeout
                // fired): the link counts what still fails to it as failures to a lost
                // peer.
                if let Some(old) = grp
                    .followed
                    .filter(|_| now.saturating_sub(grp.heard) > silent_after)
                {
                    self.link.declare_lost(old);
                }
            }
            Some(next) => {
                if let Some(since) = grp.leaderless_since.take() {
                    grp.stats.leaderless += now.saturating_sub(since);
                }
                let failed = grp
                    .followed
                    .filter(|&old| old != next && now.saturating_sub(grp.heard) > silent_after);
                if let Some(old) = failed {
                    self.link.declare_lost(old);
                    let total = now.saturating_sub(grp.heard);
                    // Phases only if nothing was heard from `old` after the loss, so
                    // that they add up to `total`.
                    let phases =
                        grp.lost
                            .filter(|&(heard, _)| heard == grp.heard)
                            .map(|(heard, lost)| FailoverPhases {
                                detection: lost.saturating_sub(heard),
                                election: now.saturating_sub(lost),
                            });
                    grp.stats.failovers += 1;
                    grp.stats.last_failover = Some(total);
                    self.events.push(Event::Failover {
                        group: grp.kind,
                        from: old,
                        to: next,
                        total,
                        phases,
                    });
                }
                grp.lost = None;
                grp.followed = (next != me).then_some(next);
                grp.heard = now;
            }
        }
        grp.leader = leader;
        grp.since = now;
        grp.stats.leader_changes += 1;
        let kind = grp.kind;
        if leader == Some(me) {
            grp.stats.elections_won += 1;
        }
        let finished = match (leader, grp.election_started_at.take()) {
            (Some(l), Some(start)) => {
                let duration = now.saturating_sub(start);
                grp.stats.last_election = Some(duration);
                Some((duration, l == me))
            }
            (None, start) => {
                grp.election_started_at = start;
                None
            }
            _ => None,
        };
        self.events.push(Event::LeaderChanged {
            group: kind,
            leader,
            term,
            at: now,
        });
        if let Some((duration, won)) = finished {
            self.events.push(Event::ElectionFinished {
                group: kind,
                duration,
                won,
            });
        }
        if !external_fd {
            return;
        }
        match leader {
            Some(l) if l == me => {
                self.disarm(g, Slot::Detector);
                let hb = self.timing.heartbeat;
                if self.groups[g].kind.info().announces_by_lap() {
                    // The ring family announces the winner by a lap: the last member
                    // hears of it n − 1 hops later. A heartbeat to every member now
                    // tells them all in one hop (a member in the round follows a
                    // claim of its round's epoch, `ring_common::foreign_leader`); the
                    // lap still goes round, so the literature's count is unchanged.
                    // Where hops cost more than an adoption (a network) this takes
                    // the lap off the failover; on one busy host both take the same
                    // time (docs/bench/ANALYSIS.md, round 23).
                    let msg = Message::Heartbeat { term, leader: me };
                    self.broadcast(g, now, msg);
                }
                self.arm(g, Slot::Heartbeat, heartbeat_grid(now + hb / 2, hb));
            }
            Some(_) => {
                self.disarm(g, Slot::Heartbeat);
                self.arm(g, Slot::Detector, now + self.timing.failure_timeout);
                self.groups[g].detector_grace = false;
            }
            None => {
                self.disarm(g, Slot::Heartbeat);
                self.disarm(g, Slot::Detector);
            }
        }
    }
}
