//! One electd node, sans-IO: every configured algorithm as an independent group, the
//! heartbeat failure detector, the reliable link, and one deadline table.
//!
//! The driver owns time and I/O. It calls [`Node::handle_datagram`] for each datagram
//! received and [`Node::handle_timeout`] when the deadline of [`Node::poll_timeout`]
//! has passed, then drains [`Node::drain_transmits`] (datagrams to put on the wire) and
//! [`Node::drain_events`] (leader changes, for metrics, hooks and observers). Time is a
//! [`Duration`] since an origin the driver chooses; no clock is read here. Timer
//! ranges are resolved with the node's own seeded generator, so a run is a function of
//! its seeds and inputs.
//!
//! # Why one file of ~750 lines of code
//! `Node` is one state machine: every method reads or writes the same groups, link and
//! deadline table, and the order of its steps is the behaviour. What stands on its own
//! is apart (the reliable link in `link.rs`, the hasher in `fxhash.rs`, the tests in
//! `*_tests.rs`); cutting `impl Node` across files would separate each input's
//! handling from the tables it changes.

#[cfg(test)]
mod drain_tests;
#[cfg(test)]
mod failover_tests;
mod fxhash;
#[cfg(test)]
mod heartbeat_tests;
#[cfg(test)]
mod lease_tests;
pub mod link;
#[cfg(test)]
mod multicast_tests;
#[cfg(test)]
mod sim_start;
#[cfg(test)]
mod transfer_tests;
#[cfg(test)]
mod weight_tests;

use crate::contract::algorithm::{
    Algorithm, AlgorithmKind, Durable, Effect, GroupConfig, LeaderLoss, Options, Out, Timer,
    Timing, Token, MAX_TERM_AHEAD,
};
use crate::contract::message::{Message, MessageType};
use crate::contract::policy::Ineligible;
use crate::contract::rng::Rng;
use crate::NodeId;
use link::{Inbound, Link, LinkConfig, LinkStats};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Effects buffers larger than this are freed after use rather than kept.
const OUT_KEEP_CAPACITY: usize = 64;

/// The `reason` labels of `electd_invalid_datagrams_total` the node itself counts, for
/// a datagram the gate passed (docs/wire.md §8): a sender that is this node or off the
/// roster, no body, a group this node does not run, an epoch too far ahead.
pub const NODE_DROP_REASONS: [&str; 4] = [
    "unknown_sender",
    "empty",
    "unknown_algorithm",
    "future_epoch",
];

/// Driver time: a duration since the driver's origin.
pub type Time = Duration;

/// A datagram in domain form (the wire module encodes it as one protobuf envelope).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datagram {
    /// The sending node.
    pub from: NodeId,
    /// The sender's boot id: a higher one means it restarted, a lower one is a leftover
    /// of a previous life.
    pub incarnation: u64,
    /// Link sequence of a reliable body, 0 for unreliable ones.
    pub seq: u64,
    /// Sequence acknowledged, 0 for none.
    pub ack: u64,
    /// The group (algorithm) the body belongs to; `None` for a bare ack.
    pub group: Option<AlgorithmKind>,
    /// The message; `None` for a bare ack.
    pub body: Option<Message>,
}

/// Everything a node is built from.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// This node's id, a member of `ring`.
    pub id: NodeId,
    /// Every roster id including this node's, in logical ring order (shared: the
    /// node's groups keep this one copy, as may the driver's other nodes).
    pub ring: Arc<[NodeId]>,
    /// The groups to run, one per algorithm (no duplicates).
    pub algorithms: Vec<AlgorithmKind>,
    /// Heartbeat, failure timeout and election timeouts of every group.
    pub timing: Timing,
    /// Raft switches (pre-vote, check-quorum, ranked timeouts).
    pub options: Options,
    /// Reliable-link settings.
    pub link: LinkConfig,
    /// Boot id; must grow across restarts of the same node.
    pub incarnation: u64,
    /// Seed of the generator that resolves timer ranges.
    pub seed: u64,
}

/// What happened at a node, for observers (metrics, hooks, `/watch`, the simulator).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The node's belief about a group's leader changed (or the same leader took a new
    /// term).
    LeaderChanged {
        /// The group.
        group: AlgorithmKind,
        /// The new leader, `None` when the group has none.
        leader: Option<NodeId>,
        /// The term (epoch, round) of that leadership.
        term: u64,
        /// When the change happened.
        at: Time,
    },
    /// The node started (or joined) an election in a group.
    ElectionStarted {
        /// The group.
        group: AlgorithmKind,
        /// When it started.
        at: Time,
    },
    /// The node learned a leader after an election it took part in.
    ElectionFinished {
        /// The group.
        group: AlgorithmKind,
        /// From the start of the election to the leader adopted.
        duration: Duration,
        /// This node is the leader elected.
        won: bool,
    },
    /// A failover at this node: it followed `from` (another node), then adopted a
    /// different leader `to` (itself included) while `from` had been silent — no
    /// datagram from it — for longer than halfway from the heartbeat period to the
    /// timeout that declares a leader lost (`failure_timeout`, Raft's shortest election
    /// timeout). A live leader is heard every heartbeat, so a handover between live
    /// nodes (a returning higher id taking over) is not a failover. `total` runs from
    /// the last datagram heard from `from` to adopting `to`. When this node declared
    /// `from` lost before adopting `to` (its failure detector, a resignation, an
    /// election that cleared its belief), `phases` splits `total` at that moment;
    /// when it adopted `to` directly there are no phases.
    Failover {
        /// The group.
        group: AlgorithmKind,
        /// The leader followed before.
        from: NodeId,
        /// The leader adopted.
        to: NodeId,
        /// Last datagram heard from `from` → `to` adopted.
        total: Duration,
        /// Where `total` splits into detection and election, when this node declared `from`
        /// lost first.
        phases: Option<FailoverPhases>,
    },
}

/// The two phases of a failover at one node; they add up to its total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailoverPhases {
    /// Last datagram heard from the old leader → this node declared it lost.
    pub detection: Duration,
    /// Loss declared → the next leader adopted.
    pub election: Duration,
}

/// Per-group counters (the metrics module exports these).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupStats {
    /// Messages sent, by type (index: `MessageType as usize`); broadcasts count one per
    /// recipient.
    pub sent: [u64; MessageType::ALL.len()],
    /// Messages received and handed to the group, by type (same index).
    pub received: [u64; MessageType::ALL.len()],
    /// Elections this node started or joined.
    pub elections_started: u64,
    /// Times this node became the group's leader.
    pub elections_won: u64,
    /// Changes of this node's leader belief (including to none).
    pub leader_changes: u64,
    /// Duration of the last election this node took part in that ended with a leader.
    pub last_election: Option<Duration>,
    /// The link's retransmissions of this group's messages.
    pub retransmissions: u64,
    /// Of this group's messages, those the link gave up on (peer unreachable).
    pub delivery_failures: u64,
    /// Failovers this node experienced ([`Event::Failover`]) and the last one's total.
    pub failovers: u64,
    /// The `total` of the last failover.
    pub last_failover: Option<Duration>,
    /// Time without a leader since the node started, up to the last leader change;
    /// [`Node::leaderless`] adds the period still under way.
    pub leaderless: Duration,
}

impl GroupStats {
    /// Messages of type `t` sent.
    pub(crate) fn sent_of(&self, t: MessageType) -> u64 {
        self.sent[t as usize]
    }
    /// Messages of type `t` received.
    pub(crate) fn received_of(&self, t: MessageType) -> u64 {
        self.received[t as usize]
    }
    /// Election messages sent (liveness traffic excluded), the literature's count.
    pub fn election_messages(&self) -> u64 {
        MessageType::ALL
            .iter()
            .filter(|t| !t.is_liveness())
            .map(|t| self.sent[*t as usize])
            .sum()
    }
}

