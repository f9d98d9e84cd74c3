//! The runtime of one node: one task drives one sans-IO [`Node`] (every configured
//! algorithm as an independent group) over one datagram socket.
//!
//! # Contract
//! - One socket, one task, one deadline table ([`Node::poll_timeout`]) and one tokio
//!   `Sleep` reset to the next deadline after every batch of work (the quinn pattern).
//! - The socket and the shutdown signal are passed in ([`run`], the mini-redis
//!   pattern), and the socket is anything implementing [`Transport`]: real UDP in
//!   `electd run` and the demo, turmoil's simulated UDP in the tests.
//! - Every datagram goes out through [`Gate::seal`] and comes in through
//!   [`Gate::open`] (authentication, receiver, source address, replay window; see
//!   [`crate::gate`]). The gate outlives pause/resume, so its replay windows do too.
//! - Nothing from the network is fatal: invalid datagrams are dropped and counted
//!   (`electd_invalid_datagrams_total{reason}`) and logged at a bounded rate
//!   ([`crate::droplog`]), send errors are counted
//!   (`electd_send_errors_total{kind}`) and survived; the reliable link retransmits.
//! - Batches: after a datagram arrives, those already queued on the socket are handled
//!   too (up to [`BATCH`]), then everything is flushed once: datagrams sent, metrics
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

use crate::algorithm::{AlgorithmKind, Durable, Options, Timing};
use crate::config::{Config, Security};
use crate::daemon::durable;
use crate::daemon::shared::{Control, GroupView, LeaderEvent, Shared};
use crate::daemon::socket::{send_error_kind, Transport};
use crate::droplog::{DropLog, Verdict};
use crate::gate::{Dropped, Gate, GateConfig};
use crate::keyring::Keyring;
use crate::message::Message;
use crate::node::link::LinkConfig;
use crate::node::{Datagram, Event, Node, NodeConfig, Time};
use crate::wire::MAX_DATAGRAM;
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
    pub id: NodeId,
    pub cluster: String,
    /// Roster in ring order with each member's UDP address.
    pub peers: Vec<(NodeId, SocketAddr)>,
    pub algorithms: Vec<AlgorithmKind>,
    pub timing: Timing,
    pub options: Options,
    pub link: LinkConfig,
    /// `None` only with `insecure = true`.
    pub keys: Option<Keyring>,
    /// Boot id; see [`incarnation_now`].
    pub incarnation: u64,
    pub start: Start,
    /// Where durable algorithm state (Raft's term and vote) is kept across restarts.
    pub state_file: Option<std::path::PathBuf>,
    /// Allowed UDP source addresses per roster id (`[security] check_source`);
    /// `None` accepts any source.
    pub sources: Option<HashMap<NodeId, Vec<SocketAddr>>>,
}

