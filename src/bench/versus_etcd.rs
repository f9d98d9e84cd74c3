//! Failover beside etcd, measured by one poll-based driver for both systems.
//!
//! etcd's leader election is what a user would pick instead of electd's Raft, so the
//! two are measured the same way in the same run: five members on 127.0.0.1 with
//! heartbeat 10 ms and election timeout E = 100 ms (etcd `--heartbeat-interval 10
//! --election-timeout 100`; electd `election_timeout = "100ms"`, i.e. E..2E as etcd
//! draws it, `failure_timeout = E` for the other algorithms). Each round waits until
//! every member names one leader that names itself, waits a random phase of the
//! heartbeat period, SIGKILLs the leader, and polls every survivor (etcd:
//! `POST /v3/maintenance/status`; electd: `GET /status`) until all of them name one
//! new leader that names itself. The killed member is then restarted (etcd keeps its
//! data directory, electd its state directory) and must rejoin before the next round.
//!
//! Split votes are counted from the terms: a failover that ends `k` terms above the
//! term before the kill took `k − 1` extra rounds; in both systems only a candidacy
//! raises the term (electd's Raft runs a pre-vote before it, etcd 3.4 as Debian ships
//! it does not: `--pre-vote` is off by default before etcd 3.5, and the bench keeps
//! etcd's defaults).
//!
//! The least a failover can take (samples below it are flagged, see [`detection_limit_ms`])
//! differs: electd's detectors run in continuous time, etcd counts its election timeout
//! in ticks of the heartbeat interval.
//!
//! Without an `etcd` binary on PATH the section is skipped with a loud message
//! (`scripts/system-etcd.sh` installs Debian's etcd-server).

use super::{ms, BenchOptions, Stats};
use anyhow::Context;
use electd::contract::algorithm::AlgorithmKind;
use electd::contract::rng::Rng;
use electd::http::client::http_request;
use electd::testkit::procs::{ClusterTiming, ProcCluster};
use electd::NodeId;
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Members per cluster.
pub const MEMBERS: usize = 5;
/// E, the election timeout both systems are given (ms).
pub const ELECTION_MS: u64 = 100;
/// The heartbeat both systems are given (ms).
pub const HEARTBEAT_MS: u64 = 10;

/// The heartbeat and election timeout E both systems run with (ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Interval {
    pub heartbeat_ms: u64,
    pub election_ms: u64,
}

/// This section's interval: heartbeat [`HEARTBEAT_MS`], E = [`ELECTION_MS`].
pub const SECTION: Interval = Interval {
    heartbeat_ms: HEARTBEAT_MS,
    election_ms: ELECTION_MS,
};

impl Interval {
    /// The electd cluster timing for it: `failure_timeout = E` for the detector's
    /// algorithms, Raft's election timeout E..2E as etcd draws it.
    pub fn electd_timing(&self) -> ClusterTiming {
        let (h, e) = (self.heartbeat_ms, self.election_ms);
        ClusterTiming {
            heartbeat_ms: h,
            failure_ms: e,
            answer_ms: h,
            coordinator_ms: e / 2,
            election_min_ms: e,
            election_max_ms: 2 * e,
            ..ClusterTiming::failover()
        }
    }
}

/// One system's rounds.
#[derive(Clone, Debug, Serialize)]
pub struct PollRun {
    /// `etcd` or the electd algorithm's name.
    pub system: String,
    pub samples_ms: Vec<f64>,
    pub stats: Stats,
    /// `stats` ÷ E.
    pub ratio: Stats,
    /// Rounds after which the survivors did not agree within 5 s.
    pub timeouts: usize,
    /// Extra election rounds (split votes) summed over the rounds, and per 1,000.
    pub split_votes: u64,
    pub split_votes_per_1000: f64,
    /// Samples kept out of `stats`, with their cause: below the detection limit
    /// ([`detection_limit_ms`], impossible for the system's detector) or no agreement.
    pub flagged: Vec<super::Flagged>,
    /// Rounds not run: the cluster did not hold one leader long enough to kill it
    /// (each is also in `flagged`, with no time).
    pub not_run: usize,
    /// Restarts after which the member did not report its boot's change to its
    /// election clock within the deadline (etcd: the tick advance, see [`Etcd`]).
    pub unsettled: usize,
    /// Restart to that report, over the restarts that reported it (ms, to the 5 ms
    /// step at which the log is read); empty for electd.
    pub settle: Stats,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct VersusEtcd {
    /// Why the section did not run, if it did not.
    pub skipped: Option<String>,
    pub etcd_version: String,
    pub rounds: usize,
    pub runs: Vec<PollRun>,
}

impl VersusEtcd {
    pub fn run(&self, system: &str) -> Option<&PollRun> {
        self.runs.iter().find(|r| r.system == system)
    }
}

/// What one member says: its own id, the leader it names, its term.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct View {
    pub(super) me: String,
    pub(super) leader: Option<String>,
    pub(super) term: u64,
}