/// A read-only view of one group for `/status` and the demo table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupStatus {
    /// The group.
    pub algorithm: AlgorithmKind,
    /// The algorithm's state name (`follower`, `electing`, `leader`, …).
    pub state: &'static str,
    /// The leader this node believes in, if any.
    pub leader: Option<NodeId>,
    /// The term (epoch, round) of that leadership.
    pub term: u64,
    /// When the current leader belief was formed.
    pub since: Time,
    /// An election is in progress at this node.
    pub electing: bool,
    /// Duration of the last election this node took part in that ended with a leader.
    pub last_election: Option<Duration>,
    /// Why this node may not lead the group now (empty: it may).
    pub ineligible: Vec<Ineligible>,
}

/// A group's [`GroupStatus`] as plain values (the ineligibility reasons as bits):
/// see [`Node::status_keys`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusKey {
    algorithm: AlgorithmKind,
    state: &'static str,
    leader: Option<NodeId>,
    term: u64,
    since: Time,
    electing: bool,
    last_election: Option<Duration>,
    ineligible: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Algo(Timer),
    Heartbeat,
    Detector,
}

#[derive(Debug)]
struct Group {
    kind: AlgorithmKind,
    algo: Box<dyn Algorithm>,
    leader: Option<NodeId>,
    term: u64,
    /// Leader of `term` (the token's leader; kept when the leader is lost).
    holder: NodeId,
    /// Highest term, epoch or round accepted from the network or held: a datagram more
    /// than [`MAX_TERM_AHEAD`] above it is refused.
    seen: u64,
    /// A datagram between one and two [`MAX_TERM_AHEAD`] above `seen` was refused:
    /// the next one there is taken.
    far_refused: bool,
    since: Time,
    election_started_at: Option<Time>,
    stats: GroupStats,
    /// The other node this node last followed (kept while it has no leader after it).
    followed: Option<NodeId>,
    /// Last datagram heard from `followed` (or when it was adopted).
    heard: Time,
    /// While leaderless after losing `followed`: (last heard from it then, loss time).
    lost: Option<(Time, Time)>,
    /// Since when the node has had no leader (`None` while it has one, or before start).
    leaderless_since: Option<Time>,
    /// Stale claims answered with the term held: claimant → (its claim, the token
    /// held, when). A claim is answered once per claimed and held token, and again
    /// only after `failure_timeout` (the answer is fire-and-forget): not at every
    /// heartbeat, from every node holding the higher token, which would bury the
    /// claimant in answers it can no longer work off in time.
    stale_answered: BTreeMap<NodeId, (Token, Token, Time)>,
    /// While leading: per peer, the last heartbeat answer carrying this leadership's
    /// token (the contacts a lease is computed from).
    contacts: BTreeMap<NodeId, Time>,
    /// Why this node may not lead this group now (empty: it may).
    ineligible: std::collections::BTreeSet<Ineligible>,
    /// A leadership transfer under way from this node: (target, give up at).
    transfer: Option<(NodeId, Time)>,
    /// The target of the last transfer, when it refused it (it may not lead); taken by
    /// [`Node::take_transfer_refusals`].
    transfer_refused: Option<NodeId>,
    /// The last peer heard with a term more than [`MAX_TERM_AHEAD`] below this node's
    /// (peer, its term): that peer drops this node's datagrams as `future_epoch`. Cleared
    /// when a peer is heard within reach again. See [`Node::terms_out_of_reach`].
    out_of_reach: Option<(NodeId, u64)>,
    /// How much weighted health checks lower this node's priority now.
    penalty: u8,
    /// The leader's advertised priority ([`Message::Priority`]), applied to the
    /// ranking while it leads.
    leader_priority: Option<(NodeId, u8)>,
}

/// One node (see the module documentation).
#[derive(Debug)]
pub struct Node {
    /// The algorithm switches (the lease settings are read here).
    options: Options,
    id: NodeId,
    ring: Arc<[NodeId]>,
    /// The roster sorted, for membership checks in O(log N) (the same allocation as
    /// `ring` where that is sorted, the usual case).
    members: Arc<[NodeId]>,
    timing: Timing,
    groups: Vec<Group>,
    link: Link,
    rng: Rng,
    timers: Vec<(u8, Slot, Time)>,
    transmits: Vec<(NodeId, Datagram)>,
    /// Send unreliable broadcasts as one datagram to every member (multicast).
    multicast: bool,
    multicasts: Vec<Datagram>,
    /// Peers the link declared unreachable since the last drain.
    unreachable: Vec<NodeId>,
    events: Vec<Event>,
    out: Out,
    invalid: BTreeMap<&'static str, u64>,
    /// Priorities and preemption (the ranking of the members).
    policy: crate::contract::policy::Policy,
}

