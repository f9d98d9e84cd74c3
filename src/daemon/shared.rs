//! State shared between the node's runtime task and the HTTP API.
//!
//! The runtime task owns the [`crate::node::Node`]; it publishes a status snapshot and
//! leader-change events here after each batch of work, and receives operator commands
//! through the control channel. The HTTP handlers only read snapshots, subscribe to
//! events and send commands, so they never block the election.
//!
//! Snapshot and events are consistent: [`Shared::emit`] also applies the change to the
//! snapshot, under the same lock that [`Shared::watch`] holds while it subscribes and
//! copies the snapshot, so a watcher sees every change exactly once, whatever the order
//! in which the runtime calls `emit` and `publish_status`.

use crate::contract::algorithm::AlgorithmKind;
use crate::daemon::metrics::Metrics;
use crate::node::GroupStatus;
use crate::NodeId;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::{broadcast, mpsc, oneshot};

/// One group as `/status` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupView {
    /// The group (one per algorithm the node runs).
    pub algorithm: AlgorithmKind,
    /// The algorithm's state name (`follower`, `electing`, `leader`, …; `unknown` until
    /// the runtime's first snapshot).
    pub state: &'static str,
    /// The leader this node believes in, if any.
    pub leader: Option<NodeId>,
    /// The term (epoch, round) of that leadership: the fencing token's term.
    pub term: u64,
    /// Unix time (seconds) when this node formed its current leader belief.
    pub since: f64,
    /// Duration of the last election this node took part in.
    pub last_election_ms: Option<f64>,
    /// An election is in progress at this node.
    pub electing: bool,
    /// Why this node may not lead the group now (`drained`, `fault`, `no_quorum`,
    /// `transfer`); empty while it may.
    pub ineligible: Vec<crate::contract::policy::Ineligible>,
    /// This node's quorum lease on the group (not in `/status`; `/leader`,
    /// `/is-leader`, `/watch` and hooks show what is left of it).
    #[serde(skip)]
    pub lease: Lease,
}

/// A group's quorum lease as this node holds it (see [`crate::node::Node::lease`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Lease {
    /// The group keeps no lease (`[lease] require_quorum` off; Raft without
    /// check-quorum): leadership is a belief with no promise of duration.
    #[default]
    None,
    /// Kept: this node's leadership is safe until then (a past instant, or the moment
    /// it was computed on a follower: no lease held).
    Until(std::time::Instant),
}

impl Lease {
    /// (`"none"` or `"quorum"`, milliseconds left: `None` for `"none"`, 0 when not held).
    pub(crate) fn remaining(&self) -> (&'static str, Option<u64>) {
        match self {
            Lease::None => ("none", None),
            Lease::Until(t) => (
                "quorum",
                Some(
                    t.saturating_duration_since(std::time::Instant::now())
                        .as_millis() as u64,
                ),
            ),
        }
    }
}

impl GroupView {
    /// Convert a node status; `origin_unix` is the unix time of the driver's time origin.
    pub(crate) fn from_status(s: &GroupStatus, origin_unix: f64) -> Self {
        GroupView {
            algorithm: s.algorithm,
            state: s.state,
            leader: s.leader,
            term: s.term,
            since: origin_unix + s.since.as_secs_f64(),
            last_election_ms: s.last_election.map(|d| d.as_secs_f64() * 1e3),
            electing: s.electing,
            ineligible: s.ineligible.clone(),
            lease: Lease::None,
        }
    }
}

/// A leadership transfer the runtime started ([`Control::Transfer`]).
#[derive(Debug)]
pub struct TransferStarted {
    /// How long the hand-over may take.
    pub(crate) bound: std::time::Duration,
    /// Why the target refused it (it may not lead: drained, failing a health check),
    /// if it does; closed without a message once the transfer is over otherwise.
    pub(crate) refused: oneshot::Receiver<String>,
}

