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
//! - **No single datagram moves a window for good** (docs/security.md, "One
//!   datagram"). A higher incarnation (the sender restarted) starts a fresh window at
//!   once, and the window it displaces is kept as a *rival* (in a side table, only
//!   while it is pending; at most [`rivals::RIVALS`] per sender, the lowest incarnation
//!   dropped for a third); a datagram of the current incarnation more than [`WINDOW`]
//!   counters ahead opens a rival window of its own. Datagrams of a rival are checked
//!   and accepted in its window (the node's link does not deliver those of a rival
//!   incarnation, by the same rule). A rival heard twice in a row (no datagram of the
//!   current window in between) is taken: a displaced incarnation back where it was,
//!   the one that displaced it and any other rival forgotten (it was forged: it is
//!   silent); a counter jump (more than [`WINDOW`] datagrams lost) as the window from
//!   then on, the old window the rival in turn. The rivals are dropped when the
//!   current window is heard twice in a row (after the datagram that made it current:
//!   two forged datagrams of one incarnation do not drop the real one). A lower
//!   incarnation is `stale_incarnation`
//!   unless it is a rival's, or the current window has had only its first datagram
//!   (which may be the forged one) and there is no rival yet, or it is above a
//!   rival's (a sender that restarted just before a forged datagram came: its real new
//!   incarnation opens a rival window of its own).
//! - An incarnation more than [`MAX_FUTURE`] (10 s) ahead of the receiver's clock is
//!   `future_incarnation` and is **not** recorded (boot times that far ahead are not
//!   real; the rival rule above is what keeps a forged incarnation inside the bound
//!   from cutting a sender off). An incarnation is the sender's boot time, so a
//!   sender whose clock is ahead by more than the bound is refused until the
//!   receiver's clock has caught up with its boot time minus 10 s (counted meanwhile).
//! - A rejected datagram never changes the guard's state.
//! - Memory is O(roster): one window of [`WINDOW`] bits per sender, and a second one
//!   per sender with a rival pending.
//!
//! Not covered (see docs/security.md): the windows live in memory only, so a receiver
//! that restarts accepts, once each, datagrams of its peers' *current* incarnations
//! that it had already seen before the restart.

use crate::node::link::rivals::{self, keep, IN_A_ROW};
use crate::NodeId;
use std::collections::HashMap;