/// A cluster the driver can poll, kill and restart.
pub(super) trait Polled {
    fn members(&self) -> usize;
    fn view(&self, i: usize) -> Option<View>;
    fn kill(&mut self, i: usize);
    fn restart(&mut self, i: usize) -> anyhow::Result<()>;
    /// Wait, at most until `deadline`, until restarted member `i` has done what its
    /// boot does to its election clock; false if it did not report it in time, `None`
    /// when the system's boot does nothing to it (electd).
    fn settled(&mut self, _i: usize, _deadline: Instant) -> Option<bool> {
        None
    }
    /// What the logs of `members` say happened to their election clocks from two
    /// heartbeats before the kill at `kill_unix_ms` to `until_unix_ms` (for a failover
    /// faster than the detector allows), each with its time from the kill.
    fn evidence(&self, _members: &[usize], _kill_unix_ms: u64, _until_unix_ms: u64) -> Vec<String> {
        Vec::new()
    }
    /// When the last of `members` logged that it follows `leader` (its member id), by
    /// its own clock (Unix ms), at or after `from_unix_ms`; `None` when a member did
    /// not log it or the system keeps no such log.
    fn adopted_unix_ms(
        &self,
        _members: &[usize],
        _leader: &str,
        _from_unix_ms: u64,
    ) -> Option<u64> {
        None
    }
}

/// How [`measure`] times the end of a failover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// The poll at which every survivor named the new leader (this section: one driver
    /// for both systems).
    Polls,
    /// The survivors' own log stamps ([`Polled::adopted_unix_ms`]), falling back to
    /// the poll where a stamp is missing: on a busy machine the polls wait for a core.
    Logs,
}

/// Every member of `of` answers and names the same leader, which names itself.
fn agreement(c: &dyn Polled, of: &[usize]) -> Option<(usize, u64)> {
    let views: Vec<View> = of.iter().map(|&i| c.view(i)).collect::<Option<_>>()?;
    let leader = views.first()?.leader.clone()?;
    if views.iter().any(|v| v.leader.as_ref() != Some(&leader)) {
        return None;
    }
    let at = of
        .iter()
        .zip(&views)
        .find(|(_, v)| v.me == leader)
        .map(|(&i, _)| i)?;
    Some((at, views.iter().map(|v| v.term).max().unwrap_or(0)))
}

