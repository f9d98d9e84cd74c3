//! Reliable link, sans-IO: per-peer sequence numbers, acks, duplicate suppression,
//! retransmission with an adaptive timeout, and a *peer unreachable* verdict when a
//! message stays unacknowledged for [`LinkConfig::give_up`]. Liveness traffic
//! (heartbeats) bypasses it: fire-and-forget.
//!
//! Retransmission timeout (RTO), per peer, as TCP computes it (RFC 6298): the first
//! round-trip sample R sets SRTT = R and RTTVAR = R/2; each later one sets
//! RTTVAR = ¾·RTTVAR + ¼·|SRTT − R| and SRTT = ⅞·SRTT + ⅛·R; RTO = SRTT + 4·RTTVAR,
//! clamped to [`LinkConfig::rto_min`, `LinkConfig::rto_max`]. Before any sample the RTO
//! is [`LinkConfig::retransmit`]. Karn's rule: a message sent more than once gives no
//! sample (its ack cannot be matched to one send). Every retransmission timeout doubles
//! the peer's RTO (exponential backoff, up to the ceiling) and the backed-off value is
//! kept for new messages until a fresh sample arrives, so a peer that stopped answering
//! (or a node that cannot send) is retried ever more slowly instead of stormed. The
//! verdict is a time, not a count: a message unacknowledged for `give_up` (below the
//! failure detector's `failure_timeout`) is handed back as undeliverable.
//!
//! Fan-outs: messages first sent at one instant (a leader's COORDINATOR to every member)
//! form a flight. Their acks come back one receiver after another, each receiver
//! woken and scheduled in turn, so on a busy machine the last ones arrive well after an
//! RTO learned on single round trips. As TCP restarts its timer on every ack of new
//! data (RFC 6298 §5.3), every ack of a flight restarts the timers of its unacknowledged
//! messages: they are sent again one RTO after the latest ack of their flight, not one
//! RTO after the send — but no later than the RTO ceiling after the send, so that a
//! message lost in a large flight is not left waiting while the other acks trickle in.
//!
//! Broadcast sequences (multicast): a reliable message sent once to a multicast group
//! carries a sequence from the sender-wide broadcast space, marked by the top bit
//! ([`BROADCAST_SEQ`]), instead of a per-peer one. Every recipient acks it by unicast
//! like any reliable datagram and deduplicates it in a separate per-sender window; the
//! sender keeps one pending entry per recipient, so a recipient that does not ack gets
//! the same datagram again by unicast with the usual backoff, and after the last
//! attempt the usual *peer unreachable* verdict. Acks, retransmissions and verdicts are
//! thus per peer whether the first copy went by unicast or by multicast.
//!
//! A peer's datagrams carry its incarnation (boot id). A higher incarnation means the
//! peer restarted: its receive state is reset so its new sequence space is accepted;
//! a lower one is a leftover of a previous life and is dropped.

use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::Message;
use crate::node::fxhash::{FxHashMap, FxHashSet};
use crate::node::{Datagram, Time};
use crate::NodeId;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::time::Duration;

/// Link settings (config `[transport]`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LinkConfig {
    /// Retransmission timeout before any round trip to the peer was measured.
    pub retransmit: Duration,
    /// Floor of the measured retransmission timeout.
    pub rto_min: Duration,
    /// Ceiling of the retransmission timeout, backoff included.
    pub rto_max: Duration,
    /// A message unacknowledged this long after its first send is undeliverable and
    /// the peer unreachable (until heard from again).
    pub give_up: Duration,
    /// Optional cap on sends per message (first one included); `None`: only
    /// `give_up` ends the retries.
    pub max_attempts: Option<u32>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig::for_failure_timeout(
            crate::contract::algorithm::Timing::default().failure_timeout,
        )
    }
}

impl LinkConfig {
    /// The defaults for a failure detector of `failure_timeout`: first retransmission
    /// after 5 ms, RTO in [5 ms, max(40 ms, failure_timeout / 8)], give-up after
    /// ¾ · failure_timeout (the link's verdict comes before the detector's).
    pub fn for_failure_timeout(failure_timeout: Duration) -> Self {
        let ms5 = Duration::from_millis(5);
        LinkConfig {
            retransmit: ms5,
            rto_min: ms5,
            rto_max: (failure_timeout / 8).max(ms5 * 8),
            give_up: failure_timeout * 3 / 4,
            max_attempts: None,
        }
    }
    /// Time from the first send until the link gives up on a message.
    pub fn give_up_after(&self) -> Duration {
        self.give_up
    }
    fn clamp(&self, rto: Duration) -> Duration {
        rto.max(self.rto_min).min(self.rto_max.max(self.rto_min))
    }
}

