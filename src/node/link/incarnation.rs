//! Which incarnation of a peer is heard: restarts at once, leftovers of an earlier
//! life dropped, and the *rival* rule by which no single datagram cuts a peer off (the
//! rules are in the [link's module documentation](super)).

use super::peers::{HAS_ABOVE, UNCONFIRMED};
use super::rivals::{self, keep, IN_A_ROW};
use super::{Inbound, Link};
use crate::NodeId;

/// An incarnation of a peer other than the current one that may still be taken back
/// (see the link's module documentation): one a higher one displaced, one lower than
/// a first datagram, or a later life than a pending one; in [`Link::rivals`].
#[derive(Debug)]
pub(super) struct Rival {
    pub(super) incarnation: u64,
    /// The receive floor kept for it (0 for one never adopted).
    pub(super) floor: u64,
    /// The rest of its receive state, kept with the floor: the sequences delivered out
    /// of order above it, and its broadcast sequences. Taken back with the floor alone,
    /// a sequence it had delivered above the floor was delivered again when the real
    /// sender retransmitted it (docs/wire.md §6: delivered once).
    pub(super) state: Received,
    /// Its datagrams since the current incarnation's last one.
    pub(super) run: u8,
    /// The current incarnation's datagrams since the rival's last one.
    pub(super) current_run: u8,
}

/// The rivals of one peer (at most [`rivals::RIVALS`]).
pub(super) type Rivals = Vec<Rival>;

/// A peer incarnation's receive state besides its floor ([`Rival::state`]).
#[derive(Debug, Default)]
pub(super) struct Received {
    // Boxed as in `Link::above`, which it moves out of and back into unchanged.
    #[allow(clippy::box_collection)]
    above: Option<Box<std::collections::BTreeSet<u64>>>,
    broadcast: Option<super::Window>,
}

impl rivals::Rival for Rival {
    fn incarnation(&self) -> u64 {
        self.incarnation
    }
    fn runs(&mut self) -> (&mut u8, &mut u8) {
        (&mut self.run, &mut self.current_run)
    }
}

