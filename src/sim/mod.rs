//! Deterministic discrete-event simulator driving the real [`Node`] code (algorithms,
//! failure detector, reliable link) over a simulated network.
//!
//! Virtual clock, one seeded generator for the network and one per node for timer
//! ranges: a run is a pure function of its configuration, seed and scenario, so any
//! failing seed replays exactly (`electd simulate --seed S`).
//!
//! Processing cost ([`Cost`]): a simulated node may spend virtual time on each
//! datagram and each timer round it handles; while busy it handles nothing else, and
//! what arrives meanwhile waits in its inbox (a socket buffer) in arrival order, due
//! timers first when it gets to them (as the daemon's runtime does). The default cost
//! is zero: the synchronous model of the literature. [`Op::Pause`] stops a node for a
//! while (a stopped process, a long GC or VM pause: it resumes with its backlog), and
//! [`Op::Slow`] raises its cost per input for a while (a starved CPU).
//!
//! The parts: the event loop and the network between the nodes are here, the packed
//! event queue in `queue.rs`, the nodes' lives (boot, crash, pause, requests, inputs at
//! their cost) in `lifecycle.rs`, and what a run measures in `measure.rs`; the network
//! model, scenarios, chaos campaign, comparison, reports and the token watcher have
//! their own files.

pub mod campaign;
pub mod chaos;
pub mod compare;
pub mod crowd;
mod lifecycle;
mod measure;
pub mod network;
mod queue;
pub mod report;
pub mod runner;
pub mod scenario;
pub(crate) mod tokens;

use crate::contract::algorithm::{AlgorithmKind, Options, Timing};
use crate::contract::message::MessageType;
use crate::contract::rng::Rng;
use crate::node::link::LinkConfig;
use crate::node::{Datagram, Event, Node, NodeConfig, Time};
use crate::trace::{self, Record, Recorder};
use crate::NodeId;
use network::{Cuts, NetConfig};
use queue::{nanos, Bodies, Bucket, Others, Payload};
use report::ElectionReport;
use scenario::Op;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// Virtual processing time a node spends per input (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    /// Per datagram handled.
    pub datagram: Duration,
    /// Per timer round (all the timers due at one instant).
    pub timer: Duration,
}

/// Everything a simulation is built from.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The groups every node runs (one per algorithm).
    pub algorithms: Vec<AlgorithmKind>,
    /// Node ids in ring order.
    pub ids: Vec<NodeId>,
    /// Heartbeat, failure timeout and election timeouts of every node.
    pub timing: Timing,
    /// Raft switches (pre-vote, check-quorum, ranked timeouts).
    pub options: Options,
    /// Reliable-link settings (retransmission timeouts, give-up bound).
    pub link: LinkConfig,
    /// The network's faults at the start (scenario ops may change them).
    pub net: NetConfig,
    /// Seeds every random draw (network, timeouts): the same config replays the same run.
    pub seed: u64,
    /// Processing cost per datagram and per timer round (zero by default).
    pub cost: Cost,
}

impl SimConfig {
    /// N nodes with ids 1..=N ascending, one algorithm, the defaults.
    pub fn new(algorithm: AlgorithmKind, n: usize, seed: u64) -> Self {
        SimConfig {
            algorithms: vec![algorithm],
            ids: (1..=n as NodeId).collect(),
            timing: Timing::default(),
            options: Options::default(),
            link: LinkConfig::default(),
            net: NetConfig::default(),
            seed,
            cost: Cost::default(),
        }
    }
}

/// A simulation failed to set up or to run a scenario step.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// An algorithm could not be built with this roster.
    #[error(transparent)]
    Build(#[from] crate::algorithms::BuildError),
    /// A scenario op names a node that is not in the roster.
    #[error("node {0} is not in the simulated roster")]
    UnknownNode(NodeId),
    /// The roster is empty.
    #[error("the simulation needs at least one node")]
    Empty,
    /// The node asked to act is down.
    #[error("node {0} is down")]
    Down(NodeId),
    /// The simulation's parameters do not fit together.
    #[error("{0}")]
    Invalid(String),
}

/// Node id → index in [`Sim::nodes`]: a table by id where the ids are small (the
/// usual 1..=N, in any ring order; one load per datagram sent), a hash map otherwise.
enum NodeIndex {
    Dense(Vec<u32>),
    Sparse(HashMap<NodeId, usize>),
}

