//! The real runtime (`electd::daemon::runtime::run`, wire format, authentication)
//! over turmoil's simulated network: flaky links, partitions, crash and bounce. Every
//! implemented algorithm runs side by side on each host; after the network heals every
//! group must agree again (on the highest live id for the Bully and ring families,
//! Garcia-Molina 1982 / Chang–Roberts 1979; on one live leader for Raft, §5.2).
//!
//! Virtual time only: waits are conditions checked after every simulation step, with
//! a virtual deadline.

use electd::contract::algorithm::{AlgorithmKind, Options, Timing};
use electd::daemon::metrics::Metrics;
use electd::daemon::runtime::{incarnation_now, run, RuntimeConfig, Start};
use electd::daemon::shared::Shared;
use electd::daemon::socket::Transport;
use electd::node::link::LinkConfig;
use electd::security::keyring::{Key, Keyring};
use electd::NodeId;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PORT: u16 = 5740;
const N: NodeId = 5;

struct Sock(turmoil::net::UdpSocket);

impl Transport for Sock {
    fn send_to<'a>(
        &'a self,
        buf: &'a [u8],
        to: SocketAddr,
    ) -> impl Future<Output = io::Result<usize>> + Send + 'a {
        self.0.send_to(buf, to)
    }
    fn recv_from<'a>(
        &'a self,
        buf: &'a mut [u8],
    ) -> impl Future<Output = io::Result<(usize, SocketAddr)>> + Send + 'a {
        self.0.recv_from(buf)
    }
    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

fn timing() -> Timing {
    Timing {
        heartbeat: Duration::from_millis(10),
        failure_timeout: Duration::from_millis(100),
        answer_timeout: Duration::from_millis(30),
        coordinator_timeout: Duration::from_millis(100),
        election_timeout_min: Duration::from_millis(150),
        election_timeout_max: Duration::from_millis(300),
    }
}

type Registry = Arc<Mutex<HashMap<NodeId, Arc<Shared>>>>;

struct Cluster<'a> {
    sim: turmoil::Sim<'a>,
    nodes: Registry,
    down: Vec<NodeId>,
}

fn name(id: NodeId) -> String {
    format!("n{id}")
}

fn cluster(seed: u64) -> Cluster<'static> {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(600))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(3))
        .rng_seed(seed)
        .build();
    let peers: Vec<(NodeId, SocketAddr)> = (1..=N)
        .map(|id| (id, SocketAddr::new(sim.lookup(name(id)), PORT)))
        .collect();
    let keys = Keyring::new(Key::new([42; 32]));
    let nodes: Registry = Arc::default();
    for id in 1..=N {
        let cfg = RuntimeConfig {
            id,
            cluster: "turmoil".into(),
            peers: peers.clone(),
            algorithms: AlgorithmKind::available(),
            timing: timing(),
            options: Options::default(),
            link: LinkConfig {
                retransmit: Duration::from_millis(8),
                rto_min: Duration::from_millis(8),
                rto_max: Duration::from_millis(64),
                give_up: Duration::from_millis(120),
                max_attempts: None,
            },
            keys: Some(keys.clone()),
            incarnation: 0,
            start: Start::Electing,
            state_file: None,
            sources: Some(peers.iter().map(|&(id, a)| (id, vec![a])).collect()),
        };
        let registry = nodes.clone();
        sim.host(name(id), move || {
            let mut cfg = cfg.clone();
            let registry = registry.clone();
            async move {
                // A bounced host boots again: a new, higher incarnation.
                cfg.incarnation = incarnation_now();
                let socket = turmoil::net::UdpSocket::bind(("0.0.0.0", PORT)).await?;
                let metrics = Metrics::for_cluster(
                    &cfg.cluster,
                    id,
                    &cfg.algorithms,
                    cfg.timing.failure_timeout,
                )?;
                let (shared, control) = Shared::new(
                    id,
                    cfg.cluster.clone(),
                    cfg.algorithms.clone(),
                    metrics,
                    None,
                );
                let shared = Arc::new(shared);
                registry.lock().unwrap().insert(id, shared.clone());
                run(Sock(socket), cfg, shared, control, std::future::pending()).await?;
                Ok(())
            }
        });
    }
    Cluster {
        sim,
        nodes,
        down: Vec::new(),
    }
}

