//! Failover time of real `electd run` processes: five nodes on 127.0.0.1, one
//! cluster per algorithm (so that groups do not compete for the CPU), and for each
//! mode the group's leader is taken down many times:
//!
//! - `sigkill`: SIGKILL of the leader's process (a crash);
//! - `pause`: `POST /admin/pause` to the leader (all its traffic stops; the process
//!   lives on), then `/admin/resume`;
//! - `sigterm`: SIGTERM, so the leader resigns before it exits (graceful).
//!
//! The figure is the time from the action to the moment the last survivor adopts the
//! new leader, as seen on the survivors' `/watch` streams ([`super::sse`]); agreement
//! means every survivor names the same live leader (the highest survivor where the
//! algorithm promises it). Before each action the cluster must agree again, then waits
//! three heartbeats plus a random fraction of one, so the action falls at a random
//! phase of the heartbeat period, as a real crash does.

use super::sse::Watchers;
use super::{detection_limit_ms, ms, BenchOptions, Flagged, Stats};
use electd::contract::algorithm::AlgorithmKind;
use electd::contract::rng::Rng;
use electd::testkit::procs::{ClusterTiming, ProcCluster};
use electd::NodeId;
use serde::Serialize;
use std::time::{Duration, Instant};

/// How the leader is taken down.
pub const MODES: [&str; 3] = ["sigkill", "pause", "sigterm"];

/// Nodes per failover cluster.
pub const NODES: NodeId = 5;

#[derive(Clone, Debug, Serialize)]
pub struct FailoverRun {
    pub algorithm: AlgorithmKind,
    pub mode: &'static str,
    /// Action-to-agreement times, in order of measurement (the flagged ones left out).
    pub samples_ms: Vec<f64>,
    /// Samples kept out of `stats`, each with its cause: below the detection limit
    /// (SIGKILL and pause), an action into an election under way, no agreement.
    pub flagged: Vec<Flagged>,
    pub stats: Stats,
    /// `stats` divided by `failure_timeout`.
    pub ratio: Stats,
    /// Actions after which the survivors did not agree within the deadline.
    pub timeouts: usize,
    /// Leaders that did not rejoin before the next action (skipped iterations).
    pub recoveries_failed: usize,
    /// Each sample of `samples_ms` (same order) taken apart by the survivors' own
    /// stamps, so that a slow one says where its time went.
    pub phases: Vec<Phases>,
}

/// One timed failover taken apart by the survivors' own stamps (`at_us` of their
/// `/watch` events; the bench and the nodes share one machine and one clock). `None`
/// where a stamp is missing (a node without them, or no event without a leader: a
/// survivor may go from the old leader straight to the new one).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Phases {
    /// The action → the first survivor's event without a leader (its detection).
    pub detect_ms: Option<f64>,
    /// That detection → the last survivor's adoption of the new leader.
    pub elect_ms: Option<f64>,
    /// The action → the last adoption, by the survivors' stamps: the failover as the
    /// nodes lived it.
    pub stamped_ms: Option<f64>,
    /// The last adoption's stamp → its event's arrival at the bench: what the bench's
    /// reading added (its reader threads wait for a core like anyone).
    pub deliver_ms: Option<f64>,
    /// Each survivor's own stamps, ms after the action: when it last said it had no
    /// leader (its detection, or an election reaching it) and when it adopted the new
    /// leader; which survivor was late, and at what.
    pub survivors: Vec<SurvivorStamps>,
    /// The longest stall of the bench's own probe thread ([`super::stallprobe`]) from
    /// the action to the last adoption, ms; `None`: none of 5 ms or more (or no probe).
    /// A stall of every survivor that the bench's thread shared was the machine's.
    pub bench_stall_ms: Option<f64>,
    /// Whether the probe ran (`bench_stall_ms` means something).
    pub probed: bool,
    /// The slowest state-file write of any survivor between a scrape just before the
    /// action and one after the agreement, as its histogram bucket's upper bound (ms),
    /// with the node: a claim and an adoption wait for their writes. `None`: no write,
    /// or the scrapes failed.
    pub slowest_write: Option<(NodeId, f64)>,
}

