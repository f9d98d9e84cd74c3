//! A cluster of real `electd run` processes on 127.0.0.1 for the integration tests:
//! free ports, one shared config file, `/status` over a minimal HTTP client, and a
//! guard that kills every process it started (by PID) when dropped, even when the
//! test fails.

#![allow(dead_code)]

use electd::contract::algorithm::AlgorithmKind;
use electd::NodeId;
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Timing section of the config, as TOML text.
pub struct Timing {
    pub heartbeat_ms: u64,
    pub failure_ms: u64,
    pub answer_ms: u64,
    pub coordinator_ms: u64,
    pub retransmit_ms: u64,
    pub max_attempts: u32,
}

impl Timing {
    /// Worst case from a leader crash to agreement: detection (failure timeout + one
    /// heartbeat), then a Bully cascade (T + T' per level, three levels at most before
    /// the winner announces, each possibly retransmitted once), plus the link's
    /// give-up time for messages to the dead node.
    pub fn failover_bound(&self) -> Duration {
        let give_up: u64 = (1..=self.max_attempts)
            .map(|a| self.retransmit_ms << (a - 1).min(3))
            .sum();
        Duration::from_millis(
            self.failure_ms
                + self.heartbeat_ms
                + 3 * (self.answer_ms + self.coordinator_ms + self.retransmit_ms)
                + give_up,
        )
    }
}

pub struct Node {
    pub id: NodeId,
    pub udp: SocketAddr,
    pub http: SocketAddr,
    child: Option<Child>,
}

/// The processes of one test cluster (see the module documentation).
pub struct Cluster {
    pub dir: PathBuf,
    pub config: PathBuf,
    pub nodes: Vec<Node>,
}

/// A free UDP and a free TCP port, held bound in `held` until every port of the
/// cluster is handed out (released ports could be handed out twice).
fn free_pair(held: &mut Vec<Box<dyn std::any::Any>>) -> (SocketAddr, SocketAddr) {
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind udp");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("bind tcp");
    let addrs = (udp.local_addr().unwrap(), tcp.local_addr().unwrap());
    held.push(Box::new(udp));
    held.push(Box::new(tcp));
    addrs
}

impl Cluster {
    /// Write a config for `n` nodes (ids 1..=n) running `algorithms`, with a fresh key.
    pub fn new(name: &str, n: NodeId, algorithms: &[AlgorithmKind], t: &Timing) -> Cluster {
        let dir = std::env::temp_dir().join(format!("electd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        electd::security::keyring::write_key_file(&dir.join("cluster.key")).unwrap();
        let algos: Vec<String> = algorithms.iter().map(|a| format!("\"{a}\"")).collect();
        let mut text = format!(
            "cluster = \"{name}\"\nalgorithms = [{}]\n\n[timing]\nheartbeat = \"{}ms\"\n\
             failure_timeout = \"{}ms\"\nanswer_timeout = \"{}ms\"\ncoordinator_timeout = \"{}ms\"\n\n\
             [transport]\nretransmit = \"{}ms\"\nmax_attempts = {}\n\n[security]\nkey_file = \"cluster.key\"\n",
            algos.join(", "),
            t.heartbeat_ms,
            t.failure_ms,
            t.answer_ms,
            t.coordinator_ms,
            t.retransmit_ms,
            t.max_attempts
        );
        let mut nodes = Vec::new();
        let mut held = Vec::new();
        for id in 1..=n {
            let (udp, http) = free_pair(&mut held);
            text.push_str(&format!(
                "\n[[peer]]\nid = {id}\naddr = \"{udp}\"\nhttp = \"{http}\"\n"
            ));
            nodes.push(Node {
                id,
                udp,
                http,
                child: None,
            });
        }
        let config = dir.join("electd.toml");
        std::fs::write(&config, text).unwrap();
        Cluster { dir, config, nodes }
    }

    /// Append TOML (e.g. a `[raft]` table) to the config; call before starting nodes.
    pub fn append_config(&self, toml: &str) {
        let mut text = std::fs::read_to_string(&self.config).unwrap();
        text.push('\n');
        text.push_str(toml);
        std::fs::write(&self.config, text).unwrap();
    }

    fn node(&mut self, id: NodeId) -> &mut Node {
        self.nodes.iter_mut().find(|n| n.id == id).expect("node id")
    }

    pub fn start(&mut self, id: NodeId) {
        self.start_with_env(id, &[]);
    }

    /// Start node `id` with extra environment variables (e.g. `ELECTD_*` overrides).
    pub fn start_with_env(&mut self, id: NodeId, env: &[(&str, &str)]) {
        let log = std::fs::File::create(self.dir.join(format!("node{id}.log"))).unwrap();
        let config = self.config.clone();
        // Durable state as shipped (raft refuses to run without): one file per node in
        // the cluster's directory, unless the test configures its own.
        let text = std::fs::read_to_string(&config).unwrap_or_default();
        let state = (!text.contains("state_file") && !text.contains("[state]"))
            .then(|| self.dir.join("{node}.state").display().to_string());
        let child = Command::new(env!("CARGO_BIN_EXE_electd"))
            .arg("run")
            .arg("--config")
            .arg(&config)
            .arg("--node-id")
            .arg(id.to_string())
            .env("ELECTD_LOG", "warn")
            .envs(state.iter().map(|s| ("ELECTD_STATE_FILE", s.as_str())))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn electd run");
        self.node(id).child = Some(child);
    }

    pub fn start_all(&mut self) {
        for id in self.ids() {
            self.start(id);
        }
    }

    pub fn ids(&self) -> Vec<NodeId> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    pub fn live(&self) -> Vec<NodeId> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.id)
            .collect()
    }

