//! `electd bench --only keepalived`: a virtual IP moved by keepalived (VRRPv3) beside
//! one moved by electd with the hook of docs/keepalived.md (`deploy/hooks/electd-vip`),
//! in network namespaces, measured by one client.
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
//! MAC for 200 ms; apply the fault to host 5 at t0 (`sigkill` of the daemon —
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
//! It is never part of the default run: only `--only keepalived` runs it.
//!
//! For debugging: `KA_SYSTEMS=electd` (or `keepalived`) runs one system only,
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

#[derive(Clone, Copy, Debug)]
enum Ev {
    Reply { t: Instant, mac: [u8; 6] },
    Garp { t: Instant },
    Addr { t: Instant, host: usize, on: bool },
}

impl Ev {
    fn t(&self) -> Instant {
        match *self {
            Ev::Reply { t, .. } | Ev::Garp { t } | Ev::Addr { t, .. } => t,
        }
    }
}

#[derive(Default)]
struct Inner {
    evs: Vec<Ev>,
    held: [bool; HOSTS + 1],
    /// The current run of replies from one MAC: (mac, first, last).
    streak: Option<([u8; 6], Instant, Instant)>,
}

#[derive(Default)]
struct Recorder {
    inner: Mutex<Inner>,
    stop: AtomicBool,
    /// Packets the packet socket could not parse as Ethernet (counted, not fatal).
    dropped: std::sync::atomic::AtomicU64,
}

impl Recorder {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn push(&self, ev: Ev) {
        let mut g = self.lock();
        match ev {
            Ev::Addr { host, on, .. } => g.held[host] = on,
            Ev::Reply { t, mac } => {
                g.streak = match g.streak {
                    Some((m, first, last))
                        if m == mac && t.duration_since(last) < Duration::from_millis(20) =>
                    {
                        Some((m, first, t))
                    }
                    _ => Some((mac, t, t)),
                };
            }
            Ev::Garp { .. } => {}
        }
        g.evs.push(ev);
    }
    /// The holders now and the events from now on.
    fn start(&self) -> [bool; HOSTS + 1] {
        let mut g = self.lock();
        g.evs.clear();
        g.held
    }
    /// Only `host` holds the VIP and the client has had its replies for `streak`.
    fn settled_on(&self, host: usize, mac: [u8; 6], streak: Duration) -> bool {
        let g = self.lock();
        let only = (1..=HOSTS).all(|h| g.held[h] == (h == host));
        only && matches!(g.streak, Some((m, first, last)) if m == mac
            && last.duration_since(first) >= streak && last.elapsed() < Duration::from_millis(20))
    }
    fn events(&self) -> Vec<Ev> {
        let mut v = self.lock().evs.clone();
        v.sort_by_key(|e| e.t());
        v
    }
}

