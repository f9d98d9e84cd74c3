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
//!   and, ahead of the socket in the (biased) `select!`, fires next, after the
//!   datagrams already queued are read (a batch, or two per member on a large roster:
//!   an ack that arrived in time must not lose to its retransmission timer):
//!   heartbeats keep their period while datagrams keep arriving.
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
//!
//! # Files
//! This file holds the task ([`run_with`]'s `select!` loop) and the `Driver` whose
//! state every step of a batch shares; the steps are methods of it, one file per
//! concern: `config` (the settings from a [`Config`]), `resolver` (DNS), `receive`,
//! `control` (one function per operator request), `persist` (durable state before
//! datagrams), `send`, `publish` (metrics, status, events) and `health`.

mod config;
mod control;
mod delegate;
mod health;
mod persist;
mod publish;
mod receive;
mod resolver;
mod send;
#[cfg(test)]
mod tests;

pub(crate) use config::unix_micros;
pub use config::{incarnation_now, NetOptions, RuntimeConfig, Start};
use resolver::{Resolver, RETRY_UNRESOLVED};

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
use crate::daemon::writer::Writer;
use crate::node::link::LinkConfig;
use crate::node::{Datagram, Event, Node, NodeConfig, Packet, StatusKey, Time};
use crate::security::droplog::{DropLog, Verdict};
use crate::security::gate::{Dropped, Gate, GateConfig};
use crate::security::keyring::Keyring;
use crate::security::wire::{Extra, MAX_DATAGRAM};
use crate::NodeId;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Consecutive failed sends after which the `send` health check fails.
const SEND_FAILURE_STREAK: u32 = 8;

/// Most datagrams handled between two flushes (sends, metrics, status, events).
const BATCH: usize = 64;

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
    let beat_thread = net.beat_thread;
    let v4_only = socket.local_addr().map(|a| a.is_ipv4()).unwrap_or(false);
    let (resolved_tx, mut resolved_rx) = mpsc::channel(64);
    let mut d = Driver::new(cfg, shared, socket.wall_clock(), net.state.take())?;
    d.multicast = net.multicast.as_ref().map(|m| m.0);
    d.node.set_multicast(d.multicast.is_some());
    d.gate.set_group(d.multicast.is_some());
    d.resolver = Resolver::new(&net, v4_only, resolved_tx);
    d.bound = socket.local_addr().ok();
    d.check_roster();
    let has_names = !d.resolver.names.is_empty();
    d.resolve_due();
    d.boot();
    if let Some(b) = beats.as_ref().filter(|_| beat_thread) {
        d.start_beater(b);
    }
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
    let mut due = d.deadline();
    let mut timer = Deadline::new(due, socket.wall_clock());
    if socket.wall_clock() && !timer.is_precise() {
        tracing::warn!("no kernel timer (timerfd): deadlines fire about 1 ms late on average");
    }
    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(RETRY_UNRESOLVED);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut control_open = true;
    loop {
        // Whether this turn is the timer's (the only turn that hands beats over).
        let mut timed = false;
        tokio::select! {
            biased;
            _ = &mut shutdown => break,
            c = control.recv(), if control_open => match c {
                Some(c) => {
                    d.reclaim_beats();
                    read_beats(&mut d);
                    d.control(c);
                    d.note_input();
                }
                None => control_open = false,
            },
            // Due timers first: a leader's heartbeats go out on time however full
            // the socket is.
            _ = timer.wait(), if !d.paused => {
                d.reclaim_beats();
                timed = true;
                d.shared.metrics.timer_late(Instant::now().saturating_duration_since(due));
                // What already waits in the sockets is read first (bounded):
                // an answer that arrived before its timeout must not lose to it, and
                // the followed leader's heartbeats move the detector's deadline.
                read_beats(&mut d);
                d.drain_pending(&socket, &mut buf);
                d.timeout();
            }
            // A write of the state file made on the writer's thread: what it held
            // back goes out, what waited for it is reported (at the flush below).
            Some(w) = written(d.writer.as_mut()) => {
                d.reclaim_beats();
                d.written(w);
            }
            r = socket.recv_from(&mut buf) => {
                d.reclaim_beats();
                read_beats(&mut d);
                d.received(r, &buf);
                d.drain_batch(&socket, &mut buf);
            }
            r = recv_group(group_socket.as_ref(), &mut gbuf) => {
                d.reclaim_beats();
                read_beats(&mut d);
                d.received(r, &gbuf);
            }
            Some((id, r)) = resolved_rx.recv() => {
                d.reclaim_beats();
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
                d.reclaim_beats();
                read_beats(&mut d);
                d.resolve_due();
            }
        }
        d.flush(&socket).await;
        if let Some(b) = &beats {
            d.select_heartbeats(b);
        }
        d.hand_beats(timed);
        due = d.deadline();
        timer.set(due);
    }
    d.reclaim_beats();
    d.leave(&socket, &mut buf).await;
    Ok(())
}

