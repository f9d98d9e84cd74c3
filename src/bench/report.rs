//! The report: targets with verdicts, `report.md` (Markdown tables, SVG plots) and
//! `results.json`.
//!
//! # Why one file of ~710 lines of code
//! Every section of `report.md` is written here from one `Results`, with the same
//! table helpers and the targets' verdicts beside the text that explains them, so that
//! a figure and its explanation change together; the plots are in `plot.rs`.

use super::{plot, Results, Target};
use electd::contract::algorithm::AlgorithmKind;
use std::fmt::Write as _;
use std::path::Path;

/// Median target of a SIGKILL failover, as a multiple of failure_timeout.
pub fn median_target(kind: AlgorithmKind) -> f64 {
    super::targets::failover_target(kind).median
}

/// p99 target where the issue sets one.
pub fn p99_target(kind: AlgorithmKind) -> Option<f64> {
    super::targets::failover_target(kind).p99
}

/// What the timing model predicts for the median (× failure_timeout): detection at
/// failure_timeout minus the mean heartbeat phase (hb/2), then the algorithm's own
/// waits (a cascade: its answer timeouts T; a ring lap of loopback hops, ~0;
/// randomized timeouts: the minimum of the survivors' timeouts, whose median lies at
/// ln 2 / s of the range above its start for s survivors).
pub fn model_median(kind: AlgorithmKind, r: &Results) -> f64 {
    use electd::contract::info::Recovery;
    let t = &r.failover.timing;
    let f = t.failure_ms as f64;
    let hb = t.heartbeat_ms as f64;
    let answer = t.answer_ms as f64;
    let ms = match kind.info().recovery {
        Recovery::Cascade { answer_rounds } => f - hb / 2.0 + f64::from(answer_rounds) * answer,
        Recovery::RandomizedTimeout => raft_model_ms(t, r.failover.nodes, 0.5),
        Recovery::RingLaps { .. } => f - hb / 2.0,
    };
    ms / f
}

/// Raft's failover after a crash at quantile `q` (ms), as the election timeouts are
/// drawn. Ranked timeouts (the default, `[raft] ranked_timeouts`): the highest
/// survivor fires first, `min + margin + J` after the last heartbeat it heard, with
/// J uniform in [0, w/4) for the slot width w = (max − min)/N and margin = min(hb/2,
/// w/2); the crash falls φ, uniform in [0, hb), after that heartbeat. Uniform
/// timeouts: the first of the N − 1 survivors' draws in [min, max), less the median φ.
pub fn raft_model_ms(
    t: &electd::testkit::procs::ClusterTiming,
    nodes: electd::NodeId,
    q: f64,
) -> f64 {
    let min = t.election_min_ms as f64;
    let range = t.election_max_ms.saturating_sub(t.election_min_ms) as f64;
    let hb = t.heartbeat_ms as f64;
    if electd::contract::algorithm::Options::default().ranked_timeouts {
        let width = range / f64::from(nodes.max(1));
        let margin = (hb / 2.0).min(width / 2.0);
        min + margin + quantile_of_difference(width / 4.0, hb, q)
    } else {
        let survivors = f64::from(nodes.saturating_sub(1).max(1));
        min + range * (1.0 - (1.0 - q).powf(1.0 / survivors)) - hb / 2.0
    }
}

/// Quantile `q` of J − φ for J uniform in [0, a) and φ uniform in [0, b), on a grid
/// fine enough for a report (0.25 % of the range).
fn quantile_of_difference(a: f64, b: f64, q: f64) -> f64 {
    const K: usize = 400;
    let mut v: Vec<f64> = Vec::with_capacity(K * K);
    for i in 0..K {
        for j in 0..K {
            let u = (i as f64 + 0.5) / K as f64;
            let w = (j as f64 + 0.5) / K as f64;
            v.push(a * u - b * w);
        }
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize]
}

fn fmt2(x: f64) -> String {
    format!("{x:.2}")
}

