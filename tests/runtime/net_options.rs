//! The runtime's network options over real UDP on loopback (no root needed):
//! - DNS: a peer known only by name (unresolved when the node starts) is looked up in
//!   the background and reached; a Raft leader in a 2-node cluster needs both votes
//!   (majority of 2, Ongaro & Ousterhout 2014 §5.2), so a leader proves both directions.
//! - Multicast: broadcasts (COORDINATOR acked per recipient, heartbeats) leave as one
//!   datagram to the group; followers receive them,
//!   and the leader's datagram count falls below its logical heartbeat count (with
//!   unicast every heartbeat message is its own datagram, so datagrams ≥ messages).
//!   The network-namespace version of this check is scripts/system-netns.sh.
//! - Batched heartbeats: followers read their leader's heartbeats from the second
//!   socket the kernel selects them into (SO_REUSEPORT + classic BPF), keep following
//!   it without a single election, and still lose it when it falls silent. A Raft
//!   leader reads its followers' answers to its heartbeats the same way, and keeps its
//!   check-quorum and its lease.

use crate::common::http::{runtime_config, shared, wait_until};
use electd::contract::algorithm::AlgorithmKind;
use electd::daemon::heartbeats::bind_udp_pair;
use electd::daemon::runtime::{self, NetOptions, RuntimeConfig};
use electd::daemon::shared::Control;
use electd::daemon::shared::Shared;
use electd::daemon::socket::{bind_udp, join_multicast};
use electd::NodeId;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn cfg(id: NodeId, peers: Vec<(NodeId, SocketAddr)>, algo: AlgorithmKind) -> RuntimeConfig {
    // The source check stays on: a peer known by name is accepted from the address
    // its name resolves to, and group datagrams from the sender's own address.
    let sources = Some(peers.iter().map(|&(id, a)| (id, vec![a])).collect());
    runtime_config(id, "net", peers, vec![algo], sources)
}

/// The value of the first sample of `metric` whose labels contain every `labels` item.
fn sample(text: &str, metric: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(metric) && labels.iter().all(|x| l.contains(x)))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .next()
        .unwrap_or(0.0)
}

/// Start node `id`'s runtime over `socket` on the local set; it stops when `stopped`
/// turns true.
fn spawn(
    id: NodeId,
    socket: tokio::net::UdpSocket,
    net: NetOptions,
    peers: Vec<(NodeId, SocketAddr)>,
    algo: AlgorithmKind,
    stopped: &tokio::sync::watch::Receiver<bool>,
) -> (Arc<Shared>, Task) {
    let (s, control) = shared(id, &[algo], None);
    let mut until = stopped.clone();
    let task = tokio::task::spawn_local(runtime::run_with(
        socket,
        net,
        cfg(id, peers, algo),
        s.clone(),
        control,
        async move {
            let _ = until.wait_for(|s| *s).await;
        },
    ));
    (s, task)
}

type Task = tokio::task::JoinHandle<Result<(), runtime::RuntimeError>>;

/// Stop every runtime and check that each returned cleanly.
async fn stop_all(stop: tokio::sync::watch::Sender<bool>, tasks: Vec<Task>) {
    let _ = stop.send(true);
    for t in tasks {
        let r = tokio::time::timeout(crate::common::http::DEADLINE, t).await;
        assert!(matches!(r, Ok(Ok(Ok(())))), "{r:?}");
    }
}

#[tokio::test]
async fn a_peer_known_only_by_name_is_resolved_in_the_background() {
    tokio::task::LocalSet::new().run_until(dns()).await;
}

async fn dns() {
    let algo = AlgorithmKind::Raft;
    let s1 = bind_udp("127.0.0.1:0".parse().unwrap()).unwrap();
    let s2 = bind_udp("127.0.0.1:0".parse().unwrap()).unwrap();
    let (a1, a2) = (s1.local_addr().unwrap(), s2.local_addr().unwrap());
    // Node 1 starts without an address for node 2 (as a name that did not resolve at
    // load time), only its name.
    let unresolved: SocketAddr = format!("0.0.0.0:{}", a2.port()).parse().unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut nodes: Vec<Arc<Shared>> = Vec::new();
    let mut tasks = Vec::new();
    for (id, socket, peers, names) in [
        (
            1,
            s1,
            vec![(1, a1), (2, unresolved)],
            vec![(2, format!("localhost:{}", a2.port()))],
        ),
        (2, s2, vec![(1, a1), (2, a2)], vec![]),
    ] {
        let net = NetOptions {
            names,
            ..NetOptions::default()
        };
        let (s, task) = spawn(id, socket, net, peers, algo, &stopped);
        nodes.push(s);
        tasks.push(task);
    }
    let leader = |s: &Shared| s.group(algo).and_then(|g| g.leader);
    wait_until("a raft leader both nodes agree on", || {
        let l = leader(&nodes[0]);
        l.is_some() && l == leader(&nodes[1])
    })
    .await;
    stop_all(stop, tasks).await;
}

