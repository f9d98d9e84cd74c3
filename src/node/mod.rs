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
//! The node's parts, each an `impl Node` block of its own: the groups and the effects
//! of their algorithms (`group.rs`), the deadline table (`timers.rs`), the receive path
//! (`receive.rs`), the failure detector (`detector.rs`), leases (`lease.rs`), the
//! operator's and health checks' requests through the policy (`policy.rs`),
//! leadership transfer (`transfer.rs`) and what the node shows of itself
//! (`status.rs`); the reliable link is `link/`, the hasher `fxhash.rs`, the tests
//! `*_tests.rs`.

#[cfg(test)]
mod beat_only_tests;
mod beats;
mod detector;
#[cfg(test)]
mod drain_tests;
#[cfg(test)]
mod failover_tests;
mod fxhash;
mod group;
#[cfg(test)]
mod heartbeat_tests;
mod lease;
#[cfg(test)]
mod lease_tests;
pub mod link;
#[cfg(test)]
mod multicast_tests;
mod policy;
mod receive;
#[cfg(test)]
mod sim_start;
mod status;
mod timers;
mod transfer;
#[cfg(test)]
mod transfer_tests;
#[cfg(test)]
mod weight_tests;

use crate::contract::algorithm::{AlgorithmKind, Durable, GroupConfig, Options, Out, Timing};
use crate::contract::message::{Message, MessageType};
use crate::contract::policy::Ineligible;
use crate::contract::rng::Rng;
use crate::NodeId;
pub(crate) use beats::pack;
pub use beats::Packet;
use group::Group;
use link::{Link, LinkConfig};
pub(crate) use receive::msg_term;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
#[cfg(test)]
use timers::heartbeat_grid;
use timers::Slot;
pub use transfer::{Refusal, TransferError};

/// The `reason` labels of `electd_invalid_datagrams_total` the node itself counts, for
/// a datagram the gate passed (docs/wire.md §8): a sender that is this node or off the
/// roster, no body, a group this node does not run, an epoch too far ahead.
pub(crate) const NODE_DROP_REASONS: [&str; 4] = [
    "unknown_sender",
    "empty",
    "unknown_algorithm",
    "future_epoch",
];

/// The most heartbeat gaps kept between two drains ([`Node::drain_gaps`]): a driver
/// drains them at every flush; beyond this (a flush held back for long) further samples
/// are not taken.
pub(crate) const MAX_GAPS: usize = 4096;

/// Driver time: a duration since the driver's origin.
pub(crate) type Time = Duration;

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
    pub(crate) detection: Duration,
    /// Loss declared → the next leader adopted.
    pub(crate) election: Duration,
}

/// Per-group counters (the metrics module exports these).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GroupStats {
    /// Messages sent, by type (index: `MessageType as usize`); broadcasts count one per
    /// recipient.
    pub(crate) sent: [u64; MessageType::ALL.len()],
    /// Messages received and handed to the group, by type (same index).
    pub received: [u64; MessageType::ALL.len()],
    /// Elections this node started or joined.
    pub(crate) elections_started: u64,
    /// Times this node became the group's leader.
    pub(crate) elections_won: u64,
    /// Changes of this node's leader belief (including to none).
    pub(crate) leader_changes: u64,
    /// Duration of the last election this node took part in that ended with a leader.
    pub(crate) last_election: Option<Duration>,
    /// The link's retransmissions of this group's messages.
    pub(crate) retransmissions: u64,
    /// Of this group's messages, those the link gave up on (peer unreachable).
    pub(crate) delivery_failures: u64,
    /// Failovers this node experienced ([`Event::Failover`]) and the last one's total.
    pub(crate) failovers: u64,
    /// The `total` of the last failover.
    pub(crate) last_failover: Option<Duration>,
    /// Time without a leader since the node started, up to the last leader change;
    /// [`Node::leaderless`] adds the period still under way.
    pub(crate) leaderless: Duration,
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
    pub(crate) since: Time,
    /// An election is in progress at this node.
    pub(crate) electing: bool,
    /// Duration of the last election this node took part in that ended with a leader.
    pub(crate) last_election: Option<Duration>,
    /// Why this node may not lead the group now (empty: it may).
    pub(crate) ineligible: Vec<Ineligible>,
}

/// A group's [`GroupStatus`] as plain values (the ineligibility reasons as bits):
/// see [`Node::status_keys`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StatusKey {
    algorithm: AlgorithmKind,
    state: &'static str,
    leader: Option<NodeId>,
    term: u64,
    since: Time,
    electing: bool,
    last_election: Option<Duration>,
    ineligible: u8,
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
    /// Gaps between heartbeats in a row of the leaders followed, not yet drained
    /// ([`Node::drain_gaps`]; at most [`MAX_GAPS`]).
    gaps: Vec<(AlgorithmKind, Duration)>,
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
                detector_grace: false,
                beat: None,
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
            gaps: Vec::new(),
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
    pub(crate) fn each_durable(&self, mut f: impl FnMut(AlgorithmKind, Durable)) {
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

    /// The gaps between heartbeats heard in a row from the leader each group follows
    /// (by arrival time) since the last call: `electd_heartbeat_gap_seconds`.
    pub(crate) fn drain_gaps(&mut self) -> std::vec::Drain<'_, (AlgorithmKind, Duration)> {
        self.gaps.drain(..)
    }

    /// The driver holds back the reliable datagram `seq` to `to` (a broadcast
    /// sequence: to every member) instead of sending it: not retransmitted, its clocks
    /// stopped, until [`Node::departed`] (see [`link`]).
    pub(crate) fn held(&mut self, to: NodeId, seq: u64) {
        if seq != 0 {
            self.link.held(to, seq);
        }
    }

    /// The held datagram `seq` to `to` left at `now` (or was dropped: retransmitted
    /// then as if lost).
    pub(crate) fn departed(&mut self, now: Time, to: NodeId, seq: u64) {
        if seq != 0 {
            self.link.departed(now, to, seq);
        }
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
}