    /// Send `sig` (e.g. `libc::SIGHUP`) to node `id` if it runs.
    pub fn signal(&mut self, id: NodeId, sig: i32) {
        if let Some(c) = self.node(id).child.as_ref() {
            // SAFETY: plain kill(2) on the PID of a child this test started and has not reaped.
            unsafe {
                libc::kill(c.id() as libc::pid_t, sig);
            }
        }
    }

    /// SIGKILL, then reap.
    pub fn kill(&mut self, id: NodeId) {
        if let Some(mut c) = self.node(id).child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, then wait up to `within` for the exit; returns the exit code.
    pub fn terminate(&mut self, id: NodeId, within: Duration) -> Option<i32> {
        let mut c = self.node(id).child.take()?;
        // SAFETY: plain kill(2) on the PID of a child this test started and has not reaped.
        unsafe {
            libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = c.try_wait() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn status(&self, id: NodeId) -> Option<Value> {
        let n = self.nodes.iter().find(|n| n.id == id)?;
        let body = http_get(n.http, "/status")?;
        serde_json::from_str(&body).ok()
    }

    pub fn metrics(&self, id: NodeId) -> Option<String> {
        let n = self.nodes.iter().find(|n| n.id == id)?;
        http_get(n.http, "/metrics")
    }

    /// Per algorithm, the leader all live nodes agree on (not electing), if they do.
    pub fn agreement(&self) -> Result<BTreeMap<String, NodeId>, String> {
        let live = self.live();
        let mut seen: BTreeMap<String, Vec<Option<u64>>> = BTreeMap::new();
        for &id in &live {
            let s = self.status(id).ok_or(format!("node {id}: no /status"))?;
            for g in s["groups"].as_array().ok_or("no groups")? {
                let algo = g["algorithm"].as_str().unwrap_or("?").to_string();
                let leader = if g["electing"].as_bool() == Some(true) {
                    None
                } else {
                    g["leader"].as_u64()
                };
                seen.entry(algo).or_default().push(leader);
            }
        }
        let mut out = BTreeMap::new();
        for (algo, leaders) in seen {
            let first = leaders[0];
            match first {
                Some(l)
                    if leaders.len() == live.len()
                        && leaders.iter().all(|x| *x == first)
                        && live.contains(&(l as NodeId)) =>
                {
                    out.insert(algo, l as NodeId);
                }
                _ => return Err(format!("{algo}: live {live:?} see {leaders:?}")),
            }
        }
        Ok(out)
    }

    /// Wait until every group agrees and `ok` accepts the leaders, or fail after
    /// `within`. Returns the leaders and how long it took.
    pub fn wait_agreement(
        &self,
        within: Duration,
        ok: impl Fn(&BTreeMap<String, NodeId>) -> bool,
    ) -> Result<(BTreeMap<String, NodeId>, Duration), String> {
        let start = Instant::now();
        loop {
            let r = self.agreement();
            if let Ok(ref leaders) = r {
                if ok(leaders) {
                    return Ok((leaders.clone(), start.elapsed()));
                }
            }
            if start.elapsed() > within {
                return Err(format!("no agreement within {within:?}: {r:?}"));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    pub fn log(&self, id: NodeId) -> String {
        std::fs::read_to_string(self.dir.join(format!("node{id}.log"))).unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `GET path` over HTTP/1.1 with `Connection: close`; the body if the status is 200.
/// (The client of `electd bench`, shared.)
pub fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    match electd::bench::procs::http_request(addr, "GET", path, None)? {
        (200, body) => Some(body),
        _ => None,
    }
}

/// Sum of a Prometheus counter over the series whose labels contain every `labels`
/// pair (text exposition format).
#[allow(unused_imports)]
pub use electd::bench::procs::metric_sum as counter_sum;
