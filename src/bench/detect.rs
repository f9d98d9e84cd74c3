//! `electd bench --only detect`: the smallest failure timeout at which each algorithm
//! keeps its leader on a busy machine, beside the smallest election timeout at which
//! etcd keeps its own, and the failover time at that value (issue 30, section 3).
//!
//! # Method
//! - **The busy machine** is made by the bench, as the issue measured by hand: three
//!   CPU hogs (`sh -c 'while :; do :; done'`) and a writer that forces its data to disk
//!   over and over (`dd bs=1M count=64 conv=fsync`, one after the other, on the disk
//!   of /var/tmp), children of the bench that die with it and are stopped by their PID
//!   at the end.
//! - **The search** tries the candidate timeouts F from the largest down. At each, one
//!   five-node electd cluster per algorithm still searching (or, with
//!   `--detect-one-cluster`, one cluster running them all as groups of its own, so a
//!   stalled process stalls every group), with heartbeat F / 5 and the other timeouts
//!   derived from F by [`timing_for`]; beside them in the same window a five-member
//!   etcd cluster with E = F and heartbeat E / 5. A system whose search has ended
//!   runs on beside them at every later candidate as load only, neither polled nor
//!   counted ([`Layout`]): every window has the same processes on the machine, so a
//!   system that passes more candidates does not meet a quieter machine at the
//!   smaller ones (before, at 10 ms a lone cluster ran beside the hogs at a load of
//!   5, where six clusters and etcd had made it 19–25 at 15 ms).
//!   Each system must agree on a leader, unchanged for [`SETTLED_FOR`], within
//!   [`AGREE_WITHIN`]; then it is watched for
//!   the window (10 minutes unless `--detect-window` says otherwise). Nobody is killed,
//!   so every election in the window is spurious: a rise of a group's term (electd: the
//!   fencing token's term, raised by every election) or of etcd's raft term (etcd 3.4
//!   runs without pre-vote, so every campaign raises it). A system with no election
//!   passes the value and goes on to the next smaller one; the first value it fails
//!   ends its search, and its smallest safe timeout is the last value it passed.
//! - **Failover at that value**: each system with a safe value then runs alone at it
//!   (five members, one algorithm), and its leader is SIGKILLed
//!   [`versus_etcd::rounds`] times, the machine still busy. A failover ends at the last
//!   survivor's own stamp of its adoption of the new leader (electd: `at_us` of its
//!   `/watch` event; etcd: its raft log line), not when the busy bench got to read it.
//!
//! Never part of the default run (it takes about ten minutes per candidate): only
//! `--only detect` runs it.

use super::sse::Watchers;
use super::versus_etcd::{self, Interval, Polled, View};
use super::{ms, BenchOptions, Flagged, Stats, Target};
use anyhow::Context;
use electd::contract::algorithm::AlgorithmKind;
use electd::contract::rng::Rng;
use electd::http::client::http_request;
use electd::testkit::procs::{ClusterTiming, ProcCluster};
use electd::NodeId;
use serde::Serialize;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Members of every cluster of the section.
pub const MEMBERS: usize = 5;
/// The candidates of the full run (ms), largest first.
pub const CANDIDATES_MS: [u64; 5] = [50, 30, 20, 15, 10];
/// The window of the full run: the 10 minutes.
pub const WINDOW: Duration = Duration::from_secs(600);
/// The quick run (tests, CI): one candidate, a few seconds.
pub const QUICK_CANDIDATES_MS: [u64; 1] = [50];
pub const QUICK_WINDOW: Duration = Duration::from_secs(5);
/// How long a freshly started cluster may take to agree on a leader (the busy
/// machine's processes start slowly).
pub const AGREE_WITHIN: Duration = Duration::from_secs(20);
/// How long a new cluster's agreement (leader and term) must hold before its window.
pub const SETTLED_FOR: Duration = Duration::from_secs(1);
/// The watch polls every member this often.
const POLL_EVERY: Duration = Duration::from_millis(200);
/// The least candidate the timing rules below can express (1 ms retransmissions).
pub const MIN_CANDIDATE_MS: u64 = 10;

/// The cluster timing for failure timeout `f_ms`: heartbeat F / 5 (the issue's
/// rule), answer F / 10 (at least 2 ms), coordinator F / 2 (at least what
/// `Timing::validate` asks above 2 × answer + retransmit), Raft F..2F, and the first
/// retransmission F / 20 (1..5 ms; the link's other defaults follow F).
pub fn timing_for(f_ms: u64) -> ClusterTiming {
    let retransmit = (f_ms / 20).clamp(1, 5);
    let answer = (f_ms / 10).max(2).max(retransmit + 1);
    let coordinator = (f_ms / 2).max(2 * answer + retransmit + 1);
    ClusterTiming {
        heartbeat_ms: (f_ms / 5).max(1),
        failure_ms: f_ms,
        answer_ms: answer,
        coordinator_ms: coordinator,
        election_min_ms: f_ms,
        election_max_ms: 2 * f_ms,
        retransmit_ms: retransmit,
        ..ClusterTiming::failover()
    }
}

/// etcd's interval for E = `f_ms`: heartbeat E / 5 (etcd accepts E ≥ 5 × heartbeat).
pub fn etcd_interval(f_ms: u64) -> Interval {
    Interval {
        heartbeat_ms: (f_ms / 5).max(1),
        election_ms: f_ms,
    }
}

/// Start every node of `c`, in `SCHED_RR` at `realtime` when it is set.
fn start_nodes(c: &mut ProcCluster, realtime: Option<u8>) -> anyhow::Result<()> {
    let prio = realtime.map(|p| p.to_string());
    let env: Vec<(&str, &str)> = prio
        .iter()
        .map(|p| ("ELECTD_PROCESS_REALTIME_PRIORITY", p.as_str()))
        .collect();
    for id in c.ids() {
        c.start_with_env(id, &env)?;
    }
    Ok(())
}

/// Copy the node logs of `c` into `to`; says where they are, or why they are not.
fn keep_logs(c: &ProcCluster, to: &std::path::Path) -> String {
    let copy = || -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        for id in c.ids() {
            std::fs::write(to.join(format!("node{id}.log")), c.log(id))?;
        }
        std::fs::copy(c.dir.join("electd.toml"), to.join("electd.toml"))?;
        Ok(())
    };
    match copy() {
        Ok(()) => format!("the nodes' logs are in {}", to.display()),
        Err(e) => format!(
            "the nodes' logs could not be kept in {} ({e})",
            to.display()
        ),
    }
}

/// One system watched at one candidate.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Watch {
    /// `etcd` or the algorithm's name.
    pub system: String,
    /// Agreed on a leader, unchanged for [`SETTLED_FOR`], within [`AGREE_WITHIN`] (else
    /// it fails the candidate, its window counted all the same).
    pub agreed: bool,
    /// Elections during the window: the rise of the highest term any member reports.
    pub elections: u64,
    /// Changes of the leader every member named, between polls.
    pub leader_changes: u64,
    /// Polls at which the members did not all name one leader that names itself.
    pub unagreed_polls: usize,
    pub polls: usize,
    /// Seconds into the window of the first poll that saw the term risen.
    pub first_election_s: Option<f64>,
    /// electd: the largest gap between two heartbeats in a row any follower heard in
    /// the window, as the bound of its `electd_heartbeat_gap_seconds` bucket (ms;
    /// infinite: above the largest bucket). `None`: not read (etcd, or no sample).
    #[serde(default)]
    pub largest_gap_ms: Option<f64>,
    /// electd: the latest any member running the group (its leader too) woke for a
    /// deadline in the window, as the bound of its `electd_timer_lateness_seconds`
    /// bucket (ms).
    #[serde(default)]
    pub latest_wakeup_ms: Option<f64>,
}

