//! The receive path: a datagram from the network through the roster check and the
//! link, then the group's term bounds, then the handler of its message.

use super::link::Inbound;
use super::{Datagram, Node, Time, MAX_GAPS};
use crate::contract::algorithm::MAX_TERM_AHEAD;
use crate::contract::message::Message;
use crate::contract::policy::Ineligible;
use crate::NodeId;

impl Node {
    /// Is `id` on the roster? Where the ids are consecutive (1..=N, the usual roster)
    /// the sorted roster holds `id` at `id − first`: one probe instead of a binary
    /// search, whose log₂ N probes miss the cache when thousands of simulated nodes
    /// take turns.
    pub(super) fn is_member(&self, id: NodeId) -> bool {
        let Some(&first) = self.members.first() else {
            return false;
        };
        let guess = id.checked_sub(first).map(|i| i as usize);
        if guess.and_then(|i| self.members.get(i)) == Some(&id) {
            return true;
        }
        self.members.binary_search(&id).is_ok()
    }

    /// Process one datagram from the network (already decoded and authenticated).
    pub fn handle_datagram(&mut self, now: Time, d: Datagram) {
        self.receive(now, d);
        if self.groups.iter().any(|g| g.transfer.is_some()) {
            self.settle_transfers(now);
        }
    }

    /// One datagram, step by step; each step may drop it (counted).
    fn receive(&mut self, now: Time, d: Datagram) {
        if d.from == self.id || !self.is_member(d.from) {
            self.count_invalid("unknown_sender");
            return;
        }
        self.heard_from(d.from, now);
        if self.through_link(now, &d) != Inbound::Deliver {
            return;
        }
        let (Some(kind), Some(msg)) = (d.group, d.body) else {
            self.count_invalid("empty");
            return;
        };
        let Some(g) = self.group_index(kind) else {
            self.count_invalid("unknown_algorithm");
            return;
        };
        let from = d.from;
        if !self.within_reach(g, from, &msg) {
            return;
        }
        self.groups[g].stats.received[msg.kind() as usize] += 1;
        if let Message::Heartbeat { leader, .. } = msg {
            self.note_beat(g, now, from, leader);
        }
        // `require_quorum`: a leader whose quorum lapsed steps down before it handles
        // anything, as at its next beat. A stopped process resumed reads what waited
        // in its socket before its timers: it took the answers naming another leader
        // (elected meanwhile, holding a lease) for claims against its own leadership
        // and took the leadership back by rank, and the old answers naming it would
        // have counted as fresh contacts.
        if self.groups[g].leader == Some(self.id) && self.quorum_lost(g, now) {
            let kind = self.groups[g].kind;
            self.set_ineligible(now, Some(kind), Ineligible::NoQuorum, true);
        }
        self.note_lease_contact(g, now, from, &msg);
        self.dispatch(g, now, from, msg);
    }

    /// A heartbeat of `from` naming `leader`: if this node follows it, the gap since its
    /// previous one is a sample of `electd_heartbeat_gap_seconds` ([`Node::drain_gaps`]).
    fn note_beat(&mut self, g: usize, now: Time, from: NodeId, leader: NodeId) {
        let grp = &mut self.groups[g];
        if from != leader || grp.leader != Some(from) {
            return;
        }
        if let Some((prev_from, prev)) = grp.beat {
            if prev_from == from && self.gaps.len() < MAX_GAPS {
                self.gaps.push((grp.kind, now.saturating_sub(prev)));
            }
        }
        grp.beat = Some((from, now));
    }

    /// Note the time for every group that follows (or lost) `from`.
    fn heard_from(&mut self, from: NodeId, now: Time) {
        for grp in &mut self.groups {
            if grp.followed == Some(from) {
                grp.heard = now;
            }
        }
    }

