//! The failover sections of `report.md`: real processes per mode, Raft beside etcd,
//! the virtual IP beside keepalived.

use super::model::model_median;
use super::targets::NOT_SELECTED;
use super::{fmt2, header, row};
use crate::bench::Results;
use std::fmt::Write as _;

/// Failover of real processes: one table per mode, the flagged samples, the timing model.
pub(super) fn failover(s: &mut String, r: &Results) {
    let f = &r.failover;
    let t = &f.timing;
    let _ = writeln!(s, "\n## Failover\n");
    let _ = writeln!(
        s,
        "{} real `electd run` processes on 127.0.0.1, one cluster per algorithm; heartbeat {} ms, \
         failure_timeout {} ms, answer_timeout {} ms, coordinator_timeout {} ms, Raft election \
         timeout {}..{} ms, first retransmission after {} ms, then adaptive (docs/architecture.md, \"The link's retransmission timeout\"){}; {} actions per algorithm and mode. \
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
    for mode in crate::bench::failover::MODES {
        let _ = writeln!(s, "### {mode}\n");
        header(
            s,
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
                s,
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
        phases(s, f, mode);
        // The plot is written only when the mode has runs (`plot::failover`).
        if f.runs.iter().any(|x| x.mode == mode) {
            let _ = writeln!(s, "\n![failover {mode}](failover-{mode}.svg)\n");
        }
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
}

/// A mode's samples taken apart by the survivors' own stamps: how long the nodes took
/// against how long the bench took to read it, and where the time of every sample over
/// 1.3 × failure_timeout (the p99 target of the Bully and ring families) went.
fn phases(s: &mut String, f: &crate::bench::failover::FailoverResults, mode: &str) {
    use crate::bench::Stats;
    let runs: Vec<_> = f
        .runs
        .iter()
        .filter(|x| x.mode == mode && !x.phases.is_empty())
        .collect();
    if runs.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nThe same samples by the survivors' own stamps (`at_us` of their `/watch` events, \
         one machine and one clock): `stamped` runs from the action to the last adoption as \
         the nodes stamped it, `delivery` from that stamp to the event's arrival at the \
         bench, whose reader threads wait for a core like the nodes.\n"
    );
    header(
        s,
        &[
            "algorithm",
            "stamped median ms",
            "stamped max ms",
            "delivery median ms",
            "delivery max ms",
            "detection median ms",
            "election median ms",
        ],
    );
    let of = |v: Vec<f64>| (!v.is_empty()).then(|| Stats::of(&v));
    let cell = |st: &Option<Stats>, pick: fn(&Stats) -> f64| {
        st.as_ref()
            .map_or("-".to_string(), |x| format!("{:.1}", pick(x)))
    };
    let mut slow = Vec::new();
    let bound = 1.3 * f.timing.failure_ms as f64;
    for run in &runs {
        let stamped = of(run.phases.iter().filter_map(|p| p.stamped_ms).collect());
        let deliver = of(run.phases.iter().filter_map(|p| p.deliver_ms).collect());
        let detect = of(run.phases.iter().filter_map(|p| p.detect_ms).collect());
        let elect = of(run.phases.iter().filter_map(|p| p.elect_ms).collect());
        row(
            s,
            &[
                run.algorithm.to_string(),
                cell(&stamped, |x| x.median),
                cell(&stamped, |x| x.max),
                cell(&deliver, |x| x.median),
                cell(&deliver, |x| x.max),
                cell(&detect, |x| x.median),
                cell(&elect, |x| x.median),
            ],
        );
        for (ms, p) in run.samples_ms.iter().zip(&run.phases) {
            if *ms > bound {
                slow.push(format!(
                    "- {}: {ms:.1} ms = {}",
                    run.algorithm,
                    p.describe()
                ));
            }
        }
    }
    if !slow.is_empty() {
        let _ = writeln!(
            s,
            "\nSamples over 1.3 × failure_timeout ({bound:.0} ms), taken apart:\n\n{}",
            slow.join("\n")
        );
    }
}

/// Raft beside etcd under one poll-based driver; left out of the report when `--only`
/// did not name it (another reason for not measuring, such as no `etcd` binary, is
/// said under its heading).
pub(super) fn etcd_section(s: &mut String, e: &crate::bench::versus_etcd::VersusEtcd) {
    use crate::bench::versus_etcd::{ELECTION_MS, HEARTBEAT_MS, MEMBERS};
    if e.skipped.as_deref() == Some(NOT_SELECTED) {
        return;
    }
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
         the members logged about their election clocks around the kill (etcd). A cluster \
         that has not held one leader for 3 heartbeats before a round in three times as many tries \
         as rounds ends its run: the rounds left are flagged as not run, and a system with no \
         round measured shows dashes.\n",
        e.etcd_version, e.rounds
    );
    if let Some(etcd) = e.run("etcd") {
        let within = crate::bench::versus_etcd::SETTLE_WITHIN.as_secs();
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
                    .map(crate::bench::Flagged::describe)
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
                measured(run, format!("{:.1}", run.stats.median)),
                measured(run, fmt2(run.ratio.median)),
                measured(run, fmt2(run.ratio.p90)),
                measured(run, fmt2(run.ratio.max)),
                format!("{:.0}", run.split_votes_per_1000),
                flagged,
            ],
        );
    }
    if let Some(etcd) = e.run("etcd") {
        let _ = writeln!(s, "\nelectd ÷ etcd, per percentile:\n");
        header(s, &["electd", "median", "p90", "max"]);
        for run in e.runs.iter().filter(|r| r.system != "etcd") {
            let q = |a: f64, b: f64| {
                if run.ratio.n > 0 && etcd.ratio.n > 0 && b > 0.0 {
                    fmt2(a / b)
                } else {
                    "n/a".into()
                }
            };
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
pub(super) fn keepalived_section(s: &mut String, r: &Results) {
    if r.keepalived.skipped.as_deref() != Some(NOT_SELECTED) {
        crate::bench::keepalived::markdown(s, &r.keepalived);
    }
}

/// A statistic of `run`, or "—" when no round of it was measured (every round timed out
/// or was not run: the flagged column says why), not a zero that reads as a time.
fn measured(run: &crate::bench::versus_etcd::PollRun, v: String) -> String {
    if run.ratio.n > 0 {
        v
    } else {
        "—".into()
    }
}
