//! The cold-start section of the report: its table, the flagged failovers and the
//! targets.

use super::*;

fn cell(p: &Phase) -> [String; 5] {
    [
        p.agreed_ms
            .map(|x| format!("{x:.0}"))
            .unwrap_or("**none**".into()),
        p.election_messages.to_string(),
        p.retransmissions.to_string(),
        if p.delivery_failures_to_lost == 0 {
            p.delivery_failures.to_string()
        } else {
            format!(
                "{} + {} lost",
                p.delivery_failures
                    .saturating_sub(p.delivery_failures_to_lost),
                p.delivery_failures_to_lost
            )
        },
        p.udp_rcvbuf_errors.to_string(),
    ]
}

/// The report's section (empty when the section did not run).
pub fn markdown(r: &ColdResults) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let Some(t) = &r.timing else {
        return s;
    };
    if r.rows.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\n## Cold start and failover at scale\n");
    let _ = writeln!(
        s,
        "N nodes of one algorithm started at once (heartbeat {} ms, failure_timeout {} ms, \
         answer_timeout {} ms, Raft election timeout {}..{} ms); `processes`: separate \
         `electd run` processes on 127.0.0.1, time from the last start; `one process`: N \
         runtimes with their own sockets in the bench process. Then the leader is SIGKILLed \
         (`processes`) or paused (`one process`), once the cold start's traffic has \
         stopped for a failure timeout; a `processes` failover lasts from the SIGKILL to \
         the last survivor's adoption of the new leader by its own stamp (`at_us` of its \
         `/watch` event; one machine, one clock), the arrival of the last event at the \
         bench's reader threads is in results.json (`arrived_ms`). Messages are election messages \
         (liveness excluded); `failures` are the reliable link's give-ups, `a + b lost` \
         when b of them went to a peer the sender's failure detector had declared lost \
         (the killed leader) and a to live peers; `rcvbuf` is the growth of the kernel's `Udp: RcvbufErrors` \
         (`/proc/net/snmp`, machine-wide) during the phase. A cold start's counts run until \
         its traffic stopped for a failure timeout; the table shows the last try's, \
         results.json every try's (`colds`, `failovers`), and the targets sum them. A row \
         that did not agree is a missed target, in bold, with what the nodes believed.\n",
        t.heartbeat_ms, t.failure_ms, t.answer_ms, t.election_min_ms, t.election_max_ms
    );
    // Rows run at a timing of their own (above 64 processes, `timing_for`) say which.
    let mut own: Vec<(usize, &ClusterTiming)> = r
        .rows
        .iter()
        .filter_map(|x| Some((x.nodes, x.timing.as_ref()?)))
        .collect();
    own.sort_by_key(|(n, _)| *n);
    own.dedup_by_key(|(n, _)| *n);
    for (n, o) in own {
        let _ = writeln!(
            s,
            "Rows of {n} nodes run every timing × {} (a ring lap, a fan-out and the leader's \
             heartbeats to every member all grow with N): heartbeat {} ms, failure_timeout {} \
             ms, answer_timeout {} ms, Raft election timeout {}..{} ms; their failovers are \
             judged against that failure timeout (Raft: its lower bound).\n",
            o.failure_ms / t.failure_ms.max(1),
            o.heartbeat_ms,
            o.failure_ms,
            o.answer_ms,
            o.election_min_ms,
            o.election_max_ms
        );
    }
    let _ = writeln!(
        s,
        "| algorithm | N | mode | cold ms | msgs | retx | failures | rcvbuf | failover ms | msgs | retx | failures | rcvbuf |"
    );
    let _ = writeln!(s, "|{}", "---|".repeat(13));
    for row in &r.rows {
        let cold = cell(&row.cold);
        let fail = row
            .failover
            .as_ref()
            .map(cell)
            .unwrap_or_else(|| std::array::from_fn(|_| "—".to_string()));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            row.algorithm,
            row.nodes,
            row.mode,
            cold.join(" | "),
            fail.join(" | ")
        );
    }
    let phases = phases_table(r, t);
    if !phases.is_empty() {
        let _ = writeln!(
            s,
            "\nWhere the failovers' time went (medians over each row's failovers, by the \
             survivors' own stamps): from the SIGKILL to the first survivor's adoption \
             (usually the new leader's own: detection and election), then to the last \
             one's (the announcement reaching every member: each adoption costs its member \
             CPU on the shared cores, and outside Raft a write of the state file before \
             it is reported); messages are the election messages of one failover.\n"
        );
        s.push_str(&phases);
    }
    let resources = resources_table(r);
    if !resources.is_empty() {
        let _ = writeln!(
            s,
            "\nWhat the cold starts and failovers waited for (medians over each row's tries \
             that agreed): a cold start's window runs from before the first spawn to the \
             agreement, a failover's from the earliest moment a detector could fire (the \
             failure timeout, Raft's E_min, less a heartbeat, after the SIGKILL) to the last \
             adoption. `cpu` and `io` are the share of that window \
             during which some runnable task waited for a core or some task waited for I/O, \
             from the kernel's pressure stall information (`/proc/pressure/*`, \
             machine-wide, read every millisecond); for failovers, the survivors' \
             state-file writes per failover and their mean duration (each ends with an \
             `fdatasync`), and how late their timers fired on average \
             (`electd_state_write_seconds`, `electd_timer_lateness_seconds`, from the SIGKILL \
             to a failure timeout after the agreement). `cores busy` is the share of the \
             cores' time they were not idle over the window (their idle residencies, \
             `cpuidle`, which counts an idle stretch when it ends, so a window that opens in a \
             long one reads low; else `/proc/stat`, whose 10 ms ticks give a figure only \
             over 0.5 s or more), `cores busy, election` the same from the first \
             survivor's event without a leader (its detection) to the last adoption. A \
             missed target of the cold starts' retransmissions or of the failovers names a \
             resource as short when cores were wanted for at least {:.0} % of the window or \
             busy {:.0} % of their time (in the election where it has a figure), I/O \
             for at least {:.0} % or a \
             state write took {:.0} ms on average (an idle disk's takes 0.2–0.5 ms: the \
             writes queued; the flush a writer waits for does not always show as I/O \
             pressure), or a receive buffer overflowed.\n",
            SHORT_CPU * 100.0,
            SHORT_BUSY * 100.0,
            SHORT_IO * 100.0,
            SHORT_WRITE_MS
        );
        s.push_str(&resources);
    }
    let flagged: Vec<String> = r.rows.iter().filter_map(|row| flag(row, t)).collect();
    if !flagged.is_empty() {
        let _ = writeln!(
            s,
            "\nFlagged failovers (not a failover time of the detector; each with its cause):\n"
        );
        for f in flagged {
            let _ = writeln!(s, "- {f}");
        }
    }
    let missed: Vec<&ColdRow> = r.rows.iter().filter(|r| r.missed.is_some()).collect();
    if !missed.is_empty() {
        let _ = writeln!(s, "\nMissed:\n");
        for row in missed {
            let _ = writeln!(
                s,
                "- **{} N={} ({})**: {}",
                row.algorithm,
                row.nodes,
                row.mode,
                row.missed.as_deref().unwrap_or_default()
            );
        }
    }
    s.push('\n');
    s
}