/// Round-trip estimate of one peer (RFC 6298). The smoothed round trip and its
/// variation are kept as nanoseconds (24 bytes instead of 48: one per peer on every
/// node, millions in a large simulation) and computed as [`Duration`]s, so the
/// arithmetic is exactly the one on durations.
#[derive(Clone, Copy, Debug, Default)]
struct Rtt {
    srtt_ns: u64,
    var_ns: u64,
    /// Doublings of the RTO since the last valid sample.
    backoff: u32,
    /// A sample was taken (`srtt_ns` and `var_ns` are meaningful).
    sampled: bool,
}

impl Rtt {
    /// Smoothed round trip and its variation; `None` before the first sample.
    fn srtt(&self) -> Option<(Duration, Duration)> {
        self.sampled.then(|| {
            (
                Duration::from_nanos(self.srtt_ns),
                Duration::from_nanos(self.var_ns),
            )
        })
    }
    fn sample(&mut self, r: Duration) {
        let (srtt, var) = match self.srtt() {
            None => (r, r / 2),
            Some((srtt, var)) => {
                let dev = srtt.abs_diff(r);
                ((srtt * 7 + r) / 8, (var * 3 + dev) / 4)
            }
        };
        // Saturating: a round trip is never 584 years.
        self.srtt_ns = heap_ns(srtt);
        self.var_ns = heap_ns(var);
        self.sampled = true;
        self.backoff = 0;
    }
    fn base(&self, cfg: &LinkConfig) -> Duration {
        match self.srtt() {
            None => cfg.retransmit,
            Some((srtt, var)) => cfg.clamp(srtt + var * 4),
        }
    }
    /// The RTO for a message sent now.
    fn rto(&self, cfg: &LinkConfig) -> Duration {
        let shift = self.backoff.min(16);
        cfg.clamp(self.base(cfg).saturating_mul(1 << shift))
    }
}

#[derive(Debug)]
struct Pending {
    group: AlgorithmKind,
    msg: Message,
    attempts: u32,
    /// Nanoseconds of [`Time`] (see [`heap_ns`]): 8 bytes, not 16, in an entry kept
    /// per message in flight.
    first_sent_ns: u64,
}

impl Pending {
    fn first_sent(&self) -> Time {
        Duration::from_nanos(self.first_sent_ns)
    }
}

/// What the link decided about an incoming datagram.
#[derive(Debug, PartialEq, Eq)]
pub enum Inbound {
    /// Hand the body to its group.
    Deliver,
    /// Already delivered once (acked again, body dropped).
    Duplicate,
    /// From an earlier incarnation of the peer: dropped.
    Stale,
    /// A pure ack (or a datagram without body): nothing to deliver.
    Nothing,
}

/// The receiving side's memory of one peer.
#[derive(Debug, Default)]
struct PeerIn {
    incarnation: u64,
    /// Every sequence ≤ floor has been delivered.
    floor: u64,
    /// Delivered sequences above the floor (out of order arrivals); boxed and absent
    /// when empty (the common case): a node keeps one `PeerIn` per roster member, and
    /// an inline set would be two thirds of it (the simulator's thousands of nodes).
    #[allow(clippy::box_collection)] // the point: 8 bytes inline instead of 24
    above: Option<Box<BTreeSet<u64>>>,
}

const MAX_OUT_OF_ORDER: usize = 4096;

impl PeerIn {
    /// Move the floor over every sequence delivered just above it. Sequences are
    /// chosen by the peer: no arithmetic here may overflow, whatever they are.
    fn advance(&mut self) {
        while let Some(next) = self.floor.checked_add(1) {
            if !self.above.as_mut().is_some_and(|a| a.remove(&next)) {
                break;
            }
            self.floor = next;
        }
    }
}

/// A [`Time`] as the nanoseconds the retransmission heap keeps (saturating: no
/// deadline is 584 years away).
fn heap_ns(t: Time) -> u64 {
    u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
}

/// The top bit of a sequence number marks the sender-wide broadcast space (see the
/// module documentation); per-peer sequences never reach it.
pub const BROADCAST_SEQ: u64 = 1 << 63;

/// The reliable link of one node to all its peers (see the module documentation):
/// sequences, acks, retransmission timers and the duplicate windows.
#[derive(Debug)]
pub struct Link {
    me: NodeId,
    incarnation: u64,
    cfg: LinkConfig,
    next_seq: FxHashMap<NodeId, u64>,
    /// Last broadcast sequence used (without the [`BROADCAST_SEQ`] bit).
    next_broadcast: u64,
    unacked: FxHashMap<(NodeId, u64), Pending>,
    /// Retransmission deadlines in nanoseconds of [`Time`] (24 bytes an entry, not
    /// 32: one entry per message in flight), ordered as the times are.
    retx: BinaryHeap<Reverse<(u64, NodeId, u64)>>,
    inbound: FxHashMap<NodeId, PeerIn>,
    /// Per sender, the broadcast sequences delivered (incarnation kept in `inbound`).
    inbound_broadcast: FxHashMap<NodeId, PeerIn>,
    given_up: FxHashSet<NodeId>,
    /// Peers the failure detector declared lost ([`Link::abandon`]) and not heard
    /// from since: failures to them are counted apart from failures to live peers.
    lost: FxHashSet<NodeId>,
    rtt: FxHashMap<NodeId, Rtt>,
    /// The latest flights (messages first sent at one instant, a fan-out) and when an
    /// ack of each last came back, as nanoseconds of [`Time`]: `(first_sent, last_ack)`.
    flights: [(u64, u64); FLIGHTS],
    /// What the link has done so far (exported as metrics).
    pub stats: LinkStats,
}