/// A change of a group's leader as seen by this node (`/watch`, hooks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LeaderEvent {
    /// The node that saw the change (this node).
    pub node: NodeId,
    /// The group whose leader changed.
    pub algorithm: AlgorithmKind,
    /// The new leader, `None` when the group has none (it resigned or is lost).
    pub leader: Option<NodeId>,
    /// The term of the new leadership (the fencing token's term).
    pub term: u64,
    /// `leader`, `follower` or `none`.
    pub role: &'static str,
    /// Unix time in milliseconds.
    pub at_ms: u64,
    /// The same instant in microseconds (to time a failover on one machine finer
    /// than a millisecond).
    pub at_us: u64,
    /// The node is in FAULT for this group (a failing health check made it
    /// ineligible); hooks then get the state `fault`.
    pub fault: bool,
    /// The node is paused (`POST /admin/pause`: it simulates a crash and names no
    /// leader); `/watch` readers such as `electd watch` leave it out of the agreement,
    /// as `electd status` does.
    pub paused: bool,
}

impl LeaderEvent {
    /// The event of `node` seeing `leader` in `term`, stamped now; the role follows
    /// from comparing `leader` with `node`.
    pub fn new(node: NodeId, algorithm: AlgorithmKind, leader: Option<NodeId>, term: u64) -> Self {
        let role = match leader {
            Some(l) if l == node => "leader",
            Some(_) => "follower",
            None => "none",
        };
        LeaderEvent {
            node,
            algorithm,
            leader,
            term,
            role,
            at_ms: 0,
            at_us: 0,
            fault: false,
            paused: false,
        }
        .stamped(unix_us())
    }

    /// The event stamped at `us` (Unix time in microseconds).
    pub(crate) fn stamped(mut self, us: u64) -> Self {
        self.at_us = us;
        self.at_ms = us / 1000;
        self
    }

    /// The hook state (`ELECTD_STATE`), with keepalived's name beside it: `leader`
    /// (MASTER), `follower` (BACKUP; also while no leader is known), `fault` (FAULT).
    /// `stopped` (STOP) is not an event: the hook task runs it once per group when the
    /// daemon stops.
    pub(crate) fn state(&self) -> &'static str {
        if self.fault {
            "fault"
        } else if self.role == "leader" {
            "leader"
        } else {
            "follower"
        }
    }
}

/// Operator commands for the runtime task.
#[derive(Debug)]
pub enum Control {
    /// Call an election in a group; the reply says whether the group exists.
    Elect(AlgorithmKind, oneshot::Sender<bool>),
    /// Stop all traffic (simulates a crash without stopping the process).
    Pause,
    /// Resume traffic with a new incarnation.
    Resume,
    /// Hand the leadership of a group to another node
    /// ([`crate::node::Node::transfer`]); the reply is how long the hand-over may take
    /// and where the target's refusal will come, or why it is refused at once.
    Transfer {
        /// The group.
        algorithm: AlgorithmKind,
        /// The target's roster id.
        to: NodeId,
        /// The transfer started, or the reason for a refusal.
        reply: oneshot::Sender<Result<TransferStarted, String>>,
    },
    /// Drain (`on`) or undrain this node in one group or every group (`None`): it
    /// becomes ineligible ([`crate::contract::policy::Ineligible::Drained`]) and, if it
    /// leads, steps down. The reply is how long a hand-over may take at this node's
    /// timing (what `POST /admin/drain` waits for at most).
    Drain {
        /// The group, or every group.
        algorithm: Option<AlgorithmKind>,
        /// Drain (true) or undrain (false).
        on: bool,
        /// The hand-over bound, or why the change is not on disk.
        reply: oneshot::Sender<Result<std::time::Duration, String>>,
    },
    /// A health check changed: this node is in FAULT (`on`, ineligible with
    /// [`crate::contract::policy::Ineligible::Fault`]) in one group or every group
    /// (`None`), or no longer.
    Fault {
        /// The group, or every group.
        algorithm: Option<AlgorithmKind>,
        /// In FAULT (true) or not.
        on: bool,
    },
    /// Weighted health checks changed: lower this node's priority by `penalty` in one
    /// group or every group (`None`), or restore it (`0`); see
    /// [`crate::node::Node::set_penalty`].
    Penalty {
        /// The group, or every group.
        algorithm: Option<AlgorithmKind>,
        /// How much to take off the configured priority.
        penalty: u8,
    },
    /// Replace the keyring (`SIGHUP` re-read the key file): sign with its primary,
    /// accept every key it holds, from the next datagram on.
    Keys(crate::security::keyring::Keyring),
}

