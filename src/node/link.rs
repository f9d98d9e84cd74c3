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
//!
//! No single datagram cuts a peer off (docs/security.md, "One datagram"). A higher
//! incarnation is heard at once (a restart costs nothing), but the incarnation it
//! displaces is kept as a *rival*, with its receive floor, in a side table while it is
//! pending: if the displaced incarnation then talks twice in a row (no datagram of the
//! new one in between; its first datagram is not delivered nor acked), it is taken
//! back where it was and the new one forgotten — the new one was forged, and is
//! silent. The rival is forgotten once the new incarnation is heard twice in a row.
//! While a rival is pending, a further higher incarnation replaces the current one but
//! not the rival. A lower incarnation is stale unless it is the rival, or the current
//! one was heard once only (the first datagram ever heard from a peer may be the
//! forged one: the lower one then becomes the rival).

use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::Message;
use crate::node::fxhash::FxHashMap;
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

/// Round-trip estimate of one peer (RFC 6298), as computed: the smoothed round trip
/// and its variation in nanoseconds, computed as [`Duration`]s so the arithmetic is
/// exactly the one on durations. Stored flat in [`Peer`].
#[derive(Clone, Copy, Debug, Default)]
struct Rtt {
    srtt_ns: u64,
    var_ns: u64,
    /// Doublings of the RTO since the last valid sample.
    backoff: u8,
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

/// Slabs and heaps larger than this are freed once empty (after a burst) rather
/// than kept.
const KEEP_SLOTS: usize = 64;

/// No slot (the end of a pending list, or a peer with nothing pending).
const NIL: u32 = u32::MAX;

/// Flags of [`Peer`].
const SAMPLED: u8 = 1;
const GIVEN_UP: u8 = 2;
const LOST: u8 = 4;
/// Out-of-order deliveries above the floor are kept in [`Link::above`].
const HAS_ABOVE: u8 = 8;
/// The sequence counter and receive floor are in [`Link::wide`].
const WIDE: u8 = 16;
/// The incarnation is in [`Link::wide_incarnation`].
const WIDE_INCARNATION: u8 = 32;
/// The current incarnation was heard once only (the first datagram of the peer): a
/// lower one may still become its rival (see the module documentation).
const UNCONFIRMED: u8 = 64;

/// The incarnation of a peer that a higher one displaced (or, after a first datagram,
/// a lower one), while it may still be taken back (see the module documentation): in
/// [`Link::rivals`], absent otherwise.
#[derive(Clone, Copy, Debug)]
struct Rival {
    incarnation: u64,
    /// The receive floor kept for it (0 for one never adopted).
    floor: u64,
    /// Its datagrams since the current incarnation's last one.
    run: u8,
    /// The current incarnation's datagrams since the rival's last one.
    current_run: u8,
}

/// Datagrams in a row that take a rival incarnation back, or confirm the current one
/// against it.
const IN_A_ROW: u8 = 2;

/// Everything the link keeps about one peer, in one array ([`Peers`]) indexed by the
/// peer's position in the roster: 28 bytes per peer dealt with (a Bully election on N
/// simulated nodes deals with N² pairs). Hash maps per field took about five times
/// that (keys, half-empty tables grown to powers of two).
///
/// The sequence counter and the receive floor are 32-bit here; a peer whose sequences
/// pass `u32::MAX` either way (four billion messages, or a hostile sequence number)
/// moves both to [`Link::wide`] (flag [`WIDE`]) and carries on with 64-bit ones: no
/// sequence is reused and nothing wraps. Likewise the peer's incarnation: one above
/// `u32::MAX` (the daemon's are boot times in microseconds) is kept whole in
/// [`Link::wide_incarnation`] (flag [`WIDE_INCARNATION`]); the simulator's small ones
/// stay here. The round-trip estimate is kept in 32-bit
/// nanoseconds, saturating at 4.29 s (an RTO above that is clamped to the ceiling
/// unless `rto_max` is set above it).
#[derive(Clone, Copy, Debug)]
struct Peer {
    /// The peer's incarnation as last heard (unless [`WIDE_INCARNATION`]).
    in_incarnation: u32,
    /// Last sequence sent to the peer (unless [`WIDE`]).
    next_seq: u32,
    /// Every sequence ≤ this from the peer has been delivered (unless [`WIDE`]).
    in_floor: u32,
    srtt_ns: u32,
    var_ns: u32,
    /// The newest message pending to the peer (its `next` is the oldest), or [`NIL`].
    tail: u32,
    backoff: u8,
    flags: u8,
}

const _: () = assert!(size_of::<Peer>() == 28);

/// A peer nothing was sent to or heard from.
static UNTOUCHED: Peer = Peer {
    in_incarnation: 0,
    next_seq: 0,
    in_floor: 0,
    srtt_ns: 0,
    var_ns: 0,
    tail: NIL,
    backoff: 0,
    flags: 0,
};

/// The 64-bit sequence counter and receive floor of a [`WIDE`] peer.
#[derive(Clone, Copy, Debug, Default)]
struct Wide {
    next_seq: u64,
    in_floor: u64,
}

/// Peers per page of [`Peers`].
const PAGE: usize = 32;

/// The per-peer array, in pages of [`PAGE`] peers allocated when one of them is first
/// written: a node that only ever deals with a few peers (its ring neighbours, its
/// leader) does not pay for the whole roster, one that deals with all of them (a
/// Bully election) pays 8 bytes per page on top. Reading an untouched peer gives
/// [`UNTOUCHED`].
#[derive(Debug, Default)]
struct Peers {
    pages: Vec<Option<Box<[Peer; PAGE]>>>,
}

impl std::ops::Index<usize> for Peers {
    type Output = Peer;
    fn index(&self, i: usize) -> &Peer {
        match self.pages.get(i / PAGE) {
            Some(Some(page)) => &page[i % PAGE],
            _ => &UNTOUCHED,
        }
    }
}

impl std::ops::IndexMut<usize> for Peers {
    fn index_mut(&mut self, i: usize) -> &mut Peer {
        if self.pages.len() <= i / PAGE {
            self.pages.resize_with(i / PAGE + 1, || None);
        }
        let page = self.pages[i / PAGE].get_or_insert_with(|| Box::new([UNTOUCHED; PAGE]));
        &mut page[i % PAGE]
    }
}

impl Peer {
    fn rtt(&self) -> Rtt {
        Rtt {
            srtt_ns: u64::from(self.srtt_ns),
            var_ns: u64::from(self.var_ns),
            backoff: self.backoff,
            sampled: self.flags & SAMPLED != 0,
        }
    }
    fn set_rtt(&mut self, r: Rtt) {
        // Saturating: 4.29 s is above any RTO ceiling but a deliberately huge one.
        self.srtt_ns = u32::try_from(r.srtt_ns).unwrap_or(u32::MAX);
        self.var_ns = u32::try_from(r.var_ns).unwrap_or(u32::MAX);
        self.backoff = r.backoff;
        self.set(SAMPLED, r.sampled);
    }
    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    fn set(&mut self, flag: u8, on: bool) {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
    }
}

/// A message awaiting its ack, in the slab of [`Link::slots`]; the messages pending
/// to one peer form a circular list in sending order through `next` (acks mostly come
/// in that order, so the one acked is found at the head). 24 bytes: the sequence is
/// kept as its [`SeqKey`] (the full one is the only one of the peer's pending
/// sequences with those low bits, see [`Link::full_seq`]).
#[derive(Debug)]
struct Slot {
    /// Nanoseconds of [`Time`] (see [`heap_ns`]).
    first_sent_ns: u64,
    /// The low 32 bits of the sequence.
    seq: u32,
    /// The message, in [`Link::kept`]; [`NIL`]: the slot is free (and `next` links
    /// the free list).
    msg: u32,
    next: u32,
    /// Sends so far, the first one included (saturating: `give_up` ends the retries
    /// long before 65535 of them at any RTO floor above 12 µs).
    attempts: u16,
    group: AlgorithmKind,
    /// A broadcast sequence ([`BROADCAST_SEQ`]).
    broadcast: bool,
}

const _: () = assert!(size_of::<Slot>() == 24);

/// A pending sequence as the link keeps it: the broadcast bit at bit 32, the low 32
/// bits of the sequence below it. Two sequences pending to one peer never share a
/// key (that would take four billion messages in flight to it).
type SeqKey = u64;

fn seq_key(seq: u64) -> SeqKey {
    (u64::from(seq & BROADCAST_SEQ != 0) << 32) | (seq & u64::from(u32::MAX))
}

/// The full sequence of the `key` pending below or at the last sequence sent `last`
/// in its space (the newest one with those low bits), if there is one.
fn unkey(last: u64, key: SeqKey) -> Option<u64> {
    let lo = key as u32;
    last.checked_sub(u64::from((last as u32).wrapping_sub(lo)))
}

/// The messages of the pending slots, each kept once however many peers it went to
/// in a row (a Bully ELECTION to every higher member, a COORDINATOR to all): a slot
/// holds 4 bytes of it instead of 40.
#[derive(Debug)]
struct Kept {
    entries: Vec<KeptMsg>,
    /// First free entry (linked through `next_free`), or [`NIL`].
    free: u32,
    /// The entry kept last, shared by the next send if it is the same message.
    last: u32,
}

#[derive(Debug)]
struct KeptMsg {
    msg: Option<Message>,
    /// Slots holding it.
    refs: u32,
    next_free: u32,
}

impl Kept {
    fn new() -> Self {
        Kept {
            entries: Vec::new(),
            free: NIL,
            last: NIL,
        }
    }