impl NodeIndex {
    fn new(ids: &[NodeId]) -> Self {
        let max = ids.iter().copied().max().unwrap_or(0) as usize;
        if max <= 4 * ids.len() + 64 {
            let mut t = vec![u32::MAX; max + 1];
            for (i, &id) in ids.iter().enumerate() {
                t[id as usize] = i as u32;
            }
            NodeIndex::Dense(t)
        } else {
            NodeIndex::Sparse(ids.iter().enumerate().map(|(i, &id)| (id, i)).collect())
        }
    }

    fn get(&self, id: NodeId) -> Option<usize> {
        match self {
            NodeIndex::Dense(t) => t
                .get(id as usize)
                .filter(|&&i| i != u32::MAX)
                .map(|&i| i as usize),
            NodeIndex::Sparse(m) => m.get(&id).copied(),
        }
    }
}

struct SimNode {
    id: NodeId,
    node: Option<Node>,
    alive: bool,
    incarnation: u64,
    next_wake: Option<Time>,
    seed: u64,
    /// Busy (processing, paused) until then.
    busy_until: Time,
    /// What arrived while busy, in arrival order.
    inbox: VecDeque<Datagram>,
    /// A timer fell due while busy.
    timer_due: bool,
    /// A `Ready` event is queued.
    ready_queued: bool,
    /// Every input costs at least `.1` until `.0` (a slow node).
    slow: Option<(Time, Duration)>,
}

/// Message counters summed over every node, past lives included.
type Totals = HashMap<AlgorithmKind, [u64; MessageType::ALL.len()]>;

/// A leadership claim seen during the run, for safety checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// Virtual time of the claim.
    pub at: Time,
    /// The group (algorithm) claimed.
    pub group: AlgorithmKind,
    /// The node that became leader.
    pub node: NodeId,
    /// The term (epoch, round) of its leadership.
    pub term: u64,
}

/// The simulator (see the module documentation).
pub struct Sim {
    cfg: SimConfig,
    now: Time,
    /// Pending events by time (ns); FIFO within one instant, i.e. ordered by
    /// (time, insertion). Many events share an instant on the synchronous network, so
    /// buckets beat a heap of single events.
    queue: BTreeMap<u64, Bucket>,
    /// The bodies of the datagrams in `queue`.
    bodies: Bodies,
    /// The datagrams in `queue` that are not packed.
    others: Others,
    /// Per node index, the slot of [`Sim::bodies`] it put last (a hint).
    last_body: Vec<u32>,
    queued: usize,
    nodes: Vec<SimNode>,
    /// `cfg.ids`, shared by every node built (one copy of the roster, not one per node).
    roster: Arc<[NodeId]>,
    index: NodeIndex,
    rng: Rng,
    net: NetConfig,
    cuts: Cuts,
    retired: Totals,
    retired_link: [u64; 3],
    /// Election (non-liveness) datagrams scheduled but not yet delivered or dropped.
    election_in_flight: usize,
    last_leader_change: Time,
    /// Every moment a node became leader of a group (with its term).
    pub claims: Vec<Claim>,
    /// Safety of the fencing token over the whole run.
    pub tokens: tokens::TokenWatch,
    measure: Option<(String, Time, Totals, [u64; 3])>,
    /// Finished measured elections, in order.
    pub elections: Vec<ElectionReport>,
    /// Datagrams processed (deliveries), for throughput figures.
    pub(crate) delivered: u64,
    /// The trace being recorded, if any (see [`Sim::set_trace`]).
    trace: Option<Box<Recorder>>,
}