/// The health checks of a running node (the `check` label of `electd_health`):
/// - `send`: datagrams leave the node (not every send attempt failing);
/// - `persist`: the state the node must keep across restarts is written;
/// - `roster`: every peer's address is of a family this node's socket can send to;
/// - `term`: no group's term is out of its peers' reach (more than
///   [`crate::contract::algorithm::MAX_TERM_AHEAD`] above theirs, which makes them
///   drop this node's datagrams: a voter lost).
pub(crate) const HEALTH_CHECKS: [&str; 4] = ["send", "persist", "roster", "term"];

/// See the module documentation.
#[derive(Debug)]
pub struct Shared {
    /// This node's id.
    pub node: NodeId,
    /// The cluster name from the configuration.
    pub cluster: String,
    /// The groups this node runs, in configuration order.
    pub algorithms: Vec<AlgorithmKind>,
    /// The node's Prometheus registry and metrics.
    pub metrics: Metrics,
    /// Bearer token for `/admin/*`; admin routes are off without one.
    pub(crate) admin_token: Option<String>,
    status: RwLock<Vec<GroupView>>,
    events: broadcast::Sender<LeaderEvent>,
    control: mpsc::Sender<Control>,
    paused: AtomicBool,
    /// This process's incarnation (`/status`), 0 until the runtime starts.
    incarnation: std::sync::atomic::AtomicU64,
    /// Failing health checks and why (see [`HEALTH_CHECKS`]).
    problems: RwLock<std::collections::BTreeMap<&'static str, String>>,
    /// Where the runtime reports what it does, when a trace is recorded (`demo --trace`).
    tracer: std::sync::OnceLock<Arc<crate::trace::SharedRecorder>>,
    /// This node's configuration digest, when it tells its peers (`electd run`).
    config_digest: std::sync::OnceLock<crate::config::digest::ConfigDigest>,
    /// What the node knows of its peers' digests (`/status`'s `config`).
    config: RwLock<Option<crate::daemon::drift::ConfigView>>,
}

impl Shared {
    /// Record this node's sends, deliveries, timers, states and leader changes into
    /// `tracer` from now on (set once; later calls are ignored).
    pub fn set_tracer(&self, tracer: Arc<crate::trace::SharedRecorder>) {
        let _ = self.tracer.set(tracer);
    }

    /// The trace recorder, if [`Shared::set_tracer`] set one.
    pub(crate) fn tracer(&self) -> Option<&crate::trace::SharedRecorder> {
        self.tracer.get().map(|t| &**t)
    }

    /// The shared state of `node` and the receiver of its control channel (for the
    /// runtime task; 64 commands may be queued).
    pub fn new(
        node: NodeId,
        cluster: String,
        algorithms: Vec<AlgorithmKind>,
        metrics: Metrics,
        admin_token: Option<String>,
    ) -> (Shared, mpsc::Receiver<Control>) {
        let (control, rx) = mpsc::channel(64);
        let (events, _) = broadcast::channel(256);
        let shared = Shared {
            node,
            cluster,
            algorithms,
            metrics,
            admin_token,
            status: RwLock::new(Vec::new()),
            events,
            control,
            paused: AtomicBool::new(false),
            incarnation: std::sync::atomic::AtomicU64::new(0),
            problems: RwLock::new(Default::default()),
            tracer: std::sync::OnceLock::new(),
            config_digest: std::sync::OnceLock::new(),
            config: RwLock::new(None),
        };
        (shared, rx)
    }

    /// Have the runtime send `digest` (of this node's configuration) to every peer and
    /// compare theirs with it (docs/observability.md, "Configuration drift"); `peers`:
    /// the roster without this node. Call once, before the HTTP API and the runtime
    /// start: `/status` and the `electd_config_mismatch` series show every peer (not
    /// heard yet, no mismatch) from then on. Without it the node sends no CONFIG.
    pub fn set_config_digest(&self, digest: crate::config::digest::ConfigDigest, peers: &[NodeId]) {
        if self.config_digest.set(digest).is_err() {
            return;
        }
        self.metrics.config_peers(peers);
        let drift = crate::daemon::drift::Drift::new(digest, peers.iter().copied());
        self.publish_config(drift.view());
    }

    /// The digest set by [`Shared::set_config_digest`].
    pub(crate) fn config_digest(&self) -> Option<crate::config::digest::ConfigDigest> {
        self.config_digest.get().copied()
    }