/// Every target of the issue, met or missed.
pub fn targets(r: &Results) -> Vec<Target> {
    let mut out = Vec::new();
    for mode in ["sigkill", "pause"] {
        for run in r.failover.runs.iter().filter(|x| x.mode == mode) {
            let k = run.algorithm;
            let t = median_target(k);
            let model = model_median(k, r);
            out.push(Target {
                name: format!("failover median, {k}, {mode}"),
                target: format!("≤ {t:.2} × failure_timeout"),
                measured: format!(
                    "{:.3} × (n={}, timeouts {}, flagged {})",
                    run.ratio.median,
                    run.stats.n,
                    run.timeouts,
                    run.flagged.len()
                ),
                met: run.stats.n > 0 && run.timeouts == 0 && run.ratio.median <= t,
                note: format!("timing model predicts {model:.3} ×"),
            });
            if let Some(p) = p99_target(k) {
                out.push(Target {
                    name: format!("failover p99, {k}, {mode}"),
                    target: format!("≤ {p:.2} × failure_timeout"),
                    measured: format!("{:.3} ×", run.ratio.p99),
                    met: run.stats.n > 0 && run.timeouts == 0 && run.ratio.p99 <= p,
                    note: String::new(),
                });
            }
            if !k.info().uses_failure_detector() {
                let t = &r.failover.timing;
                let p90 = raft_model_ms(t, r.failover.nodes, 0.9) / t.failure_ms as f64;
                let how = if electd::contract::algorithm::Options::default().ranked_timeouts {
                    format!(
                        "ranked timeouts: the highest survivor fires first, in the first \
                         quarter of its slot of [{}, {}) ms; the model puts p90 at {p90:.2} × \
                         before the vote round trips",
                        t.election_min_ms, t.election_max_ms
                    )
                } else {
                    format!(
                        "the first of {} uniform timeouts in [{}, {}) ms fires by {p90:.2} × at \
                         p90 before any vote round trip or split vote: structural for this range",
                        r.failover.nodes.saturating_sub(1),
                        t.election_min_ms,
                        t.election_max_ms
                    )
                };
                out.push(Target {
                    name: format!("failover p90, raft, {mode} (beat mature Raft: 1.4–1.9 ×)"),
                    target: "< 1.40 × failure_timeout".into(),
                    measured: format!("{:.3} ×", run.ratio.p90),
                    met: run.stats.n > 0 && run.ratio.p90 < 1.40,
                    note: how,
                });
            }
        }
    }
    // The message section was not run at all (`--only`): no target to judge.
    let messages_run = !r.messages.points.is_empty() || !r.messages.incomplete.is_empty();
    if messages_run {
        let exact: Vec<_> = r.messages.points.iter().filter(|p| p.exact).collect();
        let off: Vec<String> = exact
            .iter()
            .filter(|p| {
                p.formula
                    .is_none_or(|f| (p.udp_messages as f64 - f).abs() > 1e-9)
            })
            .map(|p| {
                format!(
                    "{} N={}: {} vs {:?}",
                    p.case, p.nodes, p.udp_messages, p.formula
                )
            })
            .collect();
        out.push(Target {
            name: "messages over UDP ÷ closed form (every exact case)".into(),
            target: "1.00 exactly".into(),
            measured: format!(
                "{} of {} points exact",
                exact.len() - off.len(),
                exact.len()
            ),
            met: off.is_empty() && !exact.is_empty(),
            note: if r.messages.incomplete.is_empty() {
                off.join("; ")
            } else {
                format!(
                    "{} run(s) did not complete and were retried (listed under Message efficiency). {}",
                    r.messages.incomplete.len(),
                    off.join("; ")
                )
            },
        });
        let sim_off: Vec<String> = r
            .messages
            .points
            .iter()
            .filter(|p| p.udp_messages != p.sim_messages)
            .map(|p| {
                format!(
                    "{} N={}: udp {} sim {}",
                    p.case, p.nodes, p.udp_messages, p.sim_messages
                )
            })
            .collect();
        out.push(Target {
            name: "messages over UDP ÷ simulator (every case)".into(),
            target: "1.00 exactly".into(),
            measured: format!(
                "{} of {} points equal",
                r.messages.points.len() - sim_off.len(),
                r.messages.points.len()
            ),
            met: sim_off.is_empty() && !r.messages.points.is_empty(),
            note: sim_off.join("; "),
        });
    }
    out.extend(sim_targets(&r.scale.sim));
    out.extend(etcd_targets(&r.etcd));
    out.extend(super::keepalived::targets(&r.keepalived));
    out.extend(cost_targets(&r.cost));
    out.extend(super::coldstart::targets(&r.cold));
    out
}

/// The simulator's targets (issue 17): Bully at N = 4096 within 1.5 GiB of peak
/// resident memory, and at least a million election messages per CPU second at
/// N = 1024. A run without those sizes (`--quick`) shows its largest Bully point, as
/// missed.
fn sim_targets(points: &[super::scale::SimPoint]) -> Vec<Target> {
    let bully: Vec<_> = points
        .iter()
        .filter(|p| p.algorithm == AlgorithmKind::Bully)
        .collect();
    let Some(largest) = bully.iter().max_by_key(|p| p.nodes) else {
        return Vec::new();
    };
    let at = |n: usize| bully.iter().find(|p| p.nodes == n).unwrap_or(largest);
    let size_note = |p: &super::scale::SimPoint, n: usize| {
        if p.nodes == n {
            String::new()
        } else {
            format!("measured at N={} only: the target is at N={n}", p.nodes)
        }
    };
    const GIB: f64 = 1024.0;
    let (t, m) = (at(1024), at(4096));
    vec![
        Target {
            name: "simulator throughput (Bully, N=1024)".into(),
            target: "≥ 1,000,000 election messages per CPU second".into(),
            measured: format!(
                "{:.2} M/s = {:.2} × the target ({:.2} M datagrams/s with the acks; N={})",
                t.messages_per_sec / 1e6,
                t.messages_per_sec / 1e6,
                t.datagrams_per_sec / 1e6,
                t.nodes
            ),
            met: t.nodes == 1024 && t.agreed && t.messages_per_sec >= 1e6,
            note: size_note(t, 1024),
        },
        Target {
            name: "simulator memory (Bully startup election, N=4096)".into(),
            target: "agreed, peak RSS ≤ 1.5 GiB".into(),
            measured: format!(
                "N={}, agreed={}, {} messages, peak RSS {:.2} GiB = {:.2} × the bound{}",
                m.nodes,
                m.agreed,
                m.messages,
                m.peak_rss_mib / GIB,
                m.peak_rss_mib / GIB / 1.5,
                if m.peak_reset { "" } else { " (process peak)" }
            ),
            met: m.nodes == 4096 && m.agreed && m.peak_rss_mib <= 1.5 * GIB,
            note: size_note(m, 4096),
        },
    ]
}