impl RuntimeConfig {
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
pub fn unix_micros() -> u64 {
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
}

impl NetOptions {
    /// The DNS part from a configuration (multicast needs the bound socket: see
    /// [`crate::daemon::socket::join_multicast`]).
    pub fn from_config(c: &Config) -> NetOptions {
        NetOptions {
            multicast: None,
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

/// Most datagrams handled between two flushes (sends, metrics, status, events).
const BATCH: usize = 64;

/// How long one DNS lookup may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);
/// Retry period of a name that did not resolve.
const RETRY_UNRESOLVED: Duration = Duration::from_secs(1);

/// The runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot build the node: {0}")]
    Build(#[from] crate::algorithms::BuildError),
    #[error("cannot read the durable state: {0}")]
    Durable(#[from] crate::daemon::durable::DurableError),
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
    let v4_only = socket.local_addr().map(|a| a.is_ipv4()).unwrap_or(false);
    let (resolved_tx, mut resolved_rx) = mpsc::channel(64);
    let mut d = Driver::new(cfg, shared)?;
    d.multicast = net.multicast.as_ref().map(|m| m.0);
    d.node.set_multicast(d.multicast.is_some());
    d.gate.set_group(d.multicast.is_some());
    d.resolver = Resolver::new(&net, v4_only, resolved_tx);
    let has_names = !d.resolver.names.is_empty();
    d.resolve_due();
    d.boot();
    d.flush(&socket).await;
    let mut buf = vec![0u8; MAX_DATAGRAM + 1];
    let mut gbuf = vec![0u8; MAX_DATAGRAM + 1];
    let sleep = tokio::time::sleep_until(d.deadline());
    tokio::pin!(sleep);
    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(RETRY_UNRESOLVED);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut control_open = true;
    loop {
        tokio::select! {
            biased;
            _ = &mut shutdown => break,
            c = control.recv(), if control_open => match c {
                Some(c) => d.control(c),
                None => control_open = false,
            },
            // Due timers first: a leader's heartbeats go out on time however full
            // the socket is.
            _ = &mut sleep, if !d.paused => d.timeout(),
            r = socket.recv_from(&mut buf) => {
                d.received(r, &buf);
                d.drain_batch(&socket, &mut buf);
            }
            r = recv_group(group_socket.as_ref(), &mut gbuf) => d.received(r, &gbuf),
            Some((id, r)) = resolved_rx.recv() => {
                // Accept the peer's datagrams from where its name points now.
                if let Some(addr) = r {
                    d.gate.set_sources(id, vec![addr]);
                }
                d.resolver.resolved(id, r, &mut d.peers)
            }
            _ = tick.tick(), if has_names => d.resolve_due(),
        }
        d.flush(&socket).await;
        sleep.as_mut().reset(d.deadline());
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
    peers: HashMap<NodeId, SocketAddr>,
    node: Node,
    incarnation: u64,
    /// Durable state as last written to `cfg.state_file`.
    stored: Vec<(AlgorithmKind, Durable)>,
    origin: Instant,
    origin_unix: f64,
    paused: bool,
}

impl Driver {
    fn new(cfg: RuntimeConfig, shared: Arc<Shared>) -> Result<Driver, RuntimeError> {
        let mut node = Node::new(cfg.node_config(cfg.incarnation))?;
        let stored = match &cfg.state_file {
            Some(path) => durable::load(path)?,
            None => Vec::new(),
        };
        node.restore(&stored);
        let origin_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        Ok(Driver {
            gate: Gate::new(cfg.gate_config(false)),
            drops: DropLog::new(),
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
            shared,
            origin: Instant::now(),
            origin_unix,
            paused: false,
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

    fn now(&self) -> Time {
        Instant::now().saturating_duration_since(self.origin)
    }

    fn deadline(&mut self) -> Instant {
        match self.node.poll_timeout() {
            Some(t) if !self.paused => self.origin + t,
            _ => Instant::now() + Duration::from_secs(3600),
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
        self.node.start(now, electing);
    }

    fn received(&mut self, r: io::Result<(usize, SocketAddr)>, buf: &[u8]) {
        let (n, from) = match r {
            Ok(x) => x,
            Err(e) => {
                // E.g. an ICMP error reported on the socket; never fatal.
                tracing::debug!("receive error: {e}");
                return;
            }
        };
        if self.paused {
            return;
        }
        match self.gate.open(&buf[..n], Some(from), unix_micros()) {
            Ok(dg) => {
                let now = self.now();
                self.node.handle_datagram(now, dg);
            }
            Err(e) => self.dropped(e, from),
        }
    }

    /// Handle the datagrams already queued on the socket after the one just received,
    /// up to [`BATCH`], stopping early when a timer falls due (it then fires before
    /// the next datagram): the caller flushes once for the whole batch.
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
        self.node.handle_timeout(now);
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
                        self.incarnation = next;
                        self.node = node;
                        self.shared.metrics.rebase();
                        self.paused = false;
                        self.shared.set_paused(false);
                        tracing::info!(node = self.cfg.id, incarnation = next, "resumed");
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
                } else {
                    tracing::warn!(
                        node = self.cfg.id,
                        "key reload ignored: this node runs insecure; restart it to enable authentication"
                    );
                }
            }
            Control::Pause | Control::Resume => {}
        }
    }

    /// Put the node's datagrams on the wire, then publish metrics, status and events.
    /// Write the durable state if it changed. False if it could not be written: then
    /// nothing of this step may leave the node (a vote must be on disk before it is
    /// sent); reliable messages go out later with the link's retransmissions, after the
    /// next successful write.
    fn persist(&mut self) -> bool {
        let Some(path) = &self.cfg.state_file else {
            return true;
        };
        let now = self.node.durable();
        if now == self.stored {
            return true;
        }
        match durable::store(path, &now) {
            Ok(()) => {
                self.stored = now;
                true
            }
            Err(e) => {
                tracing::error!(
                    node = self.cfg.id,
                    "durable state not written, holding back datagrams: {e}"
                );
                self.shared.metrics.send_error("state_not_persisted");
                false
            }
        }
    }

    async fn flush<T: Transport>(&mut self, socket: &T) {
        if !self.persist() {
            let _ = self.node.drain_transmits().count();
            let _ = self.node.drain_multicasts().count();
        }
        let transmits: Vec<(NodeId, Datagram)> = self.node.drain_transmits().collect();
        for (to, dg) in &transmits {
            self.transmit(socket, *to, dg).await;
        }
        let multicasts: Vec<Datagram> = self.node.drain_multicasts().collect();
        if let Some(group) = self.multicast {
            for dg in &multicasts {
                self.send_bytes(socket, dg, group, 0).await;
            }
        }
        let unreachable: Vec<NodeId> = self.node.drain_unreachable().collect();
        for id in unreachable {
            if self.resolver.names.contains_key(&id) {
                tracing::debug!(peer = id, "unreachable: looking its name up again");
                self.resolver.lookup(id);
            }
        }
        let events: Vec<Event> = self.node.drain_events().collect();
        let metrics = &self.shared.metrics;
        metrics.sync(&self.node);
        self.publish();
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
                self.shared
                    .emit(LeaderEvent::new(self.cfg.id, group, leader, term));
            }
        }
    }

    async fn transmit<T: Transport>(&mut self, socket: &T, to: NodeId, dg: &Datagram) {
        let metrics = &self.shared.metrics;
        let Some(&addr) = self.peers.get(&to) else {
            metrics.send_error("no_address");
            return;
        };
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
        let metrics = &self.shared.metrics;
        let bytes = match self.gate.seal(to, dg) {
            Ok(b) => b,
            Err(e) => {
                metrics.send_error(e.reason());
                return;
            }
        };
        match socket.send_to(&bytes, addr).await {
            Ok(n) => metrics.datagram_sent(n),
            Err(e) => {
                tracing::debug!("send to {to} ({addr}) failed: {e}");
                metrics.send_error(send_error_kind(&e));
            }
        }
    }

    fn publish(&self) {
        let groups = self
            .node
            .status()
            .iter()
            .map(|s| {
                let mut v = GroupView::from_status(s, self.origin_unix);
                if self.paused {
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
                        if let Ok(dg) = self.gate.open(&buf[..n], Some(from), unix_micros()) {
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
