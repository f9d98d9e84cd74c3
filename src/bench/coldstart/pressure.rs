//! What a failover waited for: the kernel's pressure stall information (PSI,
//! `/proc/pressure/cpu` and `/proc/pressure/io`) sampled while it runs, and the nodes'
//! own state-write and timer histograms.
//!
//! Beside PSI, the cores' own idle time (`cpuidle`'s per-state residency in
//! `/sys/devices/system/cpu/cpu*/cpuidle/state*/time`, µs, or else `/proc/stat`'s idle
//! and iowait, in 10 ms ticks): over a window, one minus its growth ÷ (the window × the
//! cores) is the share of the cores' time they were busy. PSI alone misses a pipeline:
//! a ring of processes each woken by the one before keeps two cores busy with the hop
//! on the path and the work beside it (acknowledgements, their wakeups) while only
//! now and then a task waits for a core (docs/bench/ANALYSIS.md, round 28). A
//! residency is counted when its idle period ends, so a window's figure can be off by
//! the idle periods that straddle its ends: short ones on busy cores, but a window
//! opening in a long idle stretch is charged all of it and reads low (none at all when
//! that makes the idle time exceed the window: no figure then). `/proc/stat`
//! counts in ticks of 10 ms, too coarse for a failover's tens of milliseconds: from it,
//! a window shorter than [`MIN_TICKS_WINDOW`] ticks has no figure.
//!
//! PSI's `some` line counts, in microseconds since boot, the time during which at least
//! one runnable task waited for a core (`cpu`) or at least one task waited for I/O
//! (`io`; the state files' `fdatasync` does not always show there: on this project's
//! VM a run whose writes took 13 ms on average showed 6 %, so the report also reads the
//! writes' own times). Over a window, its growth ÷ the window is
//! the share of that window the machine was short of the resource: 100 % CPU
//! pressure means some node was always ready to run and had no core. A 2-core machine
//! running 64 or 256 nodes shows which resource a slow failover ran out of, figures
//! included, without a profiler.

use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// One reading of the pressure counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// When it was read, Unix µs.
    pub at_us: u64,
    /// `some total` of `/proc/pressure/cpu`, µs.
    pub cpu_us: u64,
    /// `some total` of `/proc/pressure/io`, µs.
    pub io_us: u64,
    /// The cores' idle time ([`idle_total`]; `None` when neither source can be read).
    pub idle: Option<Idle>,
}

/// The idle time of every core, summed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Idle {
    /// µs.
    pub us: u64,
    /// How many cores it is summed over.
    pub cpus: u32,
    /// The counter's resolution, µs: 0 for `cpuidle`'s (µs), 10,000 for `/proc/stat`'s.
    pub tick_us: u64,
}

/// A window read from a counter of ticks spans at least this many of them (an error of
/// a tick at each end, under 4 % of it).
pub const MIN_TICKS_WINDOW: u64 = 50;

/// The idle time of every core: `cpuidle`'s residencies where the kernel has them,
/// else `/proc/stat`'s idle and iowait.
pub fn idle_total() -> Option<Idle> {
    cpuidle_total().or_else(|| stat_idle(&std::fs::read_to_string("/proc/stat").ok()?))
}

/// The sum of `/sys/devices/system/cpu/cpu*/cpuidle/state*/time` (µs) and the number
/// of cores that have them (`None`: no `cpuidle` in this kernel or VM). The files are
/// found once ([`cpuidle_files`]); each reading only reads them.
fn cpuidle_total() -> Option<Idle> {
    let cores = cpuidle_files();
    let mut total = 0u64;
    for us in cores.iter().flatten().map(|f| {
        std::fs::read_to_string(f)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
    }) {
        total = total.saturating_add(us?);
    }
    let cpus = u32::try_from(cores.len()).ok().filter(|&c| c > 0)?;
    Some(Idle {
        us: total,
        cpus,
        tick_us: 0,
    })
}