impl Sim {
    /// Set up the run of `cfg` with no node started yet ([`Sim::start`] or the scenario
    /// ops boot them); fails on an empty or invalid roster.
    pub fn new(cfg: SimConfig) -> Result<Sim, SimError> {
        if cfg.ids.is_empty() {
            return Err(SimError::Empty);
        }
        let mut rng = Rng::new(cfg.seed);
        let mut nodes = Vec::with_capacity(cfg.ids.len());
        let index = NodeIndex::new(&cfg.ids);
        for &id in &cfg.ids {
            nodes.push(SimNode {
                id,
                node: None,
                alive: false,
                incarnation: 0,
                next_wake: None,
                seed: rng.next_u64(),
                busy_until: Duration::ZERO,
                inbox: VecDeque::new(),
                timer_due: false,
                ready_queued: false,
                slow: None,
            });
        }
        // Validate the roster once (duplicates, id 0) by building a throwaway node.
        let roster: Arc<[NodeId]> = cfg.ids.clone().into();
        let probe = Self::node_config(&cfg, &roster, cfg.ids[0], 0, 0);
        Node::new(probe)?;
        Ok(Sim {
            net: cfg.net.clone(),
            cfg,
            now: Duration::ZERO,
            queue: BTreeMap::new(),
            bodies: Bodies::default(),
            others: Others::default(),
            last_body: Vec::new(),
            queued: 0,
            nodes,
            roster,
            index,
            rng,
            cuts: Cuts::default(),
            retired: Totals::new(),
            retired_link: [0; 3],
            election_in_flight: 0,
            last_leader_change: Duration::ZERO,
            claims: Vec::new(),
            tokens: tokens::TokenWatch::default(),
            measure: None,
            elections: Vec::new(),
            delivered: 0,
            trace: None,
        })
    }

    fn node_config(
        cfg: &SimConfig,
        roster: &Arc<[NodeId]>,
        id: NodeId,
        incarnation: u64,
        seed: u64,
    ) -> NodeConfig {
        NodeConfig {
            id,
            ring: roster.clone(),
            algorithms: cfg.algorithms.clone(),
            timing: cfg.timing.clone(),
            options: cfg.options.clone(),
            link: cfg.link.clone(),
            incarnation,
            seed,
        }
    }

    /// Record every send, delivery, drop, retransmission, timer, state and leader
    /// change, start, crash and network change from now on, in virtual time. Costs
    /// nothing when never called.
    pub fn set_trace(&mut self, recorder: Recorder) {
        self.trace = Some(Box::new(recorder));
    }

    /// Stop recording and hand the trace back.
    pub fn take_trace(&mut self) -> Option<Recorder> {
        self.trace.take().map(|b| *b)
    }

    /// Append a record to the trace being recorded (none: nothing happens).
    pub(crate) fn trace_record(&mut self, r: impl FnOnce(u64) -> Record) {
        if let Some(t) = self.trace.as_mut() {
            t.push(r(trace::ns(self.now)));
        }
    }

    /// The current virtual time (since the start of the run).
    pub fn now(&self) -> Time {
        self.now
    }

    /// The configuration the simulation was built from.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Every node id in ring order, live or not.
    pub fn ids(&self) -> &[NodeId] {
        &self.cfg.ids
    }

    /// Is `id` running (started and not crashed)? False for an unknown id.
    pub fn is_alive(&self, id: NodeId) -> bool {
        self.index
            .get(id)
            .map(|i| self.nodes[i].alive)
            .unwrap_or(false)
    }

    /// The ids of the running nodes, in ring order.
    pub fn live_ids(&self) -> Vec<NodeId> {
        self.nodes
            .iter()
            .filter(|n| n.alive)
            .map(|n| n.id)
            .collect()
    }

