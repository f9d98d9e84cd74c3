//! One forged datagram (docs/security.md, "One datagram"): whatever it carries, sent
//! by an attacker who forges a member's source address in insecure mode, or by a
//! member that holds the cluster key and forges another member's datagrams, every
//! node follows a live leader again within 2 × `failure_timeout`, and keeps doing so.
//! An outsider without the key changes nothing at all.
//!
//! Three nodes run Bully, Ring and Raft at once over an in-memory network, every
//! datagram through the same `Gate::seal` → `Gate::open` → `Node::handle_datagram`
//! path as the daemon's. Incarnations beyond the 10 s future bound are refused as
//! `future_incarnation`; a term more than `MAX_TERM_AHEAD` above what a node has seen
//! is refused as `future_epoch`, even from a key holder.

use electd::contract::algorithm::{AlgorithmKind, Options, Timing, MAX_TERM_AHEAD};
use electd::contract::message::{ElectionTag, Message};
use electd::node::link::LinkConfig;
use electd::node::{Datagram, Node, NodeConfig};
use electd::security::gate::{Gate, GateConfig};
use electd::security::keyring::{Key, Keyring, KEY_LEN};
use electd::security::replay::MAX_FUTURE;
use electd::security::wire::{Codec, Header};
use electd::NodeId;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

const IDS: [NodeId; 3] = [1, 2, 3];
const BASE_US: u64 = 1_700_000_000_000_000;
const BULLY: AlgorithmKind = AlgorithmKind::Bully;
const RING: AlgorithmKind = AlgorithmKind::Ring;
const RAFT: AlgorithmKind = AlgorithmKind::Raft;
const KINDS: [AlgorithmKind; 3] = [BULLY, RING, RAFT];
const HOUR_US: u64 = 3_600 * 1_000_000;
/// The reproduction: an incarnation 9 s ahead, inside the 10 s bound.
const AHEAD_US: u64 = 9_000_000;
/// A datagram counter far ahead of any real one (one forged datagram used to move the
/// receiver's replay window there for good).
const FAR_COUNTER: u64 = 1 << 40;
/// A link sequence far ahead of any real one (a reliable forged message).
const FAR_SEQ: u64 = 1 << 30;

/// (leader, term) of one group at every node.
type Views = Vec<(Option<NodeId>, u64)>;

fn addr(id: NodeId) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, id as u8], 7946))
}

fn key() -> Keyring {
    Keyring::new(Key::new([9; KEY_LEN]))
}

/// Who forges: the mode of the cluster and what the attacker holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `insecure = true`: no key anywhere; the attacker forges source addresses.
    Insecure,
    /// A keyed cluster; the attacker is a member holding the key.
    Insider,
    /// A keyed cluster; the attacker holds another key.
    Outsider,
}

