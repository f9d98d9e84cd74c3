//! Unit tests of the runtime's parts that need no socket: the settings converted from
//! a [`Config`], the DNS resolver's bookkeeping, and the dispatch of operator requests.

use super::resolver::LOOKUP_TIMEOUT;
use super::*;
use crate::contract::algorithm::AlgorithmKind::{Bully, Raft};
use crate::daemon::metrics::Metrics;
use crate::security::keyring::{Key, KEY_LEN};
use std::path::Path;
use tokio::sync::oneshot;

/// A three-node roster; node 3's UDP address is a DNS name.
const ROSTER: &str = r#"
[[peer]]
id = 1
addr = "127.0.0.1:7001"
http = "127.0.0.1:8001"
[[peer]]
id = 2
addr = "127.0.0.1:7002"
http = "127.0.0.1:8002"
[[peer]]
id = 3
addr = "localhost:7003"
http = "127.0.0.1:8003"
"#;

fn config(extra: &str) -> Config {
    let text = format!(
        "cluster = \"rt\"\nnode_id = 2\nalgorithms = [\"bully\", \"raft\"]\n{extra}\n[state]\nephemeral = true\n[security]\ninsecure = true\n{ROSTER}"
    );
    Config::parse(
        &text,
        Path::new("electd.toml"),
        Path::new("/nonexistent"),
        std::iter::empty(),
        None,
    )
    .expect("the test configuration is valid")
}

