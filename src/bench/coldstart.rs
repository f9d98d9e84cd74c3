//! Cold start and failover at scale (`electd bench --only scale-cold`): N nodes of one
//! algorithm all started at once, at the README's timing (heartbeat 10 ms,
//! failure_timeout 100 ms, answer 10 ms); then SIGKILL of the leader.
//!
//! - N = 8, 16, 32, 64: separate `electd run` processes on 127.0.0.1
//!   (`electd::testkit::procs`); time from the last process started to every node naming the
//!   same leader (seen on the nodes' `/watch` streams), then from SIGKILL of that
//!   leader to the survivors' agreement.
//! - N = 128, 256: runtimes in this process ([`super::inproc`]), each with its own
//!   socket; the leader is stopped with `Control::Pause` (its process cannot be killed
//!   alone: it is this one), which silences it as a crash does.
//!
//! For both phases: election messages (the literature's count, liveness excluded),
//! retransmissions and delivery failures summed over the nodes (the killed leader's
//! counters excluded from the failover phase), and the kernel's UDP receive errors
//! (`Udp: RcvbufErrors` of `/proc/net/snmp`, machine-wide). A row that does not agree
//! carries the reason (`missed`), which the report prints in bold.

use super::inproc::InProc;
use super::sse::Watchers;
use super::{ms, BenchOptions};
use electd::contract::algorithm::AlgorithmKind;
use electd::contract::message::MessageType;
use electd::daemon::runtime::Start;
use electd::daemon::shared::Control;
use electd::http::client::{http_request, metric_sum};
use electd::node::link::LinkConfig;
use electd::testkit::procs::{ClusterTiming, ProcCluster};
use electd::NodeId;
use serde::Serialize;
use std::time::{Duration, Instant};

pub mod pressure;
mod report;

pub use report::{markdown, targets};

/// How long a cold start may take before the row is a miss.
const AGREE_WITHIN: Duration = Duration::from_secs(30);

/// How long a cold start's pressure counters are read at most: the spawns, then
/// [`AGREE_WITHIN`].
const PSI_BOUND: Duration = Duration::from_secs(90);

/// How long a failover may take before the row is a miss.
const FAILOVER_WITHIN: Duration = Duration::from_secs(10);

/// One phase (cold start or failover) of one row.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Phase {
    /// Time to agreement; `None`: no agreement within the limit. Failover: by the
    /// survivors' own adoption stamps where they gave them (see `arrived_ms`).
    pub agreed_ms: Option<f64>,
    /// Failover: when the last survivor's event reached the bench (its reader thread
    /// scheduled on the same loaded cores): `agreed_ms` plus that delay.
    pub arrived_ms: Option<f64>,
    /// Failover: when the first survivor named the new leader (usually the new leader
    /// itself): the rest of `agreed_ms` is the announcement reaching everyone.
    pub first_adopted_ms: Option<f64>,
    pub leader: Option<NodeId>,
    pub election_messages: u64,
    pub retransmissions: u64,
    pub delivery_failures: u64,
    /// The part of `delivery_failures` addressed to a peer the sender's failure
    /// detector had declared lost (the killed leader); the rest went to live peers.
    pub delivery_failures_to_lost: u64,
    /// Growth of the kernel's `Udp: RcvbufErrors` during the phase (machine-wide).
    pub udp_rcvbuf_errors: u64,
    /// Failover: what was still under way when the leader was taken down (nodes
    /// electing or following another leader); the time then measures that election.
    pub under_way: Option<String>,
    /// The machine's shortage of cores and of I/O ([`pressure`]): in a failover from
    /// the earliest moment a detector could fire (F − heartbeat after the SIGKILL;
    /// Raft: E_min − heartbeat) to the last adoption, in a cold start from before the
    /// first spawn to the agreement; `None` without PSI, stamps or agreement.
    pub pressure: Option<pressure::Pressure>,
    /// Failover: the share of the cores' time they were busy from the first survivor's
    /// loss of the leader (its `/watch` stamp: the first detection) to the last
    /// adoption, the election itself without the wait for the detectors.
    pub election_busy: Option<f64>,
    /// Failover: the survivors' state writes and timer lateness over the phase.
    pub waits: Option<pressure::Waits>,
    /// The nodes that retransmitted most in the phase (at most [`TOP_SENDERS`], most
    /// first, none that retransmitted nothing): whether a storm is one sender's
    /// fan-out or many senders' answers.
    pub top_retransmitters: Vec<NodeRetx>,
}

