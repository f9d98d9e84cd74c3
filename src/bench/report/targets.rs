//! The targets of the issues, each with its verdict, computed from the results.

use super::model::{median_target, model_median, p99_target, raft_model_ms};
use crate::bench::{Results, Target};
use electd::contract::algorithm::AlgorithmKind;
use std::fmt::Write as _;

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
    out.extend(crate::bench::keepalived::targets(&r.keepalived));
    out.extend(crate::bench::detect::targets(&r.detect));
    out.extend(cost_targets(&r.cost));
    out.extend(crate::bench::coldstart::targets(&r.cold));
    out
}

/// The simulator's targets (issue 17): Bully at N = 4096 within 1.5 GiB of peak
/// resident memory, and at least a million election messages per CPU second at
/// N = 1024. A run without those sizes (`--quick`) shows its largest Bully point, as
/// missed.
fn sim_targets(points: &[crate::bench::scale::SimPoint]) -> Vec<Target> {
    let bully: Vec<_> = points
        .iter()
        .filter(|p| p.algorithm == AlgorithmKind::Bully)
        .collect();
    let Some(largest) = bully.iter().max_by_key(|p| p.nodes) else {
        return Vec::new();
    };
    let at = |n: usize| bully.iter().find(|p| p.nodes == n).unwrap_or(largest);
    let size_note = |p: &crate::bench::scale::SimPoint, n: usize| {
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
fn cost_targets(c: &crate::bench::cost::CostResults) -> Vec<Target> {
    let mut out = Vec::new();
    // The same run with every heartbeat read at once, if the bench made it.
    let one_by_one = |run: &crate::bench::cost::CostRun| {
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
    out.extend(floor_targets(c));
    out
}

/// Idle cost against the floor measured in the same run (issue 30): at heartbeat 10 ms
/// the Bully leader ≤ 1.5 × its floor, every follower ≤ 2 × its own; the node leading
/// all six groups within 1.3 × the one-group leader and ≤ 1 % of a core.
pub(super) fn floor_targets(c: &crate::bench::cost::CostResults) -> Vec<Target> {
    use crate::bench::cost::{CostRun, NodeCost};
    let mut out = Vec::new();
    let at_10 = |all: bool| {
        c.runs.iter().find(|r| {
            r.heartbeat_ms == 10
                && r.batched
                && if all {
                    r.algorithms.len() > 1
                } else {
                    r.algorithms == [AlgorithmKind::Bully]
                }
        })
    };
    let describe = |n: &NodeCost| match (n.floor_cpu_percent, n.over_floor()) {
        (Some(f), Some(x)) => format!(
            "node {} {:.2} % ÷ floor {f:.2} % = {x:.2} ×",
            n.node, n.cpu_percent
        ),
        _ => format!("node {} {:.2} %, no floor", n.node, n.cpu_percent),
    };
    let ratio_target = |run: &CostRun, role: &str, bound: f64| -> Option<Target> {
        let nodes: Vec<&NodeCost> = run.nodes.iter().filter(|n| n.role == role).collect();
        if nodes.is_empty() {
            return None;
        }
        let worst = nodes
            .iter()
            .map(|n| n.over_floor().unwrap_or(f64::INFINITY))
            .fold(0.0, f64::max);
        Some(Target {
            name: format!("idle {role} ÷ its floor, {}", run.label),
            target: format!("≤ {bound} × the floor (same datagrams, same run)"),
            measured: if worst.is_finite() {
                format!("{worst:.2} ×")
            } else {
                "no floor measured".into()
            },
            met: worst <= bound,
            note: format!(
                "{}; the floor: one thread per node sending the node's datagrams per \
                 second in one burst per period and reading what it is sent \
                 (src/bench/cost/floor.rs)",
                nodes
                    .iter()
                    .map(|n| describe(n))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        })
    };
    let one = at_10(false);
    if let Some(run) = one {
        out.extend(ratio_target(run, "leader", 1.5));
        out.extend(ratio_target(run, "follower", 2.0));
    }
    if let Some(all) = at_10(true) {
        let groups = all.algorithms.len();
        let Some(top) = all.nodes.iter().max_by_key(|n| n.groups_led) else {
            return out;
        };
        let base = one.map(|r| {
            r.max_by(|n| {
                if n.role == "leader" {
                    n.cpu_percent
                } else {
                    0.0
                }
            })
        });
        let vs = base.filter(|&b| b > 0.0).map(|b| top.cpu_percent / b);
        // Raft's followers answer every heartbeat (the other groups' do not): the
        // Raft leader alone, for the part of the cost that comes with Raft.
        let raft_alone = c
            .runs
            .iter()
            .find(|r| r.heartbeat_ms == 10 && r.batched && r.algorithms == [AlgorithmKind::Raft])
            .map(|r| {
                r.max_by(|n| {
                    if n.role == "leader" {
                        n.cpu_percent
                    } else {
                        0.0
                    }
                })
            })
            .filter(|&b| b > 0.0)
            .map_or(String::new(), |b| {
                format!(
                    "; the Raft leader alone, whose followers answer each heartbeat: {b:.2} % \
                     ({:.2} × the one-group Bully leader; the six groups = {:.2} × it)",
                    base.filter(|&x| x > 0.0).map_or(f64::NAN, |x| b / x),
                    top.cpu_percent / b
                )
            });
        out.push(Target {
            name: format!(
                "node leading {} of {groups} groups, {}",
                top.groups_led, all.label
            ),
            target: "≤ 1.3 × the one-group leader and ≤ 1 % of a core".into(),
            measured: match vs {
                Some(x) => format!("{:.2} % = {x:.2} × the one-group leader", top.cpu_percent),
                None => format!("{:.2} %, no one-group leader measured", top.cpu_percent),
            },
            met: top.groups_led == groups && top.cpu_percent <= 1.0 && vs.is_some_and(|x| x <= 1.3),
            note: format!(
                "{}; {:.0} datagrams/s (one per peer per period: {:.0}){}",
                describe(top),
                top.datagrams_per_sec,
                (all.nodes.len() - 1) as f64 * 1000.0 / all.heartbeat_ms as f64,
                raft_alone
            ),
        });
    }
    out
}

/// Why the etcd section is empty when `--only` left it out (no target then).
pub const NOT_SELECTED: &str = "not selected (--only)";

/// Raft's failover with the one-value election timeout E, beside etcd (issue targets:
/// median ≤ 1.10 E, p90 ≤ 1.25 E, max ≤ 1.5 E).
fn etcd_targets(e: &crate::bench::versus_etcd::VersusEtcd) -> Vec<Target> {
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
    if r.n == 0 {
        return vec![Target {
            name: "raft failover ÷ E (poll driver, beside etcd)".into(),
            target: "median ≤ 1.10, p90 ≤ 1.25, max ≤ 1.50".into(),
            measured: format!(
                "not measured: {} timeouts, {} not run",
                run.timeouts, run.not_run
            ),
            met: false,
            note: run
                .flagged
                .first()
                .map(|f| f.cause.clone())
                .unwrap_or_default(),
        }];
    }
    let mut note = format!(
        "{} rounds, {} timeouts, {} split votes",
        r.n, run.timeouts, run.split_votes
    );
    if run.not_run > 0 {
        let _ = write!(note, ", {} not run (no stable leader to kill)", run.not_run);
    }
    if let Some(etcd) = e.run("etcd").filter(|etcd| etcd.ratio.n > 0) {
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
