//! `electd bench --only keepalived`: a virtual IP moved by keepalived (VRRPv3) beside
//! one moved by electd itself (`[[vip]]`: netlink and a packet socket, in-process, as
//! keepalived does) and one moved by electd with the hook of docs/keepalived.md
//! (`deploy/hooks/electd-vip`: processes), in network namespaces, measured by one
//! client.
//!
//! # Setup
//! Five hosts (`<p>-1..5`, NET.i/24 on eth0) and a client (`<p>-c`, NET.200) on a
//! bridge in a namespace of its own (`<p>-sw`); the virtual IP is NET.100/24. The
//! systems run one after the other on the same namespaces, at the same interval:
//! keepalived `advert_int 0.01` (10 ms, the least VRRPv3 encodes: centiseconds),
//! priority 100 + 10·i (host 5 is the master, preempting); electd Bully, heartbeat
//! 10 ms, `failure_timeout` = 3 heartbeats, with the settings docs/keepalived.md
//! recommends ([`ELECTD_ENV`]): the highest id (host 5) leads.
//!
//! # What is recorded, from this process
//! - a pinger in the client's namespace (a thread that entered it with `setns`) sends
//!   an ICMP echo request to the VIP every millisecond through the kernel (so the
//!   client's ARP cache behaves as a real client's), and a packet socket records every
//!   echo reply with its time and the MAC that sent it, and every gratuitous ARP for
//!   the VIP;
//! - one thread per host polls (every millisecond, `getifaddrs` inside the host's
//!   namespace) whether the host holds the VIP, and records each change.
//!
//! # A round
//! Wait until the VIP is on host 5 only and the client has had replies from host 5's
//! MAC for 200 ms, then a delay within one interval that is the same for every system
//! and stratified over the rounds ([`kill_phases`]); apply the fault to host 5 at t0 (`sigkill` of the daemon —
//! keepalived's VRRP child and its parent —, `sigstop` of it, `link`: its bridge port
//! down, `partition`: hosts 4 and 5 moved to a second bridge, 3+2 with the client on
//! the side of three); hold it [`HOLD`]; restore it at t1 (restart, SIGCONT, port up,
//! heal) and wait until settled again (at most [`SETTLE`]). Per round:
//! - `takeover`: t0 → the client's first reply from another host's MAC;
//! - `outage`: the longest stretch in [t0, t1] without a reply at the client;
//! - `dual`: the time in [t0, t1] with the VIP on two or more hosts;
//! - after the return, in [t1, settled]: the time with the VIP on two or more hosts,
//!   the longest stretch without a reply, and the gratuitous ARPs seen.
//!
//! A SIGKILLed or stopped daemon leaves the address on its host in both systems (the
//! kernel keeps answering there): `dual` is then the fault's whole hold for both, and
//! `takeover` is the figure of the row.
//!
//! Needs root (namespaces, raw sockets) and Debian's `keepalived`: without either the
//! section is skipped with a loud message (`scripts/system-keepalived.sh` installs it).
//! It is never part of the default run: only `--only keepalived` runs it. SIGINT or
//! SIGTERM ends it after the current round, with the daemons stopped and the
//! namespaces deleted.
//!
//! For debugging: `KA_SYSTEMS=electd` (or `keepalived`, `electd-hook`; a comma-separated
//! list) runs those systems only,
//! `KA_NODE_LOG=info` sets the electd nodes' log filter (default `warn`), `KEEP=1` keeps
//! the work directory (configurations, the daemons' logs).

use super::{BenchOptions, Stats};
use anyhow::Context;
use serde::Serialize;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod analyse;
mod hosts;
mod record;
mod report;

use analyse::*;
use hosts::*;
use record::*;
pub use report::{markdown, plot, targets};

/// Hosts on the bridge.
pub const HOSTS: usize = 5;
/// VRRP advertisement interval = electd heartbeat (ms).
pub const ADVERT_MS: u64 = 10;
/// How long a fault is held before it is restored.
pub const HOLD: Duration = Duration::from_millis(1000);
/// The most a return may take to settle before the round is counted unsettled.
pub const SETTLE: Duration = Duration::from_secs(8);
/// The faults, in order.
pub const FAULTS: [&str; 4] = ["sigkill", "sigstop", "link", "partition"];
/// The hook shipped beside the guide, run as it is (its settings come from the
/// environment).
pub const HOOK: &str = include_str!("../../deploy/hooks/electd-vip");
/// electd's settings in this bench (environment of every node), as docs/keepalived.md
/// recommends them for a VIP: heartbeat = advert_int, failure_timeout = 3 heartbeats,
/// Bully's answer timeout short (it is added to a failover when the leader's host is
/// cut off), and a quorum lease so that a leader cut off from the majority lets go.
pub const ELECTD_ENV: [(&str, &str); 6] = [
    ("ELECTD_TIMING_HEARTBEAT", "10ms"),
    ("ELECTD_TIMING_FAILURE_TIMEOUT", "30ms"),
    ("ELECTD_TIMING_ANSWER_TIMEOUT", "3ms"),
    ("ELECTD_TIMING_COORDINATOR_TIMEOUT", "10ms"),
    ("ELECTD_TRANSPORT_RETRANSMIT", "2ms"),
    ("ELECTD_LEASE_REQUIRE_QUORUM", "true"),
];

