//! Incarnations and terms from the future are bounded (docs/security.md): a spoofed
//! heartbeat in insecure mode whose incarnation is an hour ahead (the forged-source
//! attack of the issue that caused a lasting split brain) is refused as
//! `future_incarnation` and changes nothing; a term more than `MAX_TERM_AHEAD` above
//! what a node has seen is refused as `future_epoch`, even from a key holder.
//!
//! Three nodes run Bully over an in-memory network, every datagram through the same
//! `Gate::seal` → `Gate::open` → `Node::handle_datagram` path as the daemon's.

use electd::contract::algorithm::{AlgorithmKind, Options, Timing, MAX_TERM_AHEAD};
use electd::contract::message::{ElectionTag, Message};
use electd::node::link::LinkConfig;
use electd::node::{Datagram, Node, NodeConfig};
use electd::security::gate::{Gate, GateConfig};
use electd::security::keyring::{Key, Keyring, KEY_LEN};
use electd::security::replay::MAX_FUTURE;
use electd::NodeId;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

const IDS: [NodeId; 3] = [1, 2, 3];
const BASE_US: u64 = 1_700_000_000_000_000;
const BULLY: AlgorithmKind = AlgorithmKind::Bully;
const HOUR_US: u64 = 3_600 * 1_000_000;

fn addr(id: NodeId) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, id as u8], 7946))
}

struct Member {
    gate: Gate,
    node: Node,
    incarnation: u64,
}

struct Net {
    members: Vec<Member>,
    now: Duration,
    /// (to, bytes, source address)
    wire: VecDeque<(NodeId, Vec<u8>, SocketAddr)>,
}

fn gate(me: NodeId, keys: Option<Keyring>) -> Gate {
    Gate::new(GateConfig {
        me,
        cluster: "c".into(),
        roster: IDS.to_vec(),
        keys,
        sources: Some(IDS.iter().map(|&id| (id, vec![addr(id)])).collect()),
        group: false,
    })
}

impl Net {
    fn new(keys: Option<Keyring>) -> Net {
        let members = IDS
            .iter()
            .map(|&id| {
                let incarnation = BASE_US + u64::from(id);
                let node = Node::new(NodeConfig {
                    id,
                    ring: IDS.into(),
                    algorithms: vec![BULLY],
                    timing: Timing::default(),
                    options: Options::default(),
                    link: LinkConfig::default(),
                    incarnation,
                    seed: u64::from(id),
                })
                .unwrap();
                Member {
                    gate: gate(id, keys.clone()),
                    node,
                    incarnation,
                }
            })
            .collect();
        Net {
            members,
            now: Duration::ZERO,
            wire: VecDeque::new(),
        }
    }

    fn m(&mut self, id: NodeId) -> &mut Member {
        &mut self.members[id as usize - 1]
    }

    fn now_us(&self) -> u64 {
        BASE_US + self.now.as_micros() as u64
    }

    fn collect(&mut self, id: NodeId) {
        let m = self.m(id);
        let out: Vec<(NodeId, Datagram)> = m.node.drain_transmits().collect();
        m.node.discard_events();
        for (to, d) in out {
            let bytes = self.m(id).gate.seal(to, &d).unwrap();
            self.wire.push_back((to, bytes, addr(id)));
        }
    }

    fn deliver(&mut self) {
        while let Some((to, bytes, src)) = self.wire.pop_front() {
            let (now, now_us) = (self.now, self.now_us());
            let m = self.m(to);
            match m.gate.open(&bytes, Some(src), now_us) {
                Ok(d) => m.node.handle_datagram(now, d),
                Err(e) => m.node.count_invalid(e.reason()),
            }
            self.collect(to);
        }
    }

    fn start(&mut self) {
        for id in IDS {
            self.m(id).node.start(Duration::ZERO, true);
            self.collect(id);
        }
        self.deliver();
    }