/// Counters remembered per sender (a multiple of 64).
pub(crate) const WINDOW: u64 = 1024;
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
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            ReplayError::Replay(_) => "replay",
            ReplayError::StaleIncarnation { .. } => "stale_incarnation",
            ReplayError::FutureIncarnation(_) => "future_incarnation",
        }
    }

    /// Every [`ReplayError::reason`].
    pub(crate) const REASONS: [&'static str; 3] =
        ["replay", "stale_incarnation", "future_incarnation"];
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

impl Window {
    /// Does counter `counter` of `incarnation` belong to this window: its
    /// incarnation, and within [`WINDOW`] counters of its top either way?
    fn near(&self, incarnation: u64, counter: u64) -> bool {
        incarnation == self.incarnation
            && counter <= self.top.saturating_add(WINDOW)
            && counter.saturating_add(WINDOW) > self.top
    }
}

/// The window of one sender (per sequence space).
#[derive(Clone, Debug)]
struct Sender {
    window: Window,
    /// The window has had only its first datagram and there is no rival yet: a lower
    /// incarnation may still become the rival.
    unconfirmed: bool,
}

/// A rival window while one is pending (see the module documentation).
#[derive(Clone, Debug)]
struct Rival {
    window: Window,
    /// Its datagrams since the current window's last one.
    run: u8,
    /// The current window's datagrams since the rival's last one.
    current_run: u8,
}

impl rivals::Rival for Rival {
    fn incarnation(&self) -> u64 {
        self.window.incarnation
    }
    fn runs(&mut self) -> (&mut u8, &mut u8) {
        (&mut self.run, &mut self.current_run)
    }
}

/// Replay windows of every sender (see the module documentation).
#[derive(Clone, Debug, Default)]
pub(crate) struct ReplayGuard {
    /// Keyed by (sender, multicast group space?): a sender's group datagrams count in
    /// their own sequence, apart from the ones addressed to this node.
    peers: HashMap<(NodeId, bool), Sender>,
    /// The rival windows of a sender (at most [`rivals::RIVALS`]), while one is pending.
    rivals: HashMap<(NodeId, bool), Vec<Rival>>,
}

impl ReplayGuard {
    /// A guard that has seen nothing.
    pub(crate) fn new() -> ReplayGuard {
        ReplayGuard::default()
    }

    #[cfg(test)]
    /// Accept (and record) or refuse the datagram `counter` of `from`'s `incarnation`;
    /// `now_us` is the local clock in unix microseconds.
    pub(crate) fn check(
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
    pub(crate) fn check_in(
        &mut self,
        from: NodeId,
        group: bool,
        incarnation: u64,
        counter: u64,
        now_us: u64,
    ) -> Result<(), ReplayError> {
        let key = (from, group);
        if incarnation > now_us.saturating_add(MAX_FUTURE) {
            return Err(ReplayError::FutureIncarnation(incarnation));
        }
        let Some(s) = self.peers.get_mut(&key) else {
            let mut window = Window::new(incarnation);
            window.mark(counter);
            self.peers.insert(
                key,
                Sender {
                    window,
                    unconfirmed: true,
                },
            );
            return Ok(());
        };
        if s.window.near(incarnation, counter) {
            if s.window.seen(counter) {
                return Err(ReplayError::Replay(counter));
            }
            s.window.mark(counter);
            s.unconfirmed = false;
            if let Some(rs) = self.rivals.get_mut(&key) {
                rivals::heard_current(rs);
                if rs.is_empty() {
                    self.rivals.remove(&key);
                }
            }
            return Ok(());
        }
        let rs = self.rivals.entry(key).or_default();
        if let Some(k) = rs.iter().position(|r| r.window.near(incarnation, counter)) {
            let r = &mut rs[k];
            if r.window.seen(counter) {
                if rs.is_empty() {
                    self.rivals.remove(&key);
                }
                return Err(ReplayError::Replay(counter));
            }
            r.window.mark(counter);
            r.run = r.run.saturating_add(1);
            r.current_run = 0;
            if r.run >= IN_A_ROW {
                s.unconfirmed = false;
                if r.window.incarnation == s.window.incarnation {
                    // A counter jump: the window from now on; the one it replaces
                    // is the rival.
                    std::mem::swap(&mut s.window, &mut r.window);
                    r.run = 0;
                } else {
                    // An incarnation taken back where it was; the one that displaced
                    // it (and any other rival) is forgotten.
                    let r = rs.swap_remove(k);
                    s.window = r.window;
                    self.rivals.remove(&key);
                }
            }
            return Ok(());
        }
        let current = s.window.incarnation;
        if incarnation == current && counter <= s.window.top {
            if rs.is_empty() {
                self.rivals.remove(&key);
            }
            return Err(ReplayError::Replay(counter));
        }
        let was_unconfirmed = std::mem::replace(&mut s.unconfirmed, false);
        if incarnation > current {
            // A restart (or a forged datagram): the window at once. The one it
            // displaces is a rival (in place of a counter-jump rival of its
            // incarnation).
            let mut window = Window::new(incarnation);
            window.mark(counter);
            let old = std::mem::replace(&mut s.window, window);
            rivals::displaced(
                rs,
                Rival {
                    window: old,
                    run: 0,
                    current_run: 0,
                },
            );
            return Ok(());
        }
        let open = if incarnation == current {
            // A counter jump opens a rival window whatever else is pending (a sender
            // that restarted, was heard once, then lost more than `WINDOW` datagrams
            // to this node must be heard again: its current window never will be).
            true
        } else {
            // Lower: after a first datagram (which may have been forged), or a later
            // life than a pending rival (the sender restarted, and one forged datagram
            // came before its new life was confirmed).
            (was_unconfirmed && rs.is_empty())
                || rs.iter().any(|r| r.window.incarnation < incarnation)
        };
        if !open {
            // Refused: no change (the flag as it was).
            s.unconfirmed = was_unconfirmed;
            if rs.is_empty() {
                self.rivals.remove(&key);
            }
            return Err(if incarnation == current {
                ReplayError::Replay(counter)
            } else {
                ReplayError::StaleIncarnation {
                    got: incarnation,
                    current,
                }
            });
        }
        let mut window = Window::new(incarnation);
        window.mark(counter);
        keep(
            rs,
            Rival {
                window,
                run: 1,
                current_run: 0,
            },
        );
        Ok(())
    }

    /// The incarnation currently accepted from `from`, if any.
    pub(crate) fn incarnation_of(&self, from: NodeId) -> Option<u64> {
        self.peers.get(&(from, false)).map(|s| s.window.incarnation)
    }

    #[cfg(test)]
    /// Senders with a rival window pending (a restart or a forgery not yet settled).
    pub(crate) fn rivals_pending(&self) -> usize {
        self.rivals.values().map(Vec::len).sum()
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
        // Far ahead (a jump past the window, taken at its second datagram, the old
        // window dropped after two more): everything at or below top - WINDOW counts
        // as seen.
        let top = 5 + WINDOW + 11;
        for c in [top - 1, top, top - 2, top - 3] {
            assert_eq!(g.check(2, 10, c, NOW), Ok(()));
        }
        assert_eq!(g.rivals_pending(), 0);
        assert_eq!(g.check(2, 10, 16, NOW), Err(ReplayError::Replay(16)));
        assert_eq!(g.check(2, 10, 17, NOW), Ok(()));
        // Other senders have their own window.
        assert_eq!(g.check(3, 10, 5, NOW), Ok(()));
    }

    #[test]
    fn incarnations() {
        let mut g = ReplayGuard::new();
        assert_eq!(g.check(2, 10, 7, NOW), Ok(()));
        assert_eq!(g.check(2, 10, 8, NOW), Ok(()));
        // A restart: new window, the same counters are new again; the old one is
        // dropped once the new one is heard twice in a row.
        assert_eq!(g.check(2, 11, 7, NOW), Ok(()));
        assert_eq!(g.incarnation_of(2), Some(11));
        assert_eq!(g.rivals_pending(), 1);
        assert_eq!(g.check(2, 11, 8, NOW), Ok(()));
        assert_eq!(g.check(2, 11, 9, NOW), Ok(()));
        assert_eq!(g.rivals_pending(), 0);
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
        assert_eq!(g.check(2, 11, 10, NOW), Ok(()));
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
            // Jumps stay below the window (a larger one opens a rival window: see
            // `one_datagram_moves_no_window_for_good`); ages go past it.
            let spread = [3, 70, 600, 1000][round % 4];
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

    /// The rival rule: after one datagram, of a higher incarnation inside the future
    /// bound, or of the current one with a counter far ahead, or the first one ever
    /// heard, the sender's real datagrams are accepted and its second one in a row
    /// has its window back; so after two forged ones; a real jump (more than `WINDOW`
    /// datagrams lost) is taken at its second datagram.
    #[test]
    fn one_datagram_moves_no_window_for_good() {
        let forged = NOW + MAX_FUTURE - 1;
        for one in [(forged, 1), (NOW, 1 << 40), (NOW, u64::MAX)] {
            let mut g = ReplayGuard::new();
            for c in 1..=5 {
                assert_eq!(g.check(2, NOW, c, NOW), Ok(()));
            }
            assert_eq!(g.check(2, one.0, one.1, NOW), Ok(()), "{one:?}");
            for c in 6..=9 {
                assert_eq!(g.check(2, NOW, c, NOW), Ok(()), "{one:?} then {c}");
            }
            assert_eq!(g.rivals_pending(), 0);
            assert_eq!(g.check(2, NOW, 5, NOW), Err(ReplayError::Replay(5)));
            // Two in a row displace the window; the real sender's two take it back.
            assert_eq!(g.check(2, one.0, one.1 ^ 2, NOW), Ok(()));
            assert_eq!(g.check(2, one.0, one.1 ^ 4, NOW), Ok(()));
            assert_eq!(g.incarnation_of(2), Some(one.0));
            assert_eq!(g.check(2, NOW, 10, NOW), Ok(()));
            assert_eq!(g.check(2, NOW, 10, NOW), Err(ReplayError::Replay(10)));
            assert_eq!(g.check(2, NOW, 11, NOW), Ok(()));
            assert_eq!(g.incarnation_of(2), Some(NOW));
            assert_eq!(g.check(2, NOW, 4, NOW), Err(ReplayError::Replay(4)), "kept");
        }
        // A real jump: the sender's datagrams after a long loss, accepted at once and
        // the window moved at the second one; the old counters are then too old.
        let mut g = ReplayGuard::new();
        assert_eq!(g.check(2, NOW, 1, NOW), Ok(()));
        let far = 1 + 10 * WINDOW;
        for c in far..far + 4 {
            assert_eq!(g.check(2, NOW, c, NOW), Ok(()));
        }
        assert_eq!(g.rivals_pending(), 0);
        assert_eq!(g.check(2, NOW, 2, NOW), Err(ReplayError::Replay(2)));
        assert_eq!(g.check(2, NOW, far, NOW), Err(ReplayError::Replay(far)));
        // The first datagram ever heard is a forged one from the future: the real,
        // lower incarnation is accepted and becomes the window at its second one.
        let mut g = ReplayGuard::new();
        assert_eq!(g.check(2, forged, 1, NOW), Ok(()));
        assert_eq!(g.check(2, NOW - 5, 1, NOW), Ok(()));
        assert_eq!(g.check(2, NOW - 5, 2, NOW), Ok(()));
        assert_eq!(g.incarnation_of(2), Some(NOW - 5));
        // Once a window was heard twice, a lower incarnation is stale.
        assert_eq!(g.check(3, NOW, 1, NOW), Ok(()));
        assert_eq!(g.check(3, NOW, 2, NOW), Ok(()));
        assert_eq!(
            g.check(3, NOW - 1, 1, NOW).map_err(|e| e.reason()),
            Err("stale_incarnation")
        );
    }

    /// A restart not yet confirmed, then one forged datagram from further ahead (the
    /// nemesis run at fb9bbe7): the sender's real new incarnation, between its old
    /// window (still a pending rival) and the forged one, opens a rival window of its
    /// own and is the window at its second datagram, whether one of its datagrams came
    /// before the forged one or none; the old incarnation is stale after that.
    #[test]
    fn a_restart_then_one_forged_datagram_moves_no_window_for_good() {
        let restart = NOW + 3_000_000;
        let forged = restart + MAX_FUTURE - 1;
        for heard_first in [0, 1] {
            let mut g = ReplayGuard::new();
            for c in 1..=5 {
                assert_eq!(g.check(2, NOW, c, NOW), Ok(()));
            }
            let mut c = 1;
            for _ in 0..heard_first {
                assert_eq!(g.check(2, restart, c, restart), Ok(()));
                c += 1;
            }
            assert_eq!(g.check(2, forged, 1, restart), Ok(()));
            assert_eq!(g.incarnation_of(2), Some(forged));
            assert_eq!(g.check(2, restart, c, restart), Ok(()), "{heard_first}");
            assert_eq!(g.check(2, restart, c + 1, restart), Ok(()), "{heard_first}");
            assert_eq!(g.incarnation_of(2), Some(restart), "{heard_first}");
            assert_eq!(g.rivals_pending(), 0);
            assert_eq!(g.check(2, restart, c, restart), Err(ReplayError::Replay(c)));
            assert_eq!(
                g.check(2, NOW, 6, restart).map_err(|e| e.reason()),
                Err("stale_incarnation")
            );
        }
        // Bounded: a third pending incarnation drops the lowest.
        let mut g = ReplayGuard::new();
        assert_eq!(g.check(2, NOW, 1, NOW), Ok(()));
        assert_eq!(g.check(2, NOW, 2, NOW), Ok(()));
        for k in 1..=4 {
            assert_eq!(g.check(2, NOW + k, 1, NOW), Ok(()));
        }
        assert_eq!(g.rivals_pending(), rivals::RIVALS);
    }

    /// A sender restarts, this node hears its new life once or twice (the old one
    /// still a pending rival), then loses more than `WINDOW` of its datagrams: the
    /// jump is accepted at once and is the window at its second datagram, as without a
    /// restart. It was refused as `replay` for as long as the jump lasted, which is
    /// for good (the audit's eight in a row).
    #[test]
    fn a_jump_right_after_a_restart_is_accepted() {
        let restart = NOW + 3_000_000;
        for heard in [1u64, 2] {
            let mut g = ReplayGuard::new();
            for c in 1..=5 {
                assert_eq!(g.check(2, NOW, c, NOW), Ok(()));
            }
            for c in 1..=heard {
                assert_eq!(g.check(2, restart, c, restart), Ok(()));
            }
            assert_eq!(g.rivals_pending(), 1, "the old life is still a rival");
            let far = heard + 2 * WINDOW;
            for c in far..far + 8 {
                assert_eq!(g.check(2, restart, c, restart), Ok(()), "{heard}: {c}");
            }
            assert_eq!(g.incarnation_of(2), Some(restart));
            assert_eq!(g.rivals_pending(), 0, "{heard}");
            assert_eq!(
                g.check(2, restart, far + 3, restart),
                Err(ReplayError::Replay(far + 3))
            );
            assert_eq!(g.check(2, restart, 1, restart), Err(ReplayError::Replay(1)));
            assert_eq!(
                g.check(2, NOW, 6, restart).map_err(|e| e.reason()),
                Err("stale_incarnation")
            );
        }
    }
}
