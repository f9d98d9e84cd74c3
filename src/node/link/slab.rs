//! The messages awaiting their ack, packed: a slab of 24-byte slots in one circular
//! list per peer, each message kept once however many peers it went to, and the
//! 16-byte keys of the retransmission heap.

use super::{Link, BROADCAST_SEQ};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::Message;
use crate::node::Time;
#[cfg(test)]
use crate::NodeId;
use std::time::Duration;

/// Slabs and heaps larger than this are freed once empty (after a burst) rather
/// than kept.
pub(super) const KEEP_SLOTS: usize = 64;

/// No slot (the end of a pending list, or a peer with nothing pending).
pub(super) const NIL: u32 = u32::MAX;

/// A message awaiting its ack, in the slab of [`Link::slots`]; the messages pending
/// to one peer form a circular list in sending order through `next` (acks mostly come
/// in that order, so the one acked is found at the head). 24 bytes: the sequence is
/// kept as its [`SeqKey`] (the full one is the only one of the peer's pending
/// sequences with those low bits, see [`Link::full_seq`]).
#[derive(Debug)]
pub(super) struct Slot {
    /// Nanoseconds of [`Time`] (see [`heap_ns`]).
    pub(super) first_sent_ns: u64,
    /// The low 32 bits of the sequence.
    pub(super) seq: u32,
    /// The message, in [`Link::kept`]; [`NIL`]: the slot is free (and `next` links
    /// the free list).
    pub(super) msg: u32,
    pub(super) next: u32,
    /// Sends so far, the first one included (saturating: `give_up` ends the retries
    /// long before 65534 of them at any RTO floor above 12 µs), or one of [`HELD`],
    /// [`HELD_UNARMED`], [`LEFT`].
    pub(super) attempts: u16,
    pub(super) group: AlgorithmKind,
    /// A broadcast sequence ([`BROADCAST_SEQ`]).
    pub(super) broadcast: bool,
}

const _: () = assert!(size_of::<Slot>() == 24);

/// [`Slot::attempts`] of a message whose first copy the daemon holds back (not sent
/// yet, see [`Link::held`]); its deadline is still in the heap.
pub(super) const HELD: u16 = 0;
/// Held, and its deadline has left the heap ([`Link::departed`] pushes a new one).
pub(super) const HELD_UNARMED: u16 = u16::MAX;
/// Sent once, at `first_sent`, after a hold, while its old deadline was still in the
/// heap: that entry re-arms it one RTO after `first_sent`.
pub(super) const LEFT: u16 = u16::MAX - 1;

/// A pending sequence as the link keeps it: the broadcast bit at bit 32, the low 32
/// bits of the sequence below it. Two sequences pending to one peer never share a
/// key (that would take four billion messages in flight to it).
pub(super) type SeqKey = u64;

pub(super) fn seq_key(seq: u64) -> SeqKey {
    (u64::from(seq & BROADCAST_SEQ != 0) << 32) | (seq & u64::from(u32::MAX))
}

/// The full sequence of the `key` pending below or at the last sequence sent `last`
/// in its space (the newest one with those low bits), if there is one.
pub(super) fn unkey(last: u64, key: SeqKey) -> Option<u64> {
    let lo = key as u32;
    last.checked_sub(u64::from((last as u32).wrapping_sub(lo)))
}

/// The messages of the pending slots, each kept once however many peers it went to
/// in a row (a Bully ELECTION to every higher member, a COORDINATOR to all): a slot
/// holds 4 bytes of it instead of 40.
#[derive(Debug)]
pub(super) struct Kept {
    pub(super) entries: Vec<KeptMsg>,
    /// First free entry (linked through `next_free`), or [`NIL`].
    pub(super) free: u32,
    /// The entry kept last, shared by the next send if it is the same message.
    pub(super) last: u32,
}

#[derive(Debug)]
pub(super) struct KeptMsg {
    pub(super) msg: Option<Message>,
    /// Slots holding it.
    pub(super) refs: u32,
    pub(super) next_free: u32,
}

impl Kept {
    pub(super) fn new() -> Self {
        Kept {
            entries: Vec::new(),
            free: NIL,
            last: NIL,
        }
    }

