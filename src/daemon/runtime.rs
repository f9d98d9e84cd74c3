//! The runtime of one node: one task drives one sans-IO [`Node`] (every configured
//! algorithm as an independent group) over one datagram socket.
//!
//! # Contract
//! - One socket, one task, one deadline table ([`Node::poll_timeout`]) and one timer
//!   set to the next deadline after every batch of work (the quinn pattern): a kernel
//!   timer to the microsecond on a real socket, tokio's otherwise
//!   ([`crate::daemon::timer`]).
//! - The socket and the shutdown signal are passed in ([`run`], the mini-redis
//!   pattern), and the socket is anything implementing [`Transport`]: real UDP in
//!   `electd run` and the demo, turmoil's simulated UDP in the tests.
//! - Every datagram goes out through [`Gate::seal`] and comes in through
//!   [`Gate::open`] (authentication, receiver, source address, replay window; see
//!   [`crate::security::gate`]). The gate outlives pause/resume, so its replay windows do too.
//! - Nothing from the network is fatal: invalid datagrams are dropped and counted
//!   (`electd_invalid_datagrams_total{reason}`) and logged at a bounded rate
//!   ([`crate::security::droplog`]), send errors are counted
//!   (`electd_send_errors_total{kind}`) and survived; the reliable link retransmits.
//! - Batches: after a datagram arrives, those already queued on the socket are handled
//!   too (up to `BATCH`, 64), then everything is flushed once: datagrams sent, metrics
//!   synced with the node, the status snapshot published, then each leader change
//!   emitted to `/watch` subscribers and hooks. A timer that falls due ends the batch
//!   and, ahead of the socket in the (biased) `select!`, fires next: heartbeats keep
//!   their period while datagrams keep arriving.
//! - Operator control: `Elect` calls an election in one group; `Pause` stops all
//!   traffic in and out, as if the process had crashed (received datagrams are read
//!   and discarded, no timer runs, every group reports no leader); `Resume` comes back
//!   as a restarted process does: a new [`Node`] with a new, higher incarnation that
//!   calls an election in every group.
//! - `Control::Keys` swaps the keyring without a restart (key rotation, `SIGHUP`);
//!   a node started `insecure` stays insecure (the swap is refused and logged).
//! - Shutdown: every group this node leads sends RESIGN to the others (so they elect
//!   at once instead of waiting `failure_timeout`); the runtime then waits until the
//!   resignations are acknowledged or the link gives up on them, and returns.
//! - Multicast ([`NetOptions::multicast`], config `transport.multicast`): every
//!   broadcast (heartbeats, COORDINATOR, RESIGN, RequestVote, …) leaves as one datagram
//!   to the group (`electd_datagrams_sent_total` +1, `electd_messages_sent_total` + N−1);
//!   reliable ones are acked by each recipient and retransmitted by unicast to those
//!   that did not ack (`node::link`). Datagrams from the group are handled like unicast
//!   ones; this node's own (multicast loop) are dropped uncounted.
//! - DNS ([`NetOptions::names`]): roster entries given by name are looked up in the
//!   background, never blocking the task: at start, every `resolve_every` (names that
//!   did not resolve are retried every second), and at once when the link declares
//!   the peer unreachable (a pod recreated with a new IP is found again). A peer
//!   without an address is skipped (`electd_send_errors_total{kind="no_address"}`)
//!   and the link's verdicts work as for a dead peer.
//! - Batched heartbeats ([`NetOptions::heartbeats`], config
//!   `transport.batch_heartbeats`): the kernel puts the heartbeats of every leader this
//!   node follows quietly ([`Node::quiet_heartbeats`]) into a second socket that no one
//!   waits on; at the start of every turn, before anything else is handled, the runtime
//!   reads them all and hands each to the node as of the time it arrived. The program
//!   that selects them is replaced after any turn that changed the leaders followed.
//!   See [`crate::daemon::heartbeats`].
//!
//! # Why one file of ~1,100 lines of code
//! It is the one task of the contract above: the `select!` loop and the steps of a
//! batch (receive, flush, sync, publish, emit) share the `Driver`'s state and their
//! order is the contract. The socket, durable state, metrics, hooks and the shared
//! snapshot are in their own files.

use crate::config::digest::ConfigDigest;
use crate::config::{Config, Security};
use crate::contract::algorithm::{AlgorithmKind, Durable, Options, Timing};
use crate::contract::message::Message;
use crate::contract::policy::Ineligible;
use crate::daemon::drift::{Drift, CONFIG_EVERY};
use crate::daemon::durable;
use crate::daemon::heartbeats::{self, arrival, HeartbeatSocket, Pattern};
use crate::daemon::shared::{Control, GroupView, LeaderEvent, Lease, Shared, TransferStarted};
use crate::daemon::socket::{send_error_kind, Transport};
use crate::daemon::timer::Deadline;
use crate::node::link::LinkConfig;
use crate::node::{Datagram, Event, Node, NodeConfig, StatusKey, Time};
use crate::security::droplog::{DropLog, Verdict};
use crate::security::gate::{Dropped, Gate, GateConfig};
use crate::security::keyring::Keyring;
use crate::security::wire::MAX_DATAGRAM;
use crate::NodeId;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How the node enters the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Call an election in every group at once (a (re)started process, the default).
    Electing,
    /// Wait for the others (each algorithm's watchdog still guarantees a leader).
    Passive,
}

/// Everything the runtime needs (built from a [`Config`], or directly in tests).
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// This node's id (a member of `peers`).
    pub id: NodeId,
    /// The cluster name every datagram carries.
    pub cluster: String,
    /// Roster in ring order with each member's UDP address.
    pub peers: Vec<(NodeId, SocketAddr)>,
    /// The groups to run, one per algorithm.
    pub algorithms: Vec<AlgorithmKind>,
    /// Heartbeat, failure timeout and election timeouts.
    pub timing: Timing,
    /// Raft switches (pre-vote, check-quorum, ranked timeouts).
    pub options: Options,
    /// Reliable-link retransmission settings.
    pub link: LinkConfig,
    /// `None` only with `insecure = true`.
    pub keys: Option<Keyring>,
    /// Boot id; see [`incarnation_now`].
    pub incarnation: u64,
    /// Whether to call an election at start or wait for the others.
    pub start: Start,
    /// Where durable algorithm state (every group's fencing token, Raft's vote) is kept
    /// across restarts.
    pub state_file: Option<std::path::PathBuf>,
    /// Allowed UDP source addresses per roster id (`[security] check_source`);
    /// `None` accepts any source.
    pub sources: Option<HashMap<NodeId, Vec<SocketAddr>>>,
}

impl RuntimeConfig {
    /// The runtime settings of `c`'s node; `incarnation` is this boot's id
    /// (see [`incarnation_now`]).
    pub fn from_config(c: &Config, incarnation: u64) -> RuntimeConfig {
        RuntimeConfig {
            id: c.node_id,
            cluster: c.cluster.clone(),
            peers: c.peers.iter().map(|p| (p.id, p.addr)).collect(),
            algorithms: c.algorithms.clone(),
            timing: c.timing.clone(),
            options: c.options.clone(),
            link: c.link.clone(),
            keys: match &c.security {
                Security::Keyring(k) => Some(k.clone()),
                Security::Insecure => None,
            },
            incarnation,
            start: Start::Electing,
            state_file: c.raft_state_file.clone(),
            sources: c
                .check_source
                .then(|| c.peers.iter().map(|p| (p.id, p.sources.clone())).collect()),
        }
    }