/// `electd_state_write_seconds` of a node's `/metrics` text: (upper bound in seconds,
/// cumulative count) per bucket, `+Inf` as infinity.
pub fn write_buckets(metrics: &str) -> Vec<(f64, u64)> {
    metrics
        .lines()
        .filter(|l| l.starts_with("electd_state_write_seconds_bucket{"))
        .filter_map(|l| {
            let le = l.split("le=\"").nth(1)?.split('"').next()?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            let count = l.rsplit(' ').next()?.trim().parse().ok()?;
            Some((le, count))
        })
        .collect()
}

/// The upper bound (s) of the bucket of the slowest write between two readings of
/// [`write_buckets`]; `None` when no write came between them.
pub fn slowest_between(before: &[(f64, u64)], after: &[(f64, u64)]) -> Option<f64> {
    let delta: Vec<(f64, u64)> = after
        .iter()
        .map(|&(le, n)| {
            let was = before.iter().find(|b| b.0 == le).map_or(0, |b| b.1);
            (le, n.saturating_sub(was))
        })
        .collect();
    let total = delta.iter().map(|d| d.1).max()?;
    if total == 0 {
        return None;
    }
    delta.iter().find(|d| d.1 == total).map(|d| d.0)
}

/// One survivor's stamps in a failover (see [`Phases::survivors`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SurvivorStamps {
    pub node: NodeId,
    pub lost_ms: Option<f64>,
    pub adopted_ms: Option<f64>,
}

impl Phases {
    /// The phases of a failover timed from `t0_us` (Unix µs, just before the action),
    /// the first survivor's loss at `lost_us`, the last adoption at `adopted_us`, and
    /// its event's arrival `arrived_ms` after the action.
    pub fn of(
        t0_us: u64,
        lost_us: Option<u64>,
        adopted_us: Option<u64>,
        arrived_ms: f64,
    ) -> Phases {
        let span = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1e3;
        let stamped = adopted_us.map(|a| span(t0_us, a));
        Phases {
            detect_ms: lost_us.map(|l| span(t0_us, l)),
            elect_ms: lost_us.zip(adopted_us).map(|(l, a)| span(l, a)),
            stamped_ms: stamped,
            deliver_ms: stamped.map(|s| (arrived_ms - s).max(0.0)),
            survivors: Vec::new(),
            bench_stall_ms: None,
            probed: false,
            slowest_write: None,
        }
    }

    /// With the probe's longest stall from `t0_us` to `until_ms` after it.
    pub fn with_probe(mut self, t0_us: u64, until_ms: f64) -> Phases {
        if let Some(p) = super::stallprobe::running() {
            self.probed = true;
            self.bench_stall_ms = p.longest_within(t0_us, t0_us + (until_ms * 1e3) as u64);
        }
        self
    }

    /// With each survivor's (node, lost, adopted) stamps, Unix µs, taken from `t0_us`.
    pub fn with_survivors(
        mut self,
        t0_us: u64,
        stamps: &[(NodeId, Option<u64>, Option<u64>)],
    ) -> Phases {
        let rel = |t: Option<u64>| t.filter(|&t| t >= t0_us).map(|t| (t - t0_us) as f64 / 1e3);
        self.survivors = stamps
            .iter()
            .map(|&(node, lost, adopted)| SurvivorStamps {
                node,
                lost_ms: rel(lost),
                adopted_ms: rel(adopted),
            })
            .collect();
        self
    }

