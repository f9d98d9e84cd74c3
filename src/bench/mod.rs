//! `electd bench`: the benchmark suite behind `docs/bench/` — failover time, message
//! efficiency, scale, cost per node and codec speed — as one reproducible run that
//! writes `report.md` (Markdown with SVG plots) and `results.json` (raw results).
//!
//! # Contract
//! - Benchmarks report; they do not assert. [`run`] fails only when a measurement
//!   cannot be made at all (a process does not start, a socket cannot be bound);
//!   a failover that never reaches agreement is counted (`timeouts`) and reported.
//! - Every section is timed on the same machine in the same run, and the report
//!   states every target as a ratio (e.g. failover ÷ `failure_timeout`), so figures
//!   from different machines compare by their ratios.
//! - `quick` shrinks every section (fewer kills, smaller N, shorter windows) so that
//!   CI and `tests/processes/bench_quick.rs` run the whole pipeline in seconds; its figures are
//!   not meant to be quoted.
//! - Failover and cost need real processes (SIGKILL is a property of a process):
//!   they spawn `opts.exe run --config …` on 127.0.0.1. Message efficiency and the
//!   64-node cluster run many runtimes in this process over real loopback UDP.

pub mod codec;
pub mod coldstart;
pub mod cost;
pub mod detect;
pub mod failover;
pub mod inproc;
pub mod keepalived;
pub mod messages;
pub mod plot;

pub mod report;
pub mod scale;
pub mod sse;
pub mod stallprobe;
pub mod stop;
pub mod targets;
pub mod versus_etcd;

use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub quick: bool,
    /// Output directory (created if missing).
    pub out: PathBuf,
    /// The `electd` binary spawned as cluster nodes (normally the running one).
    pub exe: PathBuf,
    /// Seed of every random choice the bench makes (kill phase, ring orders).
    pub seed: u64,
    /// Run only these sections ([`SECTIONS`]); empty: all. Skipped sections are empty
    /// in the results and the report.
    pub only: Vec<String>,
    /// Failover section: actions per mode instead of the plan's (50, quick 2).
    pub failover_samples: Option<usize>,
    /// Failover section: only these modes ([`failover::MODES`]); empty: all.
    pub failover_modes: Vec<String>,
    /// Node counts of the `scale-cold` section (empty: its default plan).
    pub nodes: Vec<usize>,
    /// Algorithms of the `failover` and `scale-cold` sections (empty: all).
    pub algorithms: Vec<electd::contract::algorithm::AlgorithmKind>,
    /// Cold starts per algorithm and N of the `scale-cold` section's separate
    /// processes (each on a fresh cluster; the last one goes on to the failover).
    pub cold_tries: usize,
    /// `scale-cold`: every N as separate processes, above 64 too (`--processes`).
    pub all_processes: bool,
    /// `detect`: the candidate failure timeouts (ms; empty: the section's own).
    pub detect_timeouts: Vec<u64>,
    /// `detect`: how long each candidate is watched (`None`: 10 minutes, quick 5 s).
    pub detect_window: Option<Duration>,
    /// `detect`: every algorithm as a group of one cluster instead of one cluster each.
    pub detect_one_cluster: bool,
    /// `detect`: electd's nodes (`[process] realtime_priority`) and etcd's members in
    /// `SCHED_RR` at this priority; `None`: the normal class.
    pub detect_realtime: Option<u8>,
}

/// The sections of a run, in order.
pub const SECTIONS: [&str; 10] = [
    "codec",
    "sim",
    "messages",
    "udp",
    "cost",
    "failover",
    "scale-cold",
    "etcd",
    "keepalived",
    "detect",
];

impl BenchOptions {
    pub fn wants(&self, section: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == section)
    }
}