    /// The node object of `id` (crashed nodes keep their last state).
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.index.get(id).and_then(|i| self.nodes[i].node.as_ref())
    }

    fn idx(&self, id: NodeId) -> Result<usize, SimError> {
        self.index.get(id).ok_or(SimError::UnknownNode(id))
    }

    /// Replace the network's faults from now on (datagrams in flight keep their fate).
    pub(crate) fn set_net(&mut self, net: NetConfig) {
        self.net = net;
    }

    /// The directed cuts, to partition or heal the network.
    pub fn cuts_mut(&mut self) -> &mut Cuts {
        &mut self.cuts
    }

    /// After node `i` was called: ship its datagrams, record its events, re-arm its wake.
    fn after(&mut self, i: usize) {
        let from = self.nodes[i].id;
        let Some(node) = self.nodes[i].node.as_mut() else {
            return;
        };
        let mut transmits = node.take_transmits();
        for ev in node.drain_events() {
            if let Event::LeaderChanged {
                group,
                leader,
                term,
                at,
            } = ev
            {
                self.last_leader_change = at;
                if let Some(t) = self.trace.as_mut() {
                    t.push(Record::Leader {
                        t: trace::ns(at),
                        node: from,
                        alg: Cow::Borrowed(group.as_str()),
                        leader,
                        term,
                    });
                }
                self.tokens.leader_changed(from, group, leader, term, at);
                if leader == Some(from) {
                    self.claims.push(Claim {
                        at,
                        group,
                        node: from,
                        term,
                    });
                }
            }
        }
        let wake = node.poll_timeout();
        if let Some(t) = self.trace.as_mut() {
            for s in node.status() {
                t.state(self.now, from, s.algorithm.as_str(), s.state);
            }
        }
        for (to, d) in transmits.drain(..) {
            self.transmit(from, to, d);
        }
        if let Some(w) = wake {
            let sn = &mut self.nodes[i];
            if sn.next_wake.is_none_or(|cur| w < cur) {
                sn.next_wake = Some(w);
                self.push(w.max(self.now), Payload::Wake { node: i as u32 });
            }
        }
    }

    fn transmit(&mut self, from: NodeId, to: NodeId, d: Datagram) {
        let Some(ti) = self.index.get(to) else {
            return;
        };
        let trace_id = match self.trace.as_mut() {
            Some(t) => t.transmit(self.now, from, to, &d),
            None => 0,
        };
        // Ids past u32 (a recorder limit above four billion records) are not followed.
        let trace_id = u32::try_from(trace_id).unwrap_or(0);
        let dropped = if self.cuts.blocks(from, to) {
            Some("partition")
        } else if self.rng.chance(self.net.loss) {
            Some("loss")
        } else {
            None
        };
        if let Some(reason) = dropped {
            if trace_id != 0 {
                self.trace_record(|t| Record::Drop {
                    t,
                    id: u64::from(trace_id),
                    reason: Cow::Borrowed(reason),
                });
            }
            return;
        }
        let copies = if self.rng.chance(self.net.duplicate) {
            2
        } else {
            1
        };
        let counted = d.body.as_ref().is_some_and(|b| !b.kind().is_liveness());
        for _ in 0..copies {
            let mut delay = self.rng.duration(self.net.delay_min, self.net.delay_max);
            if self.rng.chance(self.net.reorder) {
                delay += self.rng.duration(Duration::ZERO, self.net.delay_max * 4);
            }
            if counted {
                self.election_in_flight += 1;
            }
            let payload = self.pack(ti as u32, trace_id, d.clone());
            self.push(self.now + delay, payload);
        }
    }

    /// Process one queued event; false when the queue is empty or the next event is
    /// after `until`.
    fn step(&mut self, until: Time) -> bool {
        match self.next_at() {
            Some(t) if t <= nanos(until) => {}
            _ => return false,
        }
        let Some((t, payload)) = self.pop() else {
            return false;
        };
        let at = Duration::from_nanos(t);
        self.now = self.now.max(at);
        let payload = match payload {
            Payload::Wake { node } => {
                self.wake(node as usize, at);
                return true;
            }
            Payload::Ready { node } => {
                self.ready(node as usize);
                return true;
            }
            p => p,
        };
        let Some((to, datagram, trace_id)) = self.unpack(payload) else {
            return true;
        };
        self.deliver(to as usize, datagram, trace_id);
        true
    }

    /// A datagram arrives at node index `to`.
    fn deliver(&mut self, to: usize, datagram: Datagram, trace_id: u32) {
        let alive = self.nodes[to].alive;
        if trace_id != 0 {
            let id = u64::from(trace_id);
            let to = self.nodes[to].id;
            self.trace_record(|t| {
                if alive {
                    Record::Deliver { t, id, to }
                } else {
                    Record::Drop {
                        t,
                        id,
                        reason: Cow::Borrowed("dead"),
                    }
                }
            });
        }
        if !alive {
            if datagram
                .body
                .as_ref()
                .is_some_and(|b| !b.kind().is_liveness())
            {
                self.election_in_flight -= 1;
            }
            return;
        }
        if self.busy(to) || !self.nodes[to].inbox.is_empty() {
            self.nodes[to].inbox.push_back(datagram);
            self.ready_later(to);
            return;
        }
        self.handle_datagram_at(to, datagram);
    }

    /// Node index `node`'s wake-up of time `at` is due.
    fn wake(&mut self, node: usize, at: Time) {
        let sn = &self.nodes[node];
        if !sn.alive || sn.next_wake != Some(at) {
            return;
        }
        if self.busy(node) || !self.nodes[node].inbox.is_empty() {
            self.nodes[node].next_wake = None;
            self.nodes[node].timer_due = true;
            self.ready_later(node);
            return;
        }
        self.handle_timeout_at(node);
    }

    /// Node index `node` is free again: it takes the next input from its inbox.
    fn ready(&mut self, node: usize) {
        self.nodes[node].ready_queued = false;
        if !self.nodes[node].alive {
            return;
        }
        if self.busy(node) {
            self.ready_later(node);
            return;
        }
        // Due timers first (the runtime's biased loop), then the backlog.
        if std::mem::take(&mut self.nodes[node].timer_due) {
            self.handle_timeout_at(node);
        } else if let Some(d) = self.nodes[node].inbox.pop_front() {
            self.handle_datagram_at(node, d);
        }
        let sn = &self.nodes[node];
        if sn.timer_due || !sn.inbox.is_empty() {
            self.ready_later(node);
        }
    }

    /// Advance virtual time by `d`.
    pub fn run_for(&mut self, d: Duration) {
        let until = self.now + d;
        while self.step(until) {}
        self.now = until;
    }

    /// Run until [`Sim::settled`] holds at the end of a time step, or `max` passes.
    /// Returns whether it settled.
    pub fn run_until_settled(&mut self, max: Duration) -> bool {
        let until = self.now + max;
        loop {
            if self.settled() {
                return true;
            }
            // Process every event of the next instant, then check again.
            let Some(instant) = self.next_at() else {
                self.now = until;
                return self.settled();
            };
            if instant > nanos(until) {
                self.now = until;
                return self.settled();
            }
            while self.next_at() == Some(instant) {
                self.step(until);
            }
        }
    }

    /// Execute a scenario. Returns false if a `Settle` step timed out.
    pub fn run_ops(&mut self, ops: &[Op]) -> Result<bool, SimError> {
        let mut all_settled = true;
        for op in ops {
            match op {
                Op::StartAll | Op::StartAllElecting => {
                    let elect = matches!(op, Op::StartAllElecting);
                    for id in self.cfg.ids.clone() {
                        self.start(id, elect)?;
                    }
                }
                Op::Measure(label) => self.begin_measure(label),
                Op::Elect(id) => self.elect(*id)?,
                Op::Detect(id) => self.detect(*id)?,
                Op::DetectLowest => {
                    if let Some(&low) = self.live_ids().iter().min() {
                        self.detect(low)?;
                    }
                }
                Op::Crash(id) => self.crash(*id)?,
                Op::CrashLeader => {
                    let leader = self.cfg.algorithms.first().and_then(|&g| self.agreement(g));
                    if let Some(l) = leader {
                        self.crash(l)?;
                    }
                }
                Op::Restart { node, elect } => self.start(*node, *elect)?,
                Op::Resign(id) => self.resign(*id)?,
                Op::Partition(sides) => {
                    self.trace_record(|t| Record::Partition {
                        t,
                        sides: sides.clone(),
                    });
                    self.cuts.partition(sides)
                }
                Op::OneWay { from, to } => {
                    self.trace_record(|t| Record::OneWay {
                        t,
                        from: from.clone(),
                        to: to.clone(),
                    });
                    self.cuts.one_way(from, to)
                }
                Op::Pause { node, for_ } => self.pause(*node, *for_)?,
                Op::Slow { node, cost, for_ } => self.slow(*node, *cost, *for_)?,
                Op::Heal => {
                    self.trace_record(|t| Record::Heal { t });
                    self.cuts.heal()
                }
                Op::Net(net) => {
                    self.trace_record(|t| Record::Net {
                        t,
                        loss: net.loss,
                        duplicate: net.duplicate,
                        reorder: net.reorder,
                    });
                    self.set_net(net.clone())
                }
                Op::RunFor(d) => self.run_for(*d),
                Op::Settle { max } => {
                    all_settled &= self.run_until_settled(*max);
                    self.end_measure();
                }
            }
        }
        Ok(all_settled)
    }
}
