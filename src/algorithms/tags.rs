//! Election tags shared by the Bully family: which cascades this node has joined.

use crate::contract::message::ElectionTag;
use crate::NodeId;
use std::collections::HashMap;

/// Remembers, per initiator, the newest election tag this node took part in, so each
/// cascade is joined once (bounded by the roster size).
#[derive(Debug, Default)]
pub(super) struct Joined {
    newest: HashMap<NodeId, u64>,
    next_seq: u64,
    incarnation: u64,
}

impl Joined {
    pub(super) fn new(incarnation: u64) -> Self {
        Joined {
            newest: HashMap::new(),
            next_seq: 0,
            incarnation,
        }
    }

    /// A fresh tag for an election `me` initiates: `incarnation · 2^12 + n`, so a
    /// restarted node never reuses a tag of its previous life. This holds for small
    /// boot counters (the simulator: 1, 2, …; up to 4 096 elections per life) and for
    /// the daemon's unix-microsecond incarnations (which fit until the year 2112 and
    /// grow by far more than the elections of one life between two boots).
    pub(super) fn fresh(&mut self, me: NodeId) -> ElectionTag {
        self.next_seq += 1;
        let tag = ElectionTag {
            initiator: me,
            seq: self
                .incarnation
                .saturating_mul(1 << 12)
                .saturating_add(self.next_seq),
        };
        self.join(tag);
        tag
    }

    /// Record `tag`; true if it is new (not joined before).
    pub(super) fn join(&mut self, tag: ElectionTag) -> bool {
        let newest = self.newest.entry(tag.initiator).or_insert(0);
        if tag.seq > *newest {
            *newest = tag.seq;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_life_always_has_newer_tags() {
        // The simulator's boot counters and the daemon's unix-microsecond incarnations,
        // including a restart across a 2^32 µs boundary (where `incarnation << 32`
        // would wrap and make the new life's tags older).
        let boundary: u64 = 0x0006_6100_0000_0000; // about 2026 in unix microseconds
        for (old, new) in [
            (1, 2),
            (boundary - 1, boundary),
            (boundary, boundary + 1_000_000),
        ] {
            let mut before = Joined::new(old);
            let last = (0..100).map(|_| before.fresh(7)).last().unwrap();
            let mut peer = Joined::new(99);
            assert!(peer.join(last));
            let first_of_new_life = Joined::new(new).fresh(7);
            assert!(first_of_new_life.seq > last.seq, "{old} -> {new}");
            assert!(
                peer.join(first_of_new_life),
                "a restarted node's cascade is joined"
            );
        }
    }
}