/// One round's figures (ms).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Round {
    pub takeover_ms: Option<f64>,
    /// Fault → the VIP appears on a host that did not hold it.
    pub added_ms: Option<f64>,
    /// Fault → the first gratuitous ARP for the VIP at the client.
    pub garp_ms: Option<f64>,
    pub outage_ms: f64,
    pub dual_ms: f64,
    pub return_dual_ms: f64,
    pub return_outage_ms: f64,
    pub return_garps: usize,
    pub settled: bool,
}

/// One system under one fault.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    pub system: String,
    pub fault: String,
    pub rounds: Vec<Round>,
    pub takeover: Stats,
    pub added: Stats,
    pub garp: Stats,
    /// Rounds in which no other host answered during the hold.
    pub no_takeover: usize,
    pub outage: Stats,
    pub dual: Stats,
    pub return_dual: Stats,
    pub return_outage: Stats,
    pub return_garps: Stats,
    pub unsettled: usize,
    /// Rounds not made: the VIP was not on the top host alone beforehand.
    pub not_started: usize,
}

impl Row {
    fn new(system: &str, fault: &str, rounds: Vec<Round>) -> Row {
        let col = |f: fn(&Round) -> f64| Stats::of(&rounds.iter().map(f).collect::<Vec<_>>());
        Row {
            system: system.into(),
            fault: fault.into(),
            takeover: Stats::of(
                &rounds
                    .iter()
                    .filter_map(|r| r.takeover_ms)
                    .collect::<Vec<_>>(),
            ),
            added: Stats::of(&rounds.iter().filter_map(|r| r.added_ms).collect::<Vec<_>>()),
            garp: Stats::of(&rounds.iter().filter_map(|r| r.garp_ms).collect::<Vec<_>>()),
            no_takeover: rounds.iter().filter(|r| r.takeover_ms.is_none()).count(),
            outage: col(|r| r.outage_ms),
            dual: col(|r| r.dual_ms),
            return_dual: col(|r| r.return_dual_ms),
            return_outage: col(|r| r.return_outage_ms),
            return_garps: col(|r| r.return_garps as f64),
            unsettled: rounds.iter().filter(|r| !r.settled).count(),
            not_started: 0,
            rounds,
        }
    }
}

/// The section's results.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VersusKeepalived {
    /// Why the section did not run, if it did not.
    pub skipped: Option<String>,
    pub keepalived_version: String,
    pub rounds: usize,
    pub hold_ms: u64,
    pub advert_ms: u64,
    pub electd_env: Vec<String>,
    /// 1-minute load average before and after the section (a loaded machine delays
    /// electd's hook processes far more than keepalived's in-process netlink calls).
    pub load: (f64, f64),
    pub rows: Vec<Row>,
}

impl VersusKeepalived {
    pub fn row(&self, system: &str, fault: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.system == system && r.fault == fault)
    }
}

// ---------------------------------------------------------------- recording

fn skipped(why: String, log: &dyn Fn(&str)) -> VersusKeepalived {
    let bar = "!".repeat(78);
    log(&bar);
    log(&format!("!!! keepalived section SKIPPED, NOT RUN: {why}"));
    log(&bar);
    VersusKeepalived {
        skipped: Some(why),
        ..Default::default()
    }
}

