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
//! RTO after the send — but no later than the flight's ceiling after the send
//! (`max(rto_max, give_up / 2)`, within `give_up`), so that a message lost in a large
//! flight is not left waiting while the other acks trickle in. A flight to 128
//! (`LARGE_FLIGHT`) peers or more waits for its first ack
//! until that ceiling: its receivers answer one after another, and on a host shared by
//! hundreds of processes the first answer can come long after one round trip.
//!
//! Fan-ins: the other side of a flight. Raft's vote and pre-vote replies
//! ([`MessageType::is_fan_in_reply`](crate::contract::message::MessageType::is_fan_in_reply))
//! all reach their candidate at once, and it acks them one after another. On a roster
//! of 16 (`FAN_IN`) members or more such a reply, like a large flight, waits for the
//! ceiling before its first retransmission: the candidate needs a majority of them
//! only, and does without a late one (it campaigns again at its next timeout).
//!
//! Held messages: the daemon holds a claim's datagrams until the state file has it
//! ([`Link::held`]); their clocks start when they leave ([`Link::departed`]), so none
//! is copied before its first copy is on the wire.
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
//!
//! No single datagram cuts a peer off (docs/security.md, "One datagram"). A higher
//! incarnation is heard at once (a restart costs nothing), but the incarnation it
//! displaces is kept as a *rival*, with its receive state (floor, out-of-order
//! sequences, broadcast sequences), in a side table while it is
//! pending (at most two per peer; a third drops the lowest): if a rival then talks
//! twice in a row (no datagram of the current one in between; its first datagram is
//! not delivered nor acked), it is taken back where it was and the current one (and
//! any other rival) forgotten — the current one was forged, and is silent. The rivals
//! are forgotten once the current incarnation is heard twice in a row after the
//! datagram that made it current (two forged ones do not push the real one out). A lower
//! incarnation is stale unless it is a rival, or the current one was heard once only
//! (the first datagram ever heard from a peer may be the forged one: the lower one
//! then becomes the rival), or it is above a pending rival (a peer that restarted just
//! before a forged datagram came: its real new life becomes a rival of its own).
//!
//! The parts, one job each: [`Link`] and what it reports are here; the two directions
//! of a datagram in `protocol.rs`, retransmission and the verdicts in `retransmit.rs`,
//! the RFC 6298 estimator in `rtt.rs`, the incarnation and rival rules in
//! `incarnation.rs`, duplicate windows in `window.rs`, and the packed storage in
//! `peers.rs` (the per-peer table) and `slab.rs` (the messages awaiting their ack).

mod incarnation;
mod peers;
mod protocol;
mod retransmit;
pub(crate) mod rivals;
mod rtt;
mod slab;
mod window;

use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::Message;
use crate::node::fxhash::FxHashMap;
use crate::NodeId;
use incarnation::Rivals;
use peers::{PeerIndex, Peers, Wide};
use slab::{Due, Kept, Slot, NIL};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::time::Duration;
use window::Window;

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

/// What the link decided about an incoming datagram.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Inbound {
    /// Hand the body to its group.
    Deliver,
    /// Already delivered once (acked again, body dropped).
    Duplicate,
    /// From an earlier incarnation of the peer: dropped.
    Stale,
    /// From an incarnation of the peer not (yet) taken back: dropped, unacknowledged.
    Provisional,
    /// A pure ack (or a datagram without body): nothing to deliver.
    Nothing,
}

/// The top bit of a sequence number marks the sender-wide broadcast space (see the
/// module documentation); per-peer sequences never reach it.
pub(crate) const BROADCAST_SEQ: u64 = 1 << 63;

/// The reliable link of one node to all its peers (see the module documentation):
/// sequences, acks, retransmission timers and the duplicate windows.
#[derive(Debug)]
pub(crate) struct Link {
    me: NodeId,
    incarnation: u64,
    cfg: LinkConfig,
    index: PeerIndex,
    /// The roster's size (for the fan-in rule, [`retransmit`]).
    members: u32,
    /// Per peer, by [`PeerIndex`] position.
    peers: Peers,
    /// Last broadcast sequence used (without the [`BROADCAST_SEQ`] bit).
    next_broadcast: u64,
    /// Messages awaiting their ack (the per-peer lists of [`Peer::tail`]).
    slots: Vec<Slot>,
    /// Their messages.
    kept: Kept,
    /// First free slot (the free slots are linked through `next`), or [`NIL`].
    free: u32,
    /// Messages awaiting their ack.
    pending: usize,
    /// Retransmission deadlines (16 bytes an entry: one entry per message in
    /// flight), earliest first.
    retx: BinaryHeap<Reverse<Due>>,
    /// An entry of `retx` known to be a message still pending (checked once, not at
    /// every [`Link::next_deadline`]: the driver asks after every input).
    live_top: Option<Due>,
    /// Out-of-order deliveries per peer position (rare: only a peer with
    /// [`HAS_ABOVE`] has an entry).
    #[allow(clippy::box_collection)] // moved to and from an `Above` as it is
    above: FxHashMap<u32, Box<BTreeSet<u64>>>,
    /// Sequence counter and receive floor of the peers past 32 bits (flag [`WIDE`]).
    wide: FxHashMap<u32, Wide>,
    /// Incarnations past 32 bits (flag [`WIDE_INCARNATION`]), by peer position.
    wide_incarnation: FxHashMap<u32, u64>,
    /// The rival incarnations of a peer, by position, while one is pending.
    rivals: FxHashMap<u32, Rivals>,
    /// Per sender, the broadcast sequences delivered (incarnation kept in `peers`).
    inbound_broadcast: FxHashMap<NodeId, Window>,
    /// The latest flights (messages first sent at one instant, a fan-out): their size,
    /// and when an ack of each last came back.
    flights: [Flight; FLIGHTS],
    /// What the link has done so far (exported as metrics).
    pub(crate) stats: LinkStats,
}

