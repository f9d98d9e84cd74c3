//! Which incarnation of a peer is heard: restarts at once, leftovers of an earlier
//! life dropped, and the *rival* rule by which no single datagram cuts a peer off (the
//! rules are in the [link's module documentation](super)).

use super::peers::{HAS_ABOVE, UNCONFIRMED};
use super::{Inbound, Link};
use crate::NodeId;

/// The incarnation of a peer that a higher one displaced (or, after a first datagram,
/// a lower one), while it may still be taken back (see the link's module documentation): in
/// [`Link::rivals`], absent otherwise.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rival {
    pub(super) incarnation: u64,
    /// The receive floor kept for it (0 for one never adopted).
    pub(super) floor: u64,
    /// Its datagrams since the current incarnation's last one.
    pub(super) run: u8,
    /// The current incarnation's datagrams since the rival's last one.
    pub(super) current_run: u8,
}

/// Datagrams in a row that take a rival incarnation back, or confirm the current one
/// against it.
pub(super) const IN_A_ROW: u8 = 2;

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
        d.incarnation = 8;
        assert_eq!(link.receive(Duration::ZERO, &d).0, Inbound::Stale);
        assert_eq!(link.in_incarnation(link.index.find(3).unwrap()), 1 << 33);
    }

    /// The rival rule (the link's module documentation): one datagram of a higher incarnation is
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
}