    /// Replace what `/status` shows of the peers' configuration digests.
    pub(crate) fn publish_config(&self, view: crate::daemon::drift::ConfigView) {
        if let Ok(mut c) = self.config.write() {
            *c = Some(view);
        }
    }

    /// This node's and its peers' configuration digests (`None` without
    /// [`Shared::set_config_digest`]).
    pub(crate) fn config_view(&self) -> Option<crate::daemon::drift::ConfigView> {
        self.config.read().ok().and_then(|c| c.clone())
    }

    /// A copy of the latest status snapshot, one entry per group.
    pub fn status(&self) -> Vec<GroupView> {
        self.status.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// The snapshot of one group, if the node runs it.
    pub fn group(&self, algorithm: AlgorithmKind) -> Option<GroupView> {
        self.status().into_iter().find(|g| g.algorithm == algorithm)
    }

    /// Replace the status snapshot (the runtime calls it after each batch of work).
    pub fn publish_status(&self, groups: Vec<GroupView>) {
        if let Ok(mut s) = self.status.write() {
            *s = groups;
        }
    }

    /// Announce a leader change to `/watch` subscribers and hooks (no receiver is
    /// fine); the status snapshot is updated with it at once.
    pub fn emit(&self, event: LeaderEvent) {
        let Ok(mut status) = self.status.write() else {
            let _ = self.events.send(event);
            return;
        };
        let since = event.at_ms as f64 / 1e3;
        match status.iter_mut().find(|g| g.algorithm == event.algorithm) {
            Some(g) => {
                if g.leader != event.leader {
                    // A new leadership holds no lease until a majority answers it.
                    if let Lease::Until(_) = g.lease {
                        g.lease = Lease::Until(std::time::Instant::now());
                    }
                }
                g.leader = event.leader;
                g.term = event.term;
                g.since = since;
            }
            None => status.push(GroupView {
                algorithm: event.algorithm,
                state: "unknown",
                leader: event.leader,
                term: event.term,
                since,
                last_election_ms: None,
                electing: false,
                ineligible: Vec::new(),
                lease: Lease::None,
            }),
        }
        let _ = self.events.send(event);
    }

    /// Subscribe to leader events and copy the status snapshot atomically: every
    /// change is either already in the snapshot or will arrive on the receiver.
    pub(crate) fn watch(&self) -> (broadcast::Receiver<LeaderEvent>, Vec<GroupView>) {
        match self.status.read() {
            Ok(status) => (self.events.subscribe(), status.clone()),
            Err(_) => (self.events.subscribe(), Vec::new()),
        }
    }

    /// Subscribe to leader events from now on (no snapshot; see [`Shared::watch`]).
    pub fn subscribe(&self) -> broadcast::Receiver<LeaderEvent> {
        self.events.subscribe()
    }

    /// Queue a command for the runtime task; false if the task is gone.
    pub async fn command(&self, c: Control) -> bool {
        self.control.send(c).await.is_ok()
    }

    /// Set (`Some(why)`) or clear (`None`) the failure of one health check; the
    /// `electd_health{check}` gauge follows.
    pub fn set_problem(&self, check: &'static str, why: Option<String>) {
        self.metrics.set_health(check, why.is_none());
        if let Ok(mut p) = self.problems.write() {
            match why {
                Some(w) => {
                    p.insert(check, w);
                }
                None => {
                    p.remove(check);
                }
            }
        }
    }

    /// The failing health checks: (check, why), empty when healthy.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        self.problems
            .read()
            .map(|p| p.iter().map(|(k, v)| (*k, v.clone())).collect())
            .unwrap_or_default()
    }

    /// Mark the node paused (`/admin/pause`: it simulates a crash, and the read
    /// routes answer 503) or running again (`/admin/resume`).
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::SeqCst);
    }

    /// Is the node paused (all election traffic stopped by the operator)?
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// The runtime's incarnation: set at its start and again when it comes back as a
    /// restarted process (`/admin/resume`).
    pub fn set_incarnation(&self, incarnation: u64) {
        self.incarnation.store(incarnation, Ordering::SeqCst);
    }

    /// This node's incarnation (unix microseconds at its start, under `electd run`);
    /// 0 before the runtime starts.
    pub fn incarnation(&self) -> u64 {
        self.incarnation.load(Ordering::SeqCst)
    }
}

/// Current unix time in milliseconds (0 if the clock is before 1970).
pub(crate) fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}