/// One node's part of a phase's retransmissions ([`Phase::top_retransmitters`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NodeRetx {
    pub node: NodeId,
    pub election_messages: u64,
    pub retransmissions: u64,
    pub delivery_failures: u64,
}

/// How many of a phase's retransmitting nodes it names.
pub const TOP_SENDERS: usize = 3;

#[derive(Clone, Debug, Serialize)]
pub struct ColdRow {
    pub algorithm: AlgorithmKind,
    pub nodes: usize,
    /// `processes` or `one process`.
    pub mode: &'static str,
    pub cold: Phase,
    /// Time to agreement of every cold start tried (`--tries`; `None`: no agreement
    /// in time), `cold` being the last one.
    pub cold_tries: Vec<Option<f64>>,
    /// Every cold start tried, with its messages, retransmissions and give-ups (read
    /// once its traffic stopped), `cold` being the last one.
    pub colds: Vec<Phase>,
    pub failover: Option<Phase>,
    /// Every failover measured (`processes`: one after each cold start that agreed),
    /// `failover` being the last one.
    pub failovers: Vec<Phase>,
    /// Why a phase missed (no agreement), for the report; `None` when both agreed.
    pub missed: Option<String>,
    /// `processes`: time from before the first spawn to after the last of the
    /// measured cold start (the processes boot in id order).
    pub start_spread_ms: Option<f64>,
    /// `processes`: time from the first node's boot to the last one's, by their
    /// incarnations (`/status`): the spawns' spread plus each process's own start-up.
    pub boot_spread_ms: Option<f64>,
    /// `processes`: the simulator's busy start with the nodes' measured boot times
    /// (else an even spread of the spawns) and their timing ([`electd::sim::crowd`]),
    /// to compare with `cold`.
    pub sim: Option<electd::sim::crowd::BusyCost>,
    /// The timing of this row's nodes, where it is not the section's (`--processes`
    /// above 64 nodes: [`timing_for`]).
    pub timing: Option<ClusterTiming>,
    /// `processes`: resident set of the nodes after the measured cold start agreed,
    /// MiB (median, max).
    pub resident_mib: Option<(f64, f64)>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ColdResults {
    pub timing: Option<ClusterTiming>,
    pub rows: Vec<ColdRow>,
}

/// (N as processes, N in one process, algorithms) for this run; `nodes` and
/// `algorithms` (from the command line) narrow it.
pub fn plan(
    quick: bool,
    nodes: &[usize],
    algorithms: &[AlgorithmKind],
    all_processes: bool,
) -> (Vec<usize>, Vec<usize>, Vec<AlgorithmKind>) {
    let (mut procs, mut inproc) = if quick {
        (vec![8], vec![32])
    } else {
        (vec![8, 16, 32, 64], vec![128, 256])
    };
    if !nodes.is_empty() {
        procs = nodes.iter().copied().filter(|&n| n <= 64).collect();
        inproc = nodes.iter().copied().filter(|&n| n > 64).collect();
    }
    if all_processes {
        procs.append(&mut inproc);
    }
    let algos = if algorithms.is_empty() {
        AlgorithmKind::available()
    } else {
        algorithms.to_vec()
    };
    (procs, inproc, algos)
}

/// The timing of a cluster of `n` nodes as deploy/README.md recommends ("Timing per
/// cluster size"): the README's (heartbeat 10 ms, failure_timeout 100 ms, answer
/// 10 ms, coordinator 50 ms, Raft 100..200 ms) up to 64 nodes; above, every period
/// times N/64 (256 nodes: heartbeat 40 ms, failure_timeout 400 ms, answer 40 ms,
/// coordinator 200 ms, Raft 400..800 ms). The leader's heartbeat fan-out (N − 1
/// datagrams a period), a ring lap (N hops) and a Bully fan-out all grow with N; scaled
/// so, the datagrams per second of a leader stay those of 64 nodes at 10 ms.
pub fn timing_for(n: usize) -> ClusterTiming {
    let base = ClusterTiming::failover();
    let k = (n as u64).div_ceil(64).max(1);
    ClusterTiming {
        heartbeat_ms: base.heartbeat_ms * k,
        failure_ms: base.failure_ms * k,
        answer_ms: base.answer_ms * k,
        coordinator_ms: base.coordinator_ms * k,
        election_min_ms: base.election_min_ms * k,
        election_max_ms: base.election_max_ms * k,
        ..base
    }
}

/// Resident set sizes of the running processes of `c`, MiB: (median, max).
fn resident_mib(c: &ProcCluster, ids: &[NodeId]) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = ids
        .iter()
        .filter_map(|&id| {
            let pid = c.pid(id)?;
            let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
            let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib / 1024.0)
        })
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some((v[v.len() / 2], v[v.len() - 1]))
}

