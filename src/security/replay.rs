//! Replay protection: a sliding window per sender over (incarnation, datagram counter),
//! in the style of the IPsec anti-replay window (RFC 4303 §3.4.3, RFC 6479).
//!
//! # Contract
//! - Every datagram's authenticated envelope carries the sender's incarnation (boot id,
//!   unix microseconds at start) and a counter that grows by one with every datagram
//!   the sender puts on the wire towards this receiver (reliable, unreliable and
//!   pure acks alike). [`ReplayGuard::check`] runs **after** authentication, so only
//!   datagrams made with a cluster key can move a window.
//! - Per sender the guard keeps the highest incarnation seen and, for it, the highest
//!   counter `top` plus a bitmap of the [`WINDOW`] counters `top-WINDOW+1 ..= top`.
//!   A counter already in the bitmap is a `replay`; a counter at or below
//!   `top - WINDOW` is a `replay` too (too old to tell, treated as seen).
//! - A higher incarnation (the sender restarted) starts a fresh window; a lower one is
//!   a leftover of a previous life: `stale_incarnation`.
//! - An incarnation more than [`MAX_FUTURE`] (10 s) ahead of the receiver's clock is
//!   `future_incarnation` and is **not** recorded: no datagram, signed or not, can move
//!   the receiver's view of a peer's incarnation further ahead than that. Without the
//!   bound one forged datagram with an incarnation far ahead (a spoofed heartbeat in
//!   insecure mode) makes every later datagram of the real peer look stale and cuts it
//!   off for good. An incarnation is the sender's boot time, so a sender whose clock is
//!   ahead by more than the bound is only refused until the receiver's clock has caught
//!   up with its boot time minus 10 s (counted meanwhile).
//! - A rejected datagram never changes the guard's state.
//! - Memory is O(roster): one window of [`WINDOW`] bits per sender.
//!
//! Not covered (see docs/security.md): the windows live in memory only, so a receiver
//! that restarts accepts, once each, datagrams of its peers' *current* incarnations
//! that it had already seen before the restart.

use crate::NodeId;
use std::collections::HashMap;

/// Counters remembered per sender (a multiple of 64).
pub const WINDOW: u64 = 1024;
const WORDS: usize = (WINDOW / 64) as usize;
/// How far (µs) a sender's incarnation may be ahead of the local clock: 10 s.
pub const MAX_FUTURE: u64 = 10 * 1_000_000;

/// Why the guard refused a datagram (the `reason` labels are stable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The datagram's counter was seen before or fell behind the window.
    #[error("counter {0} already seen or older than the replay window")]
    Replay(u64),
    /// The sender restarted since: this datagram is from an earlier life.
    #[error("incarnation {got} is older than the sender's current {current}")]
    StaleIncarnation {
        /// The datagram's incarnation.
        got: u64,
        /// The sender's current incarnation, as this node knows it.
        current: u64,
    },
    /// An incarnation (microseconds since the epoch) too far in the future.
    #[error("incarnation {0} is more than 10 s ahead of the local clock")]
    FutureIncarnation(u64),
}

impl ReplayError {
    /// The `reason` label of `electd_invalid_datagrams_total`.
    pub fn reason(&self) -> &'static str {
        match self {
            ReplayError::Replay(_) => "replay",
            ReplayError::StaleIncarnation { .. } => "stale_incarnation",
            ReplayError::FutureIncarnation(_) => "future_incarnation",
        }
    }

    /// Every [`ReplayError::reason`].
    pub const REASONS: [&'static str; 3] = ["replay", "stale_incarnation", "future_incarnation"];
}

/// The window of one sender.
#[derive(Clone, Debug)]
struct Window {
    incarnation: u64,
    /// Highest counter accepted (0: none yet).
    top: u64,
    /// Bit `i` set: counter `top - i` was accepted.
    bits: [u64; WORDS],
}

impl Window {
    fn new(incarnation: u64) -> Window {
        Window {
            incarnation,
            top: 0,
            bits: [0; WORDS],
        }
    }

    fn seen(&self, counter: u64) -> bool {
        if counter > self.top {
            return false;
        }
        let age = self.top - counter;
        if age >= WINDOW {
            return true;
        }
        self.bits[(age / 64) as usize] & (1 << (age % 64)) != 0
    }

    fn mark(&mut self, counter: u64) {
        if counter > self.top {
            self.shift(counter - self.top);
            self.top = counter;
        }
        let age = self.top - counter;
        self.bits[(age / 64) as usize] |= 1 << (age % 64);
    }

    /// Age every entry by `by` counters (bits shift towards higher ages).
    fn shift(&mut self, by: u64) {
        if by >= WINDOW {
            self.bits = [0; WORDS];
            return;
        }
        let words = (by / 64) as usize;
        let bits = (by % 64) as u32;
        for i in (0..WORDS).rev() {
            let lo = i.checked_sub(words).map_or(0, |j| self.bits[j]);
            let carry = match (bits, i.checked_sub(words + 1)) {
                (0, _) | (_, None) => 0,
                (b, Some(j)) => self.bits[j] >> (64 - b),
            };
            self.bits[i] = (lo << bits) | carry;
        }
    }
}

/// Replay windows of every sender (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct ReplayGuard {
    /// Keyed by (sender, multicast group space?): a sender's group datagrams count in
    /// their own sequence, apart from the ones addressed to this node.
    peers: HashMap<(NodeId, bool), Window>,
}