/// Run the section (see the module documentation).
pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> anyhow::Result<VersusKeepalived> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(skipped(
            "needs root (network namespaces, raw sockets): run `sudo electd bench --only keepalived` \
             or scripts/system-keepalived.sh"
                .into(),
            log,
        ));
    }
    let version = match Command::new("keepalived").arg("--version").output() {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stderr).to_string()
                + &String::from_utf8_lossy(&o.stdout);
            text.lines().next().unwrap_or("").trim().to_string()
        }
        Err(_) => {
            return Ok(skipped(
                "no `keepalived` on PATH (apt-get install keepalived; scripts/system-keepalived.sh does)"
                    .into(),
                log,
            ))
        }
    };
    let rounds = if opts.quick { 3 } else { 20 };
    let load_start = super::load_average();
    let pid = std::process::id();
    let work = std::env::temp_dir().join(format!("electd-bench-ka.{pid}"));
    std::fs::create_dir_all(&work)?;
    // SIGINT and SIGTERM stop the section after its cleanup (the namespaces outlive
    // a killed process): bench::stop. Declared before `b`, so that it lasts until `b`'s
    // drop has deleted them.
    let _graceful = super::stop::Graceful::begin();
    let mut b = Bench {
        p: format!("kad-b{}", pid % 100_000),
        net: format!("10.236.{}", pid % 250 + 1),
        work,
        exe: opts.exe.clone(),
        nses: Vec::new(),
        macs: [[0; 6]; HOSTS + 1],
        daemons: (0..=HOSTS).map(|_| None).collect(),
        rec: Arc::new(Recorder::default()),
        threads: Vec::new(),
    };
    b.setup()?;
    let mut rows = Vec::new();
    let only = std::env::var("KA_SYSTEMS").unwrap_or_default();
    for sys in [System::Keepalived, System::Electd, System::ElectdHook] {
        if !only.is_empty() && !only.split(',').any(|x| x == sys.name()) {
            continue;
        }
        log(&format!(
            "keepalived section: {} on {HOSTS} hosts",
            sys.name()
        ));
        for i in 1..=HOSTS {
            b.start(sys, i)?;
        }
        for (f, fault) in FAULTS.iter().copied().enumerate() {
            let mut rs = Vec::new();
            let mut not_started = 0;
            let phases = kill_phases(opts.seed, f, rounds);
            for (k, &phase) in phases.iter().enumerate() {
                // Interrupted: return, and `b`'s drop stops the daemons and deletes
                // the namespaces (a signal's default action would leave them).
                anyhow::ensure!(!super::stop::requested(), "keepalived section interrupted");
                let Some(r) = b.round(sys, fault, phase)? else {
                    not_started += 1;
                    log(&format!(
                        "  {} {fault} {}/{rounds}: NOT MADE, the VIP did not settle on host {HOSTS} \
                         alone within 10 s (the cluster flaps; logs: KEEP=1, {})",
                        sys.name(),
                        k + 1,
                        b.work.display()
                    ));
                    continue;
                };
                log(&format!(
                    "  {} {fault} {}/{rounds}: takeover {} (VIP added {}, first GARP {}), \
                     outage {:.1} ms, dual {:.1} ms; return: dual {:.1} ms, outage {:.1} ms, \
                     {} GARPs{}",
                    sys.name(),
                    k + 1,
                    opt_ms(r.takeover_ms),
                    opt_ms(r.added_ms),
                    opt_ms(r.garp_ms),
                    r.outage_ms,
                    r.dual_ms,
                    r.return_dual_ms,
                    r.return_outage_ms,
                    r.return_garps,
                    if r.settled { "" } else { ", NOT settled" }
                ));
                rs.push(r);
            }
            let mut row = Row::new(sys.name(), fault, rs);
            row.not_started = not_started;
            rows.push(row);
        }
        b.stop_all();
    }
    let dropped = b.rec.dropped.load(Ordering::Relaxed);
    if dropped > 0 {
        log(&format!(
            "keepalived section: {dropped} short frames dropped"
        ));
    }
    drop(b);
    Ok(VersusKeepalived {
        skipped: None,
        keepalived_version: version,
        rounds,
        hold_ms: HOLD.as_millis() as u64,
        advert_ms: ADVERT_MS,
        electd_env: ELECTD_ENV.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        load: (load_start, super::load_average()),
        rows,
    })
}

