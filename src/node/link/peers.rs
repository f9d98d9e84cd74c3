//! The link's per-peer table, packed: 28 bytes per peer in pages allocated on first
//! write, peer ids interned to positions, and the side tables for the rare peer whose
//! counters pass 32 bits.

use super::rtt::Rtt;
use super::slab::NIL;
use super::Link;
use crate::node::fxhash::FxHashMap;
use crate::NodeId;

/// Flags of [`Peer`].
pub(super) const SAMPLED: u8 = 1;
pub(super) const GIVEN_UP: u8 = 2;
pub(super) const LOST: u8 = 4;
/// Out-of-order deliveries above the floor are kept in [`Link::above`].
pub(super) const HAS_ABOVE: u8 = 8;
/// The sequence counter and receive floor are in [`Link::wide`].
pub(super) const WIDE: u8 = 16;
/// The incarnation is in [`Link::wide_incarnation`].
pub(super) const WIDE_INCARNATION: u8 = 32;
/// The current incarnation was heard once only (the first datagram of the peer): a
/// lower one may still become its rival (see the link's module documentation).
pub(super) const UNCONFIRMED: u8 = 64;

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
pub(super) struct Peer {
    /// The peer's incarnation as last heard (unless [`WIDE_INCARNATION`]).
    pub(super) in_incarnation: u32,
    /// Last sequence sent to the peer (unless [`WIDE`]).
    pub(super) next_seq: u32,
    /// Every sequence ≤ this from the peer has been delivered (unless [`WIDE`]).
    pub(super) in_floor: u32,
    pub(super) srtt_ns: u32,
    pub(super) var_ns: u32,
    /// The newest message pending to the peer (its `next` is the oldest), or [`NIL`].
    pub(super) tail: u32,
    pub(super) backoff: u8,
    pub(super) flags: u8,
}

const _: () = assert!(size_of::<Peer>() == 28);

/// A peer nothing was sent to or heard from.
pub(super) static UNTOUCHED: Peer = Peer {
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
pub(super) struct Wide {
    pub(super) next_seq: u64,
    pub(super) in_floor: u64,
}

/// Peers per page of [`Peers`].
pub(super) const PAGE: usize = 32;

/// The per-peer array, in pages of [`PAGE`] peers allocated when one of them is first
/// written: a node that only ever deals with a few peers (its ring neighbours, its
/// leader) does not pay for the whole roster, one that deals with all of them (a
/// Bully election) pays 8 bytes per page on top. Reading an untouched peer gives
/// [`UNTOUCHED`].
#[derive(Debug, Default)]
pub(super) struct Peers {
    pub(super) pages: Vec<Option<Box<[Peer; PAGE]>>>,
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
    pub(super) fn rtt(&self) -> Rtt {
        Rtt {
            srtt_ns: u64::from(self.srtt_ns),
            var_ns: u64::from(self.var_ns),
            backoff: self.backoff,
            sampled: self.flags & SAMPLED != 0,
        }
    }
    pub(super) fn set_rtt(&mut self, r: Rtt) {
        // Saturating: 4.29 s is above any RTO ceiling but a deliberately huge one.
        self.srtt_ns = u32::try_from(r.srtt_ns).unwrap_or(u32::MAX);
        self.var_ns = u32::try_from(r.var_ns).unwrap_or(u32::MAX);
        self.backoff = r.backoff;
        self.set(SAMPLED, r.sampled);
    }
    pub(super) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    pub(super) fn set(&mut self, flag: u8, on: bool) {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
    }
}

/// Peer id → position in the per-peer arrays, mapped once: roster members by their
/// rank in the sorted roster (one subtraction where the ids are consecutive, the
/// usual 1..=N), any other id the link meets after them, in order of appearance.
#[derive(Debug, Default)]
pub(super) struct PeerIndex {
    /// The ids `first .. first + run` have positions `0 .. run`.
    pub(super) first: NodeId,
    pub(super) run: u32,
    /// The other ids.
    pub(super) rest: FxHashMap<NodeId, u32>,
    /// The other ids by position (from `run` on).
    pub(super) rest_ids: Vec<NodeId>,
    pub(super) len: u32,
}

impl PeerIndex {
    pub(super) fn new(roster: &[NodeId]) -> Self {
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
    pub(super) fn id(&self, i: usize) -> Option<NodeId> {
        match i.checked_sub(self.run as usize) {
            None => Some(self.first + i as NodeId),
            Some(r) => self.rest_ids.get(r).copied(),
        }
    }
    pub(super) fn find(&self, id: NodeId) -> Option<usize> {
        match id.checked_sub(self.first) {
            Some(i) if i < self.run => Some(i as usize),
            _ => self.rest.get(&id).map(|&i| i as usize),
        }
    }
    /// The position of `id`, given one if it has none yet.
    pub(super) fn find_or_add(&mut self, id: NodeId) -> usize {
        if let Some(i) = self.find(id) {
            return i;
        }
        self.rest.insert(id, self.len);
        self.rest_ids.push(id);
        self.len += 1;
        (self.len - 1) as usize
    }
}

impl Link {
    /// The position of `peer` in the per-peer arrays, added if new.
    pub(super) fn position(&mut self, peer: NodeId) -> usize {
        self.index.find_or_add(peer)
    }

    /// The 64-bit state of the peer at position `i`, moved there if it was not yet.
    pub(super) fn widen(&mut self, i: usize) -> &mut Wide {
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
    pub(super) fn next_seq(&self, i: usize) -> u64 {
        let peer = &self.peers[i];
        if peer.has(WIDE) {
            self.wide.get(&(i as u32)).map_or(0, |w| w.next_seq)
        } else {
            u64::from(peer.next_seq)
        }
    }

    /// A new sequence for the peer at position `i`: one above the last, never reused.
    pub(super) fn bump_seq(&mut self, i: usize) -> u64 {
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
    pub(super) fn in_incarnation(&self, i: usize) -> u64 {
        let peer = &self.peers[i];
        if peer.has(WIDE_INCARNATION) {
            self.wide_incarnation.get(&(i as u32)).copied().unwrap_or(0)
        } else {
            u64::from(peer.in_incarnation)
        }
    }

    pub(super) fn set_in_incarnation(&mut self, i: usize, incarnation: u64) {
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
    pub(super) fn in_floor(&self, i: usize) -> u64 {
        let peer = &self.peers[i];
        if peer.has(WIDE) {
            self.wide.get(&(i as u32)).map_or(0, |w| w.in_floor)
        } else {
            u64::from(peer.in_floor)
        }
    }

    pub(super) fn set_in_floor(&mut self, i: usize, floor: u64) {
        let peer = &mut self.peers[i];
        if !peer.has(WIDE) {
            if let Ok(f) = u32::try_from(floor) {
                peer.in_floor = f;
                return;
            }
        }
        self.widen(i).in_floor = floor;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;

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
}
