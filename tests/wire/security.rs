//! Security: forged, replayed and hostile datagrams are dropped with the right reason
//! and never move a node's leader; the cluster key is rotated across running
//! processes (SIGHUP reload) without losing the leader. See docs/security.md.
//!
//! The forged-datagram cases drive the daemon's receive path sans-IO (the same
//! `Gate::open` → `Node::handle_datagram` the runtime runs, with full control over
//! sender, incarnation, counter and source address); `forged_datagrams_over_udp`
//! repeats the cases that need no captured traffic against real `electd run`
//! processes and reads the counts from `/metrics`; key rotation uses real processes.

use crate::common::{counter_sum, Cluster, Timing};
use electd::contract::algorithm::{AlgorithmKind, Options, Timing as AlgoTiming};
use electd::contract::message::{ElectionTag, Message};
use electd::node::link::LinkConfig;
use electd::node::{Datagram, Node, NodeConfig};
use electd::security::gate::{Dropped, Gate, GateConfig};
use electd::security::keyring::{to_hex, Key, Keyring, KEY_LEN};
use electd::security::replay::MAX_FUTURE;
use electd::security::wire::{Codec, Header};
use electd::NodeId;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

const ROSTER: [NodeId; 5] = [1, 2, 3, 4, 5];
const NOW_US: u64 = 1_700_000_000_000_000;
const BULLY: AlgorithmKind = AlgorithmKind::Bully;

fn key(b: u8) -> Keyring {
    Keyring::new(Key::new([b; KEY_LEN]))
}

fn addr(id: NodeId) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, id as u8], 5740))
}

/// Node 1's receive path: gate (key 1, source check on) in front of a Node.
struct Receiver {
    gate: Gate,
    node: Node,
    now: Duration,
    dropped: BTreeMap<&'static str, u64>,
}

impl Receiver {
    fn new() -> Receiver {
        let mut node = Node::new(NodeConfig {
            id: 1,
            ring: ROSTER.into(),
            algorithms: vec![BULLY],
            timing: AlgoTiming::default(),
            options: Options::default(),
            link: LinkConfig::default(),
            incarnation: NOW_US - 5,
            seed: 3,
        })
        .unwrap();
        node.start(Duration::ZERO, false);
        Receiver {
            gate: Gate::new(GateConfig {
                me: 1,
                cluster: "prod".into(),
                roster: ROSTER.to_vec(),
                keys: Some(key(1)),
                sources: Some(ROSTER.iter().map(|&id| (id, vec![addr(id)])).collect()),
                group: false,
            }),
            node,
            now: Duration::ZERO,
            dropped: BTreeMap::new(),
        }
    }

    /// Deliver `bytes` as if received from `src`; the drop reason if refused.
    fn receive(&mut self, bytes: &[u8], src: SocketAddr) -> Result<(), &'static str> {
        self.now += Duration::from_millis(1);
        match self.gate.open(bytes, Some(src), NOW_US) {
            Ok(d) => {
                self.node.handle_datagram(self.now, d);
                self.node.handle_timeout(self.now);
                let _ = self.node.drain_transmits().count();
                Ok(())
            }
            Err(e) => {
                *self.dropped.entry(e.reason()).or_insert(0) += 1;
                Err(e.reason())
            }
        }
    }

    fn leader(&self) -> Option<NodeId> {
        self.node.leader(BULLY)
    }
}

/// A sender: encodes with its own codec and counters (like a peer's gate would).
struct Sender {
    id: NodeId,
    incarnation: u64,
    codec: Codec,
    counter: u64,
    seq: u64,
}

impl Sender {
    fn new(id: NodeId, incarnation: u64, cluster: &str, keys: Option<Keyring>) -> Sender {
        let roster: Vec<NodeId> = ROSTER.iter().copied().chain([id]).collect();
        Sender {
            id,
            incarnation,
            codec: Codec::new(cluster, &roster, keys),
            counter: 0,
            seq: 0,
        }
    }

    fn coordinator(&mut self, leader: NodeId, epoch: u64) -> Vec<u8> {
        self.seq += 1;
        self.counter += 1;
        let d = Datagram {
            from: self.id,
            incarnation: self.incarnation,
            seq: self.seq,
            ack: 0,
            group: Some(BULLY),
            body: Some(Message::Coordinator {
                leader,
                epoch,
                tag: ElectionTag::default(),
            }),
        };
        let h = Header {
            to: 1,
            counter: self.counter,
        };
        self.codec.encode(&d, h).unwrap()
    }
}