/// Each core's `cpuidle` state `time` files, listed once per process (cores without
/// any are left out).
fn cpuidle_files() -> &'static [Vec<std::path::PathBuf>] {
    static FILES: std::sync::OnceLock<Vec<Vec<std::path::PathBuf>>> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu") else {
            return Vec::new();
        };
        let mut cores = Vec::new();
        for cpu in dir.flatten() {
            let name = cpu.file_name();
            let Some(n) = name.to_str().and_then(|n| n.strip_prefix("cpu")) else {
                continue;
            };
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(states) = std::fs::read_dir(cpu.path().join("cpuidle")) else {
                continue;
            };
            let files: Vec<_> = states
                .flatten()
                .map(|st| st.path().join("time"))
                .filter(|f| f.is_file())
                .collect();
            if !files.is_empty() {
                cores.push(files);
            }
        }
        cores
    })
}

/// `/proc/stat`'s idle and iowait over every core, µs (its ticks are 1/100 s on Linux,
/// `USER_HZ`), and the number of `cpuN` lines.
pub fn stat_idle(text: &str) -> Option<Idle> {
    const US_PER_TICK: u64 = 10_000;
    let total = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = total
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let idle = f.get(3)?.checked_add(*f.get(4)?)?;
    let cpus = text
        .lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    let cpus = u32::try_from(cpus).ok().filter(|&c| c > 0)?;
    Some(Idle {
        us: idle.saturating_mul(US_PER_TICK),
        cpus,
        tick_us: US_PER_TICK,
    })
}

/// The `some` line's `total=` of a `/proc/pressure/*` file, µs.
pub fn some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// Read the counters now (`None`: no PSI in this kernel, or a file that does not
/// parse).
pub fn sample() -> Option<Sample> {
    let read = |p: &str| some_total(&std::fs::read_to_string(p).ok()?);
    Some(Sample {
        at_us: super::super::unix_us(),
        cpu_us: read("/proc/pressure/cpu")?,
        io_us: read("/proc/pressure/io")?,
        idle: idle_total(),
    })
}

/// Shares of a window during which the machine was short of a resource.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Pressure {
    /// The window actually covered by the samples around the one asked for, ms.
    pub window_ms: f64,
    /// Share of it during which some runnable task waited for a core (0..=1).
    pub cpu: f64,
    /// Share of it during which some task waited for I/O (0..=1).
    pub io: f64,
    /// Share of the cores' time over it that they were busy (0..=1; `None` without
    /// idle counters on both samples, or a window too short for their resolution).
    pub busy: Option<f64>,
}

/// The pressure over `[from_us, to_us]`, from the last sample at or before `from_us`
/// to the first at or after `to_us` (`None` when the samples do not cover the window:
/// no PSI, or a window outside them).
pub fn over(samples: &[Sample], from_us: u64, to_us: u64) -> Option<Pressure> {
    let a = samples.iter().rev().find(|s| s.at_us <= from_us)?;
    let b = samples.iter().find(|s| s.at_us >= to_us)?;
    let span = b.at_us.checked_sub(a.at_us).filter(|&s| s > 0)? as f64;
    let share = |x: u64, y: u64| (y.saturating_sub(x) as f64 / span).min(1.0);
    let busy = match (a.idle, b.idle) {
        (Some(i0), Some(i1))
            if i0.cpus == i1.cpus
                && i0.cpus > 0
                && i0.tick_us == i1.tick_us
                && span >= (i0.tick_us * MIN_TICKS_WINDOW) as f64 =>
        {
            // More idle time than the cores had: a residency begun before the window
            // was counted in it (see the module documentation), no figure.
            let idle = i1.us.saturating_sub(i0.us) as f64 / (span * f64::from(i0.cpus));
            (idle <= 1.0).then_some(1.0 - idle)
        }
        _ => None,
    };
    Some(Pressure {
        window_ms: span / 1e3,
        cpu: share(a.cpu_us, b.cpu_us),
        io: share(a.io_us, b.io_us),
        busy,
    })
}

/// A thread reading the counters: once at its start, then every `every` from `from_us`
/// (Unix µs) until stopped, for at most `bound`.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Sample>>>,
    /// When the first sample was read (Unix µs).
    first_us: Option<u64>,
}

