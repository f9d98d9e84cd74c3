//! Rate limit for the log lines about dropped datagrams: a token bucket per reason,
//! so a flood of forged or replayed datagrams cannot flood the log (every drop is
//! still counted in `electd_invalid_datagrams_total{reason}`).
//!
//! # Contract
//! - Each reason has a bucket of [`BURST`] tokens refilled at one per [`REFILL`].
//!   A drop that finds a token is logged in full ([`Verdict::Log`]); one that does
//!   not is only counted ([`Verdict::Quiet`]).
//! - Drops that were not logged are reported later as one summary line, "N more
//!   datagrams dropped for reason X": by the next drop of that reason that finds a
//!   token ([`Verdict::Summary`]), or by [`DropLog::flush`] once a token is back.
//! - So each reason writes at most `BURST` lines plus one per `REFILL`: with 20
//!   reasons, a few lines a minute whatever the attack rate.
//! - Sans-IO: time is passed in (a duration since any origin).

use std::collections::BTreeMap;
use std::time::Duration;

/// Lines a reason may write back to back.
pub const BURST: u32 = 5;
/// One more line per this period.
pub const REFILL: Duration = Duration::from_secs(12);

/// What to log for one drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Log this drop.
    Log,
    /// Log this drop and that `n` earlier drops of the reason were not logged.
    Summary(u64),
    /// Count only.
    Quiet,
}

#[derive(Clone, Debug)]
struct Bucket {
    tokens: u32,
    /// Time the refill was last accounted up to.
    at: Duration,
    suppressed: u64,
}

/// Per-reason token buckets (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct DropLog {
    buckets: BTreeMap<&'static str, Bucket>,
}

impl Bucket {
    fn refill(&mut self, now: Duration) {
        if self.tokens >= BURST {
            self.at = now;
            return;
        }
        let elapsed = now.saturating_sub(self.at);
        let new = (elapsed.as_nanos() / REFILL.as_nanos()) as u64;
        if new > 0 {
            self.tokens = (u64::from(self.tokens) + new).min(u64::from(BURST)) as u32;
            self.at += REFILL * new.min(u64::from(u32::MAX)) as u32;
            if self.tokens >= BURST {
                self.at = now;
            }
        }
    }
}

impl DropLog {
    /// A log that has printed nothing yet.
    pub fn new() -> DropLog {
        DropLog::default()
    }

    /// One datagram dropped for `reason` at `now`.
    pub fn record(&mut self, reason: &'static str, now: Duration) -> Verdict {
        let b = self.buckets.entry(reason).or_insert(Bucket {
            tokens: BURST,
            at: now,
            suppressed: 0,
        });
        b.refill(now);
        if b.tokens == 0 {
            b.suppressed += 1;
            return Verdict::Quiet;
        }
        b.tokens -= 1;
        match std::mem::take(&mut b.suppressed) {
            0 => Verdict::Log,
            n => Verdict::Summary(n),
        }
    }

    /// Summaries due at `now`: (reason, drops not logged yet), for every reason with
    /// unlogged drops and a token to spend.
    pub(crate) fn flush(&mut self, now: Duration) -> Vec<(&'static str, u64)> {
        let mut out = Vec::new();
        for (reason, b) in self.buckets.iter_mut() {
            if b.suppressed == 0 {
                continue;
            }
            b.refill(now);
            if b.tokens > 0 {
                b.tokens -= 1;
                out.push((*reason, std::mem::take(&mut b.suppressed)));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_logged_a_few_times_then_summarised() {
        let mut log = DropLog::new();
        let t0 = Duration::from_secs(100);
        let verdicts: Vec<Verdict> = (0..10_000).map(|_| log.record("bad_tag", t0)).collect();
        let logged = verdicts.iter().filter(|v| **v != Verdict::Quiet).count();
        assert_eq!(logged, BURST as usize);
        // Another reason has its own bucket.
        assert_eq!(log.record("replay", t0), Verdict::Log);
        // Nothing to flush before a token is back…
        assert!(log.flush(t0 + REFILL / 2).is_empty());
        // …then one summary of everything not logged.
        let quiet = 10_000 - u64::from(BURST);
        assert_eq!(log.flush(t0 + REFILL), vec![("bad_tag", quiet)]);
        assert!(log.flush(t0 + REFILL).is_empty());
        // Over an hour of flooding at 1 000 drops a second: at most BURST + 1/REFILL
        // lines, and every drop is reported exactly once (logged, or in a summary).
        let mut lines = 0u64;
        let mut reported = 0u64;
        let total = 3_600_000u64;
        let start = t0 + REFILL;
        for ms in 0..total {
            match log.record("bad_tag", start + Duration::from_millis(ms)) {
                Verdict::Quiet => {}
                Verdict::Log => {
                    lines += 1;
                    reported += 1;
                }
                Verdict::Summary(n) => {
                    lines += 1;
                    reported += n + 1;
                }
            }
        }
        let periods = 3600 / REFILL.as_secs();
        assert!(lines <= u64::from(BURST) + periods, "{lines} lines");
        assert!(lines >= periods - 1, "{lines} lines");
        let end = start + Duration::from_secs(3600) + REFILL;
        reported += log.flush(end).iter().map(|(_, n)| n).sum::<u64>();
        assert_eq!(reported, total);
    }

    #[test]
    fn a_quiet_period_restores_the_burst() {
        let mut log = DropLog::new();
        let t0 = Duration::ZERO;
        for _ in 0..BURST {
            assert_eq!(log.record("cluster", t0), Verdict::Log);
        }
        assert_eq!(log.record("cluster", t0), Verdict::Quiet);
        assert_eq!(log.record("cluster", t0), Verdict::Quiet);
        let later = t0 + REFILL * (BURST + 3);
        assert_eq!(log.record("cluster", later), Verdict::Summary(2));
        for _ in 1..BURST {
            assert_eq!(log.record("cluster", later), Verdict::Log);
        }
        assert_eq!(log.record("cluster", later), Verdict::Quiet);
    }
}
