//! `electd status` and `electd watch`: the whole cluster from one command, read from
//! the roster of the cluster's TOML file (only `cluster` and every `[[peer]]`'s `id` and
//! `http` are read, so no key file and no node id are needed).
//!
//! - `status` asks every node's `GET /status` at once (one thread per node, `--timeout`
//!   for connecting and for the answer) and prints, per algorithm, whom each node
//!   follows and its token (the group's term/epoch as `/status` reports it), whether the
//!   answering nodes agree, and who did not answer. Exit 0 when at least one node
//!   answered and, for every algorithm, every answering node (paused ones aside) follows
//!   the same leader and none is electing; 1 otherwise (also for an unreadable file);
//!   2 for a usage error (clap). A `config:` line compares the nodes' configuration
//!   digests (`/status`'s `config`): `config: DRIFT` names who runs which digest and
//!   which node hears another configuration from which peers; drift does not change
//!   the exit status.
//! - `watch` follows every node's `GET /watch` stream and prints each leader change as it
//!   arrives, plus a `cluster` line whenever the connected nodes come to agree on a new
//!   leader of a group. A node that goes away is reported and reconnected to.

use super::AlgorithmArg;
use electd::http::client::{read_events, request};
use electd::http::WATCH_KEEP_ALIVE as KEEP_ALIVE;
use electd::NodeId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

mod watch;

pub use watch::watch;

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The cluster's TOML file (the one every node runs with).
    #[arg(long, short, env = "ELECTD_CONFIG")]
    pub config: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: StatusFormat,
    /// How long to wait for each node to accept the connection and to answer.
    #[arg(long, default_value = "1s", value_parser = super::positive_duration_arg)]
    pub timeout: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFormat {
    /// One line per algorithm, one column per node.
    Table,
    /// One JSON object: nodes, and per algorithm each node's view and the verdict.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// The cluster's TOML file (the one every node runs with).
    #[arg(long, short, env = "ELECTD_CONFIG")]
    pub config: PathBuf,
    /// Only this algorithm's group (default: every group).
    #[arg(long, short, value_enum)]
    pub algorithm: Option<AlgorithmArg>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: WatchFormat,
    /// Stop after this long, e.g. `30s` (default: until interrupted).
    #[arg(long, value_parser = super::positive_duration_arg)]
    pub duration: Option<Duration>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WatchFormat {
    /// One line per event for a terminal.
    Text,
    /// One JSON object per line (`type`: leader, cluster, connected, unreachable).
    Json,
}

/// What `status` and `watch` read from the cluster file.
#[derive(Debug, Deserialize)]
struct RosterFile {
    cluster: Option<String>,
    algorithms: Option<Vec<String>>,
    #[serde(default)]
    peer: Vec<RosterPeer>,
}

#[derive(Debug, Deserialize)]
struct RosterPeer {
    id: NodeId,
    http: String,
}

pub(super) struct Roster {
    pub(super) cluster: Option<String>,
    pub(super) peers: Vec<(NodeId, String)>,
    /// The groups the cluster runs: `ELECTD_ALGORITHMS` where set (as for the nodes),
    /// else the file's `algorithms`; `None` if neither says.
    pub(super) algorithms: Option<Vec<String>>,
}

pub(super) fn load_roster(path: &Path) -> anyhow::Result<Roster> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let raw: RosterFile = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
    if raw.peer.is_empty() {
        anyhow::bail!("{}: no [[peer]] entries", path.display());
    }
    let mut peers: Vec<(NodeId, String)> = raw
        .peer
        .into_iter()
        .map(|p| (p.id, p.http.trim().to_string()))
        .collect();
    peers.sort_by_key(|p| p.0);
    if let Some(w) = peers.windows(2).find(|w| w[0].0 == w[1].0) {
        anyhow::bail!("{}: peer id {} is listed twice", path.display(), w[0].0);
    }
    let algorithms = match std::env::var("ELECTD_ALGORITHMS") {
        Ok(v) if !v.trim().is_empty() => Some(
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
        ),
        _ => raw.algorithms,
    };
    Ok(Roster {
        cluster: raw.cluster,
        peers,
        algorithms,
    })
}

