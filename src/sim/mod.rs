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
//! # Why one file of ~850 lines of code
//! The event loop, the per-node inbox and processing cost, and the fault operations
//! all act on one `Sim` and one event queue, in an order that makes runs replayable;
//! they stay together. The network model, scenarios, chaos campaign, comparison,
//! reports and the token watcher are in their own files.

pub mod campaign;
pub mod chaos;
pub mod compare;
pub mod crowd;
pub mod network;
pub mod report;
pub mod runner;
pub mod scenario;
pub(crate) mod tokens;

use crate::contract::algorithm::{AlgorithmKind, Options, Timing};
use crate::contract::message::{Message, MessageType};
use crate::contract::rng::Rng;
use crate::node::link::LinkConfig;
use crate::node::{Datagram, Event, Node, NodeConfig, Time};
use crate::trace::{self, Record, Recorder};
use crate::NodeId;
use network::{Cuts, NetConfig};
use report::{ElectionReport, MessageCounts};
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
}

/// A queued event: 20 bytes. A datagram in flight is packed: a bare ack (half of
/// the traffic of a large election) inline, a datagram with a body inline but for the
/// body (in [`Bodies`]), as long as its sequence (or ack) fits in 32 bits, its
/// incarnation in 16 (a bare ack's in 32) and it is not traced; anything else boxed
/// in [`Others`] (with its id in the trace). `to`, `node`: node index.
enum Payload {
    Ack {
        ack: u32,
        to: u32,
        from: NodeId,
        incarnation: u32,
    },
    Data {
        seq: u32,
        to: u32,
        from: NodeId,
        body: u32,
        incarnation: u16,
        group: AlgorithmKind,
    },
    /// The slot in [`Sim::others`].
    Other(u32),
    Wake {
        node: u32,
    },
    /// A busy node is free again: it takes the next input from its inbox.
    Ready {
        node: u32,
    },
}

const _: () = assert!(size_of::<Payload>() == 20);

/// The datagrams in flight that do not fit [`Payload`]'s packed forms, boxed, by slot.
#[derive(Default)]
struct Others {
    slots: Vec<Option<Box<(u32, u32, Datagram)>>>,
    free: Vec<u32>,
}

impl Others {
    fn put(&mut self, o: (u32, u32, Datagram)) -> u32 {
        let o = Some(Box::new(o));
        if let Some(s) = self.free.pop() {
            self.slots[s as usize] = o;
            return s;
        }
        self.slots.push(o);
        // (Four billion boxed datagrams in flight would not fit in memory first.)
        u32::try_from(self.slots.len() - 1).unwrap_or(u32::MAX)
    }

    fn take(&mut self, s: u32) -> Option<(u32, u32, Datagram)> {
        let o = *self.slots.get_mut(s as usize)?.take()?;
        if self.free.len() + 1 == self.slots.len() {
            // None left: give a burst's memory back.
            self.slots = Vec::new();
            self.free = Vec::new();
        } else {
            self.free.push(s);
        }
        Some(o)
    }
}

/// Events of one instant, FIFO, in chunks of at most [`Bucket::CHUNK`]: a burst of
/// millions of events (a Bully election on thousands of nodes) grows chunk by chunk
/// instead of doubling one buffer, and each chunk is freed as soon as it is consumed.
#[derive(Default)]
struct Bucket {
    chunks: VecDeque<VecDeque<Payload>>,
}

impl Bucket {
    const CHUNK: usize = 4096;

    fn push(&mut self, p: Payload) {
        match self.chunks.back_mut() {
            Some(c) if c.len() < Self::CHUNK => c.push_back(p),
            _ => {
                let mut c = VecDeque::new();
                c.push_back(p);
                self.chunks.push_back(c);
            }
        }
    }

    fn pop(&mut self) -> Option<Payload> {
        loop {
            let front = self.chunks.front_mut()?;
            if let Some(p) = front.pop_front() {
                if front.is_empty() {
                    self.chunks.pop_front();
                }
                return Some(p);
            }
            self.chunks.pop_front();
        }
    }