/// What a row's failover times are judged against (ms): its failure timeout, Raft's
/// election timeout's lower bound, from the row's own timing where it has one (the
/// bench scales it above 64 nodes) or else the section's `t`.
fn base_ms(x: &ColdRow, t: &ClusterTiming) -> f64 {
    super::base_ms(x.algorithm, x.timing.as_ref().unwrap_or(t))
}

/// The table of the process rows' failover phases (empty when no row has a failover
/// with both stamps): median time to the first adoption and from it to the last, each
/// also as a share of the row's base (F, Raft: E_min), and the mean election messages.
fn phases_table(r: &ColdResults, t: &ClusterTiming) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for row in &r.rows {
        let firsts: Vec<f64> = row
            .failovers
            .iter()
            .filter_map(|f| f.first_adopted_ms)
            .collect();
        let spreads: Vec<f64> = row
            .failovers
            .iter()
            .filter_map(|f| Some(f.agreed_ms? - f.first_adopted_ms?))
            .collect();
        if firsts.is_empty() || spreads.is_empty() {
            continue;
        }
        if s.is_empty() {
            let _ = writeln!(
                s,
                "| algorithm | N | failovers | to the first adoption, ms (× base) | first to last adoption, ms (× base) | messages per failover |"
            );
            let _ = writeln!(s, "|{}", "---|".repeat(6));
        }
        let base = base_ms(row, t);
        let first = crate::bench::Stats::of(&firsts).median;
        let spread = crate::bench::Stats::of(&spreads).median;
        let msgs = row
            .failovers
            .iter()
            .map(|f| f.election_messages)
            .sum::<u64>() as f64
            / row.failovers.len() as f64;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {first:.0} ({:.2}) | {spread:.1} ({:.2}) | {msgs:.0} |",
            row.algorithm,
            row.nodes,
            firsts.len(),
            first / base,
            spread / base
        );
    }
    s
}

/// Some runnable task waited for a core at least this share of a failover's window:
/// the cores were short.
pub const SHORT_CPU: f64 = 0.5;
/// The cores were busy at least this share of their time over the window: the cores
/// were short (a pipeline of wakeups, where PSI's share stays low; see
/// [`pressure`]'s module documentation).
pub const SHORT_BUSY: f64 = 0.8;
/// Some task waited for I/O at least this share of the window: the disk was short.
pub const SHORT_IO: f64 = 0.25;
/// A state write took this long on average (ms): ten idle writes' worth, the disk's
/// queue was long. (PSI's I/O share stayed under 10 % in a run whose writes took
/// 13 ms on average, docs/bench/ANALYSIS.md round 24.)
pub const SHORT_WRITE_MS: f64 = 5.0;

/// Medians over phases (a row's cold starts, or its failovers): how many have a
/// pressure figure, the window ms, the cpu and io shares, the state writes per phase
/// and their mean ms, the timers' mean lateness ms; and the receive-buffer overflows
/// summed.
struct Waited {
    n: usize,
    window_ms: f64,
    cpu: f64,
    io: f64,
    busy: Option<f64>,
    election_busy: Option<f64>,
    writes: Option<f64>,
    write_ms: Option<f64>,
    late_ms: Option<f64>,
    rcvbuf: u64,
}

fn waited(phases: &[Phase]) -> Option<Waited> {
    let ps: Vec<&pressure::Pressure> = phases.iter().filter_map(|f| f.pressure.as_ref()).collect();
    if ps.is_empty() {
        return None;
    }
    let med = |v: Vec<f64>| crate::bench::Stats::of(&v).median;
    let waits: Vec<pressure::Waits> = phases.iter().filter_map(|f| f.waits).collect();
    let writes: Vec<f64> = waits.iter().map(|w| w.state_writes as f64).collect();
    let write_ms: Vec<f64> = waits.iter().filter_map(|w| w.write_ms()).collect();
    let late_ms: Vec<f64> = waits.iter().filter_map(|w| w.late_ms()).collect();
    Some(Waited {
        n: ps.len(),
        window_ms: med(ps.iter().map(|p| p.window_ms).collect()),
        cpu: med(ps.iter().map(|p| p.cpu).collect()),
        io: med(ps.iter().map(|p| p.io).collect()),
        busy: {
            let b: Vec<f64> = ps.iter().filter_map(|p| p.busy).collect();
            (!b.is_empty()).then(|| med(b))
        },
        election_busy: {
            let b: Vec<f64> = phases.iter().filter_map(|p| p.election_busy).collect();
            (!b.is_empty()).then(|| med(b))
        },
        writes: (!writes.is_empty()).then(|| med(writes)),
        write_ms: (!write_ms.is_empty()).then(|| med(write_ms)),
        late_ms: (!late_ms.is_empty()).then(|| med(late_ms)),
        rcvbuf: phases.iter().map(|f| f.udp_rcvbuf_errors).sum(),
    })
}

