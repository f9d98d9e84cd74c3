//! A cluster of real `electd run` processes on 127.0.0.1: the bench's harness
//! ([`electd::testkit::procs::ProcCluster`], reached through `Deref`) with the tests'
//! config (timing in milliseconds, no admin token) and methods that fail the test
//! instead of returning errors.

use electd::contract::algorithm::AlgorithmKind;
use electd::testkit::procs::{fresh_dir, ProcCluster};
use electd::NodeId;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

/// Timing section of the config, as TOML text.
pub(crate) struct Timing {
    pub heartbeat_ms: u64,
    pub failure_ms: u64,
    pub answer_ms: u64,
    pub coordinator_ms: u64,
    pub retransmit_ms: u64,
    pub max_attempts: u32,
}

impl Timing {
    /// The usual timing of the process tests: heartbeat 20 ms, failure timeout 200 ms,
    /// room for a loaded 2-core machine.
    pub(crate) const LOOPBACK: Timing = Timing {
        heartbeat_ms: 20,
        failure_ms: 200,
        answer_ms: 50,
        coordinator_ms: 150,
        retransmit_ms: 10,
        max_attempts: 4,
    };

    /// Worst case from a leader crash to agreement: detection (failure timeout + one
    /// heartbeat), then a Bully cascade (T + T' per level, three levels at most before
    /// the winner announces, each possibly retransmitted once), plus the link's
    /// give-up time for messages to the dead node.
    pub(crate) fn failover_bound(&self) -> Duration {
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

/// The processes of one test cluster (see the module documentation), and its shared
/// claim on the machine (dropped after the processes are stopped).
pub(crate) struct Cluster(ProcCluster, super::Shared);

impl Deref for Cluster {
    type Target = ProcCluster;
    fn deref(&self) -> &ProcCluster {
        &self.0
    }
}

impl DerefMut for Cluster {
    fn deref_mut(&mut self) -> &mut ProcCluster {
        &mut self.0
    }
}

impl Cluster {
    /// Write a config for `n` nodes (ids 1..=n) running `algorithms`, with a fresh key.
    pub(crate) fn new(name: &str, n: NodeId, algorithms: &[AlgorithmKind], t: &Timing) -> Cluster {
        let claim = super::shared();
        let dir = super::scratch(name);
        fresh_dir(&dir).expect("prepare the cluster directory");
        let algos: Vec<String> = algorithms.iter().map(|a| format!("\"{a}\"")).collect();
        let head = format!(
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
        Cluster(
            ProcCluster::with_config(super::electd_path(), dir, n, &head, None)
                .expect("write the config"),
            claim,
        )
    }

    /// Append TOML (e.g. a `[raft]` table) to the config; call before starting nodes.
    pub(crate) fn append_config(&self, toml: &str) {
        let mut text = std::fs::read_to_string(&self.config).unwrap();
        text.push('\n');
        text.push_str(toml);
        std::fs::write(&self.config, text).unwrap();
    }

    pub(crate) fn start(&mut self, id: NodeId) {
        self.0.start(id).expect("spawn electd run");
    }

    /// Start node `id` with extra environment variables (e.g. `ELECTD_*` overrides).
    pub(crate) fn start_with_env(&mut self, id: NodeId, env: &[(&str, &str)]) {
        self.0.start_with_env(id, env).expect("spawn electd run");
    }

    pub(crate) fn start_all(&mut self) {
        self.0.start_all().expect("spawn electd run");
    }

    /// SIGTERM, then wait up to `within` for the exit; returns the exit code.
    pub(crate) fn terminate(&mut self, id: NodeId, within: Duration) -> Option<i32> {
        self.0.terminate(id);
        self.0.wait_exit(id, within)?.code()
    }

    /// The sum of metric `name` over node `id`'s series whose labels contain every
    /// `labels` pair; `None` if its `/metrics` does not answer.
    pub(crate) fn metric(&self, id: NodeId, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        Some(super::counter_sum(&self.metrics(id)?, name, labels))
    }

    /// Node `id`'s `/status` entry of group `algorithm`; `None` if it does not answer.
    pub(crate) fn group(&self, id: NodeId, algorithm: &str) -> Option<serde_json::Value> {
        let s = self.status(id)?;
        s["groups"]
            .as_array()?
            .iter()
            .find(|g| g["algorithm"] == algorithm)
            .cloned()
    }

    /// Why node `id` is ineligible in group `algorithm` (`/status`'s `ineligible`:
    /// empty when it may lead); `None` if it does not answer.
    pub(crate) fn ineligible(&self, id: NodeId, algorithm: &str) -> Option<Vec<String>> {
        ineligible(&self.group(id, algorithm)?)
    }

    /// Per algorithm, the leader all live nodes agree on (not electing), if they do.
    pub(crate) fn agreement(&self) -> Result<BTreeMap<String, NodeId>, String> {
        let live = self.live();
        let mut seen: BTreeMap<String, Vec<Option<u64>>> = BTreeMap::new();
        for &id in &live {
            let s = self.status(id).ok_or(format!("node {id}: no /status"))?;
            let groups = s["groups"].as_array().ok_or("no groups")?;
            // A node that has not published its first snapshot shows no groups: not
            // an answer yet (its groups would otherwise be left out of the map).
            if groups.is_empty() {
                return Err(format!("node {id}: no groups yet"));
            }
            for g in groups {
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
    pub(crate) fn wait_agreement(
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
}

/// The reasons in a `/status` group's `ineligible` (empty when the node may lead).
pub(crate) fn ineligible(group: &serde_json::Value) -> Option<Vec<String>> {
    Some(
        group["ineligible"]
            .as_array()?
            .iter()
            .filter_map(|r| r.as_str().map(str::to_string))
            .collect(),
    )
}

/// Write the admin token `token` (mode 0600, as a deployed one) into the cluster's
/// directory, point the config at it and append `extra` TOML; returns the token file.
pub(crate) fn with_admin_token(c: &Cluster, token: &str, extra: &str) -> std::path::PathBuf {
    let file = c.dir.join("admin.token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    c.append_config(&format!("[admin]\ntoken_file = \"admin.token\"\n\n{extra}"));
    file
}