/// Flights whose acks restart the timers of the rest (see [`Link::on_timeout`]).
const FLIGHTS: usize = 4;

/// Counters of the link (acks and retransmissions are counted apart from messages).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkStats {
    /// Every datagram built: first sends, acks and retransmissions.
    pub datagrams_sent: u64,
    /// Acks sent for reliable datagrams received (duplicates are acked again).
    pub acks_sent: u64,
    /// Reliable messages sent again after their retransmission timeout.
    pub retransmissions: u64,
    /// Messages given up on (unacknowledged for `give_up`): peer unreachable.
    pub delivery_failures: u64,
    /// The part of `delivery_failures` addressed to a peer the failure detector had
    /// declared lost (a crashed leader): expected, unlike a failure to a live peer.
    pub delivery_failures_to_lost: u64,
    /// Reliable datagrams received again and dropped (their ack was resent).
    pub duplicates_dropped: u64,
    /// Datagrams of a peer's previous life (lower incarnation), dropped.
    pub stale_dropped: u64,
}

/// A message the link gave up on.
#[derive(Debug)]
pub struct Undeliverable {
    /// The peer that did not acknowledge.
    pub peer: NodeId,
    /// The group that sent the message.
    pub group: AlgorithmKind,
    /// The message, for the group to handle the failure.
    pub msg: Message,
}

impl Link {
    /// The link of node `me` in its boot `incarnation`, with no peer heard from yet.
    pub fn new(me: NodeId, incarnation: u64, cfg: LinkConfig) -> Self {
        Link {
            me,
            incarnation,
            cfg,
            next_seq: FxHashMap::default(),
            next_broadcast: 0,
            unacked: FxHashMap::default(),
            retx: BinaryHeap::new(),
            inbound: FxHashMap::default(),
            inbound_broadcast: FxHashMap::default(),
            given_up: FxHashSet::default(),
            lost: FxHashSet::default(),
            rtt: FxHashMap::default(),
            flights: [(0, 0); FLIGHTS],
            stats: LinkStats::default(),
        }
    }

    /// The settings the link was built with.
    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// The retransmission timeout a new message to `peer` would get now.
    pub(crate) fn rto(&self, peer: NodeId) -> Duration {
        self.rtt
            .get(&peer)
            .copied()
            .unwrap_or_default()
            .rto(&self.cfg)
    }

    /// When a message first sent at `first_sent` and (re)sent `now` is due next: one
    /// RTO later, or at its give-up time if that comes first.
    fn next_try(&self, peer: NodeId, first_sent: Time, now: Time) -> Time {
        (now + self.rto(peer)).min(first_sent + self.cfg.give_up)
    }

    /// Wrap `msg` as one datagram for all of `to` at once (a multicast send; one
    /// datagram counted). Liveness types go without sequence; reliable ones get the
    /// next broadcast sequence and one pending entry (ack, retransmission by unicast,
    /// verdict) per recipient.
    pub(crate) fn send_to_all(
        &mut self,
        now: Time,
        to: &[NodeId],
        group: AlgorithmKind,
        msg: Message,
    ) -> Datagram {
        self.stats.datagrams_sent += 1;
        if !msg.kind().is_reliable() {
            return self.datagram(0, 0, Some(group), Some(msg));
        }
        self.next_broadcast += 1;
        let seq = BROADCAST_SEQ | self.next_broadcast;
        for &peer in to {
            self.unacked.insert(
                (peer, seq),
                Pending {
                    group,
                    msg: msg.clone(),
                    attempts: 1,
                    first_sent_ns: heap_ns(now),
                },
            );
            let at = self.next_try(peer, now, now);
            self.retx.push(Reverse((heap_ns(at), peer, seq)));
        }
        self.datagram(seq, 0, Some(group), Some(msg))
    }

    /// Wrap `msg` for `to`; reliable types get a sequence number and a retransmission.
    pub fn send(&mut self, now: Time, to: NodeId, group: AlgorithmKind, msg: Message) -> Datagram {
        self.stats.datagrams_sent += 1;
        if !msg.kind().is_reliable() {
            return self.datagram(0, 0, Some(group), Some(msg));
        }
        let seq = self.next_seq.entry(to).or_insert(0);
        *seq += 1;
        let seq = *seq;
        self.unacked.insert(
            (to, seq),
            Pending {
                group,
                msg: msg.clone(),
                attempts: 1,
                first_sent_ns: heap_ns(now),
            },
        );
        let at = self.next_try(to, now, now);
        self.retx.push(Reverse((heap_ns(at), to, seq)));
        self.datagram(seq, 0, Some(group), Some(msg))
    }