/// A row's cold starts (every try; the last one alone in a report of an older run).
fn colds_of(row: &ColdRow) -> &[Phase] {
    if row.colds.is_empty() {
        std::slice::from_ref(&row.cold)
    } else {
        &row.colds
    }
}

/// The table of what each row's cold starts and failovers waited for (empty when no
/// phase has a pressure figure: no PSI in the kernel, or no stamps).
fn resources_table(r: &ColdResults) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let opt = |x: Option<f64>, digits: usize| x.map_or("—".into(), |v| format!("{v:.digits$}"));
    let pct = |x: Option<f64>| x.map_or("—".into(), |v| format!("{:.0} %", v * 100.0));
    for row in &r.rows {
        for (phase, w) in [
            ("cold start", waited(colds_of(row))),
            ("failover", waited(&row.failovers)),
        ] {
            let Some(w) = w else { continue };
            if s.is_empty() {
                let _ = writeln!(
                    s,
                    "| algorithm | N | phase | measured | window ms | cpu | cores busy | cores busy, election | io | state writes | write ms | timers late ms | rcvbuf |"
                );
                let _ = writeln!(s, "|{}", "---|".repeat(13));
            }
            let _ = writeln!(
                s,
                "| {} | {} | {phase} | {} | {:.0} | {:.0} % | {} | {} | {:.0} % | {} | {} | {} | {} |",
                row.algorithm,
                row.nodes,
                w.n,
                w.window_ms,
                w.cpu * 100.0,
                pct(w.busy),
                pct(w.election_busy),
                w.io * 100.0,
                opt(w.writes, 0),
                opt(w.write_ms, 2),
                opt(w.late_ms, 2),
                w.rcvbuf
            );
        }
    }
    s
}

/// What a row's failovers were short of, with the figures ("cores (some node waited
/// for one 93 % of the window)"), or why nothing is named.
pub fn short_of(row: &ColdRow) -> String {
    short_in(&row.failovers)
}

/// [`short_of`] over any phases (a row's cold starts).
fn short_in(phases: &[Phase]) -> String {
    let Some(w) = waited(phases) else {
        return "no pressure figures (the kernel has no /proc/pressure, or no phase had \
                stamps)"
            .into();
    };
    let mut short = Vec::new();
    // A failover's election alone where the survivors said when it began, else the
    // whole window.
    let (busy_share, over) = match w.election_busy {
        Some(b) => (Some(b), " from the first detection to the last adoption"),
        None => (w.busy, ""),
    };
    let busy = busy_share.map_or(String::new(), |b| {
        format!(", the cores busy {:.0} % of their time{over}", b * 100.0)
    });
    if w.cpu >= SHORT_CPU || busy_share.is_some_and(|b| b >= SHORT_BUSY) {
        short.push(format!(
            "cores (some node waited for one {:.0} % of the window{busy})",
            w.cpu * 100.0
        ));
    }
    if w.io >= SHORT_IO || w.write_ms.is_some_and(|m| m >= SHORT_WRITE_MS) {
        short.push(format!(
            "disk (some task waited for I/O {:.0} % of the window; state writes {} ms mean)",
            w.io * 100.0,
            w.write_ms.map_or("—".into(), |m| format!("{m:.2}"))
        ));
    }
    if w.rcvbuf > 0 {
        short.push(format!("socket buffers ({} receive overflows)", w.rcvbuf));
    }
    if short.is_empty() {
        format!(
            "no resource short by the rule above (cores wanted {:.0} %, I/O {:.0} % of the \
             window{busy}): the time went to the phase's sequential steps (hops one after \
             another, timeouts), not to waiting for a core or the disk",
            w.cpu * 100.0,
            w.io * 100.0
        )
    } else {
        short.join(", ")
    }
}

/// Why a row's failover time is not a failover of the detector, if it is not: the
/// take-down fell into an election under way, or it is below the detection limit.
pub fn flag(row: &ColdRow, t: &ClusterTiming) -> Option<String> {
    let all: Vec<String> = if row.failovers.is_empty() {
        row.failover
            .iter()
            .filter_map(|f| flag_one(row, f, t))
            .collect()
    } else {
        row.failovers
            .iter()
            .filter_map(|f| flag_one(row, f, t))
            .collect()
    };
    (!all.is_empty()).then(|| all.join("; "))
}

fn flag_one(row: &ColdRow, f: &Phase, t: &ClusterTiming) -> Option<String> {
    let took = f.agreed_ms?;
    let limit = crate::bench::detection_limit_ms(
        row.algorithm,
        t.failure_ms,
        t.election_min_ms,
        t.heartbeat_ms,
    );
    let what = format!(
        "{} N={} ({}) {took:.0} ms",
        row.algorithm, row.nodes, row.mode
    );
    match &f.under_way {
        Some(b) => Some(format!(
            "{what}: the leader was taken down during an election still under way ({b}){}",
            if took < limit {
                format!(", hence below the detection limit {limit:.0} ms")
            } else {
                String::new()
            }
        )),
        None if took < limit => Some(format!(
            "{what}: below the detection limit {limit:.0} ms with every node following the \
             leader just before: unexplained"
        )),
        None => None,
    }
}