/// Idle cost (issue 17): at heartbeat 10 ms a Bully leader within 1 % of a core and a
/// follower within 0.3 %, every node within 20 MiB; the run of all algorithms side by
/// side within 1 % on every node.
fn cost_targets(c: &super::cost::CostResults) -> Vec<Target> {
    let mut out = Vec::new();
    // The same run with every heartbeat read at once, if the bench made it.
    let one_by_one = |run: &super::cost::CostRun| {
        c.runs.iter().find(|o| {
            !o.batched && o.heartbeat_ms == run.heartbeat_ms && o.algorithms == run.algorithms
        })
    };
    for run in c.runs.iter().filter(|c| c.heartbeat_ms == 10 && c.batched) {
        let rss = run.max_by(|n| n.rss_mib);
        let worst = |role: &str| {
            run.nodes
                .iter()
                .filter(|n| n.role == role)
                .map(|n| n.cpu_percent)
                .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))))
        };
        let window = if run.windows > 1 {
            format!("median of {} windows of {:.0} s", run.windows, run.window_s)
        } else {
            format!("over {:.0} s", run.window_s)
        };
        if run.algorithms == [AlgorithmKind::Bully] {
            for (role, bound) in [("leader", 1.0), ("follower", 0.3)] {
                let Some(cpu) = worst(role) else {
                    continue;
                };
                out.push(Target {
                    name: format!("idle {role}, {}", run.label),
                    target: format!("≤ {bound} % of a core, ≤ 20 MiB resident"),
                    measured: format!(
                        "{cpu:.2} % = {:.2} × the bound; max {rss:.1} MiB ({window})",
                        cpu / bound
                    ),
                    met: cpu <= bound && rss <= 20.0,
                    note: if role == "leader" {
                        "on loopback the sender's CPU also carries the kernel's delivery of \
                         its heartbeats to the receivers (see docs/bench/idle)"
                            .into()
                    } else {
                        let each: Vec<String> = run
                            .nodes
                            .iter()
                            .filter(|n| n.role == role)
                            .map(|n| format!("node {} {:.2} %", n.node, n.cpu_percent))
                            .collect();
                        let before = one_by_one(run)
                            .map(|o| {
                                let mut v: Vec<String> = o
                                    .nodes
                                    .iter()
                                    .filter(|n| n.role == role)
                                    .map(|n| format!("{:.2}", n.cpu_percent))
                                    .collect();
                                v.sort();
                                format!(
                                    "; with each heartbeat read at once \
                                     (`transport.batch_heartbeats = false`, a wakeup per \
                                     heartbeat) the followers took {} %",
                                    v.join(", ")
                                )
                            })
                            .unwrap_or_default();
                        format!(
                            "each follower: {}; a follower reads its leader's heartbeats in \
                             batches, about once per failure_timeout (docs/bench/idle){before}",
                            each.join(", ")
                        )
                    },
                });
            }
        } else {
            let cpu = run.max_by(|n| n.cpu_percent);
            out.push(Target {
                name: format!("idle node, {}", run.label),
                target: "≤ 1 % of a core, ≤ 20 MiB resident".into(),
                measured: format!("max {cpu:.2} %, max {rss:.1} MiB ({window})"),
                met: rss <= 20.0 && cpu <= 1.0,
                note: String::new(),
            });
        }
    }
    out
}

/// Why the etcd section is empty when `--only` left it out (no target then).
pub const NOT_SELECTED: &str = "not selected (--only)";

/// Raft's failover with the one-value election timeout E, beside etcd (issue targets:
/// median ≤ 1.10 E, p90 ≤ 1.25 E, max ≤ 1.5 E).
fn etcd_targets(e: &super::versus_etcd::VersusEtcd) -> Vec<Target> {
    let raft = AlgorithmKind::Raft.as_str();
    if e.skipped.as_deref() == Some(NOT_SELECTED) {
        return Vec::new();
    }
    let Some(run) = e.run(raft) else {
        return vec![Target {
            name: "raft failover ÷ E (poll driver, beside etcd)".into(),
            target: "median ≤ 1.10, p90 ≤ 1.25, max ≤ 1.50".into(),
            measured: "not measured".into(),
            met: false,
            note: e.skipped.clone().unwrap_or_default(),
        }];
    };
    let r = &run.ratio;
    let mut note = format!(
        "{} rounds, {} timeouts, {} split votes",
        r.n, run.timeouts, run.split_votes
    );
    if let Some(etcd) = e.run("etcd") {
        let _ = write!(
            note,
            "; electd ÷ etcd: median {:.2}, p90 {:.2}, max {:.2}",
            r.median / etcd.ratio.median,
            r.p90 / etcd.ratio.p90,
            r.max / etcd.ratio.max
        );
    }
    vec![Target {
        name: "raft failover ÷ E (poll driver, beside etcd)".into(),
        target: "median ≤ 1.10, p90 ≤ 1.25, max ≤ 1.50".into(),
        measured: format!("median {:.2}, p90 {:.2}, max {:.2}", r.median, r.p90, r.max),
        met: r.n > 0 && run.timeouts == 0 && r.median <= 1.10 && r.p90 <= 1.25 && r.max <= 1.50,
        note,
    }]
}

