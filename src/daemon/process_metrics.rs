//! The `process_*` series of this process, with CPU time to the microsecond.
//!
//! The prometheus crate's `ProcessCollector` reads CPU time from `/proc/self/stat` in
//! clock ticks and exports whole seconds (it divides integers), so
//! `process_cpu_seconds_total` stays 0 for a daemon that has used 0.9 s and `rate()` of
//! it is a staircase. [`ProcessMetrics`] keeps that collector for memory, file
//! descriptors, threads and start time, and replaces its CPU series with one of the
//! same name from `getrusage(RUSAGE_SELF)` (user + system time, microseconds; every
//! thread of the process, the ones that have exited included).

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Counter, Opts};
use std::sync::Mutex;

const CPU: &str = "process_cpu_seconds_total";

/// See the module documentation.
pub(crate) struct ProcessMetrics {
    inner: prometheus::process_collector::ProcessCollector,
    cpu: Counter,
    /// Serialises the read-and-advance of `cpu` (two scrapes at once would add twice).
    lock: Mutex<()>,
}

impl ProcessMetrics {
    pub(crate) fn for_self() -> ProcessMetrics {
        ProcessMetrics {
            inner: prometheus::process_collector::ProcessCollector::for_self(),
            cpu: Counter::with_opts(Opts::new(
                CPU,
                "Total user and system CPU time spent in seconds.",
            ))
            .expect("a valid metric name"),
            lock: Mutex::new(()),
        }
    }
}

/// User plus system CPU time of this process so far, in seconds (microsecond resolution).
pub(crate) fn cpu_seconds() -> Option<f64> {
    // SAFETY: rusage is a plain C struct; all-zero bytes are a valid value of it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one plain struct we own; RUSAGE_SELF is always valid.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(ru.ru_utime) + secs(ru.ru_stime))
}

impl Collector for ProcessMetrics {
    fn desc(&self) -> Vec<&Desc> {
        self.inner
            .desc()
            .into_iter()
            .filter(|d| d.fq_name != CPU)
            .chain(self.cpu.desc())
            .collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut out: Vec<MetricFamily> = self
            .inner
            .collect()
            .into_iter()
            .filter(|mf| mf.name() != CPU)
            .collect();
        if let Some(now) = cpu_seconds() {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            let past = self.cpu.get();
            if now > past {
                self.cpu.inc_by(now - past);
            }
        }
        out.extend(self.cpu.collect());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu_value(text: &str) -> f64 {
        text.lines()
            .find(|l| l.starts_with("process_cpu_seconds_total"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no process_cpu_seconds_total in {text}"))
    }

    #[test]
    fn cpu_seconds_have_sub_second_resolution_and_the_other_series_stay() {
        let r = prometheus::Registry::new();
        r.register(Box::new(ProcessMetrics::for_self())).unwrap();
        // Burn CPU until getrusage has moved past a whole-second boundary's worth of
        // resolution: a value that is not a multiple of 1 s (bounded: at most 2 s).
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while cpu_seconds().unwrap() < 0.05 && start.elapsed().as_secs() < 2 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let enc = prometheus::TextEncoder::new();
        let text = enc.encode_to_string(&r.gather()).unwrap();
        let v = cpu_value(&text);
        assert!(v > 0.0, "{text}");
        assert!(v.fract() != 0.0, "whole seconds only: {v}");
        assert!(
            text.contains("# TYPE process_cpu_seconds_total counter"),
            "{text}"
        );
        assert_eq!(
            text.matches("# TYPE process_cpu_seconds_total").count(),
            1,
            "{text}"
        );
        assert!(text.contains("process_resident_memory_bytes"), "{text}");
        assert!(text.contains("process_start_time_seconds"), "{text}");
        // Monotonic across scrapes.
        let again = cpu_value(&enc.encode_to_string(&r.gather()).unwrap());
        assert!(again >= v);
    }
}
