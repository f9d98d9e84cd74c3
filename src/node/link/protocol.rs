//! The link's two directions: a message wrapped for sending (sequence, pending
//! entry, first deadline) and an incoming datagram's header read (ack settled, round
//! trip sampled, incarnation checked, duplicate dropped, ack built).

use super::peers::{GIVEN_UP, HAS_ABOVE, LOST, WIDE};
use super::slab::{due, heap_ns, seq_key};
use super::window::accept;
use super::{Inbound, Link, BROADCAST_SEQ};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::Message;
use crate::node::{Datagram, Time};
use crate::NodeId;
use std::cmp::Reverse;

impl Link {
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
    pub(crate) fn send(
        &mut self,
        now: Time,
        to: NodeId,
        group: AlgorithmKind,
        msg: Message,
    ) -> Datagram {
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

    pub(crate) fn datagram(
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
    pub(crate) fn receive(&mut self, now: Time, d: &Datagram) -> (Inbound, Option<Datagram>, bool) {
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
                if p.attempts == 1 || p.attempts == u32::from(super::slab::LEFT) {
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
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::*;

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
}
