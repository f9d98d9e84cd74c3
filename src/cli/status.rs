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

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The cluster's TOML file (the one every node runs with).
    #[arg(long, short, env = "ELECTD_CONFIG")]
    pub config: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: StatusFormat,
    /// How long to wait for each node to accept the connection and to answer.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
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
    #[arg(long, value_parser = humantime::parse_duration)]
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
    Ok(Roster {
        cluster: raw.cluster,
        peers,
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

/// A `/watch` stream silent for this long is taken as broken: the server sends a
/// keep-alive comment after every [`KEEP_ALIVE`] of silence, so three periods without a
/// byte mean a stopped, hung or cut-off node (or a server too loaded to write for
/// that long), not a quiet one.
const IDLE: Duration = Duration::from_secs(3 * KEEP_ALIVE.as_secs());

/// Why a node's `/watch` stream ended, for a person.
fn stream_error(e: &std::io::Error, addr: SocketAddr) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => format!(
            "{addr} silent for {}s, not even the keep-alive it sends every {}s: the node is \
             stopped, hung or cut off",
            IDLE.as_secs(),
            KEEP_ALIVE.as_secs()
        ),
        ErrorKind::ConnectionRefused => {
            format!("connection refused by {addr} (is electd running there?)")
        }
        _ => format!("{addr}: {e}"),
    }
}

/// What a node's stream thread reports to the printer.
enum Report {
    Connected(NodeId),
    Gone(NodeId, String),
    Event(NodeId, Value),
}

fn rfc3339_ms(at_ms: u64) -> String {
    let t = SystemTime::UNIX_EPOCH + Duration::from_millis(at_ms);
    humantime::format_rfc3339_millis(t).to_string()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub fn watch(args: WatchArgs) -> ExitCode {
    let roster = match load_roster(&args.config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("electd: error: {e:#}");
            return ExitCode::from(1);
        }
    };
    let path = match args.algorithm {
        Some(a) => format!("/watch?algorithm={}", a.0),
        None => "/watch".to_string(),
    };
    let (tx, rx) = std::sync::mpsc::channel::<Report>();
    for (id, http) in roster.peers.clone() {
        let tx = tx.clone();
        let path = path.clone();
        // Detached: the process ends when the printer returns.
        std::thread::spawn(move || loop {
            let mut announced = false;
            let outcome = resolve(&http).and_then(|addr| {
                // Idle limit above the server's keep-alive: a frozen node is reported.
                read_events(addr, &path, Duration::from_secs(1), Some(IDLE), |text| {
                    let Some(data) = text.lines().find_map(|l| l.strip_prefix("data:")) else {
                        return true; // keep-alive comment
                    };
                    let Ok(v) = serde_json::from_str::<Value>(data.trim()) else {
                        return true;
                    };
                    if !announced {
                        announced = true;
                        if tx.send(Report::Connected(id)).is_err() {
                            return false;
                        }
                    }
                    tx.send(Report::Event(id, v)).is_ok()
                })
                .map_err(|e| stream_error(&e, addr))
            });
            let why = match outcome {
                Ok(()) => "stream ended".to_string(),
                Err(e) => e,
            };
            if tx.send(Report::Gone(id, why)).is_err() {
                return;
            }
            // Reconnect pace: a restarting node is picked up within half a second.
            std::thread::sleep(Duration::from_millis(500));
        });
    }
    drop(tx);
    let deadline = args.duration.map(|d| Instant::now() + d);
    let mut p = Printer {
        json: args.format == WatchFormat::Json,
        roster: roster.peers.len(),
        views: BTreeMap::new(),
        connected: BTreeMap::new(),
        agreed: BTreeMap::new(),
    };
    loop {
        let wait = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(w) => w,
                None => return ExitCode::SUCCESS,
            },
            None => Duration::from_secs(3600),
        };
        match rx.recv_timeout(wait) {
            Ok(r) => p.report(r),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return ExitCode::from(1),
        }
    }
}

struct Printer {
    json: bool,
    /// Number of roster nodes: agreement is announced only once each has been heard
    /// of (connected or found unreachable).
    roster: usize,
    /// algorithm → node → (leader, term), for the connected nodes.
    views: BTreeMap<String, BTreeMap<NodeId, (Option<NodeId>, u64)>>,
    /// node → connected (false once reported unreachable).
    connected: BTreeMap<NodeId, bool>,
    /// algorithm → the leader (and term) last announced as agreed.
    agreed: BTreeMap<String, (NodeId, u64)>,
}