impl Cluster<'_> {
    fn live(&self) -> Vec<NodeId> {
        (1..=N).filter(|id| !self.down.contains(id)).collect()
    }

    /// The leader every live node of every group agrees on (the highest live id where
    /// the algorithm promises it), or a description of the disagreement.
    fn agreement(&self) -> Result<(), String> {
        let nodes = self.nodes.lock().unwrap();
        let live = self.live();
        for kind in AlgorithmKind::available() {
            let mut leaders = Vec::new();
            for id in &live {
                let g = nodes.get(id).and_then(|s| s.group(kind));
                leaders.push(g.and_then(|g| (!g.electing).then_some(g.leader).flatten()));
            }
            let first = leaders[0];
            let ok = match first {
                Some(l) if live.contains(&l) => {
                    leaders.iter().all(|x| *x == first)
                        && (!kind.elects_highest_id() || Some(l) == live.iter().max().copied())
                }
                _ => false,
            };
            if !ok {
                return Err(format!("{kind}: live {live:?} see {leaders:?}"));
            }
        }
        Ok(())
    }

    /// Step the simulation until every group agrees, within `within` of virtual time;
    /// returns the virtual time it took.
    fn converge(&mut self, within: Duration) -> Duration {
        let start = self.sim.elapsed();
        loop {
            if self.agreement().is_ok() {
                return self.sim.elapsed() - start;
            }
            let spent = self.sim.elapsed() - start;
            assert!(
                spent < within,
                "no agreement after {spent:?}: {}",
                self.agreement().unwrap_err()
            );
            self.sim.step().expect("simulation step");
        }
    }

    fn run_for(&mut self, d: Duration) {
        let until = self.sim.elapsed() + d;
        while self.sim.elapsed() < until {
            self.sim.step().expect("simulation step");
        }
    }

    fn names(ids: &[NodeId]) -> Vec<String> {
        ids.iter().map(|&i| name(i)).collect()
    }
}

/// Worst case from a leader crash to agreement: detection (failure timeout plus a
/// heartbeat period) then one Bully cascade with a retransmission round on each step.
fn failover_bound() -> Duration {
    let t = timing();
    let link = LinkConfig {
        retransmit: Duration::from_millis(8),
        rto_min: Duration::from_millis(8),
        rto_max: Duration::from_millis(64),
        give_up: Duration::from_millis(120),
        max_attempts: None,
    };
    t.failure_timeout
        + t.heartbeat
        + 3 * (t.answer_timeout + t.coordinator_timeout)
        + link.give_up_after()
}

#[test]
fn start_crash_and_bounce() {
    let mut c = cluster(1);
    c.converge(Duration::from_secs(2));
    // The leader crashes: the survivors agree on the next highest id within the bound.
    c.sim.crash(name(5));
    c.down.push(5);
    let took = c.converge(failover_bound());
    eprintln!(
        "failover took {took:?} (virtual), bound {:?}, now {:?}",
        failover_bound(),
        c.sim.elapsed()
    );
    assert!(
        took >= timing().failure_timeout,
        "detected before the failure timeout: {took:?}"
    );
    // A lower node crashing changes nothing for the others.
    c.sim.crash(name(2));
    c.down.push(2);
    c.run_for(Duration::from_millis(500));
    c.converge(Duration::from_millis(1));
    // The highest node comes back as a new incarnation and takes leadership back.
    c.sim.bounce(name(5));
    c.down.retain(|&n| n != 5);
    c.converge(Duration::from_secs(2));
    c.sim.bounce(name(2));
    c.down.retain(|&n| n != 2);
    c.converge(Duration::from_secs(2));
}

#[test]
fn flaky_links_then_heal() {
    let mut c = cluster(2);
    c.converge(Duration::from_secs(2));
    // Links fail and recover at random for five seconds, and the leader crashes in
    // the middle of it.
    c.sim.set_fail_rate(0.05);
    c.run_for(Duration::from_secs(2));
    c.sim.crash(name(5));
    c.down.push(5);
    c.run_for(Duration::from_secs(3));
    c.sim.set_fail_rate(0.0);
    let all = Cluster::names(&(1..=N).collect::<Vec<_>>());
    for a in &all {
        for b in &all {
            if a != b {
                c.sim.repair(a.as_str(), b.as_str());
            }
        }
    }
    c.converge(Duration::from_secs(3));
}

#[test]
fn partition_then_heal() {
    let mut c = cluster(3);
    c.converge(Duration::from_secs(2));
    let minority = Cluster::names(&[1, 2]);
    let majority = Cluster::names(&[3, 4, 5]);
    for a in &minority {
        for b in &majority {
            c.sim.partition(a.as_str(), b.as_str());
        }
    }
    // While cut off, the minority side elects among itself (Bully family) while the
    // majority keeps node 5; let that happen, then heal.
    c.run_for(Duration::from_secs(2));
    {
        let nodes = c.nodes.lock().unwrap();
        let g = nodes[&1].group(AlgorithmKind::Bully).unwrap();
        assert_eq!(g.leader, Some(2), "the minority elects its highest id");
    }
    for a in &minority {
        for b in &majority {
            c.sim.repair(a.as_str(), b.as_str());
        }
    }
    c.converge(Duration::from_secs(3));
}