/// `Udp: RcvbufErrors` of `/proc/net/snmp` (0 where it cannot be read).
pub fn udp_rcvbuf_errors() -> u64 {
    let text = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    snmp_field(&text, "Udp:", "RcvbufErrors").unwrap_or(0)
}

/// A field of `/proc/net/snmp`: a header line and a value line share a prefix.
fn snmp_field(text: &str, prefix: &str, field: &str) -> Option<u64> {
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    let names = lines.next()?;
    let values = lines.next()?;
    let i = names.split_whitespace().position(|n| n == field)?;
    values.split_whitespace().nth(i)?.parse().ok()
}

/// (election messages, retransmissions, delivery failures, of them to lost peers).
type Counts = (u64, u64, u64, u64);

/// The [`TOP_SENDERS`] nodes that retransmitted most between two reads of each node's
/// counts (`before` empty: since its start).
fn top_retransmitters(before: &[(NodeId, Counts)], after: &[(NodeId, Counts)]) -> Vec<NodeRetx> {
    let mut v: Vec<NodeRetx> = after
        .iter()
        .map(|&(node, a)| {
            let b = before
                .iter()
                .find(|x| x.0 == node)
                .map_or((0, 0, 0, 0), |x| x.1);
            NodeRetx {
                node,
                election_messages: a.0.saturating_sub(b.0),
                retransmissions: a.1.saturating_sub(b.1),
                delivery_failures: a.2.saturating_sub(b.2),
            }
        })
        .filter(|r| r.retransmissions > 0)
        .collect();
    v.sort_by(|x, y| {
        y.retransmissions
            .cmp(&x.retransmissions)
            .then(x.node.cmp(&y.node))
    });
    v.truncate(TOP_SENDERS);
    v
}

/// [`Counts`] of `kind` over `ids`, the nodes' waits ([`pressure::Waits`]) from the
/// same reads, and each node's own counts.
fn proc_scrape(
    c: &ProcCluster,
    ids: &[NodeId],
    kind: AlgorithmKind,
) -> (Counts, pressure::Waits, Vec<(NodeId, Counts)>) {
    let mut t = (0, 0, 0, 0);
    let mut nodes = Vec::new();
    let mut waits = pressure::Waits::default();
    for &id in ids {
        let Some(addr) = c.http(id) else { continue };
        // A node that does not answer drops out of this sum but not of the other one
        // of the phase (on 256 busy processes one answered the read before a failover
        // and not the one after, and the phase showed more failures to the killed
        // leader than failures): asked up to three times.
        let Some(text) = (0..3).find_map(|_| match http_request(addr, "GET", "/metrics", None) {
            Some((200, text)) => Some(text),
            _ => None,
        }) else {
            continue;
        };
        let mut n = (0, 0, 0, 0);
        for ty in MessageType::ALL.iter().filter(|t| !t.is_liveness()) {
            let l = [("algorithm", kind.as_str()), ("type", ty.as_str())];
            n.0 += metric_sum(&text, "electd_messages_sent_total", &l) as u64;
        }
        n.1 = metric_sum(&text, "electd_retransmissions_total", &[]) as u64;
        n.2 = metric_sum(&text, "electd_delivery_failures_total", &[]) as u64;
        n.3 = metric_sum(&text, "electd_delivery_failures_to_lost_total", &[]) as u64;
        t = (t.0 + n.0, t.1 + n.1, t.2 + n.2, t.3 + n.3);
        nodes.push((id, n));
        waits.add(pressure::Waits::of_metrics(&text));
    }
    (t, waits, nodes)
}