pub(super) fn resolve(http: &str) -> Result<SocketAddr, String> {
    http.to_socket_addrs()
        .map_err(|e| format!("{http}: {e}"))?
        .next()
        .ok_or_else(|| format!("{http}: resolves to no address"))
}

/// One node's answer to `/status`.
#[derive(Debug, Serialize)]
struct NodeReport {
    id: NodeId,
    http: String,
    reachable: bool,
    paused: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip)]
    status: Option<Value>,
}

fn ask(id: NodeId, http: &str, cluster: Option<&str>, timeout: Duration) -> NodeReport {
    let mut r = NodeReport {
        id,
        http: http.to_string(),
        reachable: false,
        paused: false,
        error: None,
        status: None,
    };
    let outcome = resolve(http).and_then(|addr| {
        // Refused, timed out and invalid replies each say so.
        let (code, body) =
            request(addr, "GET", "/status", None, timeout, timeout).map_err(|e| e.to_string())?;
        if code != 200 {
            return Err(format!("HTTP {code} from {addr}"));
        }
        let v: Value = serde_json::from_str(&body)
            .map_err(|e| format!("invalid reply from {addr}: not a /status ({e})"))?;
        if v["node"].as_u64() != Some(id as u64) {
            return Err(format!("{addr} answers as node {}", v["node"]));
        }
        if let (Some(want), Some(got)) = (cluster, v["cluster"].as_str()) {
            if want != got {
                return Err(format!("{addr} is in cluster {got:?}, not {want:?}"));
            }
        }
        Ok(v)
    });
    match outcome {
        Ok(v) => {
            r.reachable = true;
            r.paused = v["paused"].as_bool().unwrap_or(false);
            r.status = Some(v);
        }
        Err(e) => r.error = Some(e),
    }
    r
}

/// One node's view of one group.
#[derive(Clone, Debug, Serialize, PartialEq)]
struct GroupReport {
    node: NodeId,
    leader: Option<NodeId>,
    /// The group's fencing token as `/status` reports it (`token`, else `term`).
    token: Option<u64>,
    state: String,
    electing: bool,
    /// Why this node may not lead the group (`drained`, `fault`, …; `/status`'s
    /// `ineligible`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    ineligible: Vec<String>,
}

#[derive(Debug, Serialize)]
struct AlgorithmReport {
    algorithm: String,
    agreed: bool,
    leader: Option<NodeId>,
    /// Why not agreed (empty when agreed).
    #[serde(skip_serializing_if = "String::is_empty")]
    problem: String,
    nodes: Vec<GroupReport>,
}

#[derive(Debug, Serialize)]
struct ClusterReport {
    cluster: Option<String>,
    agreed: bool,
    answered: usize,
    unreachable: Vec<NodeId>,
    nodes: Vec<NodeReport>,
    algorithms: Vec<AlgorithmReport>,
    config: ConfigReport,
}

/// The answering nodes' configuration digests (`/status`'s `config`): config drift.
/// It does not change the exit status, which is about leadership.
#[derive(Debug, Default, Serialize)]
struct ConfigReport {
    /// Every answering node that reports a digest has the same one, and none of them
    /// hears a different one from a peer.
    agreed: bool,
    /// Each digest reported, with the nodes that have it.
    digests: BTreeMap<String, Vec<NodeId>>,
    /// Per node that hears a differing digest, the peers it hears it from.
    mismatch: BTreeMap<NodeId, Vec<NodeId>>,
}

fn config_of(nodes: &[NodeReport]) -> ConfigReport {
    let mut r = ConfigReport::default();
    for n in nodes {
        let Some(c) = n.status.as_ref().map(|s| &s["config"]) else {
            continue;
        };
        if let Some(d) = c["digest"].as_str() {
            r.digests.entry(d.to_string()).or_default().push(n.id);
        }
        let peers: Vec<NodeId> = c["mismatch"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_u64().map(|p| p as NodeId))
            .collect();
        if !peers.is_empty() {
            r.mismatch.insert(n.id, peers);
        }
    }
    r.agreed = r.digests.len() <= 1 && r.mismatch.is_empty();
    r
}