fn wait_agreement(c: &dyn Polled, of: &[usize], deadline: Instant) -> Option<(usize, u64)> {
    loop {
        if let Some(a) = agreement(c, of) {
            return Some(a);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The least time from a SIGKILL of the leader to a new leader that `system` can take,
/// and why. electd's detectors run in continuous time: a follower that heard the last
/// heartbeat (at most one interval before the kill) waits at least E from it, so E −
/// heartbeat. etcd counts its election timeout in ticks of the heartbeat interval: a
/// heartbeat zeroes the elapsed ticks, and a follower campaigns once they reach its
/// randomized timeout (at least E / tick of them), so the first tick may come just after
/// the heartbeat and the follower campaigns E − tick after it: E − 2 × heartbeat after
/// the kill.
pub fn detection_limit_ms(system: &str, iv: Interval) -> (f64, &'static str) {
    let (e, h) = (iv.election_ms, iv.heartbeat_ms);
    if system == "etcd" {
        (
            e.saturating_sub(2 * h) as f64,
            "E − 2 × heartbeat: etcd counts E in ticks of the heartbeat interval from the first \
             tick after the last heartbeat",
        )
    } else {
        (
            e.saturating_sub(h) as f64,
            "E − heartbeat: the last heartbeat left at most one interval before the kill",
        )
    }
}

pub(super) fn measure(
    system: &str,
    c: &mut dyn Polled,
    iv: Interval,
    rounds: usize,
    rng: &mut Rng,
    log: &dyn Fn(&str),
    clock: Clock,
) -> anyhow::Result<PollRun> {
    let all: Vec<usize> = (0..c.members()).collect();
    let hb = Duration::from_millis(iv.heartbeat_ms);
    let (limit_ms, why) = detection_limit_ms(system, iv);
    let (mut samples, mut below) = (Vec::new(), Vec::new());
    let (mut timeouts, mut split_votes, mut done, mut unsettled) = (0, 0u64, 0, 0);
    let mut not_run = 0;
    let mut settle_ms = Vec::new();
    let mut attempts = 0;
    while done < rounds {
        attempts += 1;
        if attempts > rounds * 3 {
            // A cluster that will not hold one leader for a few heartbeats (a busy
            // machine, etcd's leader changes under the detect section's load) ends its
            // own run, not the bench's: the rounds not run are flagged with the cause.
            log(&format!(
                "    {system}: no stable leader to kill after {} tries; {} of {rounds} rounds \
                 not run",
                attempts - 1,
                rounds - done
            ));
            not_run = rounds - done;
            below.extend((done..rounds).map(|_| super::Flagged {
                ms: None,
                cause: format!(
                    "not run: the cluster did not hold one leader for 3 heartbeats before the \
                     round ({} tries for {rounds} rounds)",
                    attempts - 1
                ),
            }));
            break;
        }
        let Some((leader, _)) = wait_agreement(c, &all, Instant::now() + Duration::from_secs(15))
        else {
            continue;
        };
        std::thread::sleep(3 * hb + rng.duration(Duration::ZERO, hb));
        let Some((again, term0)) = agreement(c, &all) else {
            continue;
        };
        if again != leader {
            continue;
        }
        let survivors: Vec<usize> = all.iter().copied().filter(|&i| i != leader).collect();
        let t0 = Instant::now();
        let t0_unix_ms = super::unix_us() / 1000;
        c.kill(leader);
        let deadline = t0 + Duration::from_secs(5);
        // The killed member is not among the survivors, so an agreement among them
        // is on a new leader.
        let outcome = loop {
            match agreement(c, &survivors) {
                Some((at, term)) => {
                    let polled = t0.elapsed();
                    let stamped = (clock == Clock::Logs)
                        .then(|| c.view(at))
                        .flatten()
                        .and_then(|v| c.adopted_unix_ms(&survivors, &v.me, t0_unix_ms))
                        .map(|end| Duration::from_millis(end.saturating_sub(t0_unix_ms)));
                    break Some((stamped.unwrap_or(polled), term));
                }
                None if Instant::now() > deadline => break None,
                _ => std::thread::sleep(Duration::from_micros(500)),
            }
        };
        done += 1;
        match outcome {
            Some((took, term)) => {
                let t = ms(took);
                if t < limit_ms {
                    let seen = c.evidence(&survivors, t0_unix_ms, t0_unix_ms + t.ceil() as u64);
                    let found = if seen.is_empty() {
                        "nothing in the members' logs explains it: unexplained".to_string()
                    } else {
                        format!("the members' logs: {}", seen.join("; "))
                    };
                    below.push(super::Flagged {
                        ms: Some(t),
                        cause: format!(
                            "below the detection limit {limit_ms:.0} ms ({why}) although every \
                             member named leader {leader} at term {term0} just before the kill \
                             (agreed at term {term}); {found}"
                        ),
                    });
                } else {
                    samples.push(t);
                }
                split_votes += term.saturating_sub(term0).saturating_sub(1);
            }
            None => {
                timeouts += 1;
                below.push(super::Flagged {
                    ms: None,
                    cause: "no agreement among the survivors within 5 s".into(),
                });
            }
        }
        c.restart(leader)?;
        let restarted = Instant::now();
        match c.settled(leader, restarted + SETTLE_WITHIN) {
            Some(true) => settle_ms.push(ms(restarted.elapsed())),
            Some(false) => unsettled += 1,
            None => {}
        }
        if done % 5 == 0 {
            log(&format!("    {system}: {done}/{rounds} rounds"));
        }
    }
    let stats = Stats::of(&samples);
    Ok(PollRun {
        system: system.to_string(),
        ratio: stats.scaled(iv.election_ms as f64),
        stats,
        samples_ms: samples,
        timeouts,
        split_votes,
        split_votes_per_1000: split_votes as f64 * 1000.0 / rounds.max(1) as f64,
        flagged: below,
        not_run,
        unsettled,
        settle: Stats::of(&settle_ms),
    })
}

/// How long a restarted member may take to report its boot (etcd waits up to 5 s for
/// its peer connections before it gives the tick advance up).
pub const SETTLE_WITHIN: Duration = Duration::from_secs(6);

/// A zap timestamp as etcd writes it (`2026-11-24T16:07:23.294Z`) in Unix milliseconds.
fn parse_zap_ts(ts: &str) -> Option<u64> {
    let b = ts.as_bytes();
    // Exactly `YYYY-MM-DDThh:mm:ss.mmm` and a UTC zone (`Z` or `+0000`).
    let shape = b"dddd-dd-ddTdd:dd:dd.ddd";
    let utc = matches!(ts.get(23..), Some("Z" | "+0000" | "+00:00"));
    if !utc
        || b.len() < shape.len()
        || !shape.iter().zip(b).all(|(&want, &c)| match want {
            b'd' => c.is_ascii_digit(),
            _ => c == want,
        })
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| ts.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss, ms) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(((days * 24 + hh) * 60 + mm) * 60 + ss)
        .ok()?
        .checked_mul(1000)?
        .checked_add(ms as u64)
}

/// The first time (Unix ms) at or after `from_unix_ms` that an etcd member's zap log
/// says it follows `leader_hex` ("raft.node: … elected leader L at term T", or
/// "changed leader from K to L at term T").
fn adoption_in_log(text: &str, leader_hex: &str, from_unix_ms: u64) -> Option<u64> {
    let elected = format!("elected leader {leader_hex} at term");
    let changed = format!(" to {leader_hex} at term");
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|v| {
            let msg = v["msg"].as_str()?;
            let ours = msg.starts_with("raft.node: ")
                && (msg.contains(&elected)
                    || (msg.contains("changed leader from") && msg.contains(&changed)));
            let at = parse_zap_ts(v["ts"].as_str()?)?;
            (ours && at >= from_unix_ms).then_some(at)
        })
        .min()
}

/// What etcd logs about a member's election clock and campaigns (zap, info level).
const ELECTION_CLOCK_LINES: [&str; 7] = [
    "fast-forwarding election ticks",
    "is starting a new election",
    "became candidate",
    "became pre-candidate",
    "A tick missed to fire",
    "failed to send out heartbeat on time",
    "slow fdatasync",
];

/// A five-member etcd cluster on 127.0.0.1; every process is killed by PID on drop.
pub(super) struct Etcd {
    exe: PathBuf,
    iv: Interval,
    dir: PathBuf,
    initial: String,
    peers: Vec<SocketAddr>,
    clients: Vec<SocketAddr>,
    children: Vec<Option<Child>>,
    /// Members started in `SCHED_RR` at this priority (`bench --detect-realtime`);
    /// `None`: the normal class.
    realtime: Option<u8>,
}

fn free_port() -> std::io::Result<SocketAddr> {
    std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()
}

impl Etcd {
    pub(super) fn new(exe: PathBuf, tag: &str, iv: Interval) -> anyhow::Result<Etcd> {
        Etcd::new_in_class(exe, tag, iv, None)
    }

    /// [`Etcd::new`], every member in `SCHED_RR` at `realtime` when it is set (all its
    /// threads: the class is set before the exec and inherited).
    pub(super) fn new_in_class(
        exe: PathBuf,
        tag: &str,
        iv: Interval,
        realtime: Option<u8>,
    ) -> anyhow::Result<Etcd> {
        let dir =
            std::env::temp_dir().join(format!("electd-bench-etcd-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        let mut peers = Vec::new();
        let mut clients = Vec::new();
        for _ in 0..MEMBERS {
            peers.push(free_port()?);
            clients.push(free_port()?);
        }
        let initial = peers
            .iter()
            .enumerate()
            .map(|(i, p)| format!("m{i}=http://{p}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut e = Etcd {
            exe,
            iv,
            dir,
            initial,
            peers,
            clients,
            children: (0..MEMBERS).map(|_| None).collect(),
            realtime,
        };
        for i in 0..MEMBERS {
            e.start(i)?;
        }
        Ok(e)
    }

    fn start(&mut self, i: usize) -> anyhow::Result<()> {
        let log = std::fs::File::create(self.dir.join(format!("m{i}.log")))?;
        let (p, c) = (self.peers[i], self.clients[i]);
        let mut cmd = Command::new(&self.exe);
        if let Some(prio) = self.realtime {
            use std::os::unix::process::CommandExt;
            // SAFETY: sched_setscheduler(2) is async-signal-safe; it runs in the child
            // between fork and exec, on the child alone.
            unsafe {
                cmd.pre_exec(move || {
                    let param = libc::sched_param {
                        sched_priority: i32::from(prio),
                    };
                    if libc::sched_setscheduler(0, libc::SCHED_RR, &param) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let child = cmd
            .args(["--name", &format!("m{i}")])
            .arg("--data-dir")
            .arg(self.dir.join(format!("m{i}.etcd")))
            .args(["--listen-peer-urls", &format!("http://{p}")])
            .args(["--initial-advertise-peer-urls", &format!("http://{p}")])
            .args(["--listen-client-urls", &format!("http://{c}")])
            .args(["--advertise-client-urls", &format!("http://{c}")])
            .args(["--initial-cluster", &self.initial])
            .args(["--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", "electd-bench"])
            .args(["--heartbeat-interval", &self.iv.heartbeat_ms.to_string()])
            .args(["--election-timeout", &self.iv.election_ms.to_string()])
            // Info level, as JSON: the boot's tick advance and every campaign are
            // logged with millisecond timestamps (see `settled` and `evidence`).
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            // zap writes local time with its offset; UTC is what `parse_zap_ts` reads.
            .env("TZ", "UTC")
            .args(["--log-level", "info"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawn {}", self.exe.display()))?;
        self.children[i] = Some(child);
        Ok(())
    }
}

impl Polled for Etcd {
    fn members(&self) -> usize {
        MEMBERS
    }
    fn view(&self, i: usize) -> Option<View> {
        self.children[i].as_ref()?;
        let (code, body) = http_request(self.clients[i], "POST", "/v3/maintenance/status", None)?;
        if code != 200 {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        let text = |x: &serde_json::Value| x.as_str().map(str::to_string);
        let me = text(&v["header"]["member_id"])?;
        let leader = text(&v["leader"]).filter(|l| l != "0");
        let term = text(&v["raftTerm"])?.parse().ok()?;
        Some(View { me, leader, term })
    }
    fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.children[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    fn restart(&mut self, i: usize) -> anyhow::Result<()> {
        self.start(i)
    }
    /// A restarted etcd member fast-forwards its election clock by E − 2 ticks once its
    /// peer connections are up (`--initial-election-tick-advance`, on by default), and
    /// only the leader's next heartbeat zeroes it again. A leader killed around that
    /// moment leaves a member that campaigns after as little as two ticks: a failover
    /// below what the detector allows, measuring a boot instead of a crash. So the next
    /// round waits until the member's log (truncated at each start) reports the advance.
    fn settled(&mut self, i: usize, deadline: Instant) -> Option<bool> {
        let log = self.dir.join(format!("m{i}.log"));
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains(ELECTION_CLOCK_LINES[0]) {
                return Some(true);
            }
            if Instant::now() >= deadline {
                return Some(false);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    fn adopted_unix_ms(&self, members: &[usize], leader: &str, from_unix_ms: u64) -> Option<u64> {
        // The status API names members in decimal, raft's log lines in hex.
        let hex = format!("{:x}", leader.parse::<u64>().ok()?);
        let mut last = None;
        for &i in members {
            let text = std::fs::read_to_string(self.dir.join(format!("m{i}.log"))).ok()?;
            let at = adoption_in_log(&text, &hex, from_unix_ms)?;
            last = Some(last.map_or(at, |l: u64| l.max(at)));
        }
        last
    }
    fn evidence(&self, members: &[usize], kill_unix_ms: u64, until_unix_ms: u64) -> Vec<String> {
        // From two heartbeats before the kill: what happened to a clock earlier was
        // undone by the leader's heartbeats since (zap's stamps have 1 ms grain).
        let from_unix_ms = kill_unix_ms.saturating_sub(2 * self.iv.heartbeat_ms);
        let mut seen = Vec::new();
        for &i in members {
            let text =
                std::fs::read_to_string(self.dir.join(format!("m{i}.log"))).unwrap_or_default();
            for line in text.lines() {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                let (Some(ts), Some(msg)) = (v["ts"].as_str(), v["msg"].as_str()) else {
                    continue;
                };
                let Some(at) = parse_zap_ts(ts) else { continue };
                if at < from_unix_ms
                    || at > until_unix_ms
                    || !ELECTION_CLOCK_LINES.iter().any(|l| msg.contains(l))
                {
                    continue;
                }
                let rel = at as i64 - kill_unix_ms as i64;
                seen.push(format!("m{i} at {rel:+} ms: {msg}"));
            }
        }
        seen
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        for i in 0..MEMBERS {
            self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An electd cluster of one algorithm, seen through `/status`.
pub(super) struct Electd {
    pub(super) cluster: ProcCluster,
    pub(super) kind: AlgorithmKind,
}

impl Electd {
    fn id(&self, i: usize) -> NodeId {
        i as NodeId + 1
    }
}

impl Polled for Electd {
    fn members(&self) -> usize {
        MEMBERS
    }
    fn view(&self, i: usize) -> Option<View> {
        let id = self.id(i);
        if !self.cluster.is_running(id) {
            return None;
        }
        let body = self.cluster.get(id, "/status")?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        let group = v["groups"]
            .as_array()?
            .iter()
            .find(|g| g["algorithm"] == self.kind.as_str())?;
        Some(View {
            me: id.to_string(),
            leader: group["leader"].as_u64().map(|l| l.to_string()),
            term: group["term"].as_u64().unwrap_or(0),
        })
    }
    fn kill(&mut self, i: usize) {
        let id = self.id(i);
        self.cluster.kill(id);
    }
    fn restart(&mut self, i: usize) -> anyhow::Result<()> {
        let id = self.id(i);
        self.cluster.start(id)
    }
}

/// `etcd` on PATH (or `ELECTD_BENCH_ETCD`), and its version line.
pub(super) fn find_etcd() -> Option<(PathBuf, String)> {
    let exe = std::env::var_os("ELECTD_BENCH_ETCD")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("etcd"))
                    .find(|f| f.is_file())
            })
        })?;
    let out = Command::new(&exe).arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("etcd")
        .trim()
        .replace("etcd Version: ", "etcd ");
    Some((exe, version))
}

/// Rounds per system.
pub fn rounds(quick: bool) -> usize {
    if quick {
        3
    } else {
        20
    }
}

/// The electd algorithms measured beside etcd: Raft (the like-for-like comparison)
/// and, for context, the Bully and ring algorithms.
pub fn electd_systems() -> [AlgorithmKind; 3] {
    [
        AlgorithmKind::Raft,
        AlgorithmKind::Bully,
        AlgorithmKind::Ring,
    ]
}

pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> anyhow::Result<VersusEtcd> {
    let rounds = rounds(opts.quick);
    let Some((etcd_exe, etcd_version)) = find_etcd() else {
        let why = "no etcd binary on PATH (install Debian's etcd-server, or set \
                   ELECTD_BENCH_ETCD); the etcd comparison was NOT measured"
            .to_string();
        log(&format!("!!! SKIPPING: {why}"));
        return Ok(VersusEtcd {
            skipped: Some(why),
            rounds,
            ..VersusEtcd::default()
        });
    };
    let mut rng = Rng::new(opts.seed ^ 0xE7CD);
    let mut runs = Vec::new();
    {
        log(&format!("  etcd ({etcd_version}), {rounds} rounds"));
        let mut e = Etcd::new(etcd_exe, "poll", SECTION)?;
        runs.push(measure(
            "etcd",
            &mut e,
            SECTION,
            rounds,
            &mut rng,
            log,
            Clock::Polls,
        )?);
    }
    let timing = SECTION.electd_timing();
    for kind in electd_systems() {
        log(&format!("  electd {kind}, {rounds} rounds"));
        let mut cluster = ProcCluster::new(
            &opts.exe,
            &std::env::temp_dir(),
            &format!("versus-etcd-{kind}"),
            MEMBERS as NodeId,
            &[kind],
            &timing,
        )?;
        cluster.start_all()?;
        let mut c = Electd { cluster, kind };
        runs.push(measure(
            kind.as_str(),
            &mut c,
            SECTION,
            rounds,
            &mut rng,
            log,
            Clock::Polls,
        )?);
    }
    for r in &runs {
        log(&format!(
            "  {:<8} median {:.2}×E p90 {:.2}×E max {:.2}×E timeouts {} split votes {} flagged {}",
            r.system,
            r.ratio.median,
            r.ratio.p90,
            r.ratio.max,
            r.timeouts,
            r.split_votes,
            r.flagged.len()
        ));
    }
    Ok(VersusEtcd {
        skipped: None,
        etcd_version,
        rounds,
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted cluster: each member's view is set by the test.
    struct Script(Vec<Option<View>>);

    impl Polled for Script {
        fn members(&self) -> usize {
            self.0.len()
        }
        fn view(&self, i: usize) -> Option<View> {
            self.0[i].clone()
        }
        fn kill(&mut self, i: usize) {
            self.0[i] = None;
        }
        fn restart(&mut self, _: usize) -> anyhow::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn zap_timestamps_read_as_unix_milliseconds() {
        // 2026-11-24T16:07:23.294Z: `date -u -d 2026-11-24T16:07:23Z +%s` = 1795536443.
        assert_eq!(
            parse_zap_ts("2026-11-24T16:07:23.294Z"),
            Some(1_795_536_443_294)
        );
        assert_eq!(parse_zap_ts("1970-01-01T00:00:00.000Z"), Some(0));
        // A leap day, and the first day of a year after one.
        assert_eq!(
            parse_zap_ts("2024-02-29T00:00:00.000Z"),
            Some(1_709_164_800_000)
        );
        assert_eq!(
            parse_zap_ts("2025-01-01T00:00:00.001Z"),
            Some(1_735_689_600_001)
        );
        assert_eq!(
            parse_zap_ts("2026-11-24T16:07:23.294+0000"),
            Some(1_795_536_443_294)
        );
        for bad in [
            "",
            "2026-11-24",
            "2026-13-01T00:00:00.000Z",
            "2026-11-24 16:07:23.294Z",
            "yyyy-mm-ddThh:mm:ss.mmmZ",
            "2026-11-24T-1:07:23.294Z",
            "2026-+1-24T16:07:23.294Z",
            "2026-11-24T16:07:23.294",
            "2026-11-25T02:51:48.198+0900",
        ] {
            assert_eq!(parse_zap_ts(bad), None, "{bad:?}");
        }
    }

    /// One line of etcd's zap log at info level.
    fn zap_line(ts: &str, msg: &str) -> String {
        format!("{{\"level\":\"info\",\"ts\":\"{ts}\",\"caller\":\"raft/raft.go:1\",\"msg\":\"{msg}\"}}\n")
    }

    #[test]
    fn evidence_lists_the_election_clock_lines_in_the_window() {
        let dir = std::env::temp_dir().join(format!("electd-etcd-evidence-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let line = zap_line;
        let log = [
            line(
                "2026-11-24T16:07:23.100Z",
                "initialized peer connections; fast-forwarding election ticks",
            ),
            line(
                "2026-11-24T16:07:23.210Z",
                "initialized peer connections; fast-forwarding election ticks",
            ),
            line(
                "2026-11-24T16:07:23.288Z",
                "initialized peer connections; fast-forwarding election ticks",
            ),
            "not json at all\n".to_string(),
            line("2026-11-24T16:07:23.250Z", "a1 received MsgHeartbeat"),
            line(
                "2026-11-24T16:07:23.339Z",
                "a1 is starting a new election at term 18",
            ),
            line("2026-11-24T16:07:25.000Z", "a1 became candidate at term 19"),
        ]
        .concat();
        std::fs::write(dir.join("m2.log"), log).expect("log");
        let e = Etcd {
            exe: PathBuf::from("etcd"),
            iv: SECTION,
            dir: dir.clone(),
            initial: String::new(),
            peers: Vec::new(),
            clients: Vec::new(),
            children: (0..MEMBERS).map(|_| None).collect(),
            realtime: None,
        };
        // The kill at .300: the window runs from two heartbeats (20 ms) before it to
        // 200 ms after it (the advance at .210 was undone by the heartbeats since); m1 has
        // no log, a line that is not JSON or not about the clock is skipped.
        let kill = parse_zap_ts("2026-11-24T16:07:23.300Z").expect("ts");
        let seen = e.evidence(&[1, 2], kill, kill + 200);
        assert_eq!(
            seen,
            vec![
                "m2 at -12 ms: initialized peer connections; fast-forwarding election ticks"
                    .to_string(),
                "m2 at +39 ms: a1 is starting a new election at term 18".to_string(),
            ]
        );
    }

    #[test]
    fn a_members_adoption_is_its_first_log_line_naming_the_leader_after_the_kill() {
        let line = zap_line;
        let log = [
            line(
                "2026-11-24T16:07:23.100Z",
                "raft.node: a1 elected leader b2 at term 3",
            ),
            line(
                "2026-11-24T16:07:23.350Z",
                "raft.node: a1 lost leader b2 at term 4",
            ),
            line(
                "2026-11-24T16:07:23.380Z",
                "raft.node: a1 elected leader c3f at term 4",
            ),
            line(
                "2026-11-24T16:07:23.390Z",
                "raft.node: a1 elected leader c3 at term 4",
            ),
            line(
                "2026-11-24T16:07:23.500Z",
                "raft.node: a1 changed leader from c3 to b2 at term 5",
            ),
        ]
        .concat();
        let kill = parse_zap_ts("2026-11-24T16:07:23.300Z").expect("ts");
        // c3f is another member: its line is not c3's.
        assert_eq!(adoption_in_log(&log, "c3", kill), Some(kill + 90));
        // Before the kill b2 was adopted too; only the change after it counts.
        assert_eq!(adoption_in_log(&log, "b2", kill), Some(kill + 200));
        assert_eq!(adoption_in_log(&log, "d4", kill), None);
    }

    fn v(me: &str, leader: Option<&str>, term: u64) -> Option<View> {
        Some(View {
            me: me.into(),
            leader: leader.map(str::to_string),
            term,
        })
    }

    /// A cluster whose members agree at every poll, on a leader that changes from one
    /// poll to the next: never the same leader twice in a row, so never one to kill.
    struct Flapping(std::cell::Cell<usize>, usize);

    impl Polled for Flapping {
        fn members(&self) -> usize {
            self.1
        }
        fn view(&self, i: usize) -> Option<View> {
            // Every poll of the whole cluster moves the leader on by one member.
            let polls = self.0.get();
            self.0.set(polls + 1);
            let leader = (polls / self.1 + 1) % self.1;
            Some(View {
                me: i.to_string(),
                leader: Some(leader.to_string()),
                term: polls as u64,
            })
        }
        fn kill(&mut self, _: usize) {
            panic!("a member was killed though no leader held");
        }
        fn restart(&mut self, _: usize) -> anyhow::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_cluster_without_a_stable_leader_ends_its_own_run_not_the_bench() {
        let mut c = Flapping(std::cell::Cell::new(0), 3);
        let rounds = 2;
        let lines = std::cell::RefCell::new(Vec::new());
        let r = measure(
            "flapping",
            &mut c,
            Interval {
                heartbeat_ms: 1,
                election_ms: 5,
            },
            rounds,
            &mut Rng::new(7),
            &|l: &str| lines.borrow_mut().push(l.to_string()),
            Clock::Polls,
        )
        .expect("a run, not an error");
        assert_eq!(r.not_run, rounds);
        assert_eq!(r.stats.n, 0);
        assert_eq!(r.timeouts, 0);
        assert_eq!(r.flagged.len(), rounds, "{:?}", r.flagged);
        assert!(r
            .flagged
            .iter()
            .all(|f| f.ms.is_none() && f.cause.starts_with("not run")));
        assert!(
            lines
                .borrow()
                .iter()
                .any(|l| l.contains("2 of 2 rounds not run")),
            "{:?}",
            lines.borrow()
        );
    }

    #[test]
    fn agreement_needs_one_leader_that_names_itself() {
        let c = Script(vec![
            v("a", Some("c"), 3),
            v("b", Some("c"), 3),
            v("c", Some("c"), 4),
        ]);
        assert_eq!(agreement(&c, &[0, 1, 2]), Some((2, 4)));
        // The named leader is not among the members asked: no agreement.
        assert_eq!(agreement(&c, &[0, 1]), None);
        let split = Script(vec![
            v("a", Some("c"), 3),
            v("b", Some("a"), 3),
            v("c", Some("c"), 3),
        ]);
        assert_eq!(agreement(&split, &[0, 1, 2]), None);
        let silent = Script(vec![v("a", Some("c"), 3), None, v("c", Some("c"), 3)]);
        assert_eq!(agreement(&silent, &[0, 1, 2]), None);
        let nobody = Script(vec![v("a", None, 3), v("b", None, 3)]);
        assert_eq!(agreement(&nobody, &[0, 1]), None);
    }
}