/// Node 1 follows node 5 (a genuine COORDINATOR); every forgery below tries to make it
/// follow node 3 instead (Bully accepts a COORDINATOR from whoever announces itself).
#[test]
fn forged_coordinators_are_dropped_with_their_reason() {
    let mut r = Receiver::new();
    let mut n3 = Sender::new(3, NOW_US - 100, "prod", Some(key(1)));
    let mut n5 = Sender::new(5, NOW_US - 50, "prod", Some(key(1)));
    // Genuine history: node 3 led (epoch 1), then node 5 took over (epoch 2).
    let old = n3.coordinator(3, 1);
    assert_eq!(r.receive(&old, addr(3)), Ok(()));
    assert_eq!(r.leader(), Some(3));
    // Node 3's incarnation heard twice: a lower one is then stale (after a single
    // datagram it could still be the peer's real one, docs/security.md "One datagram").
    assert_eq!(r.receive(&n3.coordinator(3, 1), addr(3)), Ok(()));
    assert_eq!(r.receive(&n5.coordinator(5, 2), addr(5)), Ok(()));
    assert_eq!(r.leader(), Some(5));

    // (forgery, source address, expected reason)
    let cases: Vec<(&str, Vec<u8>, SocketAddr, &str)> = vec![
        (
            "no key",
            Sender::new(3, NOW_US, "prod", None).coordinator(3, 9),
            addr(3),
            "bad_tag",
        ),
        (
            "wrong key",
            Sender::new(3, NOW_US, "prod", Some(key(2))).coordinator(3, 9),
            addr(3),
            "no_key",
        ),
        (
            "replayed earlier valid datagram",
            old.clone(),
            addr(3),
            "replay",
        ),
        (
            "wrong cluster",
            Sender::new(3, NOW_US, "staging", Some(key(1))).coordinator(3, 9),
            addr(3),
            "cluster",
        ),
        (
            "unknown sender",
            Sender::new(9, NOW_US, "prod", Some(key(1))).coordinator(9, 9),
            addr(3),
            "unknown_sender",
        ),
        (
            "wrong source address",
            Sender::new(3, NOW_US, "prod", Some(key(1))).coordinator(3, 9),
            addr(4),
            "source",
        ),
        (
            "older incarnation of the sender",
            Sender::new(3, NOW_US - 1_000, "prod", Some(key(1))).coordinator(3, 9),
            addr(3),
            "stale_incarnation",
        ),
        (
            "incarnation more than MAX_FUTURE (10 s) ahead",
            Sender::new(3, NOW_US + MAX_FUTURE + 1, "prod", Some(key(1))).coordinator(3, 9),
            addr(3),
            "future_incarnation",
        ),
    ];
    for (what, bytes, src, reason) in &cases {
        assert_eq!(r.receive(bytes, *src), Err(*reason), "{what}");
        assert_eq!(r.leader(), Some(5), "{what} moved the leader");
    }
    for (_, _, _, reason) in &cases {
        assert_eq!(r.dropped.get(reason), Some(&1), "{reason} counted once");
    }
    assert!(Dropped::reasons().count() >= cases.len());

    // The future-incarnation forgery left no trace: node 3's genuine next datagram
    // (its current incarnation) is still accepted.
    assert_eq!(r.receive(&n3.coordinator(3, 0), addr(3)), Ok(()));
}

