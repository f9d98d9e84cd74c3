//! A cluster of real `electd run` processes on 127.0.0.1, the one harness of the
//! bench (failover, cost, cold start, etcd comparison) and the process-level tests:
//! free ports, one shared config file with a generated key, durable state per node,
//! the node's log in a file, `/status` and `/metrics` over [`crate::http::client`],
//! and a guard that kills every process it started (by PID) when dropped, even when a
//! test fails (the directory is then kept for inspection).

use crate::contract::algorithm::AlgorithmKind;
use crate::http::client::http_request;
use crate::NodeId;
use anyhow::Context;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The `[timing]` and `[transport]` settings of a bench cluster, in milliseconds.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ClusterTiming {
    pub heartbeat_ms: u64,
    pub failure_ms: u64,
    pub answer_ms: u64,
    pub coordinator_ms: u64,
    /// Raft election timeout range.
    pub election_min_ms: u64,
    pub election_max_ms: u64,
    pub retransmit_ms: u64,
    /// Legacy `transport.max_attempts`; `None`: the adaptive link's defaults.
    pub max_attempts: Option<u32>,
    /// `transport.batch_heartbeats` (the default, true, is not written).
    pub batch_heartbeats: bool,
}

impl ClusterTiming {
    /// The failover setting: heartbeat 10 ms, failure_timeout 100 ms, answer
    /// 10 ms, Raft election timeout failure_timeout..2×failure_timeout.
    pub fn failover() -> ClusterTiming {
        ClusterTiming {
            heartbeat_ms: 10,
            failure_ms: 100,
            answer_ms: 10,
            coordinator_ms: 50,
            election_min_ms: 100,
            election_max_ms: 200,
            retransmit_ms: 5,
            max_attempts: None,
            batch_heartbeats: true,
        }
    }

    /// The same settings as the nodes' [`Timing`](crate::contract::algorithm::Timing).
    pub fn timing(&self) -> crate::contract::algorithm::Timing {
        let ms = Duration::from_millis;
        crate::contract::algorithm::Timing {
            heartbeat: ms(self.heartbeat_ms),
            failure_timeout: ms(self.failure_ms),
            answer_timeout: ms(self.answer_ms),
            coordinator_timeout: ms(self.coordinator_ms),
            election_timeout_min: ms(self.election_min_ms),
            election_timeout_max: ms(self.election_max_ms),
        }
    }

    /// Heartbeat `hb`, everything else scaled to it (failure = 10 × hb).
    pub fn with_heartbeat(hb: u64) -> ClusterTiming {
        ClusterTiming {
            heartbeat_ms: hb,
            failure_ms: 10 * hb,
            answer_ms: hb,
            coordinator_ms: 5 * hb,
            election_min_ms: 10 * hb,
            election_max_ms: 20 * hb,
            retransmit_ms: 5,
            max_attempts: None,
            batch_heartbeats: true,
        }
    }
}

/// One node of a [`ProcCluster`]: its roster entry and its process, if running.
pub struct Proc {
    pub id: NodeId,
    /// UDP address in the roster (a test may rewrite it before writing its own config).
    pub udp: SocketAddr,
    /// HTTP API address.
    pub http: SocketAddr,
    child: Option<Child>,
}

/// See the module documentation.
pub struct ProcCluster {
    exe: PathBuf,
    /// The cluster's directory: config, key, logs (`node<ID>.log`), state files.
    pub dir: PathBuf,
    /// The config file every node runs with.
    pub config: PathBuf,
    /// Bearer token of the admin routes, when the config sets one.
    token: Option<String>,
    pub nodes: Vec<Proc>,
}

/// A free UDP and a free TCP port on 127.0.0.1, held bound in `held` until the
/// caller has handed out every port of the cluster (released ports would otherwise be
/// handed out twice).
fn free_pair(held: &mut Vec<Box<dyn std::any::Any>>) -> std::io::Result<(SocketAddr, SocketAddr)> {
    let udp = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let tcp = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addrs = (udp.local_addr()?, tcp.local_addr()?);
    held.push(Box::new(udp));
    held.push(Box::new(tcp));
    Ok(addrs)
}