    fn is_empty(&self) -> bool {
        self.chunks.iter().all(|c| c.is_empty())
    }
}

/// The bodies of the datagrams in flight, by slot: in chunks, so that a burst does not
/// double one buffer, and freed when none is left. A body equal to the one its sender
/// put last, while that one is still in flight, shares its slot (a Bully node's OKs to
/// every lower member, its ELECTION to every higher one).
#[derive(Default)]
struct Bodies {
    chunks: Vec<Vec<Body>>,
    free: Vec<u32>,
    /// Slots in use.
    used: usize,
}

/// A slot of [`Bodies`]: the body and the datagrams in flight that carry it.
struct Body {
    msg: Option<Message>,
    refs: u32,
}

impl Bodies {
    const CHUNK: usize = 1 << 16;

    fn get_mut(&mut self, s: u32) -> Option<&mut Body> {
        let i = s as usize;
        self.chunks
            .get_mut(i / Self::CHUNK)?
            .get_mut(i % Self::CHUNK)
    }

    /// Keep `m` for one more datagram in flight; `last`: the slot its sender put last
    /// (a hint, updated; any slot holding an equal body may be shared).
    fn put(&mut self, m: Message, last: &mut u32) -> u32 {
        if let Some(b) = self.get_mut(*last) {
            if b.refs < u32::MAX && b.msg.as_ref() == Some(&m) {
                b.refs += 1;
                return *last;
            }
        }
        self.used += 1;
        let body = Body {
            msg: Some(m),
            refs: 1,
        };
        if let Some(s) = self.free.pop() {
            let i = s as usize;
            self.chunks[i / Self::CHUNK][i % Self::CHUNK] = body;
            *last = s;
            return s;
        }
        match self.chunks.last_mut() {
            Some(c) if c.len() < Self::CHUNK => c.push(body),
            _ => {
                let mut c = Vec::with_capacity(Self::CHUNK);
                c.push(body);
                self.chunks.push(c);
            }
        }
        let n = self.chunks.len() - 1;
        let s = (n * Self::CHUNK + self.chunks[n].len() - 1) as u32;
        *last = s;
        s
    }

    fn take(&mut self, s: u32) -> Option<Message> {
        let b = self.get_mut(s)?;
        if b.refs > 1 {
            b.refs -= 1;
            return b.msg.clone();
        }
        let m = b.msg.take()?;
        b.refs = 0;
        self.used -= 1;
        if self.used == 0 {
            self.chunks = Vec::new();
            self.free = Vec::new();
        } else {
            self.free.push(s);
        }
        Some(m)
    }

    /// Room for another body (slot numbers are u32).
    fn has_room(&self) -> bool {
        self.used < u32::MAX as usize
    }
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

fn nanos(t: Time) -> u64 {
    t.as_nanos().min(u64::MAX as u128) as u64
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
    pub delivered: u64,
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

    /// Boot (or reboot) node `id`.
    pub fn start(&mut self, id: NodeId, elect: bool) -> Result<(), SimError> {
        self.boot(id, elect, true)
    }

    /// Reboot node `id` with an empty disk: its durable state (terms, Raft's vote) is
    /// lost, as on a machine replaced or a state directory wiped.
    pub fn start_blank(&mut self, id: NodeId, elect: bool) -> Result<(), SimError> {
        self.boot(id, elect, false)
    }

    /// When a node last changed its belief about a leader (or its term).
    pub fn last_leader_change(&self) -> Time {
        self.last_leader_change
    }

    fn boot(&mut self, id: NodeId, elect: bool, keep_state: bool) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if self.nodes[i].alive {
            return Ok(());
        }
        // Stable storage survives the crash: the previous life's durable state (Raft's
        // term and vote) is handed to the new one, as a disk would.
        let mut durable = Vec::new();
        if let Some(old) = self.nodes[i].node.take() {
            self.retire(&old);
            if keep_state {
                durable = old.durable();
            } else {
                self.tokens.forget(id);
            }
        }
        let sn = &mut self.nodes[i];
        sn.incarnation += 1;
        let seed = sn.seed ^ sn.incarnation.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let cfg = Self::node_config(&self.cfg, &self.roster, id, sn.incarnation, seed);
        let mut node = Node::new(cfg)?;
        node.restore(&durable);
        node.start(self.now, elect);
        sn.node = Some(node);
        sn.alive = true;
        sn.next_wake = None;
        let incarnation = sn.incarnation;
        if let Some(t) = self.trace.as_mut() {
            t.forget(id);
            t.push(Record::Start {
                t: trace::ns(self.now),
                node: id,
                incarnation,
            });
        }
        self.after(i);
        Ok(())
    }