/// The targets, for the rows that ran.
pub fn targets(r: &ColdResults) -> Vec<crate::bench::Target> {
    let mut out = Vec::new();
    let Some(t) = &r.timing else {
        return out;
    };
    let at = |n: usize, mode: &str| -> Vec<&ColdRow> {
        r.rows
            .iter()
            .filter(|x| x.nodes == n && x.mode == mode)
            .collect()
    };
    // Process clusters of 64 and 256 members (issue 31), each row judged with its own
    // timing (the bench scales it above 64, `timing_for`).
    for n in [64, 256] {
        let procs = at(n, "processes");
        if procs.is_empty() {
            continue;
        }
        // Every try counts: one over 2 s (or without agreement) misses the target.
        let in_time = |x: &ColdRow| {
            x.cold_tries
                .iter()
                .filter(|t| t.is_some_and(|m| m <= 2000.0))
                .count()
        };
        let slow: Vec<String> = procs
            .iter()
            .filter(|x| x.cold_tries.is_empty() || in_time(x) < x.cold_tries.len())
            .map(|x| {
                format!(
                    "{} ({} of {} tries within 2 s)",
                    x.algorithm,
                    in_time(x),
                    x.cold_tries.len()
                )
            })
            .collect();
        let tries = procs.iter().map(|x| x.cold_tries.len()).max().unwrap_or(0);
        out.push(crate::bench::Target {
            name: format!("cold start, {n} processes"),
            target: "every algorithm agrees within 2 s of the last start".into(),
            measured: procs
                .iter()
                .map(|x| {
                    if x.cold_tries.len() > 1 {
                        format!("{} {}", x.algorithm, tries_note(&x.cold_tries))
                    } else {
                        format!(
                            "{} {}",
                            x.algorithm,
                            x.cold
                                .agreed_ms
                                .map(|m| format!("{m:.0} ms"))
                                .unwrap_or("none".into())
                        )
                    }
                })
                .collect::<Vec<_>>()
                .join(", "),
            met: slow.is_empty(),
            note: if slow.is_empty() {
                format!("{tries} tries per algorithm in this run (`--tries`)")
            } else {
                format!("missed: {}", slow.join(", "))
            },
        });
        // Every cold start's retransmissions and give-ups (issue 31: ≤ 10 % and none to
        // a live peer, in cold starts as well as failovers), summed over the tries; a
        // try that retransmitted more than 10 % is named even when the sum is within.
        {
            let mut bad = Vec::new();
            let mut measured = Vec::new();
            let mut worst = Vec::new();
            for x in &procs {
                let colds = colds_of(x);
                let msgs: u64 = colds.iter().map(|p| p.election_messages).sum();
                let retx: u64 = colds.iter().map(|p| p.retransmissions).sum();
                let fail: u64 = colds.iter().map(|p| p.delivery_failures).sum();
                let over: Vec<String> = colds
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.retransmissions * 10 > p.election_messages)
                    .map(|(i, p)| {
                        format!(
                            "try {} {}/{}{}",
                            i + 1,
                            p.retransmissions,
                            p.election_messages,
                            senders(&p.top_retransmitters)
                        )
                    })
                    .collect();
                if retx * 10 > msgs || fail > 0 || msgs == 0 {
                    bad.push(x.algorithm.to_string());
                }
                if !over.is_empty() {
                    worst.push(format!("{} {}", x.algorithm, over.join(", ")));
                }
                measured.push(format!(
                    "{} {retx}/{msgs} retx ({:.1} %), {fail} give-ups over {} cold starts",
                    x.algorithm,
                    100.0 * retx as f64 / msgs.max(1) as f64,
                    colds.len()
                ));
            }
            let mut note = Vec::new();
            if !bad.is_empty() {
                note.push(format!("missed: {}", bad.join(", ")));
                let short: Vec<String> = procs
                    .iter()
                    .filter(|x| bad.contains(&x.algorithm.to_string()))
                    .map(|x| format!("{}: {}", x.algorithm, short_in(colds_of(x))))
                    .collect();
                note.push(format!(
                    "short of, over the missed rows' cold starts: {}",
                    short.join("; ")
                ));
            }
            if !worst.is_empty() {
                note.push(format!("tries over 10 %: {}", worst.join("; ")));
            }
            out.push(crate::bench::Target {
                name: format!("cold-start retransmissions, {n} processes"),
                target: "retransmissions ≤ 10 % of the election messages, summed over every \
                         try; no delivery failure (every member is live)"
                    .into(),
                measured: measured.join("; "),
                met: bad.is_empty(),
                note: note.join("; "),
            });
        }
        // The failure timeout of a Bully or ring row, the election timeout's lower
        // bound of a Raft row.
        let base = |x: &ColdRow| base_ms(x, t);
        let rows: Vec<&&ColdRow> = procs.iter().collect();
        {
            // Judged over every failover of the row (one per cold start that agreed):
            // the median time within the bound, and retransmissions and failures to
            // live peers summed over them; failovers over the bound are named.
            struct Runs {
                median: f64,
                max: f64,
                n: usize,
                unagreed: usize,
                over: usize,
                retx: u64,
                msgs: u64,
                live: u64,
                lost: u64,
            }
            let runs = |x: &ColdRow| -> Option<Runs> {
                if x.failovers.is_empty() {
                    return None;
                }
                let bound = 1.3 * base(x);
                let times: Vec<f64> = x.failovers.iter().filter_map(|f| f.agreed_ms).collect();
                let st = crate::bench::Stats::of(&times);
                Some(Runs {
                    median: st.median,
                    max: st.max,
                    n: x.failovers.len(),
                    unagreed: x.failovers.len() - times.len(),
                    over: times.iter().filter(|&&m| m > bound).count(),
                    retx: x.failovers.iter().map(|f| f.retransmissions).sum(),
                    msgs: x.failovers.iter().map(|f| f.election_messages).sum(),
                    live: x
                        .failovers
                        .iter()
                        .map(|f| {
                            f.delivery_failures
                                .saturating_sub(f.delivery_failures_to_lost)
                        })
                        .sum(),
                    lost: x
                        .failovers
                        .iter()
                        .map(|f| f.delivery_failures_to_lost)
                        .sum(),
                })
            };
            let mut bad = Vec::new();
            let mut over = Vec::new();
            let mut measured = Vec::new();
            for x in &rows {
                let Some(r) = runs(x) else {
                    bad.push(format!("{} (no failover)", x.algorithm));
                    continue;
                };
                let bound = 1.3 * base(x);
                let ok = r.unagreed == 0
                    && r.n > r.unagreed
                    && r.median <= bound
                    && r.retx * 10 <= r.msgs
                    && r.live == 0;
                if !ok {
                    bad.push(x.algorithm.to_string());
                }
                if r.over > 0 {
                    over.push(format!(
                        "{} {} of {} over {bound:.0} ms (max {:.0} ms)",
                        x.algorithm, r.over, r.n, r.max
                    ));
                }
                measured.push(format!(
                    "{} median {:.0} ms = {:.2} ×, max {:.0} ms ({} failovers{}), {}/{} retx, {} \
                     fail to live peers ({} to the killed leader)",
                    x.algorithm,
                    r.median,
                    r.median / base(x),
                    r.max,
                    r.n,
                    if r.unagreed > 0 {
                        format!(", **{} without agreement**", r.unagreed)
                    } else {
                        String::new()
                    },
                    r.retx,
                    r.msgs,
                    r.live,
                    r.lost
                ));
            }
            let mut note = Vec::new();
            if !bad.is_empty() {
                note.push(format!("missed: {}", bad.join(", ")));
                // Which resource the missed rows ran out of (issue 31: the report says
                // so, with the figures).
                let short: Vec<String> = rows
                    .iter()
                    .filter(|x| {
                        let a = x.algorithm.as_str();
                        bad.iter()
                            .any(|b| b == a || b.starts_with(&format!("{a} ")))
                    })
                    .map(|x| format!("{}: {}", x.algorithm, short_of(x)))
                    .collect();
                note.push(format!(
                    "short of, over the missed rows' failovers: {}",
                    short.join("; ")
                ));
            }
            if !over.is_empty() {
                note.push(format!("**failovers over 1.3 ×**: {}", over.join(", ")));
            }
            out.push(crate::bench::Target {
                name: format!("failover after SIGKILL, {n} processes"),
                target: "median ≤ 1.3 × failure_timeout (Raft: × the election timeout's lower \
                         bound); retransmissions ≤ 10 % of the election messages; no delivery \
                         failure to a live peer"
                    .into(),
                measured: measured.join("; "),
                met: bad.is_empty(),
                note: note.join("; "),
            });
        }
        // Memory: at most 20 MiB resident per process (the largest node of each row).
        let rss: Vec<(String, f64)> = procs
            .iter()
            .filter_map(|x| Some((x.algorithm.to_string(), x.resident_mib?.1)))
            .collect();
        if !rss.is_empty() {
            let over: Vec<String> = rss
                .iter()
                .filter(|(_, m)| *m > 20.0)
                .map(|(a, m)| format!("{a} {m:.1} MiB"))
                .collect();
            let top = rss.iter().map(|(_, m)| *m).fold(0.0, f64::max);
            out.push(crate::bench::Target {
                name: format!("resident memory, {n} processes"),
                target: "≤ 20 MiB each".into(),
                measured: format!("largest node {top:.1} MiB"),
                met: over.is_empty(),
                note: if over.is_empty() {
                    String::new()
                } else {
                    format!("missed: {}", over.join(", "))
                },
            });
        }
    }

    let one256 = at(256, "one process");
    if !one256.is_empty() {
        let missed: Vec<String> = one256
            .iter()
            .filter(|x| x.cold.agreed_ms.is_none())
            .map(|x| x.algorithm.to_string())
            .collect();
        out.push(crate::bench::Target {
            name: "cold start, 256 in one process".into(),
            target: "every algorithm agrees".into(),
            measured: format!("{} of {} agreed", one256.len() - missed.len(), one256.len()),
            met: missed.is_empty(),
            note: if missed.is_empty() {
                String::new()
            } else {
                format!("missed: {}", missed.join(", "))
            },
        });
    }
    out
}