impl Node {
    /// Build a node; nothing happens until [`Node::start`].
    pub fn new(cfg: NodeConfig) -> Result<Node, crate::algorithms::BuildError> {
        let policy_of_config = cfg.options.policy.clone();
        let mut groups = Vec::with_capacity(cfg.algorithms.len());
        for &kind in &cfg.algorithms {
            let gc = GroupConfig {
                me: cfg.id,
                ring: cfg.ring.clone(),
                timing: cfg.timing.clone(),
                options: cfg.options.clone(),
                incarnation: cfg.incarnation,
            };
            groups.push(Group {
                kind,
                algo: crate::algorithms::build(kind, gc)?,
                leader: None,
                term: 0,
                holder: 0,
                seen: 0,
                far_refused: false,
                since: Duration::ZERO,
                election_started_at: None,
                stats: GroupStats::default(),
                followed: None,
                heard: Duration::ZERO,
                lost: None,
                leaderless_since: None,
                stale_answered: BTreeMap::new(),
                contacts: BTreeMap::new(),
                ineligible: Default::default(),
                transfer: None,
                transfer_refused: None,
                out_of_reach: None,
                penalty: 0,
                leader_priority: None,
            });
        }
        let members: Arc<[NodeId]> = if cfg.ring.is_sorted() {
            cfg.ring.clone()
        } else {
            let mut sorted = cfg.ring.to_vec();
            sorted.sort_unstable();
            sorted.into()
        };
        let link = Link::new(cfg.id, cfg.incarnation, &members, cfg.link);
        Ok(Node {
            options: cfg.options.clone(),
            id: cfg.id,
            members,
            ring: cfg.ring,
            timing: cfg.timing,
            groups,
            link,
            rng: Rng::new(cfg.seed),
            timers: Vec::new(),
            transmits: Vec::new(),
            multicast: false,
            multicasts: Vec::new(),
            unreachable: Vec::new(),
            events: Vec::new(),
            out: Out::new(),
            invalid: BTreeMap::new(),
            policy: policy_of_config,
        })
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// State of every group that must survive a crash (Raft's term and vote). A driver
    /// with a disk stores it after each call, *before* it transmits the datagrams that
    /// call produced, and hands it to [`Node::restore`] after a restart.
    pub fn durable(&self) -> Vec<(AlgorithmKind, Durable)> {
        self.groups
            .iter()
            .filter_map(|g| g.algo.durable().map(|d| (g.kind, d)))
            .collect()
    }

    /// Call `f` with each group's durable state, as [`Node::durable`] lists them
    /// (without building the list).
    pub fn each_durable(&self, mut f: impl FnMut(AlgorithmKind, Durable)) {
        for g in &self.groups {
            if let Some(d) = g.algo.durable() {
                f(g.kind, d);
            }
        }
    }

    /// Restore the durable state of a previous life; call before [`Node::start`].
    /// Entries for groups this node does not run are ignored.
    pub fn restore(&mut self, states: &[(AlgorithmKind, Durable)]) {
        for (kind, state) in states {
            if let Some(g) = self.group_index(*kind) {
                let grp = &mut self.groups[g];
                grp.algo.restore(*state);
                grp.term = grp.algo.term();
                grp.seen = grp.seen.max(state.term);
                // The token's leader (Raft: the vote; the node only uses the holder
                // for the groups on the heartbeat failure detector, never Raft's).
                grp.holder = state.voted_for.unwrap_or(0);
            }
        }
    }

    /// Start every group; with `call_election` each calls an election at once.
    pub fn start(&mut self, now: Time, call_election: bool) {
        for g in 0..self.groups.len() {
            if self.groups[g].leader.is_none() {
                self.groups[g].leaderless_since = Some(now);
            }
            self.groups[g].algo.on_start(call_election, &mut self.out);
            self.apply(g, now);
        }
    }

    /// The earliest deadline (timer or retransmission), if any.
    pub fn poll_timeout(&mut self) -> Option<Time> {
        let transfers = self.groups.iter().filter_map(|g| g.transfer.map(|t| t.1));
        let timers = self.timers.iter().map(|t| t.2).chain(transfers).min();
        match (timers, self.link.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fire everything due at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        let mut failed = Vec::new();
        let before = self.transmits.len();
        self.link.on_timeout(now, &mut self.transmits, &mut failed);
        for i in before..self.transmits.len() {
            if let Some(g) = self.transmits[i].1.group.and_then(|k| self.group_index(k)) {
                self.groups[g].stats.retransmissions += 1;
            }
        }
        for u in failed {
            if let Some(g) = self.group_index(u.group) {
                self.groups[g].stats.delivery_failures += 1;
            }
            if !self.unreachable.contains(&u.peer) {
                self.unreachable.push(u.peer);
            }
            if let Some(g) = self.group_index(u.group) {
                self.groups[g]
                    .algo
                    .on_peer_unreachable(u.peer, u.msg, &mut self.out);
                self.apply(g, now);
            }
        }
        // Fire due timers in deadline order; a handler may re-arm or cancel others.
        loop {
            let due = self
                .timers
                .iter()
                .enumerate()
                .filter(|(_, t)| t.2 <= now)
                .min_by_key(|(_, t)| t.2)
                .map(|(i, _)| i);
            let Some(i) = due else { break };
            let (g, slot, deadline) = self.timers.swap_remove(i);
            let g = g as usize;
            match slot {
                Slot::Algo(timer) => {
                    self.groups[g].algo.on_timer(timer, &mut self.out);
                    self.apply(g, now);
                }
                Slot::Heartbeat => {
                    let grp = &self.groups[g];
                    // A leader handing over (HANDOFF) falls silent: its heartbeats
                    // would reach the target as a higher-ranked claim, which the ring
                    // family resolves by electing the higher id again.
                    let handing_over = grp.transfer.is_some() && grp.algo.uses_failure_detector();
                    if handing_over {
                        let next = now + self.timing.heartbeat;
                        self.arm(g, Slot::Heartbeat, next);
                    } else if grp.leader == Some(self.id) {
                        let msg = Message::Heartbeat {
                            term: grp.term,
                            leader: self.id,
                        };
                        let advert =
                            (grp.penalty > 0 && grp.algo.uses_failure_detector()).then(|| {
                                Message::Priority {
                                    term: grp.term,
                                    priority: u32::from(self.effective_priority(g)),
                                }
                            });
                        self.broadcast(g, now, msg);
                        if let Some(advert) = advert {
                            self.broadcast(g, now, advert);
                        }
                        // The next beat is due one period after this one was due, not
                        // after it fired: a runtime that wakes a little late (timer
                        // granularity, a busy batch) must not stretch every period and
                        // eat the failure detector's margin. After a long stall (a
                        // paused process) it resumes at the next beat of its schedule,
                        // no burst: every group this node leads keeps the same schedule
                        // (see `heartbeat_grid`).
                        let hb = self.timing.heartbeat;
                        let next = deadline + hb;
                        let next = if next > now {
                            next
                        } else {
                            heartbeat_grid(now, hb)
                        };
                        self.arm(g, Slot::Heartbeat, next);
                        if self.quorum_lost(g, now) {
                            let kind = self.groups[g].kind;
                            self.set_ineligible(now, Some(kind), Ineligible::NoQuorum, true);
                        }
                    }
                }
                Slot::Detector => {
                    let old = self.groups[g].leader;
                    self.groups[g]
                        .algo
                        .on_leader_lost(LeaderLoss::Silent, &mut self.out);
                    self.apply(g, now);
                    self.abandon(g, old, now);
                }
            }
        }
        self.settle_transfers(now);
    }

    /// Is `id` on the roster? Where the ids are consecutive (1..=N, the usual roster)
    /// the sorted roster holds `id` at `id − first`: one probe instead of a binary
    /// search, whose log₂ N probes miss the cache when thousands of simulated nodes
    /// take turns.
    fn is_member(&self, id: NodeId) -> bool {
        let Some(&first) = self.members.first() else {
            return false;
        };
        let guess = id.checked_sub(first).map(|i| i as usize);
        if guess.and_then(|i| self.members.get(i)) == Some(&id) {
            return true;
        }
        self.members.binary_search(&id).is_ok()
    }

    /// Process one datagram from the network (already decoded and authenticated).
    pub fn handle_datagram(&mut self, now: Time, d: Datagram) {
        self.receive(now, d);
        if self.groups.iter().any(|g| g.transfer.is_some()) {
            self.settle_transfers(now);
        }
    }

    fn receive(&mut self, now: Time, d: Datagram) {
        if d.from == self.id || !self.is_member(d.from) {
            self.count_invalid("unknown_sender");
            return;
        }
        for grp in &mut self.groups {
            if grp.followed == Some(d.from) {
                grp.heard = now;
            }
        }
        let (verdict, ack, revived) = self.link.receive(now, &d);
        if let Some(ack) = ack {
            self.transmits.push((d.from, ack));
        }
        if revived {
            for g in 0..self.groups.len() {
                self.groups[g].algo.on_peer_alive(d.from, &mut self.out);
                self.apply(g, now);
            }
        }
        if verdict != Inbound::Deliver {
            return;
        }
        let (Some(kind), Some(msg)) = (d.group, d.body) else {
            self.count_invalid("empty");
            return;
        };
        let Some(g) = self.group_index(kind) else {
            self.count_invalid("unknown_algorithm");
            return;
        };
        let from = d.from;
        let grp = &mut self.groups[g];
        let epoch = msg_term(&msg);
        // A peer more than MAX_TERM_AHEAD below this node's term drops everything this
        // node says as `future_epoch`: this node takes no part (a term restored from a
        // damaged state file, or pushed there). Noted for the `term` health check.
        // (Messages without a term, 0, tell nothing.)
        if epoch > 0 {
            grp.out_of_reach =
                (grp.term > epoch.saturating_add(MAX_TERM_AHEAD)).then_some((from, epoch));
        }
        let limit = grp.seen.max(grp.term).saturating_add(MAX_TERM_AHEAD);
        if epoch > limit {
            // No one datagram moves a group further, but the group may have moved
            // there without this node (a member took a far term from one forged
            // datagram, its leader then a term above it): a second datagram within
            // twice the bound, after one refused, is taken (docs/security.md).
            let near = epoch <= limit.saturating_add(MAX_TERM_AHEAD);
            if !(near && grp.far_refused) {
                grp.far_refused |= near;
                self.count_invalid("future_epoch");
                return;
            }
        }
        grp.far_refused &= epoch <= limit;
        grp.seen = grp.seen.max(epoch);
        grp.stats.received[msg.kind() as usize] += 1;
        let external_fd = grp.algo.uses_failure_detector();
        // A follower's answer to this leadership's heartbeat (Raft's names no leader):
        // a lease contact.
        if let Message::HeartbeatAck { term, leader } = msg {
            if grp.leader == Some(self.id) && (leader == self.id || leader == 0) && term == grp.term
            {
                grp.contacts.insert(from, now);
            }
        }
        let answers_heartbeats =
            external_fd && self.options.lease.require_quorum.contains(&grp.kind);
        match msg {
            Message::Heartbeat { term, .. } if external_fd => {
                if grp.leader == Some(from) && answers_heartbeats {
                    // require_quorum: answer the leader's heartbeat with the token it
                    // holds (equal to its own: the leader only records the contact).
                    let ack = Message::HeartbeatAck {
                        term: term.max(grp.term),
                        leader: from,
                    };
                    self.send(g, now, from, ack);
                }
                let grp = &mut self.groups[g];
                if grp.leader == Some(from) {
                    // Stepped down for want of a quorum, and following a leader that
                    // has kept its own (it would have stepped down too otherwise) for
                    // a whole failure timeout: this node may stand again.
                    if grp.ineligible.contains(&Ineligible::NoQuorum)
                        && now >= grp.since + self.timing.failure_timeout
                    {
                        let kind = grp.kind;
                        self.set_ineligible(now, Some(kind), Ineligible::NoQuorum, false);
                    }
                    let deadline = now + self.timing.failure_timeout;
                    self.arm(g, Slot::Detector, deadline);
                    if term > self.groups[g].term {
                        self.groups[g]
                            .algo
                            .on_leader_term(from, term, &mut self.out);
                        self.apply(g, now);
                    }
                } else {
                    grp.algo.on_foreign_leader(from, term, &mut self.out);
                    self.apply(g, now);
                }
                // A claim below the token this node holds (a leader that came back
                // without its state, the losing side of a partition, or a leadership
                // of the same term under a lower id): answer with the token held, term
                // and leader, so that the claimant takes a new term above it, once per
                // claim and held token (again after `failure_timeout`: the answer may be
                // lost; see `stale_answered`). (An old heartbeat of the leader itself,
                // reordered, draws an answer with the leader's own token, which it
                // ignores.) Unless the algorithm answers that claim itself (see
                // `Algorithm::answers_stale_claim`).
                let grp = &mut self.groups[g];
                let (held, claim) = (Token::new(grp.term, grp.holder), Token::new(term, from));
                if !held.admits(claim) && !grp.algo.answers_stale_claim(from) {
                    let again = match grp.stale_answered.get(&from) {
                        Some(&(c, h, at)) => {
                            (c, h) != (claim, held) || now >= at + self.timing.failure_timeout
                        }
                        None => true,
                    };
                    if again {
                        grp.stale_answered.insert(from, (claim, held, now));
                        // The held token's leader is named only while this node
                        // follows it or leads: a leadership that ended (stepped down
                        // for want of a quorum, given up by the detector) is no claim,
                        // and a leader deferring to it would wait a failure timeout
                        // for nobody (issue 28: a healed partition's majority leader
                        // followed the minority's stepped-down one). The term alone
                        // (leader 0) makes the claimant take a term above it.
                        let live = grp.leader == Some(held.leader);
                        let ack = Message::HeartbeatAck {
                            term: held.term,
                            leader: if live { held.leader } else { 0 },
                        };
                        self.send(g, now, from, ack);
                    }
                }
            }
            // Compared as tokens, not terms: a leadership can be below another of its
            // own term (announced at the same time, unaware of it), and only the
            // answer's leader id tells. (A peer that sends no leader, 0, is heard at a
            // higher term only, as before.) Where the highest id is meant to lead, an
            // answer naming a higher id is that id's claim, heard second hand: this
            // leader defers to it as to its heartbeat (and its failure detector calls
            // an election if that leader is gone). Only a leadership that outranks
            // the answer's takes a new term; a new term for every self-made leader of a
            // cold start would start a race in which each bumps the others' terms.
            Message::HeartbeatAck { term, leader } if external_fd => {
                if grp.leader == Some(self.id)
                    && Token::new(term, leader) > Token::new(grp.term, grp.holder)
                {
                    if grp.kind.elects_highest_id() && self.policy.outranks(leader, self.id) {
                        grp.algo.on_foreign_leader(leader, term, &mut self.out);
                    } else {
                        grp.algo.on_term_behind(term, &mut self.out);
                    }
                    self.apply(g, now);
                }
            }
            Message::Resign { .. } if external_fd => {
                if grp.leader == Some(from) {
                    grp.algo.on_leader_lost(LeaderLoss::Resigned, &mut self.out);
                    self.apply(g, now);
                    self.abandon(g, Some(from), now);
                }
            }
            // The leader's lowered (or restored) priority: rank it by that while it
            // leads; a node that now outranks it takes over where the algorithm
            // preempts (the claim path, with its hold-back rules).
            Message::Priority { term, priority } if external_fd => {
                if grp.leader == Some(from) && term == grp.term {
                    let p = u8::try_from(priority).unwrap_or(u8::MAX).max(1);
                    if grp.leader_priority != Some((from, p)) {
                        grp.leader_priority = Some((from, p));
                        grp.algo
                            .config_mut()
                            .options
                            .policy
                            .priority
                            .insert(from, p);
                        grp.algo.policy_changed();
                        if grp.kind.elects_highest_id() && grp.ineligible.is_empty() {
                            grp.algo.on_foreign_leader(from, term, &mut self.out);
                        }
                        self.apply(g, now);
                    }
                }
            }
            // Only from the leader of the token this node holds, naming this node. A
            // node that may not lead (drained, failing a check) hands it back: the
            // leader then goes on leading instead of falling silent until the
            // followers' failure detectors elect a node nobody asked for.
            Message::Handoff { epoch, to } => {
                if grp.leader == Some(from) && to == self.id && epoch == grp.term {
                    let took = grp.algo.take_over(&mut self.out);
                    self.apply(g, now);
                    if !took {
                        self.send(g, now, from, Message::Handoff { epoch, to: from });
                    }
                } else if to == self.id && self.is_refusal(g, from, epoch) {
                    self.transfer_refused(g, from, now);
                }
            }
            // Raft's hand-over, refused the same way by a target that may not lead (it
            // would not campaign), and the refusal read by the leader.
            Message::TimeoutNow { term } if !external_fd => {
                let grp = &self.groups[g];
                let may_not_lead = !grp.ineligible.is_empty();
                if self.is_refusal(g, from, term) {
                    self.transfer_refused(g, from, now);
                } else if grp.leader == Some(from) && term == grp.term && may_not_lead {
                    self.send(g, now, from, Message::TimeoutNow { term });
                } else {
                    self.groups[g].algo.on_message(from, msg, &mut self.out);
                    self.apply(g, now);
                }
            }
            msg => {
                grp.algo.on_message(from, msg, &mut self.out);
                self.apply(g, now);
            }
        }
    }

    /// The leader `old` of group `g` was declared lost (silent for `failure_timeout`,
    /// or resigned): what the link still tries to deliver to it in this group is
    /// handed back as undeliverable at once, so that an algorithm routing around dead
    /// members (the ring family) does not wait for the link's whole retry budget. A
    /// ring member that forwarded an ELECTION to the old leader just before its own
    /// detector fired would otherwise add that budget (75 ms by default) to the
    /// failover.
    fn abandon(&mut self, g: usize, old: Option<NodeId>, now: Time) {
        let Some(old) = old.filter(|&l| l != self.id) else {
            return;
        };
        let kind = self.groups[g].kind;
        for u in self.link.abandon(old, kind) {
            self.groups[g]
                .algo
                .on_peer_unreachable(u.peer, u.msg, &mut self.out);
            self.apply(g, now);
        }
    }

    /// Operator request: call an election in `group` now.
    pub fn call_election(&mut self, now: Time, group: AlgorithmKind) -> bool {
        let Some(g) = self.group_index(group) else {
            return false;
        };
        self.groups[g].algo.call_election(&mut self.out);
        self.apply(g, now);
        true
    }

    /// Make every group's failure detector report the leader lost now (the simulator's
    /// "this node detects the crash" step).
    pub(crate) fn force_leader_lost(&mut self, now: Time) {
        for g in 0..self.groups.len() {
            self.groups[g]
                .algo
                .on_leader_lost(LeaderLoss::Told, &mut self.out);
            self.apply(g, now);
        }
    }

    /// Graceful leave: every group this node leads tells the others it resigns.
    /// Returns how many groups resigned.
    pub fn resign(&mut self, now: Time) -> usize {
        let mut n = 0;
        for g in 0..self.groups.len() {
            if self.groups[g].leader == Some(self.id) {
                let msg = Message::Resign {
                    epoch: self.groups[g].term,
                };
                self.broadcast(g, now, msg);
                n += 1;
            }
        }
        n
    }

    /// Set (`on`) or clear one reason for this node to be ineligible in `algorithm`'s
    /// group (every group: `None`); returns how many groups' reasons changed.
    ///
    /// A node is ineligible while any reason holds, and then ranks like a never-leader
    /// (priority 0) in its own eyes: it never announces itself, never campaigns, and
    /// answers no ELECTION as a candidate (a Bully caller hears nothing from it and
    /// wins after T, as if it were down). If it leads, it steps down at once: the
    /// groups on the heartbeat failure detector broadcast RESIGN (the successor calls
    /// an election at once, the others wait for it), Raft hands over as on
    /// `POST /admin/election` at a leader. Eligible again, it treats the current
    /// leader like a claim it just heard: with `preempt = true` a node that outranks
    /// it takes over (after `preempt_delay`), without preemption it keeps following.
    pub fn set_ineligible(
        &mut self,
        now: Time,
        algorithm: Option<AlgorithmKind>,
        why: Ineligible,
        on: bool,
    ) -> usize {
        let mut changed = 0;
        for g in 0..self.groups.len() {
            if algorithm.is_some_and(|k| k != self.groups[g].kind) {
                continue;
            }
            let grp = &mut self.groups[g];
            let was_eligible = grp.ineligible.is_empty();
            let did = if on {
                grp.ineligible.insert(why)
            } else {
                grp.ineligible.remove(&why)
            };
            if !did {
                continue;
            }
            changed += 1;
            let eligible = grp.ineligible.is_empty();
            if eligible != was_eligible {
                grp.algo.config_mut().set_eligible(eligible);
            }
            // A transfer keeps leading until the target announces itself; every other
            // reason steps down at once.
            if on && why != Ineligible::Transfer && grp.leader == Some(self.id) {
                if grp.algo.uses_failure_detector() {
                    let msg = Message::Resign { epoch: grp.term };
                    self.broadcast(g, now, msg);
                }
                self.groups[g].algo.step_down(&mut self.out);
                self.apply(g, now);
            } else if eligible && !was_eligible {
                let (leader, term) = (grp.leader, grp.term);
                if let Some(l) = leader.filter(|&l| l != self.id) {
                    grp.algo.on_foreign_leader(l, term, &mut self.out);
                    self.apply(g, now);
                }
            }
        }
        changed
    }

    /// This node's priority in group `g` now: the configured one lowered by the
    /// penalty of failing weighted health checks, never below 1 (a never-leader stays
    /// at 0).
    fn effective_priority(&self, g: usize) -> u8 {
        let p = self.policy.priority(self.id);
        if p == 0 {
            0
        } else {
            p.saturating_sub(self.groups[g].penalty).max(1)
        }
    }

    /// Lower this node's priority by `penalty` in `algorithm`'s group (every group:
    /// `None`), or restore it (`0`): weighted health checks (keepalived's
    /// `track_script … weight`). This node ranks itself by the lowered priority (it
    /// answers ELECTION only from nodes it still outranks, and asks the ones that now
    /// outrank it); while it leads, it advertises the lowered priority with its
    /// heartbeats ([`Message::Priority`]), so that a follower that now outranks it
    /// takes over (where the algorithm preempts). Restored, a node that outranks its
    /// leader again takes over as a returning node would. Raft has no preemption: a
    /// penalty only moves its ranked election timeout. Returns the groups changed.
    pub fn set_penalty(
        &mut self,
        now: Time,
        algorithm: Option<AlgorithmKind>,
        penalty: u8,
    ) -> usize {
        let mut changed = 0;
        for g in 0..self.groups.len() {
            if algorithm.is_some_and(|k| k != self.groups[g].kind)
                || self.groups[g].penalty == penalty
            {
                continue;
            }
            changed += 1;
            let was = self.groups[g].penalty;
            self.groups[g].penalty = penalty;
            let p = self.effective_priority(g);
            let me = self.id;
            let grp = &mut self.groups[g];
            grp.algo.config_mut().options.policy.priority.insert(me, p);
            grp.algo.policy_changed();
            let (leader, term) = (grp.leader, grp.term);
            if leader == Some(me) && grp.algo.uses_failure_detector() {
                // Tell the followers now (and with every heartbeat while lowered).
                let msg = Message::Priority {
                    term,
                    priority: u32::from(p),
                };
                self.broadcast(g, now, msg);
            } else if let Some(l) = leader.filter(|&l| l != me && penalty < was) {
                // Back up: outranking the leader again, take over as a returning node.
                if self.groups[g].ineligible.is_empty() {
                    self.groups[g]
                        .algo
                        .on_foreign_leader(l, term, &mut self.out);
                    self.apply(g, now);
                }
            }
        }
        changed
    }

    /// Hand the leadership of `kind`'s group to `to` (`POST /admin/transfer`). Raft
    /// sends TimeoutNow (thesis §3.10): the target campaigns at once and the voters
    /// grant it although they heard this leader recently. The other algorithms send
    /// HANDOFF: the target announces itself (COORDINATOR, the ring's result lap) with
    /// a token above this leadership's, and this node stops heartbeating meanwhile
    /// (its heartbeats would be a higher-ranked claim to the target). This node is
    /// ineligible ([`Ineligible::Transfer`]) until the target leads or the returned
    /// bound passes, so that it is not re-elected meanwhile; if the target never
    /// announces itself the followers' failure detectors elect another node.
    ///
    /// Refused, with the reason: a group this node does not run or does not lead, a
    /// target that is this node, not a member or a never-leader, a transfer already
    /// under way, and, where the highest-ranked node leads with `preempt = true`, a
    /// target outranked by another member (this node included): that member would
    /// take the leadership back at once.
    pub fn transfer(
        &mut self,
        now: Time,
        kind: AlgorithmKind,
        to: NodeId,
    ) -> Result<Duration, String> {
        let g = self
            .group_index(kind)
            .ok_or_else(|| format!("this node does not run {kind}"))?;
        if to == self.id {
            return Err(format!("node {to} is this node"));
        }
        if !self.is_member(to) {
            return Err(format!("node {to} is not on the roster"));
        }
        let grp = &self.groups[g];
        match grp.leader {
            Some(l) if l == self.id => {}
            Some(l) => {
                return Err(format!(
                    "this node does not lead {kind}: node {l} does (ask it)"
                ))
            }
            None => return Err(format!("this node does not lead {kind} (no leader known)")),
        }
        if grp.transfer.is_some() {
            return Err(format!("a transfer of {kind} is already under way"));
        }
        if self.policy.priority(to) == 0 {
            return Err(format!("node {to} may never lead (priority 0)"));
        }
        if kind.elects_highest_id() && self.policy.preempt_for(kind).preempt {
            let above = self
                .ring
                .iter()
                .copied()
                .filter(|&m| m != to && self.policy.outranks(m, to))
                .max_by_key(|&m| self.policy.rank(m));
            if let Some(m) = above {
                return Err(format!(
                    "node {m} outranks node {to} and [policy] preempt = true for {kind}: \
                     {m} would take the leadership back at once; set preempt = false for \
                     {kind} (or drain {m}) first"
                ));
            }
        }
        let term = grp.term;
        let msg = if grp.algo.uses_failure_detector() {
            Message::Handoff { epoch: term, to }
        } else {
            Message::TimeoutNow { term }
        };
        let bound = self
            .timing
            .failure_timeout
            .max(self.timing.election_timeout_max);
        self.send(g, now, to, msg);
        self.groups[g].transfer = Some((to, now + bound));
        self.groups[g].transfer_refused = None;
        self.set_ineligible(now, Some(kind), Ineligible::Transfer, true);
        Ok(bound)
    }

    /// Is a hand-over message from `from` at `term` the refusal of the transfer group
    /// `g` has under way to it (the target handing it back)?
    fn is_refusal(&self, g: usize, from: NodeId, term: u64) -> bool {
        let grp = &self.groups[g];
        grp.leader == Some(self.id)
            && term == grp.term
            && grp.transfer.is_some_and(|(to, _)| to == from)
    }

    /// The target `by` refused group `g`'s transfer: it is over, this node leads on
    /// (eligible again, heartbeating again) and the refusal waits to be taken.
    fn transfer_refused(&mut self, g: usize, by: NodeId, now: Time) {
        self.groups[g].transfer = None;
        self.groups[g].transfer_refused = Some(by);
        let kind = self.groups[g].kind;
        self.set_ineligible(now, Some(kind), Ineligible::Transfer, false);
    }

    /// The transfers refused by their target since the last call, as (group, target):
    /// the target may not lead (drained, failing a health check), and this node leads
    /// on.
    pub fn take_transfer_refusals(&mut self) -> Vec<(AlgorithmKind, NodeId)> {
        self.groups
            .iter_mut()
            .filter_map(|g| g.transfer_refused.take().map(|by| (g.kind, by)))
            .collect()
    }

    /// End the transfers whose target leads now, or whose time is up.
    fn settle_transfers(&mut self, now: Time) {
        for g in 0..self.groups.len() {
            let Some((to, until)) = self.groups[g].transfer else {
                continue;
            };
            if self.groups[g].leader == Some(to) || now >= until {
                self.groups[g].transfer = None;
                let kind = self.groups[g].kind;
                self.set_ineligible(now, Some(kind), Ineligible::Transfer, false);
            }
        }
    }

    /// The groups this node is drained in ([`Ineligible::Drained`]), in configuration
    /// order (what the state file keeps across restarts).
    pub fn drained(&self) -> impl Iterator<Item = AlgorithmKind> + '_ {
        self.groups
            .iter()
            .filter(|g| g.ineligible.contains(&Ineligible::Drained))
            .map(|g| g.kind)
    }

    /// The groups whose term is out of its peers' reach: (group, this node's term, the
    /// last peer heard, that peer's term), where the peer's term is more than
    /// [`MAX_TERM_AHEAD`] below. The peers drop this node's datagrams as
    /// `future_epoch`, so it takes part in no election of the group: a voter silently
    /// lost unless reported (the runtime's `term` health check).
    pub fn terms_out_of_reach(&self) -> Vec<(AlgorithmKind, u64, NodeId, u64)> {
        self.groups
            .iter()
            .filter_map(|g| g.out_of_reach.map(|(p, t)| (g.kind, g.term, p, t)))
            .collect()
    }

    /// What weighted health checks take off this node's priority in `kind`'s group.
    pub fn penalty(&self, kind: AlgorithmKind) -> u8 {
        self.group_index(kind).map_or(0, |g| self.groups[g].penalty)
    }

    /// Why this node may not lead `kind`'s group now (empty: it may; `None`: no such
    /// group).
    pub fn ineligible(&self, kind: AlgorithmKind) -> Option<Vec<Ineligible>> {
        let g = self.group_index(kind)?;
        Some(self.groups[g].ineligible.iter().copied().collect())
    }

    /// Send broadcasts (heartbeats, COORDINATOR, RESIGN, RequestVote, …: every
    /// `Effect::Broadcast`) as one datagram addressed to every other member, drained by
    /// [`Node::drain_multicasts`], instead of one per member. Logical message counts stay
    /// per recipient (a COORDINATOR to 4 peers counts 4 messages) and the link counts 1
    /// datagram. Reliable ones carry a broadcast sequence: acked by each recipient,
    /// retransmitted by unicast to those that did not ack (see [`link`]).
    pub(crate) fn set_multicast(&mut self, on: bool) {
        self.multicast = on;
    }

    /// Datagrams for every other member (one multicast send each).
    pub(crate) fn drain_multicasts(&mut self) -> std::vec::Drain<'_, Datagram> {
        self.multicasts.drain(..)
    }