    /// "detection 95.2 + election 8.1 ms; delivery to the bench 0.3 ms", as far as known.
    pub fn describe(&self) -> String {
        let f = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{v:.1}"));
        let mut s = format!(
            "detection {} + election {} ms (adopted {} ms after the action by the nodes' stamps); \
             delivery to the bench {} ms",
            f(self.detect_ms),
            f(self.elect_ms),
            f(self.stamped_ms),
            f(self.deliver_ms)
        );
        if !self.survivors.is_empty() {
            let each: Vec<String> = self
                .survivors
                .iter()
                .map(|x| format!("{} {} → {}", x.node, f(x.lost_ms), f(x.adopted_ms)))
                .collect();
            s += &format!("; per survivor, lost → adopted (ms): {}", each.join(", "));
        }
        match self.slowest_write {
            Some((node, ms)) if ms.is_finite() => {
                s += &format!("; slowest state write {ms:.1} ms or less (node {node}'s)")
            }
            Some((node, _)) => s += &format!("; slowest state write over 1 s (node {node}'s)"),
            None => {}
        }
        match (self.probed, self.bench_stall_ms) {
            (true, Some(g)) => {
                s += &format!(
                    "; the bench's own probe thread stalled {g:.1} ms meanwhile (the machine)"
                )
            }
            (true, None) => s += "; the bench's own probe thread ran on time (no stall of 5 ms)",
            (false, _) => {}
        }
        s
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct FailoverResults {
    pub nodes: NodeId,
    pub timing: ClusterTiming,
    pub per_mode: usize,
    pub runs: Vec<FailoverRun>,
}

impl FailoverResults {
    /// No run (the section was skipped).
    pub fn empty(quick: bool) -> FailoverResults {
        FailoverResults {
            nodes: NODES,
            timing: ClusterTiming::failover(),
            per_mode: plan(quick).1,
            runs: Vec::new(),
        }
    }
}

/// The algorithms and actions per mode of a run.
pub fn plan(quick: bool) -> (Vec<AlgorithmKind>, usize) {
    if quick {
        (vec![AlgorithmKind::Bully, AlgorithmKind::Raft], 2)
    } else {
        (AlgorithmKind::available(), 50)
    }
}

pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> anyhow::Result<FailoverResults> {
    let timing = ClusterTiming::failover();
    let (mut algorithms, planned) = plan(opts.quick);
    if !opts.algorithms.is_empty() {
        algorithms = opts.algorithms.clone();
    }
    let per_mode = opts.failover_samples.unwrap_or(planned).max(1);
    let modes: Vec<&'static str> = MODES
        .into_iter()
        .filter(|m| opts.failover_modes.is_empty() || opts.failover_modes.iter().any(|x| x == m))
        .collect();
    let mut rng = Rng::new(opts.seed ^ 0xFA11_0FE5);
    let mut runs = Vec::new();
    super::stallprobe::start();
    let _probe = StopProbe;
    for kind in algorithms {
        // A fresh cluster must agree within 15 s; if it does not (seen once under heavy
        // load), say what each node believed and start over once with a new cluster.
        let mut attempt = 0;
        let (mut c, w) = loop {
            attempt += 1;
            let mut c = ProcCluster::new(
                &opts.exe,
                &std::env::temp_dir(),
                &format!("failover-{kind}"),
                NODES,
                &[kind],
                &timing,
            )?;
            c.start_all()?;
            let w = Watchers::new(kind);
            let all = c.ids();
            for &id in &all {
                w.connect(
                    id,
                    c.http(id).expect("roster node"),
                    Duration::from_secs(10),
                );
            }
            if w.wait_agreement(&all, Instant::now() + Duration::from_secs(15))
                .is_some()
            {
                break (c, w);
            }
            let beliefs: Vec<String> = all
                .iter()
                .map(|&id| {
                    let status = c.get(id, "/status").unwrap_or_else(|| "no answer".into());
                    format!("node {id}: {}", status.trim())
                })
                .collect();
            let what = format!(
                "failover {kind}: the new cluster did not agree within 15 s (attempt {attempt}); {}",
                beliefs.join("; ")
            );
            if attempt >= 2 {
                anyhow::bail!(what);
            }
            log(&format!("  {what}; retrying with a fresh cluster"));
        };
        for &mode in &modes {
            let r = measure(
                &mut c,
                &w,
                kind,
                Actions {
                    mode,
                    count: per_mode,
                    clock: Clock::Arrival,
                    take_apart: true,
                },
                &timing,
                &mut rng,
            )?;
            log(&format!(
                "  {kind:<15} {mode:<8} n={} median {:.1} ms ({:.2}×) p99 {:.1} ms ({:.2}×) timeouts {}",
                r.stats.n, r.stats.median, r.ratio.median, r.stats.p99, r.ratio.p99, r.timeouts
            ));
            runs.push(r);
        }
    }
    Ok(FailoverResults {
        nodes: NODES,
        timing,
        per_mode,
        runs,
    })
}

/// Stops the stall probe when the section ends, however it ends.
struct StopProbe;

impl Drop for StopProbe {
    fn drop(&mut self) {
        super::stallprobe::stop();
    }
}

/// How a failover's end is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Clock {
    /// When the last survivor's `/watch` event reached the bench (this section).
    Arrival,
    /// The last survivor's own stamp of its adoption (`at_us`), from the Unix time
    /// just before the action: on a busy machine the bench's reader threads wait for a
    /// core too, and their delay is not the failover's.
    Stamp,
}

/// What [`measure`] does: `count` take-downs of `mode`, timed by `clock`.
pub(super) struct Actions {
    pub(super) mode: &'static str,
    pub(super) count: usize,
    pub(super) clock: Clock,
    /// Take every sample apart ([`Phases`]): the survivors' stamps, and the stall
    /// probe and state writes, whose scrapes of every survivor's `/metrics` before
    /// each action are work the detect section's busy machine should not get.
    pub(super) take_apart: bool,
}

pub(super) fn measure(
    c: &mut ProcCluster,
    w: &Watchers,
    kind: AlgorithmKind,
    actions: Actions,
    t: &ClusterTiming,
    rng: &mut Rng,
) -> anyhow::Result<FailoverRun> {
    let Actions {
        mode,
        count,
        clock,
        take_apart,
    } = actions;
    let all = c.ids();
    let hb = Duration::from_millis(t.heartbeat_ms);
    let mut samples = Vec::with_capacity(count);
    let mut phases = Vec::with_capacity(count);
    let mut flagged = Vec::new();
    let limit = detection_limit_ms(kind, t.failure_ms, t.election_min_ms, t.heartbeat_ms);
    let (mut timeouts, mut recoveries_failed) = (0, 0);
    let mut attempts = 0;
    while samples.len() + flagged.len() < count {
        attempts += 1;
        if attempts > count * 3 {
            anyhow::bail!("failover {kind} {mode}: the cluster does not settle between actions");
        }
        let Some((leader, _)) = w.wait_agreement(&all, Instant::now() + Duration::from_secs(10))
        else {
            recoveries_failed += 1;
            continue;
        };
        let survivors: Vec<NodeId> = all.iter().copied().filter(|&i| i != leader).collect();
        // The survivors' state writes so far, before the wait that sets the action's
        // phase (the scrapes' work stays clear of the action).
        let writes_before: Vec<Vec<(f64, u64)>> = survivors
            .iter()
            .map(|&id| {
                let scraped = take_apart.then(|| c.get(id, "/metrics")).flatten();
                scraped.map_or_else(Vec::new, |m| write_buckets(&m))
            })
            .collect();
        // A random phase of the heartbeat period (see the module documentation).
        std::thread::sleep(3 * hb + rng.duration(Duration::ZERO, hb));
        if w.agreement(&all).map(|a| a.0) != Some(leader) {
            continue;
        }
        // What the survivors were doing just before the action: an election under way
        // then explains a failover faster than the detector allows.
        let busy = election_under_way(c, &survivors, leader);
        let t0 = Instant::now();
        let t0_us = super::unix_us();
        match mode {
            "sigkill" => c.kill(leader),
            "pause" => {
                if !c.admin(leader, "pause") {
                    anyhow::bail!("failover {kind}: POST /admin/pause to node {leader} failed");
                }
            }
            _ => c.terminate(leader),
        }
        match w.wait_agreement(&survivors, t0 + Duration::from_secs(5)) {
            Some((new, at)) => {
                let arrived = ms(at.saturating_duration_since(t0));
                let mut taken_apart = Phases::of(
                    t0_us,
                    w.first_lost_us(&survivors, t0_us),
                    w.adopted_span_us(&survivors, new).map(|(_, last)| last),
                    arrived,
                )
                .with_survivors(t0_us, &w.stamps(&survivors))
                .with_probe(t0_us, arrived);
                taken_apart.slowest_write = survivors
                    .iter()
                    .zip(&writes_before)
                    // A node whose first scrape failed has no baseline: its whole
                    // history would read as this window's.
                    .filter(|(_, before)| !before.is_empty())
                    .filter_map(|(&id, before)| {
                        let after = write_buckets(&c.get(id, "/metrics")?);
                        Some((id, slowest_between(before, &after)? * 1e3))
                    })
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                let took = match clock {
                    Clock::Arrival => ms(at.saturating_duration_since(t0)),
                    // No stamp (an older node): the arrival, an upper bound.
                    Clock::Stamp => w
                        .adopted_span_us(&survivors, new)
                        .map_or(ms(at.saturating_duration_since(t0)), |(_, last)| {
                            last.saturating_sub(t0_us) as f64 / 1e3
                        }),
                };
                // A take-down into an election under way measures that election, not
                // a failover: flagged whatever its time.
                if let Some(b) = &busy {
                    flagged.push(Flagged {
                        ms: Some(took),
                        cause: format!("the {mode} fell into an election under way ({b})"),
                    });
                } else if mode != "sigterm" && took < limit {
                    flagged.push(Flagged {
                        ms: Some(took),
                        cause: format!(
                            "below the detection limit {limit:.0} ms, though no survivor was \
                             electing just before the action: unexplained"
                        ),
                    });
                } else {
                    samples.push(took);
                    phases.push(taken_apart);
                }
            }
            None => {
                timeouts += 1;
                flagged.push(Flagged {
                    ms: None,
                    cause: match &busy {
                        Some(b) => format!("no agreement within 5 s; an election was under way at the action ({b})"),
                        None => "no agreement among the survivors within 5 s".into(),
                    },
                });
            }
        }
        // Bring the old leader back.
        match mode {
            "sigkill" | "sigterm" => {
                if mode == "sigterm" {
                    c.reap(leader, Duration::from_secs(5));
                }
                c.start(leader)?;
                w.connect(
                    leader,
                    c.http(leader).expect("roster node"),
                    Duration::from_secs(10),
                );
            }
            _ => {
                if !c.admin(leader, "resume") {
                    anyhow::bail!("failover {kind}: POST /admin/resume to node {leader} failed");
                }
            }
        }
    }
    let stats = Stats::of(&samples);
    Ok(FailoverRun {
        algorithm: kind,
        mode,
        ratio: stats.scaled(t.failure_ms as f64),
        stats,
        samples_ms: samples,
        flagged,
        timeouts,
        recoveries_failed,
        phases,
    })
}

/// Survivors that were electing, or named another leader than `leader`, just before
/// the action (from their `/status`), described; `None` when all followed `leader`
/// quietly.
pub(crate) fn election_under_way(
    c: &ProcCluster,
    survivors: &[NodeId],
    leader: NodeId,
) -> Option<String> {
    let mut busy = Vec::new();
    for &id in survivors {
        // Up to three asks: on a machine running 256 processes a node's HTTP listener
        // sometimes misses one (8 of 50 failovers went untimed in round 17 for it).
        let Some(status) = (0..3).find_map(|_| c.get(id, "/status")) else {
            busy.push(format!(
                "node {id} did not answer /status (asked three times)"
            ));
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&status) else {
            continue;
        };
        for g in v["groups"].as_array().into_iter().flatten() {
            if g["electing"].as_bool() == Some(true) {
                busy.push(format!("node {id} electing"));
            } else if g["leader"].as_u64() != Some(u64::from(leader)) {
                busy.push(format!("node {id} followed {}", g["leader"]));
            }
        }
    }
    (!busy.is_empty()).then(|| busy.join(", "))
}