/// " (most by node 253: 58 retransmitted of 258 sent, 2 given up; …)": who
/// retransmitted, so that a storm reads as one sender's fan-out or many answers.
fn senders(top: &[NodeRetx]) -> String {
    if top.is_empty() {
        return String::new();
    }
    let each: Vec<String> = top
        .iter()
        .map(|r| {
            format!(
                "node {}: {} retransmitted of {} sent, {} given up",
                r.node, r.retransmissions, r.election_messages, r.delivery_failures
            )
        })
        .collect();
    format!(" (most by {})", each.join("; "))
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    fn row(kind: AlgorithmKind, took: f64, under_way: Option<&str>) -> ColdRow {
        ColdRow {
            algorithm: kind,
            nodes: 16,
            mode: "processes",
            cold: Phase::default(),
            failover: Some(Phase {
                agreed_ms: Some(took),
                under_way: under_way.map(str::to_string),
                ..Phase::default()
            }),
            missed: None,
            cold_tries: Vec::new(),
            colds: Vec::new(),
            failovers: Vec::new(),
            start_spread_ms: None,
            boot_spread_ms: None,
            sim: None,
            timing: None,
            resident_mib: None,
        }
    }

    #[test]
    fn failovers_below_the_limit_or_into_an_election_are_flagged() {
        let t = ClusterTiming::failover();
        let limit = (t.failure_ms - t.heartbeat_ms) as f64;
        // The committed report's improved-bully 32 ms at N=16: below the limit.
        let f = flag(&row(AlgorithmKind::ImprovedBully, 32.0, None), &t).unwrap();
        assert!(f.contains("below the detection limit") && f.contains("unexplained"));
        let f = flag(
            &row(AlgorithmKind::ImprovedBully, 32.0, Some("node 3 electing")),
            &t,
        )
        .unwrap();
        assert!(f.contains("node 3 electing") && f.contains("below the detection limit"));
        // Into an election under way, though slower than the limit: still flagged.
        assert!(flag(&row(AlgorithmKind::Bully, limit + 30.0, Some("x")), &t).is_some());
        // An ordinary failover is not.
        assert_eq!(
            flag(&row(AlgorithmKind::Bully, limit + 30.0, None), &t),
            None
        );
    }
}