/// The delays (µs) between the settled moment and the fault of each round of fault
/// number `fault`: one per round, stratified over one interval (round k's in the k-th
/// of `rounds` equal slices of [0, ADVERT_MS), drawn within it) and the same for every
/// system. A daemon's beats start when it takes over, and a round starts a fixed time
/// after the client sees the takeover, so this delay decides where in the interval the
/// fault strikes: drawn independently per system, the phases of 20 rounds put one
/// system's median a millisecond or two off the other's by luck (measured: the same
/// rounds of two runs with one seed took 25 and 33 ms alike); drawn like this both
/// systems meet the same phases, spread evenly.
pub(crate) fn kill_phases(seed: u64, fault: usize, rounds: usize) -> Vec<u64> {
    let mut rng = electd::contract::rng::Rng::new(
        seed ^ (fault as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    let slice = ADVERT_MS * 1000 / rounds.max(1) as u64;
    (0..rounds as u64)
        .map(|k| k * slice + rng.next_u64() % slice.max(1))
        .collect()
}

fn opt_ms(x: Option<f64>) -> String {
    x.map(|x| format!("{x:.1} ms"))
        .unwrap_or_else(|| "none".into())
}

// ---------------------------------------------------------------- report

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn figures_of_a_round_come_from_the_events() {
        let t0 = Instant::now();
        let old = [1u8; 6];
        let new = [2u8; 6];
        let mut held = [false; HOSTS + 1];
        held[5] = true;
        // Replies from the old host up to 5 ms, silence, the new host from 40 ms;
        // the new host adds the VIP at 35 ms; after the restore at 100 ms the old host
        // adds it again at 110 ms and the new one lets go at 125 ms.
        let mut evs = Vec::new();
        for ms in 1..=5 {
            evs.push(Ev::Reply {
                t: at(t0, ms),
                mac: old,
            });
        }
        evs.push(Ev::Addr {
            t: at(t0, 2),
            host: 5,
            on: false,
        });
        evs.push(Ev::Addr {
            t: at(t0, 35),
            host: 4,
            on: true,
        });
        for ms in 40..=100 {
            evs.push(Ev::Reply {
                t: at(t0, ms),
                mac: new,
            });
        }
        evs.push(Ev::Addr {
            t: at(t0, 110),
            host: 5,
            on: true,
        });
        evs.push(Ev::Garp { t: at(t0, 111) });
        evs.push(Ev::Addr {
            t: at(t0, 125),
            host: 4,
            on: false,
        });
        for ms in 130..=200 {
            evs.push(Ev::Reply {
                t: at(t0, ms),
                mac: old,
            });
        }
        let r = analyse(held, &evs, old, t0, at(t0, 100), at(t0, 200), true);
        assert_eq!(r.takeover_ms, Some(40.0));
        assert_eq!(r.added_ms, Some(35.0), "host 4 adds it at 35 ms");
        assert_eq!(r.garp_ms, None, "the only GARP is after the restore");
        assert_eq!(r.outage_ms, 35.0, "5 → 40 ms");
        assert_eq!(r.dual_ms, 0.0);
        assert_eq!(r.return_dual_ms, 15.0, "110 → 125 ms");
        assert_eq!(r.return_outage_ms, 30.0, "100 → 130 ms");
        assert_eq!(r.return_garps, 1);
        // Without the let-go at 2 ms both hold it from 35 ms to the restore.
        let mut stay = evs.clone();
        stay.retain(|e| {
            !matches!(
                e,
                Ev::Addr {
                    host: 5,
                    on: false,
                    ..
                }
            )
        });
        let r = analyse(held, &stay, old, t0, at(t0, 100), at(t0, 200), true);
        assert_eq!(r.dual_ms, 65.0);
    }

    #[test]
    fn every_system_meets_the_same_phases_one_per_slice_of_the_interval() {
        for rounds in [3, 20] {
            for f in 0..FAULTS.len() {
                let p = kill_phases(7, f, rounds);
                assert_eq!(p, kill_phases(7, f, rounds), "the same for every system");
                assert_eq!(p.len(), rounds);
                let slice = ADVERT_MS * 1000 / rounds as u64;
                for (k, &x) in p.iter().enumerate() {
                    let k = k as u64;
                    assert!(
                        (k * slice..(k + 1) * slice).contains(&x),
                        "{x} in slice {k}"
                    );
                }
            }
            assert_ne!(kill_phases(7, 0, rounds), kill_phases(7, 1, rounds));
            assert_ne!(kill_phases(7, 0, rounds), kill_phases(8, 0, rounds));
        }
    }

    #[test]
    fn the_shipped_hook_lets_go_before_it_announces() {
        // The let-go must not wait behind an arping: the `leader` branch starts it in
        // the background, and a later run stops it before it changes the address.
        let leader = HOOK.split("leader)").nth(1).unwrap_or("");
        let arping = leader
            .lines()
            .find(|l| l.contains("arping -q"))
            .unwrap_or("");
        assert!(
            arping.trim_end().ends_with('&'),
            "arping in the foreground: {arping}"
        );
        let kill = HOOK.find("kill \"$pid\"").unwrap_or(usize::MAX);
        let del = HOOK.find("ip addr del").unwrap_or(0);
        assert!(
            kill < del,
            "the earlier arping is stopped before the address goes"
        );
    }
}