/// The value of the sample `name{…algorithm="algo"…}` in a `/metrics` text.
fn sample(text: &str, name: &str, algo: &str) -> Option<f64> {
    let label = format!("algorithm=\"{algo}\"");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(&label))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

/// `electd_failover_seconds` after a leader crash: every survivor of every group the
/// crashed node led observed exactly one failover, and it lies between what the
/// failure detector must wait (silence of `failure_timeout`, or Raft's shortest
/// election timeout) and the worst case from the crash to agreement plus the
/// heartbeat period that may pass between the leader's last datagram and the crash.
/// Every series carries the config's `cluster`.
#[test]
fn failover_histogram_after_leader_crash() {
    let mut c = cluster(4);
    c.converge(Duration::from_secs(2));
    // Agreement comes before the election's last datagrams: let them pass, so that
    // what each survivor last hears from node 5 before the crash is a heartbeat, as in
    // a steady cluster. A node whose last datagram from the leader came later than
    // that heartbeat measures its failover from it, some milliseconds after the
    // heartbeat its detector counts from (1 run in 6–10 failed on that).
    c.run_for(timing().failure_timeout);
    let led_by_5: Vec<AlgorithmKind> = {
        let nodes = c.nodes.lock().unwrap();
        AlgorithmKind::available()
            .into_iter()
            .filter(|&k| nodes[&1].group(k).and_then(|g| g.leader) == Some(5))
            .collect()
    };
    let before: HashMap<(NodeId, AlgorithmKind), f64> = {
        let nodes = c.nodes.lock().unwrap();
        let mut m = HashMap::new();
        for id in 1..N {
            let text = nodes[&id].metrics.encode();
            for &k in &led_by_5 {
                let n = sample(&text, "electd_failover_seconds_count", k.as_str());
                m.insert((id, k), n.expect("failover series exists from the start"));
            }
        }
        m
    };
    assert!(
        led_by_5.contains(&AlgorithmKind::Bully),
        "node 5 leads bully: {led_by_5:?}"
    );
    c.sim.crash(name(5));
    c.down.push(5);
    c.converge(Duration::from_secs(3));
    // Let the last adopters flush their metrics.
    c.run_for(Duration::from_millis(50));
    let t = timing();
    let latency_spread = Duration::from_millis(2);
    let nodes = c.nodes.lock().unwrap();
    for id in 1..N {
        let text = nodes[&id].metrics.encode();
        assert!(
            text.lines()
                .filter(|l| l.starts_with("electd_"))
                .all(|l| l.contains("cluster=\"turmoil\"")),
            "series without cluster at node {id}"
        );
        for &k in &led_by_5 {
            let count = sample(&text, "electd_failover_seconds_count", k.as_str()).unwrap();
            let sum = sample(&text, "electd_failover_seconds_sum", k.as_str()).unwrap();
            assert_eq!(
                count - before[&(id, k)],
                1.0,
                "{k} node {id}: one failover expected\n{text}"
            );
            let detect = if k == AlgorithmKind::Raft {
                t.election_timeout_min
            } else {
                t.failure_timeout
            };
            let low = detect.saturating_sub(latency_spread).as_secs_f64();
            let high = if k == AlgorithmKind::Raft {
                // Split votes may cost further randomized timeouts: within convergence.
                Duration::from_secs(3) + t.heartbeat
            } else {
                failover_bound() + t.heartbeat + latency_spread
            }
            .as_secs_f64();
            assert!(
                (low..=high).contains(&sum),
                "{k} node {id}: failover {sum} s outside [{low}, {high}]"
            );
            // Where the node declared the leader lost itself, the phases add up.
            let phases = |name: &str| {
                let count = format!("electd_failover_{name}_seconds_count");
                let sum = format!("electd_failover_{name}_seconds_sum");
                (
                    sample(&text, &count, k.as_str()).unwrap(),
                    sample(&text, &sum, k.as_str()).unwrap(),
                )
            };
            let ((nd, detection), (ne, election)) = (phases("detection"), phases("election"));
            assert_eq!(
                nd, ne,
                "{k} node {id}: one election phase per detection phase"
            );
            if nd == count {
                assert!(
                    (detection + election - sum).abs() < 1e-6,
                    "{k} node {id}: phases {detection} + {election} != failover {sum}"
                );
            }
            let leaderless = sample(&text, "electd_leaderless_seconds_total", k.as_str()).unwrap();
            assert!(leaderless > 0.0, "{k} node {id}: leaderless {leaderless}");
        }
    }
}