/// A replayed heartbeat (unreliable, so the reliable link's duplicate check never saw
/// it) is dropped; so is a replay after the receiver's link state was reset (the
/// runtime rebuilds its Node on resume, the gate survives).
#[test]
fn replayed_heartbeats_and_replays_after_a_link_reset_are_dropped() {
    let mut r = Receiver::new();
    let mut n5 = Sender::new(5, NOW_US - 50, "prod", Some(key(1)));
    assert_eq!(r.receive(&n5.coordinator(5, 2), addr(5)), Ok(()));
    n5.counter += 1;
    let hb = Datagram {
        from: 5,
        incarnation: n5.incarnation,
        seq: 0,
        ack: 0,
        group: Some(BULLY),
        body: Some(Message::Heartbeat { term: 2, leader: 5 }),
    };
    let hb = n5
        .codec
        .encode(
            &hb,
            Header {
                to: 1,
                counter: n5.counter,
            },
        )
        .unwrap();
    assert_eq!(r.receive(&hb, addr(5)), Ok(()));
    assert_eq!(r.receive(&hb, addr(5)), Err("replay"));
    // Link state reset: a fresh Node behind the same gate.
    let coord = n5.coordinator(5, 3);
    assert_eq!(r.receive(&coord, addr(5)), Ok(()));
    r.node = Node::new(NodeConfig {
        id: 1,
        ring: ROSTER.into(),
        algorithms: vec![BULLY],
        timing: AlgoTiming::default(),
        options: Options::default(),
        link: LinkConfig::default(),
        incarnation: NOW_US,
        seed: 4,
    })
    .unwrap();
    r.node.start(r.now, false);
    assert_eq!(r.receive(&coord, addr(5)), Err("replay"));
    assert_eq!(r.receive(&hb, addr(5)), Err("replay"));
    assert_eq!(r.leader(), None, "nothing replayed reached the fresh node");
    assert_eq!(r.dropped.get("replay"), Some(&3));
}

/// Hostile values that pass authentication (a peer holding the key, or a bug) never
/// panic or overflow: term, epoch and round at u64::MAX in every algorithm.
#[test]
fn extreme_values_from_an_authenticated_peer_do_not_panic() {
    let big = u64::MAX;
    let tag = ElectionTag {
        initiator: 5,
        seq: big,
    };
    let msgs = [
        Message::Election { tag, epoch: big },
        Message::Ok { responder: 5, tag },
        Message::Coordinator {
            leader: 5,
            epoch: big,
            tag,
        },
        Message::YouAreCoordinator { tag, epoch: big },
        Message::RingElection {
            initiator: 5,
            ids: vec![5, 4],
            epoch: big,
        },
        Message::RingCoordinator {
            initiator: 5,
            leader: 5,
            epoch: big,
        },
        Message::LcrElection {
            candidate: 5,
            round: big,
        },
        Message::LcrElected {
            leader: 5,
            epoch: big,
        },
        Message::Probe {
            candidate: 5,
            phase: 31,
            hops: u32::MAX,
            to_right: true,
            round: big,
        },
        Message::Reply {
            candidate: 5,
            phase: 31,
            to_right: false,
            round: big,
        },
        Message::Terminate {
            leader: 5,
            epoch: big,
        },
        Message::RequestVote {
            term: big,
            pre_vote: true,
            transfer: false,
        },
        Message::RequestVote {
            term: big,
            pre_vote: false,
            transfer: false,
        },
        Message::Vote {
            term: big,
            granted: true,
            pre_vote: false,
        },
        Message::Heartbeat {
            term: big,
            leader: 5,
        },
        Message::HeartbeatAck {
            term: big,
            leader: 0,
        },
        Message::Resign { epoch: big },
    ];
    let keys = key(1);
    let codec = Codec::new("prod", &ROSTER, Some(keys.clone()));
    for kind in AlgorithmKind::ALL {
        let mut gate = Gate::new(GateConfig {
            me: 1,
            cluster: "prod".into(),
            roster: ROSTER.to_vec(),
            keys: Some(keys.clone()),
            sources: None,
            group: false,
        });
        let mut node = Node::new(NodeConfig {
            id: 1,
            ring: ROSTER.into(),
            algorithms: vec![kind],
            timing: AlgoTiming::default(),
            options: Options::default(),
            link: LinkConfig::default(),
            incarnation: 1,
            seed: 1,
        })
        .unwrap();
        node.start(Duration::ZERO, true);
        let mut now = Duration::ZERO;
        for (i, m) in msgs.iter().cycle().take(msgs.len() * 3).enumerate() {
            let reliable = m.kind().is_reliable();
            let d = Datagram {
                from: 5,
                incarnation: 7,
                seq: if reliable { i as u64 + 1 } else { 0 },
                ack: 0,
                group: Some(kind),
                body: Some(m.clone()),
            };
            let h = Header {
                to: 1,
                counter: i as u64 + 1,
            };
            let bytes = codec.encode(&d, h).unwrap();
            if !kind.info().carries(m.kind()) {
                // A body of another group never reaches the node (docs/wire.md §7).
                let refused = gate.open(&bytes, None, NOW_US).map_err(|e| e.reason());
                assert_eq!(refused.err(), Some("algorithm"), "{kind}: {m:?}");
                continue;
            }
            let d = gate.open(&bytes, None, NOW_US).expect("valid encoding");
            node.handle_datagram(now, d);
            // Let every timer fire too: elections after a u64::MAX term/epoch.
            now += Duration::from_millis(300);
            node.handle_timeout(now);
            for (_, d) in node.drain_transmits().collect::<Vec<_>>() {
                let _ = gate.seal(5, &d).expect("a node's own datagram encodes");
            }
        }
        let s = node.group_status(kind).unwrap();
        if let Some(l) = s.leader {
            assert!(ROSTER.contains(&l), "{kind}: leader {l}");
        }
    }
}