/// The cluster's counts once its election messages, retransmissions and give-ups have
/// not moved for a failure timeout (sampled every failure timeout, for at most
/// [`AGREE_WITHIN`]).
fn quiet_counts(
    c: &ProcCluster,
    all: &[NodeId],
    kind: AlgorithmKind,
    timing: &ClusterTiming,
) -> (Counts, Vec<(NodeId, Counts)>) {
    let quiet = Duration::from_millis(timing.failure_ms);
    let read = || {
        let (t, _, nodes) = proc_scrape(c, all, kind);
        (t, nodes)
    };
    let mut last = read();
    let settle_by = Instant::now() + AGREE_WITHIN;
    while Instant::now() < settle_by {
        std::thread::sleep(quiet); // a sampling period, not a synchronisation
        let now = read();
        if now.0 == last.0 {
            break;
        }
        last = now;
    }
    last
}

/// One cold start's phase: its time to agreement (`agreed`, after `last_start`) and,
/// when it agreed, everything it sent until its traffic stopped ([`quiet_counts`]:
/// the retransmissions and give-ups after the agreement belong to it too); without
/// agreement, the counts at the deadline.
fn cold_phase(
    c: &ProcCluster,
    all: &[NodeId],
    kind: AlgorithmKind,
    timing: &ClusterTiming,
    agreed: Option<(NodeId, Instant)>,
    last_start: Instant,
    rcv0: u64,
) -> Phase {
    let mut p = Phase::default();
    let (counts, nodes) = match agreed {
        Some(_) => quiet_counts(c, all, kind, timing),
        None => {
            let (t, _, nodes) = proc_scrape(c, all, kind);
            (t, nodes)
        }
    };
    fill(&mut p, (0, 0, 0, 0), counts, rcv0);
    p.top_retransmitters = top_retransmitters(&[], &nodes);
    if let Some((leader, at)) = agreed {
        p.agreed_ms = Some(ms(at.saturating_duration_since(last_start)));
        p.leader = Some(leader);
    }
    p
}

fn fill(p: &mut Phase, before: Counts, after: Counts, rcv0: u64) {
    p.election_messages = after.0.saturating_sub(before.0);
    p.retransmissions = after.1.saturating_sub(before.1);
    p.delivery_failures = after.2.saturating_sub(before.2);
    p.delivery_failures_to_lost = after.3.saturating_sub(before.3);
    p.udp_rcvbuf_errors = udp_rcvbuf_errors().saturating_sub(rcv0);
}

pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> anyhow::Result<ColdResults> {
    let timing = ClusterTiming::failover();
    let (procs, inproc, algorithms) = plan(
        opts.quick,
        &opts.nodes,
        &opts.algorithms,
        opts.all_processes,
    );
    let mut rows = Vec::new();
    for &n in &procs {
        let t = timing_for(n);
        for &kind in &algorithms {
            let mut r = processes(opts, kind, n, &t)?;
            if t.heartbeat_ms != timing.heartbeat_ms {
                r.timing = Some(t.clone());
            }
            log(&line(&r));
            rows.push(r);
        }
    }
    if !inproc.is_empty() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        for &n in &inproc {
            for &kind in &algorithms {
                let r = rt.block_on(one_process(kind, n, &timing))?;
                log(&line(&r));
                rows.push(r);
            }
        }
    }
    Ok(ColdResults {
        timing: Some(timing),
        rows,
    })
}