#[cfg(test)]
mod target_tests {
    use super::*;

    /// A clean cold start: agreed in 300 ms, 100 election messages, 2 retransmitted.
    fn cold() -> Phase {
        Phase {
            agreed_ms: Some(300.0),
            election_messages: 100,
            retransmissions: 2,
            ..Phase::default()
        }
    }

    /// A process row of `n` members: ten clean cold starts ([`cold`]), and one failover
    /// per time in `failovers`, each of 100 messages with `retx` retransmitted.
    fn row(kind: AlgorithmKind, n: usize, failovers: &[f64], retx: u64) -> ColdRow {
        let fo = |ms: f64| Phase {
            agreed_ms: Some(ms),
            election_messages: 100,
            retransmissions: retx,
            ..Phase::default()
        };
        ColdRow {
            algorithm: kind,
            nodes: n,
            mode: "processes",
            cold: cold(),
            failover: failovers.last().map(|&m| fo(m)),
            missed: None,
            cold_tries: vec![Some(300.0); 10],
            colds: vec![cold(); 10],
            failovers: failovers.iter().map(|&m| fo(m)).collect(),
            start_spread_ms: None,
            boot_spread_ms: None,
            sim: None,
            timing: (n > 64).then(|| timing_for(n)),
            resident_mib: Some((11.0, if n > 64 { 21.0 } else { 12.0 })),
        }
    }

