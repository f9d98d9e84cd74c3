//! A thread of the bench that sleeps 2 ms, over and over, and keeps every oversleep of
//! 5 ms or more: when a failover is slow, whether the bench's own thread (another
//! process than the nodes) was held up at the same moment tells a stall of the whole
//! machine (the VM's vCPUs taken away, every process waiting together) from something
//! the nodes did. The failover section starts it ([`start`]); [`running`] is `None`
//! elsewhere, so the other sections pay nothing for it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Oversleeps kept at most (then the oldest half goes): hours of a machine stalling
/// every few seconds.
const KEPT: usize = 100_000;

/// The probe: its gaps, (Unix µs when the sleep began, µs it took).
pub struct StallProbe {
    gaps: Mutex<Vec<(u64, u64)>>,
    /// A thread is sleeping and measuring (between [`start`] and [`stop`]).
    running: AtomicBool,
    /// Bumped by every start and stop: a thread runs while it holds the current one.
    generation: AtomicU64,
}

static PROBE: OnceLock<StallProbe> = OnceLock::new();

/// Start the probe's thread, unless one runs. It runs until [`stop`].
pub fn start() {
    let probe = PROBE.get_or_init(|| StallProbe {
        gaps: Mutex::new(Vec::new()),
        running: AtomicBool::new(false),
        generation: AtomicU64::new(0),
    });
    if probe.running.swap(true, Ordering::SeqCst) {
        return;
    }
    let generation = probe.generation.fetch_add(1, Ordering::SeqCst) + 1;
    let spawned = std::thread::Builder::new()
        .name("stall-probe".into())
        .spawn(move || {
            while probe.generation.load(Ordering::SeqCst) == generation {
                let (at, from) = (super::unix_us(), Instant::now());
                std::thread::sleep(Duration::from_millis(2));
                let took = from.elapsed();
                if took >= Duration::from_millis(5) {
                    probe.record(at, took.as_micros() as u64);
                }
            }
        });
    if spawned.is_err() {
        probe.running.store(false, Ordering::SeqCst);
    }
}

/// Stop the probe's thread at its next wakeup (its gaps are kept).
pub fn stop() {
    if let Some(p) = PROBE.get() {
        p.running.store(false, Ordering::SeqCst);
        p.generation.fetch_add(1, Ordering::SeqCst);
    }
}

/// The probe while its thread runs: a stopped one would read as "on time".
pub fn running() -> Option<&'static StallProbe> {
    PROBE.get().filter(|p| p.running.load(Ordering::SeqCst))
}

impl StallProbe {
    fn record(&self, at_us: u64, took_us: u64) {
        let mut g = self.gaps.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() >= KEPT {
            g.drain(..KEPT / 2);
        }
        g.push((at_us, took_us));
    }

    /// The longest oversleep (ms) that overlaps `[from_us, to_us]`; `None`: none of 5 ms
    /// or more.
    pub fn longest_within(&self, from_us: u64, to_us: u64) -> Option<f64> {
        let g = self.gaps.lock().unwrap_or_else(|e| e.into_inner());
        g.iter()
            .filter(|&&(at, took)| at <= to_us && at + took >= from_us)
            .map(|&(_, took)| took as f64 / 1e3)
            .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_gap_overlapping_a_window_is_found() {
        let p = StallProbe {
            gaps: Mutex::new(Vec::new()),
            running: AtomicBool::new(false),
            generation: AtomicU64::new(0),
        };
        p.record(1_000, 6_000); // 1.000 .. 7.000 ms
        p.record(20_000, 30_000); // 20 .. 50 ms
        assert_eq!(p.longest_within(0, 500), None);
        assert_eq!(p.longest_within(6_000, 8_000), Some(6.0));
        assert_eq!(p.longest_within(0, 100_000), Some(30.0));
        assert_eq!(p.longest_within(49_000, 60_000), Some(30.0));
        assert_eq!(p.longest_within(51_000, 60_000), None);
    }

    /// A stopped probe is not "running": its silence would read as "no stall"; a
    /// second start after a stop runs a thread again.
    #[test]
    fn a_stopped_probe_is_not_read_and_a_restart_runs_again() {
        start();
        assert!(running().is_some());
        stop();
        assert!(running().is_none());
        start();
        assert!(running().is_some());
        stop();
        assert!(running().is_none());
    }
}