impl Printer {
    fn out(&self, json: Value, text: String) {
        if self.json {
            println!("{json}");
        } else {
            println!("{text}");
        }
    }

    fn report(&mut self, r: Report) {
        match r {
            Report::Connected(id) => {
                self.connected.insert(id, true);
                self.out(
                    serde_json::json!({"type": "connected", "node": id, "at_ms": now_ms()}),
                    format!("{} node {id}: connected", rfc3339_ms(now_ms())),
                );
            }
            Report::Gone(id, why) => {
                let was = self.connected.insert(id, false);
                for v in self.views.values_mut() {
                    v.remove(&id);
                }
                if was != Some(false) {
                    self.out(
                        serde_json::json!({"type": "unreachable", "node": id, "error": why, "at_ms": now_ms()}),
                        format!("{} node {id}: unreachable ({why})", rfc3339_ms(now_ms())),
                    );
                }
                let algorithms: Vec<String> = self.views.keys().cloned().collect();
                for a in algorithms {
                    self.check_agreement(&a);
                }
            }
            Report::Event(id, v) => {
                let Some(algorithm) = v["algorithm"].as_str().map(str::to_string) else {
                    return; // `lagged`: a fresh snapshot follows
                };
                let leader = v["leader"].as_u64().map(|l| l as NodeId);
                let term = v["term"].as_u64().unwrap_or(0);
                let at = v["at_ms"].as_u64().unwrap_or_else(now_ms);
                let initial = v["initial"].as_bool().unwrap_or(false);
                self.views
                    .entry(algorithm.clone())
                    .or_default()
                    .insert(id, (leader, term));
                let mut j = v.clone();
                j["type"] = "leader".into();
                let who = leader.map_or("no leader".to_string(), |l| format!("leader {l}"));
                let verb = if initial { "follows" } else { "now follows" };
                self.out(
                    j,
                    format!(
                        "{} {algorithm:<14} node {id} {verb} {who} (term {term})",
                        rfc3339_ms(at)
                    ),
                );
                self.check_agreement(&algorithm);
            }
        }
    }