#[tokio::test]
async fn broadcasts_go_by_multicast_one_datagram_each() {
    tokio::task::LocalSet::new().run_until(multicast()).await;
}

async fn multicast() {
    let algo = AlgorithmKind::Bully;
    let ids: [NodeId; 3] = [1, 2, 3];
    let sockets: Vec<_> = ids
        .iter()
        .map(|_| bind_udp("127.0.0.1:0".parse().unwrap()).unwrap())
        .collect();
    let peers: Vec<_> = ids
        .iter()
        .zip(&sockets)
        .map(|(&id, s)| (id, s.local_addr().unwrap()))
        .collect();
    // A group port nobody else uses: a free UDP port of the moment.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let group: SocketAddr = format!("239.255.93.{}:{port}", std::process::id() % 200 + 1)
        .parse()
        .unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut nodes: Vec<Arc<Shared>> = Vec::new();
    let mut tasks = Vec::new();
    for (&id, socket) in ids.iter().zip(sockets) {
        let bind = socket.local_addr().unwrap();
        let rx = join_multicast(&socket, bind, group).expect("join the group on loopback");
        assert!(rx.is_some(), "a unicast-bound node needs a group socket");
        let net = NetOptions {
            multicast: Some((group, rx)),
            ..NetOptions::default()
        };
        let (s, task) = spawn(id, socket, net, peers.clone(), algo, &stopped);
        nodes.push(s);
        tasks.push(task);
    }
    let agree = || {
        nodes
            .iter()
            .all(|s| s.group(algo).and_then(|g| g.leader) == Some(3))
    };
    wait_until("all to agree on 3 (Bully: highest id)", agree).await;
    // Followers hear the leader's multicast heartbeats and stay with it.
    wait_until("followers to receive 40 heartbeats each", || {
        nodes[..2].iter().all(|s| {
            sample(
                &s.metrics.encode(),
                "electd_messages_received_total",
                &["type=\"heartbeat\""],
            ) >= 40.0
        })
    })
    .await;
    assert!(agree(), "the leader was never lost");
    let text = nodes[2].metrics.encode();
    let hb = sample(&text, "electd_messages_sent_total", &["type=\"heartbeat\""]);
    let dg = sample(&text, "electd_datagrams_sent_total", &[]);
    assert!(hb >= 80.0, "{hb} heartbeat messages");
    // Heartbeats count 2 messages (N−1) per datagram: the total datagram count (acks,
    // COORDINATOR and heartbeats) stays below the logical heartbeat count.
    assert!(
        dg < hb,
        "datagrams {dg} should be fewer than heartbeat messages {hb}"
    );
    // COORDINATOR went to the group with a broadcast sequence: both followers acked
    // it by unicast, so the link gave up on nobody.
    assert!(
        sample(
            &text,
            "electd_messages_sent_total",
            &["type=\"coordinator\""]
        ) >= 2.0
    );
    assert_eq!(
        sample(&text, "electd_delivery_failures_total", &[]),
        0.0,
        "{text}"
    );
    stop_all(stop, tasks).await;
}

#[tokio::test]
async fn followers_read_heartbeats_in_batches_and_still_lose_a_silent_leader() {
    tokio::task::LocalSet::new().run_until(batched()).await;
}

/// What [`start_batched`] started: the nodes' shared state, their addresses, the stop
/// switch and the tasks.
type Started = (
    Vec<Arc<Shared>>,
    Vec<(NodeId, SocketAddr)>,
    tokio::sync::watch::Sender<bool>,
    Vec<Task>,
);