impl Watch {
    pub fn safe(&self) -> bool {
        self.agreed && self.elections == 0
    }
}

/// One candidate: every system still searching, watched over the same window.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub timeout_ms: u64,
    pub heartbeat_ms: u64,
    pub window_s: f64,
    /// 1-minute load average at the start and the end of the window.
    pub load_start: f64,
    pub load_end: f64,
    pub watches: Vec<Watch>,
    /// The systems whose search had ended, run beside the others as load only.
    pub ballast: Vec<String>,
}

/// What the search found for one system, and its failover at that value.
#[derive(Clone, Debug, Serialize)]
pub struct Found {
    pub system: String,
    /// The smallest candidate passed with every larger one (`None`: failed the first).
    pub safe_ms: Option<u64>,
    /// The candidate that ended the search, with its elections (`None`: passed all).
    pub failed_ms: Option<u64>,
    pub failed_elections: u64,
    pub failover: Option<Failover>,
    /// Why the failover at `safe_ms` was not measured, when it was not.
    pub not_measured: Option<String>,
}

/// Failover after SIGKILL of the leader at a system's smallest safe value.
#[derive(Clone, Debug, Serialize)]
pub struct Failover {
    /// How the time was taken: electd from the survivors' `/watch` events (the bench's
    /// failover section), etcd by polling its members' status (the etcd section's
    /// driver, which adds up to one round of polls).
    pub method: String,
    pub stats: Stats,
    /// `stats` ÷ F.
    pub ratio: Stats,
    pub timeouts: usize,
    pub flagged: Vec<Flagged>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Detect {
    /// Why the section did not run (or what it left out, e.g. etcd).
    pub skipped: Option<String>,
    pub etcd_missing: Option<String>,
    pub etcd_version: String,
    pub candidates_ms: Vec<u64>,
    pub window_s: f64,
    /// Every algorithm as a group of one cluster (`--detect-one-cluster`), instead of
    /// one cluster each.
    pub one_cluster: bool,
    /// electd's nodes and etcd's members in `SCHED_RR` at this priority
    /// (`--detect-realtime`); `None`: the normal class, as the load.
    pub realtime: Option<u8>,
    pub load: String,
    pub steps: Vec<Step>,
    pub found: Vec<Found>,
}

impl Detect {
    pub fn found(&self, system: &str) -> Option<&Found> {
        self.found.iter().find(|f| f.system == system)
    }
}

/// Where each system's search ended, from the steps in order (a system's search ends
/// at the first candidate it fails; candidates are tried largest first).
pub fn conclude(systems: &[String], steps: &[Step]) -> Vec<Found> {
    systems
        .iter()
        .map(|sys| {
            let mut found = Found {
                system: sys.clone(),
                safe_ms: None,
                failed_ms: None,
                failed_elections: 0,
                failover: None,
                not_measured: None,
            };
            for step in steps {
                let Some(w) = step.watches.iter().find(|w| &w.system == sys) else {
                    continue;
                };
                if w.safe() {
                    found.safe_ms = Some(step.timeout_ms);
                } else {
                    found.failed_ms = Some(step.timeout_ms);
                    found.failed_elections = w.elections;
                    break;
                }
            }
            found
        })
        .collect()
}

/// The hogs and the writer of the busy machine. Each process is this bench's child, in
/// its process group (a Ctrl-C reaches them with the rest), dies with it
/// (`PR_SET_PDEATHSIG`), and is killed by its PID on drop; the writer is a thread that
/// starts one `dd` after the other, so no shell loop can outlive the bench.
struct Busy {
    hogs: Vec<Child>,
    writer: Option<std::thread::JoinHandle<()>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    dd: std::sync::Arc<std::sync::Mutex<Option<Child>>>,
    file: std::path::PathBuf,
}

/// `cmd`, dying with the bench.
fn child_of_bench(mut cmd: Command) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: prctl(2) is async-signal-safe; it runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

impl Busy {
    const DESCRIPTION: &'static str = "three CPU hogs (`sh -c 'while :; do :; done'`) and a \
        writer (`dd if=/dev/zero bs=1M count=64 conv=fsync`, one after the other)";

    fn start(dir: &std::path::Path) -> anyhow::Result<Busy> {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let file = dir.join(format!("electd-bench-detect-{}.dd", std::process::id()));
        let mut busy = Busy {
            hogs: Vec::new(),
            writer: None,
            stop: Arc::new(AtomicBool::new(false)),
            dd: Arc::new(Mutex::new(None)),
            file: file.clone(),
        };
        for _ in 0..3 {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "while :; do :; done"]);
            busy.hogs
                .push(child_of_bench(cmd).context("spawn a CPU hog (sh)")?);
        }
        let (stop, dd) = (busy.stop.clone(), busy.dd.clone());
        let of = format!("of={}", file.display());
        busy.writer = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) && !super::stop::exiting() {
                let mut cmd = Command::new("dd");
                cmd.args([
                    "if=/dev/zero",
                    &of,
                    "bs=1M",
                    "count=64",
                    "conv=fsync",
                    "status=none",
                ]);
                let Ok(child) = child_of_bench(cmd) else {
                    return;
                };
                let mut slot = dd.lock().unwrap_or_else(|e| e.into_inner());
                if stop.load(Ordering::SeqCst) || super::stop::exiting() {
                    let mut c = child;
                    let _ = c.kill();
                    let _ = c.wait();
                    return;
                }
                *slot = Some(child);
                drop(slot);
                // Wait for this dd without holding the lock (drop may kill it meanwhile).
                loop {
                    let mut slot = dd.lock().unwrap_or_else(|e| e.into_inner());
                    match slot.as_mut().map(Child::try_wait) {
                        Some(Ok(None)) => {}
                        _ => {
                            *slot = None;
                            break;
                        }
                    }
                    drop(slot);
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }));
        Ok(busy)
    }

    fn pids(&self) -> Vec<u32> {
        self.hogs.iter().map(Child::id).collect()
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for c in &mut self.hogs {
            let _ = c.kill(); // SIGKILL by PID
            let _ = c.wait();
        }
        if let Some(mut c) = self.dd.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Every member of `views` names one leader that names itself: that leader's index.
fn agreed(views: &[Option<View>]) -> Option<String> {
    let leader = views.first()?.as_ref()?.leader.clone()?;
    let all_name_it = views.iter().all(|v| {
        v.as_ref()
            .is_some_and(|v| v.leader.as_ref() == Some(&leader))
    });
    let it_names_itself = views.iter().flatten().any(|v| v.me == leader);
    (all_name_it && it_names_itself).then_some(leader)
}

fn max_term(views: &[Option<View>]) -> Option<u64> {
    views.iter().flatten().map(|v| v.term).max()
}

/// The views of every system of one poll: the electd groups from one `/status` per
/// node, etcd from its members.
fn poll(
    clusters: &[ProcCluster],
    kinds: &[AlgorithmKind],
    etcd: Option<&versus_etcd::Etcd>,
) -> Vec<(String, Vec<Option<View>>)> {
    let mut out: Vec<(String, Vec<Option<View>>)> = kinds
        .iter()
        .map(|k| (k.as_str().to_string(), vec![None; MEMBERS]))
        .collect();
    for c in clusters {
        for (i, id) in (1..=MEMBERS as NodeId).enumerate() {
            let Some(addr) = c.http(id) else { continue };
            let Some((200, body)) = http_request(addr, "GET", "/status", None) else {
                continue;
            };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) else {
                continue;
            };
            for g in v["groups"].as_array().into_iter().flatten() {
                let Some(slot) = out.iter_mut().find(|(s, _)| g["algorithm"] == s.as_str()) else {
                    continue;
                };
                slot.1[i] = Some(View {
                    me: id.to_string(),
                    leader: g["leader"].as_u64().map(|l| l.to_string()),
                    term: g["term"].as_u64().unwrap_or(0),
                });
            }
        }
    }
    if let Some(e) = etcd {
        out.push((
            "etcd".into(),
            (0..MEMBERS).map(|i| Polled::view(e, i)).collect(),
        ));
    }
    out
}