impl Link {
    /// Which incarnation of the peer at position `i` (`id`) is heard, given one more
    /// datagram of `incarnation` (the rule of the link's module documentation): `None` if
    /// the datagram is of the current incarnation (after any switch), else why it is
    /// dropped.
    pub(super) fn incarnation_check(
        &mut self,
        i: usize,
        id: NodeId,
        incarnation: u64,
    ) -> Option<Inbound> {
        let heard = self.in_incarnation(i);
        let key = i as u32;
        if incarnation == heard {
            if self.peers[i].has(UNCONFIRMED) {
                self.peers[i].set(UNCONFIRMED, false);
            }
            if let Some(rs) = self.rivals.get_mut(&key) {
                rivals::heard_current(rs);
                if rs.is_empty() {
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
        if let Some(rs) = self.rivals.get_mut(&key) {
            if let Some(r) = rs.iter_mut().find(|r| r.incarnation == incarnation) {
                r.run = r.run.saturating_add(1);
                r.current_run = 0;
                if r.run < IN_A_ROW {
                    self.stats.provisional_dropped += 1;
                    return Some(Inbound::Provisional);
                }
                // Heard twice in a row while the current one was silent: taken back
                // where it was, and the one that displaced it (and any other rival)
                // forgotten.
                let floor = r.floor;
                let state = std::mem::take(&mut r.state);
                self.rivals.remove(&key);
                self.stats.incarnation_changes += 1;
                self.adopt(i, id, incarnation, floor);
                self.restore(i, id, state);
                return None;
            }
        }
        if incarnation > heard {
            // A restart (or a forged datagram): heard at once. The incarnation it
            // displaces is kept as a rival, with its whole receive state.
            let state = self.received(i, id);
            rivals::displaced(
                self.rivals.entry(key).or_default(),
                Rival {
                    incarnation: heard,
                    floor: own_floor,
                    state,
                    run: 0,
                    current_run: 0,
                },
            );
            self.peers[i].set(UNCONFIRMED, false);
            self.stats.incarnation_changes += 1;
            self.adopt(i, id, incarnation, 0);
            return None;
        }
        // Lower than the current incarnation: a rival of its own if the current one
        // may have been forged — it is the first one heard, or a higher one displaced
        // an incarnation still pending below this one (the peer restarted, and one
        // forged datagram came before its new life was confirmed).
        let first = self.peers[i].has(UNCONFIRMED) && !self.rivals.contains_key(&key);
        let later_life = self
            .rivals
            .get(&key)
            .is_some_and(|rs| rs.iter().any(|r| r.incarnation < incarnation));
        if first || later_life {
            self.peers[i].set(UNCONFIRMED, false);
            keep(
                self.rivals.entry(key).or_default(),
                Rival {
                    incarnation,
                    floor: 0,
                    state: Received::default(),
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
    pub(super) fn adopt(&mut self, i: usize, id: NodeId, incarnation: u64, floor: u64) {
        self.set_in_incarnation(i, incarnation);
        let peer = &mut self.peers[i];
        if peer.has(HAS_ABOVE) {
            peer.set(HAS_ABOVE, false);
            self.above.remove(&(i as u32));
        }
        self.set_in_floor(i, floor);
        self.inbound_broadcast.remove(&id);
    }

    /// The receive state of the peer at position `i` (`id`) besides its floor, taken out
    /// (the incarnation is being displaced).
    fn received(&mut self, i: usize, id: NodeId) -> Received {
        let above = if self.peers[i].has(HAS_ABOVE) {
            self.peers[i].set(HAS_ABOVE, false);
            self.above.remove(&(i as u32))
        } else {
            None
        };
        Received {
            above,
            broadcast: self.inbound_broadcast.remove(&id),
        }
    }

    /// Put back a receive state kept by [`Link::received`] (after [`Link::adopt`]).
    fn restore(&mut self, i: usize, id: NodeId, state: Received) {
        if let Some(a) = state.above {
            self.peers[i].set(HAS_ABOVE, true);
            self.above.insert(i as u32, a);
        }
        if let Some(w) = state.broadcast {
            self.inbound_broadcast.insert(id, w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;

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
        d.incarnation = 6;
        assert_eq!(link.receive(Duration::ZERO, &d).0, Inbound::Stale);
        // 8 is a later life than 7, still pending as the rival: a rival of its own.
        d.incarnation = 8;
        assert_eq!(link.receive(Duration::ZERO, &d).0, Inbound::Provisional);
        assert_eq!(link.in_incarnation(link.index.find(3).unwrap()), 1 << 33);
    }

    /// A boot time in microseconds, and a forged incarnation 9 s past it.
    const BOOT: u64 = 1_700_000_000_000_000;
    const FORGED: u64 = BOOT + 9_000_000;

    /// Peer 2's reliable datagram `seq` of incarnation `inc`.
    fn with(inc: u64, seq: u64) -> Datagram {
        Datagram {
            incarnation: inc,
            ..reliable(2, seq)
        }
    }

    /// A taken-back incarnation gets its whole receive state back, the sequences it had
    /// delivered out of order included: the real sender's retransmissions of them are
    /// duplicates, as they were before the forged datagram (they were delivered again:
    /// the audit's seqs 5 and 7 after 1, 2, 3, 5, 7).
    #[test]
    fn a_taken_back_incarnation_delivers_nothing_twice() {
        let (boot, forged, t) = (BOOT, FORGED, Duration::ZERO);
        let mut link = Link::new(1, 1, ROSTER, LinkConfig::default());
        for seq in [1, 2, 3, 5, 7] {
            assert_eq!(link.receive(t, &with(boot, seq)).0, Inbound::Deliver);
        }
        assert_eq!(link.receive(t, &with(forged, 1)).0, Inbound::Deliver);
        assert_eq!(link.receive(t, &with(boot, 8)).0, Inbound::Provisional);
        assert_eq!(link.receive(t, &with(boot, 9)).0, Inbound::Deliver);
        let i = link.position(2);
        assert_eq!(link.in_incarnation(i), boot);
        for seq in [1, 3, 5, 7, 9] {
            assert_eq!(
                link.receive(t, &with(boot, seq)).0,
                Inbound::Duplicate,
                "seq {seq} again"
            );
        }
        for seq in [4, 6, 8] {
            assert_eq!(
                link.receive(t, &with(boot, seq)).0,
                Inbound::Deliver,
                "seq {seq}"
            );
        }
    }

    /// The rival rule (the link's module documentation): one datagram of a higher incarnation is
    /// heard at once, and the real peer's second datagram in a row takes its
    /// incarnation back where it was (nothing delivered twice); so after two forged
    /// incarnations in a row; a restart is heard at once and the old life forgotten
    /// once the new one is heard twice; the first datagram ever heard may be the
    /// forged one; the side table is empty again after each.
    #[test]
    fn one_datagram_of_another_incarnation_cuts_nothing_off() {
        let (boot, forged, t) = (BOOT, FORGED, Duration::ZERO);
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

    /// A restart not yet confirmed, then one forged datagram from further ahead (the
    /// nemesis run at fb9bbe7): the real new incarnation, between the old one (still
    /// pending) and the forged one, is a rival of its own and taken back at its second
    /// datagram in a row, whether the node had heard it once before the forged one or
    /// not at all; the old life is stale after that.
    #[test]
    fn a_restart_then_one_forged_datagram_cuts_nothing_off() {
        let boot = 1_700_000_000_000_000u64;
        let restart = boot + 3_000_000;
        let forged = restart + 9_000_000;
        let with = |inc: u64, seq: u64| Datagram {
            incarnation: inc,
            ..reliable(2, seq)
        };
        let t = Duration::ZERO;
        for heard_first in [0, 1] {
            let mut link = Link::new(1, 1, ROSTER, LinkConfig::default());
            let i = link.position(2);
            for seq in 1..=3 {
                assert_eq!(link.receive(t, &with(boot, seq)).0, Inbound::Deliver);
            }
            let mut seq = 1;
            for _ in 0..heard_first {
                assert_eq!(link.receive(t, &with(restart, seq)).0, Inbound::Deliver);
                seq += 1;
            }
            assert_eq!(link.receive(t, &with(forged, 1)).0, Inbound::Deliver);
            assert_eq!(link.in_incarnation(i), forged);
            // The real new life: its first datagram held back (not acked), taken at the
            // second, where it was.
            let (verdict, ack, _) = link.receive(t, &with(restart, seq));
            assert_eq!(
                (verdict, ack),
                (Inbound::Provisional, None),
                "{heard_first}"
            );
            assert_eq!(link.receive(t, &with(restart, seq)).0, Inbound::Deliver);
            assert_eq!(link.in_incarnation(i), restart, "{heard_first}");
            assert_eq!(link.in_floor(i), seq);
            assert!(link.rivals.is_empty(), "the forged and the old forgotten");
            assert_eq!(link.receive(t, &with(boot, 4)).0, Inbound::Stale);
            assert_eq!(link.receive(t, &with(restart, seq + 1)).0, Inbound::Deliver);
        }
    }
}