/// Summary statistics of a sample (milliseconds unless stated).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Stats {
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Stats {
    /// Nearest-rank percentiles on the sorted sample (index round((n−1)·p)).
    pub fn of(samples: &[f64]) -> Stats {
        let mut s: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if s.is_empty() {
            return Stats::default();
        }
        s.sort_by(f64::total_cmp);
        let pct = |p: f64| s[((s.len() as f64 - 1.0) * p).round() as usize];
        Stats {
            n: s.len(),
            min: s[0],
            median: pct(0.5),
            p90: pct(0.9),
            p99: pct(0.99),
            max: s[s.len() - 1],
            mean: s.iter().sum::<f64>() / s.len() as f64,
        }
    }

    /// Every figure divided by `by` (e.g. a ratio to the failure timeout).
    pub fn scaled(&self, by: f64) -> Stats {
        Stats {
            n: self.n,
            min: self.min / by,
            median: self.median / by,
            p90: self.p90 / by,
            p99: self.p99 / by,
            max: self.max / by,
            mean: self.mean / by,
        }
    }
}

/// A sample kept out of the statistics, with its cause: a time below what the
/// detector allows (see [`detection_limit_ms`]), an action that fell into an election
/// already under way, or a round that never agreed (`ms` is then `None`). The report
/// lists every one; none is averaged in silently.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Flagged {
    pub ms: Option<f64>,
    pub cause: String,
}

impl Flagged {
    /// `12.3 ms (cause)`, or `never agreed (cause)`.
    pub fn describe(&self) -> String {
        match self.ms {
            Some(ms) => format!("{ms:.1} ms ({})", self.cause),
            None => format!("never agreed ({})", self.cause),
        }
    }
}

/// The least a failover after a crash can take (ms): a follower's detector (the
/// failure timeout, or Raft's election timeout from `election_min`) is armed by the
/// last heartbeat it heard, which left at most one heartbeat period before the crash.
pub fn detection_limit_ms(
    kind: electd::contract::algorithm::AlgorithmKind,
    failure_ms: u64,
    election_min_ms: u64,
    heartbeat_ms: u64,
) -> f64 {
    let detector = if kind.info().uses_failure_detector() {
        failure_ms
    } else {
        election_min_ms
    };
    detector.saturating_sub(heartbeat_ms) as f64
}

/// One target of the issue, with its verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    pub name: String,
    pub target: String,
    pub measured: String,
    pub met: bool,
    /// Why a target is missed, or a caveat.
    pub note: String,
}

/// The machine and build the figures come from.
#[derive(Clone, Debug, Serialize)]
pub struct Meta {
    pub version: &'static str,
    pub profile: &'static str,
    pub quick: bool,
    pub seed: u64,
    pub started_unix: u64,
    pub cpus: usize,
    pub cpu_model: String,
    pub kernel: String,
    /// 1-minute load average at the start and at the end of the run.
    pub load_start: f64,
    pub load_end: f64,
    pub wall_s: f64,
}

/// Everything measured (`results.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Results {
    pub meta: Meta,
    pub codec: codec::CodecResults,
    pub scale: scale::ScaleResults,
    pub messages: messages::MessageResults,
    pub cost: cost::CostResults,
    pub failover: failover::FailoverResults,
    pub etcd: versus_etcd::VersusEtcd,
    /// A virtual IP beside keepalived (only with `--only keepalived`: needs root).
    pub keepalived: keepalived::VersusKeepalived,
    /// Cold start and failover at scale.
    pub cold: coldstart::ColdResults,
    /// The smallest safe failure timeout on a busy machine (only with `--only detect`).
    pub detect: detect::Detect,
    pub targets: Vec<Target>,
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The 1-minute load average (0 where /proc is missing).
pub fn load_average() -> f64 {
    read_trim("/proc/loadavg")
        .split_whitespace()
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0.0)
}