fn etcd_section(s: &mut String, e: &super::versus_etcd::VersusEtcd) {
    use super::versus_etcd::{ELECTION_MS, HEARTBEAT_MS, MEMBERS};
    let _ = writeln!(s, "\n## Failover beside etcd\n");
    if let Some(why) = &e.skipped {
        let _ = writeln!(s, "**Not measured: {why}.**\n");
        return;
    }
    let _ = writeln!(
        s,
        "{MEMBERS} members of each system on 127.0.0.1, heartbeat {HEARTBEAT_MS} ms, election \
         timeout E = {ELECTION_MS} ms ({}: `--heartbeat-interval {HEARTBEAT_MS} --election-timeout \
         {ELECTION_MS}`; electd: `election_timeout = \"{ELECTION_MS}ms\"` for Raft, \
         `failure_timeout = \"{ELECTION_MS}ms\"` for the others). {} SIGKILLs of the leader per \
         system, measured by one poll-based driver: the time until every survivor names one new \
         leader that names itself (etcd `POST /v3/maintenance/status`, electd `GET /status`, \
         polled every ~0.5 ms). Split votes: terms above the first that a failover used. A \
         sample below the least the system's detector can take (electd: E − heartbeat; etcd, \
         which counts E in ticks of the heartbeat interval from the first tick after the last \
         heartbeat: E − 2 × heartbeat) or a round without agreement is flagged with its cause \
         and kept out of the statistics; for a sample below the limit the cause quotes what \
         the members logged about their election clocks around the kill (etcd).\n",
        e.etcd_version, e.rounds
    );
    if let Some(etcd) = e.run("etcd") {
        let within = super::versus_etcd::SETTLE_WITHIN.as_secs();
        let unsettled = if etcd.unsettled == 0 {
            format!("every restarted member reported it within {within} s")
        } else {
            format!(
                "**{} of {} restarted members did not report it within {within} s** (the next \
                 round went ahead)",
                etcd.unsettled, e.rounds
            )
        };
        let when = if etcd.settle.n == 0 {
            "in this run no restarted member reported it".to_string()
        } else {
            format!(
                "in this run {:.0} ms after its start (median; {:.0}–{:.0} ms over {} restarts)",
                etcd.settle.median, etcd.settle.min, etcd.settle.max, etcd.settle.n
            )
        };
        // Pre-vote became etcd's default in 3.5.
        let minor = e
            .etcd_version
            .strip_prefix("etcd 3.")
            .and_then(|v| v.split('.').next())
            .and_then(|m| m.parse::<u32>().ok());
        let prevote = match minor {
            Some(m) if m < 5 => format!("etcd 3.{m}: no pre-vote"),
            Some(m) => format!("etcd 3.{m}: pre-vote"),
            None => "its own pre-vote default".to_string(),
        };
        let _ = writeln!(
            s,
            "A restarted etcd member fast-forwards its election clock by E − 2 ticks once its \
             peer connections are up (`--initial-election-tick-advance`, on by default): \
             {when}, and only the leader's next heartbeat zeroes the \
             clock again. A leader killed around that moment leaves a member that campaigns \
             after as little as two ticks, which measures a boot, not a crash: after each \
             restart the driver waits for the member's log to report the advance before the \
             next round ({unsettled}). etcd runs with its defaults otherwise ({prevote}).\n"
        );
    }
    header(
        s,
        &[
            "system",
            "n",
            "timeouts",
            "median ms",
            "median ÷ E",
            "p90 ÷ E",
            "max ÷ E",
            "split votes / 1000",
            "flagged",
        ],
    );
    for run in &e.runs {
        let flagged = if run.flagged.is_empty() {
            "0".to_string()
        } else {
            format!(
                "**{}: {}**",
                run.flagged.len(),
                run.flagged
                    .iter()
                    .map(super::Flagged::describe)
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        };
        let timeouts = if run.timeouts > 0 {
            format!("**{}**", run.timeouts)
        } else {
            "0".into()
        };
        row(
            s,
            &[
                run.system.clone(),
                run.ratio.n.to_string(),
                timeouts,
                format!("{:.1}", run.stats.median),
                fmt2(run.ratio.median),
                fmt2(run.ratio.p90),
                fmt2(run.ratio.max),
                format!("{:.0}", run.split_votes_per_1000),
                flagged,
            ],
        );
    }
    if let Some(etcd) = e.run("etcd") {
        let _ = writeln!(s, "\nelectd ÷ etcd, per percentile:\n");
        header(s, &["electd", "median", "p90", "max"]);
        for run in e.runs.iter().filter(|r| r.system != "etcd") {
            let q = |a: f64, b: f64| if b > 0.0 { fmt2(a / b) } else { "n/a".into() };
            row(
                s,
                &[
                    run.system.clone(),
                    q(run.ratio.median, etcd.ratio.median),
                    q(run.ratio.p90, etcd.ratio.p90),
                    q(run.ratio.max, etcd.ratio.max),
                ],
            );
        }
    }
    let _ = writeln!(s);
}

/// The section beside keepalived (src/bench/keepalived.rs), left out of the report when
/// `--only` did not name it.
fn keepalived_section(s: &mut String, r: &Results) {
    if r.keepalived.skipped.as_deref() != Some(NOT_SELECTED) {
        super::keepalived::markdown(s, &r.keepalived);
    }
}

fn keepalived_plot(r: &Results, dir: &Path) -> anyhow::Result<()> {
    super::keepalived::plot(&r.keepalived, &dir.join("keepalived.svg"))
        .map_err(|e| anyhow::anyhow!("plot keepalived.svg: {e}"))
}

fn row(s: &mut String, cells: &[String]) {
    let _ = writeln!(s, "| {} |", cells.join(" | "));
}

fn header(s: &mut String, cells: &[&str]) {
    let _ = writeln!(s, "| {} |", cells.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(cells.len()));
}

/// Write `results.json`, the plots and `report.md` into `dir`.
pub fn write(r: &Results, dir: &Path) -> anyhow::Result<()> {
    std::fs::write(dir.join("results.json"), serde_json::to_string_pretty(r)?)?;
    let mut plots = Vec::new();
    for mode in super::failover::MODES {
        let name = format!("failover-{mode}.svg");
        plot::failover(&r.failover, mode, 1.10, &dir.join(&name))
            .map_err(|e| anyhow::anyhow!("plot {name}: {e}"))?;
        plots.push(name);
    }
    plot::messages(&r.messages, &dir.join("messages.svg"))
        .map_err(|e| anyhow::anyhow!("plot messages.svg: {e}"))?;
    plot::scale(
        &r.scale.sim,
        "Simulator wall time of one startup election",
        "wall time, ms (log)",
        |p| p.wall_ms,
        &dir.join("scale-wall.svg"),
    )
    .map_err(|e| anyhow::anyhow!("plot scale-wall.svg: {e}"))?;
    plot::scale(
        &r.scale.sim,
        "Simulator peak resident memory of one startup election",
        "peak RSS, MiB (log)",
        |p| p.peak_rss_mib,
        &dir.join("scale-memory.svg"),
    )
    .map_err(|e| anyhow::anyhow!("plot scale-memory.svg: {e}"))?;
    keepalived_plot(r, dir)?;
    std::fs::write(dir.join("report.md"), markdown(r))?;
    Ok(())
}

/// The Markdown report.
pub fn markdown(r: &Results) -> String {
    let m = &r.meta;
    let mut s = String::new();
    let _ = writeln!(s, "# electd benchmark report\n");
    let _ = writeln!(
        s,
        "Generated by `electd bench{}` (electd {}, {} build) in {:.0} s on {} × {} (Linux {}), \
         load average {:.2} at the start and {:.2} at the end; seed {}.{}\n",
        if m.quick { " --quick" } else { "" },
        m.version,
        m.profile,
        m.wall_s,
        m.cpus,
        m.cpu_model,
        m.kernel,
        m.load_start,
        m.load_end,
        m.seed,
        if m.quick {
            " **Quick mode: smoke-test sizes, do not quote these figures.**"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "Every figure is in `results.json` next to this file. Targets are ratios measured in \
         this one run on this one machine, so they compare across machines; absolute times \
         depend on the machine and its load.\n"
    );

    let _ = writeln!(s, "## Targets\n");
    header(&mut s, &["target", "goal", "measured", "verdict", "note"]);
    for t in &r.targets {
        row(
            &mut s,
            &[
                t.name.clone(),
                t.target.clone(),
                t.measured.clone(),
                if t.met { "met" } else { "**missed**" }.into(),
                t.note.clone(),
            ],
        );
    }

    let f = &r.failover;
    let t = &f.timing;
    let _ = writeln!(s, "\n## Failover\n");
    let _ = writeln!(
        s,
        "{} real `electd run` processes on 127.0.0.1, one cluster per algorithm; heartbeat {} ms, \
         failure_timeout {} ms, answer_timeout {} ms, coordinator_timeout {} ms, Raft election \
         timeout {}..{} ms, first retransmission after {} ms then adaptive{}; {} actions per algorithm and mode. \
         `sigkill`: SIGKILL of the leader's process; `pause`: `POST /admin/pause` to the leader \
         (traffic stops, process lives); `sigterm`: graceful stop (the leader resigns). \
         The time runs from the action to the moment the last survivor adopts the new leader, \
         taken from the survivors' `/watch` server-sent events as they arrive (no polling \
         latency; an SSE event crosses loopback in well under 1 ms). Before each action the \
         cluster agrees again and waits 3 heartbeats plus a random fraction of one, so the \
         crash falls at a random phase of the heartbeat period.\n",
        f.nodes,
        t.heartbeat_ms,
        t.failure_ms,
        t.answer_ms,
        t.coordinator_ms,
        t.election_min_ms,
        t.election_max_ms,
        t.retransmit_ms,
        t.max_attempts
            .map(|n| format!(", at most {n} sends"))
            .unwrap_or_default(),
        f.per_mode
    );
    for mode in super::failover::MODES {
        let _ = writeln!(s, "### {mode}\n");
        header(
            &mut s,
            &[
                "algorithm",
                "n",
                "timeouts",
                "flagged",
                "min ms",
                "median ms",
                "p90 ms",
                "p99 ms",
                "max ms",
                "median ×",
                "p90 ×",
                "p99 ×",
                "max ×",
                "model median ×",
            ],
        );
        for run in f.runs.iter().filter(|x| x.mode == mode) {
            let (a, b) = (&run.stats, &run.ratio);
            row(
                &mut s,
                &[
                    run.algorithm.to_string(),
                    a.n.to_string(),
                    run.timeouts.to_string(),
                    run.flagged.len().to_string(),
                    format!("{:.1}", a.min),
                    format!("{:.1}", a.median),
                    format!("{:.1}", a.p90),
                    format!("{:.1}", a.p99),
                    format!("{:.1}", a.max),
                    fmt2(b.median),
                    fmt2(b.p90),
                    fmt2(b.p99),
                    fmt2(b.max),
                    if mode == "sigterm" {
                        "-".into()
                    } else {
                        format!("{:.3}", model_median(run.algorithm, r))
                    },
                ],
            );
        }
        let flagged: Vec<String> = f
            .runs
            .iter()
            .filter(|x| x.mode == mode)
            .flat_map(|run| {
                run.flagged
                    .iter()
                    .map(move |x| format!("- {}: {}", run.algorithm, x.describe()))
            })
            .collect();
        if !flagged.is_empty() {
            let _ = writeln!(
                s,
                "\nFlagged samples, left out of the statistics above (`n` counts the others):\n\n{}",
                flagged.join("\n")
            );
        }
        let _ = writeln!(s, "\n![failover {mode}](failover-{mode}.svg)\n");
    }
    let _ = writeln!(
        s,
        "Timing model (\"model median\"): a follower declares the leader lost `failure_timeout` \
         after the last heartbeat it heard, i.e. failure_timeout − φ after the crash, with φ \
         uniform in [0, heartbeat) (median heartbeat/2). Bully then waits one answer timeout \
         for an OK from the dead node; Improved Bully waits it twice (the initiator collects \
         OKs, then the chosen node cross-checks higher ids); the ring family only adds a lap of \
         loopback hops; {} SIGTERM skips detection: the leader's RESIGN starts the election \
         at once. A SIGKILL or pause failover below the detection limit (failure_timeout − \
         heartbeat; Raft: election_min − heartbeat) cannot come from the detector, and one \
         whose action fell into an election under way measures that election: both are \
         flagged with their cause and left out of the statistics.\n",
        if electd::contract::algorithm::Options::default().ranked_timeouts {
            "Raft runs ranked timeouts (`[raft] ranked_timeouts`, the default): the election \
             timeout range is cut into one slot per roster member, the highest survivor owns \
             the first and fires min + min(heartbeat/2, slot/2) + a draw from the first \
             quarter of its slot after its last heartbeat (less the crash phase φ)."
                .to_string()
        } else {
            format!(
                "Raft's followers draw election timeouts uniformly in [election_min, \
                 election_max) from their last heartbeat, and the first of the {} survivors \
                 to fire wins (its median is ln 2/{} of the range above the minimum).",
                f.nodes.saturating_sub(1),
                f.nodes.saturating_sub(1)
            )
        }
    );

    etcd_section(&mut s, &r.etcd);
    keepalived_section(&mut s, r);

    let _ = writeln!(s, "## Message efficiency\n");
    let _ = writeln!(
        s,
        "N runtimes in one process, each with its own UDP socket on 127.0.0.1 (real datagrams, \
         HMAC-authenticated), start passively; the lowest id calls the election (what `POST \
         /admin/election` does); counts are `electd_messages_sent_total` summed over the nodes \
         once every node agrees and every election message sent has been received. `sim` is \
         `electd simulate` on the same ring order and initiator; `formula` is the literature's \
         closed form (`electd compare`). Acks = datagrams − messages − heartbeats − \
         retransmissions; bytes are UDP payload bytes of every datagram (messages and acks).\n"
    );
    header(
        &mut s,
        &[
            "case",
            "N",
            "udp",
            "sim",
            "formula",
            "udp/formula",
            "udp/sim",
            "acks",
            "retx",
            "bytes",
            "bytes/msg",
            "complete",
        ],
    );
    for p in &r.messages.points {
        row(
            &mut s,
            &[
                p.case.clone(),
                p.nodes.to_string(),
                p.udp_messages.to_string(),
                p.sim_messages.to_string(),
                p.formula
                    .map(|f| format!("{f:.1}{}", if p.exact { "" } else { " (bound/avg)" }))
                    .unwrap_or("-".into()),
                p.ratio_formula.map(fmt2).unwrap_or("-".into()),
                fmt2(p.ratio_sim),
                p.acks.to_string(),
                p.retransmissions.to_string(),
                p.bytes.to_string(),
                format!("{:.1}", p.bytes_per_message),
                p.complete.to_string(),
            ],
        );
    }
    if !r.messages.incomplete.is_empty() {
        let _ = writeln!(
            s,
            "\n**Incomplete runs** (no agreement or not every message received within 30 s; \
             the point was run again and the table shows the retry):\n"
        );
        for p in &r.messages.incomplete {
            let _ = writeln!(
                s,
                "- {} N={}: {} messages (simulator {}), {} retransmissions, leader {:?}",
                p.case, p.nodes, p.udp_messages, p.sim_messages, p.retransmissions, p.leader
            );
        }
    }
    let _ = writeln!(s, "\n![messages](messages.svg)\n");

    let _ = writeln!(s, "## Scale\n");
    let _ = writeln!(
        s,
        "### Simulator\n\nOne startup election (lowest id initiates, ids ascending) per \
         algorithm and N, single-threaded, timeouts scaled with N (failure_timeout = \
         max(100 ms, 4N ms)) so that a lap of the ring fits before a watchdog fires; the \
         formula column is the literature's exact count where there is one (Bully N²−1). Messages are election messages (the literature's \
         count); datagrams are every delivery (messages, acks). Throughput is per second of \
         the simulating thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), i.e. per core: on a \
         shared machine wall time also counts time spent waiting for a core. Peak RSS is this process's \
         high-water mark during the run (reset before it via `/proc/self/clear_refs`).\n"
    );
    header(
        &mut s,
        &[
            "algorithm",
            "N",
            "agreed",
            "messages",
            "formula",
            "datagrams",
            "wall ms",
            "CPU ms",
            "M msg/s",
            "M datagrams/s",
            "peak RSS MiB",
        ],
    );
    for p in &r.scale.sim {
        row(
            &mut s,
            &[
                p.algorithm.to_string(),
                p.nodes.to_string(),
                if p.agreed {
                    "true".into()
                } else {
                    "**false**".into()
                },
                p.messages.to_string(),
                p.formula.map(|f| format!("{f:.0}")).unwrap_or("-".into()),
                p.datagrams.to_string(),
                format!("{:.0}", p.wall_ms),
                format!("{:.0}", p.cpu_ms),
                format!("{:.2}", p.messages_per_sec / 1e6),
                format!("{:.2}", p.datagrams_per_sec / 1e6),
                format!(
                    "{:.0}{}",
                    p.peak_rss_mib,
                    if p.peak_reset { "" } else { " (process peak)" }
                ),
            ],
        );
    }
    let never: Vec<String> = r
        .scale
        .sim
        .iter()
        .filter(|p| !p.agreed)
        .map(|p| format!("- {} N={}: the election did not settle on one leader within the simulated 600 s, so its counts are not an election's", p.algorithm, p.nodes))
        .collect();
    if !never.is_empty() {
        let _ = writeln!(s, "\nFlagged points:\n\n{}", never.join("\n"));
    }
    let _ = writeln!(
        s,
        "\n![wall](scale-wall.svg)\n\n![memory](scale-memory.svg)\n"
    );
    let _ = writeln!(
        s,
        "### Real UDP, one process\n\nN runtimes with their own sockets on 127.0.0.1 in one \
         process (2 tokio worker threads), every node calling an election at boot; then the \
         leader is paused (`Control::Pause`, what `/admin/pause` sends) and resumed, several \
         times. Heartbeat 10 ms, failure_timeout 100 ms, answer_timeout 10 ms.\n"
    );
    header(
        &mut s,
        &[
            "algorithm",
            "N",
            "boot → first leader ms",
            "failovers",
            "timeouts",
            "flagged",
            "failover median ms",
            "failover max ms",
        ],
    );
    for p in &r.scale.udp {
        row(
            &mut s,
            &[
                p.algorithm.to_string(),
                p.nodes.to_string(),
                p.first_leader_ms
                    .map(|x| format!("{x:.1}"))
                    .unwrap_or("-".into()),
                p.failover.n.to_string(),
                p.timeouts.to_string(),
                p.flagged.len().to_string(),
                format!("{:.1}", p.failover.median),
                format!("{:.1}", p.failover.max),
            ],
        );
    }
    let flagged: Vec<String> = r
        .scale
        .udp
        .iter()
        .flat_map(|p| {
            let boot = p.first_leader_ms.is_none().then(|| {
                format!(
                    "- {} N={}: no first leader agreed within 30 s of the boot",
                    p.algorithm, p.nodes
                )
            });
            boot.into_iter().chain(
                p.flagged
                    .iter()
                    .map(move |f| format!("- {} N={}: {}", p.algorithm, p.nodes, f.describe())),
            )
        })
        .collect();
    if !flagged.is_empty() {
        let _ = writeln!(
            s,
            "\nFlagged, left out of the failover figures (each with its cause):\n\n{}\n",
            flagged.join("\n")
        );
    }

    s.push_str(&super::coldstart::markdown(&r.cold));

    let _ = writeln!(s, "\n## Cost per node\n");
    let _ = writeln!(
        s,
        "Five `electd run` processes at idle after agreeing; per process: resident memory \
         (`/proc/<pid>/status`), CPU (run time of all threads in ns, \
         `/proc/<pid>/task/*/schedstat`, as % of one core: the median of consecutive windows, \
         each window's figure in the last column, so that one burst of other work on the \
         machine moves one window, not the figure) and bytes on the wire \
         (`electd_bytes_sent_total`, over all the windows). A group's leader sends its \
         heartbeats; followers send nothing at idle but Raft's heartbeat acks.\n"
    );
    header(
        &mut s,
        &[
            "run",
            "node",
            "role (groups led)",
            "RSS MiB",
            "peak RSS MiB",
            "CPU %",
            "bytes/s",
            "datagrams/s",
            "CPU % per window",
        ],
    );
    for run in &r.cost.runs {
        for n in &run.nodes {
            row(
                &mut s,
                &[
                    run.label.clone(),
                    n.node.to_string(),
                    format!("{} ({})", n.role, n.groups_led),
                    format!("{:.1}", n.rss_mib),
                    format!("{:.1}", n.peak_rss_mib),
                    format!("{:.2}", n.cpu_percent),
                    format!("{:.0}", n.bytes_per_sec),
                    format!("{:.0}", n.datagrams_per_sec),
                    n.cpu_windows
                        .iter()
                        .map(|c| format!("{c:.2}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                ],
            );
        }
    }

    let _ = writeln!(s, "\n## Codec\n");
    let _ = writeln!(
        s,
        "Per datagram, timed in a loop (`cargo bench --bench codec` measures the same with \
         criterion): encode = protobuf envelope + HMAC-SHA256 tag; decode = parse, canonical \
         re-encoding check, tag verification and validation. Roster of {} nodes.\n",
        super::codec::ROSTER
    );
    header(
        &mut s,
        &[
            "datagram",
            "authenticated",
            "bytes",
            "encode ns",
            "decode ns",
            "total ns",
        ],
    );
    for p in &r.codec.points {
        row(
            &mut s,
            &[
                p.datagram.clone(),
                p.authenticated.to_string(),
                p.bytes.to_string(),
                format!("{:.0}", p.encode_ns),
                format!("{:.0}", p.decode_ns),
                format!("{:.0}", p.total_ns),
            ],
        );
    }
    let _ = writeln!(
        s,
        "\n## Reproduce\n\n```sh\ncargo build --release\n./target/release/electd bench --out docs/bench\n\
         ./target/release/electd bench --quick --out /tmp/bench   # seconds; smoke test\n\
         cargo bench --bench codec\n```"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use electd::testkit::procs::ClusterTiming;

    #[test]
    fn quantiles_of_a_difference_of_uniforms() {
        // J − φ is symmetric about a/2 − b/2; with b = 0 it is J itself.
        assert!((quantile_of_difference(4.0, 0.0, 0.5) - 2.0).abs() < 0.02);
        assert!((quantile_of_difference(4.0, 0.0, 0.9) - 3.6).abs() < 0.02);
        assert!((quantile_of_difference(5.0, 10.0, 0.5) - (2.5 - 5.0)).abs() < 0.05);
        // Below the median, above the minimum.
        let p10 = quantile_of_difference(5.0, 10.0, 0.1);
        assert!(p10 > -10.0 && p10 < -2.5);
    }

    #[test]
    fn raft_model_follows_the_timeout_spread_in_use() {
        let t = ClusterTiming::failover();
        let median = raft_model_ms(&t, 5, 0.5);
        let p90 = raft_model_ms(&t, 5, 0.9);
        assert!(p90 > median);
        let min = t.election_min_ms as f64;
        let range = (t.election_max_ms - t.election_min_ms) as f64;
        let hb = t.heartbeat_ms as f64;
        if electd::contract::algorithm::Options::default().ranked_timeouts {
            // Slot width range/5, margin hb/2, jitter from the first quarter of a slot.
            let width = range / 5.0;
            let expect = min + (hb / 2.0).min(width / 2.0) + width / 8.0 - hb / 2.0;
            assert!((median - expect).abs() < 0.1, "{median} vs {expect}");
            assert!(p90 < min + (hb / 2.0) + width / 4.0);
        } else {
            let expect = min + range * (1.0 - 0.5f64.powf(1.0 / 4.0)) - hb / 2.0;
            assert!((median - expect).abs() < 1e-9);
        }
    }

    #[test]
    fn detection_limits() {
        use crate::bench::detection_limit_ms;
        assert_eq!(detection_limit_ms(AlgorithmKind::Bully, 100, 150, 10), 90.0);
        assert_eq!(detection_limit_ms(AlgorithmKind::Raft, 100, 150, 10), 140.0);
    }
}