/// The next write the state file's writer reports, or never when there is none.
async fn written(w: Option<&mut Writer>) -> Option<crate::daemon::writer::Written> {
    match w {
        Some(w) => w.written().await,
        None => std::future::pending().await,
    }
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
    /// The drained groups as last written to `cfg.state_file` (sorted).
    stored_drained: Vec<AlgorithmKind>,
    /// Drains found in the state file of groups this configuration does not run: kept
    /// on disk, so that a restart that runs the group again finds it drained.
    kept_drains: Vec<AlgorithmKind>,
    /// Transfers under way that an admin request waits on: where to say that the
    /// target refused (group, target, the request's end of the channel).
    transfer_waiters: Vec<(AlgorithmKind, NodeId, tokio::sync::oneshot::Sender<String>)>,
    /// The `term` health check fails (see [`Driver::check_terms`]).
    term_unhealthy: bool,
    /// The writer of the state file (`[state] file`), if any.
    writer: Option<Writer>,
    /// Groups that held a claim after some input since the last flush (see
    /// [`Driver::note_input`]).
    claimed: Vec<AlgorithmKind>,
    /// Groups whose datagrams wait for the write under way (or for a write that
    /// succeeds, after one failed), and those datagrams ([`Driver::hold`]).
    holding: Vec<AlgorithmKind>,
    held: Vec<(NodeId, Datagram)>,
    held_multicast: Vec<Datagram>,
    /// Writes submitted and reported (numbers of the latest), the state last submitted,
    /// whether the latest write failed, and whether the datagrams held may go.
    submitted: u64,
    reported: u64,
    wanted: Vec<(AlgorithmKind, Durable)>,
    write_failed: bool,
    /// When a failed write may be tried again.
    retry_at: Instant,
    /// Drains answered at the next report (the status shows them then), with the
    /// hand-over bound to answer.
    drain_replies: Vec<(
        tokio::sync::oneshot::Sender<Result<Duration, String>>,
        Duration,
    )>,
    /// Events to `/watch` and the hooks made while a token they name was not on disk
    /// yet: emitted with the next report.
    deferred: Vec<LeaderEvent>,
    release: bool,
    /// Since when the write under way has been (see [`Driver::check_write_time`]).
    write_since: Option<Instant>,
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
    /// The answers to this node's heartbeats the selection was built for: (group,
    /// follower, its incarnation, term, the answer's leader field); the kernel selects
    /// those that fit in one program, in this order.
    selected_acks: Vec<(AlgorithmKind, NodeId, u64, u64, NodeId)>,
    /// The kernel refused a selection: heartbeats are read at once from then on.
    batching_failed: bool,
    /// The kernel refused a selection with the followers' answers and took it without
    /// them: answers are read at once from then on.
    acks_refused: bool,
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
    /// The thread that sends an idle leader's beats between turns, if any
    /// ([`crate::daemon::beater`]).
    beater: Option<crate::daemon::beater::Beater>,
    /// Beats were handed to it since the last turn (to take back and book).
    handed: bool,
    /// The last turn was the timer's, and so was the one before it with nothing
    /// between ([`Driver::hand_beats`]).
    beats_quiet: bool,
    /// While beats are handed: when the runtime turns next (the beat after them, or
    /// an earlier deadline).
    beats_wake: Option<Time>,
}

impl Driver {
    /// `threaded`: the state file is written on a thread of its own (on a real clock;
    /// inline on a simulated one, see [`crate::daemon::writer`]).
    fn new(
        cfg: RuntimeConfig,
        shared: Arc<Shared>,
        threaded: bool,
        opened: Option<durable::OpenedState>,
    ) -> Result<Driver, RuntimeError> {
        let mut node = Node::new(cfg.node_config(cfg.incarnation))?;
        // Fails at start, not at the first election, if the file cannot be written
        // (a missing or read-only directory).
        let (file, saved) = match (opened, &cfg.state_file) {
            (Some(o), _) => (Some(o.file), o.saved),
            (None, Some(path)) => {
                let (f, saved) = durable::StateFile::open(path)?;
                (Some(f), saved)
            }
            (None, None) => (None, durable::Saved::default()),
        };
        node.restore(&saved.groups);
        shared.set_incarnation(cfg.incarnation);
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
        // A drain of a group this configuration does not run stays on disk until an
        // undrain of that group (docs/policy.md): it was forgotten at the first write.
        let kept_drains: Vec<AlgorithmKind> = saved
            .drained
            .iter()
            .copied()
            .filter(|k| !cfg.algorithms.contains(k))
            .collect();
        let kept_groups: Vec<AlgorithmKind> = saved
            .groups
            .iter()
            .map(|(k, _)| *k)
            .filter(|k| !cfg.algorithms.contains(k))
            .collect();
        if !kept_groups.is_empty() {
            tracing::info!(
                node = cfg.id,
                groups = ?kept_groups,
                "the state file holds the fencing tokens of groups this configuration does not \
                 run: kept there for a start that runs them again"
            );
        }
        for kind in &kept_drains {
            tracing::warn!(
                node = cfg.id,
                algorithm = %kind,
                "the state file holds a drain of a group this configuration does not run: \
                 kept there, so this node starts drained in it when it runs it again"
            );
        }
        let writer =
            file.map(|f| Writer::new(f, saved.groups.clone(), saved.drained.clone(), threaded));
        let stored = saved.groups;
        let wanted = stored.clone();
        let mut stored_drained = saved.drained;
        stored_drained.sort_unstable();
        stored_drained.dedup();
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
            kept_drains,
            transfer_waiters: Vec::new(),
            term_unhealthy: false,
            writer,
            claimed: Vec::new(),
            holding: Vec::new(),
            held: Vec::new(),
            held_multicast: Vec::new(),
            submitted: 0,
            reported: 0,
            wanted,
            write_failed: false,
            retry_at: Instant::now(),
            drain_replies: Vec::new(),
            deferred: Vec::new(),
            release: false,
            write_since: None,
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
            selected_acks: Vec::new(),
            acks_refused: false,
            batching_failed: false,
            beats_pending: 0,
            drift,
            config_due: Time::ZERO,
            config_out: Vec::new(),
            beater: None,
            handed: false,
            beats_quiet: false,
            beats_wake: None,
            cfg,
        })
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
        // With beats handed to the beat thread, the node's next deadline is their
        // first: the runtime turns after them.
        let node = match self.beats_wake {
            Some(w) => Some(w),
            None => self.node.poll_timeout(),
        };
        match node.into_iter().chain(config).min() {
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
}