/// The PIDs whose parent is `parent`, from `proc`'s `<pid>/stat` (pass `/proc`). The
/// parent is the field after the command name, which is in parentheses and may hold
/// any byte, so it is read after the last `)`.
pub fn children_of(parent: u32, proc: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut out: Vec<u32> = entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let after = &stat[stat.rfind(')')? + 1..];
            let ppid: u32 = after.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == parent).then_some(pid)
        })
        .collect();
    out.sort_unstable();
    out
}

/// Make `dir` empty (removing what a previous run left) and write a fresh
/// `cluster.key` in it.
pub fn fresh_dir(dir: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    crate::security::keyring::write_key_file(&dir.join("cluster.key")).context("write the key")
}

impl ProcCluster {
    /// The bench's cluster: the config of `n` nodes (ids 1..=n) with timing `t` and an
    /// admin token, under a fresh directory in `parent`.
    pub fn new(
        exe: &Path,
        parent: &Path,
        name: &str,
        n: NodeId,
        algorithms: &[AlgorithmKind],
        t: &ClusterTiming,
    ) -> anyhow::Result<ProcCluster> {
        let mut dir = parent.join(format!("electd-bench-{name}-{}", std::process::id()));
        if std::env::var_os("KEEP").is_some() {
            // Kept clusters of one name (a bench's tries) each keep their own.
            let base = dir.clone();
            for k in 2..1000 {
                if !dir.exists() {
                    break;
                }
                dir = base.with_file_name(format!(
                    "{}-{k}",
                    base.file_name().unwrap_or_default().to_string_lossy()
                ));
            }
        }
        fresh_dir(&dir)?;
        let token = crate::security::keyring::to_hex(&crate::security::keyring::random_key()?);
        std::fs::write(dir.join("admin.token"), &token)?;
        // Readable by its owner only, as a deployed token should be (no warning).
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                dir.join("admin.token"),
                std::fs::Permissions::from_mode(0o600),
            )?;
        }
        let algos: Vec<String> = algorithms.iter().map(|a| format!("\"{a}\"")).collect();
        let head = format!(
            "cluster = \"bench-{name}\"\nalgorithms = [{}]\n\n[timing]\nheartbeat = \"{}ms\"\n\
             failure_timeout = \"{}ms\"\nanswer_timeout = \"{}ms\"\ncoordinator_timeout = \"{}ms\"\n\
             election_timeout = \"{}ms..{}ms\"\n\n[transport]\nretransmit = \"{}ms\"\n{}\n\
             [security]\nkey_file = \"cluster.key\"\n\n[admin]\ntoken_file = \"admin.token\"\n",
            algos.join(", "),
            t.heartbeat_ms,
            t.failure_ms,
            t.answer_ms,
            t.coordinator_ms,
            t.election_min_ms,
            t.election_max_ms,
            t.retransmit_ms,
            t.max_attempts
                .map(|n| format!("max_attempts = {n}\n"))
                .unwrap_or_default()
                + if t.batch_heartbeats {
                    ""
                } else {
                    "batch_heartbeats = false\n"
                }
        );
        Self::with_config(exe, dir, n, &head, Some(token))
    }

    /// A cluster of `n` nodes (ids 1..=n) in `dir` (prepared by [`fresh_dir`]): `head`
    /// (everything but the roster) and one `[[peer]]` per node on free loopback ports
    /// become `dir/electd.toml`. `token`: the admin token `head` configures, if any.
    pub fn with_config(
        exe: &Path,
        dir: PathBuf,
        n: NodeId,
        head: &str,
        token: Option<String>,
    ) -> anyhow::Result<ProcCluster> {
        let mut text = head.to_string();
        let mut nodes = Vec::new();
        let mut held = Vec::new();
        for id in 1..=n {
            let (udp, http) = free_pair(&mut held)?;
            text.push_str(&format!(
                "\n[[peer]]\nid = {id}\naddr = \"{udp}\"\nhttp = \"{http}\"\n"
            ));
            nodes.push(Proc {
                id,
                udp,
                http,
                child: None,
            });
        }
        let config = dir.join("electd.toml");
        std::fs::write(&config, text).with_context(|| format!("write {}", config.display()))?;
        Ok(ProcCluster {
            exe: exe.to_path_buf(),
            dir,
            config,
            token,
            nodes,
        })
    }

    fn node(&self, id: NodeId) -> Option<&Proc> {
        self.nodes.iter().find(|n| n.id == id)
    }

    fn node_mut(&mut self, id: NodeId) -> anyhow::Result<&mut Proc> {
        self.nodes
            .iter_mut()
            .find(|n| n.id == id)
            .with_context(|| format!("no node {id} in the cluster"))
    }

    pub fn ids(&self) -> Vec<NodeId> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    /// The nodes whose process runs (started and not killed or reaped).
    pub fn live(&self) -> Vec<NodeId> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.id)
            .collect()
    }

    pub fn http(&self, id: NodeId) -> Option<SocketAddr> {
        self.node(id).map(|n| n.http)
    }

    pub fn pid(&self, id: NodeId) -> Option<u32> {
        self.node(id)?.child.as_ref().map(|c| c.id())
    }

    pub fn start(&mut self, id: NodeId) -> anyhow::Result<()> {
        self.start_with_env(id, &[])
    }

    /// Start node `id` with extra environment variables (e.g. `ELECTD_*` overrides).
    /// Durable state as shipped (raft refuses to run without): one file per node in
    /// the cluster's directory, unless the config names its own.
    pub fn start_with_env(&mut self, id: NodeId, env: &[(&str, &str)]) -> anyhow::Result<()> {
        let log = std::fs::File::create(self.dir.join(format!("node{id}.log")))?;
        let text = std::fs::read_to_string(&self.config).unwrap_or_default();
        let state = (!text.contains("state_file") && !text.contains("[state]"))
            .then(|| self.dir.join("{node}.state").display().to_string());
        let child = Command::new(&self.exe)
            .arg("run")
            .arg("--config")
            .arg(&self.config)
            .arg("--node-id")
            .arg(id.to_string())
            .env(
                "ELECTD_LOG",
                std::env::var("TEST_ELECTD_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .envs(state.iter().map(|s| ("ELECTD_STATE_FILE", s.as_str())))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawn {} run", self.exe.display()))?;
        self.node_mut(id)?.child = Some(child);
        Ok(())
    }

    pub fn start_all(&mut self) -> anyhow::Result<()> {
        for id in self.ids() {
            self.start(id)?;
        }
        Ok(())
    }

    /// Send `sig` (e.g. `libc::SIGHUP`) to node `id` if it runs.
    pub fn signal(&self, id: NodeId, sig: i32) {
        if let Some(pid) = self.pid(id) {
            // SAFETY: kill(2) on the PID of a child this cluster started and has not reaped.
            unsafe {
                libc::kill(pid as libc::pid_t, sig);
            }
        }
    }

    /// SIGKILL, then reap.
    pub fn kill(&mut self, id: NodeId) {
        if let Ok(n) = self.node_mut(id) {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    /// Send SIGTERM; the child stays registered until [`ProcCluster::reap`] or
    /// [`ProcCluster::wait_exit`].
    pub fn terminate(&mut self, id: NodeId) {
        self.signal(id, libc::SIGTERM);
    }

    /// Wait up to `within` for node `id`'s process to exit and return how it exited;
    /// `None` (after a SIGKILL) when it did not, or when it was not running.
    pub fn wait_exit(&mut self, id: NodeId, within: Duration) -> Option<ExitStatus> {
        let mut c = self.node_mut(id).ok()?.child.take()?;
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = c.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Wait up to `within` for a terminated node to exit (SIGKILL after that);
    /// returns whether it exited by itself (true when it was not running).
    pub fn reap(&mut self, id: NodeId, within: Duration) -> bool {
        match self.node(id) {
            None => false,
            Some(n) if n.child.is_none() => true,
            Some(_) => self.wait_exit(id, within).is_some(),
        }
    }

    /// What node `id`'s process wrote to its log (stderr).
    pub fn log(&self, id: NodeId) -> String {
        std::fs::read_to_string(self.dir.join(format!("node{id}.log"))).unwrap_or_default()
    }

    /// The last line node `id`'s process wrote to its log (stderr), if any.
    pub fn last_log_line(&self, id: NodeId) -> Option<String> {
        self.log(id)
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(str::to_string)
    }

    pub fn is_running(&self, id: NodeId) -> bool {
        self.node(id).is_some_and(|n| n.child.is_some())
    }

    /// `POST /admin/<what>` with the cluster's token; true on 2xx.
    pub fn admin(&self, id: NodeId, what: &str) -> bool {
        let (Some(addr), Some(token)) = (self.http(id), self.token.as_deref()) else {
            return false;
        };
        http_request(addr, "POST", &format!("/admin/{what}"), Some(token))
            .is_some_and(|(code, _)| (200..300).contains(&code))
    }

    /// `GET path` on node `id`: the body if the status is 200.
    pub fn get(&self, id: NodeId, path: &str) -> Option<String> {
        let (code, body) = http_request(self.http(id)?, "GET", path, None)?;
        (code == 200).then_some(body)
    }

    /// Node `id`'s `/status`, parsed.
    pub fn status(&self, id: NodeId) -> Option<serde_json::Value> {
        serde_json::from_str(&self.get(id, "/status")?).ok()
    }

    /// Node `id`'s `/metrics` text.
    pub fn metrics(&self, id: NodeId) -> Option<String> {
        self.get(id, "/metrics")
    }

    /// Wait until node `id` answers `/healthz`.
    pub fn wait_http(&self, id: NodeId, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.get(id, "/healthz").is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }
}

impl Drop for ProcCluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        // A failing test keeps the directory (config, logs) for inspection, and so
        // does any cluster when `KEEP` is set (a bench run's node logs, e.g. with
        // `TEST_ELECTD_LOG=info`).
        if std::env::var_os("KEEP").is_some() {
            eprintln!("KEEP: cluster directory kept: {}", self.dir.display());
        } else if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_children_are_read_from_proc_whatever_their_names() {
        let dir = std::env::temp_dir().join(format!("electd-children-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (pid, stat) in [
            ("10", "10 (electd) S 7 10 10 0 -1"),
            // A name with spaces and a parenthesis: the parent follows the last `)`.
            ("11", "11 (a) S 3 (x) S 9 11 11 0 -1"),
            ("12", "12 (sh) S 9 12 12 0 -1"),
            ("13", "13 (etcd) R 7 13 13 0 -1"),
        ] {
            std::fs::create_dir_all(dir.join(pid)).unwrap();
            std::fs::write(dir.join(pid).join("stat"), stat).unwrap();
        }
        // Not a process: no numeric name, or no stat.
        std::fs::create_dir_all(dir.join("self")).unwrap();
        std::fs::create_dir_all(dir.join("14")).unwrap();
        assert_eq!(children_of(7, &dir), vec![10, 13]);
        assert_eq!(children_of(9, &dir), vec![11, 12]);
        assert!(children_of(1, &dir).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn this_process_has_the_child_it_spawned() {
        let mut child = Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let pid = child.id();
        let found = children_of(std::process::id(), Path::new("/proc"));
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.contains(&pid), "{pid} not in {found:?}");
    }
}