/// Runtimes `ids` of `algo` on loopback, each with its heartbeat socket (batched
/// heartbeats), on the local set: their shared state, addresses, stop switch and tasks.
fn start_batched(ids: &[NodeId], algo: AlgorithmKind) -> Started {
    let mut sockets = Vec::new();
    for _ in ids {
        let (s, hb) = bind_udp_pair("127.0.0.1:0".parse().unwrap(), true).unwrap();
        let hb = hb.expect("a heartbeat socket: this kernel refused SO_ATTACH_REUSEPORT_CBPF");
        sockets.push((s, hb));
    }
    let peers: Vec<_> = ids
        .iter()
        .zip(&sockets)
        .map(|(&id, s)| (id, s.0.local_addr().unwrap()))
        .collect();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut nodes: Vec<Arc<Shared>> = Vec::new();
    let mut tasks = Vec::new();
    for (&id, (socket, hb)) in ids.iter().zip(sockets) {
        let net = NetOptions {
            heartbeats: Some(hb),
            ..NetOptions::default()
        };
        let (s, task) = spawn(id, socket, net, peers.clone(), algo, &stopped);
        nodes.push(s);
        tasks.push(task);
    }
    (nodes, peers, stop, tasks)
}

async fn batched() {
    let algo = AlgorithmKind::Bully;
    let ids: [NodeId; 3] = [1, 2, 3];
    let (nodes, peers, stop, tasks) = start_batched(&ids, algo);
    let leader_of = |s: &Shared| s.group(algo).and_then(|g| g.leader);
    let agree_on = |l: NodeId, among: &[Arc<Shared>]| among.iter().all(|s| leader_of(s) == Some(l));
    wait_until("all to agree on 3 (Bully: highest id)", || {
        agree_on(3, &nodes)
    })
    .await;
    let metric =
        |s: &Shared, name: &str, labels: &[&str]| sample(&s.metrics.encode(), name, labels);
    let elections = |s: &Shared| metric(s, "electd_elections_started_total", &[]);
    let before: Vec<f64> = nodes[..2].iter().map(|s| elections(s)).collect();
    // 40 heartbeats each through the heartbeat socket: 4 failure timeouts of 10.
    wait_until("followers to read 40 batched heartbeats each", || {
        nodes[..2]
            .iter()
            .all(|s| metric(s, "electd_heartbeats_batched_total", &[]) >= 40.0)
    })
    .await;
    assert!(agree_on(3, &nodes), "the leader was never lost");
    let after: Vec<f64> = nodes[..2].iter().map(|s| elections(s)).collect();
    assert_eq!(before, after, "no follower called an election meanwhile");
    for s in &nodes[..2] {
        let received = metric(s, "electd_messages_received_total", &["type=\"heartbeat\""]);
        let batched = metric(s, "electd_heartbeats_batched_total", &[]);
        assert!(
            received >= batched,
            "every batched heartbeat reached the node"
        );
    }
    // The leader falls silent (pause: no traffic, the process lives): its heartbeats
    // stop, the followers' detectors expire and they elect 2.
    let mut events = nodes[0].subscribe();
    // Node 1 reads its batch at its detector's deadline, every ~failure_timeout (200
    // ms): the wait above ended at one. Let half a timeout of heartbeats queue first.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let queued = metric(&nodes[0], "electd_heartbeats_batched_total", &[]);
    assert!(nodes[2].command(Control::Pause).await);
    // Every heartbeat of 3 arrived before this instant (the pause is processed after
    // its last send, and loopback delivers within the send).
    let paused_us = unix_us();
    // A gap in the scenario (not a synchronisation): then a datagram to node 1's main
    // socket wakes it, and its turn begins with a drain of the heartbeats still queued.
    // Each must be dated when it arrived, before `paused_us`, not when it is read.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let poke = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    poke.send_to(b"not an envelope", peers[0].1).unwrap();
    wait_until("node 1 to read the stray datagram", || {
        metric(
            &nodes[0],
            "electd_invalid_datagrams_total",
            &["reason=\"decode\""],
        ) >= 1.0
    })
    .await;
    assert!(
        metric(&nodes[0], "electd_heartbeats_batched_total", &[]) >= queued + 5.0,
        "node 1 read the heartbeats that queued before the pause in a batch"
    );
    wait_until("1 and 2 to agree on 2 after the leader fell silent", || {
        agree_on(2, &nodes[..2])
    })
    .await;
    // Node 1's failover runs from the last datagram it heard from 3 to adopting 2: so it
    // heard 3 last at (adoption − failover), which must be before the pause.
    let adopted_us = loop {
        let e = events
            .try_recv()
            .expect("node 1's adoption of 2 among its events");
        if e.leader == Some(2) && e.algorithm == algo {
            break e.at_us;
        }
    };
    let text = nodes[0].metrics.encode();
    assert_eq!(
        sample(&text, "electd_failover_seconds_count", &[]),
        1.0,
        "{text}"
    );
    let failover_us = (sample(&text, "electd_failover_seconds_sum", &[]) * 1e6) as u64;
    let heard_us = adopted_us - failover_us;
    assert!(
        heard_us <= paused_us + 30_000,
        "node 1 dated 3's last heartbeat {} ms after the pause: batched heartbeats must \
         carry their arrival time, not the time they were read",
        (heard_us as f64 - paused_us as f64) / 1e3
    );
    // Node 1 now reads 2's heartbeats in batches: the kernel's selection followed.
    let seen = metric(&nodes[0], "electd_heartbeats_batched_total", &[]);
    wait_until("node 1 to read 20 batched heartbeats of 2", || {
        metric(&nodes[0], "electd_heartbeats_batched_total", &[]) >= seen + 20.0
    })
    .await;
    assert!(agree_on(2, &nodes[..2]));
    stop_all(stop, tasks).await;
}