/// The electd clusters of one candidate: what each runs, and which of those groups
/// are watched. Every algorithm runs at every candidate; those whose search has ended
/// only as load.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Per cluster: the algorithms its nodes run, and those of them watched.
    pub clusters: Vec<(Vec<AlgorithmKind>, Vec<AlgorithmKind>)>,
}

impl Layout {
    /// `searching` watched, every other algorithm run as load; one cluster per
    /// algorithm, or all of them as the groups of one (`one_cluster`).
    pub fn new(searching: &[AlgorithmKind], one_cluster: bool) -> Layout {
        let all = AlgorithmKind::ALL.to_vec();
        let watched = |algos: &[AlgorithmKind]| -> Vec<AlgorithmKind> {
            algos
                .iter()
                .copied()
                .filter(|k| searching.contains(k))
                .collect()
        };
        let clusters = if one_cluster {
            vec![(all.clone(), watched(&all))]
        } else {
            all.iter().map(|&k| (vec![k], watched(&[k]))).collect()
        };
        Layout { clusters }
    }

    /// The algorithms run as load only.
    pub fn ballast(&self) -> Vec<AlgorithmKind> {
        self.clusters
            .iter()
            .flat_map(|(run, watched)| run.iter().filter(|k| !watched.contains(k)).copied())
            .collect()
    }
}

/// Watch one candidate: start the clusters, wait for agreement, watch the window.
/// `etcd`: its binary, and whether it is watched (else it runs as load only).
fn watch_step(
    opts: &BenchOptions,
    f_ms: u64,
    kinds: &[AlgorithmKind],
    layout: &Layout,
    etcd_exe: Option<(&std::path::Path, bool)>,
    window: Duration,
    log: &dyn Fn(&str),
) -> anyhow::Result<Step> {
    let t = timing_for(f_ms);
    // The clusters that hold a watched group (polled, their histograms read), and the
    // ones run as load only.
    let mut clusters = Vec::new();
    let mut load = Vec::new();
    // The algorithms each watched cluster runs, in the same order.
    let mut hosted: Vec<Vec<String>> = Vec::new();
    for (algos, watched) in &layout.clusters {
        let name = match algos.as_slice() {
            [one] => format!("detect-{f_ms}-{one}"),
            _ => format!("detect-{f_ms}"),
        };
        let mut c = ProcCluster::new(
            &opts.exe,
            &std::env::temp_dir(),
            &name,
            MEMBERS as NodeId,
            algos,
            &t,
        )?;
        start_nodes(&mut c, opts.detect_realtime)?;
        if watched.is_empty() {
            load.push(c);
        } else {
            clusters.push(c);
            hosted.push(algos.iter().map(|a| a.as_str().to_string()).collect());
        }
    }
    let (etcd, etcd_load) = match etcd_exe {
        Some((exe, watched)) => {
            let e = versus_etcd::Etcd::new_in_class(
                exe.to_path_buf(),
                &format!("detect-{f_ms}"),
                etcd_interval(f_ms),
                opts.detect_realtime,
            )?;
            if watched {
                (Some(e), None)
            } else {
                (None, Some(e))
            }
        }
        None => (None, None),
    };
    let mut ballast: Vec<String> = layout
        .ballast()
        .iter()
        .map(|k| k.as_str().to_string())
        .collect();
    if etcd_load.is_some() {
        ballast.push("etcd".into());
    }
    let systems: Vec<String> = poll(&clusters, kinds, etcd.as_ref())
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    // Agreement of every system, each on its own, held unchanged (leader and term) for
    // [`SETTLED_FOR`], within the deadline: the window watches a settled cluster, not
    // the tail of its cold start.
    let deadline = Instant::now() + AGREE_WITHIN;
    let mut agreed_at: Vec<Option<u64>> = vec![None; systems.len()];
    let mut since: Vec<Option<(Instant, String, Option<u64>)>> = vec![None; systems.len()];
    loop {
        let now = Instant::now();
        for (k, (_, views)) in poll(&clusters, kinds, etcd.as_ref())
            .into_iter()
            .enumerate()
        {
            let seen = agreed(&views).map(|l| (l, max_term(&views)));
            since[k] = match (seen, since[k].take()) {
                (None, _) => None,
                (Some((l, t)), Some((at, l0, t0))) if l == l0 && t == t0 => Some((at, l0, t0)),
                (Some((l, t)), _) => Some((now, l, t)),
            };
            if agreed_at[k].is_none() {
                if let Some((at, _, t)) = &since[k] {
                    if now.duration_since(*at) >= SETTLED_FOR {
                        agreed_at[k] = Some(t.unwrap_or(0));
                    }
                }
            }
        }
        if agreed_at.iter().all(Option::is_some) || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(POLL_EVERY);
    }
    // Terms and leaders from the start of the window.
    let first = poll(&clusters, kinds, etcd.as_ref());
    let mut base: Vec<Option<u64>> = first.iter().map(|(_, v)| max_term(v)).collect();
    let mut last_leader: Vec<Option<String>> = first.iter().map(|(_, v)| agreed(v)).collect();
    let mut watches: Vec<Watch> = systems
        .iter()
        .zip(&agreed_at)
        .map(|(s, a)| Watch {
            system: s.clone(),
            agreed: a.is_some(),
            elections: 0,
            leader_changes: 0,
            unagreed_polls: 0,
            polls: 0,
            first_election_s: None,
            largest_gap_ms: None,
            latest_wakeup_ms: None,
        })
        .collect();
    for (w, a) in watches.iter().zip(&agreed_at) {
        if a.is_none() {
            log(&format!(
                "    {}: no agreement within {:?} at {f_ms} ms: fails this value",
                w.system, AGREE_WITHIN
            ));
        }
    }
    let hist_start = histograms(&clusters, &hosted);
    let load_start = super::load_average();
    let started = Instant::now();
    let report_every = (window / 10).max(Duration::from_secs(5));
    let mut next_report = started + report_every;
    while started.elapsed() < window {
        std::thread::sleep(POLL_EVERY.min(window.saturating_sub(started.elapsed())));
        let views = poll(&clusters, kinds, etcd.as_ref());
        for (k, (_, v)) in views.iter().enumerate() {
            let w = &mut watches[k];
            w.polls += 1;
            let now_leader = agreed(v);
            match (&now_leader, &last_leader[k]) {
                (Some(l), Some(p)) if l != p => w.leader_changes += 1,
                (None, _) => w.unagreed_polls += 1,
                _ => {}
            }
            if now_leader.is_some() {
                last_leader[k] = now_leader;
            }
            if let Some(term) = max_term(v) {
                match base[k] {
                    None => base[k] = Some(term),
                    Some(b) if term > b => {
                        w.elections += term - b;
                        base[k] = Some(term);
                        w.first_election_s
                            .get_or_insert(started.elapsed().as_secs_f64());
                    }
                    _ => {}
                }
            }
        }
        if Instant::now() >= next_report {
            next_report += report_every;
            let so_far: Vec<String> = watches
                .iter()
                .map(|w| format!("{} {}", w.system, w.elections))
                .collect();
            log(&format!(
                "    {f_ms} ms: {:.0}/{:.0} s, elections so far: {} (load {:.1})",
                started.elapsed().as_secs_f64(),
                window.as_secs_f64(),
                so_far.join(", "),
                super::load_average()
            ));
        }
    }
    // What the members measured over the window: the heartbeats' gaps at the
    // followers, the runtime's lateness at every member, and the gaps each logged as
    // leaving less than a beat of margin.
    let hist_end = histograms(&clusters, &hosted);
    let watched_line = |l: &&str| {
        l.contains("heartbeat gap of")
            && kinds
                .iter()
                .any(|k| l.contains(&format!("algorithm={}", k.as_str())))
    };
    for c in &clusters {
        for id in 1..=MEMBERS as NodeId {
            for line in c.log(id).lines().filter(watched_line) {
                log(&format!("    node {id}: {line}"));
            }
        }
    }
    for w in watches.iter_mut().filter(|w| w.system != "etcd") {
        let (gaps, late) = member_pairs(&hist_start, &hist_end, &w.system);
        w.largest_gap_ms = largest(&gaps.0, &gaps.1).map(|x| x * 1e3);
        w.latest_wakeup_ms = largest(&late.0, &late.1).map(|x| x * 1e3);
    }
    Ok(Step {
        timeout_ms: f_ms,
        heartbeat_ms: t.heartbeat_ms,
        window_s: ms(started.elapsed()) / 1e3,
        load_start,
        load_end: super::load_average(),
        watches,
        ballast,
    })
    // The clusters and etcd run as load stop here, with the watched ones.
}