    fn gate_config(&self, group: bool) -> GateConfig {
        GateConfig {
            me: self.id,
            cluster: self.cluster.clone(),
            roster: self.peers.iter().map(|p| p.0).collect(),
            keys: self.keys.clone(),
            sources: self.sources.clone(),
            group,
        }
    }

    fn node_config(&self, incarnation: u64) -> NodeConfig {
        NodeConfig {
            id: self.id,
            ring: self.peers.iter().map(|p| p.0).collect(),
            algorithms: self.algorithms.clone(),
            timing: self.timing.clone(),
            options: self.options.clone(),
            link: self.link.clone(),
            incarnation,
            // Timer ranges are drawn from a generator seeded per node and per life.
            seed: incarnation ^ u64::from(self.id).rotate_left(40),
        }
    }
}

/// A boot id that grows across restarts: unix time in microseconds (at least 1).
pub fn incarnation_now() -> u64 {
    unix_micros().max(1)
}

/// The wall clock in unix microseconds (0 before 1970).
pub(crate) fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Network options beside [`RuntimeConfig`] (see the module documentation).
#[derive(Debug, Default)]
pub struct NetOptions {
    /// The group to send broadcasts to, and the socket that receives the group's
    /// datagrams (`None` when the node's own socket joined the group): see
    /// [`crate::daemon::socket::join_multicast`].
    pub multicast: Option<(SocketAddr, Option<tokio::net::UdpSocket>)>,
    /// Roster members given by DNS name (`host:port`), looked up in the background.
    pub names: Vec<(NodeId, String)>,
    /// Period of re-resolution (config `transport.resolve_every`); zero means 30 s.
    pub resolve_every: Duration,
    /// The socket that receives the followed leaders' heartbeats, read in batches
    /// (`None`: every datagram arrives on the main socket): see
    /// [`crate::daemon::heartbeats::bind_udp_pair`].
    pub heartbeats: Option<HeartbeatSocket>,
}

impl NetOptions {
    /// The DNS part from a configuration (multicast needs the bound socket: see
    /// [`crate::daemon::socket::join_multicast`]).
    pub fn from_config(c: &Config) -> NetOptions {
        NetOptions {
            multicast: None,
            heartbeats: None,
            names: c
                .peers
                .iter()
                .filter(|p| p.id != c.node_id)
                .filter_map(|p| p.name.clone().map(|n| (p.id, n)))
                .collect(),
            resolve_every: c.resolve_every,
        }
    }
}

/// Consecutive failed sends after which the `send` health check fails.
const SEND_FAILURE_STREAK: u32 = 8;

/// Most datagrams handled between two flushes (sends, metrics, status, events).
const BATCH: usize = 64;

/// How long one DNS lookup may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);
/// Retry period of a name that did not resolve.
const RETRY_UNRESOLVED: Duration = Duration::from_secs(1);