    fn datagram(
        &self,
        seq: u64,
        ack: u64,
        group: Option<AlgorithmKind>,
        body: Option<Message>,
    ) -> Datagram {
        Datagram {
            from: self.me,
            incarnation: self.incarnation,
            seq,
            ack,
            group,
            body,
        }
    }

    /// Process the link header of an incoming datagram. Returns the verdict, an ack to
    /// send back (for reliable datagrams, duplicates included), and whether the peer
    /// had been declared unreachable before this datagram. `now` times the round trip
    /// of what it acknowledges.
    pub fn receive(&mut self, now: Time, d: &Datagram) -> (Inbound, Option<Datagram>, bool) {
        let ack = (d.seq != 0).then(|| self.datagram(0, d.seq, None, None));
        let peer = self.inbound.entry(d.from).or_default();
        if d.incarnation < peer.incarnation {
            self.stats.stale_dropped += 1;
            return (Inbound::Stale, None, false);
        }
        if d.incarnation > peer.incarnation {
            *peer = PeerIn {
                incarnation: d.incarnation,
                ..PeerIn::default()
            };
            self.inbound_broadcast.remove(&d.from);
        }
        if d.ack != 0 {
            if let Some(p) = self.unacked.remove(&(d.from, d.ack)) {
                // Karn's rule: only a message sent once times a round trip.
                if p.attempts == 1 {
                    let rtt = self.rtt.entry(d.from).or_default();
                    rtt.sample(now.saturating_sub(p.first_sent()));
                }
                self.flight_acked(p.first_sent_ns, heap_ns(now));
            }
        }
        self.lost.remove(&d.from);
        let revived = self.given_up.remove(&d.from);
        if d.seq == 0 {
            let verdict = if d.body.is_some() {
                Inbound::Deliver
            } else {
                Inbound::Nothing
            };
            return (verdict, None, revived);
        }
        self.stats.acks_sent += 1;
        self.stats.datagrams_sent += 1;
        let (peer, seq) = if d.seq & BROADCAST_SEQ != 0 {
            let window = self.inbound_broadcast.entry(d.from).or_default();
            (window, d.seq & !BROADCAST_SEQ)
        } else {
            (self.inbound.entry(d.from).or_default(), d.seq)
        };
        if seq <= peer.floor {
            self.stats.duplicates_dropped += 1;
            return (Inbound::Duplicate, ack, revived);
        }
        if peer.floor.checked_add(1) == Some(seq) {
            // In order (the common case): no out-of-order bookkeeping.
            peer.floor = seq;
        } else if !peer.above.get_or_insert_with(Box::default).insert(seq) {
            self.stats.duplicates_dropped += 1;
            return (Inbound::Duplicate, ack, revived);
        }
        peer.advance();
        if peer.above.as_ref().map_or(0, |a| a.len()) > MAX_OUT_OF_ORDER {
            // Bounded memory: forget the oldest gap (a retransmission that old is moot).
            if let Some(lowest) = peer.above.as_mut().and_then(|a| a.pop_first()) {
                peer.floor = lowest;
                peer.advance();
            }
        }
        if peer.above.as_ref().is_some_and(|a| a.is_empty()) {
            peer.above = None;
        }
        (Inbound::Deliver, ack, revived)
    }

    /// An ack of a message first sent at `first_sent` came back at `at`: remember it
    /// for the flight of that instant (the oldest remembered flight makes room).
    fn flight_acked(&mut self, first_sent: u64, at: u64) {
        if let Some(f) = self.flights.iter_mut().find(|f| f.0 == first_sent) {
            f.1 = f.1.max(at);
            return;
        }
        if let Some(oldest) = self.flights.iter_mut().min_by_key(|f| f.0) {
            if oldest.0 < first_sent {
                *oldest = (first_sent, at);
            }
        }
    }

    /// When the last ack of the flight first sent at `first_sent` came back, if any did.
    fn flight_last_ack(&self, first_sent: u64) -> Option<u64> {
        self.flights
            .iter()
            .find(|f| f.0 == first_sent && f.1 != 0)
            .map(|f| f.1)
    }

    /// Earliest retransmission deadline, if any message is unacknowledged.
    pub(crate) fn next_deadline(&mut self) -> Option<Time> {
        while let Some(Reverse((_, peer, seq))) = self.retx.peek() {
            if self.unacked.contains_key(&(*peer, *seq)) {
                break;
            }
            self.retx.pop();
        }
        self.retx
            .peek()
            .map(|Reverse((t, _, _))| Duration::from_nanos(*t))
    }