impl Sampler {
    /// Start sampling (no thread, and no samples, when PSI cannot be read).
    pub fn start(from_us: u64, every: Duration, bound: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let Some(first) = sample() else {
            return Sampler {
                stop,
                thread: None,
                first_us: None,
            };
        };
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("bench-psi".into())
            .spawn(move || {
                let mut out = vec![first];
                let until = first.at_us + bound.as_micros() as u64;
                // Until the window opens the counters are read once: the samples only
                // need to bracket the window.
                let wait = from_us.saturating_sub(super::super::unix_us());
                std::thread::sleep(Duration::from_micros(wait).min(bound));
                while !flag.load(Ordering::Relaxed) {
                    match sample() {
                        Some(s) if s.at_us <= until => out.push(s),
                        _ => break,
                    }
                    std::thread::sleep(every); // a sampling period, not a synchronisation
                }
                // One more after the stop: it brackets a window that ends just before.
                out.extend(sample());
                out
            })
            .ok();
        Sampler {
            stop,
            thread,
            first_us: Some(first.at_us),
        }
    }

    /// Stop and return the samples, oldest first.
    pub fn finish(mut self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Pressure over a phase that starts now and ends at an [`Instant`] known later (a
/// cold start: from before the first spawn to the agreement).
pub struct Watch {
    from_us: u64,
    from: std::time::Instant,
    sampler: Sampler,
}

impl Watch {
    /// Start reading the counters every millisecond, for at most `bound`. The phase
    /// starts at the first reading (a window must begin at or after a sample).
    pub fn start(bound: Duration) -> Watch {
        let from = std::time::Instant::now();
        let sampler = Sampler::start(0, Duration::from_millis(1), bound);
        Watch {
            from_us: sampler.first_us.unwrap_or_else(super::super::unix_us),
            from,
            sampler,
        }
    }

    /// Stop, and the pressure from the start to `end` (`None` without an end or
    /// without samples around the window).
    pub fn until(self, end: Option<std::time::Instant>) -> Option<Pressure> {
        let samples = self.sampler.finish();
        let to = self.from_us + end?.saturating_duration_since(self.from).as_micros() as u64;
        over(&samples, self.from_us, to)
    }
}

/// The nodes' waits over a phase, from their histograms (`electd_state_write_seconds`,
/// `electd_timer_lateness_seconds`), summed over the nodes read.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Waits {
    /// State-file writes completed (each ends with an `fdatasync`).
    pub state_writes: u64,
    /// Their total duration, s.
    pub state_write_s: f64,
    /// Timers fired.
    pub timers: u64,
    /// Their total lateness (fired after their deadline), s.
    pub timer_late_s: f64,
}

impl Waits {
    /// Read from one node's `/metrics` text.
    pub fn of_metrics(text: &str) -> Waits {
        use electd::http::client::metric_sum;
        Waits {
            state_writes: metric_sum(text, "electd_state_write_seconds_count", &[]) as u64,
            state_write_s: metric_sum(text, "electd_state_write_seconds_sum", &[]),
            timers: metric_sum(text, "electd_timer_lateness_seconds_count", &[]) as u64,
            timer_late_s: metric_sum(text, "electd_timer_lateness_seconds_sum", &[]),
        }
    }

    pub fn add(&mut self, o: Waits) {
        self.state_writes += o.state_writes;
        self.state_write_s += o.state_write_s;
        self.timers += o.timers;
        self.timer_late_s += o.timer_late_s;
    }

    /// What happened between `before` and `self` (counters only grow; a node that
    /// restarted in between would show less, read as nothing).
    pub fn since(self, before: Waits) -> Waits {
        Waits {
            state_writes: self.state_writes.saturating_sub(before.state_writes),
            state_write_s: (self.state_write_s - before.state_write_s).max(0.0),
            timers: self.timers.saturating_sub(before.timers),
            timer_late_s: (self.timer_late_s - before.timer_late_s).max(0.0),
        }
    }

    /// Mean state write, ms (`None` without writes).
    pub fn write_ms(&self) -> Option<f64> {
        (self.state_writes > 0).then(|| self.state_write_s * 1e3 / self.state_writes as f64)
    }

    /// Mean timer lateness, ms (`None` without timers).
    pub fn late_ms(&self) -> Option<f64> {
        (self.timers > 0).then(|| self.timer_late_s * 1e3 / self.timers as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_some_line_total_is_read_and_anything_else_refused() {
        let text = "some avg10=0.08 avg60=2.41 avg300=3.38 total=11286046886\n\
                    full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n";
        assert_eq!(some_total(text), Some(11_286_046_886));
        assert_eq!(some_total("full avg10=0.00 total=7\n"), None);
        assert_eq!(some_total("some avg10=0.08 total=x\n"), None);
        assert_eq!(some_total(""), None);
    }

    fn s(at_us: u64, cpu_us: u64, io_us: u64) -> Sample {
        Sample {
            at_us,
            cpu_us,
            io_us,
            idle: None,
        }
    }

    #[test]
    fn the_cores_busy_share_is_one_minus_their_idle_time_over_the_window() {
        let fine = |us: u64, cpus: u32| {
            Some(Idle {
                us,
                cpus,
                tick_us: 0,
            })
        };
        let at = |at_us: u64, idle: Option<Idle>| Sample {
            idle,
            ..s(at_us, 0, 0)
        };
        // Two cores over 10 ms (20 ms of core time), 5 ms of it idle: busy 75 %.
        let samples = [at(0, fine(1_000, 2)), at(10_000, fine(6_000, 2))];
        let p = over(&samples, 0, 10_000).expect("covered");
        assert_eq!(p.busy, Some(0.75));
        // Idle the whole window: 0; a counter that grew more than the window (a
        // residency counted at its end, begun before the window): no figure.
        let idle = [at(0, fine(0, 2)), at(10_000, fine(20_000, 2))];
        assert_eq!(over(&idle, 0, 10_000).and_then(|p| p.busy), Some(0.0));
        let over_full = [at(0, fine(0, 2)), at(10_000, fine(30_000, 2))];
        assert_eq!(over(&over_full, 0, 10_000).map(|p| p.busy), Some(None));
        // No figure without counters on both ends, or with a core count that changed.
        let missing = [at(0, None), at(10_000, fine(6_000, 2))];
        assert_eq!(over(&missing, 0, 10_000).map(|p| p.busy), Some(None));
        let hotplug = [at(0, fine(0, 2)), at(10_000, fine(5_000, 3))];
        assert_eq!(over(&hotplug, 0, 10_000).map(|p| p.busy), Some(None));
        // From ticks of 10 ms: no figure over 10 ms, one over 500 ms.
        let ticks = |at_us: u64, us: u64| {
            at(
                at_us,
                Some(Idle {
                    us,
                    cpus: 2,
                    tick_us: 10_000,
                }),
            )
        };
        let short = [ticks(0, 0), ticks(10_000, 10_000)];
        assert_eq!(over(&short, 0, 10_000).map(|p| p.busy), Some(None));
        let long = [ticks(0, 0), ticks(500_000, 250_000)];
        assert_eq!(over(&long, 0, 500_000).and_then(|p| p.busy), Some(0.75));
    }

    #[test]
    fn proc_stat_idle_and_iowait_are_read_in_microseconds_with_the_core_count() {
        let text = "cpu  2093621 186582 473442 2547827 13506 0 57847 732 0 0\n\
                    cpu0 1019797 83999 230895 1324013 2882 0 24736 369 0 0\n\
                    cpu1 1073823 102583 242546 1223814 10624 0 33110 362 0 0\n\
                    intr 1 2 3\n";
        assert_eq!(
            stat_idle(text),
            Some(Idle {
                us: (2_547_827 + 13_506) * 10_000,
                cpus: 2,
                tick_us: 10_000,
            })
        );
        assert_eq!(stat_idle("cpu  1 2 3\ncpu0 1 2 3 4 5\n"), None);
        assert_eq!(stat_idle("cpu  1 2 3 x 5\ncpu0 1 2 3 4 5\n"), None);
        assert_eq!(stat_idle("cpu  1 2 3 4 5\n"), None);
        assert_eq!(stat_idle(""), None);
    }

    /// This machine's counters, read twice: the same cores both times, and no more idle
    /// time than the time since boot on every core.
    #[test]
    fn the_idle_counters_of_this_machine_are_read() {
        let Some(Idle { us: a, cpus: n, .. }) = idle_total() else {
            eprintln!("neither cpuidle nor /proc/stat readable: no busy share here");
            return;
        };
        assert!(n >= 1);
        let Idle { us: b, cpus: m, .. } = idle_total().expect("read once, read again");
        assert_eq!(n, m, "the same cores twice");
        // Idle time on every core cannot pass the time since boot on every core.
        let up: f64 = std::fs::read_to_string("/proc/uptime")
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
            .expect("/proc/uptime");
        assert!(
            (a.max(b) as f64) <= up * 1e6 * f64::from(n) * 1.01,
            "{a}, {b} µs idle"
        );
    }

    #[test]
    fn pressure_is_taken_from_the_samples_around_the_window() {
        let samples = [
            s(1_000, 0, 0),
            s(10_000, 500, 0),
            s(12_000, 2_500, 100),
            s(14_000, 4_500, 300),
            s(16_000, 4_600, 300),
        ];
        // [10.5 ms, 13.5 ms] lies between the samples at 10 and 14 ms: 4 ms, of which
        // 4 ms with some task short of a core and 0.3 ms waiting for I/O.
        let p = over(&samples, 10_500, 13_500).expect("covered");
        assert_eq!(p.window_ms, 4.0);
        assert_eq!(p.cpu, 1.0);
        assert!((p.io - 0.075).abs() < 1e-9, "{}", p.io);
        // The whole run: 15 ms, 4.6 of them short of a core.
        let p = over(&samples, 1_000, 16_000).expect("covered");
        assert!((p.cpu - 4.6 / 15.0).abs() < 1e-9, "{}", p.cpu);
        // A window the samples do not bracket has no figure.
        assert_eq!(over(&samples, 500, 2_000), None);
        assert_eq!(over(&samples, 15_000, 17_000), None);
        assert_eq!(over(&[], 0, 1), None);
        // A counter that grew faster than time (two tasks' stalls are not added, but
        // a clock step could) is capped at the whole window.
        assert_eq!(
            over(&[s(0, 0, 0), s(1_000, 5_000, 0)], 0, 1_000).map(|p| p.cpu),
            Some(1.0)
        );
    }

    /// A phase watched from its start to a moment already past has a figure: the
    /// first reading opens the window, the reading at the stop closes it. (On a kernel
    /// without PSI there is nothing to read, and the test says so.)
    #[test]
    fn a_watched_phase_is_bracketed_by_its_own_readings() {
        if sample().is_none() {
            eprintln!("no /proc/pressure on this kernel: nothing to watch");
            assert!(Watch::start(Duration::from_secs(1))
                .until(Some(std::time::Instant::now()))
                .is_none());
            return;
        }
        let w = Watch::start(Duration::from_secs(10));
        let end = std::time::Instant::now();
        let p = w.until(Some(end)).expect("the readings bracket the phase");
        assert!(p.window_ms >= 0.0 && p.cpu <= 1.0 && p.io <= 1.0, "{p:?}");
        assert_eq!(Watch::start(Duration::from_secs(1)).until(None), None);
    }

    #[test]
    fn waits_are_read_from_the_histograms_and_differenced() {
        let text = "electd_state_write_seconds_sum 0.012\n\
                    electd_state_write_seconds_count 4\n\
                    electd_timer_lateness_seconds_sum 0.5\n\
                    electd_timer_lateness_seconds_count 1000\n";
        let after = Waits::of_metrics(text);
        assert_eq!(after.state_writes, 4);
        let before = Waits {
            state_writes: 1,
            state_write_s: 0.003,
            timers: 900,
            timer_late_s: 0.3,
        };
        let d = after.since(before);
        assert_eq!(d.state_writes, 3);
        assert!((d.write_ms().expect("writes") - 3.0).abs() < 1e-9);
        assert!((d.late_ms().expect("timers") - 2.0).abs() < 1e-9);
        assert_eq!(Waits::default().write_ms(), None);
        let mut sum = Waits::default();
        sum.add(d);
        sum.add(d);
        assert_eq!(sum.state_writes, 6);
    }
}