// ---------------------------------------------------------------------------------
// Real processes.

const TIMING: Timing = Timing::LOOPBACK;

fn cluster_key(c: &Cluster) -> Keyring {
    Keyring::load(&c.dir.join("cluster.key")).unwrap()
}

fn invalid(c: &Cluster, id: NodeId, reason: &str) -> f64 {
    let m = c.metrics(id).unwrap_or_default();
    counter_sum(&m, "electd_invalid_datagrams_total", &[("reason", reason)])
}

/// Wait up to `within` until `ok` holds.
fn wait_for(within: Duration, what: &str, mut ok: impl FnMut() -> bool) {
    crate::common::wait_for_within(within, what, || ok().then_some(()));
}

#[test]
fn forged_datagrams_over_udp_are_counted_and_do_not_move_the_leader() {
    let mut c = Cluster::new("sec-udp", 3, &[BULLY], &TIMING);
    c.start_all();
    let (leaders, _) = c
        .wait_agreement(Duration::from_secs(15), |l| l.get("bully") == Some(&3))
        .unwrap_or_else(|e| panic!("startup: {e}\n{}", c.log(1)));
    assert_eq!(leaders["bully"], 3);
    let target = c.nodes[0].udp;
    let attacker = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let roster = [1, 2, 3];
    let keys = cluster_key(&c);
    let forge = |sender: NodeId, cluster: &str, keys: Option<Keyring>| {
        let roster: Vec<NodeId> = roster.iter().copied().chain([sender]).collect();
        let d = Datagram {
            from: sender,
            incarnation: electd::daemon::runtime::incarnation_now(),
            seq: 1,
            ack: 0,
            group: Some(BULLY),
            body: Some(Message::Coordinator {
                leader: sender,
                epoch: 1_000,
                tag: ElectionTag::default(),
            }),
        };
        Codec::new(cluster, &roster, keys)
            .encode(&d, Header { to: 1, counter: 1 })
            .unwrap()
    };
    let cases = [
        ("bad_tag", forge(2, "sec-udp", None)),
        ("no_key", forge(2, "sec-udp", Some(key(0xee)))),
        ("cluster", forge(2, "other", Some(keys.clone()))),
        ("unknown_sender", forge(9, "sec-udp", Some(keys.clone()))),
        // Valid tag, but sent from the attacker's port, not node 2's roster address.
        ("source", forge(2, "sec-udp", Some(keys.clone()))),
        ("empty", Vec::new()),
        ("decode", vec![0xff; 40]),
    ];
    for (reason, bytes) in &cases {
        let before = invalid(&c, 1, reason);
        for _ in 0..3 {
            attacker.send_to(bytes, target).unwrap();
        }
        wait_for(Duration::from_secs(5), reason, || {
            invalid(&c, 1, reason) >= before + 3.0
        });
    }
    let now = c
        .agreement()
        .unwrap_or_else(|e| panic!("no agreement after the forgeries: {e}\n{}", c.log(1)));
    assert_eq!(now["bully"], 3, "forgeries moved the leader");
    let m = c.metrics(1).unwrap();
    assert_eq!(
        counter_sum(&m, "electd_leader_changes_total", &[("algorithm", "bully")]),
        1.0,
        "node 1 changed leader only once (at startup)"
    );
    // The log is rate limited: 21 drops, at most BURST lines per reason.
    let log = c.log(1);
    let lines = log.matches("dropped datagram").count();
    assert!(
        lines >= cases.len(),
        "every reason logged at least once:\n{log}"
    );
    assert!(
        lines <= cases.len() * electd::security::droplog::BURST as usize,
        "{lines} lines:\n{log}"
    );
}