    fn retire(&mut self, old: &Node) {
        for kind in old.algorithms() {
            if let Some(s) = old.group_stats(kind) {
                let t = self
                    .retired
                    .entry(kind)
                    .or_insert([0; MessageType::ALL.len()]);
                for (a, b) in t.iter_mut().zip(s.sent.iter()) {
                    *a += b;
                }
            }
        }
        let l = old.link_stats();
        self.retired_link[0] += l.acks_sent;
        self.retired_link[1] += l.retransmissions;
        self.retired_link[2] += l.delivery_failures;
    }

    /// Crash `id`: its state and inbox are lost (crashing a crashed node does nothing).
    pub fn crash(&mut self, id: NodeId) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if self.nodes[i].alive {
            self.trace_record(|t| Record::Crash { t, node: id });
        }
        self.nodes[i].alive = false;
        self.nodes[i].next_wake = None;
        self.tokens.crashed(id);
        self.drop_inbox(i);
        Ok(())
    }

    /// A crashed node loses what waited in its inbox.
    fn drop_inbox(&mut self, i: usize) {
        let sn = &mut self.nodes[i];
        sn.timer_due = false;
        sn.busy_until = Duration::ZERO;
        sn.slow = None;
        for d in std::mem::take(&mut sn.inbox) {
            if d.body.as_ref().is_some_and(|b| !b.kind().is_liveness()) {
                self.election_in_flight -= 1;
            }
        }
    }

    /// `id` stops for `d` (a paused process): nothing is handled until then; what
    /// arrives meanwhile waits and is handled afterwards, one input at a time.
    pub fn pause(&mut self, id: NodeId, d: Duration) -> Result<(), SimError> {
        let i = self.idx(id)?;
        let until = self.now + d;
        let sn = &mut self.nodes[i];
        if sn.alive {
            sn.busy_until = sn.busy_until.max(until);
        }
        Ok(())
    }

    /// `id` spends at least `cost` on every input for `d` (a starved CPU).
    pub fn slow(&mut self, id: NodeId, cost: Duration, d: Duration) -> Result<(), SimError> {
        let i = self.idx(id)?;
        self.nodes[i].slow = Some((self.now + d, cost));
        Ok(())
    }

    /// The cost of one input at node `i` now.
    fn cost_of(&self, i: usize, base: Duration) -> Duration {
        match self.nodes[i].slow {
            Some((until, cost)) if self.now < until => base.max(cost),
            _ => base,
        }
    }

    fn busy(&self, i: usize) -> bool {
        self.now < self.nodes[i].busy_until
    }

    /// Queue a `Ready` for node `i` when it is free, unless one is queued.
    fn ready_later(&mut self, i: usize) {
        if !self.nodes[i].ready_queued {
            self.nodes[i].ready_queued = true;
            let at = self.nodes[i].busy_until.max(self.now);
            self.push(at, Payload::Ready { node: i as u32 });
        }
    }

    fn handle_datagram_at(&mut self, i: usize, datagram: Datagram) {
        if datagram
            .body
            .as_ref()
            .is_some_and(|b| !b.kind().is_liveness())
        {
            self.election_in_flight -= 1;
        }
        self.delivered += 1;
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.handle_datagram(now, datagram);
        }
        self.nodes[i].busy_until = now + self.cost_of(i, self.cfg.cost.datagram);
        self.after(i);
    }

    fn handle_timeout_at(&mut self, i: usize) {
        let now = self.now;
        let sn = &mut self.nodes[i];
        sn.next_wake = None;
        if let (Some(t), Some(n)) = (self.trace.as_mut(), sn.node.as_ref()) {
            for (alg, timer) in n.due_timers(now) {
                t.push(Record::Timer {
                    t: trace::ns(now),
                    node: sn.id,
                    alg: Cow::Borrowed(alg.as_str()),
                    timer: Cow::Borrowed(timer),
                });
            }
        }
        if let Some(n) = sn.node.as_mut() {
            n.handle_timeout(now);
        }
        self.nodes[i].busy_until = now + self.cost_of(i, self.cfg.cost.timer);
        self.after(i);
    }

    /// `id` calls an election in every group.
    pub fn elect(&mut self, id: NodeId) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if !self.nodes[i].alive {
            return Ok(());
        }
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            for kind in self.cfg.algorithms.clone() {
                node.call_election(now, kind);
            }
        }
        self.after(i);
        Ok(())
    }

    /// `id`'s failure detector fires now in every group.
    pub fn detect(&mut self, id: NodeId) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if !self.nodes[i].alive {
            return Ok(());
        }
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.force_leader_lost(now);
        }
        self.after(i);
        Ok(())
    }

    /// Make `id` ineligible in `group` (every group: `None`) for `why`, or clear that
    /// reason ([`Node::set_ineligible`]).
    pub fn set_ineligible(
        &mut self,
        id: NodeId,
        group: Option<AlgorithmKind>,
        why: crate::contract::policy::Ineligible,
        on: bool,
    ) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if !self.nodes[i].alive {
            return Ok(());
        }
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.set_ineligible(now, group, why, on);
        }
        self.after(i);
        Ok(())
    }

    /// Lower `id`'s priority by `penalty` in `group` (every group: `None`), or restore
    /// it with 0 ([`Node::set_penalty`]).
    pub fn set_penalty(
        &mut self,
        id: NodeId,
        group: Option<AlgorithmKind>,
        penalty: u8,
    ) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if !self.nodes[i].alive {
            return Ok(());
        }
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.set_penalty(now, group, penalty);
        }
        self.after(i);
        Ok(())
    }

    /// `id` hands the leadership of `group` to `to` ([`Node::transfer`]): the node's
    /// answer (the bound, or why not).
    pub fn transfer(
        &mut self,
        id: NodeId,
        group: AlgorithmKind,
        to: NodeId,
    ) -> Result<Result<Duration, String>, SimError> {
        let i = self.idx(id)?;
        let now = self.now;
        let alive = self.nodes[i].alive;
        let answer = match self.nodes[i].node.as_mut() {
            Some(node) if alive => node.transfer(now, group, to),
            _ => Err(format!("node {id} is down")),
        };
        self.after(i);
        Ok(answer)
    }

    /// Graceful stop: resign, flush the datagrams, then crash.
    pub fn resign(&mut self, id: NodeId) -> Result<(), SimError> {
        let i = self.idx(id)?;
        if !self.nodes[i].alive {
            return Ok(());
        }
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.resign(now);
        }
        self.after(i);
        self.crash(id)
    }

    /// Replace the network's faults from now on (datagrams in flight keep their fate).
    pub(crate) fn set_net(&mut self, net: NetConfig) {
        self.net = net;
    }

    /// The directed cuts, to partition or heal the network.
    pub fn cuts_mut(&mut self) -> &mut Cuts {
        &mut self.cuts
    }

    /// The leader every live node of `group` agrees on, if they all agree on a live one.
    pub fn agreement(&self, group: AlgorithmKind) -> Option<NodeId> {
        let mut agreed: Option<NodeId> = None;
        for sn in self.nodes.iter().filter(|n| n.alive) {
            let leader = sn.node.as_ref()?.leader(group)?;
            match agreed {
                None => agreed = Some(leader),
                Some(l) if l == leader => {}
                Some(_) => return None,
            }
        }
        agreed.filter(|&l| self.is_alive(l))
    }

    /// Every group agrees, no live node is electing and no election datagram is in flight.
    pub fn settled(&self) -> bool {
        self.election_in_flight == 0
            && self.cfg.algorithms.iter().all(|&g| {
                self.agreement(g).is_some()
                    && self
                        .nodes
                        .iter()
                        .filter(|n| n.alive)
                        .all(|n| n.node.as_ref().is_some_and(|x| !x.is_electing(g)))
            })
    }

    /// Election messages sent so far by type (liveness excluded), past lives included.
    pub fn totals(&self, group: AlgorithmKind) -> [u64; MessageType::ALL.len()] {
        let mut t = self
            .retired
            .get(&group)
            .copied()
            .unwrap_or([0; MessageType::ALL.len()]);
        for sn in &self.nodes {
            if let Some(s) = sn.node.as_ref().and_then(|n| n.group_stats(group)) {
                for (a, b) in t.iter_mut().zip(s.sent.iter()) {
                    *a += b;
                }
            }
        }
        t
    }

    /// (acks, retransmissions, delivery failures) summed over all nodes.
    pub fn link_totals(&self) -> [u64; 3] {
        let mut t = self.retired_link;
        for n in self.nodes.iter().filter_map(|n| n.node.as_ref()) {
            let l = n.link_stats();
            t[0] += l.acks_sent;
            t[1] += l.retransmissions;
            t[2] += l.delivery_failures;
        }
        t
    }

    fn all_totals(&self) -> Totals {
        self.cfg
            .algorithms
            .iter()
            .map(|&g| (g, self.totals(g)))
            .collect()
    }

    /// Start measuring an election.
    pub(crate) fn begin_measure(&mut self, label: &str) {
        self.measure = Some((
            label.to_string(),
            self.now,
            self.all_totals(),
            self.link_totals(),
        ));
        self.last_leader_change = self.now;
    }

    /// Close the current measurement (per group) and append it to `elections`.
    pub fn end_measure(&mut self) {
        let Some((label, start, before, link_before)) = self.measure.take() else {
            return;
        };
        let after = self.all_totals();
        let link_after = self.link_totals();
        for &g in &self.cfg.algorithms {
            let b = before.get(&g).copied().unwrap_or_default();
            let a = after.get(&g).copied().unwrap_or_default();
            let mut delta = [0u64; MessageType::ALL.len()];
            for i in 0..delta.len() {
                delta[i] = a[i] - b[i];
            }
            let leader = self.agreement(g);
            let agreed = leader.is_some();
            let end = if agreed {
                self.last_leader_change
            } else {
                self.now
            };
            self.elections.push(ElectionReport {
                label: label.clone(),
                algorithm: g,
                leader,
                agreed,
                messages: MessageCounts::from_sent(&delta),
                heartbeats: delta[MessageType::Heartbeat as usize]
                    + delta[MessageType::HeartbeatAck as usize],
                acks: link_after[0] - link_before[0],
                retransmissions: link_after[1] - link_before[1],
                delivery_failures: link_after[2] - link_before[2],
                virtual_ms: end.saturating_sub(start).as_secs_f64() * 1e3,
            });
        }
    }

    fn push(&mut self, at: Time, payload: Payload) {
        self.queued += 1;
        self.queue.entry(nanos(at)).or_default().push(payload);
    }

    fn next_at(&self) -> Option<u64> {
        self.queue.first_key_value().map(|(t, _)| *t)
    }

    fn pop(&mut self) -> Option<(u64, Payload)> {
        let mut entry = self.queue.first_entry()?;
        let t = *entry.key();
        let payload = entry.get_mut().pop();
        if entry.get().is_empty() {
            entry.remove();
        }
        self.queued -= 1;
        payload.map(|p| (t, p))
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

    /// `d` for node index `to` as a queued event (see [`Payload`]).
    fn pack(&mut self, to: u32, trace_id: u32, d: Datagram) -> Payload {
        let narrow = |v: u64| u32::try_from(v).ok();
        let fits = trace_id == 0
            && narrow(d.incarnation).is_some()
            && narrow(d.seq).is_some()
            && narrow(d.ack).is_some();
        match d {
            Datagram {
                from,
                incarnation,
                seq: 0,
                ack,
                group: None,
                body: None,
            } if fits => Payload::Ack {
                ack: ack as u32,
                to,
                from,
                incarnation: incarnation as u32,
            },
            Datagram {
                from,
                incarnation,
                seq,
                ack: 0,
                group: Some(group),
                body: Some(body),
            } if fits && incarnation <= u64::from(u16::MAX) && self.bodies.has_room() => {
                let sender = self.index.get(from).unwrap_or(usize::MAX);
                if sender != usize::MAX && self.last_body.len() <= sender {
                    self.last_body.resize(sender + 1, u32::MAX);
                }
                let mut none = u32::MAX;
                let last = self.last_body.get_mut(sender).unwrap_or(&mut none);
                Payload::Data {
                    seq: seq as u32,
                    to,
                    from,
                    incarnation: incarnation as u16,
                    body: self.bodies.put(body, last),
                    group,
                }
            }
            d => Payload::Other(self.others.put((to, trace_id, d))),
        }
    }

    /// The datagram of a queued event packed by [`Sim::pack`]: (node index, datagram,
    /// trace id); `None` for the other events.
    fn unpack(&mut self, payload: Payload) -> Option<(u32, Datagram, u32)> {
        match payload {
            Payload::Ack {
                ack,
                to,
                from,
                incarnation,
            } => {
                let d = Datagram {
                    from,
                    incarnation: u64::from(incarnation),
                    seq: 0,
                    ack: u64::from(ack),
                    group: None,
                    body: None,
                };
                Some((to, d, 0))
            }
            Payload::Data {
                seq,
                to,
                from,
                incarnation,
                body,
                group,
            } => {
                let d = Datagram {
                    from,
                    incarnation: u64::from(incarnation),
                    seq: u64::from(seq),
                    ack: 0,
                    group: Some(group),
                    body: self.bodies.take(body),
                };
                Some((to, d, 0))
            }
            Payload::Other(s) => {
                let (to, trace_id, d) = self.others.take(s)?;
                Some((to, d, trace_id))
            }
            Payload::Wake { .. } | Payload::Ready { .. } => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::message::ElectionTag;

    /// Every shape of datagram comes out of the queue as it went in: bare acks and
    /// datagrams with a body (packed), and what does not fit the packed forms (an
    /// incarnation above 32 bits, or 16 with a body, a sequence or ack above 32 bits, a traced datagram, a
    /// datagram with both a sequence and an ack, a body without a group), boxed.
    #[test]
    fn queued_datagrams_come_out_as_they_went_in() {
        let mut sim = Sim::new(SimConfig::new(AlgorithmKind::Bully, 3, 1)).unwrap();
        let election = Message::Election {
            tag: ElectionTag {
                initiator: 2,
                seq: 7,
            },
            epoch: 3,
        };
        let base = Datagram {
            from: 2,
            incarnation: 5,
            seq: 0,
            ack: 0,
            group: None,
            body: None,
        };
        let shapes = [
            Datagram {
                ack: 9,
                ..base.clone()
            },
            Datagram {
                seq: 4,
                group: Some(AlgorithmKind::Ring),
                body: Some(election.clone()),
                ..base.clone()
            },
            Datagram {
                group: Some(AlgorithmKind::Bully),
                body: Some(Message::Heartbeat { term: 1, leader: 2 }),
                ..base.clone()
            },
            Datagram {
                incarnation: 1 << 40,
                ack: 9,
                ..base.clone()
            },
            Datagram {
                incarnation: u64::MAX,
                seq: 4,
                group: Some(AlgorithmKind::Bully),
                body: Some(election.clone()),
                ..base.clone()
            },
            Datagram {
                seq: 4,
                ack: 3,
                group: Some(AlgorithmKind::Bully),
                body: Some(election.clone()),
                ..base.clone()
            },
            Datagram {
                seq: 4,
                body: Some(election.clone()),
                ..base.clone()
            },
            base.clone(),
            Datagram {
                ack: 1 << 32,
                ..base.clone()
            },
            Datagram {
                seq: crate::node::link::BROADCAST_SEQ | 4,
                group: Some(AlgorithmKind::Bully),
                body: Some(election.clone()),
                ..base.clone()
            },
            Datagram {
                incarnation: 1 << 16,
                seq: 4,
                group: Some(AlgorithmKind::Bully),
                body: Some(election.clone()),
                ..base.clone()
            },
            // A bare ack keeps 32 bits of incarnation inline.
            Datagram {
                incarnation: 1 << 16,
                ack: 9,
                ..base.clone()
            },
        ];
        // Untraced (trace id 0), then all of them again traced.
        let traced = |i: usize| if i < shapes.len() { 0 } else { 100 + i as u32 };
        let all: Vec<Datagram> = shapes.iter().chain(&shapes).cloned().collect();
        let packed: Vec<Payload> = all
            .iter()
            .enumerate()
            .map(|(i, d)| sim.pack(i as u32, traced(i), d.clone()))
            .collect();
        assert!(matches!(packed[0], Payload::Ack { .. }));
        assert!(matches!(packed[1], Payload::Data { .. }));
        assert!(matches!(packed[2], Payload::Data { .. }));
        // (Nothing at all, shape 7, packs as an ack of nothing.)
        assert!(matches!(packed[7], Payload::Ack { .. }));
        assert!(matches!(packed[11], Payload::Ack { .. }));
        for (i, p) in packed.iter().enumerate().skip(3) {
            if i != 7 && i != 11 {
                assert!(matches!(p, Payload::Other(_)), "shape {i} is boxed");
            }
        }
        assert_eq!(sim.bodies.used, 2, "the packed bodies wait in the slab");
        for (i, (p, d)) in packed.into_iter().zip(all).enumerate() {
            assert_eq!(sim.unpack(p), Some((i as u32, d, traced(i))), "shape {i}");
        }
        assert_eq!(sim.bodies.used, 0);
        assert!(sim.bodies.chunks.is_empty(), "freed once empty");
        assert!(sim.others.slots.is_empty(), "freed once empty");
    }

    /// A sender's equal bodies in a row share a slot until the last datagram carrying
    /// it is delivered; each delivery gets the body whole, and a different body (or a
    /// stale hint) gets a slot of its own.
    #[test]
    fn equal_bodies_share_a_slot_while_in_flight() {
        let mut b = Bodies::default();
        let ok = Message::Ok {
            responder: 5,
            tag: ElectionTag {
                initiator: 1,
                seq: 1,
            },
        };
        let other = Message::Resign { epoch: 2 };
        let mut last = u32::MAX;
        let s1 = b.put(ok.clone(), &mut last);
        let s2 = b.put(ok.clone(), &mut last);
        let s3 = b.put(ok.clone(), &mut last);
        assert_eq!((s1, s2, s3), (s1, s1, s1));
        assert_eq!(b.used, 1, "one slot for three datagrams");
        let s4 = b.put(other.clone(), &mut last);
        assert_ne!(s4, s1);
        assert_eq!(last, s4);
        assert_eq!(b.take(s1), Some(ok.clone()));
        assert_eq!(b.take(s1), Some(ok.clone()));
        assert_eq!(b.used, 2);
        assert_eq!(b.take(s1), Some(ok.clone()));
        assert_eq!(b.take(s1), None, "taken as often as put, no more");
        assert_eq!(b.used, 1);
        // A hint to a slot freed and reused for another body shares nothing.
        let mut stale = s1;
        let s5 = b.put(other.clone(), &mut stale);
        let s6 = b.put(ok.clone(), &mut stale);
        assert_ne!(s5, s6);
        assert_eq!(b.take(s4), Some(other.clone()));
        assert_eq!(b.take(s5), Some(other));
        assert_eq!(b.take(s6), Some(ok));
        assert_eq!(b.used, 0);
        assert!(b.chunks.is_empty(), "freed once empty");
    }
}
