//! Cost per node at idle: five real `electd run` processes that agree on their
//! leaders, then measurement windows during which nothing happens but heartbeats.
//! Per process: resident memory (`VmRSS`, peak `VmHWM` from `/proc/<pid>/status`),
//! CPU (the run time of every thread in nanoseconds, `/proc/<pid>/task/*/schedstat`;
//! where the kernel has no schedstat, user + system clock ticks from `/proc/<pid>/stat`,
//! whose 10 ms grain is a tenth of the 0.3 % target over 10 s) as the median of three
//! consecutive 10 s windows, and wire traffic (`electd_bytes_sent_total`,
//! `electd_datagrams_sent_total` from `/metrics`, over all the windows). The leader of a
//! group sends the heartbeats, so leaders and followers are reported apart.
//!
//! After each run, with its processes stopped, the same run's floor ([`floor`]): one
//! minimal sender and receiver per node at that node's datagram rate and size, over
//! the same windows; each node's CPU is also reported as a multiple of its floor's,
//! which moves less with the machine than a share of a core does.

use super::BenchOptions;
use anyhow::Context;
use electd::contract::algorithm::AlgorithmKind;
use electd::http::client::metric_sum;
use electd::testkit::procs::{ClusterTiming, ProcCluster};
use electd::NodeId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub mod floor;

#[derive(Clone, Debug, Serialize)]
pub struct NodeCost {
    pub node: NodeId,
    /// `leader` if it leads at least one group, else `follower`.
    pub role: &'static str,
    pub groups_led: usize,
    pub rss_mib: f64,
    pub peak_rss_mib: f64,
    /// Percent of one core: the median of `cpu_windows`.
    pub cpu_percent: f64,
    /// Percent of one core in each window, in order.
    pub cpu_windows: Vec<f64>,
    pub bytes_per_sec: f64,
    pub datagrams_per_sec: f64,
    /// Percent of one core its floor took (the median of `floor_windows`; `None`: not
    /// measured).
    pub floor_cpu_percent: Option<f64>,
    /// Percent of one core its floor took in each window, in order.
    pub floor_windows: Vec<f64>,
}