fn cpu_model() -> String {
    read_trim("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Run every section and write `report.md`, `results.json` and the plots to
/// `opts.out`. `log` receives one line per step (progress, for stderr).
pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> anyhow::Result<Results> {
    std::fs::create_dir_all(&opts.out).map_err(|e| {
        anyhow::anyhow!(
            "cannot create the output directory {}: {e}",
            opts.out.display()
        )
    })?;
    let started = std::time::Instant::now();
    let meta_start = load_average();
    let mut codec = codec::CodecResults { points: Vec::new() };
    if opts.wants("codec") {
        log("codec: encode + authenticate + decode");
        codec = codec::run(opts.quick);
    }
    let mut scale_sim = Vec::new();
    if opts.wants("sim") {
        log("scale: simulator wall time and memory");
        scale_sim = scale::run_sim(opts.quick, log)?;
    }
    let mut messages = messages::MessageResults {
        nodes: Vec::new(),
        points: Vec::new(),
        incomplete: Vec::new(),
    };
    if opts.wants("messages") {
        log("message efficiency over real UDP");
        messages = messages::run(opts, log)?;
    }
    let mut scale_udp = Vec::new();
    if opts.wants("udp") {
        log("scale: one process, many runtimes over real UDP");
        scale_udp = scale::run_udp(opts, log)?;
    }
    let mut cost = cost::CostResults { runs: Vec::new() };
    if opts.wants("cost") {
        log("cost per node (real processes)");
        cost = cost::run(opts, log)?;
    }
    let mut failover = failover::FailoverResults::empty(opts.quick);
    if opts.wants("failover") {
        log("failover (real processes)");
        failover = failover::run(opts, log)?;
    }
    let mut etcd = versus_etcd::VersusEtcd {
        skipped: Some(report::NOT_SELECTED.into()),
        ..Default::default()
    };
    // The quick run (tests, CI) leaves etcd out unless asked for by name: the
    // system stage's `scripts/system-etcd.sh` runs it.
    if opts.wants("etcd") && (!opts.quick || opts.only.iter().any(|x| x == "etcd")) {
        log("failover beside etcd (one poll-based driver)");
        etcd = versus_etcd::run(opts, log)?;
    }
    let mut keepalived = keepalived::VersusKeepalived {
        skipped: Some(report::NOT_SELECTED.into()),
        ..Default::default()
    };
    // Never in the default run (it needs root and keepalived): only by name.
    if opts.only.iter().any(|x| x == "keepalived") {
        log("a virtual IP beside keepalived (network namespaces)");
        keepalived = keepalived::run(opts, log)?;
    }
    let mut detect = detect::Detect {
        skipped: Some(report::NOT_SELECTED.into()),
        ..Default::default()
    };
    // Never in the default run (ten minutes per candidate): only by name.
    if opts.only.iter().any(|x| x == "detect") {
        log("the smallest safe failure timeout on a busy machine, beside etcd");
        detect = detect::run(opts, log)?;
    }
    let mut cold = coldstart::ColdResults::default();
    if opts.wants("scale-cold") {
        log("scale-cold: cold start and failover at scale");
        cold = coldstart::run(opts, log)?;
    }
    let scale = scale::ScaleResults {
        sim: scale_sim,
        udp: scale_udp,
    };
    let meta = Meta {
        version: env!("CARGO_PKG_VERSION"),
        profile: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        quick: opts.quick,
        seed: opts.seed,
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
            .saturating_sub(started.elapsed().as_secs()),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        cpu_model: cpu_model(),
        kernel: read_trim("/proc/sys/kernel/osrelease"),
        load_start: meta_start,
        load_end: load_average(),
        wall_s: started.elapsed().as_secs_f64(),
    };
    let mut results = Results {
        meta,
        codec,
        scale,
        messages,
        cost,
        failover,
        etcd,
        keepalived,
        cold,
        detect,
        targets: Vec::new(),
    };
    results.targets = report::targets(&results);
    log("writing report");
    report::write(&results, &opts.out)?;
    Ok(results)
}

/// Now as Unix microseconds (the clock of the nodes' `at_us` stamps and of etcd's logs).
pub fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Milliseconds of a duration, as a float.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<f64> = (1..=101).map(f64::from).collect();
        let s = Stats::of(&xs);
        assert_eq!(
            (s.min, s.median, s.p90, s.p99, s.max),
            (1.0, 51.0, 91.0, 100.0, 101.0)
        );
        assert_eq!(s.mean, 51.0);
        assert_eq!(Stats::of(&[]).n, 0);
        let r = Stats::of(&[100.0, 120.0]).scaled(100.0);
        assert_eq!((r.min, r.max), (1.0, 1.2));
    }
}