/// The runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The node could not be built (an invalid roster).
    #[error("cannot build the node: {0}")]
    Build(#[from] crate::algorithms::BuildError),
    /// The durable state could not be read or written.
    #[error("cannot read or write the durable state ([state] file): {0}")]
    Durable(#[from] durable::DurableError),
}

/// Drive the node over `socket` until `shutdown` completes (see the module
/// documentation). `control` is the receiver returned by [`Shared::new`].
pub async fn run<T: Transport>(
    socket: T,
    cfg: RuntimeConfig,
    shared: Arc<Shared>,
    control: mpsc::Receiver<Control>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RuntimeError> {
    run_with(
        socket,
        NetOptions::default(),
        cfg,
        shared,
        control,
        shutdown,
    )
    .await
}

/// [`run`] with multicast and DNS resolution of roster names.
pub async fn run_with<T: Transport>(
    socket: T,
    mut net: NetOptions,
    cfg: RuntimeConfig,
    shared: Arc<Shared>,
    mut control: mpsc::Receiver<Control>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RuntimeError> {
    let group_socket = net.multicast.as_mut().and_then(|m| m.1.take());
    let beats = net.heartbeats.take();
    let v4_only = socket.local_addr().map(|a| a.is_ipv4()).unwrap_or(false);
    let (resolved_tx, mut resolved_rx) = mpsc::channel(64);
    let mut d = Driver::new(cfg, shared)?;
    d.multicast = net.multicast.as_ref().map(|m| m.0);
    d.node.set_multicast(d.multicast.is_some());
    d.gate.set_group(d.multicast.is_some());
    d.resolver = Resolver::new(&net, v4_only, resolved_tx);
    d.bound = socket.local_addr().ok();
    d.check_roster();
    let has_names = !d.resolver.names.is_empty();
    d.resolve_due();
    d.boot();
    d.flush(&socket).await;
    let mut buf = vec![0u8; MAX_DATAGRAM + 1];
    let mut gbuf = vec![0u8; MAX_DATAGRAM + 1];
    let mut hbuf = vec![0u8; if beats.is_some() { MAX_DATAGRAM + 1 } else { 0 }];
    // What waits in the heartbeat socket arrived before anything else now to handle:
    // it goes first (see the module documentation).
    let mut read_beats = |d: &mut Driver| {
        if let Some(b) = &beats {
            d.drain_heartbeats(b, &mut hbuf);
        }
    };
    let mut timer = Deadline::new(d.deadline(), socket.wall_clock());
    if socket.wall_clock() && !timer.is_precise() {
        tracing::warn!("no kernel timer (timerfd): deadlines fire about 1 ms late on average");
    }
    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(RETRY_UNRESOLVED);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut control_open = true;
    loop {
        tokio::select! {
            biased;
            _ = &mut shutdown => break,
            c = control.recv(), if control_open => match c {
                Some(c) => {
                    read_beats(&mut d);
                    d.control(c);
                    d.note_input();
                }
                None => control_open = false,
            },
            // Due timers first: a leader's heartbeats go out on time however full
            // the socket is.
            _ = timer.wait(), if !d.paused => {
                // What already waits in the sockets is read first (one batch at most):
                // an answer that arrived before its timeout must not lose to it, and
                // the followed leader's heartbeats move the detector's deadline.
                read_beats(&mut d);
                d.drain_pending(&socket, &mut buf);
                d.timeout();
            }
            r = socket.recv_from(&mut buf) => {
                read_beats(&mut d);
                d.received(r, &buf);
                d.drain_batch(&socket, &mut buf);
            }
            r = recv_group(group_socket.as_ref(), &mut gbuf) => {
                read_beats(&mut d);
                d.received(r, &gbuf);
            }
            Some((id, r)) = resolved_rx.recv() => {
                read_beats(&mut d);
                // Accept the peer's datagrams from where its name points now.
                if let Some(addr) = r {
                    d.gate.set_sources(id, vec![addr]);
                }
                if r.is_none() {
                    d.shared.metrics.error("resolve");
                }
                d.resolver.resolved(id, r, &mut d.peers);
                d.check_roster();
            }
            _ = tick.tick(), if has_names => {
                read_beats(&mut d);
                d.resolve_due();
            }
        }
        d.flush(&socket).await;
        if let Some(b) = &beats {
            d.select_heartbeats(b);
        }
        timer.set(d.deadline());
    }
    d.leave(&socket, &mut buf).await;
    Ok(())
}

/// Receive from the group socket, or never when there is none.
async fn recv_group(
    s: Option<&tokio::net::UdpSocket>,
    buf: &mut [u8],
) -> io::Result<(usize, SocketAddr)> {
    match s {
        Some(s) => s.recv_from(buf).await,
        None => std::future::pending().await,
    }
}

/// Background DNS lookups of roster names (see the module documentation).
#[derive(Debug, Default)]
struct Resolver {
    names: HashMap<NodeId, String>,
    every: Duration,
    v4_only: bool,
    tx: Option<mpsc::Sender<(NodeId, Option<SocketAddr>)>>,
    in_flight: std::collections::HashSet<NodeId>,
    /// When each name was last resolved successfully.
    last_ok: HashMap<NodeId, Instant>,
    /// Names whose last lookup failed (logged once per failure streak).
    failing: std::collections::HashSet<NodeId>,
}

impl Resolver {
    fn new(
        net: &NetOptions,
        v4_only: bool,
        tx: mpsc::Sender<(NodeId, Option<SocketAddr>)>,
    ) -> Resolver {
        Resolver {
            names: net.names.iter().cloned().collect(),
            every: if net.resolve_every.is_zero() {
                Duration::from_secs(30)
            } else {
                net.resolve_every
            },
            v4_only,
            tx: Some(tx),
            ..Resolver::default()
        }
    }

    /// Start a lookup of `id`'s name unless one is running.
    fn lookup(&mut self, id: NodeId) {
        let (Some(name), Some(tx)) = (self.names.get(&id), &self.tx) else {
            return;
        };
        if !self.in_flight.insert(id) {
            return;
        }
        let (name, tx, v4_only) = (name.clone(), tx.clone(), self.v4_only);
        tokio::spawn(async move {
            let found = tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host(name)).await;
            let addr = match found {
                Ok(Ok(mut addrs)) => addrs.find(|a| !v4_only || a.is_ipv4()),
                _ => None,
            };
            let _ = tx.send((id, addr)).await;
        });
    }

    fn resolved(
        &mut self,
        id: NodeId,
        r: Option<SocketAddr>,
        peers: &mut HashMap<NodeId, SocketAddr>,
    ) {
        self.in_flight.remove(&id);
        let name = self.names.get(&id).map(String::as_str).unwrap_or("?");
        match r {
            Some(addr) => {
                self.last_ok.insert(id, Instant::now());
                self.failing.remove(&id);
                match peers.insert(id, addr) {
                    Some(old) if old == addr => {}
                    Some(old) => {
                        tracing::info!(peer = id, %name, %old, new = %addr, "peer address changed")
                    }
                    None => tracing::info!(peer = id, %name, %addr, "peer address resolved"),
                }
            }
            None => {
                // Keep the last known address: a DNS hiccup must not cut a live peer off.
                if self.failing.insert(id) {
                    tracing::warn!(
                        peer = id,
                        %name,
                        known = peers.contains_key(&id),
                        "peer name does not resolve; retrying every {}s",
                        RETRY_UNRESOLVED.as_secs()
                    );
                }
            }
        }
    }
}

struct Driver {
    cfg: RuntimeConfig,
    /// Multicast group of broadcasts, if enabled.
    multicast: Option<SocketAddr>,
    resolver: Resolver,
    shared: Arc<Shared>,
    gate: Gate,
    drops: DropLog,
    /// Rate limit of the error lines that can repeat (by failure class).
    errlog: DropLog,
    /// Consecutive failed sends (reset by a successful one): the `send` health check.
    send_failures: u32,
    /// The address this node's socket is bound to (for the `roster` health check).
    bound: Option<SocketAddr>,
    peers: HashMap<NodeId, SocketAddr>,
    node: Node,
    incarnation: u64,
    /// Durable state as last written to `cfg.state_file`.
    stored: Vec<(AlgorithmKind, Durable)>,
    /// The drained groups as last written to `cfg.state_file`.
    stored_drained: Vec<AlgorithmKind>,
    /// Transfers under way that an admin request waits on: where to say that the
    /// target refused (group, target, the request's end of the channel).
    transfer_waiters: Vec<(AlgorithmKind, NodeId, tokio::sync::oneshot::Sender<String>)>,
    /// The `term` health check fails (see [`Driver::check_terms`]).
    term_unhealthy: bool,
    /// The open state file (`[state] file`), if any.
    state_file: Option<durable::StateFile>,
    /// Some input (a datagram, timer firings, a command) since the last flush left
    /// the durable state holding more than adoptions (see [`Driver::adoptions_only`]).
    claimed: bool,
    /// A state holding more than adoptions (a vote, a claim, or a batch of several
    /// inputs) failed to be written and its datagrams are held back: until a write
    /// succeeds, nothing takes the adoption fast path, which would let them leave with
    /// the link's retransmissions.
    claim_unwritten: bool,
    /// What the status snapshot last published showed (see [`Driver::publish`]).
    published: Vec<StatusKey>,
    /// Whether the node was paused, and held a lease, at that publish.
    published_as: Option<(bool, bool)>,
    origin: Instant,
    origin_unix: f64,
    paused: bool,
    /// The latest time handed to the node: a batched heartbeat is never handed an
    /// earlier one.
    fed: std::cell::Cell<Time>,
    /// Both clocks when the last drain of the heartbeat socket started (nothing read
    /// later arrived before it).
    drained: heartbeats::Drain,
    /// The leaders whose heartbeats the kernel now selects: (group, leader, its
    /// incarnation, term).
    selected: Vec<(AlgorithmKind, NodeId, u64, u64)>,
    /// The kernel refused a selection: heartbeats are read at once from then on.
    batching_failed: bool,
    /// Drains of the heartbeat socket still to make although nothing is selected: a
    /// selection arms two (a datagram the kernel classified by the old program as it
    /// was replaced may land just after the next drain); a leader, which follows
    /// nobody, then skips the reads that would find nothing.
    beats_pending: u8,
    /// The peers' configuration digests, when this node sends its own
    /// ([`Shared::set_config_digest`]; see [`crate::daemon::drift`]).
    drift: Option<Drift>,
    /// When the next round of CONFIG datagrams to every peer is due.
    config_due: Time,
    /// Peers to send this node's CONFIG to at the next flush.
    config_out: Vec<NodeId>,
}

impl Driver {
    fn new(cfg: RuntimeConfig, shared: Arc<Shared>) -> Result<Driver, RuntimeError> {
        let mut node = Node::new(cfg.node_config(cfg.incarnation))?;
        // Fails at start, not at the first election, if the file cannot be written
        // (a missing or read-only directory).
        let (state_file, saved) = match &cfg.state_file {
            Some(path) => {
                let (f, saved) = durable::StateFile::open(path)?;
                (Some(f), saved)
            }
            None => (None, durable::Saved::default()),
        };
        node.restore(&saved.groups);
        // A drain holds until undrain, across restarts (docs/policy.md).
        for &kind in saved.drained.iter().filter(|k| cfg.algorithms.contains(k)) {
            node.set_ineligible(Time::ZERO, Some(kind), Ineligible::Drained, true);
            shared.metrics.set_drained(kind, true);
            tracing::warn!(
                node = cfg.id,
                algorithm = %kind,
                "drained (kept in the state file since the drain): this node will not lead \
                 the group until `electd undrain`"
            );
        }
        let stored = saved.groups;
        let stored_drained = saved.drained;
        let drift = shared.config_digest().map(|mine| {
            let peers: Vec<NodeId> = cfg
                .peers
                .iter()
                .map(|p| p.0)
                .filter(|&p| p != cfg.id)
                .collect();
            Drift::new(mine, peers)
        });
        let origin_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        Ok(Driver {
            gate: Gate::new(cfg.gate_config(false)),
            drops: DropLog::new(),
            errlog: DropLog::new(),
            send_failures: 0,
            bound: None,
            // Names that did not resolve at load have the unspecified address: none yet.
            peers: cfg
                .peers
                .iter()
                .copied()
                .filter(|p| !p.1.ip().is_unspecified())
                .collect(),
            multicast: None,
            resolver: Resolver::default(),
            incarnation: cfg.incarnation,
            node,
            stored,
            stored_drained,
            transfer_waiters: Vec::new(),
            term_unhealthy: false,
            state_file,
            claimed: false,
            claim_unwritten: false,
            published: Vec::new(),
            published_as: None,
            shared,
            origin: Instant::now(),
            origin_unix,
            paused: false,
            fed: std::cell::Cell::new(Time::ZERO),
            drained: heartbeats::Drain {
                now: Time::ZERO,
                wall: SystemTime::now(),
            },
            selected: Vec::new(),
            batching_failed: false,
            beats_pending: 0,
            drift,
            config_due: Time::ZERO,
            config_out: Vec::new(),
            cfg,
        })
    }

    /// Look up the names that are due: never resolved, failing, or older than the period.
    fn resolve_due(&mut self) {
        let r = &self.resolver;
        let due: Vec<NodeId> = r
            .names
            .keys()
            .copied()
            .filter(|id| {
                r.failing.contains(id)
                    || !self.peers.contains_key(id)
                    || r.last_ok.get(id).is_none_or(|t| t.elapsed() >= r.every)
            })
            .collect();
        for id in due {
            self.resolver.lookup(id);
        }
    }

    fn new_node(&self, incarnation: u64) -> Result<Node, crate::algorithms::BuildError> {
        let mut node = Node::new(self.cfg.node_config(incarnation))?;
        node.set_multicast(self.multicast.is_some());
        Ok(node)
    }

    /// The time handed to the node for what happens now (never before one handed
    /// earlier).
    fn now(&self) -> Time {
        let t = self.clock();
        self.fed.set(self.fed.get().max(t));
        t
    }

    /// The runtime's clock, without handing it to the node.
    fn clock(&self) -> Time {
        Instant::now().saturating_duration_since(self.origin)
    }

    fn deadline(&mut self) -> Instant {
        if self.paused {
            return Instant::now() + Duration::from_secs(3600);
        }
        let config = self.drift.as_ref().map(|_| self.config_due);
        match self.node.poll_timeout().into_iter().chain(config).min() {
            Some(t) => self.origin + t,
            None => Instant::now() + Duration::from_secs(3600),
        }
    }

    fn boot(&mut self) {
        let now = self.now();
        let electing = self.cfg.start == Start::Electing;
        tracing::info!(
            node = self.cfg.id,
            incarnation = self.incarnation,
            algorithms = ?self.cfg.algorithms,
            authenticated = self.gate.is_authenticated(),
            check_source = self.gate.checks_source(),
            "node started"
        );
        if let Some(t) = self.shared.tracer() {
            t.start(self.cfg.id, self.incarnation);
        }
        self.node.start(now, electing);
    }

    fn received(&mut self, r: io::Result<(usize, SocketAddr)>, buf: &[u8]) {
        self.received_at(r, buf, None)
    }

    /// [`Driver::received`], for a datagram that arrived at `at` (`None`: now).
    fn received_at(&mut self, r: io::Result<(usize, SocketAddr)>, buf: &[u8], at: Option<Time>) {
        let (n, from) = match r {
            Ok(x) => x,
            Err(e) => {
                // E.g. an ICMP error reported on the socket; never fatal.
                self.shared.metrics.error("receive");
                tracing::debug!("receive error: {e}");
                return;
            }
        };
        if self.paused {
            return;
        }
        match self
            .gate
            .open_with_config(&buf[..n], Some(from), unix_micros())
        {
            Ok((dg, Some(digest))) => self.config_heard(dg.from, dg.incarnation, digest),
            Ok((dg, None)) => {
                let now = match at {
                    Some(at) => at.max(self.fed.get()),
                    None => self.now(),
                };
                if let Some(t) = self.shared.tracer() {
                    t.received(self.cfg.id, &dg);
                }
                self.node.handle_datagram(now, dg);
                self.note_input();
            }
            Err(e) => self.dropped(e, from),
        }
    }

    /// Handle the datagrams already queued on the socket after the one just received,
    /// up to [`BATCH`], stopping early when a timer falls due (it then fires before
    /// the next datagram): the caller flushes once for the whole batch.
    /// Read up to one batch of datagrams already waiting, due timers or not.
    fn drain_pending<T: Transport>(&mut self, socket: &T, buf: &mut [u8]) {
        for _ in 0..BATCH {
            match socket.try_recv_from(buf) {
                Some(r) => self.received(r, buf),
                None => return,
            }
        }
    }

    fn drain_batch<T: Transport>(&mut self, socket: &T, buf: &mut [u8]) {
        for _ in 1..BATCH {
            if self.paused || self.node.poll_timeout().is_some_and(|t| t <= self.now()) {
                return;
            }
            match socket.try_recv_from(buf) {
                Some(r) => self.received(r, buf),
                None => return,
            }
        }
    }

    /// Read everything waiting in the heartbeat socket, oldest first, each as of the
    /// time it arrived (see [`crate::daemon::heartbeats`]). Bounded: the socket's
    /// buffer holds fewer datagrams than that.
    fn drain_heartbeats(&mut self, beats: &HeartbeatSocket, buf: &mut [u8]) {
        const MOST: usize = 16_384;
        // Not `now()`: that would hand this instant to the node ahead of the heartbeats
        // that arrived before it, and each of them would then be dated now.
        let cur = heartbeats::Drain {
            now: self.clock(),
            wall: SystemTime::now(),
        };
        let prev = std::mem::replace(&mut self.drained, cur);
        if self.selected.is_empty() {
            // Nothing selected: nothing arrived since `prev` either (so `cur` is a
            // true bound for the next drain).
            if self.beats_pending == 0 {
                return;
            }
            self.beats_pending -= 1;
        }
        for _ in 0..MOST {
            match beats.try_recv(buf) {
                None => return,
                Some(Ok(b)) => {
                    self.shared.metrics.heartbeat_batched();
                    let at = arrival(b.at, cur, prev);
                    self.received_at(Ok((b.len, b.from)), buf, Some(at));
                }
                Some(Err(e)) => {
                    // Counted; the rest is read at the next turn.
                    self.received(Err(e), buf);
                    return;
                }
            }
        }
    }

    /// Have the kernel select the heartbeats of the leaders now followed quietly
    /// (after a turn: a no-op unless they changed).
    fn select_heartbeats(&mut self, beats: &HeartbeatSocket) {
        if self.batching_failed {
            return;
        }
        let gate = &self.gate;
        let paused = self.paused;
        let want = || {
            self.node
                .quiet_heartbeats()
                .filter(move |_| !paused)
                .filter_map(|(kind, leader, term)| {
                    let inc = gate.incarnation_of(leader)?;
                    Some((kind, leader, inc, term))
                })
        };
        // Most turns change nothing: compare before collecting.
        if want().eq(self.selected.iter().copied()) {
            return;
        }
        let want: Vec<_> = want().collect();
        let patterns: Vec<Pattern> = want
            .iter()
            .map(|&(kind, leader, inc, term)| {
                let (prefix, compare) = gate.heartbeat_prefix(leader, inc, kind, term);
                Pattern::new(&prefix, &compare)
            })
            .collect();
        // What the selection before sent is still to read, and what this one sends.
        self.beats_pending = 2;
        match beats.select(&patterns) {
            Ok(()) => self.selected = want,
            Err(e) => {
                // From now on every datagram to the main socket, read at once: the
                // program before may select heartbeats that are no longer quiet.
                self.shared.metrics.error("heartbeat_select");
                let cleared = match beats.select(&[]) {
                    Ok(()) => String::new(),
                    Err(e) => format!(
                        " (nor could the previous selection be removed: {e}; what it \
                         selects is still read at the start of every turn)"
                    ),
                };
                tracing::error!(
                    node = self.cfg.id,
                    "cannot select heartbeats ({e}); they are read one by one from now on{cleared}"
                );
                self.batching_failed = true;
                self.selected.clear();
            }
        }
    }

    /// Count a refused datagram and log it, at a rate bounded per reason.
    fn dropped(&mut self, e: Dropped, from: SocketAddr) {
        if !e.is_counted() {
            return;
        }
        let reason = e.reason();
        self.shared.metrics.invalid_datagram(reason);
        match self.drops.record(reason, self.now()) {
            Verdict::Quiet => {}
            Verdict::Log => {
                tracing::warn!(node = self.cfg.id, %from, reason, "dropped datagram: {e}")
            }
            Verdict::Summary(n) => tracing::warn!(
                node = self.cfg.id,
                %from,
                reason,
                "dropped datagram: {e} ({n} more dropped for reason {reason} since the last report)"
            ),
        }
    }

    fn timeout(&mut self) {
        let now = self.now();
        if let Some(t) = self.shared.tracer() {
            t.timers(self.cfg.id, &self.node.due_timers(now));
        }
        self.node.handle_timeout(now);
        self.note_input();
        if let Some(drift) = &self.drift {
            if now >= self.config_due {
                self.config_out = drift.peers().collect();
                self.config_due = now + CONFIG_EVERY;
            }
        }
        for (reason, n) in self.drops.flush(now) {
            tracing::warn!(
                node = self.cfg.id,
                reason,
                "{n} more datagrams dropped for reason {reason} since the last report"
            );
        }
    }

    fn control(&mut self, c: Control) {
        match c {
            Control::Elect(kind, reply) => {
                let ok = !self.paused && self.node.call_election(self.now(), kind);
                let _ = reply.send(ok);
            }
            Control::Pause if !self.paused => {
                tracing::info!(node = self.cfg.id, "paused: all traffic stopped");
                if let Some(t) = self.shared.tracer() {
                    t.crash(self.cfg.id);
                }
                self.shared.metrics.sync(&self.node);
                self.node.discard_events();
                let _ = self.node.drain_transmits().count();
                let _ = self.node.drain_multicasts().count();
                self.paused = true;
                self.shared.set_paused(true);
                for s in self.node.status() {
                    if s.leader.is_some() {
                        self.shared
                            .emit(LeaderEvent::new(self.cfg.id, s.algorithm, None, s.term));
                    }
                }
            }
            Control::Resume if self.paused => {
                // A restarted process: a new node, a higher incarnation, an election.
                let next = incarnation_now().max(self.incarnation + 1);
                match self.new_node(next) {
                    Ok(mut node) => {
                        // Raft's term and vote survive a restart (§5.2, Figure 2).
                        node.restore(&self.node.durable());
                        // So do the operator's drain and a failing check's FAULT (the
                        // quorum and transfer reasons belong to the old life).
                        let now = self.now();
                        for &kind in &self.cfg.algorithms {
                            for why in self.node.ineligible(kind).unwrap_or_default() {
                                if matches!(why, Ineligible::Drained | Ineligible::Fault) {
                                    node.set_ineligible(now, Some(kind), why, true);
                                }
                            }
                            node.set_penalty(now, Some(kind), self.node.penalty(kind));
                        }
                        self.incarnation = next;
                        self.node = node;
                        // A new life tells every peer its configuration digest again.
                        self.config_due = self.now();
                        self.shared.metrics.rebase();
                        self.paused = false;
                        self.shared.set_paused(false);
                        tracing::info!(node = self.cfg.id, incarnation = next, "resumed");
                        if let Some(t) = self.shared.tracer() {
                            t.start(self.cfg.id, next);
                        }
                        let now = self.now();
                        self.node.start(now, true);
                    }
                    // Cannot happen: the same configuration built the first node.
                    Err(e) => tracing::error!("cannot rebuild the node on resume: {e}"),
                }
            }
            Control::Keys(keys) => {
                if self.gate.is_authenticated() {
                    tracing::info!(
                        node = self.cfg.id,
                        primary = format_args!("{:#010x}", keys.primary().id),
                        keys = keys.len(),
                        "keyring reloaded"
                    );
                    self.cfg.keys = Some(keys);
                    self.gate.set_keys(self.cfg.keys.clone());
                    // The heartbeats to select now carry the new primary key's id.
                    self.selected.clear();
                } else {
                    tracing::warn!(
                        node = self.cfg.id,
                        "key reload ignored: this node runs insecure; restart it to enable authentication"
                    );
                }
            }
            Control::Drain {
                algorithm,
                on,
                reply,
            } => {
                let now = self.now();
                let changed = self
                    .node
                    .set_ineligible(now, algorithm, Ineligible::Drained, on);
                for &kind in &self.cfg.algorithms {
                    if algorithm.is_none_or(|a| a == kind) {
                        self.shared.metrics.set_drained(kind, on);
                    }
                }
                // On disk before the answer: a drain survives a restart.
                self.persist_drains();
                tracing::info!(
                    node = self.cfg.id,
                    groups = changed,
                    algorithm = algorithm.map_or("all", |a| a.as_str()),
                    "{} through the admin API",
                    if on { "drained" } else { "undrained" }
                );
                let t = &self.cfg.timing;
                let _ = reply.send(
                    t.failure_timeout
                        + t.election_timeout_max
                        + t.answer_timeout
                        + t.coordinator_timeout,
                );
            }
            Control::Fault { algorithm, on } => {
                let now = self.now();
                let before: Vec<(AlgorithmKind, bool)> = self
                    .cfg
                    .algorithms
                    .iter()
                    .map(|&k| (k, self.in_fault(k)))
                    .collect();
                self.node
                    .set_ineligible(now, algorithm, Ineligible::Fault, on);
                for (kind, was) in before {
                    let is = self.in_fault(kind);
                    self.shared.metrics.set_fault(kind, is);
                    if was == is {
                        continue;
                    }
                    tracing::warn!(
                        node = self.cfg.id,
                        algorithm = %kind,
                        "{}",
                        if is {
                            "FAULT: a health check fails; this node may not lead the group"
                        } else {
                            "health checks pass again; this node may lead the group"
                        }
                    );
                    // Tell /watch and the hooks (state fault / follower) even when the
                    // leader does not change (a follower going into FAULT).
                    if let Some(s) = self.node.group_status(kind) {
                        let mut ev = LeaderEvent::new(self.cfg.id, kind, s.leader, s.term);
                        ev.fault = is;
                        self.shared.emit(ev);
                    }
                }
            }
            Control::Transfer {
                algorithm,
                to,
                reply,
            } => {
                let now = self.now();
                let answer = if self.paused {
                    Err("the node is paused".to_string())
                } else {
                    self.node.transfer(now, algorithm, to)
                };
                let answer = match answer {
                    Ok(bound) => {
                        tracing::info!(node = self.cfg.id, %algorithm, to, "leadership transfer started");
                        let (tx, refused) = tokio::sync::oneshot::channel();
                        self.transfer_waiters.retain(|w| w.0 != algorithm);
                        self.transfer_waiters.push((algorithm, to, tx));
                        Ok(TransferStarted { bound, refused })
                    }
                    Err(why) => {
                        tracing::warn!(node = self.cfg.id, %algorithm, to, "leadership transfer refused: {why}");
                        Err(why)
                    }
                };
                let _ = reply.send(answer);
            }
            Control::Penalty { algorithm, penalty } => {
                let now = self.now();
                if self.node.set_penalty(now, algorithm, penalty) > 0 {
                    tracing::warn!(
                        node = self.cfg.id,
                        algorithm = algorithm.map_or("all", |a| a.as_str()),
                        penalty,
                        "priority lowered by weighted health checks (0: restored)"
                    );
                }
                for &kind in &self.cfg.algorithms {
                    if algorithm.is_none_or(|a| a == kind) {
                        self.shared.metrics.set_penalty(kind, penalty);
                    }
                }
            }
            Control::Pause | Control::Resume => {}
        }
    }

    /// Is this node in FAULT (a failing health check) in `kind`'s group?
    fn in_fault(&self, kind: AlgorithmKind) -> bool {
        self.node
            .ineligible(kind)
            .is_some_and(|r| r.contains(&Ineligible::Fault))
    }

    /// Whether every change of the durable state since the last write is a follower
    /// adopting another node's leadership outside Raft (its token, `voted_for` naming
    /// that leader): a record of what it was told, not a promise of its own, which its
    /// datagrams (acks, a ring's forwarded announcement) do not depend on. Raft's term
    /// and vote, and a node's own claim (`voted_for` itself, or a term without a
    /// leader: an election it numbers), are written before anything leaves. A crash
    /// between the send and the write is the crash before the datagram arrived, as far
    /// as the token goes: it was reported nowhere yet. At 64 processes on two cores
    /// the followers' writes before their acks were most of the time a COORDINATOR
    /// took to reach everyone, and on a ring each hop's write delayed the next hop.
    /// A batch may hold several inputs, and a claim made by one and replaced by an
    /// adoption in the next would look like an adoption at the end of it: so every
    /// input is looked at ([`Driver::note_input`]). A claim whose write failed, and
    /// whose datagrams wait for retransmission, blocks this until a write succeeds; an
    /// adoption whose write failed holds nothing back (a ring member with a broken
    /// disk still forwards the next announcement).
    fn adoptions_only(&self, now: &[(AlgorithmKind, Durable)]) -> bool {
        !self.claimed
            && !self.claim_unwritten
            && now.iter().all(|(kind, d)| !self.is_claim(*kind, d))
    }

    /// Whether `d`, group `kind`'s durable state, changed since the last write into
    /// something other than a follower's adoption of another node (see
    /// [`Driver::adoptions_only`]).
    fn is_claim(&self, kind: AlgorithmKind, d: &Durable) -> bool {
        let adoption = !kind.info().durable_vote && d.voted_for.is_some_and(|l| l != self.cfg.id);
        !adoption && !self.stored.iter().any(|s| s.0 == kind && s.1 == *d)
    }

    /// After each input: remember whether it left a claim in the durable state.
    fn note_input(&mut self) {
        if self.state_file.is_none() || self.claimed {
            return;
        }
        let mut claimed = false;
        self.node
            .each_durable(|kind, d| claimed |= self.is_claim(kind, &d));
        self.claimed = claimed;
    }

    /// Write `now`, the node's durable state, if it changed since the last write. If it
    /// could not be written, the caller sends nothing of the affected groups (a vote
    /// must be on disk before it is sent); their reliable messages go out later with
    /// the link's retransmissions, after the next successful write.
    /// Returns the groups whose new state is not on disk (empty when all is written).
    fn persist(&mut self, now: Vec<(AlgorithmKind, Durable)>) -> Vec<AlgorithmKind> {
        if self.state_file.is_none() {
            return Vec::new();
        }
        let drained = self.drained_now();
        let Some(file) = &mut self.state_file else {
            return Vec::new();
        };
        if now == self.stored && drained == self.stored_drained {
            self.claim_unwritten = false;
            return Vec::new();
        }
        match file.store(&now, &drained) {
            Ok(()) => {
                self.claim_unwritten = false;
                self.stored = now;
                self.stored_drained = drained;
                if self.shared.problems().iter().any(|p| p.0 == "persist") {
                    tracing::info!(node = self.cfg.id, "durable state written again");
                    self.shared.set_problem("persist", None);
                }
                Vec::new()
            }
            Err(e) => {
                self.shared.metrics.error("state_write");
                self.shared
                    .set_problem("persist", Some(format!("cannot write the state file: {e}")));
                let changed: Vec<AlgorithmKind> = now
                    .iter()
                    .filter(|n| !self.stored.contains(n))
                    .map(|n| n.0)
                    .collect();
                self.log_error(
                    "state_write",
                    &format!(
                        "durable state not written, holding back the datagrams of {changed:?}: {e}"
                    ),
                );
                changed
            }
        }
    }

    /// The groups this node is drained in now.
    fn drained_now(&self) -> Vec<AlgorithmKind> {
        self.node.drained().collect()
    }

    /// Write the drained groups (with the durable state as last written) at once, if
    /// they changed: a drain holds across restarts (see [`durable`]). Without a state
    /// file a drain lasts as long as the process, and the log says so.
    fn persist_drains(&mut self) {
        let drained = self.drained_now();
        if drained == self.stored_drained {
            return;
        }
        let Some(file) = &mut self.state_file else {
            if !drained.is_empty() {
                tracing::warn!(
                    node = self.cfg.id,
                    "drained, but without a state file ([state] file) the drain ends when \
                     this process stops"
                );
            }
            self.stored_drained = drained;
            return;
        };
        match file.store(&self.stored, &drained) {
            Ok(()) => self.stored_drained = drained,
            Err(e) => {
                self.shared.metrics.error("state_write");
                self.shared
                    .set_problem("persist", Some(format!("cannot write the state file: {e}")));
                self.log_error(
                    "state_write",
                    &format!("the drain is not on disk and would not survive a restart: {e}"),
                );
            }
        }
    }

    /// Log an error line of `class` at a bounded rate ([`crate::security::droplog`]'s buckets):
    /// a failure that repeats every batch writes a few lines a minute, with the count
    /// of the lines left out.
    fn log_error(&mut self, class: &'static str, line: &str) {
        match self.errlog.record(class, self.now()) {
            Verdict::Quiet => {}
            Verdict::Log => tracing::error!(node = self.cfg.id, class, "{line}"),
            Verdict::Summary(n) => tracing::error!(
                node = self.cfg.id,
                class,
                "{line} ({n} more like it since the last report)"
            ),
        }
    }

    /// The `roster` health check: every peer's current address is of a family the
    /// bound socket can send to (a name may resolve to one it cannot).
    fn check_roster(&mut self) {
        let Some(bound) = self.bound else { return };
        let mut bad: Vec<String> = self
            .peers
            .iter()
            .filter(|(id, a)| **id != self.cfg.id && !crate::config::reachable_from(bound, **a))
            .map(|(id, a)| format!("peer {id} at {a}"))
            .collect();
        bad.sort();
        let why = (!bad.is_empty()).then(|| {
            format!(
                "this node's socket {bound} cannot send to {} (another address family)",
                bad.join(", ")
            )
        });
        if let Some(w) = &why {
            self.log_error("roster", w);
        }
        self.shared.set_problem("roster", why);
    }

    async fn flush<T: Transport>(&mut self, socket: &T) {
        self.send_configs(socket).await;
        let now = if self.state_file.is_some() {
            self.node.durable()
        } else {
            Vec::new()
        };
        let fast = now == self.stored || self.adoptions_only(&now);
        self.claimed = false;
        if fast {
            // Nothing to write, or nothing this node promises (see `adoptions_only`):
            // the datagrams leave at once, the write (if any) follows, and only then do
            // status, /watch, hooks and metrics report the token (a failed write holds
            // nothing back: the next successful one catches up, and the problem is
            // reported meanwhile).
            let transmits: Vec<(NodeId, Datagram)> = self.node.drain_transmits().collect();
            let multicasts: Vec<Datagram> = self.node.drain_multicasts().collect();
            self.send_all(socket, transmits, multicasts).await;
            self.persist(now);
            self.after_send();
            return;
        }
        let held = self.persist(now);
        if !held.is_empty() {
            self.claim_unwritten = true;
            // A vote must be on disk before it is sent: nothing of these groups leaves
            // (reliable messages go out later with the link's retransmissions).
            let mine = |d: &Datagram| d.group.is_some_and(|g| held.contains(&g));
            let keep: Vec<(NodeId, Datagram)> = self
                .node
                .drain_transmits()
                .filter(|(_, d)| !mine(d))
                .collect();
            let keep_m: Vec<Datagram> = self.node.drain_multicasts().filter(|d| !mine(d)).collect();
            self.send_all(socket, keep, keep_m).await;
        } else {
            let transmits: Vec<(NodeId, Datagram)> = self.node.drain_transmits().collect();
            let multicasts: Vec<Datagram> = self.node.drain_multicasts().collect();
            self.send_all(socket, transmits, multicasts).await;
        }
        self.after_send();
    }

    /// A CONFIG from `peer` (docs/wire.md §11): record it, answer the first of the
    /// peer's incarnation, and report a change (gauge, `/status`, one log line).
    fn config_heard(&mut self, peer: NodeId, incarnation: u64, digest: u64) {
        let Some(drift) = &mut self.drift else {
            return;
        };
        let theirs = ConfigDigest(digest);
        let heard = drift.heard(peer, incarnation, theirs);
        if heard.answer && !self.config_out.contains(&peer) {
            self.config_out.push(peer);
        }
        if heard.new {
            self.shared.publish_config(drift.view());
        }
        let Some(mismatch) = heard.changed else {
            return;
        };
        let mine = drift.mine();
        self.shared.metrics.set_config_mismatch(peer, mismatch);
        if mismatch {
            tracing::warn!(
                node = self.cfg.id,
                peer,
                digest = %mine,
                peer_digest = %theirs,
                "configuration drift: peer {peer} runs with another configuration (digest \
                 {theirs}, this node's {mine}): compare the roster, [timing], [policy], \
                 [lease], [raft] and algorithms of both files"
            );
        } else {
            tracing::info!(
                node = self.cfg.id,
                peer,
                digest = %mine,
                "configuration drift ended: peer {peer} runs with this node's configuration again"
            );
        }
    }

    /// Send this node's CONFIG to the peers queued for it.
    async fn send_configs<T: Transport>(&mut self, socket: &T) {
        let Some(drift) = &self.drift else {
            return;
        };
        if self.config_out.is_empty() || self.paused {
            return;
        }
        let mine = drift.mine().0;
        for to in std::mem::take(&mut self.config_out) {
            let Some(&addr) = self.peers.get(&to) else {
                self.shared.metrics.send_error("no_address");
                continue;
            };
            match self
                .gate
                .seal_config(to, self.cfg.id, self.incarnation, mine)
            {
                Ok(bytes) => {
                    self.send_sealed(socket, &bytes, addr, to).await;
                }
                Err(e) => self.shared.metrics.send_error(e.reason()),
            }
        }
    }

    async fn send_all<T: Transport>(
        &mut self,
        socket: &T,
        transmits: Vec<(NodeId, Datagram)>,
        multicasts: Vec<Datagram>,
    ) {
        for (to, dg) in &transmits {
            self.transmit(socket, *to, dg).await;
        }
        if let Some(group) = self.multicast {
            for dg in &multicasts {
                self.send_bytes(socket, dg, group, 0).await;
            }
        }
    }

    /// Tell the requests waiting on a transfer that its target refused it; forget the
    /// waiters of transfers that are over.
    fn settle_transfer_waiters(&mut self) {
        for (kind, by) in self.node.take_transfer_refusals() {
            let why = format!(
                "node {by} refused the hand-over: it may not lead {kind} now (drained, or \
                 failing a health check; its /status lists why under `ineligible`); this \
                 node leads on"
            );
            tracing::warn!(node = self.cfg.id, algorithm = %kind, to = by, "leadership transfer refused by its target");
            if let Some(i) = self
                .transfer_waiters
                .iter()
                .position(|w| w.0 == kind && w.1 == by)
            {
                let (_, _, tx) = self.transfer_waiters.swap_remove(i);
                let _ = tx.send(why);
            }
        }
        if !self.transfer_waiters.is_empty() {
            let node = &self.node;
            self.transfer_waiters.retain(|w| {
                !w.2.is_closed()
                    && node
                        .ineligible(w.0)
                        .is_some_and(|r| r.contains(&Ineligible::Transfer))
            });
        }
    }

    /// The `term` health check: every group's term within its peers' reach (see
    /// [`Node::terms_out_of_reach`]).
    fn check_terms(&mut self) {
        let far = self.node.terms_out_of_reach();
        if far.is_empty() {
            if std::mem::take(&mut self.term_unhealthy) {
                tracing::info!(
                    node = self.cfg.id,
                    "every group's term is within its peers' reach again"
                );
                self.shared.set_problem("term", None);
            }
            return;
        }
        let what: Vec<String> = far
            .iter()
            .map(|(kind, mine, peer, theirs)| {
                format!("{kind} term {mine} is more than 2^31 above node {peer}'s ({theirs})")
            })
            .collect();
        let why = format!(
            "{}: the peers drop this node's datagrams (future_epoch), so it takes part in \
             no election; its state file was damaged or edited: stop it, set the term to \
             the cluster's or move the file away",
            what.join("; ")
        );
        self.log_error("term", &why);
        self.shared.set_problem("term", Some(why));
        self.term_unhealthy = true;
    }

    fn after_send(&mut self) {
        self.settle_transfer_waiters();
        self.check_terms();
        let unreachable: Vec<NodeId> = self.node.drain_unreachable().collect();
        for id in unreachable {
            if self.resolver.names.contains_key(&id) {
                tracing::debug!(peer = id, "unreachable: looking its name up again");
                self.resolver.lookup(id);
            }
        }
        let events: Vec<Event> = self.node.drain_events().collect();
        let now = self.now();
        if let Some(t) = self.shared.tracer() {
            t.decided(self.cfg.id, &self.node, &events);
        }
        self.shared.metrics.sync_at(&self.node, now);
        self.publish();
        let metrics = &self.shared.metrics;
        for e in &events {
            metrics.observe(e);
            if let Event::LeaderChanged {
                group,
                leader,
                term,
                ..
            } = *e
            {
                tracing::info!(node = self.cfg.id, algorithm = %group, ?leader, term, "leader changed");
                let mut ev = LeaderEvent::new(self.cfg.id, group, leader, term);
                ev.fault = self.in_fault(group);
                self.shared.emit(ev);
            }
            if let Event::Failover {
                group,
                from,
                to,
                total,
                ..
            } = *e
            {
                tracing::info!(node = self.cfg.id, algorithm = %group, from, to, failover_ms = total.as_secs_f64() * 1e3, "failover");
            }
        }
    }

    async fn transmit<T: Transport>(&mut self, socket: &T, to: NodeId, dg: &Datagram) {
        let metrics = &self.shared.metrics;
        let Some(&addr) = self.peers.get(&to) else {
            metrics.send_error("no_address");
            return;
        };
        if let Some(t) = self.shared.tracer() {
            t.sent(self.cfg.id, to, dg);
        }
        self.send_bytes(socket, dg, addr, to).await;
    }

    /// Encode and send one datagram to `addr` (`to` = 0 for the multicast group).
    async fn send_bytes<T: Transport>(
        &mut self,
        socket: &T,
        dg: &Datagram,
        addr: SocketAddr,
        to: NodeId,
    ) {
        let bytes = match self.gate.seal(to, dg) {
            Ok(b) => b,
            Err(e) => {
                self.shared.metrics.send_error(e.reason());
                return;
            }
        };
        let n = bytes.len();
        if self.send_sealed(socket, &bytes, addr, to).await {
            if let Some(g) = dg.group {
                self.shared.metrics.group_datagram_sent(g, n);
            }
        }
    }

    /// Send encoded `bytes` to `addr` (`to` = 0 for the multicast group); whether the
    /// send succeeded.
    async fn send_sealed<T: Transport>(
        &mut self,
        socket: &T,
        bytes: &[u8],
        addr: SocketAddr,
        to: NodeId,
    ) -> bool {
        let metrics = &self.shared.metrics;
        // A dual-stack socket reaches IPv4 peers by their IPv4-mapped address.
        let addr = match (self.bound, addr) {
            (Some(SocketAddr::V6(_)), SocketAddr::V4(v4)) => {
                SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port())
            }
            _ => addr,
        };
        match socket.send_to(bytes, addr).await {
            Ok(n) => {
                metrics.datagram_sent(n);
                if self.send_failures >= SEND_FAILURE_STREAK {
                    tracing::info!(node = self.cfg.id, "sending works again");
                    self.shared.set_problem("send", None);
                }
                self.send_failures = 0;
                true
            }
            Err(e) => {
                metrics.send_error(send_error_kind(&e));
                self.send_failures = self.send_failures.saturating_add(1);
                if self.send_failures == SEND_FAILURE_STREAK {
                    self.shared.set_problem(
                        "send",
                        Some(format!(
                            "the last {SEND_FAILURE_STREAK} sends failed, the last to {addr}: {e}"
                        )),
                    );
                }
                self.log_error("send", &format!("send to {to} ({addr}) failed: {e}"));
                false
            }
        }
    }

    /// Republish the status snapshot if anything it shows changed (a held lease
    /// always does: its end moves with every answer; so does the first publish
    /// after one).
    fn publish(&mut self) {
        let now = self.now();
        let mut leased = false;
        for kind in self.node.algorithms() {
            leased |= self.node.lease(kind, now).is_some_and(|d| !d.is_zero());
        }
        let same = !leased
            && self.published_as == Some((self.paused, false))
            && self.published.len() == self.node.algorithms().count()
            && self
                .node
                .status_keys()
                .zip(&self.published)
                .all(|(a, b)| a == *b);
        if same {
            return;
        }
        self.published.clear();
        self.published.extend(self.node.status_keys());
        self.published_as = Some((self.paused, leased));
        let groups = self
            .node
            .status()
            .iter()
            .map(|s| {
                let mut v = GroupView::from_status(s, self.origin_unix);
                v.lease = match self.node.lease(s.algorithm, now) {
                    None => Lease::None,
                    Some(left) => Lease::Until(std::time::Instant::now() + left),
                };
                if self.paused {
                    if v.lease != Lease::None {
                        v.lease = Lease::Until(std::time::Instant::now());
                    }
                    v.state = "paused";
                    v.leader = None;
                    v.electing = false;
                }
                v
            })
            .collect();
        self.shared.publish_status(groups);
    }

    /// Graceful leave: resign every group this node leads and wait (bounded by the
    /// link's give-up time) until the resignations are acknowledged. Nothing else is
    /// delivered or sent meanwhile: this node must not take part in the election its
    /// resignation starts.
    async fn leave<T: Transport>(&mut self, socket: &T, buf: &mut [u8]) {
        if self.paused {
            return;
        }
        let now = self.now();
        let led: Vec<_> = self
            .node
            .status()
            .into_iter()
            .filter(|s| s.leader == Some(self.cfg.id))
            .collect();
        let resigned = self.node.resign(now);
        self.send_resignations(socket).await;
        self.shared.metrics.sync(&self.node);
        for s in &led {
            self.shared
                .emit(LeaderEvent::new(self.cfg.id, s.algorithm, None, s.term));
        }
        if resigned == 0 {
            return;
        }
        tracing::info!(
            node = self.cfg.id,
            groups = resigned,
            "resigned; waiting for acks"
        );
        let until = Instant::now() + self.cfg.link.give_up_after();
        while self.node.in_flight() > 0 && Instant::now() < until {
            let next = self.deadline().min(until);
            tokio::select! {
                r = socket.recv_from(buf) => {
                    if let Ok((n, from)) = r {
                        // Acks only: bodies are not for a node that is leaving.
                        if let Ok((dg, None)) = self.gate.open_with_config(&buf[..n], Some(from), unix_micros()) {
                            if dg.body.is_none() {
                                let now = self.now();
                                self.node.handle_datagram(now, dg);
                            }
                        }
                    }
                }
                _ = tokio::time::sleep_until(next) => {
                    let now = self.now();
                    self.node.handle_timeout(now);
                }
            }
            self.send_resignations(socket).await;
        }
        self.shared.metrics.sync(&self.node);
    }

    async fn send_resignations<T: Transport>(&mut self, socket: &T) {
        self.node.discard_events();
        let resign = |d: &Datagram| matches!(d.body, Some(Message::Resign { .. }));
        let group_out: Vec<Datagram> = self.node.drain_multicasts().filter(resign).collect();
        if let Some(group) = self.multicast {
            for dg in &group_out {
                self.send_bytes(socket, dg, group, 0).await;
            }
        }
        let out: Vec<(NodeId, Datagram)> = self
            .node
            .drain_transmits()
            .filter(|(_, d)| resign(d))
            .collect();
        for (to, dg) in &out {
            self.transmit(socket, *to, dg).await;
        }
    }
}
