//! A cluster of real `electd run` processes on 127.0.0.1 for the failover and cost
//! benchmarks: free ports, one shared config file (with a generated key and admin
//! token), a minimal HTTP client, and a guard that kills every process it started (by
//! PID) when dropped.

use crate::contract::algorithm::AlgorithmKind;
use crate::NodeId;
use anyhow::Context;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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
        }
    }
}

struct Proc {
    id: NodeId,
    udp: SocketAddr,
    http: SocketAddr,
    child: Option<Child>,
}

/// See the module documentation.
pub struct ProcCluster {
    exe: PathBuf,
    dir: PathBuf,
    config: PathBuf,
    token: String,
    nodes: Vec<Proc>,
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

impl ProcCluster {
    /// Write the config of `n` nodes (ids 1..=n) under a fresh directory in `parent`.
    pub fn new(
        exe: &Path,
        parent: &Path,
        name: &str,
        n: NodeId,
        algorithms: &[AlgorithmKind],
        t: &ClusterTiming,
    ) -> anyhow::Result<ProcCluster> {
        let dir = parent.join(format!("electd-bench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        crate::security::keyring::write_key_file(&dir.join("cluster.key"))
            .context("write the key")?;
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
        let mut text = format!(
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
        );
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
        std::fs::write(&config, text)?;
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
            .with_context(|| format!("no node {id} in the bench cluster"))
    }

    pub fn ids(&self) -> Vec<NodeId> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    pub fn http(&self, id: NodeId) -> Option<SocketAddr> {
        self.node(id).map(|n| n.http)
    }

    pub fn udp(&self, id: NodeId) -> Option<SocketAddr> {
        self.node(id).map(|n| n.udp)
    }

    pub fn pid(&self, id: NodeId) -> Option<u32> {
        self.node(id)?.child.as_ref().map(|c| c.id())
    }

    pub fn start(&mut self, id: NodeId) -> anyhow::Result<()> {
        let log = std::fs::File::create(self.dir.join(format!("node{id}.log")))?;
        let child = Command::new(&self.exe)
            .arg("run")
            .arg("--config")
            .arg(&self.config)
            .arg("--node-id")
            .arg(id.to_string())
            .env("ELECTD_LOG", "warn")
            // Durable state as shipped (raft refuses to run without): one file per node.
            .env("ELECTD_STATE_FILE", self.dir.join("{node}.state"))
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

    /// SIGKILL, then reap.
    pub fn kill(&mut self, id: NodeId) {
        if let Ok(n) = self.node_mut(id) {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    /// Send SIGTERM; the child stays registered until [`ProcCluster::reap`].
    pub fn terminate(&mut self, id: NodeId) {
        if let Some(pid) = self.pid(id) {
            // SAFETY: kill(2) on the PID of a child this cluster started and has not reaped.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
        }
    }

    /// Wait up to `within` for a terminated node to exit (SIGKILL after that);
    /// returns whether it exited by itself.
    pub fn reap(&mut self, id: NodeId, within: Duration) -> bool {
        let Ok(n) = self.node_mut(id) else {
            return false;
        };
        let Some(mut c) = n.child.take() else {
            return true;
        };
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(_)) = c.try_wait() {
                return true;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The last line node `id`'s process wrote to its log (stderr), if any.
    pub fn last_log_line(&self, id: NodeId) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join(format!("node{id}.log"))).ok()?;
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(str::to_string)
    }

    pub fn is_running(&self, id: NodeId) -> bool {
        self.node(id).is_some_and(|n| n.child.is_some())
    }

    /// `POST /admin/<what>` with the cluster's token; true on 2xx.
    pub fn admin(&self, id: NodeId, what: &str) -> bool {
        let Some(addr) = self.http(id) else {
            return false;
        };
        http_request(addr, "POST", &format!("/admin/{what}"), Some(&self.token))
            .is_some_and(|(code, _)| (200..300).contains(&code))
    }

    pub fn get(&self, id: NodeId, path: &str) -> Option<String> {
        let (code, body) = http_request(self.http(id)?, "GET", path, None)?;
        (code == 200).then_some(body)
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
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One HTTP/1.1 request with `Connection: close`: (status code, de-chunked body).
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> Option<(u16, String)> {
    http_request_within(
        addr,
        method,
        path,
        token,
        Duration::from_millis(500),
        Duration::from_secs(5),
    )
}

/// [`http_request`] with explicit connect and read timeouts.
pub fn http_request_within(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    connect: Duration,
    read: Duration,
) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, connect).ok()?;
    s.set_read_timeout(Some(read)).ok()?;
    s.set_write_timeout(Some(read)).ok()?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let (head, body) = buf.split_once("\r\n\r\n")?;
    let code: u16 = head.split_whitespace().nth(1)?.parse().ok()?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((code, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Sum of a Prometheus series over the lines whose labels contain every `labels`
/// pair (text exposition format; series without labels match when `labels` is empty).
pub fn metric_sum(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| {
            l.starts_with(name) && matches!(l.as_bytes().get(name.len()), Some(b'{') | Some(b' '))
        })
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_sum_matches_name_and_labels() {
        let text = "electd_bytes_sent_total{node=\"1\"} 120\n\
                    electd_bytes_sent_total_x{node=\"1\"} 5\n\
                    electd_messages_sent_total{algorithm=\"bully\",node=\"1\",type=\"ok\"} 3\n\
                    electd_messages_sent_total{algorithm=\"bully\",node=\"1\",type=\"election\"} 4\n";
        assert_eq!(metric_sum(text, "electd_bytes_sent_total", &[]), 120.0);
        assert_eq!(metric_sum(text, "electd_messages_sent_total", &[]), 7.0);
        assert_eq!(
            metric_sum(text, "electd_messages_sent_total", &[("type", "ok")]),
            3.0
        );
    }

    #[test]
    fn dechunks() {
        assert_eq!(dechunk("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), "abcde");
    }
}