    /// Retransmit what is due; messages past their last attempt come back as
    /// [`Undeliverable`].
    pub(crate) fn on_timeout(
        &mut self,
        now: Time,
        transmit: &mut Vec<(NodeId, Datagram)>,
        failed: &mut Vec<Undeliverable>,
    ) {
        while let Some(&Reverse((t, peer, seq))) = self.retx.peek() {
            if t > heap_ns(now) {
                break;
            }
            self.retx.pop();
            let Some(p) = self.unacked.get(&(peer, seq)) else {
                continue;
            };
            let out_of_time = now >= p.first_sent() + self.cfg.give_up;
            let out_of_tries = self.cfg.max_attempts.is_some_and(|m| p.attempts >= m);
            if out_of_time || out_of_tries {
                let Some(p) = self.unacked.remove(&(peer, seq)) else {
                    continue;
                };
                self.count_failure(peer);
                self.given_up.insert(peer);
                failed.push(Undeliverable {
                    peer,
                    group: p.group,
                    msg: p.msg,
                });
                continue;
            }
            // A fan-out's acks come back one receiver after another (each has to be
            // woken and scheduled, on the same cores as the rest): while they keep
            // coming, the timers of the others restart from the latest one, as TCP
            // restarts its timer on every ack of new data (RFC 6298 §5.3), instead of
            // all of them firing one RTO after the send.
            // A flight's acks stretch the wait for the rest only up to the RTO ceiling
            // after the send: a message lost in a large flight (on a lossy network)
            // is not left waiting while its flight's other acks trickle in.
            let latest = p.first_sent() + self.cfg.rto_max.min(self.cfg.give_up);
            let restart = self
                .flight_last_ack(p.first_sent_ns)
                .map(|ack| (Duration::from_nanos(ack) + self.rto(peer)).min(latest))
                .filter(|&at| at > now);
            if let Some(at) = restart {
                self.retx.push(Reverse((heap_ns(at), peer, seq)));
                continue;
            }
            // A retransmission timeout doubles the peer's RTO (RFC 6298 §5.5), for
            // new messages too, until a fresh sample.
            let (attempts, first_sent) = (p.attempts + 1, p.first_sent());
            let rtt = self.rtt.entry(peer).or_default();
            if rtt.rto(&self.cfg) < self.cfg.rto_max {
                rtt.backoff = (rtt.backoff + 1).min(16);
            }
            let next = self.next_try(peer, first_sent, now);
            let Some(p) = self.unacked.get_mut(&(peer, seq)) else {
                continue;
            };
            p.attempts = attempts;
            let (group, msg) = (p.group, p.msg.clone());
            self.retx.push(Reverse((heap_ns(next), peer, seq)));
            self.stats.retransmissions += 1;
            self.stats.datagrams_sent += 1;
            transmit.push((peer, self.datagram(seq, 0, Some(group), Some(msg))));
        }
    }

    /// The failure detector (or a leader change after the old leader's silence)
    /// declared `peer` lost: until it is heard from again, failures to it are counted
    /// in [`LinkStats::delivery_failures_to_lost`].
    pub fn declare_lost(&mut self, peer: NodeId) {
        self.lost.insert(peer);
    }

    fn count_failure(&mut self, peer: NodeId) {
        self.stats.delivery_failures += 1;
        if self.lost.contains(&peer) {
            self.stats.delivery_failures_to_lost += 1;
        }
    }

    /// Number of messages waiting for an ack.
    pub(crate) fn in_flight(&self) -> usize {
        self.unacked.len()
    }