    /// Peers the reliable link declared unreachable since the last call (each once),
    /// e.g. for the driver to look their address up again.
    pub(crate) fn drain_unreachable(&mut self) -> std::vec::Drain<'_, NodeId> {
        self.unreachable.drain(..)
    }

    /// Datagrams to put on the wire: (destination id, datagram).
    pub fn drain_transmits(&mut self) -> std::vec::Drain<'_, (NodeId, Datagram)> {
        self.transmits.drain(..)
    }

    /// The datagrams to put on the wire, by value: the node keeps no buffer, so a
    /// burst (a broadcast to a large roster) does not pin its memory for the node's
    /// life (the simulator holds thousands of nodes).
    pub(crate) fn take_transmits(&mut self) -> Vec<(NodeId, Datagram)> {
        std::mem::take(&mut self.transmits)
    }

    /// The events produced since the last call, for the driver's observers (metrics,
    /// hooks, `/watch`).
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, Event> {
        self.events.drain(..)
    }

    /// Drop buffered events without looking at them (drivers that do not observe).
    pub fn discard_events(&mut self) {
        self.events.clear();
    }

    /// A snapshot of every group's state, in configuration order.
    pub fn status(&self) -> Vec<GroupStatus> {
        self.status_keys()
            .map(|k| GroupStatus {
                algorithm: k.algorithm,
                state: k.state,
                leader: k.leader,
                term: k.term,
                since: k.since,
                electing: k.electing,
                last_election: k.last_election,
                // The reasons in their order (a set's order is the enum's).
                ineligible: Ineligible::ALL
                    .into_iter()
                    .filter(|i| k.ineligible & (1 << (*i as u8)) != 0)
                    .collect(),
            })
            .collect()
    }

    /// What [`Node::status`] shows of each group, without building it: equal keys,
    /// equal status (the runtime republishes `/status` only when one changed).
    pub fn status_keys(&self) -> impl Iterator<Item = StatusKey> + '_ {
        self.groups.iter().map(|g| StatusKey {
            algorithm: g.kind,
            state: g.algo.state(),
            leader: g.leader,
            term: g.term,
            since: g.since,
            electing: g.algo.is_electing(),
            last_election: g.stats.last_election,
            ineligible: g
                .ineligible
                .iter()
                .fold(0u8, |bits, i| bits | 1 << (*i as u8)),
        })
    }

    /// The quorum lease of this node's leadership of `kind`'s group at `now`:
    /// `None` when the group keeps no lease (not Raft with check-quorum, and no
    /// `[lease] require_quorum`); otherwise how long no other leader can be elected,
    /// `Some(ZERO)` when this node does not lead or no majority answered recently.
    ///
    /// The rule: the leader and the ⌈(N+1)/2⌉−1 peers that answered its heartbeats most
    /// recently form a majority; take the oldest of those answers, `t`. Each of those
    /// peers heard this leader at `t` or later, and a follower that heard its leader
    /// neither votes for another candidate (Raft: pre-vote and leader stickiness, for
    /// `election_timeout` min) nor calls an election (failure detector, for
    /// `failure_timeout`) before that base timeout has passed; any new leader needs one
    /// of them. So the lease ends at `t + base − clock_drift`. Only answers received
    /// since this leadership began count.
    pub fn lease(&self, kind: AlgorithmKind, now: Time) -> Option<Duration> {
        let g = self.group_index(kind)?;
        let grp = &self.groups[g];
        let (base, kept) = if grp.algo.uses_failure_detector() {
            (
                self.timing.failure_timeout,
                self.options.lease.require_quorum.contains(&kind),
            )
        } else {
            (self.timing.election_timeout_min, self.options.check_quorum)
        };
        if !kept {
            return None;
        }
        if grp.leader != Some(self.id) {
            return Some(Duration::ZERO);
        }
        let drift = self
            .options
            .lease
            .clock_drift
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(base / 10, |(_, d)| *d);
        let need = self.members.len() / 2; // peers besides this node for a majority
        let t = if need == 0 {
            now
        } else {
            let mut recent: Vec<Time> = grp
                .contacts
                .values()
                .copied()
                .filter(|&t| t >= grp.since)
                .collect();
            if recent.len() < need {
                return Some(Duration::ZERO);
            }
            recent.sort_unstable_by(|a, b| b.cmp(a));
            recent[need - 1]
        };
        Some((t + base).saturating_sub(drift).saturating_sub(now))
    }

    /// `[lease] require_quorum` on a group of the failure detector: this node has led
    /// it for a failure timeout and no majority of the roster (itself included) has
    /// answered its heartbeats within the last failure timeout. It then steps down
    /// ([`Ineligible::NoQuorum`]) and stands again only once it has followed another
    /// leader for a failure timeout: a leader cut off in a minority neither keeps
    /// naming itself nor re-elects itself in a loop. (Raft's check-quorum does the
    /// same within the algorithm.)
    fn quorum_lost(&self, g: usize, now: Time) -> bool {
        let grp = &self.groups[g];
        let f = self.timing.failure_timeout;
        if !grp.algo.uses_failure_detector()
            || !self.options.lease.require_quorum.contains(&grp.kind)
            || grp.leader != Some(self.id)
            || now < grp.since + f
        {
            return false;
        }
        let need = self.members.len() / 2;
        if need == 0 {
            return false;
        }
        let mut recent: Vec<Time> = grp
            .contacts
            .values()
            .copied()
            .filter(|&t| t >= grp.since)
            .collect();
        recent.sort_unstable_by(|a, b| b.cmp(a));
        recent.get(need - 1).is_none_or(|&t| now >= t + f)
    }

    /// The snapshot of group `kind`, if the node runs it.
    pub fn group_status(&self, kind: AlgorithmKind) -> Option<GroupStatus> {
        self.status().into_iter().find(|s| s.algorithm == kind)
    }

    /// The leader group `kind` believes in and its term, without building the status
    /// (`None` for a group not run).
    pub fn leadership(&self, kind: AlgorithmKind) -> Option<(Option<NodeId>, u64)> {
        self.group_index(kind)
            .map(|g| (self.groups[g].leader, self.groups[g].term))
    }

    /// The groups whose leader's next heartbeat would only move the failure detector's
    /// deadline, as (group, leader, term): a group of the failure detector that follows
    /// another node's leadership at the token it holds, not electing, not stepped down
    /// for want of a quorum, and not answering heartbeats (`[lease] require_quorum`).
    /// Such a heartbeat may be read late, as of the time it arrived
    /// ([`crate::daemon::heartbeats`]); any other heartbeat is read at once.
    pub fn quiet_heartbeats(&self) -> impl Iterator<Item = (AlgorithmKind, NodeId, u64)> + '_ {
        self.groups.iter().filter_map(|grp| {
            let leader = grp.leader.filter(|&l| l != self.id)?;
            let quiet = grp.algo.uses_failure_detector()
                && !self.options.lease.require_quorum.contains(&grp.kind)
                && !grp.algo.is_electing()
                && grp.transfer.is_none()
                && !grp.ineligible.contains(&Ineligible::NoQuorum)
                && Token::new(grp.term, grp.holder).admits(Token::new(grp.term, leader));
            quiet.then_some((grp.kind, leader, grp.term))
        })
    }

    /// The leader group `kind` believes in (`None` also for a group not run).
    pub fn leader(&self, kind: AlgorithmKind) -> Option<NodeId> {
        self.group_index(kind).and_then(|g| self.groups[g].leader)
    }

    /// Is an election in progress in group `kind` (false for a group not run)?
    pub(crate) fn is_electing(&self, kind: AlgorithmKind) -> bool {
        self.group_index(kind)
            .map(|g| self.groups[g].algo.is_electing())
            .unwrap_or(false)
    }

    /// Time group `kind` has been without a leader since the node started, up to `now`
    /// (a period still under way included).
    pub fn leaderless(&self, kind: AlgorithmKind, now: Time) -> Option<Duration> {
        self.group_index(kind).map(|g| {
            let grp = &self.groups[g];
            let open = grp
                .leaderless_since
                .map_or(Duration::ZERO, |s| now.saturating_sub(s));
            grp.stats.leaderless + open
        })
    }

    /// Counters of group `kind`, if the node runs it.
    pub(crate) fn group_stats(&self, kind: AlgorithmKind) -> Option<&GroupStats> {
        self.group_index(kind).map(|g| &self.groups[g].stats)
    }

    /// The groups this node runs, in configuration order.
    pub fn algorithms(&self) -> impl Iterator<Item = AlgorithmKind> + '_ {
        self.groups.iter().map(|g| g.kind)
    }

    /// Counters of the reliable link (shared by every group).
    pub(crate) fn link_stats(&self) -> &LinkStats {
        &self.link.stats
    }

    /// Messages the link still waits an ack for.
    pub(crate) fn in_flight(&self) -> usize {
        self.link.in_flight()
    }

    /// Datagrams dropped at this layer, by reason.
    pub fn invalid(&self) -> &BTreeMap<&'static str, u64> {
        &self.invalid
    }

    /// Count a dropped datagram: the node's own drops ([`NODE_DROP_REASONS`]), and a
    /// driver without metrics of its own may count the gate's here too.
    pub fn count_invalid(&mut self, reason: &'static str) {
        *self.invalid.entry(reason).or_insert(0) += 1;
    }

    /// The timers due at `now` as (group, timer name), in no particular order: what
    /// [`Node::handle_timeout`] is about to fire, for drivers that record a trace.
    pub(crate) fn due_timers(&self, now: Time) -> Vec<(AlgorithmKind, &'static str)> {
        self.timers
            .iter()
            .filter(|t| t.2 <= now)
            .map(|&(g, slot, _)| {
                let name = match slot {
                    Slot::Algo(Timer::Answer) => "answer",
                    Slot::Algo(Timer::Coordinator) => "coordinator",
                    Slot::Algo(Timer::Retry) => "retry",
                    Slot::Algo(Timer::Election) => "election",
                    Slot::Algo(Timer::Heartbeat) => "heartbeat",
                    Slot::Algo(Timer::Quorum) => "quorum",
                    Slot::Algo(Timer::Suspicion) => "suspicion",
                    Slot::Algo(Timer::Preempt) => "preempt",
                    Slot::Heartbeat => "heartbeat",
                    Slot::Detector => "failure_detector",
                };
                (self.groups[g as usize].kind, name)
            })
            .collect()
    }

    fn group_index(&self, kind: AlgorithmKind) -> Option<usize> {
        self.groups.iter().position(|g| g.kind == kind)
    }

    fn arm(&mut self, g: usize, slot: Slot, at: Time) {
        let g8 = g as u8;
        if let Some(t) = self.timers.iter_mut().find(|t| t.0 == g8 && t.1 == slot) {
            t.2 = at;
        } else {
            self.timers.push((g8, slot, at));
        }
    }

    fn disarm(&mut self, g: usize, slot: Slot) {
        let g8 = g as u8;
        self.timers.retain(|t| !(t.0 == g8 && t.1 == slot));
    }

    fn send(&mut self, g: usize, now: Time, to: NodeId, msg: Message) {
        if to == self.id {
            return; // never counted: nothing is sent
        }
        let grp = &mut self.groups[g];
        grp.stats.sent[msg.kind() as usize] += 1;
        let d = self.link.send(now, to, grp.kind, msg);
        self.transmits.push((to, d));
    }

    fn broadcast(&mut self, g: usize, now: Time, msg: Message) {
        if self.multicast {
            let others: Vec<NodeId> = self
                .ring
                .iter()
                .copied()
                .filter(|&p| p != self.id)
                .collect();
            if others.is_empty() {
                return;
            }
            let grp = &mut self.groups[g];
            grp.stats.sent[msg.kind() as usize] += others.len() as u64;
            let d = self.link.send_to_all(now, &others, grp.kind, msg);
            self.multicasts.push(d);
            return;
        }
        for i in 0..self.ring.len() {
            let to = self.ring[i];
            if to != self.id {
                self.send(g, now, to, msg.clone());
            }
        }
    }

    /// Apply the effects the algorithm of group `g` just produced.
    fn apply(&mut self, g: usize, now: Time) {
        let mut out = std::mem::take(&mut self.out);
        for effect in out.drain() {
            match effect {
                Effect::Send { to, msg } => self.send(g, now, to, msg),
                Effect::Broadcast { msg } => self.broadcast(g, now, msg),
                Effect::SetTimer { timer, min, max } => {
                    let after = self.rng.duration(min, max);
                    self.arm(g, Slot::Algo(timer), now + after);
                }
                Effect::CancelTimer(timer) => self.disarm(g, Slot::Algo(timer)),
                Effect::ElectionStarted => {
                    let grp = &mut self.groups[g];
                    grp.stats.elections_started += 1;
                    if grp.election_started_at.is_none() {
                        grp.election_started_at = Some(now);
                    }
                    self.events.push(Event::ElectionStarted {
                        group: grp.kind,
                        at: now,
                    });
                }
                Effect::LeaderChanged { leader, term } => self.leader_changed(g, now, leader, term),
            }
        }
        // Keep the buffer for the next call unless a burst made it large.
        if out.capacity() <= OUT_KEEP_CAPACITY {
            self.out = out;
        }
    }

    fn leader_changed(&mut self, g: usize, now: Time, leader: Option<NodeId>, term: u64) {
        let me = self.id;
        let external_fd = self.groups[g].algo.uses_failure_detector();
        // A live leader is heard every heartbeat; one silent for longer than halfway
        // from there to the timeout that declares it lost (failure_timeout, or Raft's
        // shortest election timeout) has failed, even if this node adopts its successor
        // before declaring anything itself.
        let timeout = if external_fd {
            self.timing.failure_timeout
        } else {
            self.timing.election_timeout_min
        };
        let silent_after = (self.timing.heartbeat + timeout) / 2;
        let grp = &mut self.groups[g];
        let changed = grp.leader != leader;
        let new_term = grp.term != term;
        // An advertised priority holds while that node leads: back to the configured
        // one (in this node's ranking) once another leads.
        if let Some((l, _)) = grp.leader_priority.filter(|&(l, _)| leader != Some(l)) {
            grp.leader_priority = None;
            let policy = &mut grp.algo.config_mut().options.policy;
            match self.policy.priority.get(&l) {
                Some(&p) => policy.priority.insert(l, p),
                None => policy.priority.remove(&l),
            };
            grp.algo.policy_changed();
        }
        grp.term = term;
        grp.seen = grp.seen.max(term);
        if let Some(l) = leader {
            grp.holder = l;
        }
        if !changed {
            if new_term && leader.is_some() {
                // Same leader, a new token (it re-announced above a term it learned):
                // observers that fence on the token must hear of it.
                grp.since = now;
                let kind = grp.kind;
                self.events.push(Event::LeaderChanged {
                    group: kind,
                    leader,
                    term,
                    at: now,
                });
            }
            return;
        }
        match leader {
            None => {
                if grp.leaderless_since.is_none() {
                    grp.leaderless_since = Some(now);
                }
                if grp.leader.is_some() && grp.followed.is_some() {
                    grp.lost = Some((grp.heard, now));
                }
                // Left leaderless after the leader's silence (Raft's election timeout
                // fired): the link counts what still fails to it as failures to a lost
                // peer.
                if let Some(old) = grp
                    .followed
                    .filter(|_| now.saturating_sub(grp.heard) > silent_after)
                {
                    self.link.declare_lost(old);
                }
            }
            Some(next) => {
                if let Some(since) = grp.leaderless_since.take() {
                    grp.stats.leaderless += now.saturating_sub(since);
                }
                let failed = grp
                    .followed
                    .filter(|&old| old != next && now.saturating_sub(grp.heard) > silent_after);
                if let Some(old) = failed {
                    self.link.declare_lost(old);
                    let total = now.saturating_sub(grp.heard);
                    // Phases only if nothing was heard from `old` after the loss, so
                    // that they add up to `total`.
                    let phases =
                        grp.lost
                            .filter(|&(heard, _)| heard == grp.heard)
                            .map(|(heard, lost)| FailoverPhases {
                                detection: lost.saturating_sub(heard),
                                election: now.saturating_sub(lost),
                            });
                    grp.stats.failovers += 1;
                    grp.stats.last_failover = Some(total);
                    self.events.push(Event::Failover {
                        group: grp.kind,
                        from: old,
                        to: next,
                        total,
                        phases,
                    });
                }
                grp.lost = None;
                grp.followed = (next != me).then_some(next);
                grp.heard = now;
            }
        }
        grp.leader = leader;
        grp.since = now;
        grp.stats.leader_changes += 1;
        let kind = grp.kind;
        if leader == Some(me) {
            grp.stats.elections_won += 1;
        }
        let finished = match (leader, grp.election_started_at.take()) {
            (Some(l), Some(start)) => {
                let duration = now.saturating_sub(start);
                grp.stats.last_election = Some(duration);
                Some((duration, l == me))
            }
            (None, start) => {
                grp.election_started_at = start;
                None
            }
            _ => None,
        };
        self.events.push(Event::LeaderChanged {
            group: kind,
            leader,
            term,
            at: now,
        });
        if let Some((duration, won)) = finished {
            self.events.push(Event::ElectionFinished {
                group: kind,
                duration,
                won,
            });
        }
        if !external_fd {
            return;
        }
        match leader {
            Some(l) if l == me => {
                self.disarm(g, Slot::Detector);
                let hb = self.timing.heartbeat;
                self.arm(g, Slot::Heartbeat, heartbeat_grid(now + hb / 2, hb));
            }
            Some(_) => {
                self.disarm(g, Slot::Heartbeat);
                self.arm(g, Slot::Detector, now + self.timing.failure_timeout);
            }
            None => {
                self.disarm(g, Slot::Heartbeat);
                self.disarm(g, Slot::Detector);
            }
        }
    }
}