    /// Keep `msg` for one more slot.
    pub(super) fn keep(&mut self, msg: Message) -> u32 {
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

    pub(super) fn get(&self, k: u32) -> Option<&Message> {
        self.entries.get(k as usize)?.msg.as_ref()
    }

    /// One slot lets go of entry `k`: its message (the last slot's is moved out).
    pub(super) fn release(&mut self, k: u32) -> Option<Message> {
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
    pub(super) fn first_sent(&self) -> Time {
        Duration::from_nanos(self.first_sent_ns)
    }
    pub(super) fn key(&self) -> SeqKey {
        (u64::from(self.broadcast) << 32) | u64::from(self.seq)
    }
}

/// A retransmission deadline in nanoseconds of [`Time`] and what is due then: the
/// peer's position (bits 33 and up) and the [`SeqKey`] (16 bytes an entry, one per
/// message in flight). Ordered by deadline, then position (for roster members the
/// order of their ids), then sequence. Positions take 31 bits: a link meets fewer
/// than two billion distinct peers (each costs it a map entry besides).
pub(super) type Due = (u64, u64);

pub(super) fn due(at: u64, i: usize, key: SeqKey) -> Due {
    (at, ((i as u64) << 33) | key)
}

/// The peer position and sequence key of a [`Due`] entry.
pub(super) fn undue(d: Due) -> (usize, SeqKey) {
    ((d.1 >> 33) as usize, d.1 & ((1 << 33) - 1))
}

/// A message handed back by [`Link::take_pending`].
pub(super) struct Pending {
    pub(super) group: AlgorithmKind,
    pub(super) msg: Message,
    pub(super) attempts: u32,
    pub(super) first_sent_ns: u64,
}

impl Pending {
    pub(super) fn first_sent(&self) -> Time {
        Duration::from_nanos(self.first_sent_ns)
    }
}

/// A [`Time`] as the nanoseconds the retransmission heap keeps (saturating: no
/// deadline is 584 years away).
pub(super) fn heap_ns(t: Time) -> u64 {
    u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
}

impl Link {
    /// Keep `msg` until `seq` to the peer at position `i` is acked.
    pub(super) fn add_pending(
        &mut self,
        i: usize,
        seq: u64,
        group: AlgorithmKind,
        msg: Message,
        first_sent_ns: u64,
    ) {
        self.flight_sent(first_sent_ns);
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
    pub(super) fn full_seq(&self, i: usize, key: SeqKey) -> Option<u64> {
        if key >> 32 != 0 {
            unkey(self.next_broadcast, key).map(|s| BROADCAST_SEQ | s)
        } else {
            unkey(self.next_seq(i), key)
        }
    }

    /// The slot of the message `key` pending to the peer at position `i`, and the one
    /// before it in the peer's list.
    pub(super) fn find_pending(&self, i: usize, key: SeqKey) -> Option<(u32, u32)> {
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
    pub(super) fn pending_slot(&self, peer: NodeId, seq: u64) -> Option<u32> {
        let i = self.index.find(peer)?;
        self.find_pending(i, seq_key(seq)).map(|(_, s)| s)
    }

    /// Stop waiting for the ack of `key` to the peer at position `i`.
    pub(super) fn take_pending(&mut self, i: usize, key: SeqKey) -> Option<Pending> {
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

    /// The keys of the sequences pending to the peer at position `i`, in sending order.
    pub(super) fn pending_seqs(&self, i: usize, group: Option<AlgorithmKind>) -> Vec<SeqKey> {
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
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::*;

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
        // Retransmission rounds (the first one RTO after the flight's last ack) resend
        // exactly the unacked ones, each round ordered by (deadline, peer position,
        // sequence) as the heap orders them: roster members by id, then the others
        // (5, then 9) in the order they were first met. A peer's first copy sent again
        // backs its RTO off, so its later ones follow a round later.
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        let mut once = BTreeSet::new();
        let mut first_round = None;
        for _ in 0..40 {
            let Some(due) = l.next_deadline() else { break };
            let mut round = Vec::new();
            l.on_timeout(due, &mut round, &mut failed);
            if round.is_empty() {
                continue;
            }
            first_round.get_or_insert(due);
            let got: Vec<(NodeId, u64)> = round.iter().map(|(p, d)| (*p, d.seq)).collect();
            let mut sorted = got.clone();
            sorted.sort_unstable();
            assert_eq!(got, sorted, "heap order");
            once.extend(got);
            tx.extend(round);
            if once.len() >= left.len() {
                break;
            }
        }
        assert_eq!(first_round, Some(ms(1) + LinkConfig::default().retransmit));
        let mut want = left.clone();
        want.sort_unstable();
        assert_eq!(once.into_iter().collect::<Vec<_>>(), want);
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
}