    fn find<'a>(t: &'a [crate::bench::Target], name: &str) -> &'a crate::bench::Target {
        t.iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no target {name}: {t:?}"))
    }

    /// Each size is judged with its rows' own timing: at 64 members F = 100 ms and
    /// Raft's E_min = 100 ms, at 256 both four times that; Raft is judged against its
    /// election timeout's lower bound, the others against F; retransmissions over 10 %
    /// and a node over 20 MiB miss.
    #[test]
    fn process_targets_are_judged_per_size_with_each_rows_timing() {
        let base = ClusterTiming::failover();
        let big = timing_for(256);
        let (f64_, f256) = (base.failure_ms as f64, big.failure_ms as f64);
        let e256 = big.election_min_ms as f64;
        let r = ColdResults {
            timing: Some(base.clone()),
            rows: vec![
                row(AlgorithmKind::Bully, 64, &[1.2 * f64_; 3], 5),
                row(
                    AlgorithmKind::Raft,
                    64,
                    &[1.25 * base.election_min_ms as f64; 3],
                    5,
                ),
                row(AlgorithmKind::Bully, 256, &[1.25 * f256; 3], 5),
                row(AlgorithmKind::Raft, 256, &[1.35 * e256; 3], 5),
            ],
        };
        let t = targets(&r);
        assert!(find(&t, "cold start, 64 processes").met);
        assert!(find(&t, "cold start, 256 processes").met);
        let fo64 = find(&t, "failover after SIGKILL, 64 processes");
        assert!(fo64.met, "{fo64:?}");
        assert!(
            fo64.measured.contains("raft median 125 ms = 1.25 ×"),
            "{fo64:?}"
        );
        let fo256 = find(&t, "failover after SIGKILL, 256 processes");
        assert!(!fo256.met, "Raft at 1.35 × E_min misses: {fo256:?}");
        assert!(fo256.note.contains("missed: raft"), "{fo256:?}");
        assert!(!fo256.note.contains("bully"), "{fo256:?}");
        assert!(find(&t, "resident memory, 64 processes").met);
        assert!(!find(&t, "resident memory, 256 processes").met);
        // Retransmissions over a tenth of the messages miss.
        let r = ColdResults {
            timing: Some(base.clone()),
            rows: vec![row(AlgorithmKind::Lcr, 64, &[1.1 * f64_; 3], 11)],
        };
        assert!(!find(&targets(&r), "failover after SIGKILL, 64 processes").met);
    }

    /// Every try's cold start counts, not only the last one's: one try that
    /// retransmitted most of its messages misses the target though the last was clean,
    /// a try over 10 % is named even when the sum is within, and one give-up misses.
    #[test]
    fn cold_start_retransmissions_are_judged_over_every_try() {
        let base = ClusterTiming::failover();
        let f = base.failure_ms as f64;
        let name = "cold-start retransmissions, 64 processes";
        let judge = |x: ColdRow| {
            let r = ColdResults {
                timing: Some(base.clone()),
                rows: vec![x],
            };
            find(&targets(&r), name).clone()
        };
        let clean = judge(row(AlgorithmKind::Bully, 64, &[1.2 * f; 3], 5));
        assert!(clean.met, "{clean:?}");
        assert!(
            clean
                .measured
                .contains("bully 20/1000 retx (2.0 %), 0 give-ups over 10 cold starts"),
            "{clean:?}"
        );

        let mut x = row(AlgorithmKind::Bully, 64, &[1.2 * f; 3], 5);
        x.colds[3].retransmissions = 300;
        x.colds[3].top_retransmitters = vec![
            NodeRetx {
                node: 64,
                election_messages: 63,
                retransmissions: 280,
                delivery_failures: 9,
            },
            NodeRetx {
                node: 2,
                election_messages: 1,
                retransmissions: 20,
                delivery_failures: 0,
            },
        ];
        let t = judge(x);
        assert!(!t.met, "318 of 1,000 retransmitted: {t:?}");
        assert!(
            t.note.contains(
                "try 4 300/100 (most by node 64: 280 retransmitted of 63 sent, 9 given up; \
                 node 2: 20 retransmitted of 1 sent, 0 given up)"
            ),
            "who retransmitted is named: {t:?}"
        );

        let mut x = row(AlgorithmKind::Bully, 64, &[1.2 * f; 3], 5);
        x.colds[0].retransmissions = 15;
        let t = judge(x);
        assert!(t.met, "33 of 1,000 in all: {t:?}");
        assert!(
            t.note.contains("tries over 10 %: bully try 1 15/100"),
            "{t:?}"
        );

        let mut x = row(AlgorithmKind::Bully, 64, &[1.2 * f; 3], 5);
        x.colds[7].delivery_failures = 1;
        assert!(!judge(x).met, "a give-up to a live member misses");
    }

    /// The phases table: each row's median time to the first adoption and from it to
    /// the last, as a share of that row's own base (F at 64, Raft's E_min ×4 at 256);
    /// a row whose failovers carry no first stamp is left out.
    #[test]
    fn the_phases_table_splits_each_failover_at_the_first_adoption() {
        let base = ClusterTiming::failover();
        let mut bully = row(AlgorithmKind::Bully, 64, &[120.0, 130.0, 125.0], 5);
        for (f, first) in bully.failovers.iter_mut().zip([108.0, 110.0, 112.0]) {
            f.first_adopted_ms = Some(first);
        }
        let e256 = timing_for(256).election_min_ms as f64;
        let mut raft = row(AlgorithmKind::Raft, 256, &[500.0, 540.0, 520.0], 5);
        for (f, first) in raft.failovers.iter_mut().zip([470.0, 510.0, 490.0]) {
            f.first_adopted_ms = Some(first);
        }
        let unstamped = row(AlgorithmKind::Lcr, 64, &[120.0], 5);
        let r = ColdResults {
            timing: Some(base.clone()),
            rows: vec![bully, raft, unstamped],
        };
        let t = phases_table(&r, &base);
        let f = base.failure_ms as f64;
        assert!(
            t.contains(&format!(
                "| bully | 64 | 3 | 110 ({:.2}) | 13.0 ({:.2}) | 100 |",
                110.0 / f,
                13.0 / f
            )),
            "{t}"
        );
        assert!(
            t.contains(&format!(
                "| raft | 256 | 3 | 490 ({:.2}) | 30.0 ({:.2}) | 100 |",
                490.0 / e256,
                30.0 / e256
            )),
            "{t}"
        );
        assert!(!t.contains("| lcr |"), "{t}");
        let none = ColdResults {
            timing: Some(base.clone()),
            rows: vec![row(AlgorithmKind::Lcr, 64, &[120.0], 5)],
        };
        assert!(phases_table(&none, &base).is_empty());
    }

    /// A missed failover row names what its failovers were short of, from the medians
    /// of their pressure figures, by the rule the report states; a met row is not
    /// examined, and the table shows every row that has figures.
    #[test]
    fn a_missed_failover_names_the_resource_it_was_short_of() {
        let base = ClusterTiming::failover();
        let f = base.failure_ms as f64;
        let press = |cpu: f64, io: f64| pressure::Pressure {
            window_ms: 40.0,
            cpu,
            io,
            busy: None,
        };
        let waits = pressure::Waits {
            state_writes: 63,
            state_write_s: 0.126,
            timers: 200,
            timer_late_s: 0.1,
        };
        // HS over the bound, its cores wanted 60–80 % of the window (median 70 %) and
        // its I/O 10 %: short of cores, not of disk.
        let mut hs = row(AlgorithmKind::Hs, 64, &[1.4 * f; 3], 5);
        for (x, cpu) in hs.failovers.iter_mut().zip([0.6, 0.8, 0.7]) {
            x.pressure = Some(press(cpu, 0.1));
            x.waits = Some(waits);
        }
        // Raft over its bound, with I/O wanted 30 % and cores 20 %: short of disk.
        let e = base.election_min_ms as f64;
        let mut raft = row(AlgorithmKind::Raft, 64, &[1.4 * e; 3], 5);
        for x in raft.failovers.iter_mut() {
            x.pressure = Some(press(0.2, 0.3));
            x.waits = Some(waits);
        }
        // LCR over its bound, little I/O pressure but writes of 6 ms on average: short
        // of disk all the same.
        let mut lcr = row(AlgorithmKind::Lcr, 64, &[1.4 * f; 3], 5);
        for x in lcr.failovers.iter_mut() {
            x.pressure = Some(press(0.1, 0.05));
            x.waits = Some(pressure::Waits {
                state_writes: 10,
                state_write_s: 0.06,
                ..waits
            });
        }
        assert!(
            short_of(&lcr).starts_with(
                "disk (some task waited for I/O 5 % of the window; state writes 6.00 ms mean)"
            ),
            "{}",
            short_of(&lcr)
        );
        // Improved Bully over its bound with nothing short; ring within it.
        let mut ib = row(AlgorithmKind::ImprovedBully, 64, &[1.4 * f; 3], 5);
        for x in ib.failovers.iter_mut() {
            x.pressure = Some(press(0.1, 0.0));
        }
        let mut ring = row(AlgorithmKind::Ring, 64, &[1.1 * f; 3], 5);
        for x in ring.failovers.iter_mut() {
            x.pressure = Some(press(0.9, 0.0));
        }
        assert!(
            short_of(&hs).starts_with("cores (some node waited for one 70 %"),
            "{}",
            short_of(&hs)
        );
        assert!(!short_of(&hs).contains("disk"));
        assert!(
            short_of(&raft).starts_with("disk (some task waited for I/O 30 %"),
            "{}",
            short_of(&raft)
        );
        assert!(
            short_of(&raft).contains("state writes 2.00 ms mean"),
            "{}",
            short_of(&raft)
        );
        assert!(
            short_of(&ib).starts_with("no resource short"),
            "{}",
            short_of(&ib)
        );
        // The same row, its cores busy 85–95 % of their time though some node waited
        // for one only 10 %: a pipeline of wakeups that ran out of cores.
        let mut piped = ib.clone();
        for (x, b) in piped.failovers.iter_mut().zip([0.85, 0.9, 0.95]) {
            x.pressure = Some(pressure::Pressure {
                busy: Some(b),
                ..press(0.1, 0.0)
            });
        }
        assert_eq!(
            short_of(&piped),
            "cores (some node waited for one 10 % of the window, the cores busy 90 % of \
             their time)"
        );
        // The election alone, where it has a figure, decides: busy 70 % over the
        // window with its wait for the detectors, 88 % from the first detection on.
        let mut split = ib.clone();
        for x in split.failovers.iter_mut() {
            x.pressure = Some(pressure::Pressure {
                busy: Some(0.7),
                ..press(0.1, 0.0)
            });
            x.election_busy = Some(0.88);
        }
        assert_eq!(
            short_of(&split),
            "cores (some node waited for one 10 % of the window, the cores busy 88 % of \
             their time from the first detection to the last adoption)"
        );
        let table = resources_table(&ColdResults {
            timing: Some(base.clone()),
            rows: vec![split],
        });
        assert!(
            table
                .contains("| improved-bully | 64 | failover | 3 | 40 | 10 % | 70 % | 88 % | 0 % |"),
            "{table}"
        );
        // Busy under the bound: named with its figure, not as short.
        for x in piped.failovers.iter_mut() {
            x.pressure = Some(pressure::Pressure {
                busy: Some(0.7),
                ..press(0.1, 0.0)
            });
        }
        assert!(
            short_of(&piped).starts_with(
                "no resource short by the rule above (cores wanted 10 %, I/O 0 % of the \
                 window, the cores busy 70 % of their time)"
            ),
            "{}",
            short_of(&piped)
        );
        let r = ColdResults {
            timing: Some(base.clone()),
            rows: vec![hs, raft, ib, ring],
        };
        let all = targets(&r);
        let fo = find(&all, "failover after SIGKILL, 64 processes");
        assert!(!fo.met);
        assert!(fo.note.contains("hs: cores"), "{}", fo.note);
        assert!(fo.note.contains("raft: disk"), "{}", fo.note);
        assert!(
            fo.note.contains("improved-bully: no resource short"),
            "{}",
            fo.note
        );
        // The ring row met its target: its shortage is in the table, not in the note.
        assert!(!fo.note.contains("ring:"), "{}", fo.note);
        let table = resources_table(&r);
        assert!(
            table.contains(
                "| hs | 64 | failover | 3 | 40 | 70 % | — | — | 10 % | 63 | 2.00 | 0.50 | 0 |"
            ),
            "{table}"
        );
        assert!(
            table
                .contains("| ring | 64 | failover | 3 | 40 | 90 % | — | — | 0 % | — | — | — | 0 |"),
            "{table}"
        );
        // No cold start had figures: no cold-start line.
        assert!(!table.contains("cold start"), "{table}");
        let md = markdown(&r);
        assert!(
            md.contains("What the cold starts and failovers waited for"),
            "{md}"
        );
        // A row whose cold starts retransmitted over 10 % names what they were short
        // of (every try's figures), and the table has its cold-start line.
        let mut lcr = row(AlgorithmKind::Lcr, 64, &[1.1 * f; 3], 5);
        for (c, cpu) in lcr.colds.iter_mut().zip([0.9, 0.95, 0.8, 0.85]) {
            c.retransmissions = 30;
            c.pressure = Some(press(cpu, 0.0));
        }
        let r = ColdResults {
            timing: Some(base.clone()),
            rows: vec![lcr],
        };
        let all = targets(&r);
        let retx = find(&all, "cold-start retransmissions, 64 processes");
        assert!(!retx.met);
        assert!(
            retx.note
                .contains("short of, over the missed rows' cold starts: lcr: cores (some node waited for one 90 %"),
            "{}",
            retx.note
        );
        let table = resources_table(&r);
        assert!(
            table.contains(
                "| lcr | 64 | cold start | 4 | 40 | 90 % | — | — | 0 % | — | — | — | 0 |"
            ),
            "{table}"
        );
        // Without figures (no PSI) there is no table, and a missed row says why.
        let bare = row(AlgorithmKind::Hs, 64, &[1.4 * f; 3], 5);
        assert!(short_of(&bare).starts_with("no pressure figures"));
        let r = ColdResults {
            timing: Some(base.clone()),
            rows: vec![bare],
        };
        assert!(resources_table(&r).is_empty());
        assert!(!markdown(&r).contains("waited for (medians"));
    }

    /// The section's sentence gives the section's timing, and rows run at their own
    /// (above 64 nodes) are named with theirs.
    #[test]
    fn rows_at_their_own_timing_say_which() {
        let base = ClusterTiming::failover();
        let big = timing_for(256);
        let r = ColdResults {
            timing: Some(base.clone()),
            rows: vec![
                row(AlgorithmKind::Bully, 64, &[120.0], 5),
                row(AlgorithmKind::Bully, 256, &[480.0], 5),
                row(AlgorithmKind::Raft, 256, &[480.0], 5),
            ],
        };
        let md = markdown(&r);
        let want = format!(
            "Rows of 256 nodes run every timing × 4 (a ring lap, a fan-out and the leader's \
             heartbeats to every member all grow with N): heartbeat {} ms, failure_timeout {} \
             ms, answer_timeout {} ms, Raft election timeout {}..{} ms",
            big.heartbeat_ms,
            big.failure_ms,
            big.answer_ms,
            big.election_min_ms,
            big.election_max_ms
        );
        assert!(md.contains(&want), "{md}");
        assert_eq!(md.matches("Rows of ").count(), 1, "{md}");
        let only64 = ColdResults {
            timing: Some(base),
            rows: vec![row(AlgorithmKind::Bully, 64, &[120.0], 5)],
        };
        assert!(!markdown(&only64).contains("Rows of "));
    }
}