impl NodeCost {
    /// Its CPU as a multiple of its floor's, when the floor was measured (and not 0).
    pub fn over_floor(&self) -> Option<f64> {
        self.floor_cpu_percent
            .filter(|&f| f > 0.0)
            .map(|f| self.cpu_percent / f)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CostRun {
    pub label: String,
    pub heartbeat_ms: u64,
    pub algorithms: Vec<AlgorithmKind>,
    /// `transport.batch_heartbeats` of the run (the default: true).
    pub batched: bool,
    /// One window's length; CPU is measured over `windows` of them in a row.
    pub window_s: f64,
    pub windows: usize,
    pub nodes: Vec<NodeCost>,
}

impl CostRun {
    pub fn max_by(&self, f: impl Fn(&NodeCost) -> f64) -> f64 {
        self.nodes.iter().map(f).fold(0.0, f64::max)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CostResults {
    pub runs: Vec<CostRun>,
}

/// (heartbeat ms, algorithms, `transport.batch_heartbeats`) per run, and the window.
/// The full bench also runs Bully at 10 ms with heartbeats read one by one, the
/// comparison for batching, and Raft alone at 10 ms: the one group whose followers
/// answer every heartbeat, the part of the six groups' cost that Bully's leader has not.
pub fn plan(quick: bool) -> (Vec<(u64, Vec<AlgorithmKind>, bool)>, Duration) {
    let all = AlgorithmKind::available();
    let bully = || vec![AlgorithmKind::Bully];
    if quick {
        (vec![(10, bully(), true)], Duration::from_secs(1))
    } else {
        (
            vec![
                (10, bully(), true),
                (10, bully(), false),
                (10, vec![AlgorithmKind::Raft], true),
                (10, all.clone(), true),
                (100, bully(), true),
                (100, all, true),
            ],
            Duration::from_secs(10),
        )
    }
}

/// Consecutive measurement windows per run (full bench).
pub const WINDOWS: usize = 3;

/// The median of `v` (the mean of the middle two for an even count; 0 when empty).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

struct Sample {
    cpu_ns: u64,
    bytes: f64,
    datagrams: f64,
}

/// CPU time of every thread of `pid` so far, in nanoseconds (see the module
/// documentation).
fn proc_cpu_ns(pid: u32) -> Option<u64> {
    if let Some(ns) = schedstat_ns(pid) {
        return Some(ns);
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    proc_ticks(pid).map(|t| t.saturating_mul(1_000_000_000 / hz))
}

/// Sum of the first field (time on the CPU, ns) of every thread's schedstat.
fn schedstat_ns(pid: u32) -> Option<u64> {
    let mut total = 0u64;
    let mut any = false;
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let Ok(entry) = entry else { continue };
        let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        if let Some(ns) = text
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
        {
            total = total.saturating_add(ns);
            any = true;
        }
    }
    any.then_some(total)
}

fn proc_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start at field 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

fn proc_kib(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with(field))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0.0)
}

fn sample(c: &ProcCluster, id: NodeId) -> Option<Sample> {
    let pid = c.pid(id)?;
    let m = c.get(id, "/metrics")?;
    Some(Sample {
        cpu_ns: proc_cpu_ns(pid)?,
        bytes: metric_sum(&m, "electd_bytes_sent_total", &[]),
        datagrams: metric_sum(&m, "electd_datagrams_sent_total", &[]),
    })
}

/// Per algorithm the leader every node names, when all do.
fn leaders(c: &ProcCluster) -> Option<BTreeMap<String, u64>> {
    let mut seen: BTreeMap<String, Option<u64>> = BTreeMap::new();
    for id in c.ids() {
        let s: serde_json::Value = serde_json::from_str(&c.get(id, "/status")?).ok()?;
        for g in s["groups"].as_array()? {
            let algo = g["algorithm"].as_str()?.to_string();
            let l = g["leader"].as_u64()?;
            if seen
                .insert(algo, Some(l))
                .is_some_and(|prev| prev != Some(l))
            {
                return None;
            }
        }
    }
    Some(
        seen.into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect(),
    )
}

pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> anyhow::Result<CostResults> {
    let (plan, window) = plan(opts.quick);
    let windows = if opts.quick { 1 } else { WINDOWS };
    let mut runs = Vec::new();
    for (hb, algorithms, batched) in plan {
        let mut label = if algorithms.len() == 1 {
            format!("{} at heartbeat {hb} ms", algorithms[0])
        } else {
            format!("all {} algorithms at heartbeat {hb} ms", algorithms.len())
        };
        if !batched {
            label.push_str(", heartbeats read one by one");
        }
        let t = ClusterTiming {
            batch_heartbeats: batched,
            ..ClusterTiming::with_heartbeat(hb)
        };
        let mut c = ProcCluster::new(
            &opts.exe,
            &std::env::temp_dir(),
            &format!("cost-{hb}-{}-{batched}", algorithms.len()),
            5,
            &algorithms,
            &t,
        )?;
        c.start_all()?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let led = loop {
            if let Some(l) = leaders(&c).filter(|l| l.len() == algorithms.len()) {
                break l;
            }
            if Instant::now() > deadline {
                anyhow::bail!("cost {label}: the cluster did not agree within 20 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Idle: every follower has armed its detector, start-up allocations are done.
        std::thread::sleep(Duration::from_millis(20 * hb).max(Duration::from_millis(500)));
        let ids = c.ids();
        let take = || -> anyhow::Result<(Instant, Vec<Sample>)> {
            let at = Instant::now();
            let s = ids
                .iter()
                .map(|&id| sample(&c, id).with_context(|| format!("cost {label}: node {id}")))
                .collect::<anyhow::Result<_>>()?;
            Ok((at, s))
        };
        // Consecutive windows; a node's CPU is its median window, so that one burst of
        // other work on the machine (a reclaim after the simulator's gigabytes, a
        // build) moves at most one window.
        let mut samples = vec![take()?];
        for _ in 0..windows {
            std::thread::sleep(window);
            samples.push(take()?);
        }
        let (first, last) = (&samples[0], &samples[samples.len() - 1]);
        let secs = last.0.duration_since(first.0).as_secs_f64();
        let mut nodes = Vec::new();
        for (k, &id) in ids.iter().enumerate() {
            let pid = c.pid(id).unwrap_or(0);
            let groups_led = led.values().filter(|&&l| l == u64::from(id)).count();
            let cpu_windows: Vec<f64> = samples
                .windows(2)
                .map(|w| {
                    let span = w[1].0.duration_since(w[0].0).as_secs_f64();
                    w[1].1[k].cpu_ns.saturating_sub(w[0].1[k].cpu_ns) as f64 / 1e9 / span * 100.0
                })
                .collect();
            let (b, a) = (&first.1[k], &last.1[k]);
            nodes.push(NodeCost {
                node: id,
                role: if groups_led > 0 { "leader" } else { "follower" },
                groups_led,
                rss_mib: proc_kib(pid, "VmRSS:") / 1024.0,
                peak_rss_mib: proc_kib(pid, "VmHWM:") / 1024.0,
                cpu_percent: median(&cpu_windows),
                cpu_windows,
                bytes_per_sec: (a.bytes - b.bytes) / secs,
                datagrams_per_sec: (a.datagrams - b.datagrams) / secs,
                floor_cpu_percent: None,
                floor_windows: Vec::new(),
            });
        }
        // The floor of this run, alone on the machine (the cluster stopped).
        drop(c);
        let plan = floor_plan(&nodes);
        match floor::measure(&plan, Duration::from_millis(hb), window, windows) {
            Some(m) => {
                for (n, w) in nodes.iter_mut().zip(m) {
                    n.floor_cpu_percent = Some(median(&w));
                    n.floor_windows = w;
                }
            }
            None => log(&format!("  {label}: no floor measured (no schedstat?)")),
        }
        let r = CostRun {
            label: label.clone(),
            heartbeat_ms: hb,
            algorithms,
            batched,
            window_s: window.as_secs_f64(),
            windows,
            nodes,
        };
        log(&format!(
            "  {label}: max RSS {:.1} MiB, max CPU {:.2} %, max {:.0} B/s, max {:.2} × floor",
            r.max_by(|n| n.rss_mib),
            r.max_by(|n| n.cpu_percent),
            r.max_by(|n| n.bytes_per_sec),
            r.max_by(|n| n.over_floor().unwrap_or(0.0))
        ));
        runs.push(r);
    }
    Ok(CostResults { runs })
}

/// The floor of a run's nodes: each sends its node's datagrams per second, of its
/// node's mean size; a node that leads a group to every other node, a follower to the
/// nodes that lead.
pub fn floor_plan(nodes: &[NodeCost]) -> Vec<floor::FloorNode> {
    let leaders: Vec<usize> = (0..nodes.len())
        .filter(|&i| nodes[i].groups_led > 0)
        .collect();
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| floor::FloorNode {
            rate: n.datagrams_per_sec.max(0.0),
            size: if n.datagrams_per_sec > 0.0 {
                (n.bytes_per_sec / n.datagrams_per_sec).round() as usize
            } else {
                80
            },
            to: if n.groups_led > 0 {
                (0..nodes.len()).filter(|&j| j != i).collect()
            } else {
                leaders.iter().copied().filter(|&j| j != i).collect()
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: NodeId, groups_led: usize, datagrams: f64) -> NodeCost {
        NodeCost {
            node: id,
            role: if groups_led > 0 { "leader" } else { "follower" },
            groups_led,
            rss_mib: 0.0,
            peak_rss_mib: 0.0,
            cpu_percent: 0.6,
            cpu_windows: vec![0.6],
            bytes_per_sec: datagrams * 79.0,
            datagrams_per_sec: datagrams,
            floor_cpu_percent: None,
            floor_windows: Vec::new(),
        }
    }

    #[test]
    fn the_floor_sends_what_each_node_sent_where_it_sent_it() {
        // Node 5 leads (400 datagrams/s to four peers); node 1 answers it (Raft acks).
        let nodes = vec![
            node(1, 0, 100.0),
            node(2, 0, 0.0),
            node(3, 0, 0.0),
            node(4, 0, 0.0),
            node(5, 6, 400.0),
        ];
        let plan = floor_plan(&nodes);
        assert_eq!(plan[4].to, vec![0, 1, 2, 3]);
        assert_eq!(plan[4].rate, 400.0);
        assert_eq!(plan[4].size, 79);
        assert_eq!(plan[0].to, vec![4]);
        assert_eq!((plan[1].rate, plan[1].size), (0.0, 80));
        let mut n = node(5, 1, 400.0);
        assert_eq!(n.over_floor(), None);
        n.floor_cpu_percent = Some(0.4);
        assert!((n.over_floor().unwrap() - 1.5).abs() < 1e-9);
    }

    #[test]
    fn median_of_windows() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[0.4]), 0.4);
        assert_eq!(median(&[1.15, 0.2, 0.3]), 0.3);
        assert_eq!(median(&[0.1, 0.4, 0.2, 0.3]), 0.25);
    }

    #[test]
    fn reads_own_cpu_ticks_and_rss() {
        let pid = std::process::id();
        assert!(proc_ticks(pid).is_some());
        // Some CPU has been spent by this test process already, in either source.
        assert!(proc_cpu_ns(pid).is_some_and(|ns| ns > 0));
        assert!(proc_kib(pid, "VmRSS:") > 0.0);
    }
}