fn line(r: &ColdRow) -> String {
    let f = |p: &Phase| {
        format!(
            "{}{} ({} msgs, {} retx, {} fail of which {} to the lost leader, {} rcvbuf)",
            p.agreed_ms
                .map(|x| format!("{x:.0} ms"))
                .unwrap_or("NO AGREEMENT".into()),
            p.first_adopted_ms
                .map(|x| format!(", first named at {x:.0} ms"))
                .unwrap_or_default()
                + &p.arrived_ms
                    .filter(|_| p.first_adopted_ms.is_some())
                    .map(|x| format!(", last event here at {x:.0} ms"))
                    .unwrap_or_default(),
            p.election_messages,
            p.retransmissions,
            p.delivery_failures,
            p.delivery_failures_to_lost,
            p.udp_rcvbuf_errors
        )
    };
    format!(
        "  scale-cold {:<15} N={:<4} {:<11} cold {}{} · failover {}{}{}",
        r.algorithm,
        r.nodes,
        r.mode,
        f(&r.cold),
        if r.cold_tries.len() > 1 {
            format!(
                " ({}; all {}: {} msgs, {} retx, {} fail)",
                tries_note(&r.cold_tries),
                r.colds.len(),
                r.colds.iter().map(|p| p.election_messages).sum::<u64>(),
                r.colds.iter().map(|p| p.retransmissions).sum::<u64>(),
                r.colds.iter().map(|p| p.delivery_failures).sum::<u64>()
            )
        } else {
            String::new()
        },
        r.failover.as_ref().map(f).unwrap_or("-".into()),
        r.sim
            .as_ref()
            .map(|s| format!(
                " · simulator, {}: {} msgs, {} retx, {} fail",
                match r.boot_spread_ms {
                    Some(b) => format!("same boot times (over {b:.0} ms)"),
                    None => format!(
                        "same start spread ({:.0} ms)",
                        r.start_spread_ms.unwrap_or(0.0)
                    ),
                },
                s.election_messages,
                s.retransmissions,
                s.delivery_failures
            ))
            .unwrap_or_default(),
        r.resident_mib
            .map(|(med, max)| format!(" · resident {med:.1} MiB median, {max:.1} MiB max"))
            .unwrap_or_default()
            + &r.missed
                .as_ref()
                .map(|m| format!(" · MISSED: {m}"))
                .unwrap_or_default()
    )
}

fn processes(
    opts: &BenchOptions,
    kind: AlgorithmKind,
    n: usize,
    timing: &ClusterTiming,
) -> anyhow::Result<ColdRow> {
    // Every try but the last: a cold start, then (if it agreed) a failover.
    let mut tries = Vec::new();
    let mut colds = Vec::new();
    let mut earlier = Vec::new();
    for _ in 1..opts.cold_tries.max(1) {
        let rcv = udp_rcvbuf_errors();
        let psi = pressure::Watch::start(PSI_BOUND);
        let (mut c, w, all, last_start) = start_processes(opts, kind, n, timing)?;
        let agreed = w.wait_agreement(&all, last_start + AGREE_WITHIN);
        let pressure = psi.until(agreed.map(|a| a.1));
        tries.push(agreed.map(|(_, at)| ms(at.saturating_duration_since(last_start))));
        colds.push(Phase {
            pressure,
            ..cold_phase(&c, &all, kind, timing, agreed, last_start, rcv)
        });
        if let Some((leader, _)) = agreed {
            if let (Some(p), _) = failover_processes(&mut c, &w, &all, leader, timing, kind) {
                earlier.push(p);
            }
        }
        drop((w, c));
    }
    let rcv0 = udp_rcvbuf_errors();
    let before = Instant::now();
    let psi = pressure::Watch::start(PSI_BOUND);
    let (mut c, w, all, last_start) = start_processes(opts, kind, n, timing)?;
    let spread = last_start.saturating_duration_since(before);
    let mut row = ColdRow {
        algorithm: kind,
        nodes: n,
        mode: "processes",
        cold: Phase::default(),
        cold_tries: tries,
        colds,
        failover: None,
        failovers: earlier,
        missed: None,
        start_spread_ms: Some(ms(spread)),
        boot_spread_ms: None,
        sim: None,
        timing: None,
        resident_mib: None,
    };
    let agreed = w.wait_agreement(&all, last_start + AGREE_WITHIN);
    let pressure = psi.until(agreed.map(|a| a.1));
    row.cold_tries
        .push(agreed.map(|(_, at)| ms(at.saturating_duration_since(last_start))));
    row.cold = Phase {
        pressure,
        ..cold_phase(&c, &all, kind, timing, agreed, last_start, rcv0)
    };
    row.colds.push(row.cold.clone());
    let Some((leader, _)) = agreed else {
        let log = all
            .iter()
            .find_map(|&id| {
                c.last_log_line(id)
                    .map(|l| format!("; node {id} logged: {l}"))
            })
            .unwrap_or_default();
        row.missed = Some(format!(
            "no agreement within {} s of the last start: {}{log}",
            AGREE_WITHIN.as_secs(),
            beliefs(&w, &all)
        ));
        return Ok(row);
    };
    // Each node's boot (its incarnation), read before the failover's kill: the
    // simulator is run with these rather than an even spread of the spawns.
    let boots = boot_offsets(&c, &all);
    row.boot_spread_ms = boots.as_ref().and_then(|b| b.iter().max()).map(|&d| ms(d));
    row.resident_mib = resident_mib(&c, &all);
    if let Some(k) = row.cold_tries.iter().position(Option::is_none) {
        row.missed = Some(format!(
            "cold start {} of {}: no agreement within {} s of the last start",
            k + 1,
            row.cold_tries.len(),
            AGREE_WITHIN.as_secs()
        ));
    }
    let (p, missed) = failover_processes(&mut c, &w, &all, leader, timing, kind);
    if let Some(p) = p {
        row.failovers.push(p.clone());
        row.failover = Some(p);
    }
    row.missed = row.missed.take().or(missed);
    row.sim = super::scale::sim_busy_start(kind, n, spread, boots, timing);
    Ok(row)
}