    /// Give up now on every message of `group` still unacknowledged by `peer` (the
    /// failure detector declared `peer` lost: waiting out the retry budget would only
    /// delay the election by it). Returned in sending order; counted as delivery
    /// failures, and `peer` counts as given up until it is heard from again. Until
    /// then its later failures count as failures to a lost peer too
    /// ([`LinkStats::delivery_failures_to_lost`]).
    pub(crate) fn abandon(&mut self, peer: NodeId, group: AlgorithmKind) -> Vec<Undeliverable> {
        self.lost.insert(peer);
        let mut seqs: Vec<u64> = self
            .unacked
            .iter()
            .filter(|((p, _), m)| *p == peer && m.group == group)
            .map(|((_, seq), _)| *seq)
            .collect();
        seqs.sort_unstable();
        let mut out = Vec::with_capacity(seqs.len());
        for seq in seqs {
            if let Some(m) = self.unacked.remove(&(peer, seq)) {
                self.count_failure(peer);
                out.push(Undeliverable {
                    peer,
                    group: m.group,
                    msg: m.msg,
                });
            }
        }
        if !out.is_empty() {
            self.given_up.insert(peer);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::message::Message;

    fn reliable(from: NodeId, seq: u64) -> Datagram {
        Datagram {
            from,
            incarnation: 1,
            seq,
            ack: 0,
            group: Some(AlgorithmKind::Bully),
            body: Some(Message::Resign { epoch: 1 }),
        }
    }

    #[test]
    fn duplicates_are_acked_but_delivered_once_and_order_does_not_matter() {
        let mut link = Link::new(1, 1, LinkConfig::default());
        let expected = [
            (3, Inbound::Deliver),
            (1, Inbound::Deliver),
            (2, Inbound::Deliver),
            (2, Inbound::Duplicate),
            (1, Inbound::Duplicate),
            (4, Inbound::Deliver),
        ];
        for (seq, want) in expected {
            let (verdict, ack, _) = link.receive(Duration::ZERO, &reliable(2, seq));
            assert_eq!(verdict, want, "seq {seq}");
            assert_eq!(
                ack.map(|a| a.ack),
                Some(seq),
                "every reliable datagram is acked"
            );
        }
        assert_eq!(link.stats.duplicates_dropped, 2);
    }

    /// Hostile sequence numbers at the top of both sequence spaces (per-peer and
    /// broadcast), and the out-of-order trim, never overflow.
    #[test]
    fn sequences_at_the_top_of_the_range_do_not_overflow() {
        for (base, max) in [(0, BROADCAST_SEQ - 1), (BROADCAST_SEQ, u64::MAX)] {
            let mut link = Link::new(1, 1, LinkConfig::default());
            let top = max - MAX_OUT_OF_ORDER as u64 - 1;
            for seq in top..=max {
                let (verdict, _, _) = link.receive(Duration::ZERO, &reliable(2, seq));
                assert_eq!(verdict, Inbound::Deliver, "seq {seq}");
            }
            let (verdict, _, _) = link.receive(Duration::ZERO, &reliable(2, max));
            assert_eq!(verdict, Inbound::Duplicate);
            let (verdict, _, _) = link.receive(Duration::ZERO, &reliable(2, base + 5));
            assert_eq!(verdict, Inbound::Duplicate, "far below the trimmed floor");
        }
    }

    fn unacked_to(l: &Link, peer: NodeId) -> usize {
        l.unacked.keys().filter(|(p, _)| *p == peer).count()
    }

    fn election(seq: u64) -> Message {
        Message::Election {
            tag: crate::contract::message::ElectionTag { initiator: 1, seq },
            epoch: 0,
        }
    }

    #[test]
    fn abandon_hands_back_one_groups_pending_messages_in_order() {
        let mut l = Link::new(1, 1, LinkConfig::default());
        let t = Duration::ZERO;
        l.send(t, 5, AlgorithmKind::Ring, election(1));
        l.send(t, 5, AlgorithmKind::Bully, election(2));
        l.send(t, 5, AlgorithmKind::Ring, election(3));
        l.send(t, 4, AlgorithmKind::Ring, election(4));
        let gone = l.abandon(5, AlgorithmKind::Ring);
        let msgs: Vec<Message> = gone.into_iter().map(|u| u.msg).collect();
        assert_eq!(msgs, vec![election(1), election(3)]);
        assert_eq!(unacked_to(&l, 5), 1, "the other group's message stays");
        assert_eq!(unacked_to(&l, 4), 1);
        assert_eq!(l.stats.delivery_failures, 2);
        assert!(l.abandon(5, AlgorithmKind::Ring).is_empty());
        // Nothing abandoned is retransmitted.
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        l.on_timeout(Duration::from_secs(1), &mut tx, &mut failed);
        assert!(tx
            .iter()
            .all(|(_, d)| d.body != Some(election(1)) && d.body != Some(election(3))));
    }

    #[test]
    fn in_order_and_out_of_order_deliveries_and_duplicates() {
        let mut a = Link::new(1, 1, LinkConfig::default());
        let mut b = Link::new(2, 1, LinkConfig::default());
        let t = Duration::ZERO;
        let d1 = a.send(t, 2, AlgorithmKind::Bully, election(1));
        let d2 = a.send(t, 2, AlgorithmKind::Bully, election(2));
        let d3 = a.send(t, 2, AlgorithmKind::Bully, election(3));
        assert_eq!(b.receive(t, &d2).0, Inbound::Deliver);
        assert_eq!(b.receive(t, &d1).0, Inbound::Deliver);
        assert_eq!(b.receive(t, &d2).0, Inbound::Duplicate);
        assert_eq!(b.receive(t, &d3).0, Inbound::Deliver);
        assert_eq!(b.receive(t, &d3).0, Inbound::Duplicate);
        assert_eq!(b.receive(t, &d1).0, Inbound::Duplicate);
        assert_eq!(b.stats.duplicates_dropped, 3);
    }

    fn ack_from(peer: NodeId, seq: u64) -> Datagram {
        Datagram {
            from: peer,
            incarnation: 1,
            seq: 0,
            ack: seq,
            group: None,
            body: None,
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// RFC 6298 §2: the first sample R gives SRTT = R, RTTVAR = R/2; the next one
    /// R' gives RTTVAR = ¾·RTTVAR + ¼·|SRTT − R'|, SRTT = ⅞·SRTT + ⅛·R'; RTO =
    /// SRTT + 4·RTTVAR within the floor and the ceiling.
    #[test]
    fn the_rto_follows_measured_round_trips() {
        let cfg = LinkConfig {
            retransmit: ms(50),
            rto_min: ms(1),
            rto_max: ms(500),
            give_up: ms(900),
            max_attempts: None,
        };
        let mut l = Link::new(1, 1, cfg.clone());
        assert_eq!(l.rto(2), cfg.retransmit, "no sample yet");
        let d = l.send(ms(0), 2, AlgorithmKind::Bully, election(1));
        l.receive(ms(8), &ack_from(2, d.seq));
        let (srtt, var) = (ms(8), ms(4));
        assert_eq!(l.rto(2), srtt + var * 4);
        let d = l.send(ms(100), 2, AlgorithmKind::Bully, election(2));
        l.receive(ms(100 + 16), &ack_from(2, d.seq));
        let r = ms(16);
        let var = (var * 3 + srtt.abs_diff(r)) / 4;
        let srtt = (srtt * 7 + r) / 8;
        assert_eq!(l.rto(2), srtt + var * 4);
        // Floor and ceiling.
        let mut fast = Link::new(
            1,
            1,
            LinkConfig {
                rto_min: ms(5),
                ..cfg.clone()
            },
        );
        let d = fast.send(ms(0), 2, AlgorithmKind::Bully, election(1));
        fast.receive(ms(0), &ack_from(2, d.seq));
        assert_eq!(fast.rto(2), ms(5));
        let d = l.send(ms(200), 3, AlgorithmKind::Bully, election(1));
        l.receive(ms(200 + 400), &ack_from(3, d.seq));
        assert_eq!(l.rto(3), cfg.rto_max);
    }

    /// Karn's rule and backoff: a retransmitted message gives no sample, every
    /// retransmission timeout doubles the peer's RTO (for new messages too) and only a
    /// fresh sample from a message sent once brings it back.
    #[test]
    fn karn_rule_and_backoff_kept_until_a_fresh_sample() {
        let cfg = LinkConfig {
            retransmit: ms(10),
            rto_min: ms(10),
            rto_max: ms(80),
            give_up: ms(1000),
            max_attempts: None,
        };
        let mut l = Link::new(1, 1, cfg.clone());
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        let d = l.send(ms(0), 2, AlgorithmKind::Bully, election(1));
        let mut now = ms(0);
        let mut sends = vec![now];
        for _ in 0..5 {
            now = l.next_deadline().unwrap();
            l.on_timeout(now, &mut tx, &mut failed);
            sends.push(now);
        }
        let gaps: Vec<u64> = sends
            .windows(2)
            .map(|w| (w[1] - w[0]).as_millis() as u64)
            .collect();
        assert_eq!(gaps, vec![10, 20, 40, 80, 80], "doubling up to the ceiling");
        assert_eq!(l.stats.retransmissions, 5);
        assert_eq!(l.rto(2), cfg.rto_max, "backed off for new messages too");
        // The late ack of the retransmitted message: no sample (Karn), RTO stays.
        l.receive(now + ms(1), &ack_from(2, d.seq));
        assert_eq!(l.rto(2), cfg.rto_max);
        // A message sent once and acked: a fresh sample resets the backoff.
        let d = l.send(now + ms(2), 2, AlgorithmKind::Bully, election(2));
        l.receive(now + ms(4), &ack_from(2, d.seq));
        assert_eq!(l.rto(2), cfg.rto_min);
        assert!(failed.is_empty());
    }

    /// A fan-out's acks restart the timers of the rest of its flight (RFC 6298 §5.3):
    /// receivers acking one after another, each within an RTO of the previous ack, get
    /// nothing twice; a receiver that never acks gets its copy again one RTO after the
    /// flight's last ack, and gives up at the usual time; a lone message is untouched.
    #[test]
    fn acks_of_a_fan_out_restart_the_timers_of_the_rest() {
        let cfg = LinkConfig {
            retransmit: ms(5),
            rto_min: ms(5),
            rto_max: ms(40),
            give_up: ms(75),
            max_attempts: None,
        };
        let mut l = Link::new(1, 1, cfg.clone());
        let peers: Vec<NodeId> = (2..=9).collect();
        let seqs: Vec<u64> = peers
            .iter()
            .map(|&p| l.send(ms(0), p, AlgorithmKind::Bully, election(1)).seq)
            .collect();
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        // Peers 2..=8 ack 4 ms apart (each past the 5 ms RTO of the send); 9 never does.
        for (i, (&peer, &seq)) in peers.iter().zip(&seqs).take(7).enumerate() {
            let at = ms(4 * (i as u64 + 1));
            while l.next_deadline().is_some_and(|d| d < at) {
                let d = l.next_deadline().unwrap();
                l.on_timeout(d, &mut tx, &mut failed);
            }
            l.receive(at, &ack_from(peer, seq));
        }
        assert_eq!(l.stats.retransmissions, 0, "{tx:?}");
        // Peer 9: again one RTO after the last ack (28 ms), then backed off, then given up.
        let (last_ack, rto) = (ms(28), l.rto(9));
        let mut first_retry = None;
        let mut now = ms(28);
        for _ in 0..20 {
            let Some(d) = l.next_deadline() else { break };
            now = d;
            l.on_timeout(now, &mut tx, &mut failed);
            if !tx.is_empty() && first_retry.is_none() {
                first_retry = Some(now);
            }
        }
        assert_eq!(first_retry, Some(last_ack + rto));
        assert_eq!(tx.len() as u64, l.stats.retransmissions);
        assert!(tx.iter().all(|(p, _)| *p == 9), "{tx:?}");
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].peer, 9);
        assert_eq!(now, cfg.give_up, "given up at the usual time");
        // A flight whose acks trickle in for longer than the RTO ceiling: what is not
        // acked by then goes again at the ceiling after the send, not later.
        let mut big = Link::new(1, 1, cfg.clone());
        let peers: Vec<NodeId> = (2..=21).collect();
        let seqs: Vec<u64> = peers
            .iter()
            .map(|&p| big.send(ms(0), p, AlgorithmKind::Bully, election(1)).seq)
            .collect();
        let mut first_retry = None;
        for (i, (&peer, &seq)) in peers.iter().zip(&seqs).take(19).enumerate() {
            let at = ms(4 * (i as u64 + 1));
            while let Some(d) = big.next_deadline().filter(|&d| d < at) {
                let mut sent = Vec::new();
                big.on_timeout(d, &mut sent, &mut failed);
                if !sent.is_empty() && first_retry.is_none() {
                    first_retry = Some(d);
                }
            }
            big.receive(at, &ack_from(peer, seq));
        }
        assert_eq!(first_retry, Some(cfg.rto_max));
        // A lone message: its RTO after the send, as before.
        let mut lone = Link::new(1, 1, cfg.clone());
        lone.send(ms(100), 2, AlgorithmKind::Bully, election(1));
        assert_eq!(lone.next_deadline(), Some(ms(100) + cfg.retransmit));
    }

    /// The verdict is a time: a message unacked for `give_up` is undeliverable, however
    /// many sends that took, and not before.
    #[test]
    fn give_up_is_a_time_not_a_count() {
        for rto_max in [ms(10), ms(40)] {
            let cfg = LinkConfig {
                retransmit: ms(5),
                rto_min: ms(5),
                rto_max,
                give_up: ms(150),
                max_attempts: None,
            };
            let mut l = Link::new(1, 1, cfg.clone());
            l.send(ms(3), 2, AlgorithmKind::Bully, election(1));
            let (mut tx, mut failed) = (Vec::new(), Vec::new());
            let mut verdict = None;
            while let Some(at) = l.next_deadline() {
                l.on_timeout(at, &mut tx, &mut failed);
                if !failed.is_empty() {
                    verdict = Some(at);
                }
            }
            assert_eq!(verdict, Some(ms(3) + cfg.give_up), "{rto_max:?}");
            assert_eq!(l.stats.delivery_failures, 1);
        }
        // A legacy cap on sends still ends it earlier.
        let mut l = Link::new(
            1,
            1,
            LinkConfig {
                max_attempts: Some(2),
                ..LinkConfig::default()
            },
        );
        l.send(ms(0), 2, AlgorithmKind::Bully, election(1));
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        while let Some(at) = l.next_deadline() {
            l.on_timeout(at, &mut tx, &mut failed);
        }
        assert_eq!((tx.len(), failed.len()), (1, 1));
    }

    /// Failures to a peer the failure detector declared lost are counted apart from
    /// failures to peers believed alive, until the lost peer is heard from again.
    #[test]
    fn failures_to_a_lost_peer_are_counted_apart() {
        let cfg = LinkConfig {
            give_up: ms(50),
            ..LinkConfig::default()
        };
        let mut l = Link::new(1, 1, cfg);
        let drain = |l: &mut Link| {
            let (mut tx, mut failed) = (Vec::new(), Vec::new());
            while let Some(at) = l.next_deadline() {
                l.on_timeout(at, &mut tx, &mut failed);
            }
            failed.len() as u64
        };
        // Peer 3 (the crashed leader) is declared lost with one message in flight.
        l.send(ms(0), 3, AlgorithmKind::Bully, election(1));
        assert_eq!(l.abandon(3, AlgorithmKind::Bully).len(), 1);
        // Later messages to it and one to the live peer 2 run out of time.
        l.send(ms(1), 3, AlgorithmKind::Bully, election(2));
        l.send(ms(1), 3, AlgorithmKind::Bully, election(3));
        l.send(ms(1), 2, AlgorithmKind::Bully, election(2));
        assert_eq!(drain(&mut l), 3);
        assert_eq!(l.stats.delivery_failures, 4);
        assert_eq!(l.stats.delivery_failures_to_lost, 3, "all but the one to 2");
        // Peer 3 is back: a failure to it now is a failure to a live peer.
        let mut hello = reliable(3, 1);
        hello.group = Some(AlgorithmKind::Bully);
        l.receive(ms(200), &hello);
        l.send(ms(201), 3, AlgorithmKind::Bully, election(4));
        assert_eq!(drain(&mut l), 1);
        assert_eq!(
            (l.stats.delivery_failures, l.stats.delivery_failures_to_lost),
            (5, 3)
        );
    }
}
