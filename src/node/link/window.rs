//! Duplicate suppression: the window of sequences delivered from one sequence space
//! (a floor, and the out-of-order arrivals above it, bounded).

use std::collections::BTreeSet;

/// Delivered sequences above a floor (out-of-order arrivals); boxed and absent when
/// empty (the common case).
#[allow(clippy::box_collection)] // the point: 8 bytes where it is absent
pub(super) type Above = Option<Box<BTreeSet<u64>>>;

/// A broadcast window: the sequences of a sender's broadcast space delivered.
#[derive(Debug, Default)]
pub(super) struct Window {
    /// Every sequence ≤ floor has been delivered.
    pub(super) floor: u64,
    pub(super) above: Above,
}

pub(super) const MAX_OUT_OF_ORDER: usize = 4096;

/// Record `seq` as delivered in the window (`floor`, `above`): false if it was
/// already. Sequences are chosen by the peer: no arithmetic here may overflow,
/// whatever they are.
pub(super) fn accept(floor: &mut u64, above: &mut Above, seq: u64) -> bool {
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
pub(super) fn advance(floor: &mut u64, above: &mut Above) {
    while let Some(next) = floor.checked_add(1) {
        if !above.as_mut().is_some_and(|a| a.remove(&next)) {
            break;
        }
        *floor = next;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::*;

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
}