/// Each node's boot after the first one's, by id (`ids` are 1..=N in order), from the
/// incarnations in their `/status`; `None` if a node did not answer with one.
fn boot_offsets(c: &ProcCluster, ids: &[NodeId]) -> Option<Vec<Duration>> {
    let us: Vec<u64> = ids
        .iter()
        .map(|&id| c.status(id)?["incarnation"].as_u64().filter(|&u| u > 0))
        .collect::<Option<_>>()?;
    let first = *us.iter().min()?;
    Some(
        us.iter()
            .map(|&u| Duration::from_micros(u - first))
            .collect(),
    )
}

/// A fresh cluster of `n` processes started at once, watched: (cluster, watchers,
/// ids, when the last one started).
fn start_processes(
    opts: &BenchOptions,
    kind: AlgorithmKind,
    n: usize,
    timing: &ClusterTiming,
) -> anyhow::Result<(ProcCluster, Watchers, Vec<NodeId>, Instant)> {
    let mut c = ProcCluster::new(
        &opts.exe,
        &std::env::temp_dir(),
        &format!("cold-{kind}-{n}"),
        n as NodeId,
        &[kind],
        timing,
    )?;
    let all = c.ids();
    c.start_all()?;
    let last_start = Instant::now();
    let w = Watchers::new(kind);
    for &id in &all {
        w.connect(id, c.http(id).expect("roster node"), AGREE_WITHIN);
    }
    Ok((c, w, all, last_start))
}

/// SIGKILL of the agreed `leader` once the cold start's traffic is over, then the
/// survivors' agreement: the phase, and why it missed if it did.
fn failover_processes(
    c: &mut ProcCluster,
    w: &Watchers,
    all: &[NodeId],
    leader: NodeId,
    timing: &ClusterTiming,
    kind: AlgorithmKind,
) -> (Option<Phase>, Option<String>) {
    let survivors: Vec<NodeId> = all.iter().copied().filter(|&i| i != leader).collect();
    // A failover happens in a cluster at rest: wait until the cold start's election
    // messages, retransmissions and give-ups stopped for a failure timeout (bounded),
    // so the heartbeats armed every failure detector and no straggler of the start
    // competes for the cores.
    let _ = quiet_counts(c, all, kind, timing);
    let (before, waits0, before_nodes) = proc_scrape(c, &survivors, kind);
    let rcv1 = udp_rcvbuf_errors();
    let under_way = super::failover::election_under_way(c, &survivors, leader);
    // The earliest a detector can fire: its timeout after the last heartbeat, which
    // left at most a heartbeat before the kill.
    let detect_us = (base_ms(kind, timing) - timing.heartbeat_ms as f64).max(0.0) as u64 * 1000;
    let kill_us = super::unix_us();
    // The pressure counters, read every millisecond from shortly before that moment.
    let psi = pressure::Sampler::start(
        kill_us + detect_us.saturating_sub(2000),
        Duration::from_millis(1),
        FAILOVER_WITHIN,
    );
    let t0 = Instant::now();
    c.kill(leader);
    let mut p = Phase {
        under_way,
        ..Phase::default()
    };
    let agreed = w.wait_agreement(&survivors, t0 + FAILOVER_WITHIN);
    let samples = psi.finish();
    // Counters once the election traffic is over (acks, late retransmissions).
    std::thread::sleep(Duration::from_millis(timing.failure_ms));
    let (after, waits1, after_nodes) = proc_scrape(c, &survivors, kind);
    fill(&mut p, before, after, rcv1);
    p.top_retransmitters = top_retransmitters(&before_nodes, &after_nodes);
    p.waits = Some(waits1.since(waits0));
    match agreed {
        Some((l, at)) => {
            p.arrived_ms = Some(ms(at.saturating_duration_since(t0)));
            let span = w.adopted_span_us(&survivors, l);
            let since_kill = |us: u64| us.saturating_sub(kill_us) as f64 / 1e3;
            p.agreed_ms = span.map(|(_, last)| since_kill(last)).or(p.arrived_ms);
            p.first_adopted_ms = span.map(|(first, _)| since_kill(first));
            p.leader = Some(l);
            if let Some((_, last)) = span {
                p.pressure = pressure::over(&samples, kill_us + detect_us, last);
                p.election_busy = w
                    .first_lost_us(&survivors, kill_us)
                    .and_then(|from| pressure::over(&samples, from, last)?.busy);
            }
            (Some(p), None)
        }
        None => {
            let why = format!(
                "no agreement within {} s of SIGKILL of leader {leader}: {}",
                FAILOVER_WITHIN.as_secs(),
                beliefs(w, &survivors)
            );
            (Some(p), Some(why))
        }
    }
}