    /// Run `d` of virtual time in 1 ms steps (timers, then every datagram at once).
    fn run(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.now += Duration::from_millis(1);
            for id in IDS {
                let now = self.now;
                let m = self.m(id);
                if m.node.poll_timeout().is_some_and(|t| t <= now) {
                    m.node.handle_timeout(now);
                }
                self.collect(id);
            }
            self.deliver();
        }
    }

    /// (leader, term) at every node.
    fn views(&self) -> Vec<(Option<NodeId>, u64)> {
        self.members
            .iter()
            .map(|m| {
                let s = m.node.group_status(BULLY).unwrap();
                (s.leader, s.term)
            })
            .collect()
    }

    fn invalid(&self, id: NodeId, reason: &str) -> u64 {
        self.members[id as usize - 1]
            .node
            .invalid()
            .get(reason)
            .copied()
            .unwrap_or(0)
    }

    /// Inject a datagram "from" `from` (source address forged to its roster address),
    /// encoded by the attacker's own gate (`keys`: none in insecure mode).
    fn inject(&mut self, to: NodeId, d: &Datagram, keys: Option<Keyring>) {
        let mut forger = gate(d.from, keys);
        let bytes = forger.seal(to, d).unwrap();
        self.wire.push_back((to, bytes, addr(d.from)));
        self.deliver();
    }
}

fn settled(net: &Net) -> (NodeId, u64) {
    let v = net.views();
    assert!(
        v.iter().all(|x| *x == v[0]) && v[0].0.is_some(),
        "not settled: {v:?}"
    );
    (v[0].0.unwrap(), v[0].1)
}

#[test]
fn a_spoofed_heartbeat_from_an_hour_ahead_causes_no_split_brain() {
    let mut net = Net::new(None);
    net.start();
    net.run(Duration::from_secs(1));
    let (leader, term) = settled(&net);
    assert_eq!(leader, 3);
    // The attacker forges node 3's address and an incarnation one hour ahead, to both
    // followers.
    let spoof = Datagram {
        from: 3,
        incarnation: net.now_us() + HOUR_US,
        seq: 0,
        ack: 0,
        group: Some(BULLY),
        body: Some(Message::Heartbeat { term, leader: 3 }),
    };
    for to in [1, 2] {
        net.inject(to, &spoof, None);
    }
    net.run(Duration::from_secs(3));
    // Nothing moved: node 3's real datagrams are still accepted, nobody re-elects.
    assert_eq!(settled(&net), (3, term), "{:?}", net.views());
    for to in [1, 2] {
        assert_eq!(net.invalid(to, "future_incarnation"), 1);
        assert_eq!(net.invalid(to, "stale_incarnation"), 0);
    }
    const { assert!(HOUR_US > MAX_FUTURE, "the bound is below an hour") };
}

#[test]
fn incarnations_within_the_bound_are_a_restart_and_beyond_it_are_refused() {
    let mut net = Net::new(None);
    net.start();
    net.run(Duration::from_secs(1));
    let (_, term) = settled(&net);
    let hb = |incarnation| Datagram {
        from: 3,
        incarnation,
        seq: 0,
        ack: 0,
        group: Some(BULLY),
        body: Some(Message::Heartbeat { term, leader: 3 }),
    };
    let now = net.now_us();
    net.inject(1, &hb(now + MAX_FUTURE + 1), None);
    assert_eq!(net.invalid(1, "future_incarnation"), 1);
    net.inject(1, &hb(now + MAX_FUTURE), None);
    assert_eq!(
        net.invalid(1, "future_incarnation"),
        1,
        "at the bound: accepted"
    );
}

#[test]
fn a_term_from_far_ahead_is_refused_even_signed() {
    let key = Keyring::new(Key::new([9; KEY_LEN]));
    let mut net = Net::new(Some(key.clone()));
    net.start();
    net.run(Duration::from_secs(1));
    let (leader, term) = settled(&net);
    assert_eq!(leader, 3);
    let incarnation = net.members[2].incarnation;
    // A key holder sends COORDINATOR for node 3 with epoch 2^64 − 1 in node 3's current
    // incarnation (a reliable message with a fresh sequence).
    for (i, epoch) in [u64::MAX, term + MAX_TERM_AHEAD + 1]
        .into_iter()
        .enumerate()
    {
        let d = Datagram {
            from: 3,
            incarnation,
            seq: (1 << 40) + i as u64,
            ack: 0,
            group: Some(BULLY),
            body: Some(Message::Coordinator {
                leader: 3,
                epoch,
                tag: ElectionTag::default(),
            }),
        };
        // Sealed with node 3's own gate (its key, its next counter towards node 1).
        let bytes = net.m(3).gate.seal(1, &d).unwrap();
        net.wire.push_back((1, bytes, addr(3)));
        net.deliver();
    }
    assert_eq!(net.invalid(1, "future_epoch"), 2);
    net.run(Duration::from_secs(1));
    assert_eq!(settled(&net), (3, term));
}
