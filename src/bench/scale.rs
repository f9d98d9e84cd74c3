//! Scale: (1) the simulator's wall time, throughput and memory for startup elections
//! up to N = 4096 (Bully with the lowest id initiating: N² − 1 ≈ 16.7 M messages);
//! (2) one process running N ≥ 64 runtimes over real loopback UDP: time from boot to
//! the first agreed leader, and failover when the leader is paused
//! (`Control::Pause`, the admin API's pause) at heartbeat 10 ms / failure 100 ms.
//!
//! Memory is the peak resident set of this process during one simulation: the
//! kernel's high-water mark (`VmHWM`) is reset before each run by writing `5` to
//! `/proc/self/clear_refs` (Linux); where that is not possible the figure is the peak
//! of the whole process so far, and says so (`peak_reset: false`).

use super::inproc::InProc;
use super::{detection_limit_ms, ms, BenchOptions, Flagged, Stats};
use electd::contract::algorithm::{AlgorithmKind, Timing};
use electd::daemon::runtime::Start;
use electd::daemon::shared::Control;
use electd::node::link::LinkConfig;
use electd::sim::runner::{simulate, SimulateParams};
use electd::NodeId;
use serde::Serialize;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize)]
pub struct SimPoint {
    pub algorithm: AlgorithmKind,
    pub nodes: usize,
    pub agreed: bool,
    /// Election messages (the literature's count).
    pub messages: u64,
    /// The literature's exact count for this case, where there is one.
    pub formula: Option<f64>,
    /// Datagrams delivered (messages, acks, liveness).
    pub datagrams: u64,
    pub wall_ms: f64,
    /// CPU time of the simulating thread (the machine may be shared: wall time then
    /// includes time the thread waited for a core).
    pub cpu_ms: f64,
    /// Election messages per second of CPU time (one core).
    pub messages_per_sec: f64,
    /// Datagrams delivered per second of CPU time (one core).
    pub datagrams_per_sec: f64,
    pub rss_before_mib: f64,
    pub peak_rss_mib: f64,
    pub peak_reset: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct UdpPoint {
    pub algorithm: AlgorithmKind,
    pub nodes: usize,
    /// Boot of every runtime to agreement on the first leader.
    pub first_leader_ms: Option<f64>,
    /// Pause of the leader to agreement of the survivors.
    pub failover_ms: Vec<f64>,
    pub failover: Stats,
    pub timeouts: usize,
    /// Pauses kept out of `failover`, with their cause (below the detection limit,
    /// into an election under way, no agreement).
    pub flagged: Vec<Flagged>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ScaleResults {
    pub sim: Vec<SimPoint>,
    pub udp: Vec<UdpPoint>,
}

/// (algorithm, N) pairs of the simulator part.
pub fn sim_plan(quick: bool) -> Vec<(AlgorithmKind, usize)> {
    let sizes: &[usize] = if quick {
        &[64, 256]
    } else {
        &[256, 1024, 2048, 4096]
    };
    let mut plan = Vec::new();
    for kind in AlgorithmKind::available() {
        for &n in sizes {
            plan.push((kind, n));
        }
    }
    plan
}

fn status_kib(field: &str) -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Timeouts that let one election run its course on N nodes (1 ms per hop in the
/// simulator): a ring lap takes N ms, and a passive node's watchdog
/// (`failure_timeout`) must not start a second election meanwhile, which would make
/// the count differ from the literature's.
pub fn sim_timing(n: usize) -> Timing {
    let failure = Duration::from_millis(100).max(Duration::from_millis(4 * n as u64));
    Timing {
        heartbeat: failure / 10,
        failure_timeout: failure,
        answer_timeout: Duration::from_millis(10),
        coordinator_timeout: failure / 2,
        election_timeout_min: failure,
        election_timeout_max: failure * 2,
    }
}

/// CPU time consumed by the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// Return freed heap to the system (glibc keeps it otherwise, and the next run's
/// peak would start from the previous run's), then reset the high-water mark.
fn reset_peak() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

pub fn run_sim(quick: bool, log: &dyn Fn(&str)) -> anyhow::Result<Vec<SimPoint>> {
    let mut out = Vec::new();
    for (kind, n) in sim_plan(quick) {
        let before = status_kib("VmRSS:").unwrap_or(0.0);
        let peak_reset = reset_peak();
        let mut params = SimulateParams::new(kind, n);
        params.timing = sim_timing(n);
        // The simulator runs the link's defaults.
        let link = LinkConfig::default();
        params
            .timing
            .validate(link.retransmit, link.give_up)
            .map_err(|e| anyhow::anyhow!("simulated timing for N={n}: {e}"))?;
        let formula = kind
            .cases()
            .into_iter()
            .find(|c| c.order == electd::sim::scenario::RingOrder::Ascending && c.exact)
            .and_then(|c| c.expected)
            .map(|f| f(n as u64));
        let cpu0 = thread_cpu();
        let r = simulate(&params)?;
        let cpu = (thread_cpu().saturating_sub(cpu0)).as_secs_f64();
        let peak = status_kib("VmHWM:").unwrap_or(0.0);
        let wall = r.wall_ms / 1e3;
        let datagrams = (r.datagrams_per_sec * wall).round() as u64;
        let per_cpu_sec = |x: f64| if cpu > 0.0 { x / cpu } else { 0.0 };
        let p = SimPoint {
            algorithm: kind,
            nodes: n,
            agreed: r.agreed,
            messages: r.messages.total,
            formula,
            datagrams,
            wall_ms: r.wall_ms,
            cpu_ms: cpu * 1e3,
            messages_per_sec: per_cpu_sec(r.messages.total as f64),
            datagrams_per_sec: per_cpu_sec(datagrams as f64),
            rss_before_mib: before / 1024.0,
            peak_rss_mib: peak / 1024.0,
            peak_reset,
        };
        log(&format!(
            "  sim {kind:<15} N={n:<5} {} messages in {:.0} ms wall, {:.0} ms CPU ({:.2} M msg/s, {:.2} M datagrams/s per core), peak RSS {:.0} MiB",
            p.messages,
            p.wall_ms,
            p.cpu_ms,
            p.messages_per_sec / 1e6,
            p.datagrams_per_sec / 1e6,
            p.peak_rss_mib
        ));
        out.push(p);
    }
    Ok(out)
}

/// The real-UDP part: N and failovers per algorithm.
pub fn udp_plan(quick: bool) -> (usize, usize, Vec<AlgorithmKind>) {
    if quick {
        (16, 1, vec![AlgorithmKind::Bully])
    } else {
        (64, 10, AlgorithmKind::available())
    }
}

pub fn run_udp(opts: &BenchOptions, log: &dyn Fn(&str)) -> anyhow::Result<Vec<UdpPoint>> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (n, failovers, algorithms) = udp_plan(opts.quick);
    // The failover bench's setting (heartbeat 10 ms, failure_timeout 100 ms, …).
    let timing = electd::testkit::procs::ClusterTiming::failover().timing();
    let mut out = Vec::new();
    for kind in algorithms {
        let p = rt.block_on(udp_point(kind, n, failovers, &timing))?;
        log(&format!(
            "  udp {kind:<15} N={n} first leader {} ms, failover median {:.1} ms (n={}, timeouts {})",
            p.first_leader_ms
                .map(|x| format!("{x:.1}"))
                .unwrap_or("-".into()),
            p.failover.median,
            p.failover.n,
            p.timeouts
        ));
        out.push(p);
    }
    Ok(out)
}

async fn udp_point(
    kind: AlgorithmKind,
    n: usize,
    failovers: usize,
    timing: &Timing,
) -> anyhow::Result<UdpPoint> {
    let ids: Vec<NodeId> = (1..=n as NodeId).collect();
    let link = LinkConfig::default();
    timing
        .validate(link.retransmit, link.give_up)
        .map_err(|e| anyhow::anyhow!("scale timing: {e}"))?;
    let booted = Instant::now();
    let mut c = InProc::start(&ids, kind, timing, &link, Start::Electing).await?;
    let first = c
        .wait_agreement(&ids, booted + Duration::from_secs(30))
        .await;
    let first_leader_ms = first.map(|(_, at)| ms(at.saturating_duration_since(booted)));
    let mut samples = Vec::new();
    let mut flagged = Vec::new();
    let mut timeouts = 0;
    let limit = detection_limit_ms(
        kind,
        ms(timing.failure_timeout) as u64,
        ms(timing.election_timeout_min) as u64,
        ms(timing.heartbeat) as u64,
    );
    for _ in 0..failovers {
        let Some((leader, _)) = c
            .wait_agreement(&ids, Instant::now() + Duration::from_secs(10))
            .await
        else {
            timeouts += 1;
            continue;
        };
        // Let the first heartbeats land: the followers' failure detectors are armed.
        tokio::time::sleep(timing.heartbeat * 3).await;
        let survivors: Vec<NodeId> = ids.iter().copied().filter(|&i| i != leader).collect();
        // Every node named the leader and none was electing just before the pause:
        // otherwise the pause fell into an election, which the time would measure.
        let quiet = c.settled_on(leader);
        let t0 = Instant::now();
        c.command(leader, Control::Pause).await;
        match c
            .wait_agreement(&survivors, t0 + Duration::from_secs(10))
            .await
        {
            Some((_, at)) => {
                let took = ms(at.saturating_duration_since(t0));
                if !quiet {
                    flagged.push(Flagged {
                        ms: Some(took),
                        cause: "the pause fell into an election under way (not every node \
                                followed the leader quietly)"
                            .into(),
                    });
                } else if took < limit {
                    flagged.push(Flagged {
                        ms: Some(took),
                        cause: format!(
                            "below the detection limit {limit:.0} ms with every node settled \
                             before the pause: unexplained"
                        ),
                    });
                } else {
                    samples.push(took);
                }
            }
            None => {
                timeouts += 1;
                flagged.push(Flagged {
                    ms: None,
                    cause: "no agreement among the survivors within 10 s".into(),
                });
            }
        }
        c.command(leader, Control::Resume).await;
    }
    c.shutdown().await;
    Ok(UdpPoint {
        algorithm: kind,
        nodes: n,
        first_leader_ms,
        failover: Stats::of(&samples),
        failover_ms: samples,
        timeouts,
        flagged,
    })
}

/// The simulator's busy start ([`electd::sim::crowd`]) with what a cold start of `n`
/// processes saw: their timing, booted at `boots` (each node's boot after the first,
/// by id, from their incarnations) or, without them, in id order over `spread` (from
/// before the first spawn to after the last), no processing cost. `None` when the
/// simulation fails (it is a comparison, not a measurement: the row stands without
/// it).
pub fn sim_busy_start(
    kind: AlgorithmKind,
    n: usize,
    spread: Duration,
    boots: Option<Vec<Duration>>,
    t: &electd::testkit::procs::ClusterTiming,
) -> Option<electd::sim::crowd::BusyCost> {
    use electd::sim::crowd::{busy_start, BusyStart, StartOrder};
    let timing = t.timing();
    let mut link = LinkConfig::for_failure_timeout(timing.failure_timeout);
    link.retransmit = Duration::from_millis(t.retransmit_ms);
    busy_start(&BusyStart {
        algorithm: kind,
        nodes: n,
        timing,
        link,
        gap: spread / (n.max(2) - 1) as u32,
        cost: Duration::ZERO,
        order: StartOrder::Ascending,
        boots,
        seed: 1,
    })
    .ok()
}