/// What a failover of `kind` is judged against (ms): the failure timeout, Raft's
/// election timeout's lower bound.
pub(crate) fn base_ms(kind: AlgorithmKind, t: &ClusterTiming) -> f64 {
    if kind.info().uses_failure_detector() {
        t.failure_ms as f64
    } else {
        t.election_min_ms as f64
    }
}

/// "k of T agreed, median m ms, max x ms" over the cold starts tried.
fn tries_note(tries: &[Option<f64>]) -> String {
    let ok: Vec<f64> = tries.iter().flatten().copied().collect();
    let st = super::Stats::of(&ok);
    if ok.is_empty() {
        return format!("0 of {} agreed", tries.len());
    }
    format!(
        "{} of {} agreed, median {:.0} ms, max {:.0} ms",
        ok.len(),
        tries.len(),
        st.median,
        st.max
    )
}

/// What the nodes believe, summarized (leader → how many nodes).
fn beliefs(w: &Watchers, ids: &[NodeId]) -> String {
    let mut by: std::collections::BTreeMap<String, usize> = Default::default();
    for &id in ids {
        let b = match w.leader_of(id) {
            Some(Some(l)) => format!("leader {l}"),
            Some(None) => "no leader".into(),
            None => "not connected".into(),
        };
        *by.entry(b).or_default() += 1;
    }
    by.iter()
        .map(|(b, n)| format!("{n} × {b}"))
        .collect::<Vec<_>>()
        .join(", ")
}