impl ReplayGuard {
    /// A guard that has seen nothing.
    pub fn new() -> ReplayGuard {
        ReplayGuard::default()
    }

    /// Accept (and record) or refuse the datagram `counter` of `from`'s `incarnation`;
    /// `now_us` is the local clock in unix microseconds.
    pub fn check(
        &mut self,
        from: NodeId,
        incarnation: u64,
        counter: u64,
        now_us: u64,
    ) -> Result<(), ReplayError> {
        self.check_in(from, false, incarnation, counter, now_us)
    }

    /// [`ReplayGuard::check`] in the sender's unicast (`group` false) or multicast group
    /// sequence.
    pub fn check_in(
        &mut self,
        from: NodeId,
        group: bool,
        incarnation: u64,
        counter: u64,
        now_us: u64,
    ) -> Result<(), ReplayError> {
        let from = (from, group);
        if incarnation > now_us.saturating_add(MAX_FUTURE) {
            return Err(ReplayError::FutureIncarnation(incarnation));
        }
        match self.peers.get_mut(&from) {
            Some(w) if incarnation < w.incarnation => Err(ReplayError::StaleIncarnation {
                got: incarnation,
                current: w.incarnation,
            }),
            Some(w) if incarnation == w.incarnation => {
                if w.seen(counter) {
                    return Err(ReplayError::Replay(counter));
                }
                w.mark(counter);
                Ok(())
            }
            _ => {
                let mut w = Window::new(incarnation);
                w.mark(counter);
                self.peers.insert(from, w);
                Ok(())
            }
        }
    }

    /// The incarnation currently accepted from `from`, if any.
    pub fn incarnation_of(&self, from: NodeId) -> Option<u64> {
        self.peers.get(&(from, false)).map(|w| w.incarnation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::rng::Rng;
    use std::collections::HashSet;

    const NOW: u64 = 1_700_000_000_000_000;

    #[test]
    fn duplicates_and_old_counters_are_replays() {
        let mut g = ReplayGuard::new();
        assert_eq!(g.check(2, 10, 5, NOW), Ok(()));
        assert_eq!(g.check(2, 10, 5, NOW), Err(ReplayError::Replay(5)));
        // Out of order inside the window is fine, once.
        assert_eq!(g.check(2, 10, 3, NOW), Ok(()));
        assert_eq!(g.check(2, 10, 3, NOW), Err(ReplayError::Replay(3)));
        assert_eq!(g.check(2, 10, 4, NOW), Ok(()));
        // Far ahead: everything at or below top - WINDOW counts as seen.
        assert_eq!(g.check(2, 10, 5 + WINDOW + 10, NOW), Ok(()));
        assert_eq!(g.check(2, 10, 15, NOW), Err(ReplayError::Replay(15)));
        assert_eq!(g.check(2, 10, 16, NOW), Ok(()));
        // Other senders have their own window.
        assert_eq!(g.check(3, 10, 5, NOW), Ok(()));
    }

    #[test]
    fn incarnations() {
        let mut g = ReplayGuard::new();
        assert_eq!(g.check(2, 10, 7, NOW), Ok(()));
        // A restart: new window, the same counters are new again.
        assert_eq!(g.check(2, 11, 7, NOW), Ok(()));
        assert_eq!(g.incarnation_of(2), Some(11));
        assert_eq!(
            g.check(2, 10, 8, NOW).map_err(|e| e.reason()),
            Err("stale_incarnation")
        );
        // A day and a microsecond ahead: refused and not recorded.
        let future = NOW + MAX_FUTURE + 1;
        assert_eq!(
            g.check(2, future, 1, NOW),
            Err(ReplayError::FutureIncarnation(future))
        );
        assert_eq!(
            g.check(2, u64::MAX, 1, NOW).unwrap_err().reason(),
            "future_incarnation"
        );
        assert_eq!(g.incarnation_of(2), Some(11));
        assert_eq!(g.check(2, 11, 8, NOW), Ok(()));
        // Exactly the bound ahead is still accepted (clock skew allowance).
        assert_eq!(g.check(2, NOW + MAX_FUTURE, 1, NOW), Ok(()));
        // u64::MAX as the local clock does not overflow.
        assert_eq!(g.check(4, u64::MAX, 1, u64::MAX), Ok(()));
    }

    /// Against a model (a set of every accepted counter): the window accepts a counter
    /// iff it was never accepted and is above `top - WINDOW`.
    #[test]
    fn matches_a_set_model_on_random_sequences() {
        let mut rng = Rng::new(9);
        for round in 0..200 {
            let mut g = ReplayGuard::new();
            let mut accepted: HashSet<u64> = HashSet::new();
            let mut top = 0u64;
            let spread = [3, 70, 1500, 5000][round % 4];
            let mut base = 1u64;
            for _ in 0..2000 {
                base += rng.below(3);
                let c = (base + rng.below(spread))
                    .saturating_sub(rng.below(spread))
                    .max(1);
                let expect = !accepted.contains(&c) && (c > top || top - c < WINDOW);
                let got = g.check(1, 5, c, NOW).is_ok();
                assert_eq!(got, expect, "round {round} counter {c} top {top}");
                if got {
                    accepted.insert(c);
                    top = top.max(c);
                }
            }
        }
    }
}