/// The first beat after `t` on the schedule every group of a node beats to: the
/// multiples of `hb` in driver time. A node that leads several groups then wakes once
/// per period and sends their heartbeats together, and its followers read them in one
/// wakeup, instead of one wakeup per group at phases set by when each was won.
fn heartbeat_grid(t: Time, hb: Duration) -> Time {
    let hb_ns = hb.as_nanos().max(1);
    let beats = t.as_nanos() / hb_ns + 1;
    Duration::from_nanos(u64::try_from(beats * hb_ns).unwrap_or(u64::MAX))
}

/// The term, epoch or round a message carries (0 for those without one).
fn msg_term(msg: &Message) -> u64 {
    match *msg {
        Message::Election { epoch, .. }
        | Message::Coordinator { epoch, .. }
        | Message::YouAreCoordinator { epoch, .. }
        | Message::RingElection { epoch, .. }
        | Message::RingCoordinator { epoch, .. }
        | Message::LcrElected { epoch, .. }
        | Message::Terminate { epoch, .. }
        | Message::Resign { epoch }
        | Message::Handoff { epoch, .. } => epoch,
        Message::LcrElection { round, .. }
        | Message::Probe { round, .. }
        | Message::Reply { round, .. } => round,
        Message::RequestVote { term, .. }
        | Message::Vote { term, .. }
        | Message::Heartbeat { term, .. }
        | Message::HeartbeatAck { term, .. }
        | Message::TimeoutNow { term }
        | Message::Priority { term, .. } => term,
        Message::Ok { .. } => 0,
    }
}