async fn one_process(kind: AlgorithmKind, n: usize, t: &ClusterTiming) -> anyhow::Result<ColdRow> {
    let timing = t.timing();
    let rcv0 = udp_rcvbuf_errors();
    let ids: Vec<NodeId> = (1..=n as NodeId).collect();
    let link = LinkConfig::for_failure_timeout(timing.failure_timeout);
    timing
        .validate(link.retransmit, link.give_up)
        .map_err(|e| anyhow::anyhow!("cold-start timing: {e}"))?;
    let mut c = InProc::start(&ids, kind, &timing, &link, Start::Electing).await?;
    let started = Instant::now();
    let mut row = ColdRow {
        algorithm: kind,
        nodes: n,
        mode: "one process",
        cold: Phase::default(),
        cold_tries: Vec::new(),
        colds: Vec::new(),
        failover: None,
        failovers: Vec::new(),
        missed: None,
        start_spread_ms: None,
        boot_spread_ms: None,
        sim: None,
        timing: None,
        resident_mib: None,
    };
    let agreed = c.wait_agreement(&ids, started + AGREE_WITHIN).await;
    let counts = |c: &InProc| {
        let k = c.counters();
        (
            k.messages,
            k.retransmissions,
            k.delivery_failures,
            k.delivery_failures_to_lost,
        )
    };
    fill(&mut row.cold, (0, 0, 0, 0), counts(&c), rcv0);
    row.cold_tries.push(
        agreed
            .as_ref()
            .map(|(_, at)| ms(at.saturating_duration_since(started))),
    );
    let Some((leader, at)) = agreed else {
        row.colds.push(row.cold.clone());
        row.missed = Some(format!(
            "no agreement within {} s of the start",
            AGREE_WITHIN.as_secs()
        ));
        c.shutdown().await;
        return Ok(row);
    };
    row.cold.agreed_ms = Some(ms(at.saturating_duration_since(started)));
    row.cold.leader = Some(leader);
    row.colds.push(row.cold.clone());
    tokio::time::sleep(timing.heartbeat * 3).await;
    let survivors: Vec<NodeId> = ids.iter().copied().filter(|&i| i != leader).collect();
    // The paused leader's counters stay frozen: the delta is the survivors'.
    let before = counts(&c);
    let rcv1 = udp_rcvbuf_errors();
    let quiet = c.settled_on(leader);
    let t0 = Instant::now();
    c.command(leader, Control::Pause).await;
    let agreed = c.wait_agreement(&survivors, t0 + FAILOVER_WITHIN).await;
    tokio::time::sleep(timing.failure_timeout).await;
    let mut p = Phase {
        under_way: (!quiet).then(|| "not every node followed the leader quietly".to_string()),
        ..Phase::default()
    };
    fill(&mut p, before, counts(&c), rcv1);
    match agreed {
        Some((l, at)) => {
            p.agreed_ms = Some(ms(at.saturating_duration_since(t0)));
            p.leader = Some(l);
        }
        None => {
            row.missed = Some(format!(
                "no agreement within {} s of pausing leader {leader}",
                FAILOVER_WITHIN.as_secs()
            ))
        }
    }
    row.failovers.push(p.clone());
    row.failover = Some(p);
    c.shutdown().await;
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A phase names the nodes that retransmitted most over it, from each node's two
    /// reads (a node read only after counts from zero), most first, ties by id, at most
    /// three, none that retransmitted nothing.
    #[test]
    fn a_phase_names_its_top_retransmitters_from_each_nodes_reads() {
        let before = [(1, (10, 5, 0, 0)), (2, (10, 0, 0, 0)), (3, (4, 4, 1, 0))];
        let after = [
            (1, (12, 6, 0, 0)),
            (2, (300, 250, 40, 2)),
            (3, (4, 4, 1, 0)),
            (4, (9, 7, 1, 0)),
            (5, (9, 1, 0, 0)),
            (6, (9, 1, 0, 0)),
        ];
        let top = top_retransmitters(&before, &after);
        let got: Vec<(NodeId, u64, u64, u64)> = top
            .iter()
            .map(|r| {
                (
                    r.node,
                    r.election_messages,
                    r.retransmissions,
                    r.delivery_failures,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![(2, 290, 250, 40), (4, 9, 7, 1), (1, 2, 1, 0)],
            "{top:?}"
        );
        assert!(
            top_retransmitters(&after, &after).is_empty(),
            "no change, none"
        );
    }

    #[test]
    fn reads_udp_receive_buffer_errors_from_snmp() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
                    Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n\
                    Udp: 10 2 7 12 5 0\nUdpLite: InDatagrams\nUdpLite: 0\n";
        assert_eq!(snmp_field(text, "Udp:", "RcvbufErrors"), Some(5));
        assert_eq!(snmp_field(text, "Udp:", "InErrors"), Some(7));
        assert_eq!(snmp_field(text, "Udp:", "Nope"), None);
        assert_eq!(snmp_field("", "Udp:", "RcvbufErrors"), None);
    }

    #[test]
    fn the_plan_splits_processes_from_one_process() {
        let (p, i, a) = plan(false, &[], &[], false);
        assert_eq!((p, i), (vec![8, 16, 32, 64], vec![128, 256]));
        assert_eq!(a, AlgorithmKind::available());
        let (p, i, a) = plan(false, &[64, 256], &[AlgorithmKind::Bully], false);
        assert_eq!((p, i, a), (vec![64], vec![256], vec![AlgorithmKind::Bully]));
        let (p, i, _) = plan(false, &[64, 256], &[], true);
        assert_eq!((p, i), (vec![64, 256], vec![]), "--processes");
    }

    #[test]
    fn timing_scales_with_n_over_64() {
        let base = ClusterTiming::failover();
        for n in [5, 16, 64] {
            assert_eq!(timing_for(n).timing(), base.timing(), "N={n}");
        }
        let t = timing_for(256);
        assert_eq!(t.heartbeat_ms, base.heartbeat_ms * 4);
        assert_eq!(t.failure_ms, base.failure_ms * 4);
        assert_eq!(t.election_min_ms, base.election_min_ms * 4);
        assert_eq!(t.retransmit_ms, base.retransmit_ms, "the link's own floor");
    }
}