    /// The link's verdict on `d`: its ack queued, and every group told when the peer
    /// had been given up on.
    fn through_link(&mut self, now: Time, d: &Datagram) -> Inbound {
        let (verdict, ack, revived) = self.link.receive(now, d);
        if let Some(ack) = ack {
            self.transmits.push((d.from, ack));
        }
        if revived {
            for g in 0..self.groups.len() {
                self.groups[g].algo.on_peer_alive(d.from, &mut self.out);
                self.apply(g, now);
            }
        }
        verdict
    }

    /// Is the term of `msg` from `from` within reach of group `g` (else dropped as
    /// `future_epoch`)? Notes a peer out of this node's reach on the way.
    fn within_reach(&mut self, g: usize, from: NodeId, msg: &Message) -> bool {
        let grp = &mut self.groups[g];
        let epoch = msg_term(msg);
        // A peer more than MAX_TERM_AHEAD below this node's term drops everything this
        // node says as `future_epoch`: this node takes no part (a term restored from a
        // damaged state file, or pushed there). Noted for the `term` health check.
        // (Messages without a term, 0, tell nothing.)
        if epoch > 0 {
            grp.out_of_reach =
                (grp.term > epoch.saturating_add(MAX_TERM_AHEAD)).then_some((from, epoch));
        }
        let limit = grp.seen.max(grp.term).saturating_add(MAX_TERM_AHEAD);
        if epoch > limit {
            // No one datagram moves a group further, but the group may have moved
            // there without this node (a member took a far term from one forged
            // datagram, its leader then a term above it): a second datagram within
            // twice the bound, after one refused, is taken (docs/security.md).
            let near = epoch <= limit.saturating_add(MAX_TERM_AHEAD);
            if !(near && grp.far_refused) {
                grp.far_refused |= near;
                self.count_invalid("future_epoch");
                return false;
            }
        }
        grp.far_refused &= epoch <= limit;
        grp.seen = grp.seen.max(epoch);
        true
    }

    /// Hand `msg` to its handler: the failure detector's messages on the groups that
    /// use it, a leader's advertised priority, a hand-over, or else the algorithm.
    fn dispatch(&mut self, g: usize, now: Time, from: NodeId, msg: Message) {
        let external_fd = self.groups[g].algo.uses_failure_detector();
        match msg {
            Message::Heartbeat { term, .. } if external_fd => self.on_heartbeat(g, now, from, term),
            Message::HeartbeatAck { term, leader } if external_fd => {
                self.on_heartbeat_ack(g, now, term, leader)
            }
            Message::Resign { .. } if external_fd => self.on_resign(g, now, from),
            Message::Priority { term, priority } if external_fd => {
                self.on_priority(g, now, from, term, priority)
            }
            Message::Handoff { epoch, to } => self.on_handoff(g, now, from, epoch, to),
            Message::TimeoutNow { term } if !external_fd => self.on_timeout_now(g, now, from, term),
            msg => {
                self.groups[g].algo.on_message(from, msg, &mut self.out);
                self.apply(g, now);
            }
        }
    }
}

/// The term, epoch or round a message carries (0 for those without one).
pub(crate) fn msg_term(msg: &Message) -> u64 {
    match *msg {
        Message::Election { epoch, .. }
        | Message::Coordinator { epoch, .. }
        | Message::YouAreCoordinator { epoch, .. }
        | Message::RingElection { epoch, .. }
        | Message::RingCoordinator { epoch, .. }
        | Message::LcrElected { epoch, .. }
        | Message::Terminate { epoch, .. }
        | Message::Resign { epoch }
        | Message::Handoff { epoch, .. } => epoch,
        Message::LcrElection { round, .. }
        | Message::Probe { round, .. }
        | Message::Reply { round, .. } => round,
        Message::RequestVote { term, .. }
        | Message::Vote { term, .. }
        | Message::Heartbeat { term, .. }
        | Message::HeartbeatAck { term, .. }
        | Message::TimeoutNow { term }
        | Message::Priority { term, .. } => term,
        Message::Ok { .. } => 0,
    }
}