fn peer(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// The runtime settings of node 2 of three, insecure, without a state file.
fn runtime_config() -> RuntimeConfig {
    RuntimeConfig {
        id: 2,
        cluster: "rt".into(),
        peers: vec![(1, peer(7001)), (2, peer(7002)), (3, peer(7003))],
        algorithms: vec![Bully],
        timing: Timing::default(),
        options: Options::default(),
        link: LinkConfig::default(),
        keys: None,
        incarnation: 10,
        start: Start::Electing,
        state_file: None,
        sources: None,
    }
}

fn driver(cfg: RuntimeConfig) -> Driver {
    let mut d = new_driver(cfg, false);
    d.boot();
    d
}

/// A driver of `cfg`, not booted; its state file written on a thread if `threaded`.
fn new_driver(cfg: RuntimeConfig, threaded: bool) -> Driver {
    let metrics = Metrics::new(cfg.id, &cfg.algorithms).expect("metrics");
    let (shared, _rx) = Shared::new(
        cfg.id,
        cfg.cluster.clone(),
        cfg.algorithms.clone(),
        metrics,
        None,
    );
    Driver::new(cfg, Arc::new(shared), threaded, None).expect("the driver starts")
}

// --- config conversion ---

#[test]
fn from_config_carries_the_roster_timing_and_security() {
    let c = config("");
    let r = RuntimeConfig::from_config(&c, 77);
    assert_eq!(r.id, c.node_id);
    assert_eq!(r.cluster, c.cluster);
    let roster: Vec<(NodeId, SocketAddr)> = c.peers.iter().map(|p| (p.id, p.addr)).collect();
    assert_eq!(r.peers, roster);
    assert_eq!(r.algorithms, c.algorithms);
    assert_eq!(r.timing, c.timing);
    assert_eq!(r.incarnation, 77);
    assert_eq!(r.start, Start::Electing);
    assert_eq!(r.state_file, c.raft_state_file);
    assert!(r.keys.is_none(), "insecure: no keyring");

    let mut secure = c.clone();
    let keys = Keyring::new(Key::new([7; KEY_LEN]));
    secure.security = Security::Keyring(keys.clone());
    let r = RuntimeConfig::from_config(&secure, 1);
    assert_eq!(r.keys.map(|k| k.primary().id), Some(keys.primary().id));
}

#[test]
fn sources_are_checked_only_with_check_source() {
    let c = config("");
    assert!(c.check_source, "the default");
    let sources = RuntimeConfig::from_config(&c, 1)
        .sources
        .expect("check_source gives every peer's sources");
    for p in &c.peers {
        assert_eq!(sources.get(&p.id), Some(&p.sources), "peer {}", p.id);
    }
    let mut open = c;
    open.check_source = false;
    assert!(RuntimeConfig::from_config(&open, 1).sources.is_none());
}

#[test]
fn net_options_list_the_other_peers_given_by_name() {
    let c = config("[transport]\nresolve_every = \"7s\"");
    let net = NetOptions::from_config(&c);
    let named: Vec<(NodeId, String)> = c
        .peers
        .iter()
        .filter(|p| p.id != c.node_id)
        .filter_map(|p| Some((p.id, p.name.clone()?)))
        .collect();
    assert_eq!(named.len(), 1, "node 3 is given by name");
    assert_eq!(net.names, named);
    assert_eq!(net.resolve_every, Duration::from_secs(7));
    assert!(net.multicast.is_none() && net.heartbeats.is_none());
}

#[test]
fn the_gate_and_the_node_are_built_from_the_same_roster() {
    let mut r = runtime_config();
    r.sources = Some(HashMap::from([(1, vec![peer(9)])]));
    let ids: Vec<NodeId> = r.peers.iter().map(|p| p.0).collect();
    let g = r.gate_config(true);
    assert_eq!((g.me, g.roster.clone(), g.group), (r.id, ids.clone(), true));
    assert_eq!(g.sources, r.sources);
    let n = r.node_config(42);
    assert_eq!((n.id, n.ring.to_vec(), n.incarnation), (r.id, ids, 42));
    // Timer draws differ between lives and between nodes.
    assert_ne!(n.seed, r.node_config(43).seed);
    r.id = 3;
    assert_ne!(n.seed, r.node_config(42).seed);
}

#[test]
fn incarnations_grow_across_boots() {
    let a = incarnation_now();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    let mut b = incarnation_now();
    while b == a && std::time::Instant::now() < deadline {
        b = incarnation_now();
    }
    assert!(a >= 1 && b > a, "{a} then {b}");
}

// --- resolver ---

fn resolver(
    every: Duration,
    v4_only: bool,
) -> (Resolver, mpsc::Receiver<(NodeId, Option<SocketAddr>)>) {
    let net = NetOptions {
        names: vec![(3, "localhost:7003".into()), (4, "[::1]:7004".into())],
        resolve_every: every,
        ..NetOptions::default()
    };
    let (tx, rx) = mpsc::channel(8);
    (Resolver::new(&net, v4_only, tx), rx)
}

#[test]
fn a_zero_period_means_thirty_seconds() {
    assert_eq!(
        resolver(Duration::ZERO, false).0.every,
        Duration::from_secs(30)
    );
    let every = Duration::from_millis(1500);
    assert_eq!(resolver(every, false).0.every, every);
}

#[test]
fn a_failed_lookup_keeps_the_last_known_address() {
    let (mut r, _rx) = resolver(Duration::ZERO, false);
    let mut peers = HashMap::new();
    r.in_flight.insert(3);
    r.resolved(3, Some(peer(7003)), &mut peers);
    assert_eq!(peers.get(&3), Some(&peer(7003)));
    assert!(!r.in_flight.contains(&3) && r.last_ok.contains_key(&3));
    r.resolved(3, None, &mut peers);
    assert_eq!(
        peers.get(&3),
        Some(&peer(7003)),
        "a DNS hiccup cuts no live peer off"
    );
    assert!(r.failing.contains(&3));
    r.resolved(3, Some(peer(7103)), &mut peers);
    assert_eq!(
        peers.get(&3),
        Some(&peer(7103)),
        "a new address replaces the old"
    );
    assert!(!r.failing.contains(&3));
}

#[tokio::test]
async fn one_lookup_per_name_at_a_time_and_the_family_is_kept() {
    let (mut r, mut rx) = resolver(Duration::ZERO, true);
    r.lookup(4);
    r.lookup(4);
    r.lookup(99); // not a name: nothing to look up
    assert_eq!(r.in_flight.len(), 1);
    let got = tokio::time::timeout(LOOKUP_TIMEOUT * 2, rx.recv()).await;
    assert_eq!(
        got.expect("the lookup answers"),
        Some((4, None)),
        "an IPv6 address is no answer for an IPv4 socket"
    );
    assert!(rx.try_recv().is_err(), "one lookup only");
}

#[tokio::test]
async fn due_names_are_the_unresolved_the_failing_and_the_old() {
    let mut cfg = runtime_config();
    cfg.peers[2].1 = SocketAddr::from(([0, 0, 0, 0], 7003)); // a name not resolved at load
    let mut d = driver(cfg);
    let (r, _rx) = resolver(Duration::from_secs(3600), false);
    d.resolver = r;
    d.peers.insert(4, SocketAddr::from(([0, 0, 0, 1], 7004)));
    d.resolver.last_ok.insert(4, Instant::now());
    d.resolve_due();
    assert_eq!(d.resolver.in_flight.iter().collect::<Vec<_>>(), vec![&3]);
    d.resolver.in_flight.clear();
    d.resolver.failing.insert(4);
    d.resolve_due();
    assert_eq!(d.resolver.in_flight.len(), 2, "a failing name is retried");
}

// --- operator control ---

#[tokio::test]
async fn elect_answers_whether_an_election_was_called() {
    let mut d = driver(runtime_config());
    for (kind, expected) in [(Bully, true), (Raft, false)] {
        let (tx, rx) = oneshot::channel();
        d.control(Control::Elect(kind, tx));
        assert_eq!(rx.await.ok(), Some(expected), "{kind}");
    }
    d.control(Control::Pause);
    let (tx, rx) = oneshot::channel();
    d.control(Control::Elect(Bully, tx));
    assert_eq!(rx.await.ok(), Some(false), "no election while paused");
}

#[tokio::test]
async fn pause_stops_traffic_and_resume_is_a_new_life() {
    let mut d = driver(runtime_config());
    assert_eq!(d.shared.incarnation(), 10, "/status shows the incarnation");
    d.control(Control::Resume);
    assert_eq!(d.incarnation, 10, "resume while running changes nothing");
    d.control(Control::Pause);
    assert!(d.paused && d.shared.is_paused());
    assert_eq!(
        d.node.drain_transmits().count(),
        0,
        "the pending sends are dropped"
    );
    d.control(Control::Resume);
    assert!(!d.paused && !d.shared.is_paused());
    assert!(
        d.incarnation > 10,
        "a higher incarnation: {}",
        d.incarnation
    );
    assert_eq!(
        d.shared.incarnation(),
        d.incarnation,
        "and /status shows it"
    );
    assert!(
        d.node.poll_timeout().is_some(),
        "the new life is started (its timers are armed)"
    );
    let first = d.incarnation;
    d.control(Control::Pause);
    d.control(Control::Drain {
        algorithm: Some(Bully),
        on: true,
        reply: oneshot::channel().0,
    });
    d.control(Control::Penalty {
        algorithm: None,
        penalty: 3,
    });
    d.control(Control::Resume);
    assert!(d.incarnation > first);
    assert_eq!(
        d.node.drained().collect::<Vec<_>>(),
        vec![Bully],
        "the drain survives"
    );
    assert_eq!(d.node.penalty(Bully), 3, "so does the penalty");
}

#[tokio::test]
async fn drain_answers_the_hand_over_bound_and_undrain_ends_it() {
    let mut d = driver(runtime_config());
    let t = d.cfg.timing.clone();
    let bound =
        t.failure_timeout + t.election_timeout_max + t.answer_timeout + t.coordinator_timeout;
    let (tx, rx) = oneshot::channel();
    d.control(Control::Drain {
        algorithm: None,
        on: true,
        reply: tx,
    });
    assert_eq!(rx.await.ok(), Some(Ok(bound)));
    assert_eq!(d.node.drained().collect::<Vec<_>>(), vec![Bully]);
    assert_eq!(
        d.stored_drained,
        vec![Bully],
        "what a state file would hold"
    );
    let (tx, rx) = oneshot::channel();
    d.control(Control::Drain {
        algorithm: Some(Bully),
        on: false,
        reply: tx,
    });
    assert_eq!(rx.await.ok(), Some(Ok(bound)));
    assert_eq!(d.node.drained().count(), 0);
}

/// An empty directory of this test process for `name`.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("electd-rt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Node 2 of a roster of two on real sockets, keeping its state in `path`: its
/// configuration, its socket and node 1's (which never answers).
async fn two_nodes(path: &Path) -> (RuntimeConfig, tokio::net::UdpSocket, std::net::UdpSocket) {
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let peer1 = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut cfg = runtime_config();
    cfg.peers = vec![
        (1, peer1.local_addr().unwrap()),
        (2, socket.local_addr().unwrap()),
    ];
    cfg.state_file = Some(path.to_path_buf());
    (cfg, socket, peer1)
}

/// docs/policy.md: a drain holds "until undrain, restarts included". A restart with a
/// configuration that did not run the drained group wrote the state file without that
/// drain at its first write, and the group came back undrained (the audit's run).
#[tokio::test]
async fn a_drain_of_a_group_not_run_is_kept_in_the_state_file() {
    let dir = scratch_dir("kept-drain");
    let path = dir.join("2.state");
    let with = |algorithms: Vec<AlgorithmKind>| {
        let mut cfg = runtime_config();
        cfg.algorithms = algorithms;
        cfg.state_file = Some(path.clone());
        driver(cfg)
    };
    let drain = |d: &mut Driver, kind, on| {
        let (tx, _rx) = oneshot::channel();
        d.control(Control::Drain {
            algorithm: Some(kind),
            on,
            reply: tx,
        });
    };
    let mut d = with(vec![Bully, Raft]);
    drain(&mut d, Raft, true);
    drop(d);
    assert_eq!(durable::load_saved(&path).unwrap().drained, vec![Raft]);
    // A life that runs Bully alone writes the file (a drain and an undrain of Bully).
    let mut d = with(vec![Bully]);
    drain(&mut d, Bully, true);
    assert_eq!(
        durable::load_saved(&path).unwrap().drained,
        vec![Bully, Raft]
    );
    drain(&mut d, Bully, false);
    assert_eq!(
        durable::load_saved(&path).unwrap().drained,
        vec![Raft],
        "the drain of the group not run is still on disk"
    );
    drop(d);
    let d = with(vec![Bully, Raft]);
    assert_eq!(
        d.node.drained().collect::<Vec<_>>(),
        vec![Raft],
        "drained again"
    );
    drop(d);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A drain whose state-file write fails is not "done": the call gets why (the drain
/// holds in the process, not across a restart), instead of the hand-over bound.
#[tokio::test]
async fn a_drain_that_cannot_be_written_says_so() {
    let dir = scratch_dir("drain-fails");
    let mut cfg = runtime_config();
    cfg.state_file = Some(dir.join("2.state"));
    let path = dir.join("2.state");
    let mut d = driver(cfg);
    d.writer.as_ref().unwrap().fail_next_drain();
    let (tx, rx) = oneshot::channel();
    d.control(Control::Drain {
        algorithm: None,
        on: true,
        reply: tx,
    });
    let why = rx.await.expect("an answer").expect_err("not on disk");
    assert!(why.contains("cannot write the state file"), "{why}");
    let persist = |d: &Driver| d.shared.problems().iter().any(|p| p.0 == "persist");
    assert!(persist(&d), "/healthz reports the failed write");
    assert_eq!(
        d.node.drained().collect::<Vec<_>>(),
        vec![Bully],
        "drained all the same"
    );
    assert!(durable::load_saved(&path).unwrap().drained.is_empty());
    // The next write goes through (its answer waits for the node's report, which
    // this test does not run).
    let (tx, _rx) = oneshot::channel();
    d.control(Control::Drain {
        algorithm: Some(Bully),
        on: true,
        reply: tx,
    });
    assert_eq!(durable::load_saved(&path).unwrap().drained, vec![Bully]);
    // ...and clears the problem: /healthz stayed 503 until a fencing token's write
    // (a leader change), which a quiet cluster may not have for days (the audit).
    assert!(!persist(&d), "the problem is over once a write succeeds");
    drop(d);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn fault_is_told_to_watchers_once_per_change() {
    let mut d = driver(runtime_config());
    let mut events = d.shared.subscribe();
    d.control(Control::Fault {
        algorithm: Some(Bully),
        on: true,
    });
    assert!(d.in_fault(Bully));
    let ev = events.try_recv().expect("a FAULT event");
    assert!(ev.fault && ev.algorithm == Bully);
    d.control(Control::Fault {
        algorithm: None,
        on: true,
    });
    assert!(events.try_recv().is_err(), "no change, no event");
    d.control(Control::Fault {
        algorithm: None,
        on: false,
    });
    assert!(!d.in_fault(Bully));
    assert!(!events.try_recv().expect("the end of the FAULT").fault);
}

#[tokio::test]
async fn transfer_is_refused_while_paused_or_when_the_node_refuses() {
    let mut d = driver(runtime_config());
    let (tx, rx) = oneshot::channel();
    d.control(Control::Transfer {
        algorithm: Raft,
        to: 1,
        reply: tx,
    });
    let refused = rx.await.expect("an answer").expect_err("not run here");
    assert!(refused.contains("does not run"), "{refused}");
    d.control(Control::Pause);
    let (tx, rx) = oneshot::channel();
    d.control(Control::Transfer {
        algorithm: Bully,
        to: 1,
        reply: tx,
    });
    let refused = rx.await.expect("an answer").expect_err("paused");
    assert!(refused.contains("paused"), "{refused}");
    assert!(
        d.transfer_waiters.is_empty(),
        "nobody waits on a refused transfer"
    );
}

#[tokio::test]
async fn keys_are_swapped_only_on_an_authenticated_node() {
    let keys = |b| Keyring::new(Key::new([b; KEY_LEN]));
    let mut d = driver(runtime_config());
    d.control(Control::Keys(keys(1)));
    assert!(
        d.cfg.keys.is_none() && !d.gate.is_authenticated(),
        "stays insecure"
    );

    let mut cfg = runtime_config();
    cfg.keys = Some(keys(1));
    let mut d = driver(cfg);
    d.selected.push((Bully, 3, 1, 1));
    d.selected_acks.push((Raft, 3, 1, 1, 0));
    d.control(Control::Keys(keys(2)));
    assert_eq!(
        d.cfg.keys.as_ref().map(|k| k.primary().id),
        Some(keys(2).primary().id)
    );
    assert!(
        d.selected.is_empty() && d.selected_acks.is_empty(),
        "the heartbeats and answers to select carry the new key"
    );
}

// --- BEATS (docs/wire.md §12) ---

/// A BEATS from node 3 to node 2 (this cluster, insecure), with `msgs`.
fn beats_from_3(msgs: &[(AlgorithmKind, Message)], counter: u64) -> Vec<u8> {
    let codec = crate::security::wire::Codec::new("rt", &[1, 2, 3], None);
    let refs: Vec<(AlgorithmKind, &Message)> = msgs.iter().map(|(k, m)| (*k, m)).collect();
    codec
        .encode_beats(
            3,
            unix_micros(),
            &refs,
            crate::security::wire::Header { to: 2, counter },
        )
        .unwrap()
}

#[tokio::test]
async fn each_message_of_a_beats_reaches_its_group_and_a_bad_one_is_counted() {
    use crate::contract::message::MessageType;
    let mut d = driver(runtime_config());
    let hb = Message::Heartbeat { term: 1, leader: 3 };
    let received = |d: &Driver| {
        d.node
            .group_stats(Bully)
            .unwrap()
            .received_of(MessageType::Heartbeat)
    };
    let before = received(&d);
    // Bully (run here), Raft (not run here), and a heartbeat naming a leader outside
    // the roster in the ring entry.
    let codec = crate::security::wire::Codec::new("rt", &[1, 2, 3, 9], None);
    let outsider = Message::Heartbeat { term: 1, leader: 9 };
    let bytes = codec
        .encode_beats(
            3,
            unix_micros(),
            &[(Bully, &hb), (AlgorithmKind::Ring, &outsider), (Raft, &hb)],
            crate::security::wire::Header { to: 2, counter: 1 },
        )
        .unwrap();
    d.received(Ok((bytes.len(), peer(7003))), &bytes);
    assert_eq!(
        received(&d),
        before + 1,
        "the Bully heartbeat reached Bully"
    );
    assert_eq!(
        d.node.invalid().get("unknown_algorithm"),
        Some(&1),
        "Raft is not run here: its message alone is dropped, counted"
    );
    let text = d.shared.metrics.encode();
    let line = text
        .lines()
        .find(|l| {
            l.starts_with("electd_invalid_datagrams_total") && l.contains("\"invalid_field\"")
        })
        .expect("the invalid_field series");
    assert!(line.ends_with(" 1"), "{line}");
    // A second one: counted once more, the Bully heartbeat delivered again.
    let again = beats_from_3(&[(Bully, hb.clone()), (Raft, hb.clone())], 2);
    d.received(Ok((again.len(), peer(7003))), &again);
    assert_eq!(received(&d), before + 2);
    assert_eq!(d.node.invalid().get("unknown_algorithm"), Some(&2));
}

#[test]
fn a_shared_datagrams_bytes_add_up_over_its_messages() {
    for (bytes, n) in [(129usize, 7usize), (74, 1), (140, 6), (5, 7)] {
        let s: Vec<usize> = send::shares(bytes, n).collect();
        assert_eq!(s.len(), n);
        assert_eq!(s.iter().sum::<usize>(), bytes, "{bytes} over {n}");
        let (lo, hi) = (s.iter().min().unwrap(), s.iter().max().unwrap());
        assert!(hi - lo <= 1, "{s:?}");
    }
}

// --- the state file's writer thread ---

/// Bytes this node sent for `kind`'s group (`electd_group_bytes_sent_total`).
fn bytes_sent(d: &Driver, kind: AlgorithmKind) -> u64 {
    let label = format!("algorithm=\"{kind}\"");
    d.shared
        .metrics
        .encode()
        .lines()
        .find(|l| l.starts_with("electd_group_bytes_sent_total") && l.contains(&label))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}

/// `electd_state_write_seconds`: (count, sum).
fn state_writes(d: &Driver) -> (u64, f64) {
    let text = d.shared.metrics.encode();
    // The series carries the node's constant labels: `name{…} value`.
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (
        value("electd_state_write_seconds_count") as u64,
        value("electd_state_write_seconds_sum"),
    )
}

/// Take the writer's reports and flush after each, until no write is under way.
async fn settle(d: &mut Driver, socket: &tokio::net::UdpSocket) {
    let until = Instant::now() + Duration::from_secs(20);
    for _ in 0..1000 {
        if !d.writing() {
            return;
        }
        let w = tokio::time::timeout_at(until, written(d.writer.as_mut()))
            .await
            .expect("the writer reports within 20 s")
            .expect("the writer runs");
        d.written(w);
        d.flush(socket).await;
    }
    panic!("writes kept coming");
}

/// A write that failed reports nothing of what it did not store: status (and with
/// it /watch, the hooks and `exec`) showed "leader, term N" from a node whose disk
/// refused the claim, which a restart then took back to a lower term (the audit:
/// term 3 reported, term 2 claimed after a SIGKILL). Once a retry succeeds the claim
/// is reported, and the file holds at least the reported term.
#[tokio::test]
async fn a_failed_write_reports_nothing_it_did_not_store() {
    let dir = scratch_dir("failed-write");
    let path = dir.join("2.state");
    let (cfg, socket, _peer1) = two_nodes(&path).await;
    let mut d = new_driver(cfg, false);
    d.writer.as_ref().unwrap().fail_next_writes(u32::MAX);
    d.boot();
    let leads = |d: &Driver| {
        d.shared
            .status()
            .into_iter()
            .find(|g| g.algorithm == Bully)
            .filter(|g| g.leader == Some(2))
            .map(|g| g.term)
    };
    // Node 2 of two claims Bully (the top node announces at once, or after its
    // answer timeout); every write of the claim fails meanwhile.
    let until = Instant::now() + Duration::from_secs(20);
    for _ in 0..2000 {
        d.timeout();
        d.note_input();
        d.flush(&socket).await;
        if d.write_failed && d.node.leader(Bully) == Some(2) {
            break;
        }
        assert!(Instant::now() < until, "node 2 claims within 20 s");
        tokio::time::sleep_until(d.deadline().min(Instant::now() + Duration::from_millis(20)))
            .await;
    }
    assert_eq!(d.node.leader(Bully), Some(2), "the node itself has claimed");
    assert_eq!(leads(&d), None, "a claim not on disk is not reported");
    assert!(d.shared.problems().iter().any(|p| p.0 == "persist"));
    // The disk back: the next retry stores the claim, and then it is reported.
    d.writer.as_ref().unwrap().fail_next_writes(0);
    for _ in 0..2000 {
        tokio::time::sleep_until(d.deadline().min(Instant::now() + Duration::from_millis(20)))
            .await;
        d.timeout();
        d.flush(&socket).await;
        if leads(&d).is_some() {
            break;
        }
        assert!(
            Instant::now() < until,
            "reported within 20 s of the disk's return"
        );
    }
    let reported = leads(&d).expect("reported");
    let stored = durable::load_saved(&path)
        .unwrap()
        .groups
        .into_iter()
        .find(|g| g.0 == Bully)
        .map(|g| g.1.term)
        .expect("Bully on disk");
    assert!(stored >= reported, "on disk {stored}, reported {reported}");
    drop(d);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_write_under_way_holds_back_its_groups_datagrams_not_the_others() {
    let dir = scratch_dir("writer");
    let path = dir.join("2.state");
    // Node 2 of two: the top node, Bully's leader once its claim is written.
    let (mut cfg, socket, _peer1) = two_nodes(&path).await;
    cfg.algorithms = vec![Bully, Raft];
    // Without pre-vote, Raft's election takes a new term and votes at once.
    cfg.options.pre_vote = false;
    let mut d = new_driver(cfg, true);
    assert!(d.writer.as_ref().is_some_and(|w| w.threaded()));
    d.boot();
    d.note_input();
    d.flush(&socket).await;
    settle(&mut d, &socket).await;
    let leader = |d: &Driver, kind| {
        d.node
            .status()
            .into_iter()
            .find(|s| s.algorithm == kind)
            .and_then(|s| s.leader)
    };
    assert_eq!(leader(&d, Bully), Some(2), "node 2 leads Bully");
    let on_disk = |kind| {
        durable::load_saved(&path)
            .unwrap()
            .groups
            .into_iter()
            .find(|g| g.0 == kind)
            .map(|g| g.1)
    };
    let bully_token = on_disk(Bully);
    assert!(bully_token.is_some_and(|t| t.voted_for == Some(2)));

    // The disk stalls; Raft calls an election (its term and vote: a claim).
    let go = d.writer.as_ref().unwrap().stall();
    let raft_before = bytes_sent(&d, Raft);
    let raft_disk = on_disk(Raft);
    let (tx, rx) = oneshot::channel();
    d.control(Control::Elect(Raft, tx));
    d.note_input();
    assert_eq!(rx.await.ok(), Some(true), "Raft calls an election");
    d.flush(&socket).await;
    // The stall is timed from when the writer thread has the write in hand (it may
    // be scheduled late on a busy machine): the metric's write time covers it.
    assert!(
        go.under_way(Duration::from_secs(20)),
        "the writer thread takes the write"
    );
    let stalled_from = Instant::now();
    assert!(d.writing(), "the write is under way");
    assert_eq!(d.holding, vec![Raft], "only Raft waits for it");
    assert!(!d.held.is_empty(), "its RequestVote is held");
    assert_eq!(bytes_sent(&d, Raft), raft_before, "nothing of Raft left");

    // Bully's heartbeats go on meanwhile (waiting on the node's own deadlines, a
    // bounded number of them).
    let bully_before = bytes_sent(&d, Bully);
    for _ in 0..200 {
        if bytes_sent(&d, Bully) > bully_before {
            break;
        }
        tokio::time::sleep_until(d.deadline().min(Instant::now() + Duration::from_millis(50)))
            .await;
        d.timeout();
        d.flush(&socket).await;
    }
    assert!(
        bytes_sent(&d, Bully) > bully_before,
        "Bully's heartbeats leave while Raft's write is under way"
    );
    assert_eq!(bytes_sent(&d, Raft), raft_before, "Raft's still wait");
    assert_eq!(
        on_disk(Raft),
        raft_disk,
        "Raft's new term is not on disk yet"
    );
    assert_eq!(on_disk(Bully), bully_token);

    // The disk answers: the vote is on disk, then the RequestVote leaves.
    let stalled = stalled_from.elapsed();
    let (writes_before, _) = state_writes(&d);
    drop(go);
    settle(&mut d, &socket).await;
    // `electd_state_write_seconds` has the stalled write, whole.
    let (writes, seconds) = state_writes(&d);
    assert!(writes > writes_before, "the stalled write is counted");
    assert!(
        seconds >= stalled.as_secs_f64(),
        "the writes' total {seconds} s covers the stall of {stalled:?}"
    );
    let raft_now = d
        .node
        .durable()
        .into_iter()
        .find(|g| g.0 == Raft)
        .map(|g| g.1);
    assert_eq!(on_disk(Raft), raft_now, "Raft's term and vote are on disk");
    assert!(raft_now.is_some_and(|r| r.voted_for == Some(2)));
    assert!(
        bytes_sent(&d, Raft) > raft_before,
        "and its RequestVote left"
    );
    assert!(d.held.is_empty() && d.holding.is_empty());
    drop(d);
    let _ = std::fs::remove_dir_all(&dir);
}

// --- reading before a due timer ---

/// A socket whose queue the test fills; it counts what the driver takes from it.
struct Queued(std::sync::Mutex<std::collections::VecDeque<Vec<u8>>>);

impl Transport for Queued {
    async fn send_to(&self, buf: &[u8], _to: SocketAddr) -> io::Result<usize> {
        Ok(buf.len())
    }

    async fn recv_from(&self, _buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        std::future::pending().await
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(peer(7002))
    }

    fn try_recv_from(&self, buf: &mut [u8]) -> Option<io::Result<(usize, SocketAddr)>> {
        let d = self.0.lock().ok()?.pop_front()?;
        buf[..d.len()].copy_from_slice(&d);
        Some(Ok((d.len(), peer(7001))))
    }
}

/// Before a due timer fires the driver reads what is queued: a batch on a small
/// roster, two datagrams per member on a large one (a fan-out's acks and replies),
/// and never more.
#[test]
fn before_a_timer_the_driver_reads_two_queued_datagrams_per_member() {
    for members in [3u16, 100] {
        let mut cfg = runtime_config();
        cfg.peers = (1..=members)
            .map(|i| (NodeId::from(i), peer(7000 + i)))
            .collect();
        let mut d = driver(cfg);
        let queued = Queued(std::sync::Mutex::new(
            (0..1000).map(|_| vec![0u8; 8]).collect(),
        ));
        let mut buf = vec![0u8; MAX_DATAGRAM];
        d.drain_pending(&queued, &mut buf);
        let left = queued.0.lock().unwrap().len();
        let want = BATCH.max(2 * usize::from(members));
        assert_eq!(1000 - left, want, "{members} members");
    }
}
