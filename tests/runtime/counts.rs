//! On a clean network the daemon sends exactly the election messages the simulator
//! predicts for the same scenario: five runtimes over real UDP on 127.0.0.1 start
//! passively, the lowest node is told to call an election (`Control::Elect`, what
//! `POST /admin/election` does), and `electd_messages_sent_total` per type, summed
//! over the nodes, must equal `simulate`'s `by_type` for N = 5 with the lowest
//! initiator. For the Bully family the totals are also checked against the
//! literature: N² − 1 (Garcia-Molina 1982; seed report Eq. 1 with k = 1) and 3N − 2
//! (Soundarabai et al. 2014, Table 1; seed report Eq. 2 with k = 1).
//!
//! Timeouts are generous so that the synchronous-system assumption of these counts
//! holds on a loaded machine (every OK arrives well within T).

use electd::contract::algorithm::{AlgorithmKind, Options, Timing};
use electd::contract::message::MessageType;
use electd::daemon::metrics::Metrics;
use electd::daemon::runtime::{run, RuntimeConfig, Start};
use electd::daemon::shared::{Control, Shared};
use electd::daemon::socket::bind_udp;
use electd::node::link::LinkConfig;
use electd::security::keyring::{Key, Keyring};
use electd::sim::runner::{simulate, SimulateParams};
use electd::NodeId;
use std::sync::Arc;
use std::time::{Duration, Instant};

const N: NodeId = 5;

async fn wait_until(what: &str, within: Duration, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn sent(shared: &Shared, kind: AlgorithmKind, t: MessageType) -> u64 {
    crate::common::counter_sum(
        &shared.metrics.encode(),
        "electd_messages_sent_total",
        &[("algorithm", kind.as_str()), ("type", t.as_str())],
    ) as u64
}

fn received(shared: &Shared, kind: AlgorithmKind, t: MessageType) -> u64 {
    crate::common::counter_sum(
        &shared.metrics.encode(),
        "electd_messages_received_total",
        &[("algorithm", kind.as_str()), ("type", t.as_str())],
    ) as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_counts_match_the_simulator_and_the_literature() {
    let algorithms = AlgorithmKind::available();
    let timing = Timing {
        heartbeat: Duration::from_millis(50),
        failure_timeout: Duration::from_secs(30),
        answer_timeout: Duration::from_millis(300),
        coordinator_timeout: Duration::from_secs(1),
        election_timeout_min: Duration::from_secs(20),
        election_timeout_max: Duration::from_secs(40),
    };
    timing
        .validate(Duration::from_millis(100), Duration::from_millis(1500))
        .expect("the test timing keeps the relations the config enforces (link below)");
    let sockets: Vec<_> = (0..N)
        .map(|_| bind_udp("127.0.0.1:0".parse().unwrap()).unwrap())
        .collect();
    let peers: Vec<(NodeId, std::net::SocketAddr)> = sockets
        .iter()
        .enumerate()
        .map(|(i, s)| (i as NodeId + 1, s.local_addr().unwrap()))
        .collect();
    let keys = Keyring::new(Key::new([9; 32]));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut nodes = Vec::new();
    let mut tasks = Vec::new();
    for (i, socket) in sockets.into_iter().enumerate() {
        let id = i as NodeId + 1;
        let cfg = RuntimeConfig {
            id,
            cluster: "counts".into(),
            peers: peers.clone(),
            algorithms: algorithms.clone(),
            timing: timing.clone(),
            options: Options::default(),
            link: LinkConfig {
                retransmit: Duration::from_millis(100),
                rto_min: Duration::from_millis(100),
                rto_max: Duration::from_millis(800),
                give_up: Duration::from_millis(1500),
                max_attempts: None,
            },
            keys: Some(keys.clone()),
            incarnation: 1000 + u64::from(id),
            start: Start::Passive,
            state_file: None,
            sources: Some(peers.iter().map(|&(id, a)| (id, vec![a])).collect()),
        };
        let metrics = Metrics::new(id, &algorithms).unwrap();
        let (shared, control) = Shared::new(id, "counts".into(), algorithms.clone(), metrics, None);
        let shared = Arc::new(shared);
        nodes.push(shared.clone());
        let mut stopped = stopped.clone();
        tasks.push(tokio::spawn(run(
            socket,
            cfg,
            shared,
            control,
            async move {
                let _ = stopped.wait_for(|s| *s).await;
            },
        )));
    }

    for kind in algorithms {
        let predicted = simulate(&SimulateParams::new(kind, N as usize)).unwrap();
        let leader = predicted.leader.expect("the simulator elects a leader");
        let (tx, rx) = tokio::sync::oneshot::channel();
        assert!(nodes[0].command(Control::Elect(kind, tx)).await);
        assert!(rx.await.unwrap(), "{kind}: node 1 runs the group");
        wait_until(
            &format!("{kind}: agreement on {leader}"),
            Duration::from_secs(10),
            || {
                nodes.iter().all(|s| {
                    s.group(kind)
                        .is_some_and(|g| g.leader == Some(leader) && !g.electing)
                })
            },
        )
        .await;
        // Let trailing messages land: every follower hears two more heartbeats.
        let base: Vec<u64> = nodes
            .iter()
            .map(|s| received(s, kind, MessageType::Heartbeat))
            .collect();
        wait_until(
            &format!("{kind}: heartbeats"),
            Duration::from_secs(10),
            || {
                nodes.iter().zip(&base).all(|(s, b)| {
                    s.node == leader || received(s, kind, MessageType::Heartbeat) >= b + 2
                })
            },
        )
        .await;
        let mut total = 0;
        for t in MessageType::ALL.into_iter().filter(|t| !t.is_liveness()) {
            let daemon: u64 = nodes.iter().map(|s| sent(s, kind, t)).sum();
            assert_eq!(
                daemon,
                predicted.messages.of(t),
                "{kind}: {t} messages, daemon vs simulator"
            );
            total += daemon;
        }
        assert_eq!(total, predicted.messages.total, "{kind}: total");
        // And against the literature, for the lowest id initiating on ids 1..N in
        // ascending ring order.
        let n = u64::from(N);
        let formula = match kind {
            AlgorithmKind::Bully => n * n - 1, // Garcia-Molina 1982; seed report Eq. 1
            AlgorithmKind::ImprovedBully => 3 * n - 2, // Soundarabai et al. 2014, Table 1
            AlgorithmKind::Ring => 2 * n,      // election lap + coordinator lap
            AlgorithmKind::Lcr => (2 * n - 1) + n, // Chang–Roberts best case + ELECTED lap
            AlgorithmKind::Raft => 4 * (n - 1), // pre-vote + vote rounds, §5.2 / thesis §9.6
            // Hirschberg–Sinclair: an upper bound, 8N(1+⌈log₂N⌉) + N.
            AlgorithmKind::Hs => {
                let log = u64::from(64 - (n - 1).leading_zeros());
                assert!(total <= 8 * n * (1 + log) + n, "hs: {total}");
                total
            }
        };
        assert_eq!(total, formula, "{kind}: daemon vs formula");
        eprintln!(
            "{kind}: {total} messages, as the simulator predicts: {:?}",
            predicted.messages.by_type
        );
    }
    let _ = stop.send(true);
    for t in tasks {
        t.await.unwrap().unwrap();
    }
}