fn group_of(node: NodeId, g: &Value) -> GroupReport {
    GroupReport {
        node,
        leader: g["leader"].as_u64().map(|l| l as NodeId),
        token: g
            .get("token")
            .and_then(Value::as_u64)
            .or_else(|| g["term"].as_u64()),
        state: g["state"].as_str().unwrap_or("?").to_string(),
        electing: g["electing"].as_bool().unwrap_or(false),
        ineligible: g["ineligible"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_string))
            .collect(),
    }
}

/// When no answering node may lead the group (each is drained, failing a check, …):
/// the problem to report ahead of "electing" or "no leader", which are its symptoms.
fn nobody_may_lead(views: &[GroupReport], unreachable: bool) -> Option<String> {
    if views.is_empty() || views.iter().any(|v| v.ineligible.is_empty()) {
        return None;
    }
    let every = if unreachable {
        "every node that answered"
    } else {
        "every node"
    };
    if views
        .iter()
        .all(|v| v.ineligible.iter().any(|r| r == "drained"))
    {
        return Some(format!(
            "{every} is drained, so none may lead: `electd undrain` one of them"
        ));
    }
    let why: Vec<String> = views
        .iter()
        .map(|v| format!("node {} {}", v.node, v.ineligible.join("+")))
        .collect();
    Some(format!("no node may lead ({})", why.join(", ")))
}

fn analyse(cluster: Option<String>, nodes: Vec<NodeReport>) -> ClusterReport {
    let active: Vec<&NodeReport> = nodes.iter().filter(|n| n.reachable && !n.paused).collect();
    let some_missing = active.len() < nodes.len();
    // Every algorithm any answering node runs, in the order the nodes list them.
    let mut names: Vec<String> = Vec::new();
    for n in &active {
        for a in n
            .status
            .as_ref()
            .and_then(|s| s["algorithms"].as_array())
            .into_iter()
            .flatten()
        {
            if let Some(a) = a.as_str() {
                if !names.iter().any(|x| x == a) {
                    names.push(a.to_string());
                }
            }
        }
    }
    let algorithms: Vec<AlgorithmReport> = names
        .into_iter()
        .map(|name| {
            let mut views = Vec::new();
            let mut missing = Vec::new();
            for n in &active {
                let g = n
                    .status
                    .as_ref()
                    .and_then(|s| s["groups"].as_array())
                    .and_then(|gs| gs.iter().find(|g| g["algorithm"].as_str() == Some(&name)));
                match g {
                    Some(g) => views.push(group_of(n.id, g)),
                    None => missing.push(n.id),
                }
            }
            let leaders: Vec<Option<NodeId>> = views.iter().map(|v| v.leader).collect();
            let problem = if !missing.is_empty() {
                format!("nodes {missing:?} do not run it")
            } else if let Some(why) = nobody_may_lead(&views, some_missing) {
                why
            } else if let Some(v) = views.iter().find(|v| v.electing) {
                format!("node {} is electing", v.node)
            } else if let Some(v) = views.iter().find(|v| v.leader.is_none()) {
                format!("node {} knows no leader", v.node)
            } else if leaders.windows(2).any(|w| w[0] != w[1]) {
                "the nodes follow different leaders".to_string()
            } else {
                String::new()
            };
            let agreed = problem.is_empty() && !views.is_empty();
            AlgorithmReport {
                algorithm: name,
                agreed,
                leader: if agreed { leaders[0] } else { None },
                problem,
                nodes: views,
            }
        })
        .collect();
    let unreachable = nodes
        .iter()
        .filter(|n| !n.reachable)
        .map(|n| n.id)
        .collect();
    ClusterReport {
        cluster,
        config: config_of(&nodes),
        agreed: !active.is_empty() && algorithms.iter().all(|a| a.agreed),
        answered: nodes.iter().filter(|n| n.reachable).count(),
        unreachable,
        nodes,
        algorithms,
    }
}