/// Rotation procedure of docs/security.md: (1) add the new key as a second line on
/// every node and reload, (2) make it first (primary) everywhere and reload, (3)
/// remove the old key and reload. The nodes reload one by one with SIGHUP while the
/// cluster runs: the leader never changes and no datagram is refused.
#[test]
fn key_rotation_with_sighup_keeps_the_leader() {
    let algorithms = [BULLY, AlgorithmKind::Raft];
    let mut c = Cluster::new("sec-rotate", 3, &algorithms, &TIMING);
    // One key file per node, so that each node can be on a different step.
    let old = std::fs::read_to_string(c.dir.join("cluster.key")).unwrap();
    let mut text = std::fs::read_to_string(&c.config).unwrap();
    text = text.replace("key_file = \"cluster.key\"\n", "");
    for id in c.ids() {
        std::fs::write(c.dir.join(format!("node{id}.key")), &old).unwrap();
    }
    std::fs::write(&c.config, &text).unwrap();
    let dir = c.dir.clone();
    let env_key = |id: NodeId| dir.join(format!("node{id}.key"));
    for id in c.ids() {
        let key_file = env_key(id).display().to_string();
        c.start_with_env(
            id,
            &[
                ("ELECTD_SECURITY_KEY_FILE", key_file.as_str()),
                ("ELECTD_LOG", "info"),
            ],
        );
    }
    let (start, _) = c
        .wait_agreement(Duration::from_secs(15), |l| l.len() == algorithms.len())
        .unwrap_or_else(|e| panic!("startup: {e}\n{}", c.log(1)));
    let changes = |c: &Cluster| -> Vec<f64> {
        c.ids()
            .iter()
            .map(|&id| {
                let m = c.metrics(id).unwrap_or_default();
                counter_sum(&m, "electd_leader_changes_total", &[])
            })
            .collect()
    };
    let changes_before = changes(&c);
    let new = to_hex(&electd::security::keyring::random_key().unwrap());
    let old_line = old
        .lines()
        .find(|l| !l.starts_with('#') && !l.is_empty())
        .unwrap()
        .to_string();
    let steps = [
        format!("{old_line}\n{new}\n"),
        format!("{new}\n{old_line}\n"),
        format!("{new}\n"),
    ];
    let mut reloads = 0;
    for (step, content) in steps.iter().enumerate() {
        for id in c.ids() {
            std::fs::write(env_key(id), content).unwrap();
            c.signal(id, libc::SIGHUP);
            reloads += 1;
            wait_for(Duration::from_secs(5), "keyring reloaded", || {
                reloads_of(&c, id) > step
            });
            // Traffic flows under the new keyring for a few heartbeats before the next node.
            std::thread::sleep(Duration::from_millis(5 * TIMING.heartbeat_ms));
            let now = c
                .agreement()
                .unwrap_or_else(|e| panic!("step {step}, node {id}: {e}\n{}", c.log(id)));
            assert_eq!(now, start, "step {step}, node {id}: leaders changed");
        }
    }
    assert_eq!(reloads, 9);
    for id in c.ids() {
        for reason in ["no_key", "bad_tag"] {
            assert_eq!(invalid(&c, id, reason), 0.0, "node {id} refused {reason}");
        }
        let log = c.log(id);
        assert_eq!(log.matches("keyring reloaded").count(), 3, "{log}");
    }
    assert_eq!(
        changes(&c),
        changes_before,
        "a leader change during rotation"
    );

    // Negative control: a node that skipped step 1 (old key only) cannot talk to the
    // others any more, and both sides count `no_key`.
    std::fs::write(env_key(1), &old).unwrap();
    c.signal(1, libc::SIGHUP);
    wait_for(Duration::from_secs(5), "no_key on node 1", || {
        invalid(&c, 1, "no_key") > 0.0
    });
    wait_for(Duration::from_secs(5), "no_key on node 2", || {
        invalid(&c, 2, "no_key") > 0.0
    });
}

fn reloads_of(c: &Cluster, id: NodeId) -> usize {
    c.log(id).matches("keyring reloaded").count()
}