fn enter_netns(name: &str) -> std::io::Result<()> {
    let f = std::fs::File::open(format!("/var/run/netns/{name}"))?;
    // SAFETY: setns on a valid descriptor; it changes only this thread's namespace.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether this thread's namespace has `vip` (network order) on an interface.
fn holds(vip: u32) -> bool {
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we walk read-only and free once.
    unsafe {
        if libc::getifaddrs(&mut ifap) != 0 {
            return false;
        }
        let mut p = ifap;
        let mut found = false;
        while !p.is_null() {
            let a = (*p).ifa_addr;
            if !a.is_null() && i32::from((*a).sa_family) == libc::AF_INET {
                let sin = a as *const libc::sockaddr_in;
                found |= (*sin).sin_addr.s_addr == vip;
            }
            p = (*p).ifa_next;
        }
        libc::freeifaddrs(ifap);
        found
    }
}

fn poller(rec: Arc<Recorder>, ns: String, host: usize, vip: u32) -> std::io::Result<()> {
    enter_netns(&ns)?;
    let mut was = None;
    while !rec.stop.load(Ordering::Relaxed) {
        let on = holds(vip);
        if was != Some(on) {
            rec.push(Ev::Addr {
                t: Instant::now(),
                host,
                on,
            });
            was = Some(on);
        }
        // Sampling period of the address poll (not a synchronisation).
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

fn checksum(b: &[u8]) -> u16 {
    let mut sum = 0u32;
    for c in b.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn socket(domain: i32, ty: i32, proto: i32) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: a plain socket(2); the descriptor is owned from here on.
    let fd = unsafe { libc::socket(domain, ty, proto) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Echo requests to the VIP every millisecond from the client's namespace.
fn pinger(rec: Arc<Recorder>, ns: String, vip: u32, id: u16) -> std::io::Result<()> {
    enter_netns(&ns)?;
    let s = socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP)?;
    let mut to: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    to.sin_family = libc::AF_INET as libc::sa_family_t;
    to.sin_addr.s_addr = vip;
    let mut next = Instant::now();
    let mut seq: u16 = 0;
    while !rec.stop.load(Ordering::Relaxed) {
        let mut pkt = [0u8; 16];
        pkt[0] = 8;
        pkt[4..6].copy_from_slice(&id.to_be_bytes());
        pkt[6..8].copy_from_slice(&seq.to_be_bytes());
        let c = checksum(&pkt);
        pkt[2..4].copy_from_slice(&c.to_be_bytes());
        // SAFETY: sendto with a valid buffer and address; an error (no route, no ARP
        // answer yet) is what a client sees too: the reply simply does not come.
        unsafe {
            libc::sendto(
                s.as_raw_fd(),
                pkt.as_ptr().cast(),
                pkt.len(),
                libc::MSG_DONTWAIT,
                (&to as *const libc::sockaddr_in).cast(),
                size_of::<libc::sockaddr_in>() as u32,
            );
        }
        seq = seq.wrapping_add(1);
        next += Duration::from_millis(1);
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    Ok(())
}

/// Every echo reply from the VIP (with its source MAC) and every gratuitous ARP for it.
fn sniffer(rec: Arc<Recorder>, ns: String, vip: u32, id: u16) -> std::io::Result<()> {
    enter_netns(&ns)?;
    let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
    let s = socket(libc::AF_PACKET, libc::SOCK_RAW, proto)?;
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 50_000,
    };
    // SAFETY: setsockopt with a timeval of the right size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            size_of::<libc::timeval>() as u32,
        );
    }
    let vip_b = vip.to_ne_bytes();
    let mut buf = [0u8; 2048];
    while !rec.stop.load(Ordering::Relaxed) {
        let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::sockaddr_ll>() as u32;
        // SAFETY: recvfrom into our buffer and address.
        let n = unsafe {
            libc::recvfrom(
                s.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
                (&mut from as *mut libc::sockaddr_ll).cast(),
                &mut len,
            )
        };
        let t = Instant::now();
        if n < 14 || from.sll_pkttype == libc::PACKET_OUTGOING {
            continue;
        }
        let f = &buf[..n as usize];
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&f[6..12]);
        match u16::from_be_bytes([f[12], f[13]]) {
            0x0800 if f.len() >= 14 + 20 => {
                let ip = &f[14..];
                let ihl = usize::from(ip[0] & 0x0f) * 4;
                if ip[9] != 1 || ip[12..16] != vip_b || ip.len() < ihl + 8 {
                    continue;
                }
                let icmp = &ip[ihl..];
                if icmp[0] == 0 && icmp[4..6] == id.to_be_bytes() {
                    rec.push(Ev::Reply { t, mac });
                }
            }
            // ARP: sender IP at 14+14, target IP at 14+24; gratuitous: both the VIP.
            0x0806 if f.len() >= 14 + 28 => {
                if f[28..32] != vip_b || f[38..42] != vip_b {
                    continue;
                }
                rec.push(Ev::Garp { t });
            }
            0x0800 | 0x0806 => {
                rec.dropped.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- analysis

/// Longest stretch in [from, to] without a reply.
fn outage(evs: &[Ev], from: Instant, to: Instant) -> f64 {
    let mut last = from;
    let mut worst = Duration::ZERO;
    for e in evs {
        if let Ev::Reply { t, .. } = *e {
            if t > from && t <= to {
                worst = worst.max(t - last);
                last = t;
            }
        }
    }
    super::ms(worst.max(to.saturating_duration_since(last)))
}

/// Time in [from, to] with the VIP on two or more hosts, starting from `held`.
fn dual(held: [bool; HOSTS + 1], evs: &[Ev], from: Instant, to: Instant) -> f64 {
    let mut held = held;
    let mut total = Duration::ZERO;
    let mut at = from;
    let count = |h: &[bool; HOSTS + 1]| h.iter().filter(|x| **x).count();
    for e in evs {
        if let Ev::Addr { t, host, on } = *e {
            if t > to {
                break;
            }
            if t > at {
                if count(&held) >= 2 {
                    total += t - at;
                }
                at = t;
            }
            held[host] = on;
        }
    }
    if count(&held) >= 2 && to > at {
        total += to - at;
    }
    super::ms(total)
}

/// The holders at `at`, from `held` at the start of `evs`.
fn held_at(held: [bool; HOSTS + 1], evs: &[Ev], at: Instant) -> [bool; HOSTS + 1] {
    let mut h = held;
    for e in evs {
        if let Ev::Addr { t, host, on } = *e {
            if t > at {
                break;
            }
            h[host] = on;
        }
    }
    h
}

fn analyse(
    held: [bool; HOSTS + 1],
    evs: &[Ev],
    holder_mac: [u8; 6],
    t0: Instant,
    t1: Instant,
    t2: Instant,
    settled: bool,
) -> Round {
    let takeover = evs.iter().find_map(|e| match *e {
        Ev::Reply { t, mac } if t > t0 && t <= t1 && mac != holder_mac => Some(super::ms(t - t0)),
        _ => None,
    });
    Round {
        takeover_ms: takeover,
        outage_ms: outage(evs, t0, t1),
        dual_ms: dual(held, evs, t0, t1),
        return_dual_ms: dual(held_at(held, evs, t1), evs, t1, t2),
        return_outage_ms: outage(evs, t1, t2),
        return_garps: evs
            .iter()
            .filter(|e| matches!(e, Ev::Garp { t } if *t > t1 && *t <= t2))
            .count(),
        settled,
    }
}

// ---------------------------------------------------------------- the namespaces

fn run_cmd(args: &[&str]) -> anyhow::Result<()> {
    let st = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("cannot run {}", args[0]))?;
    anyhow::ensure!(st.success(), "{} failed ({st})", args.join(" "));
    Ok(())
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: a signal to a process this bench started (by its PID).
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum System {
    Keepalived,
    Electd,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Keepalived => "keepalived",
            System::Electd => "electd",
        }
    }
}

/// A daemon on one host: the process started (`ip netns exec` execs it) and, for
/// keepalived, its VRRP child.
struct Daemon {
    child: Child,
    vrrp: Option<u32>,
}

struct Bench {
    p: String,
    net: String,
    work: PathBuf,
    exe: PathBuf,
    nses: Vec<String>,
    macs: [[u8; 6]; HOSTS + 1],
    daemons: Vec<Option<Daemon>>,
    rec: Arc<Recorder>,
    threads: Vec<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Bench {
    fn ns(&self, i: usize) -> String {
        format!("{}-{i}", self.p)
    }
    fn sw(&self) -> String {
        format!("{}-sw", self.p)
    }
    fn vip(&self) -> String {
        format!("{}.100", self.net)
    }

    fn setup(&mut self) -> anyhow::Result<()> {
        let sw = self.sw();
        run_cmd(&["ip", "netns", "add", &sw])?;
        self.nses.push(sw.clone());
        for br in ["br0", "br1"] {
            run_cmd(&["ip", "-n", &sw, "link", "add", br, "type", "bridge"])?;
            run_cmd(&["ip", "-n", &sw, "link", "set", br, "up"])?;
        }
        for i in 1..=HOSTS + 1 {
            let (n, port, addr) = if i <= HOSTS {
                (self.ns(i), format!("p{i}"), format!("{}.{i}/24", self.net))
            } else {
                (
                    format!("{}-c", self.p),
                    "pc".to_string(),
                    format!("{}.200/24", self.net),
                )
            };
            run_cmd(&["ip", "netns", "add", &n])?;
            self.nses.push(n.clone());
            run_cmd(&[
                "ip", "link", "add", "eth0", "netns", &n, "type", "veth", "peer", "name", &port,
                "netns", &sw,
            ])?;
            run_cmd(&["ip", "-n", &sw, "link", "set", &port, "master", "br0", "up"])?;
            run_cmd(&["ip", "-n", &n, "addr", "add", &addr, "dev", "eth0"])?;
            run_cmd(&["ip", "-n", &n, "link", "set", "eth0", "up"])?;
            run_cmd(&["ip", "-n", &n, "link", "set", "lo", "up"])?;
            if i <= HOSTS {
                let out = Command::new("ip")
                    .args(["-n", &n, "-o", "link", "show", "eth0"])
                    .output()?;
                let text = String::from_utf8_lossy(&out.stdout);
                let mac = text
                    .split_whitespace()
                    .skip_while(|w| *w != "link/ether")
                    .nth(1)
                    .context("no MAC on eth0")?;
                for (k, b) in mac.split(':').enumerate().take(6) {
                    self.macs[i][k] = u8::from_str_radix(b, 16)?;
                }
            }
        }
        let vip: std::net::Ipv4Addr = self.vip().parse()?;
        let vip = u32::from_ne_bytes(vip.octets());
        let id = (std::process::id() & 0xffff) as u16;
        for h in 1..=HOSTS {
            let (rec, ns) = (self.rec.clone(), self.ns(h));
            self.threads
                .push(std::thread::spawn(move || poller(rec, ns, h, vip)));
        }
        let client = format!("{}-c", self.p);
        let (rec, ns) = (self.rec.clone(), client.clone());
        self.threads
            .push(std::thread::spawn(move || sniffer(rec, ns, vip, id)));
        let (rec, ns) = (self.rec.clone(), client);
        self.threads
            .push(std::thread::spawn(move || pinger(rec, ns, vip, id)));
        std::fs::write(self.work.join("electd-vip"), HOOK)?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                self.work.join("electd-vip"),
                std::fs::Permissions::from_mode(0o755),
            )?;
        }
        let hosts: Vec<String> = (1..=HOSTS).map(|i| format!("{}.{i}", self.net)).collect();
        let st = Command::new(&self.exe)
            .args(["config", "init", "--nodes", &HOSTS.to_string(), "--hosts"])
            .arg(hosts.join(","))
            .args([
                "--cluster",
                "vip",
                "--algorithms",
                "bully",
                "--insecure",
                "--out",
            ])
            .arg(self.work.join("electd.toml"))
            .stdout(Stdio::null())
            .status()?;
        anyhow::ensure!(st.success(), "electd config init failed");
        for i in 1..=HOSTS {
            let conf = format!(
                "global_defs {{\n  router_id h{i}\n  vrrp_version 3\n}}\n\
                 vrrp_instance VI {{\n  state BACKUP\n  interface eth0\n  virtual_router_id 51\n  \
                 priority {}\n  advert_int 0.01\n  virtual_ipaddress {{\n    {}/24 dev eth0\n  }}\n}}\n",
                100 + 10 * i,
                self.vip()
            );
            std::fs::write(self.work.join(format!("ka-{i}.conf")), conf)?;
        }
        Ok(())
    }

    fn start(&mut self, sys: System, i: usize) -> anyhow::Result<()> {
        let ns = self.ns(i);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.work.join(format!("{}-{i}.log", sys.name())))?;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &ns])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let vrrp_pid = self.work.join(format!("ka-{i}.vrrp.pid"));
        match sys {
            System::Keepalived => {
                let _ = std::fs::remove_file(&vrrp_pid);
                let _ = std::fs::remove_file(self.work.join(format!("ka-{i}.pid")));
                cmd.args(["keepalived", "-n", "-l", "-P", "-f"])
                    .arg(self.work.join(format!("ka-{i}.conf")))
                    .arg("-p")
                    .arg(self.work.join(format!("ka-{i}.pid")))
                    .arg("-r")
                    .arg(&vrrp_pid);
            }
            System::Electd => {
                let run = self.work.join(format!("run-{i}"));
                std::fs::create_dir_all(&run)?;
                cmd.arg(&self.exe)
                    .args(["run", "--config"])
                    .arg(self.work.join("electd.toml"))
                    .args(["--node-id", &i.to_string()])
                    .env("ELECTD_STATE_FILE", self.work.join(format!("state-{i}")))
                    .env(
                        "ELECTD_HOOKS_ON_LEADER_CHANGE",
                        self.work.join("electd-vip"),
                    )
                    .env("VIP_ADDRESS", format!("{}/24", self.vip()))
                    .env("VIP_DEV", "eth0")
                    .env("VIP_RUN_DIR", &run)
                    .env(
                        "ELECTD_LOG",
                        std::env::var("KA_NODE_LOG").unwrap_or_else(|_| "warn".into()),
                    );
                for (k, v) in ELECTD_ENV {
                    cmd.env(k, v);
                }
            }
        }
        let child = cmd.spawn().context("cannot start a daemon")?;
        let mut vrrp = None;
        if sys == System::Keepalived {
            let deadline = Instant::now() + Duration::from_secs(5);
            while vrrp.is_none() && Instant::now() < deadline {
                vrrp = std::fs::read_to_string(&vrrp_pid)
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
                std::thread::sleep(Duration::from_millis(5));
            }
            anyhow::ensure!(vrrp.is_some(), "keepalived on host {i} wrote no VRRP pid");
        }
        self.daemons[i] = Some(Daemon { child, vrrp });
        Ok(())
    }

    /// SIGKILL the daemon (keepalived: parent stopped first so it cannot respawn or
    /// tell its child, then the VRRP child, then the parent).
    fn kill(&mut self, i: usize) {
        if let Some(mut d) = self.daemons[i].take() {
            signal(d.child.id(), libc::SIGSTOP);
            if let Some(v) = d.vrrp {
                signal(v, libc::SIGKILL);
            }
            signal(d.child.id(), libc::SIGKILL);
            let _ = d.child.wait();
        }
    }

    fn signal_all(&self, i: usize, sig: i32) {
        if let Some(d) = &self.daemons[i] {
            if let Some(v) = d.vrrp {
                signal(v, sig);
            }
            signal(d.child.id(), sig);
        }
    }

    fn stop_all(&mut self) {
        for i in 1..=HOSTS {
            self.signal_all(i, libc::SIGCONT);
            if let Some(mut d) = self.daemons[i].take() {
                signal(d.child.id(), libc::SIGTERM);
                let deadline = Instant::now() + Duration::from_secs(3);
                while Instant::now() < deadline && matches!(d.child.try_wait(), Ok(None)) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if let Some(v) = d.vrrp {
                    signal(v, libc::SIGKILL);
                }
                let _ = d.child.kill();
                let _ = d.child.wait();
            }
            let vip = format!("{}/24", self.vip());
            // Usually gone already (a `stopped` run, keepalived's exit): quietly.
            let _ = Command::new("ip")
                .args(["-n", &self.ns(i), "addr", "del", &vip, "dev", "eth0"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    fn port(&self, i: usize, what: &str) -> anyhow::Result<()> {
        let sw = self.sw();
        let port = format!("p{i}");
        match what {
            "down" | "up" => run_cmd(&["ip", "-n", &sw, "link", "set", &port, what]),
            br => run_cmd(&["ip", "-n", &sw, "link", "set", &port, "master", br]),
        }
    }

    fn wait_settled(&self, host: usize, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self
                .rec
                .settled_on(host, self.macs[host], Duration::from_millis(200))
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    /// One round; `None` when the VIP did not settle on the top host beforehand
    /// (counted, the round is not made).
    fn round(&mut self, sys: System, fault: &str, phase_us: u64) -> anyhow::Result<Option<Round>> {
        let top = HOSTS;
        if !self.wait_settled(top, Duration::from_secs(10)) {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_micros(phase_us));
        let held = self.rec.start();
        let t0 = Instant::now();
        match fault {
            "sigkill" => self.kill(top),
            "sigstop" => self.signal_all(top, libc::SIGSTOP),
            "link" => self.port(top, "down")?,
            _ => {
                self.port(top, "br1")?;
                self.port(top - 1, "br1")?;
            }
        }
        std::thread::sleep(HOLD);
        let t1 = Instant::now();
        match fault {
            "sigkill" => self.start(sys, top)?,
            "sigstop" => self.signal_all(top, libc::SIGCONT),
            "link" => self.port(top, "up")?,
            _ => {
                self.port(top, "br0")?;
                self.port(top - 1, "br0")?;
            }
        }
        let settled = self.wait_settled(top, SETTLE);
        let t2 = Instant::now();
        let evs = self.rec.events();
        Ok(Some(analyse(
            held,
            &evs,
            self.macs[top],
            t0,
            t1,
            t2,
            settled,
        )))
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        self.stop_all();
        self.rec.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        for n in self.nses.drain(..).rev() {
            let _ = run_cmd(&["ip", "netns", "del", &n]);
        }
        if std::env::var_os("KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.work);
        }
    }
}

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
    let mut b = Bench {
        p: format!("eka{}", pid % 100_000),
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
    let mut rng = electd::contract::rng::Rng::new(opts.seed);
    let mut rows = Vec::new();
    let only = std::env::var("KA_SYSTEMS").unwrap_or_default();
    for sys in [System::Keepalived, System::Electd] {
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
        for fault in FAULTS {
            let mut rs = Vec::new();
            let mut not_started = 0;
            for k in 0..rounds {
                let phase = rng.next_u64() % (ADVERT_MS * 1000);
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
                    "  {} {fault} {}/{rounds}: takeover {}, outage {:.1} ms, dual {:.1} ms; \
                     return: dual {:.1} ms, outage {:.1} ms, {} GARPs{}",
                    sys.name(),
                    k + 1,
                    r.takeover_ms
                        .map(|x| format!("{x:.1} ms"))
                        .unwrap_or_else(|| "none".into()),
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

// ---------------------------------------------------------------- report

fn fmt_stats(s: &Stats) -> String {
    if s.n == 0 {
        "—".into()
    } else {
        format!("{:.1} / {:.1} / {:.1}", s.median, s.p99, s.max)
    }
}

/// The section of report.md.
pub fn markdown(s: &mut String, k: &VersusKeepalived) {
    use std::fmt::Write;
    let _ = writeln!(s, "\n## Beside keepalived (virtual IP)\n");
    if let Some(why) = &k.skipped {
        let _ = writeln!(s, "Not run: {why}.\n");
        return;
    }
    let _ = writeln!(
        s,
        "{} (VRRPv3, `advert_int 0.01`) beside electd Bully with the hook \
         `deploy/hooks/electd-vip` (docs/keepalived.md), {HOSTS} hosts and a client in network \
         namespaces on one bridge; the client pings the VIP every 1 ms and records which MAC \
         answers. Interval {} ms for both; electd: `{}`. {} rounds per fault, each fault held \
         {} ms. Figures in ms, median / p99 / max; *takeover*: fault → first reply from \
         another host; *outage*: longest stretch without a reply during the fault; *dual*: \
         time with the VIP on two or more hosts; *return*: from the restore (restart, \
         SIGCONT, link up, heal) until the VIP is on host {HOSTS} alone and answering. \
         Load average {:.1} before, {:.1} after{}.\n",
        k.keepalived_version,
        k.advert_ms,
        k.electd_env.join(" "),
        k.rounds,
        k.hold_ms,
        k.load.0,
        k.load.1,
        if k.load.0.max(k.load.1) > 1.0 {
            " — a loaded machine: electd's hook starts processes (`sh`, `ip`, `arping`) \
             that wait for a core, keepalived changes the address in-process"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "| fault | system | takeover | outage | dual (fault) | return: dual | return: outage | return: GARPs | unsettled | not made |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for fault in FAULTS {
        for sys in ["keepalived", "electd"] {
            if let Some(r) = k.row(sys, fault) {
                let _ = writeln!(
                    s,
                    "| {fault} | {sys} | {}{} | {} | {} | {} | {} | {} | {} | {} |",
                    fmt_stats(&r.takeover),
                    if r.no_takeover > 0 {
                        format!(" ({} without)", r.no_takeover)
                    } else {
                        String::new()
                    },
                    fmt_stats(&r.outage),
                    fmt_stats(&r.dual),
                    fmt_stats(&r.return_dual),
                    fmt_stats(&r.return_outage),
                    fmt_stats(&r.return_garps),
                    r.unsettled,
                    r.not_started
                );
            }
        }
    }
    let _ = writeln!(s, "\n![VIP takeover beside keepalived](keepalived.svg)\n");
}

/// The issue's targets: electd's takeover median and p99 ≤ keepalived's per fault, and
/// the VIP never on two hosts after a return (outside a partition).
pub fn targets(k: &VersusKeepalived) -> Vec<super::Target> {
    let mut out = Vec::new();
    if k.skipped.is_some() {
        return out;
    }
    for fault in FAULTS {
        let (Some(ka), Some(el)) = (k.row("keepalived", fault), k.row("electd", fault)) else {
            continue;
        };
        let (a, b) = if fault == "sigkill" || fault == "sigstop" {
            (&ka.takeover, &el.takeover)
        } else {
            (&ka.outage, &el.outage)
        };
        let what = if fault == "sigkill" || fault == "sigstop" {
            "takeover"
        } else {
            "outage"
        };
        out.push(super::Target {
            name: format!("VIP {what} after {fault}, electd ÷ keepalived"),
            target: "median and p99 ≤ 1.00".into(),
            measured: format!(
                "median {:.1} vs {:.1} ms, p99 {:.1} vs {:.1} ms",
                b.median, a.median, b.p99, a.p99
            ),
            met: b.n > 0 && a.n > 0 && b.median <= a.median && b.p99 <= a.p99,
            note: String::new(),
        });
        if fault == "partition" {
            out.push(super::Target {
                name: "VIP on two hosts during a 3+2 partition (electd)".into(),
                target: format!("≤ keepalived's ({:.1} ms median)", ka.dual.median),
                measured: format!("median {:.1}, max {:.1} ms", el.dual.median, el.dual.max),
                met: el.dual.n > 0 && el.dual.median <= ka.dual.median,
                note: "require_quorum: the minority's leader lets go when its lease ends".into(),
            });
        } else {
            out.push(super::Target {
                name: format!("VIP on two hosts after the return from {fault} (electd)"),
                target: format!("≤ keepalived's ({:.1} ms median)", ka.return_dual.median),
                measured: format!(
                    "median {:.1}, max {:.1} ms",
                    el.return_dual.median, el.return_dual.max
                ),
                met: el.return_dual.median <= ka.return_dual.median,
                note: String::new(),
            });
        }
    }
    out
}

/// Every round's takeover (kill, stop) or outage (link, partition) per system, one
/// column per fault and system.
pub fn plot(k: &VersusKeepalived, path: &Path) -> Result<(), String> {
    use plotters::prelude::*;
    if k.rows.is_empty() {
        return Ok(());
    }
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let value = |r: &Row| -> Vec<f64> {
        r.rounds
            .iter()
            .filter_map(|x| {
                if r.fault == "sigkill" || r.fault == "sigstop" {
                    x.takeover_ms
                } else {
                    Some(x.outage_ms)
                }
            })
            .collect()
    };
    let top = k
        .rows
        .iter()
        .flat_map(value)
        .fold(4.0 * ADVERT_MS as f64, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (960, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let n = k.rows.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "VIP failover beside keepalived ({} ms interval): takeover (kill, stop) / outage (link, partition)",
                k.advert_ms
            ),
            ("sans-serif", 16),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..n - 0.5, 0.0..top)
        .map_err(|x| e(&x))?;
    let names: Vec<String> = k
        .rows
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r.fault,
                if r.system == "electd" { "E" } else { "K" }
            )
        })
        .collect();
    chart
        .configure_mesh()
        .x_labels(k.rows.len())
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 && (i as usize) < names.len() {
                names[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_desc("ms (K = keepalived, E = electd)")
        .disable_x_mesh()
        .draw()
        .map_err(|x| e(&x))?;
    for (i, r) in k.rows.iter().enumerate() {
        let color = if r.system == "electd" { BLUE } else { RED };
        let vs = value(r);
        let m = vs.len().max(1) as f64;
        chart
            .draw_series(vs.iter().enumerate().map(|(j, v)| {
                let x = i as f64 - 0.25 + 0.5 * (j as f64 + 0.5) / m;
                Circle::new((x, *v), 3, color.mix(0.7).filled())
            }))
            .map_err(|x| e(&x))?;
        let med = Stats::of(&vs).median;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(i as f64 - 0.3, med), (i as f64 + 0.3, med)],
                color.stroke_width(2),
            )))
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

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