fn table(r: &ClusterReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "cluster {} · {} nodes · {} answered{}",
        r.cluster.as_deref().unwrap_or("?"),
        r.nodes.len(),
        r.answered,
        if r.unreachable.is_empty() {
            String::new()
        } else {
            format!(" · unreachable: {:?}", r.unreachable)
        }
    );
    let cell = |n: &NodeReport, a: &AlgorithmReport| -> String {
        if !n.reachable {
            return "-".into();
        }
        if n.paused {
            return "paused".into();
        }
        match a.nodes.iter().find(|v| v.node == n.id) {
            None => "absent".into(),
            Some(v) => {
                let leader = v.leader.map_or("?".to_string(), |l| l.to_string());
                let token = v.token.map_or(String::new(), |t| format!(" t{t}"));
                let electing = if v.electing { " electing" } else { "" };
                format!("{leader}{token}{electing}")
            }
        }
    };
    let mut rows: Vec<Vec<String>> = vec![["ALGORITHM", "AGREED", "LEADER"]
        .iter()
        .map(|s| s.to_string())
        .chain(r.nodes.iter().map(|n| format!("node {}", n.id)))
        .collect()];
    for a in &r.algorithms {
        let mut row = vec![
            a.algorithm.clone(),
            if a.agreed { "yes" } else { "NO" }.to_string(),
            a.leader.map_or("-".to_string(), |l| l.to_string()),
        ];
        row.extend(r.nodes.iter().map(|n| cell(n, a)));
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(s, w)| format!("{s:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    for a in r.algorithms.iter().filter(|a| !a.agreed) {
        let _ = writeln!(out, "{}: not agreed: {}", a.algorithm, a.problem);
    }
    for n in r.nodes.iter().filter(|n| !n.reachable) {
        let _ = writeln!(
            out,
            "node {} unreachable: {}",
            n.id,
            n.error.as_deref().unwrap_or("?")
        );
    }
    let c = &r.config;
    match c.digests.keys().next() {
        Some(d) if c.agreed => {
            let _ = writeln!(out, "config: every answering node runs digest {d}");
        }
        None => {}
        Some(_) => {
            let spread: Vec<String> = c
                .digests
                .iter()
                .map(|(d, ids)| format!("{d} on {ids:?}"))
                .collect();
            let _ = writeln!(out, "config: DRIFT: digest {}", spread.join("; "));
            for (node, peers) in &c.mismatch {
                let _ = writeln!(
                    out,
                    "config: node {node} hears another configuration from {peers:?}"
                );
            }
        }
    }
    if r.answered == 0 {
        let _ = writeln!(out, "no node answered");
    }
    out
}

pub fn status(args: StatusArgs) -> ExitCode {
    let roster = match load_roster(&args.config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("electd: error: {e:#}");
            return ExitCode::from(1);
        }
    };
    let cluster = roster.cluster.clone();
    let nodes: Vec<NodeReport> = std::thread::scope(|s| {
        let handles: Vec<_> = roster
            .peers
            .iter()
            .map(|(id, http)| {
                let cluster = cluster.as_deref();
                s.spawn(move || ask(*id, http, cluster, args.timeout))
            })
            .collect();
        handles
            .into_iter()
            .zip(&roster.peers)
            .map(|(h, (id, http))| {
                h.join().unwrap_or_else(|_| NodeReport {
                    id: *id,
                    http: http.clone(),
                    reachable: false,
                    paused: false,
                    error: Some("query thread failed".into()),
                    status: None,
                })
            })
            .collect()
    });
    let report = analyse(cluster, nodes);
    match args.format {
        StatusFormat::Table => print!("{}", table(&report)),
        StatusFormat::Json => match serde_json::to_string_pretty(&report) {
            Ok(j) => println!("{j}"),
            Err(e) => {
                eprintln!("electd: error: {e}");
                return ExitCode::from(1);
            }
        },
    }
    if report.agreed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests;