impl Mode {
    /// The cluster's keys.
    fn cluster_keys(self) -> Option<Keyring> {
        (self != Mode::Insecure).then(key)
    }
    /// The keys the attacker seals with.
    fn forger_keys(self) -> Option<Keyring> {
        match self {
            Mode::Insecure => None,
            Mode::Insider => Some(key()),
            Mode::Outsider => Some(Keyring::new(Key::new([4; KEY_LEN]))),
        }
    }
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
    timing: Timing,
    /// Record what (from, to) send: the bytes of each datagram, in `tapped`.
    tap: Option<(NodeId, NodeId)>,
    tapped: Vec<Vec<u8>>,
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

/// Member `id`'s node: every group of [`KINDS`] over [`IDS`], default options and link.
fn member_node(id: NodeId, timing: &Timing, incarnation: u64, seed: u64) -> Node {
    Node::new(NodeConfig {
        id,
        ring: IDS.into(),
        algorithms: KINDS.to_vec(),
        timing: timing.clone(),
        options: Options::default(),
        link: LinkConfig::default(),
        incarnation,
        seed,
    })
    .unwrap()
}

impl Net {
    fn new(keys: Option<Keyring>) -> Net {
        let timing = Timing::default();
        let members = IDS
            .iter()
            .map(|&id| {
                let incarnation = BASE_US + u64::from(id);
                let node = member_node(id, &timing, incarnation, u64::from(id));
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
            timing,
            tap: None,
            tapped: Vec::new(),
        }
    }

    /// A cluster in `mode`, started and run until every group has one leader.
    fn settled(mode: Mode) -> Net {
        let mut net = Net::new(mode.cluster_keys());
        net.start();
        for _ in 0..50 {
            net.run(Duration::from_millis(100));
            if KINDS.iter().all(|&k| net.leader(k).is_some()) {
                return net;
            }
        }
        panic!("never settled: {:?}", net.all_views());
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
            if self.tap == Some((id, to)) {
                self.tapped.push(bytes.clone());
            }
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

    /// One step of 1 ms: timers, then every datagram at once.
    fn step(&mut self) {
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

    /// Run `d` of virtual time in 1 ms steps.
    fn run(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.step();
        }
    }

    /// (leader, term) of group `kind` at every node.
    fn views(&self, kind: AlgorithmKind) -> Views {
        self.members
            .iter()
            .map(|m| m.node.leadership(kind).unwrap())
            .collect()
    }

    fn all_views(&self) -> Vec<(AlgorithmKind, Views)> {
        KINDS.iter().map(|&k| (k, self.views(k))).collect()
    }

    /// The leader every node of group `kind` follows, if they all follow the same one.
    fn leader(&self, kind: AlgorithmKind) -> Option<NodeId> {
        let v = self.views(kind);
        let first = v[0].0?;
        v.iter().all(|x| x.0 == Some(first)).then_some(first)
    }

    fn invalid(&self, id: NodeId, reason: &str) -> u64 {
        self.members[id as usize - 1]
            .node
            .invalid()
            .get(reason)
            .copied()
            .unwrap_or(0)
    }

    fn invalid_total(&self, id: NodeId) -> u64 {
        self.members[id as usize - 1].node.invalid().values().sum()
    }

    /// Inject a datagram "from" `d.from` (source address forged to its roster
    /// address), sealed by the attacker's own codec (`keys`: none in insecure mode)
    /// with datagram counter `counter` towards `to`.
    fn inject(&mut self, to: NodeId, d: &Datagram, keys: Option<Keyring>, counter: u64) {
        let codec = Codec::new("c", &IDS, keys);
        let bytes = codec.encode(d, Header { to, counter }).unwrap();
        self.wire.push_back((to, bytes, addr(d.from)));
        self.deliver();
    }

    /// Restart member `id` in a new incarnation (now) as a fresh node and gate (no state
    /// file: nothing here needs a token across the restart). Its first datagrams are
    /// left in its output, not yet on the wire (the caller decides what the others hear
    /// first).
    fn restart(&mut self, id: NodeId, keys: Option<Keyring>) {
        let incarnation = self.now_us();
        let node = member_node(id, &self.timing, incarnation, u64::from(id) + 100);
        let now = self.now;
        let m = self.m(id);
        m.node = node;
        m.gate = gate(id, keys);
        m.incarnation = incarnation;
        m.node.start(now, true);
    }

    /// Run until `window` after now and return how long after now the groups were
    /// last not all following one leader (`None`: they always were), and the leaders
    /// at the end.
    fn recovery(&mut self, window: Duration) -> (Option<Duration>, Vec<Option<NodeId>>) {
        let start = self.now;
        let mut last_bad = None;
        let check = |net: &Net| KINDS.iter().any(|&k| net.leader(k).is_none());
        if check(self) {
            last_bad = Some(Duration::ZERO);
        }
        while self.now < start + window {
            self.step();
            if check(self) {
                last_bad = Some(self.now - start);
            }
        }
        (last_bad, KINDS.iter().map(|&k| self.leader(k)).collect())
    }
}

/// After one forged datagram: within 2 × `failure_timeout` every group of every node
/// follows one leader, and does so until 20 failure timeouts later.
fn assert_recovers(net: &mut Net, what: &str) -> Vec<Option<NodeId>> {
    let ft = net.timing.failure_timeout;
    let (last_bad, leaders) = net.recovery(ft * 20);
    assert!(
        last_bad.is_none_or(|t| t <= ft * 2),
        "{what}: without one leader until {last_bad:?} after the datagram (bound {:?}); \
         at the end {:?}",
        ft * 2,
        net.all_views()
    );
    leaders
}

fn datagram(
    from: NodeId,
    incarnation: u64,
    seq: u64,
    kind: AlgorithmKind,
    msg: Message,
) -> Datagram {
    Datagram {
        from,
        incarnation,
        seq,
        ack: 0,
        group: Some(kind),
        body: Some(msg),
    }
}

/// The reproduction, in `mode`: one heartbeat "from" each group's leader
/// with an incarnation 9 s ahead and counter 1, to each follower.
fn heartbeat_from_9s_ahead(mode: Mode) {
    for kind in KINDS {
        let mut net = Net::settled(mode);
        let leader = net.leader(kind).unwrap();
        let (_, term) = net.views(kind)[leader as usize - 1];
        let before: Vec<Option<NodeId>> = KINDS.iter().map(|&k| net.leader(k)).collect();
        let forged = datagram(
            leader,
            net.now_us() + AHEAD_US,
            0,
            kind,
            Message::Heartbeat { term, leader },
        );
        for to in IDS.into_iter().filter(|&id| id != leader) {
            net.inject(to, &forged, mode.forger_keys(), 1);
            assert_eq!(net.invalid_total(to), 0, "{kind:?}: the gate let it in");
        }
        let after = assert_recovers(&mut net, &format!("{mode:?} {kind:?}"));
        // Nothing moved at all: the real leaders' datagrams were never refused.
        assert_eq!(after, before, "{mode:?} {kind:?}: {:?}", net.all_views());
        for id in IDS {
            assert_eq!(net.invalid(id, "stale_incarnation"), 0, "{mode:?} {kind:?}");
        }
    }
}

#[test]
fn a_heartbeat_from_9s_ahead_cuts_no_one_off_insecure() {
    heartbeat_from_9s_ahead(Mode::Insecure);
}

#[test]
fn a_heartbeat_from_9s_ahead_cuts_no_one_off_forged_by_an_insider() {
    heartbeat_from_9s_ahead(Mode::Insider);
}

/// The nemesis run at fb9bbe7: a member restarted, and before the others heard its
/// new incarnation twice (a follower that talks to few peers), one heartbeat "from" it
/// 9 s ahead reached one of them. The real new incarnation lay between the old one
/// (kept as the rival) and the forged one: it was refused as stale until the member
/// restarted again past the forged time (15 s there). Every node must follow a live
/// leader within the bound, whether the forged datagram comes before any datagram of
/// the new incarnation or after its first.
fn forged_right_after_a_restart(mode: Mode) {
    for heard_first in [0usize, 1] {
        let mut net = Net::settled(mode);
        let before: Vec<Option<NodeId>> = KINDS.iter().map(|&k| net.leader(k)).collect();
        assert_eq!(KINDS[0], BULLY);
        // The member that restarts: Bully's leader, which leads it again at once (the
        // highest id), so a node cut off from it has no Bully leader.
        let restarted = before[0].unwrap();
        let victim = IDS.into_iter().find(|&id| id != restarted).unwrap();
        net.run(Duration::from_millis(5));
        net.restart(restarted, mode.cluster_keys());
        // Its first `heard_first` datagrams to the victim arrive before the forged one.
        let out: Vec<(NodeId, Datagram)> = net.m(restarted).node.drain_transmits().collect();
        net.m(restarted).node.discard_events();
        let mut to_victim = 0;
        for (to, d) in out {
            if to == victim {
                if to_victim >= heard_first {
                    continue; // lost
                }
                to_victim += 1;
            }
            let bytes = net.m(restarted).gate.seal(to, &d).unwrap();
            net.wire.push_back((to, bytes, addr(restarted)));
        }
        assert_eq!(
            to_victim, heard_first,
            "the restart sends the victim that many"
        );
        net.deliver();
        let (_, term) = net.views(BULLY)[victim as usize - 1];
        let forged = datagram(
            restarted,
            net.now_us() + AHEAD_US,
            0,
            BULLY,
            Message::Heartbeat {
                term,
                leader: restarted,
            },
        );
        net.inject(victim, &forged, mode.forger_keys(), 1);
        let what = format!("{mode:?}, {heard_first} datagram(s) of the restart first");
        assert_recovers(&mut net, &what);
        // And the victim hears the restarted member's real incarnation.
        let real = net.members[restarted as usize - 1].incarnation;
        let gate_has = net.members[victim as usize - 1]
            .gate
            .incarnation_of(restarted);
        assert_eq!(gate_has, Some(real), "{what}");
        assert_eq!(net.invalid(victim, "stale_incarnation"), 0, "{what}");
    }
}

#[test]
fn a_heartbeat_from_9s_ahead_of_a_member_just_restarted_cuts_no_one_off_insecure() {
    forged_right_after_a_restart(Mode::Insecure);
}

#[test]
fn a_heartbeat_from_9s_ahead_of_a_member_just_restarted_cuts_no_one_off_forged_by_an_insider() {
    forged_right_after_a_restart(Mode::Insider);
}

/// One forged datagram in `mode`: `make(net)` gives (sender, receiver, group,
/// message) from the settled cluster; sent in the sender's current incarnation with a
/// counter and (if reliable) a link sequence far ahead of the real ones. Returns the
/// net after it recovered, and the leaders at the end.
fn one_forged(
    mode: Mode,
    what: &str,
    make: impl Fn(&Net) -> (NodeId, NodeId, AlgorithmKind, Message),
) -> (Net, Vec<Option<NodeId>>) {
    let mut net = Net::settled(mode);
    let (from, to, kind, msg) = make(&net);
    let seq = if msg.kind().is_reliable() { FAR_SEQ } else { 0 };
    let incarnation = net.members[from as usize - 1].incarnation;
    let d = datagram(from, incarnation, seq, kind, msg);
    net.inject(to, &d, mode.forger_keys(), FAR_COUNTER);
    let leaders = assert_recovers(&mut net, &format!("{mode:?} {what}"));
    (net, leaders)
}

/// The leader of `kind` and its term, and a follower.
fn leader_term_follower(net: &Net, kind: AlgorithmKind) -> (NodeId, u64, NodeId) {
    let leader = net.leader(kind).unwrap();
    let (_, term) = net.views(kind)[leader as usize - 1];
    let follower = IDS.into_iter().find(|&id| id != leader).unwrap();
    (leader, term, follower)
}

const FORGERS: [Mode; 2] = [Mode::Insecure, Mode::Insider];

#[test]
fn one_forged_timeout_now_is_recovered_from() {
    for mode in FORGERS {
        one_forged(mode, "TIMEOUT_NOW", |net| {
            let (leader, term, follower) = leader_term_follower(net, RAFT);
            (leader, follower, RAFT, Message::TimeoutNow { term })
        });
    }
}

#[test]
fn one_forged_handoff_is_recovered_from() {
    for mode in FORGERS {
        for kind in [BULLY, RING] {
            one_forged(mode, &format!("HANDOFF {kind:?}"), |net| {
                let (leader, term, follower) = leader_term_follower(net, kind);
                let msg = Message::Handoff {
                    epoch: term,
                    to: follower,
                };
                (leader, follower, kind, msg)
            });
        }
    }
}

#[test]
fn one_forged_priority_is_recovered_from() {
    for mode in FORGERS {
        for kind in KINDS {
            one_forged(mode, &format!("PRIORITY {kind:?}"), |net| {
                let (leader, term, follower) = leader_term_follower(net, kind);
                let msg = Message::Priority { term, priority: 1 };
                (leader, follower, kind, msg)
            });
        }
    }
}

#[test]
fn one_forged_coordinator_is_recovered_from() {
    for mode in FORGERS {
        // A low node "announces" itself, with the next epoch, to the other follower.
        one_forged(mode, "COORDINATOR", |net| {
            let (leader, term, _) = leader_term_follower(net, BULLY);
            let (low, other) = (1, if leader == 2 { 3 } else { 2 });
            let msg = Message::Coordinator {
                leader: low,
                epoch: term + 1,
                tag: ElectionTag::default(),
            };
            (low, other, BULLY, msg)
        });
    }
}

#[test]
fn one_forged_heartbeat_with_a_far_term_is_recovered_from() {
    for mode in FORGERS {
        for kind in KINDS {
            one_forged(mode, &format!("far term {kind:?}"), |net| {
                let (leader, term, follower) = leader_term_follower(net, kind);
                let far = term + MAX_TERM_AHEAD;
                (
                    leader,
                    follower,
                    kind,
                    Message::Heartbeat { term: far, leader },
                )
            });
        }
    }
}

/// A keyed cluster and an attacker without its key: every datagram of the tests
/// above, and one heartbeat from 9 s ahead, is refused (`no_key`), and a recorded
/// datagram of the leader sent again is a `replay`: nothing changes at all.
#[test]
fn an_outsider_without_the_key_changes_nothing() {
    let mut net = Net::settled(Mode::Outsider);
    let before: Vec<Option<NodeId>> = KINDS.iter().map(|&k| net.leader(k)).collect();
    let (leader, term, follower) = leader_term_follower(&net, RAFT);
    let inc = net.members[leader as usize - 1].incarnation;
    let forged = [
        datagram(
            leader,
            net.now_us() + AHEAD_US,
            0,
            RAFT,
            Message::Heartbeat { term, leader },
        ),
        datagram(leader, inc, FAR_SEQ, RAFT, Message::TimeoutNow { term }),
        datagram(
            leader,
            inc,
            0,
            RAFT,
            Message::Heartbeat {
                term: term + MAX_TERM_AHEAD,
                leader,
            },
        ),
    ];
    for d in &forged {
        net.inject(follower, d, Mode::Outsider.forger_keys(), FAR_COUNTER);
    }
    assert_eq!(net.invalid(follower, "no_key"), forged.len() as u64);
    // A recorded datagram of the leader to the follower (delivered), sent again.
    net.tap = Some((leader, follower));
    for _ in 0..1000 {
        if !net.tapped.is_empty() {
            break;
        }
        net.step();
    }
    let recorded = net.tapped.pop().expect("the leader sends to the follower");
    net.wire.push_back((follower, recorded, addr(leader)));
    net.deliver();
    assert_eq!(net.invalid(follower, "replay"), 1);
    let (last_bad, after) = net.recovery(net.timing.failure_timeout * 20);
    assert_eq!((last_bad, after), (None, before), "{:?}", net.all_views());
}

#[test]
fn a_spoofed_heartbeat_from_an_hour_ahead_is_refused() {
    let mut net = Net::settled(Mode::Insecure);
    let before: Vec<Option<NodeId>> = KINDS.iter().map(|&k| net.leader(k)).collect();
    let leader = net.leader(BULLY).unwrap();
    let (_, term) = net.views(BULLY)[leader as usize - 1];
    // The attacker forges the leader's address and an incarnation one hour ahead, to
    // both followers.
    let spoof = datagram(
        leader,
        net.now_us() + HOUR_US,
        0,
        BULLY,
        Message::Heartbeat { term, leader },
    );
    for to in IDS.into_iter().filter(|&id| id != leader) {
        net.inject(to, &spoof, None, 1);
    }
    let (last_bad, after) = net.recovery(Duration::from_secs(3));
    assert_eq!((last_bad, after), (None, before), "{:?}", net.all_views());
    for to in IDS.into_iter().filter(|&id| id != leader) {
        assert_eq!(net.invalid(to, "future_incarnation"), 1);
        assert_eq!(net.invalid(to, "stale_incarnation"), 0);
    }
    const { assert!(HOUR_US > MAX_FUTURE, "the bound is below an hour") };
}

#[test]
fn incarnations_beyond_the_bound_are_refused_and_within_it_undone() {
    let mut net = Net::settled(Mode::Insecure);
    let leader = net.leader(BULLY).unwrap();
    let (_, term) = net.views(BULLY)[leader as usize - 1];
    let to = IDS.into_iter().find(|&id| id != leader).unwrap();
    let hb = |incarnation| {
        datagram(
            leader,
            incarnation,
            0,
            BULLY,
            Message::Heartbeat { term, leader },
        )
    };
    let now = net.now_us();
    net.inject(to, &hb(now + MAX_FUTURE + 1), None, 1);
    assert_eq!(net.invalid(to, "future_incarnation"), 1);
    let real = net.members[leader as usize - 1].incarnation;
    assert_eq!(
        net.members[to as usize - 1].gate.incarnation_of(leader),
        Some(real)
    );
    net.inject(to, &hb(now + MAX_FUTURE), None, 1);
    assert_eq!(
        net.invalid(to, "future_incarnation"),
        1,
        "at the bound: accepted by the gate"
    );
    assert_eq!(
        net.members[to as usize - 1].gate.incarnation_of(leader),
        Some(now + MAX_FUTURE)
    );
    // … and undone by the leader's next two heartbeats.
    let beat = net.timing.heartbeat;
    net.run(beat * 2 + Duration::from_millis(1));
    assert_eq!(
        net.members[to as usize - 1].gate.incarnation_of(leader),
        Some(real)
    );
}

#[test]
fn a_term_from_far_ahead_is_refused_even_signed() {
    let mut net = Net::settled(Mode::Insider);
    let before: Vec<Option<NodeId>> = KINDS.iter().map(|&k| net.leader(k)).collect();
    let leader = net.leader(BULLY).unwrap();
    let (_, term) = net.views(BULLY)[leader as usize - 1];
    let to = IDS.into_iter().find(|&id| id != leader).unwrap();
    let incarnation = net.members[leader as usize - 1].incarnation;
    // A key holder sends COORDINATOR for the leader with epoch 2^64 − 1, and one just
    // past the bound, in the leader's current incarnation (reliable messages with
    // fresh sequences).
    for (i, epoch) in [u64::MAX, term + MAX_TERM_AHEAD + 1]
        .into_iter()
        .enumerate()
    {
        let d = datagram(
            leader,
            incarnation,
            FAR_SEQ + i as u64,
            BULLY,
            Message::Coordinator {
                leader,
                epoch,
                tag: ElectionTag::default(),
            },
        );
        // Sealed with the leader's own gate (its key, its next counter towards `to`).
        let bytes = net.m(leader).gate.seal(to, &d).unwrap();
        net.wire.push_back((to, bytes, addr(leader)));
        net.deliver();
    }
    assert_eq!(net.invalid(to, "future_epoch"), 2);
    let (last_bad, after) = net.recovery(Duration::from_secs(1));
    assert_eq!((last_bad, after), (None, before), "{:?}", net.all_views());
}