    /// Keep `msg` for one more slot.
    fn keep(&mut self, msg: Message) -> u32 {
        if let Some(e) = self.entries.get_mut(self.last as usize) {
            if e.msg.as_ref() == Some(&msg) {
                e.refs += 1;
                return self.last;
            }
        }
        let e = KeptMsg {
            msg: Some(msg),
            refs: 1,
            next_free: NIL,
        };
        let k = if self.free != NIL {
            let k = self.free;
            self.free = self.entries[k as usize].next_free;
            self.entries[k as usize] = e;
            k
        } else {
            self.entries.push(e);
            (self.entries.len() - 1) as u32
        };
        self.last = k;
        k
    }

    fn get(&self, k: u32) -> Option<&Message> {
        self.entries.get(k as usize)?.msg.as_ref()
    }

    /// One slot lets go of entry `k`: its message (the last slot's is moved out).
    fn release(&mut self, k: u32) -> Option<Message> {
        let e = self.entries.get_mut(k as usize)?;
        if e.refs > 1 {
            e.refs -= 1;
            return e.msg.clone();
        }
        e.refs = 0;
        let msg = e.msg.take();
        e.next_free = self.free;
        self.free = k;
        if self.last == k {
            self.last = NIL;
        }
        msg
    }
}

impl Slot {
    fn first_sent(&self) -> Time {
        Duration::from_nanos(self.first_sent_ns)
    }
    fn key(&self) -> SeqKey {
        (u64::from(self.broadcast) << 32) | u64::from(self.seq)
    }
}

/// A retransmission deadline in nanoseconds of [`Time`] and what is due then: the
/// peer's position (bits 33 and up) and the [`SeqKey`] (16 bytes an entry, one per
/// message in flight). Ordered by deadline, then position (for roster members the
/// order of their ids), then sequence. Positions take 31 bits: a link meets fewer
/// than two billion distinct peers (each costs it a map entry besides).
type Due = (u64, u64);

fn due(at: u64, i: usize, key: SeqKey) -> Due {
    (at, ((i as u64) << 33) | key)
}

/// The peer position and sequence key of a [`Due`] entry.
fn undue(d: Due) -> (usize, SeqKey) {
    ((d.1 >> 33) as usize, d.1 & ((1 << 33) - 1))
}

/// A message handed back by [`Link::take_pending`].
struct Pending {
    group: AlgorithmKind,
    msg: Message,
    attempts: u32,
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
    /// From an incarnation of the peer not (yet) taken back: dropped, unacknowledged.
    Provisional,
    /// A pure ack (or a datagram without body): nothing to deliver.
    Nothing,
}

/// Delivered sequences above a floor (out-of-order arrivals); boxed and absent when
/// empty (the common case).
#[allow(clippy::box_collection)] // the point: 8 bytes where it is absent
type Above = Option<Box<BTreeSet<u64>>>;

/// A broadcast window: the sequences of a sender's broadcast space delivered.
#[derive(Debug, Default)]
struct Window {
    /// Every sequence ≤ floor has been delivered.
    floor: u64,
    above: Above,
}

const MAX_OUT_OF_ORDER: usize = 4096;

/// Record `seq` as delivered in the window (`floor`, `above`): false if it was
/// already. Sequences are chosen by the peer: no arithmetic here may overflow,
/// whatever they are.
fn accept(floor: &mut u64, above: &mut Above, seq: u64) -> bool {
    if seq <= *floor {
        return false;
    }
    if floor.checked_add(1) == Some(seq) {
        // In order (the common case): no out-of-order bookkeeping.
        *floor = seq;
    } else if !above.get_or_insert_with(Box::default).insert(seq) {
        return false;
    }
    advance(floor, above);
    if above.as_ref().map_or(0, |a| a.len()) > MAX_OUT_OF_ORDER {
        // Bounded memory: forget the oldest gap (a retransmission that old is moot).
        if let Some(lowest) = above.as_mut().and_then(|a| a.pop_first()) {
            *floor = lowest;
            advance(floor, above);
        }
    }
    if above.as_ref().is_some_and(|a| a.is_empty()) {
        *above = None;
    }
    true
}

/// Move the floor over every sequence delivered just above it.
fn advance(floor: &mut u64, above: &mut Above) {
    while let Some(next) = floor.checked_add(1) {
        if !above.as_mut().is_some_and(|a| a.remove(&next)) {
            break;
        }
        *floor = next;
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

/// Peer id → position in the per-peer arrays, mapped once: roster members by their
/// rank in the sorted roster (one subtraction where the ids are consecutive, the
/// usual 1..=N), any other id the link meets after them, in order of appearance.
#[derive(Debug, Default)]
struct PeerIndex {
    /// The ids `first .. first + run` have positions `0 .. run`.
    first: NodeId,
    run: u32,
    /// The other ids.
    rest: FxHashMap<NodeId, u32>,
    /// The other ids by position (from `run` on).
    rest_ids: Vec<NodeId>,
    len: u32,
}

impl PeerIndex {
    fn new(roster: &[NodeId]) -> Self {
        let mut ids = roster.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut ix = PeerIndex::default();
        let run = ids
            .iter()
            .zip(ids.first().copied().unwrap_or(0)..)
            .take_while(|(id, want)| *id == want)
            .count();
        ix.first = ids.first().copied().unwrap_or(0);
        ix.run = run as u32;
        ix.len = ix.run;
        for &id in &ids[run..] {
            ix.rest.insert(id, ix.len);
            ix.rest_ids.push(id);
            ix.len += 1;
        }
        ix
    }
    /// The id at position `i`.
    fn id(&self, i: usize) -> Option<NodeId> {
        match i.checked_sub(self.run as usize) {
            None => Some(self.first + i as NodeId),
            Some(r) => self.rest_ids.get(r).copied(),
        }
    }
    fn find(&self, id: NodeId) -> Option<usize> {
        match id.checked_sub(self.first) {
            Some(i) if i < self.run => Some(i as usize),
            _ => self.rest.get(&id).map(|&i| i as usize),
        }
    }
    /// The position of `id`, given one if it has none yet.
    fn find_or_add(&mut self, id: NodeId) -> usize {
        if let Some(i) = self.find(id) {
            return i;
        }
        self.rest.insert(id, self.len);
        self.rest_ids.push(id);
        self.len += 1;
        (self.len - 1) as usize
    }
}

/// The reliable link of one node to all its peers (see the module documentation):
/// sequences, acks, retransmission timers and the duplicate windows.
#[derive(Debug)]
pub struct Link {
    me: NodeId,
    incarnation: u64,
    cfg: LinkConfig,
    index: PeerIndex,
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
    /// The rival incarnation of a peer, by position, while one is pending.
    rivals: FxHashMap<u32, Rival>,
    /// Per sender, the broadcast sequences delivered (incarnation kept in `peers`).
    inbound_broadcast: FxHashMap<NodeId, Window>,
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
    /// Datagrams of a rival incarnation not (yet) taken back, dropped (see the module
    /// documentation): the first ones of a real incarnation after a forged one, or a
    /// late one of a restarted peer's previous life.
    pub provisional_dropped: u64,
    /// Changes of a peer's incarnation once it had one: restarts, and re-adoptions of
    /// an incarnation a forged datagram had displaced.
    pub incarnation_changes: u64,
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
    /// The link of node `me` in its boot `incarnation` to the members of `roster`
    /// (any other peer gets its state when first met), with no peer heard from yet.
    pub fn new(me: NodeId, incarnation: u64, roster: &[NodeId], cfg: LinkConfig) -> Self {
        Link {
            me,
            incarnation,
            cfg,
            index: PeerIndex::new(roster),
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
            flights: [(0, 0); FLIGHTS],
            stats: LinkStats::default(),
        }
    }

    /// The settings the link was built with.
    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// The position of `peer` in the per-peer arrays, added if new.
    fn position(&mut self, peer: NodeId) -> usize {
        self.index.find_or_add(peer)
    }

    /// The 64-bit state of the peer at position `i`, moved there if it was not yet.
    fn widen(&mut self, i: usize) -> &mut Wide {
        let peer = &mut self.peers[i];
        let narrow = Wide {
            next_seq: u64::from(peer.next_seq),
            in_floor: u64::from(peer.in_floor),
        };
        let was_wide = peer.has(WIDE);
        peer.set(WIDE, true);
        let w = self.wide.entry(i as u32).or_default();
        if !was_wide {
            *w = narrow;
        }
        w
    }

    /// The last sequence sent to the peer at position `i`.
    fn next_seq(&self, i: usize) -> u64 {
        let peer = &self.peers[i];
        if peer.has(WIDE) {
            self.wide.get(&(i as u32)).map_or(0, |w| w.next_seq)
        } else {
            u64::from(peer.next_seq)
        }
    }

    /// A new sequence for the peer at position `i`: one above the last, never reused.
    fn bump_seq(&mut self, i: usize) -> u64 {
        let peer = &mut self.peers[i];
        if !peer.has(WIDE) {
            if let Some(n) = peer.next_seq.checked_add(1) {
                peer.next_seq = n;
                return u64::from(n);
            }
        }
        let w = self.widen(i);
        // Per-peer sequences stay below the broadcast bit: 2⁶³ messages to one peer
        // are not sent in any lifetime.
        w.next_seq += 1;
        w.next_seq
    }

    /// The incarnation of the peer at position `i` as last heard.
    fn in_incarnation(&self, i: usize) -> u64 {
        let peer = &self.peers[i];
        if peer.has(WIDE_INCARNATION) {
            self.wide_incarnation.get(&(i as u32)).copied().unwrap_or(0)
        } else {
            u64::from(peer.in_incarnation)
        }
    }

    fn set_in_incarnation(&mut self, i: usize, incarnation: u64) {
        let peer = &mut self.peers[i];
        match u32::try_from(incarnation) {
            Ok(n) if !peer.has(WIDE_INCARNATION) => peer.in_incarnation = n,
            _ => {
                peer.set(WIDE_INCARNATION, true);
                self.wide_incarnation.insert(i as u32, incarnation);
            }
        }
    }

    /// Every sequence ≤ this from the peer at position `i` was delivered.
    fn in_floor(&self, i: usize) -> u64 {
        let peer = &self.peers[i];
        if peer.has(WIDE) {
            self.wide.get(&(i as u32)).map_or(0, |w| w.in_floor)
        } else {
            u64::from(peer.in_floor)
        }
    }

    fn set_in_floor(&mut self, i: usize, floor: u64) {
        let peer = &mut self.peers[i];
        if !peer.has(WIDE) {
            if let Ok(f) = u32::try_from(floor) {
                peer.in_floor = f;
                return;
            }
        }
        self.widen(i).in_floor = floor;
    }

    /// The retransmission timeout a new message to `peer` would get now.
    pub(crate) fn rto(&self, peer: NodeId) -> Duration {
        self.index
            .find(peer)
            .map(|i| self.peers[i].rtt())
            .unwrap_or_default()
            .rto(&self.cfg)
    }

    /// When a message first sent at `first_sent` and (re)sent `now` is due next: one
    /// RTO later, or at its give-up time if that comes first.
    fn next_try(&self, peer: NodeId, first_sent: Time, now: Time) -> Time {
        (now + self.rto(peer)).min(first_sent + self.cfg.give_up)
    }

    /// Keep `msg` until `seq` to the peer at position `i` is acked.
    fn add_pending(
        &mut self,
        i: usize,
        seq: u64,
        group: AlgorithmKind,
        msg: Message,
        first_sent_ns: u64,
    ) {
        let slot = Slot {
            first_sent_ns,
            seq: seq as u32,
            msg: self.kept.keep(msg),
            next: NIL,
            attempts: 1,
            group,
            broadcast: seq & BROADCAST_SEQ != 0,
        };
        let s = if self.free != NIL {
            let s = self.free;
            self.free = self.slots[s as usize].next;
            self.slots[s as usize] = slot;
            s
        } else {
            self.slots.push(slot);
            (self.slots.len() - 1) as u32
        };
        let tail = self.peers[i].tail;
        if tail == NIL {
            self.slots[s as usize].next = s;
        } else {
            self.slots[s as usize].next = self.slots[tail as usize].next;
            self.slots[tail as usize].next = s;
        }
        self.peers[i].tail = s;
        self.pending += 1;
    }

    /// The full sequence of the message pending to the peer at position `i` under
    /// `key`.
    fn full_seq(&self, i: usize, key: SeqKey) -> Option<u64> {
        if key >> 32 != 0 {
            unkey(self.next_broadcast, key).map(|s| BROADCAST_SEQ | s)
        } else {
            unkey(self.next_seq(i), key)
        }
    }

    /// The slot of the message `key` pending to the peer at position `i`, and the one
    /// before it in the peer's list.
    fn find_pending(&self, i: usize, key: SeqKey) -> Option<(u32, u32)> {
        let tail = self.peers[i].tail;
        if tail == NIL {
            return None;
        }
        let (mut prev, mut s) = (tail, self.slots[tail as usize].next);
        loop {
            if self.slots[s as usize].key() == key {
                return Some((prev, s));
            }
            if s == tail {
                return None;
            }
            prev = s;
            s = self.slots[s as usize].next;
        }
    }

    /// The slot of the message `seq` pending to `peer`, if it is.
    #[cfg(test)]
    fn pending_slot(&self, peer: NodeId, seq: u64) -> Option<u32> {
        let i = self.index.find(peer)?;
        self.find_pending(i, seq_key(seq)).map(|(_, s)| s)
    }

    /// Stop waiting for the ack of `key` to the peer at position `i`.
    fn take_pending(&mut self, i: usize, key: SeqKey) -> Option<Pending> {
        let (prev, s) = self.find_pending(i, key)?;
        self.live_top = None;
        let next = self.slots[s as usize].next;
        if prev == s {
            self.peers[i].tail = NIL;
        } else {
            self.slots[prev as usize].next = next;
            if self.peers[i].tail == s {
                self.peers[i].tail = prev;
            }
        }
        let slot = &mut self.slots[s as usize];
        let k = std::mem::replace(&mut slot.msg, NIL);
        let (group, attempts, first_sent_ns) = (slot.group, slot.attempts, slot.first_sent_ns);
        slot.next = self.free;
        self.free = s;
        self.pending -= 1;
        let msg = self.kept.release(k);
        if self.pending == 0 && self.slots.capacity() > KEEP_SLOTS {
            // Nothing in flight: give a burst's memory back.
            self.slots = Vec::new();
            self.kept = Kept::new();
            self.free = NIL;
        }
        Some(Pending {
            group,
            msg: msg?,
            attempts: u32::from(attempts),
            first_sent_ns,
        })
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
            let i = self.position(peer);
            // (A recipient listed twice keeps one entry, as a map keyed by it did.)
            if let Some((_, s)) = self.find_pending(i, seq_key(seq)) {
                let old = self.slots[s as usize].msg;
                self.kept.release(old);
                let k = self.kept.keep(msg.clone());
                let slot = &mut self.slots[s as usize];
                slot.msg = k;
                slot.group = group;
                slot.attempts = 1;
                slot.first_sent_ns = heap_ns(now);
            } else {
                self.add_pending(i, seq, group, msg.clone(), heap_ns(now));
            }
            let at = self.next_try(peer, now, now);
            self.retx.push(Reverse(due(heap_ns(at), i, seq_key(seq))));
        }
        self.datagram(seq, 0, Some(group), Some(msg))
    }

    /// Wrap `msg` for `to`; reliable types get a sequence number and a retransmission.
    pub fn send(&mut self, now: Time, to: NodeId, group: AlgorithmKind, msg: Message) -> Datagram {
        self.stats.datagrams_sent += 1;
        if !msg.kind().is_reliable() {
            return self.datagram(0, 0, Some(group), Some(msg));
        }
        let i = self.position(to);
        let seq = self.bump_seq(i);
        self.add_pending(i, seq, group, msg.clone(), heap_ns(now));
        let at = self.next_try(to, now, now);
        self.retx.push(Reverse(due(heap_ns(at), i, seq_key(seq))));
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
        let i = self.position(d.from);
        if let Some(refused) = self.incarnation_check(i, d.from, d.incarnation) {
            return (refused, None, false);
        }
        // Keys are the sequences' low bits: only the ack of the one sequence that can
        // be pending under its key matches (not one never sent, nor one four billion
        // sequences old).
        let key = seq_key(d.ack);
        if d.ack != 0 && self.full_seq(i, key) == Some(d.ack) {
            if let Some(p) = self.take_pending(i, key) {
                // Karn's rule: only a message sent once times a round trip.
                if p.attempts == 1 {
                    let mut rtt = self.peers[i].rtt();
                    rtt.sample(now.saturating_sub(p.first_sent()));
                    self.peers[i].set_rtt(rtt);
                }
                self.flight_acked(p.first_sent_ns, heap_ns(now));
            }
        }
        let peer = &mut self.peers[i];
        peer.set(LOST, false);
        let revived = peer.has(GIVEN_UP);
        peer.set(GIVEN_UP, false);
        let narrow = !peer.has(HAS_ABOVE) && !peer.has(WIDE);
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
        let fresh = if d.seq & BROADCAST_SEQ != 0 {
            let w = self.inbound_broadcast.entry(d.from).or_default();
            accept(&mut w.floor, &mut w.above, d.seq & !BROADCAST_SEQ)
        } else if narrow && u64::from(peer.in_floor) + 1 == d.seq && d.seq <= u64::from(u32::MAX) {
            // In order, nothing out of order kept (the common case).
            peer.in_floor = d.seq as u32;
            true
        } else {
            let mut above = if peer.has(HAS_ABOVE) {
                self.above.remove(&(i as u32))
            } else {
                None
            };
            let mut floor = self.in_floor(i);
            let fresh = accept(&mut floor, &mut above, d.seq);
            self.set_in_floor(i, floor);
            let peer = &mut self.peers[i];
            peer.set(HAS_ABOVE, above.is_some());
            if let Some(a) = above {
                self.above.insert(i as u32, a);
            }
            fresh
        };
        if !fresh {
            self.stats.duplicates_dropped += 1;
            return (Inbound::Duplicate, ack, revived);
        }
        (Inbound::Deliver, ack, revived)
    }

    /// Which incarnation of the peer at position `i` (`id`) is heard, given one more
    /// datagram of `incarnation` (the rule of the module documentation): `None` if
    /// the datagram is of the current incarnation (after any switch), else why it is
    /// dropped.
    fn incarnation_check(&mut self, i: usize, id: NodeId, incarnation: u64) -> Option<Inbound> {
        let heard = self.in_incarnation(i);
        let key = i as u32;
        if incarnation == heard {
            if self.peers[i].has(UNCONFIRMED) {
                self.peers[i].set(UNCONFIRMED, false);
            }
            if let Some(r) = self.rivals.get_mut(&key) {
                r.run = 0;
                r.current_run = r.current_run.saturating_add(1);
                if r.current_run >= IN_A_ROW {
                    self.rivals.remove(&key);
                }
            }
            return None;
        }
        if heard == 0 && !self.rivals.contains_key(&key) {
            // The first datagram of the peer: heard, but not yet confirmed.
            self.adopt(i, id, incarnation, 0);
            self.peers[i].set(UNCONFIRMED, true);
            return None;
        }
        let own_floor = self.in_floor(i);
        if let Some(r) = self.rivals.get_mut(&key) {
            if r.incarnation == incarnation {
                r.run = r.run.saturating_add(1);
                r.current_run = 0;
                if r.run < IN_A_ROW {
                    self.stats.provisional_dropped += 1;
                    return Some(Inbound::Provisional);
                }
                // Heard twice in a row while the current one was silent: taken back
                // where it was, and the one that displaced it forgotten.
                let floor = r.floor;
                self.rivals.remove(&key);
                self.stats.incarnation_changes += 1;
                self.adopt(i, id, incarnation, floor);
                return None;
            }
        }
        if incarnation > heard {
            // A restart (or a forged datagram): heard at once. The incarnation it
            // displaces is kept as the rival, unless one is kept already (the current
            // one was never confirmed against it).
            match self.rivals.get_mut(&key) {
                Some(r) => {
                    r.run = 0;
                    r.current_run = 0;
                }
                None => {
                    self.rivals.insert(
                        key,
                        Rival {
                            incarnation: heard,
                            floor: own_floor,
                            run: 0,
                            current_run: 0,
                        },
                    );
                }
            }
            self.peers[i].set(UNCONFIRMED, false);
            self.stats.incarnation_changes += 1;
            self.adopt(i, id, incarnation, 0);
            return None;
        }
        if self.peers[i].has(UNCONFIRMED) && !self.rivals.contains_key(&key) {
            // Lower than the first incarnation heard, which may have been forged.
            self.peers[i].set(UNCONFIRMED, false);
            self.rivals.insert(
                key,
                Rival {
                    incarnation,
                    floor: 0,
                    run: 1,
                    current_run: 0,
                },
            );
            self.stats.provisional_dropped += 1;
            return Some(Inbound::Provisional);
        }
        self.stats.stale_dropped += 1;
        Some(Inbound::Stale)
    }

    /// Hear `incarnation` of the peer at position `i` (`id`) from now on, its receive
    /// floor at `floor`.
    fn adopt(&mut self, i: usize, id: NodeId, incarnation: u64, floor: u64) {
        self.set_in_incarnation(i, incarnation);
        let peer = &mut self.peers[i];
        if peer.has(HAS_ABOVE) {
            peer.set(HAS_ABOVE, false);
            self.above.remove(&(i as u32));
        }
        self.set_in_floor(i, floor);
        self.inbound_broadcast.remove(&id);
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
        while let Some(&Reverse(top)) = self.retx.peek() {
            let (i, key) = undue(top);
            if self.live_top == Some(top) || self.find_pending(i, key).is_some() {
                self.live_top = Some(top);
                break;
            }
            self.retx.pop();
        }
        if self.retx.is_empty() && self.retx.capacity() > KEEP_SLOTS {
            // Nothing in flight: give a burst's memory back.
            self.retx = BinaryHeap::new();
        }
        self.retx
            .peek()
            .map(|Reverse((t, _))| Duration::from_nanos(*t))
    }

    /// Retransmit what is due; messages past their last attempt come back as
    /// [`Undeliverable`].
    pub(crate) fn on_timeout(
        &mut self,
        now: Time,
        transmit: &mut Vec<(NodeId, Datagram)>,
        failed: &mut Vec<Undeliverable>,
    ) {
        while let Some(&Reverse(top)) = self.retx.peek() {
            let t = top.0;
            if t > heap_ns(now) {
                break;
            }
            self.retx.pop();
            let (i, key) = undue(top);
            let Some((_, s)) = self.find_pending(i, key) else {
                continue;
            };
            let Some(peer) = self.index.id(i) else {
                continue;
            };
            let p = &self.slots[s as usize];
            let out_of_time = now >= p.first_sent() + self.cfg.give_up;
            let out_of_tries = self
                .cfg
                .max_attempts
                .is_some_and(|m| u32::from(p.attempts) >= m);
            if out_of_time || out_of_tries {
                let Some(p) = self.take_pending(i, key) else {
                    continue;
                };
                self.count_failure(i);
                self.peers[i].set(GIVEN_UP, true);
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
                self.retx.push(Reverse(due(heap_ns(at), i, key)));
                continue;
            }
            // A retransmission timeout doubles the peer's RTO (RFC 6298 §5.5), for
            // new messages too, until a fresh sample.
            let (attempts, first_sent) = (p.attempts.saturating_add(1), p.first_sent());
            let mut rtt = self.peers[i].rtt();
            if rtt.rto(&self.cfg) < self.cfg.rto_max {
                rtt.backoff = (rtt.backoff + 1).min(16);
                self.peers[i].set_rtt(rtt);
            }
            let next = self.next_try(peer, first_sent, now);
            let p = &mut self.slots[s as usize];
            p.attempts = attempts;
            let (group, k) = (p.group, p.msg);
            let Some(msg) = self.kept.get(k).cloned() else {
                continue;
            };
            self.retx.push(Reverse(due(heap_ns(next), i, key)));
            self.stats.retransmissions += 1;
            self.stats.datagrams_sent += 1;
            let Some(seq) = self.full_seq(i, key) else {
                continue;
            };
            transmit.push((peer, self.datagram(seq, 0, Some(group), Some(msg))));
        }
    }

    /// The failure detector (or a leader change after the old leader's silence)
    /// declared `peer` lost: until it is heard from again, failures to it are counted
    /// in [`LinkStats::delivery_failures_to_lost`].
    pub fn declare_lost(&mut self, peer: NodeId) {
        let i = self.position(peer);
        self.peers[i].set(LOST, true);
    }

    fn count_failure(&mut self, i: usize) {
        self.stats.delivery_failures += 1;
        if self.peers[i].has(LOST) {
            self.stats.delivery_failures_to_lost += 1;
        }
    }

    /// Number of messages waiting for an ack.
    pub(crate) fn in_flight(&self) -> usize {
        self.pending
    }

    /// The keys of the sequences pending to the peer at position `i`, in sending order.
    fn pending_seqs(&self, i: usize, group: Option<AlgorithmKind>) -> Vec<SeqKey> {
        let mut seqs = Vec::new();
        let tail = self.peers[i].tail;
        if tail == NIL {
            return seqs;
        }
        let mut s = tail;
        loop {
            s = self.slots[s as usize].next;
            let slot = &self.slots[s as usize];
            if group.is_none_or(|g| g == slot.group) {
                seqs.push(slot.key());
            }
            if s == tail {
                return seqs;
            }
        }
    }

    /// Give up now on every message of `group` still unacknowledged by `peer` (the
    /// failure detector declared `peer` lost: waiting out the retry budget would only
    /// delay the election by it). Returned in sending order; counted as delivery
    /// failures, and `peer` counts as given up until it is heard from again. Until
    /// then its later failures count as failures to a lost peer too
    /// ([`LinkStats::delivery_failures_to_lost`]).
    pub(crate) fn abandon(&mut self, peer: NodeId, group: AlgorithmKind) -> Vec<Undeliverable> {
        let i = self.position(peer);
        self.peers[i].set(LOST, true);
        let mut seqs = self.pending_seqs(i, Some(group));
        seqs.sort_unstable();
        let mut out = Vec::with_capacity(seqs.len());
        for seq in seqs {
            if let Some(m) = self.take_pending(i, seq) {
                self.count_failure(i);
                out.push(Undeliverable {
                    peer,
                    group: m.group,
                    msg: m.msg,
                });
            }
        }
        if !out.is_empty() {
            self.peers[i].set(GIVEN_UP, true);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::message::Message;

    /// The roster of the tests' links; peer 5 is not on it (the link keeps state for
    /// any peer it meets, roster or not).
    const ROSTER: &[NodeId] = &[1, 2, 3, 4];

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
        let mut link = Link::new(1, 1, ROSTER, LinkConfig::default());
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
            let mut link = Link::new(1, 1, ROSTER, LinkConfig::default());
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

    /// A peer's sequences past 32 bits, sent and received, go on in 64 bits: no
    /// sequence is reused, duplicates are still recognised, acks still match, and a
    /// restart of the peer resets its floor as before.
    #[test]
    fn sequences_past_32_bits_go_on_in_64_bits() {
        let mut link = Link::new(1, 1, ROSTER, LinkConfig::default());
        let i = link.position(2);
        link.peers[i].next_seq = u32::MAX - 1;
        let mut seqs = Vec::new();
        for _ in 0..3 {
            seqs.push(
                link.send(Duration::ZERO, 2, AlgorithmKind::Bully, election(1))
                    .seq,
            );
        }
        let top = u64::from(u32::MAX);
        assert_eq!(
            seqs,
            [top, top + 1, top + 2],
            "one above the last, never reused"
        );
        assert_eq!(link.next_seq(i), top + 2);
        assert_eq!(unacked_to(&link, 2), 3);
        // Retransmissions carry the full sequences (those due at one instant in the
        // order of their low bits).
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        let due = link.next_deadline().unwrap();
        link.on_timeout(due, &mut tx, &mut failed);
        let mut resent: Vec<u64> = tx.iter().map(|(_, d)| d.seq).collect();
        resent.sort_unstable();
        assert_eq!(resent, seqs);
        // An ack of a sequence with the same low 32 bits (sent four billion messages
        // earlier, or never) matches nothing.
        for old in [top + 2 - (1 << 32), top + 2 + (1 << 32)] {
            link.receive(Duration::from_millis(1), &ack_from(2, old));
        }
        assert_eq!(unacked_to(&link, 2), 3);
        for seq in seqs {
            link.receive(Duration::from_millis(1), &ack_from(2, seq));
        }
        assert_eq!(unacked_to(&link, 2), 0, "every ack matched its message");
        assert!(failed.is_empty());

        // Receiving: in order across the boundary, then a duplicate below and above it.
        // (From peer 3, whose counters are still narrow.)
        let i = link.position(3);
        link.peers[i].in_incarnation = 1;
        link.peers[i].in_floor = u32::MAX - 1;
        for seq in top..top + 3 {
            let (verdict, ack, _) = link.receive(Duration::ZERO, &reliable(3, seq));
            assert_eq!(verdict, Inbound::Deliver, "seq {seq}");
            assert_eq!(ack.map(|a| a.ack), Some(seq));
        }
        assert_eq!(link.in_floor(i), top + 2);
        for seq in [top - 1, top + 1] {
            let (verdict, _, _) = link.receive(Duration::ZERO, &reliable(3, seq));
            assert_eq!(verdict, Inbound::Duplicate, "seq {seq}");
        }
        // The peer restarts: its new sequence space starts at 1 again.
        let mut d = reliable(3, 1);
        d.incarnation = 2;
        assert_eq!(link.receive(Duration::ZERO, &d).0, Inbound::Deliver);
        assert_eq!(link.in_floor(i), 1);
    }

    /// Incarnations past 32 bits (the daemon's boot times in microseconds) are kept
    /// whole: an earlier life is stale however close, a later one resets the floor,
    /// and a peer that went from a small incarnation to a wide one compares right.
    #[test]
    fn incarnations_past_32_bits_are_kept_whole() {
        let mut link = Link::new(1, 1, ROSTER, LinkConfig::default());
        let with = |inc: u64, seq: u64| Datagram {
            incarnation: inc,
            ..reliable(2, seq)
        };
        let boot = 1_700_000_000_000_000u64;
        assert_eq!(
            link.receive(Duration::ZERO, &with(boot, 1)).0,
            Inbound::Deliver
        );
        assert_eq!(
            link.receive(Duration::ZERO, &with(boot, 1)).0,
            Inbound::Duplicate
        );
        for old in [boot - 1, boot - (1 << 32), boot & u64::from(u32::MAX), 1] {
            assert_eq!(
                link.receive(Duration::ZERO, &with(old, 2)).0,
                Inbound::Stale,
                "incarnation {old}"
            );
        }
        assert_eq!(link.stats.stale_dropped, 4);
        // A restart: sequences start over.
        assert_eq!(
            link.receive(Duration::ZERO, &with(boot + 1, 1)).0,
            Inbound::Deliver
        );
        let i = link.index.find(2).unwrap();
        assert_eq!(link.in_incarnation(i), boot + 1);
        // Peer 3: small, then past 32 bits.
        let mut d = with(7, 1);
        d.from = 3;
        assert_eq!(link.receive(Duration::ZERO, &d).0, Inbound::Deliver);
        assert_eq!(link.receive(Duration::ZERO, &d).0, Inbound::Duplicate);
        d.incarnation = 1 << 33;
        assert_eq!(link.receive(Duration::ZERO, &d).0, Inbound::Deliver);
        d.incarnation = 8;
        assert_eq!(link.receive(Duration::ZERO, &d).0, Inbound::Stale);
        assert_eq!(link.in_incarnation(link.index.find(3).unwrap()), 1 << 33);
    }

    /// The rival rule (module documentation): one datagram of a higher incarnation is
    /// heard at once, and the real peer's second datagram in a row takes its
    /// incarnation back where it was (nothing delivered twice); so after two forged
    /// incarnations in a row; a restart is heard at once and the old life forgotten
    /// once the new one is heard twice; the first datagram ever heard may be the
    /// forged one; the side table is empty again after each.
    #[test]
    fn one_datagram_of_another_incarnation_cuts_nothing_off() {
        let boot = 1_700_000_000_000_000u64;
        let forged = boot + 9_000_000;
        let with = |inc: u64, seq: u64| Datagram {
            incarnation: inc,
            ..reliable(2, seq)
        };
        let t = Duration::ZERO;
        let mut link = Link::new(1, 1, ROSTER, LinkConfig::default());
        let i = link.position(2);
        for seq in 1..=3 {
            assert_eq!(link.receive(t, &with(boot, seq)).0, Inbound::Deliver);
        }
        // One forged datagram from the future: heard…
        assert_eq!(link.receive(t, &with(forged, 1)).0, Inbound::Deliver);
        assert_eq!(link.in_incarnation(i), forged);
        // …until the real peer's second datagram in a row (its first one is neither
        // delivered nor acked, so it comes again).
        let (verdict, ack, _) = link.receive(t, &with(boot, 4));
        assert_eq!((verdict, ack), (Inbound::Provisional, None));
        assert_eq!(link.receive(t, &with(boot, 4)).0, Inbound::Deliver);
        assert_eq!(link.in_incarnation(i), boot);
        assert_eq!(link.in_floor(i), 4, "where it was");
        assert!(link.rivals.is_empty(), "the forged one forgotten");
        for seq in 1..=4 {
            assert_eq!(link.receive(t, &with(boot, seq)).0, Inbound::Duplicate);
        }
        // Two forged incarnations in a row: the real one is still the rival.
        assert_eq!(link.receive(t, &with(forged, 2)).0, Inbound::Deliver);
        assert_eq!(link.receive(t, &with(forged + 1, 1)).0, Inbound::Deliver);
        assert_eq!(link.receive(t, &with(boot, 5)).0, Inbound::Provisional);
        assert_eq!(link.receive(t, &with(boot, 6)).0, Inbound::Deliver);
        assert_eq!(link.receive(t, &with(boot, 5)).0, Inbound::Deliver);
        assert_eq!(link.in_floor(i), 6);
        assert!(link.rivals.is_empty());
        assert_eq!(link.stats.incarnation_changes, 5);
        // A real restart: heard at once; the old life is forgotten once the new one
        // is heard twice in a row, and stale from then on.
        assert_eq!(link.receive(t, &with(boot + 1, 1)).0, Inbound::Deliver);
        assert_eq!(link.rivals.len(), 1);
        assert_eq!(link.receive(t, &with(boot + 1, 2)).0, Inbound::Deliver);
        assert_eq!(link.receive(t, &with(boot + 1, 3)).0, Inbound::Deliver);
        assert!(link.rivals.is_empty());
        assert_eq!(link.receive(t, &with(boot, 7)).0, Inbound::Stale);

        // The first datagram ever heard from a peer is the forged one: the real, lower
        // incarnation is taken at its second datagram.
        let mut link = Link::new(1, 1, ROSTER, LinkConfig::default());
        let i = link.position(2);
        assert_eq!(link.receive(t, &with(forged, 1)).0, Inbound::Deliver);
        assert_eq!(link.receive(t, &with(boot, 1)).0, Inbound::Provisional);
        assert_eq!(link.receive(t, &with(boot, 1)).0, Inbound::Deliver);
        assert_eq!(link.in_incarnation(i), boot);
        assert_eq!(link.receive(t, &with(boot, 2)).0, Inbound::Deliver);
        assert!(link.rivals.is_empty());
        // Once confirmed, a lower incarnation is stale.
        assert_eq!(link.receive(t, &with(boot - 1, 1)).0, Inbound::Stale);
    }

    /// Round trips beyond 32-bit nanoseconds (4.29 s) saturate: the RTO stays at the
    /// ceiling, where it would be clamped anyway.
    #[test]
    fn round_trips_past_32_bit_nanoseconds_saturate_at_the_ceiling() {
        let cfg = LinkConfig::default();
        let mut link = Link::new(1, 1, ROSTER, cfg.clone());
        let d = link.send(Duration::ZERO, 2, AlgorithmKind::Bully, election(1));
        link.receive(Duration::from_secs(10), &ack_from(2, d.seq));
        assert_eq!(link.rto(2), cfg.rto_max);
        let i = link.index.find(2).unwrap();
        assert_eq!(link.peers[i].srtt_ns, u32::MAX);
    }

    fn unacked_to(l: &Link, peer: NodeId) -> usize {
        l.index
            .find(peer)
            .map_or(0, |i| l.pending_seqs(i, None).len())
    }

    fn election(seq: u64) -> Message {
        Message::Election {
            tag: crate::contract::message::ElectionTag { initiator: 1, seq },
            epoch: 0,
        }
    }

    #[test]
    fn abandon_hands_back_one_groups_pending_messages_in_order() {
        let mut l = Link::new(1, 1, ROSTER, LinkConfig::default());
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
        let mut a = Link::new(1, 1, ROSTER, LinkConfig::default());
        let mut b = Link::new(2, 1, ROSTER, LinkConfig::default());
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

    /// The pending lists: messages to several peers (on the roster and off it), acked
    /// in any order, leave exactly the unacked ones in flight, retransmitted in
    /// deadline order and handed back in sending order; freed slots are reused.
    #[test]
    fn pending_messages_per_peer_acked_in_any_order() {
        let mut l = Link::new(1, 1, ROSTER, LinkConfig::default());
        let t = Duration::ZERO;
        assert_eq!(l.rto(9), LinkConfig::default().retransmit, "untouched peer");
        let mut sent = Vec::new();
        for k in 0..6u64 {
            for peer in [2, 4, 5, 9] {
                let d = l.send(t, peer, AlgorithmKind::Bully, election(k));
                sent.push((peer, d.seq, k));
            }
        }
        assert_eq!(l.in_flight(), 24);
        assert_eq!(
            l.kept.entries.len(),
            6,
            "one copy per message sent in a row"
        );
        // Ack every other message, newest first.
        for &(peer, seq, _) in sent.iter().rev().step_by(2) {
            l.receive(ms(1), &ack_from(peer, seq));
        }
        assert_eq!(l.in_flight(), 12);
        let slots = l.slots.len();
        // Acks for what is no longer pending, or was never sent, change nothing.
        l.receive(ms(1), &ack_from(2, 999));
        l.receive(ms(1), &ack_from(3, 1));
        assert_eq!(l.in_flight(), 12);
        // New messages take the freed slots.
        let d = l.send(ms(2), 3, AlgorithmKind::Bully, election(9));
        assert_eq!(l.slots.len(), slots, "a freed slot is reused");
        l.receive(ms(3), &ack_from(3, d.seq));
        let left: Vec<(NodeId, u64)> = sent
            .iter()
            .rev()
            .skip(1)
            .step_by(2)
            .map(|&(p, seq, _)| (p, seq))
            .collect();
        for &(peer, seq) in &left {
            assert_eq!(
                l.pending_slot(peer, seq).and_then(
                    |s| l.full_seq(l.index.find(peer).unwrap(), l.slots[s as usize].key())
                ),
                Some(seq)
            );
        }
        // The first retransmission round resends exactly the unacked ones, ordered by
        // (deadline, peer position, sequence) as the heap orders them: roster members
        // by id, then the others (5, then 9) in the order they were first met.
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        let due = l.next_deadline().unwrap();
        l.on_timeout(due, &mut tx, &mut failed);
        let mut want = left.clone();
        want.sort_unstable();
        let got: Vec<(NodeId, u64)> = tx.iter().map(|(p, d)| (*p, d.seq)).collect();
        assert_eq!(got, want);
        for (peer, d) in &tx {
            let k = sent
                .iter()
                .find(|s| (s.0, s.1) == (*peer, d.seq))
                .unwrap()
                .2;
            assert_eq!(
                d.body,
                Some(election(k)),
                "each resent with its own message"
            );
        }
        // Abandoning a peer hands back its messages in sending order.
        let gone: Vec<Message> = l
            .abandon(5, AlgorithmKind::Bully)
            .into_iter()
            .map(|u| u.msg)
            .collect();
        let want: Vec<Message> = sent
            .iter()
            .filter(|&&(p, seq, _)| p == 5 && left.contains(&(p, seq)))
            .map(|&(_, _, k)| election(k))
            .collect();
        assert_eq!(gone, want);
        assert_eq!(l.in_flight(), 12 - want.len());
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
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
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
            ROSTER,
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
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
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
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
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
        let mut big = Link::new(1, 1, ROSTER, cfg.clone());
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
        let mut lone = Link::new(1, 1, ROSTER, cfg.clone());
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
            let mut l = Link::new(1, 1, ROSTER, cfg.clone());
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
            ROSTER,
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
        let mut l = Link::new(1, 1, ROSTER, cfg);
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