/// One member's histograms: per algorithm its heartbeat gaps, and its runtime's
/// lateness; each as cumulative (bucket bound in s, count) pairs, `+Inf` last.
#[derive(Clone, Debug, Default)]
struct NodeHists {
    /// The algorithms the member runs (its cluster's).
    algorithms: Vec<String>,
    gaps: Vec<(String, Vec<(f64, u64)>)>,
    lateness: Vec<(f64, u64)>,
}

/// Every member's histograms, in a fixed order (cluster, then node); a member that
/// did not answer has none.
fn histograms(clusters: &[ProcCluster], hosted: &[Vec<String>]) -> Vec<NodeHists> {
    let mut out = Vec::new();
    for (c, algorithms) in clusters.iter().zip(hosted) {
        for id in 1..=MEMBERS as NodeId {
            let mut h = c.metrics(id).map(|t| parse_hists(&t)).unwrap_or_default();
            h.algorithms = algorithms.clone();
            out.push(h);
        }
    }
    out
}

/// For `system`, member by member (the same member at the same place in each list):
/// its heartbeat-gap histogram at `start` and `end`, and its lateness histogram at
/// both, over the members that run `system` (its leader included: a leader has no gap
/// samples of its own, but its lateness is the one that silences the group).
type Pairs = (Vec<Vec<(f64, u64)>>, Vec<Vec<(f64, u64)>>);
fn member_pairs(start: &[NodeHists], end: &[NodeHists], system: &str) -> (Pairs, Pairs) {
    let gap = |h: &NodeHists| -> Vec<(f64, u64)> {
        h.gaps
            .iter()
            .find(|g| g.0 == system)
            .map(|g| g.1.clone())
            .unwrap_or_default()
    };
    let (mut gaps, mut late) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for (a, b) in start.iter().zip(end) {
        if !b.algorithms.iter().any(|x| x == system) {
            continue;
        }
        gaps.0.push(gap(a));
        gaps.1.push(gap(b));
        late.0.push(a.lateness.clone());
        late.1.push(b.lateness.clone());
    }
    (gaps, late)
}

/// The bucket lines of `electd_heartbeat_gap_seconds` and `electd_timer_lateness_seconds`.
fn parse_hists(text: &str) -> NodeHists {
    let mut h = NodeHists::default();
    for line in text.lines() {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(count) = value.parse::<f64>() else {
            continue;
        };
        let label = |name: &str| -> Option<&str> {
            let at = series.find(&format!("{name}=\""))? + name.len() + 2;
            series[at..].split('"').next()
        };
        let Some(le) = label("le").and_then(|l| l.parse::<f64>().ok()) else {
            continue;
        };
        let count = count as u64;
        if series.starts_with("electd_heartbeat_gap_seconds_bucket") {
            let Some(a) = label("algorithm") else {
                continue;
            };
            match h.gaps.iter_mut().find(|g| g.0 == a) {
                Some(g) => g.1.push((le, count)),
                None => h.gaps.push((a.to_string(), vec![(le, count)])),
            }
        } else if series.starts_with("electd_timer_lateness_seconds_bucket") {
            h.lateness.push((le, count));
        }
    }
    h
}

/// The largest sample between two readings of the same members' histograms, as the
/// bound of its bucket (s; infinite above the largest finite bucket); `None` without
/// a sample. A member missing from either reading is left out.
fn largest(start: &[Vec<(f64, u64)>], end: &[Vec<(f64, u64)>]) -> Option<f64> {
    let mut top: Option<f64> = None;
    for (a, b) in start.iter().zip(end) {
        if b.is_empty() {
            continue;
        }
        let before = |le: f64| a.iter().find(|x| x.0 == le).map_or(0, |x| x.1);
        let delta: Vec<(f64, u64)> = b
            .iter()
            .map(|&(le, n)| (le, n.saturating_sub(before(le))))
            .collect();
        let total = delta.iter().map(|x| x.1).max().unwrap_or(0);
        if total == 0 {
            continue;
        }
        // Cumulative counts: the first bound holding every sample.
        let mut sorted = delta;
        sorted.sort_by(|x, y| x.0.total_cmp(&y.0));
        let bound = sorted
            .iter()
            .find(|x| x.1 == total)
            .map_or(f64::INFINITY, |x| x.0);
        top = Some(top.map_or(bound, |t: f64| t.max(bound)));
    }
    top
}

/// Check the section's options; the error names the option and the value.
pub fn check_options(candidates_ms: &[u64], window: Duration) -> anyhow::Result<()> {
    if candidates_ms.is_empty() {
        anyhow::bail!("--detect-timeouts: no candidate given");
    }
    for &c in candidates_ms {
        if !(MIN_CANDIDATE_MS..=60_000).contains(&c) {
            anyhow::bail!(
                "--detect-timeouts: {c} ms is outside {MIN_CANDIDATE_MS}..=60000 ms (the \
                 heartbeat is a fifth of it, in whole milliseconds)"
            );
        }
    }
    let mut sorted = candidates_ms.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != candidates_ms.len() {
        anyhow::bail!("--detect-timeouts: a candidate is given twice");
    }
    if window < Duration::from_secs(1) || window > Duration::from_secs(24 * 3600) {
        anyhow::bail!("--detect-window: {window:?} is outside 1 s ..= 24 h");
    }
    Ok(())
}

pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> anyhow::Result<Detect> {
    let mut candidates = if opts.detect_timeouts.is_empty() {
        if opts.quick {
            QUICK_CANDIDATES_MS.to_vec()
        } else {
            CANDIDATES_MS.to_vec()
        }
    } else {
        opts.detect_timeouts.clone()
    };
    let window = opts
        .detect_window
        .unwrap_or(if opts.quick { QUICK_WINDOW } else { WINDOW });
    check_options(&candidates, window)?;
    candidates.sort_unstable_by(|a, b| b.cmp(a));
    let etcd = versus_etcd::find_etcd();
    let etcd_missing = etcd.is_none().then(|| {
        let why = "no etcd binary on PATH (install Debian's etcd-server, or set \
                   ELECTD_BENCH_ETCD): etcd's smallest safe timeout was NOT measured, and \
                   no algorithm's is judged against it"
            .to_string();
        log(&format!("!!! {why}"));
        why
    });
    let mut searching: Vec<AlgorithmKind> = AlgorithmKind::ALL.to_vec();
    let mut etcd_searching = etcd.is_some();
    let mut systems: Vec<String> = searching.iter().map(|k| k.as_str().to_string()).collect();
    if etcd.is_some() {
        systems.push("etcd".into());
    }
    // The writer's file on the disk of /var/tmp (not a tmpfs /tmp): the load is the disk.
    let busy = Busy::start(std::path::Path::new("/var/tmp"))?;
    log(&format!(
        "  busy machine: {} (hog pids {:?})",
        Busy::DESCRIPTION,
        busy.pids()
    ));
    let mut steps = Vec::new();
    for &f in &candidates {
        if searching.is_empty() && !etcd_searching {
            break;
        }
        let mut names: Vec<&str> = searching.iter().map(|k| k.as_str()).collect();
        if etcd_searching {
            names.push("etcd");
        }
        // One cluster per algorithm (the question), or every algorithm as a
        // group of one cluster (`--detect-one-cluster`); those no longer searching as
        // load.
        let layout = Layout::new(&searching, opts.detect_one_cluster);
        let mut load: Vec<&str> = layout.ballast().iter().map(|k| k.as_str()).collect();
        if etcd.is_some() && !etcd_searching {
            load.push("etcd");
        }
        let load = if load.is_empty() {
            String::new()
        } else {
            format!(" (beside them as load only: {})", load.join(", "))
        };
        log(&format!(
            "  {f} ms (heartbeat {} ms), {:.0} s: {}{load}",
            timing_for(f).heartbeat_ms,
            window.as_secs_f64(),
            names.join(", ")
        ));
        let exe = etcd.as_ref().map(|(p, _)| (p.as_path(), etcd_searching));
        let step = watch_step(opts, f, &searching, &layout, exe, window, log)?;
        for w in &step.watches {
            let verdict = if w.safe() { "safe" } else { "FAILED" };
            log(&format!(
                "    {}: {verdict} at {f} ms ({} elections, {} leader changes)",
                w.system, w.elections, w.leader_changes
            ));
            if !w.safe() {
                if w.system == "etcd" {
                    etcd_searching = false;
                } else {
                    searching.retain(|k| k.as_str() != w.system);
                }
            }
        }
        steps.push(step);
    }
    let mut found = conclude(&systems, &steps);
    let mut rng = Rng::new(opts.seed ^ 0xDE7E);
    let rounds = versus_etcd::rounds(opts.quick);
    for fd in &mut found {
        let Some(f) = fd.safe_ms else { continue };
        log(&format!(
            "  failover of {} at {f} ms, {rounds} rounds",
            fd.system
        ));
        let run = if fd.system == "etcd" {
            let Some((exe, _)) = &etcd else { continue };
            let mut e = versus_etcd::Etcd::new_in_class(
                exe.clone(),
                "detect-failover",
                etcd_interval(f),
                opts.detect_realtime,
            )?;
            let r = versus_etcd::measure(
                "etcd",
                &mut e,
                etcd_interval(f),
                rounds,
                &mut rng,
                log,
                versus_etcd::Clock::Logs,
            )?;
            Failover {
                method: "the survivors' own log lines naming the new leader (ms grain)".into(),
                stats: r.stats,
                ratio: r.ratio,
                timeouts: r.timeouts,
                flagged: r.flagged,
            }
        } else {
            let Some(kind) = AlgorithmKind::ALL
                .iter()
                .copied()
                .find(|k| k.as_str() == fd.system)
            else {
                continue;
            };
            let t = timing_for(f);
            let mut cluster = ProcCluster::new(
                &opts.exe,
                &std::env::temp_dir(),
                &format!("detect-failover-{kind}"),
                MEMBERS as NodeId,
                &[kind],
                &t,
            )?;
            start_nodes(&mut cluster, opts.detect_realtime)?;
            let w = Watchers::new(kind);
            for id in cluster.ids() {
                if let Some(addr) = cluster.http(id) {
                    w.connect(id, addr, Duration::from_secs(10));
                }
            }
            if w.wait_agreement(&cluster.ids(), Instant::now() + AGREE_WITHIN)
                .is_none()
            {
                // What each node said last, and its log kept beside the report: a row
                // that failed says why.
                let views = cluster
                    .ids()
                    .into_iter()
                    .map(|id| match w.leader_of(id) {
                        None => format!("node {id}: no /watch stream"),
                        Some(None) => format!("node {id}: no leader"),
                        Some(Some(l)) => format!("node {id}: follows {l}"),
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                let kept = opts.out.join(format!("detect-failover-{kind}-logs"));
                let copied = keep_logs(&cluster, &kept);
                let why = format!(
                    "no agreement within {AGREE_WITHIN:?} of the cold start of its own cluster \
                     ({views}); {copied}"
                );
                log(&format!("    {kind}: failover not measured: {why}"));
                fd.not_measured = Some(why);
                continue;
            }
            let r = super::failover::measure(
                &mut cluster,
                &w,
                kind,
                super::failover::Actions {
                    mode: "sigkill",
                    count: rounds,
                    clock: super::failover::Clock::Stamp,
                    take_apart: false,
                },
                &t,
                &mut rng,
            )?;
            Failover {
                method: "the survivors' own stamps of the adoption (`at_us`)".into(),
                stats: r.stats,
                ratio: r.ratio,
                timeouts: r.timeouts,
                flagged: r.flagged,
            }
        };
        log(&format!(
            "    {}: median {:.2} × F, p90 {:.2} × F, timeouts {}, flagged {}",
            fd.system,
            run.ratio.median,
            run.ratio.p90,
            run.timeouts,
            run.flagged.len()
        ));
        fd.failover = Some(run);
    }
    drop(busy);
    Ok(Detect {
        skipped: None,
        etcd_missing,
        etcd_version: etcd.map(|(_, v)| v).unwrap_or_default(),
        candidates_ms: candidates,
        window_s: window.as_secs_f64(),
        one_cluster: opts.detect_one_cluster,
        realtime: opts.detect_realtime,
        load: Busy::DESCRIPTION.to_string(),
        steps,
        found,
    })
}

/// The targets: every algorithm's smallest safe failure timeout ≤ etcd's
/// smallest safe E, and its failover median at that value ≤ 1.2 × it.
pub fn targets(d: &Detect) -> Vec<Target> {
    let mut out = Vec::new();
    if d.skipped.is_some() {
        return out;
    }
    let etcd = d.found("etcd");
    let smallest = d.candidates_ms.iter().min().copied().unwrap_or(0);
    let describe = |f: &Found| match (f.safe_ms, f.failed_ms) {
        (Some(s), Some(x)) => format!("{s} ms ({} elections at {x} ms)", f.failed_elections),
        (Some(s), None) if s == smallest => format!("{s} ms (the smallest candidate)"),
        (Some(s), None) => format!("{s} ms"),
        (None, Some(x)) => format!("none: {} elections at {x} ms", f.failed_elections),
        (None, None) => "not watched".into(),
    };
    for kind in AlgorithmKind::ALL {
        let Some(f) = d.found(kind.as_str()) else {
            continue;
        };
        let (goal, met, note) = match etcd {
            Some(e) => (
                match e.safe_ms {
                    Some(x) => format!("≤ etcd's smallest safe E ({x} ms)"),
                    None => "≤ etcd's smallest safe E (none found)".into(),
                },
                // etcd held at no candidate (it failed at the largest): its smallest
                // safe E is above every candidate, so any value found is below it.
                match (f.safe_ms, e.safe_ms) {
                    (Some(a), Some(b)) => a <= b,
                    (Some(_), None) => e.failed_ms.is_some(),
                    _ => false,
                },
                format!("etcd: {}", describe(e)),
            ),
            None => (
                "≤ etcd's smallest safe E".into(),
                false,
                d.etcd_missing.clone().unwrap_or_default(),
            ),
        };
        out.push(Target {
            name: format!(
                "smallest safe failure_timeout, {kind} (busy machine, {:.0} s without an election)",
                d.window_s
            ),
            target: goal,
            measured: describe(f),
            met,
            note,
        });
        let Some(safe) = f.safe_ms else { continue };
        let (measured, met) = match &f.failover {
            Some(r) if r.stats.n == 0 => (
                format!(
                    "no failover measured: {}",
                    r.flagged
                        .first()
                        .map_or("no round ran", |x| x.cause.as_str())
                ),
                false,
            ),
            Some(r) => (
                format!(
                    "median {:.1} ms = {:.2} × (n={}, timeouts {})",
                    r.stats.median, r.ratio.median, r.stats.n, r.timeouts
                ),
                r.stats.n > 0 && r.timeouts == 0 && r.ratio.median <= 1.2,
            ),
            None => ("not measured".into(), false),
        };
        out.push(Target {
            name: format!("failover median at {safe} ms, {kind} (busy machine)"),
            target: "≤ 1.2 × that failure_timeout".into(),
            measured,
            met,
            note: String::new(),
        });
    }
    out
}

/// `x` with at most three decimals and no trailing zeros.
fn trim(x: f64) -> String {
    let t = format!("{x:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A bucket bound in ms as the report shows it: `≤ 12`, `> 1000` above the last
/// finite bucket, `—` unread.
fn bucket(ms: Option<f64>) -> String {
    match ms {
        None => "—".into(),
        Some(x) if x.is_infinite() => "> largest bucket".into(),
        Some(x) => format!("≤ {}", trim(x)),
    }
}

/// The section of report.md.
pub fn markdown(s: &mut String, d: &Detect) {
    use std::fmt::Write;
    let _ = writeln!(s, "\n## The smallest safe failure timeout\n");
    if let Some(why) = &d.skipped {
        let _ = writeln!(s, "Not run: {why}.\n");
        return;
    }
    let _ = writeln!(
        s,
        "The machine made busy by the bench: {}. Candidates {} ms, largest first; at each, \
         {}, each node with its state file in the bench's temporary directory, with \
         heartbeat F / 5, answer F / 10, coordinator F / 2, Raft F..2F; beside them in the \
         same window {MEMBERS} etcd members ({}) with E = F and heartbeat E / 5. A system \
         whose search has ended runs on at every later candidate as load only, neither \
         watched nor counted, so that every window has the same processes. Each window \
         starts once every system's leader and term have held for 1 s. Nobody is killed, so \
         every election in the {:.0} s window is spurious (a rise of the term). \
         A system's search ends at the first candidate with an election; its smallest safe \
         timeout is the last it passed. Then each runs alone at that value and its leader \
         is SIGKILLed, the machine still busy; each failover ends at the last survivor's \
         own stamp of its adoption (electd: `at_us` of its `/watch` event; etcd: its raft \
         log line, 1 ms grain). Reproduce: `electd bench --only detect` (about ten minutes \
         per candidate; `--detect-timeouts`, `--detect-window`, `--detect-one-cluster`, \
         `--detect-realtime`).{}\n",
        d.load,
        d.candidates_ms
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        if d.one_cluster {
            format!(
                "one {MEMBERS}-node electd cluster runs every algorithm as a group of its own \
                 (`--detect-one-cluster`: a stalled node stalls every group), those still \
                 searching watched"
            )
        } else {
            format!(
                "one {MEMBERS}-node electd cluster per algorithm, those still searching watched"
            )
        },
        if d.etcd_version.is_empty() {
            "not run: no etcd"
        } else {
            &d.etcd_version
        },
        d.window_s,
        match d.realtime {
            Some(p) => format!(
                " **electd's nodes (`[process] realtime_priority = {p}`) and etcd's members \
                 ran in the real-time class, SCHED_RR at priority {p}** \
                 (`--detect-realtime {p}`); the load ran in the normal class."
            ),
            None => String::new(),
        }
    );
    if let Some(why) = &d.etcd_missing {
        let _ = writeln!(s, "**{why}.**\n");
    }
    super::report::header(
        s,
        &[
            "F ms",
            "heartbeat ms",
            "system",
            "agreed",
            "elections",
            "first at s",
            "leader changes",
            "polls without agreement",
            "largest heartbeat gap ms",
            "latest wakeup ms",
            "load",
        ],
    );
    for st in &d.steps {
        for w in &st.watches {
            let elections = if w.elections > 0 {
                format!("**{}**", w.elections)
            } else {
                "0".into()
            };
            super::report::row(
                s,
                &[
                    st.timeout_ms.to_string(),
                    st.heartbeat_ms.to_string(),
                    w.system.clone(),
                    if w.agreed { "yes" } else { "**no**" }.into(),
                    elections,
                    w.first_election_s.map_or("—".into(), |x| format!("{x:.0}")),
                    w.leader_changes.to_string(),
                    format!("{} of {}", w.unagreed_polls, w.polls),
                    bucket(w.largest_gap_ms),
                    bucket(w.latest_wakeup_ms),
                    format!("{:.1} → {:.1}", st.load_start, st.load_end),
                ],
            );
        }
    }
    let _ = writeln!(s);
    for st in d.steps.iter().filter(|st| !st.ballast.is_empty()) {
        let _ = writeln!(
            s,
            "- {} ms: beside them as load only, {}.",
            st.timeout_ms,
            st.ballast.join(", ")
        );
    }
    if d.steps.iter().any(|st| !st.ballast.is_empty()) {
        let _ = writeln!(s);
    }
    super::report::header(
        s,
        &[
            "system",
            "smallest safe ms",
            "failed at ms",
            "failover median / p90 / max ms",
            "× F",
            "rounds, timeouts, flagged",
            "timed by",
        ],
    );
    for f in &d.found {
        let (times, ratio, rounds, method) = match &f.failover {
            // No round measured (not run, or all timed out): the flagged lines below
            // say why; no zeros that read as times.
            Some(r) if r.stats.n == 0 => (
                "—".into(),
                "—".into(),
                format!("{}, {}, {}", r.stats.n, r.timeouts, r.flagged.len()),
                r.method.clone(),
            ),
            Some(r) => (
                format!(
                    "{:.1} / {:.1} / {:.1}",
                    r.stats.median, r.stats.p90, r.stats.max
                ),
                format!("{:.2}", r.ratio.median),
                format!("{}, {}, {}", r.stats.n, r.timeouts, r.flagged.len()),
                r.method.clone(),
            ),
            None => ("—".into(), "—".into(), "—".into(), "—".into()),
        };
        super::report::row(
            s,
            &[
                f.system.clone(),
                f.safe_ms.map_or("**none**".into(), |x| x.to_string()),
                f.failed_ms.map_or("—".into(), |x| {
                    format!("{x} ({} elections)", f.failed_elections)
                }),
                times,
                ratio,
                rounds,
                method,
            ],
        );
    }
    let _ = writeln!(s);
    for f in &d.found {
        for x in f.failover.iter().flat_map(|r| &r.flagged) {
            let _ = writeln!(s, "- {} flagged: {}", f.system, x.describe());
        }
        if let Some(why) = &f.not_measured {
            let _ = writeln!(s, "- **{}: failover not measured**: {why}", f.system);
        }
    }
    let _ = writeln!(s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use electd::node::link::LinkConfig;

    #[test]
    fn every_candidate_the_section_accepts_makes_a_valid_timing() {
        for f in MIN_CANDIDATE_MS..=2_000 {
            let t = timing_for(f);
            let link = LinkConfig::for_failure_timeout(Duration::from_millis(f));
            let r = Duration::from_millis(t.retransmit_ms);
            t.timing()
                .validate(r, link.give_up)
                .unwrap_or_else(|e| panic!("F = {f} ms: {} {}", e.key, e.message));
            assert_eq!(t.heartbeat_ms, f / 5, "F = {f}");
            let e = etcd_interval(f);
            assert!(
                e.election_ms >= 5 * e.heartbeat_ms,
                "etcd needs E ≥ 5 heartbeats"
            );
        }
    }

    #[test]
    fn the_busy_machine_stops_with_its_owner() {
        let dir = std::env::temp_dir();
        let busy = Busy::start(&dir).expect("start the load");
        let alive = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| !s.contains(") Z "))
                .unwrap_or(false)
        };
        let mut pids = busy.pids();
        assert_eq!(pids.len(), 3);
        let deadline = Instant::now() + Duration::from_secs(10);
        let dd = loop {
            let pid = busy.dd.lock().expect("lock").as_ref().map(Child::id);
            match pid {
                Some(pid) => break pid,
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                None => panic!("no dd within 10 s"),
            }
        };
        pids.push(dd);
        assert!(pids.iter().all(|&p| alive(p)), "{pids:?}");
        let file = busy.file.clone();
        drop(busy);
        assert!(pids.iter().all(|&p| !alive(p)), "still running: {pids:?}");
        assert!(!file.exists(), "{} left behind", file.display());
    }

    #[test]
    fn bad_options_are_named() {
        let w = Duration::from_secs(60);
        assert!(check_options(&[50, 20], w).is_ok());
        let err = |c: &[u64], w| check_options(c, w).unwrap_err().to_string();
        assert!(err(&[], w).contains("--detect-timeouts"));
        assert!(err(&[9], w).contains("9 ms is outside"));
        assert!(err(&[20, 20], w).contains("twice"));
        assert!(err(&[20], Duration::from_millis(500)).contains("--detect-window"));
    }

    fn watch(system: &str, agreed: bool, elections: u64) -> Watch {
        Watch {
            system: system.into(),
            agreed,
            elections,
            leader_changes: 0,
            unagreed_polls: 0,
            polls: 10,
            first_election_s: None,
            largest_gap_ms: None,
            latest_wakeup_ms: None,
        }
    }

    fn step(f: u64, watches: Vec<Watch>) -> Step {
        Step {
            timeout_ms: f,
            heartbeat_ms: f / 5,
            window_s: 1.0,
            load_start: 0.0,
            load_end: 0.0,
            watches,
            ballast: Vec::new(),
        }
    }

    #[test]
    fn every_algorithm_runs_at_every_candidate_those_done_as_load() {
        use AlgorithmKind::*;
        let searching = [Ring, Raft];
        // One cluster each: all six clusters, two of them watched.
        let l = Layout::new(&searching, false);
        assert_eq!(l.clusters.len(), AlgorithmKind::ALL.len());
        for (run, watched) in &l.clusters {
            assert_eq!(run.len(), 1);
            assert_eq!(watched.is_empty(), !searching.contains(&run[0]), "{run:?}");
        }
        assert_eq!(l.ballast(), vec![Bully, ImprovedBully, Lcr, Hs]);
        // One cluster: every algorithm a group of it, the two watched.
        let l = Layout::new(&searching, true);
        assert_eq!(
            l.clusters,
            vec![(AlgorithmKind::ALL.to_vec(), searching.to_vec())]
        );
        assert_eq!(l.ballast(), vec![Bully, ImprovedBully, Lcr, Hs]);
        // At the first candidate nothing is load; once all are done, all are.
        assert!(Layout::new(&AlgorithmKind::ALL, false).ballast().is_empty());
        assert_eq!(
            Layout::new(&[], true).ballast(),
            AlgorithmKind::ALL.to_vec()
        );
    }

    #[test]
    fn a_search_ends_at_the_first_value_failed() {
        let systems: Vec<String> = ["bully", "raft", "etcd"].map(String::from).to_vec();
        let steps = vec![
            step(
                50,
                vec![
                    watch("bully", true, 0),
                    watch("raft", true, 0),
                    watch("etcd", true, 0),
                ],
            ),
            // raft fails at 30; bully and etcd go on.
            step(
                30,
                vec![
                    watch("bully", true, 0),
                    watch("raft", true, 2),
                    watch("etcd", true, 0),
                ],
            ),
            // etcd never agreed at 20: that fails it too.
            step(20, vec![watch("bully", true, 0), watch("etcd", false, 0)]),
        ];
        let found = conclude(&systems, &steps);
        let get = |s: &str| found.iter().find(|f| f.system == s).expect(s);
        assert_eq!(
            (get("bully").safe_ms, get("bully").failed_ms),
            (Some(20), None)
        );
        assert_eq!(
            (get("raft").safe_ms, get("raft").failed_ms),
            (Some(50), Some(30))
        );
        assert_eq!(get("raft").failed_elections, 2);
        assert_eq!(
            (get("etcd").safe_ms, get("etcd").failed_ms),
            (Some(30), Some(20))
        );
        // Failing the first candidate finds nothing.
        let found = conclude(&systems[..1], &[step(50, vec![watch("bully", true, 1)])]);
        assert_eq!((found[0].safe_ms, found[0].failed_ms), (None, Some(50)));
        // The verdicts: bully's 20 ≤ etcd's 30 is met; raft's 50 is not.
        let d = Detect {
            candidates_ms: vec![50, 30, 20],
            window_s: 1.0,
            steps: steps.clone(),
            found: conclude(&systems, &steps),
            ..Detect::default()
        };
        let t = targets(&d);
        let verdict = |name: &str| {
            t.iter()
                .find(|x| x.name.starts_with(name))
                .unwrap_or_else(|| panic!("{name}"))
                .met
        };
        assert!(verdict("smallest safe failure_timeout, bully"));
        assert!(!verdict("smallest safe failure_timeout, raft"));
        // No failover measured: its target is missed, not skipped.
        assert!(!verdict("failover median at 20 ms, bully"));
        // etcd failed at every candidate: a value found is below its smallest safe E;
        // a system that found none is not.
        let steps = vec![step(
            30,
            vec![
                watch("bully", true, 0),
                watch("raft", true, 4),
                watch("etcd", true, 2),
            ],
        )];
        let d = Detect {
            candidates_ms: vec![30],
            window_s: 1.0,
            steps: steps.clone(),
            found: conclude(&systems, &steps),
            ..Detect::default()
        };
        let t = targets(&d);
        let verdict = |name: &str| t.iter().find(|x| x.name.starts_with(name)).unwrap().met;
        assert!(verdict("smallest safe failure_timeout, bully"));
        assert!(!verdict("smallest safe failure_timeout, raft"));
    }

    #[test]
    fn agreement_is_one_leader_named_by_every_member_and_by_itself() {
        let v = |me: &str, l: Option<&str>, term| {
            Some(View {
                me: me.into(),
                leader: l.map(String::from),
                term,
            })
        };
        assert_eq!(
            agreed(&[v("1", Some("2"), 3), v("2", Some("2"), 4)]),
            Some("2".into())
        );
        assert_eq!(agreed(&[v("1", Some("3"), 3), v("2", Some("3"), 3)]), None);
        assert_eq!(agreed(&[v("1", Some("2"), 3), None]), None);
        assert_eq!(
            max_term(&[v("1", Some("2"), 3), None, v("2", None, 7)]),
            Some(7)
        );
    }

    #[test]
    fn the_largest_sample_of_a_window_is_read_from_the_bucket_deltas() {
        let text = |gap: [u64; 4], late: [u64; 3]| {
            format!(
                "# HELP x\n\
                 electd_heartbeat_gap_seconds_bucket{{algorithm=\"bully\",node=\"1\",le=\"0.006\"}} {}\n\
                 electd_heartbeat_gap_seconds_bucket{{algorithm=\"bully\",node=\"1\",le=\"0.012\"}} {}\n\
                 electd_heartbeat_gap_seconds_bucket{{algorithm=\"bully\",node=\"1\",le=\"0.03\"}} {}\n\
                 electd_heartbeat_gap_seconds_bucket{{algorithm=\"bully\",node=\"1\",le=\"+Inf\"}} {}\n\
                 electd_heartbeat_gap_seconds_sum{{algorithm=\"bully\",node=\"1\"}} 9\n\
                 electd_timer_lateness_seconds_bucket{{node=\"1\",le=\"0.001\"}} {}\n\
                 electd_timer_lateness_seconds_bucket{{node=\"1\",le=\"0.02\"}} {}\n\
                 electd_timer_lateness_seconds_bucket{{node=\"1\",le=\"+Inf\"}} {}\n",
                gap[0], gap[1], gap[2], gap[3], late[0], late[1], late[2]
            )
        };
        // Before the window: one gap of up to 30 ms (the cold start), none late.
        let a = parse_hists(&text([5, 5, 6, 6], [9, 9, 9]));
        // In it: gaps up to 12 ms only, one wakeup late by up to 20 ms.
        let b = parse_hists(&text([50, 60, 61, 61], [99, 100, 100]));
        assert_eq!(a.gaps.len(), 1);
        assert_eq!(a.gaps[0].0, "bully");
        let g = |h: &NodeHists| vec![h.gaps[0].1.clone()];
        assert_eq!(
            largest(&g(&a), &g(&b)),
            Some(0.012),
            "the window's, not the cold start's"
        );
        assert_eq!(
            largest(
                std::slice::from_ref(&a.lateness),
                std::slice::from_ref(&b.lateness)
            ),
            Some(0.02)
        );
        // A sample above the largest finite bucket; a window without samples.
        let c = parse_hists(&text([50, 60, 61, 62], [99, 100, 101]));
        assert_eq!(largest(&g(&b), &g(&c)), Some(f64::INFINITY));
        assert_eq!(largest(&g(&c), &g(&c)), None);
        assert_eq!(bucket(Some(12.0)), "≤ 12");
        assert_eq!(bucket(Some(0.25)), "≤ 0.25");
        assert_eq!(bucket(Some(f64::INFINITY)), "> largest bucket");
        assert_eq!(bucket(None), "—");
        // A member that did not answer is left out.
        assert_eq!(largest(&[vec![]], &[vec![]]), None);
    }

    #[test]
    fn the_leaders_lateness_counts_and_members_stay_paired() {
        let node = |algos: &[&str], gap: Option<u64>, late: u64| NodeHists {
            algorithms: algos.iter().map(|a| a.to_string()).collect(),
            gaps: gap
                .map(|n| vec![("bully".to_string(), vec![(0.01, n), (f64::INFINITY, n)])])
                .unwrap_or_default(),
            lateness: vec![(0.001, 5), (0.05, 5 + late), (f64::INFINITY, 5 + late)],
        };
        // Member 1 follows (no sample yet at the start), member 2 leads (never a gap
        // sample, late by up to 50 ms in the window), member 3 runs only Raft.
        let start = [
            node(&["bully"], None, 0),
            node(&["bully"], None, 0),
            node(&["raft"], None, 0),
        ];
        let end = [
            node(&["bully"], Some(4), 0),
            node(&["bully"], None, 1),
            node(&["raft"], None, 9),
        ];
        let (gaps, late) = member_pairs(&start, &end, "bully");
        assert_eq!(
            gaps.0.len(),
            2,
            "the members that run Bully, the leader too"
        );
        assert_eq!(
            gaps.0[0],
            vec![],
            "no sample at the start: paired with its end"
        );
        assert_eq!(largest(&gaps.0, &gaps.1), Some(0.01));
        assert_eq!(
            largest(&late.0, &late.1),
            Some(0.05),
            "the leader's lateness, though it has no gap samples"
        );
        let (_, raft) = member_pairs(&start, &end, "raft");
        assert_eq!(raft.0.len(), 1);
    }

    /// A system whose failover at its safe value measured no round (not run, or every
    /// round timed out) shows dashes in the table, not zero times, and its target is
    /// missed with the cause.
    #[test]
    fn a_failover_without_a_measured_round_shows_dashes_and_misses() {
        let found = Found {
            system: "bully".into(),
            safe_ms: Some(30),
            failed_ms: Some(20),
            failed_elections: 4,
            failover: Some(Failover {
                method: "/watch".into(),
                stats: Stats::default(),
                ratio: Stats::default(),
                timeouts: 0,
                flagged: vec![Flagged {
                    ms: None,
                    cause: "not run: no stable leader".into(),
                }],
            }),
            not_measured: None,
        };
        let d = Detect {
            candidates_ms: vec![20, 30],
            window_s: 600.0,
            found: vec![found],
            ..Default::default()
        };
        let mut md = String::new();
        markdown(&mut md, &d);
        let row = md
            .lines()
            .find(|l| l.starts_with("| bully |"))
            .unwrap_or_else(|| panic!("no bully row: {md}"));
        assert!(row.contains("| — | — | 0, 0, 1 |"), "{row}");
        assert!(!row.contains("0.0 /"), "{row}");
        let t = targets(&d);
        let fo = t
            .iter()
            .find(|t| t.name.starts_with("failover median at 30 ms, bully"))
            .expect("the failover target");
        assert!(!fo.met, "{fo:?}");
        assert!(
            fo.measured.contains("not run: no stable leader"),
            "{}",
            fo.measured
        );
    }
}