    /// Announce when every connected node follows one leader of `algorithm` that was
    /// not the last one announced.
    fn check_agreement(&mut self, algorithm: &str) {
        let Some(views) = self.views.get(algorithm) else {
            return;
        };
        if self.connected.len() < self.roster {
            return; // some node has not been heard of yet
        }
        let connected: Vec<NodeId> = self
            .connected
            .iter()
            .filter(|(_, &c)| c)
            .map(|(&id, _)| id)
            .collect();
        if connected.is_empty() || connected.iter().any(|id| !views.contains_key(id)) {
            return;
        }
        let first = views[&connected[0]];
        let Some(leader) = first.0 else {
            return;
        };
        if connected.iter().any(|id| views[id].0 != Some(leader)) {
            return;
        }
        let term = connected.iter().map(|id| views[id].1).max().unwrap_or(0);
        if self.agreed.get(algorithm).map(|a| a.0) == Some(leader) {
            return;
        }
        self.agreed.insert(algorithm.to_string(), (leader, term));
        self.out(
            serde_json::json!({
                "type": "cluster", "algorithm": algorithm, "leader": leader, "term": term,
                "nodes": connected, "at_ms": now_ms(),
            }),
            format!(
                "{} {algorithm:<14} cluster: leader {leader} (term {term}), agreed by nodes {connected:?}",
                rfc3339_ms(now_ms())
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(id: NodeId, groups: Value) -> NodeReport {
        NodeReport {
            id,
            http: format!("127.0.0.1:{}", 5740 + id),
            reachable: true,
            paused: false,
            error: None,
            status: Some(json!({
                "node": id, "cluster": "c", "paused": false,
                "algorithms": ["bully", "raft"], "groups": groups,
            })),
        }
    }

    fn g(algorithm: &str, leader: Option<NodeId>, term: u64, electing: bool) -> Value {
        json!({"algorithm": algorithm, "leader": leader, "term": term,
               "state": "follower", "electing": electing})
    }

    #[test]
    fn agreement_needs_one_leader_no_election_and_every_group() {
        let ok = |l| json!([g("bully", Some(3), 1, false), g("raft", Some(l), 4, false)]);
        let r = analyse(
            Some("c".into()),
            vec![node(1, ok(2)), node(2, ok(2)), node(3, ok(2))],
        );
        assert!(r.agreed);
        assert_eq!(r.algorithms[1].leader, Some(2));
        assert_eq!(r.algorithms[1].nodes[0].token, Some(4));

        let r = analyse(Some("c".into()), vec![node(1, ok(2)), node(2, ok(3))]);
        assert!(!r.agreed);
        assert!(r.algorithms[0].agreed && !r.algorithms[1].agreed);
        assert_eq!(
            r.algorithms[1].problem,
            "the nodes follow different leaders"
        );

        let electing = json!([g("bully", Some(3), 1, true), g("raft", Some(2), 4, false)]);
        let r = analyse(Some("c".into()), vec![node(1, ok(2)), node(2, electing)]);
        assert!(!r.agreed);
        assert_eq!(r.algorithms[0].problem, "node 2 is electing");

        let none = json!([g("bully", None, 1, false), g("raft", Some(2), 4, false)]);
        assert!(!analyse(None, vec![node(1, none)]).agreed);

        let only_bully = json!([g("bully", Some(3), 1, false)]);
        let r = analyse(None, vec![node(1, ok(2)), node(2, only_bully)]);
        assert_eq!(r.algorithms[1].problem, "nodes [2] do not run it");
    }

    #[test]
    fn unreachable_and_paused_nodes_do_not_vote_but_nobody_answering_is_not_agreed() {
        let ok = json!([g("bully", Some(3), 1, false), g("raft", Some(2), 4, false)]);
        let mut down = node(3, json!([]));
        down.reachable = false;
        down.status = None;
        down.error = Some("refused".into());
        let mut paused = node(2, json!([g("bully", None, 1, true)]));
        paused.paused = true;
        let r = analyse(None, vec![node(1, ok), paused, down]);
        assert!(r.agreed, "{r:?}");
        assert_eq!(r.unreachable, vec![3]);
        let t = table(&r);
        assert!(
            t.contains("unreachable: [3]") && t.contains("paused"),
            "{t}"
        );

        let mut down = node(1, json!([]));
        down.reachable = false;
        assert!(!analyse(None, vec![down]).agreed);
    }

    /// Issue 28, item 11: a group in which every node is drained says so, not
    /// "electing" (its symptom); other reasons are named per node.
    #[test]
    fn a_group_with_every_node_drained_says_so() {
        let with = |leader: Option<NodeId>, electing: bool, why: &[&str]| {
            let mut b = g("bully", leader, 1, electing);
            b["ineligible"] = json!(why);
            json!([b, g("raft", Some(2), 4, false)])
        };
        let drained = ["drained"];
        let r = analyse(
            None,
            vec![
                node(1, with(None, true, &drained)),
                node(2, with(None, false, &drained)),
                node(3, with(None, true, &["drained", "fault"])),
            ],
        );
        assert!(!r.algorithms[0].agreed);
        assert!(
            r.algorithms[0].problem.starts_with("every node is drained"),
            "{}",
            r.algorithms[0].problem
        );
        assert!(table(&r).contains("bully: not agreed: every node is drained"));
        assert!(r.algorithms[1].agreed);
        let fault = analyse(
            None,
            vec![
                node(1, with(None, true, &drained)),
                node(2, with(None, true, &["fault"])),
            ],
        );
        assert_eq!(
            fault.algorithms[0].problem,
            "no node may lead (node 1 drained, node 2 fault)"
        );
        // One node may lead: the usual verdict.
        let r = analyse(
            None,
            vec![
                node(1, with(None, true, &drained)),
                node(2, with(None, true, &[])),
            ],
        );
        assert_eq!(r.algorithms[0].problem, "node 1 is electing");
    }

    #[test]
    fn a_token_field_is_preferred_to_the_term() {
        let v = json!({"algorithm": "bully", "leader": 3, "term": 2, "token": 9,
                       "state": "leader", "electing": false});
        assert_eq!(group_of(3, &v).token, Some(9));
    }

    #[test]
    fn roster_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("electd-roster-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("c.toml");
        std::fs::write(&f, "cluster = \"c\"\n[[peer]]\nid = 1\nhttp = \"127.0.0.1:1\"\n[[peer]]\nid = 1\nhttp = \"127.0.0.1:2\"\n").unwrap();
        let e = load_roster(&f).err().unwrap().to_string();
        assert!(e.contains("listed twice") && e.contains("c.toml"), "{e}");
        std::fs::write(&f, "cluster = \"c\"\n").unwrap();
        assert!(load_roster(&f)
            .err()
            .unwrap()
            .to_string()
            .contains("no [[peer]]"));
        std::fs::write(&f, "cluster = \n").unwrap();
        assert!(load_roster(&f)
            .err()
            .unwrap()
            .to_string()
            .contains("line 1"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