/// Flights whose acks restart the timers of the rest (see [`Link::on_timeout`]).
const FLIGHTS: usize = 4;

/// Messages first sent at one instant (a fan-out), as nanoseconds of [`Time`].
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Flight {
    pub(super) first_sent: u64,
    /// When an ack of one of them last came back (0: none yet).
    pub(super) last_ack: u64,
    /// How many were sent (0: not known, the flight was met through an ack only).
    pub(super) size: u32,
}

impl Flight {
    /// An entry in use (not the empty one the table starts with).
    pub(super) fn known(&self) -> bool {
        self.size != 0 || self.last_ack != 0
    }
}

/// Counters of the link (acks and retransmissions are counted apart from messages).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct LinkStats {
    /// Every datagram built: first sends, acks and retransmissions.
    pub(crate) datagrams_sent: u64,
    /// Acks sent for reliable datagrams received (duplicates are acked again).
    pub(crate) acks_sent: u64,
    /// Reliable messages sent again after their retransmission timeout.
    pub(crate) retransmissions: u64,
    /// Messages given up on (unacknowledged for `give_up`): peer unreachable.
    pub(crate) delivery_failures: u64,
    /// The part of `delivery_failures` addressed to a peer the failure detector had
    /// declared lost (a crashed leader): expected, unlike a failure to a live peer.
    pub(crate) delivery_failures_to_lost: u64,
    /// Reliable datagrams received again and dropped (their ack was resent).
    pub(crate) duplicates_dropped: u64,
    /// Datagrams of a peer's previous life (lower incarnation), dropped.
    pub(crate) stale_dropped: u64,
    /// Datagrams of a rival incarnation not (yet) taken back, dropped (see the module
    /// documentation): the first ones of a real incarnation after a forged one, or a
    /// late one of a restarted peer's previous life.
    pub(crate) provisional_dropped: u64,
    /// Changes of a peer's incarnation once it had one: restarts, and re-adoptions of
    /// an incarnation a forged datagram had displaced.
    pub(crate) incarnation_changes: u64,
}

/// A message the link gave up on.
#[derive(Debug)]
pub(crate) struct Undeliverable {
    /// The peer that did not acknowledge.
    pub(crate) peer: NodeId,
    /// The group that sent the message.
    pub group: AlgorithmKind,
    /// The message, for the group to handle the failure.
    pub msg: Message,
}

impl Link {
    /// The link of node `me` in its boot `incarnation` to the members of `roster`
    /// (any other peer gets its state when first met), with no peer heard from yet.
    pub(crate) fn new(me: NodeId, incarnation: u64, roster: &[NodeId], cfg: LinkConfig) -> Self {
        Link {
            me,
            incarnation,
            cfg,
            index: PeerIndex::new(roster),
            members: u32::try_from(roster.len()).unwrap_or(u32::MAX),
            peers: Peers::default(),
            next_broadcast: 0,
            slots: Vec::new(),
            kept: Kept::new(),
            free: NIL,
            pending: 0,
            retx: BinaryHeap::new(),
            live_top: None,
            above: FxHashMap::default(),
            wide: FxHashMap::default(),
            wide_incarnation: FxHashMap::default(),
            rivals: FxHashMap::default(),
            inbound_broadcast: FxHashMap::default(),
            flights: [Flight::default(); FLIGHTS],
            stats: LinkStats::default(),
        }
    }
}

/// What the tests of the link's parts share.
#[cfg(test)]
mod testing {
    use super::*;
    pub(super) use crate::node::Datagram;
    pub(super) use std::time::Duration;

    /// The roster of the tests' links; peer 5 is not on it (the link keeps state for
    /// any peer it meets, roster or not).
    pub(super) const ROSTER: &[NodeId] = &[1, 2, 3, 4];

    pub(super) fn reliable(from: NodeId, seq: u64) -> Datagram {
        Datagram {
            from,
            incarnation: 1,
            seq,
            ack: 0,
            group: Some(AlgorithmKind::Bully),
            body: Some(Message::Resign { epoch: 1 }),
        }
    }

    pub(super) fn unacked_to(l: &Link, peer: NodeId) -> usize {
        l.index
            .find(peer)
            .map_or(0, |i| l.pending_seqs(i, None).len())
    }

    pub(super) fn election(seq: u64) -> Message {
        Message::Election {
            tag: crate::contract::message::ElectionTag { initiator: 1, seq },
            epoch: 0,
        }
    }

    pub(super) fn ack_from(peer: NodeId, seq: u64) -> Datagram {
        Datagram {
            from: peer,
            incarnation: 1,
            seq: 0,
            ack: seq,
            group: None,
            body: None,
        }
    }

    pub(super) fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }
}