#[tokio::test]
async fn a_raft_leader_reads_its_followers_answers_in_batches_and_keeps_its_quorum() {
    tokio::task::LocalSet::new()
        .run_until(raft_answers_batched())
        .await;
}

async fn raft_answers_batched() {
    let algo = AlgorithmKind::Raft;
    let ids: [NodeId; 3] = [1, 2, 3];
    let (nodes, _, stop, tasks) = start_batched(&ids, algo);
    let view = |s: &Shared| s.group(algo).map(|g| (g.leader, g.term));
    wait_until("all three to agree on a leader", || {
        let v = view(&nodes[0]);
        v.is_some_and(|(l, _)| l.is_some()) && nodes.iter().all(|s| view(s) == v)
    })
    .await;
    let (leader, term) = view(&nodes[0]).unwrap();
    let leader = leader.unwrap();
    let at = nodes
        .iter()
        .position(|s| s.group(algo).is_some_and(|g| g.state == "leader"))
        .expect("the agreed leader reports itself leader");
    assert_eq!(ids[at], leader);
    let metric =
        |s: &Shared, name: &str, labels: &[&str]| sample(&s.metrics.encode(), name, labels);
    let elections: Vec<f64> = nodes
        .iter()
        .map(|s| metric(s, "electd_elections_started_total", &[]))
        .collect();
    // 40 answers through the heartbeat socket: two heartbeats' answers a turn, so
    // about 20 heartbeats, two check-quorum periods (election_timeout_min, 100 ms).
    wait_until("the leader to read 40 answers in batches", || {
        metric(&nodes[at], "electd_heartbeats_batched_total", &[]) >= 40.0
    })
    .await;
    let batched = metric(&nodes[at], "electd_heartbeats_batched_total", &[]);
    let acks = metric(
        &nodes[at],
        "electd_messages_received_total",
        &["type=\"heartbeat_ack\""],
    );
    assert!(
        acks >= batched,
        "every batched answer reached the node ({acks} answers, {batched} batched)"
    );
    assert!(
        nodes.iter().all(|s| view(s) == Some((Some(leader), term))),
        "the leader kept its quorum and its term: answers read late still count"
    );
    let after: Vec<f64> = nodes
        .iter()
        .map(|s| metric(s, "electd_elections_started_total", &[]))
        .collect();
    assert_eq!(elections, after, "nobody called an election meanwhile");
    let lease = nodes[at].group(algo).map(|g| g.lease);
    assert!(
        matches!(lease, Some(electd::daemon::shared::Lease::Until(t)) if t > std::time::Instant::now()),
        "the leader holds its lease ({lease:?}): the answers' arrival times renew it"
    );
    stop_all(stop, tasks).await;
}
