//! Prometheus metrics of one node, named as in docs/observability.md (prefix `electd_`).
//!
//! Every series carries the constant labels `cluster` (the config's `cluster`, when
//! set) and `node`; per-group series carry
//! `algorithm`; message counters carry `type`. The runtime task calls [`Metrics::sync`]
//! after each batch of work: counters are advanced by the difference between the
//! node's own counters and what was exported before, so the node stays the single
//! source of truth and nothing is counted twice.
//!
//! On Linux the standard `process_*` series (CPU, memory, file descriptors, start time)
//! are exported too, from a second registry whose only label is `node`; CPU time with
//! microsecond resolution (`daemon/process_metrics.rs`).
//!
//! Counting conventions are docs/architecture.md's: `messages_sent_total` counts logical messages
//! per recipient when first sent (so the literature's counts hold), liveness traffic
//! (`heartbeat`, `heartbeat_ack`) carries its own `type` and is excluded from the
//! "messages per election" figures by the dashboard and the recording rules.

use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::MessageType;
use crate::node::{Event, Node};
use crate::NodeId;
use prometheus::{
    exponential_buckets, CounterVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGauge, IntGaugeVec, Opts, Registry,
};
use std::collections::HashMap;
use std::sync::Mutex;

/// Every `reason` label of `electd_invalid_datagrams_total`, each once: the gate's
/// (codec, receiver, source, replay windows) and the node's (docs/wire.md §8).
pub fn invalid_reasons() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = crate::security::gate::Dropped::reasons().collect();
    for r in crate::node::NODE_DROP_REASONS {
        if !all.contains(&r) {
            all.push(r);
        }
    }
    all
}

/// Histogram buckets of `election_duration_seconds`: 1 ms doubling, up to ~16 s.
pub fn election_buckets() -> Vec<f64> {
    exponential_buckets(0.001, 2.0, 15).unwrap_or_else(|_| vec![0.001])
}

/// Histogram buckets of the failover series, as multiples of the failure timeout
/// `ft` (the failover's natural unit, from the config): a few small ones for the
/// election phase, tenths of `ft` up to 2×`ft` where failovers fall (so that
/// `histogram_quantile` interpolates within a tenth of `ft`), then a coarse tail.
pub fn failover_buckets(ft: std::time::Duration) -> Vec<f64> {
    let ft = ft.as_secs_f64().max(1e-3);
    let mut m = vec![0.01, 0.02, 0.05];
    m.extend((1..=20).map(|i| f64::from(i) / 10.0));
    m.extend([2.5, 3.0, 4.0, 6.0, 8.0, 10.0, 20.0, 50.0]);
    m.into_iter().map(|x| x * ft).collect()
}

/// Per-algorithm slots of [`Exported`], indexed by `AlgorithmKind as usize`.
const ALGOS: usize = AlgorithmKind::ALL.len();
/// Per-type slots, indexed by `MessageType as usize`.
const TYPES: usize = MessageType::ALL.len();

/// What was exported so far, in arrays indexed by algorithm and message type: a node
/// syncs after every batch (every heartbeat of an idle follower), so this costs a
/// few comparisons when nothing changed, no hashing and no allocation.
#[derive(Default)]
struct Exported {
    sent: [[u64; TYPES]; ALGOS],
    received: [[u64; TYPES]; ALGOS],
    /// The labelled children of `messages_sent` / `messages_received`, looked up once.
    sent_child: [[Option<IntCounter>; TYPES]; ALGOS],
    received_child: [[Option<IntCounter>; TYPES]; ALGOS],
    started: [u64; ALGOS],
    won: [u64; ALGOS],
    changes: [u64; ALGOS],
    retransmissions: u64,
    failures: u64,
    failures_to_lost: u64,
    duplicates: u64,
    incarnation_changes: u64,
    provisional: u64,
    invalid: HashMap<&'static str, u64>,
    leaderless: [f64; ALGOS],
    group_retransmissions: [u64; ALGOS],
    group_failures: [u64; ALGOS],
    /// Last (leader, is_leader, has_leader, term) set per group.
    gauges: [Option<[i64; 4]>; ALGOS],
}

/// Advance the labelled counter cached in `child` (looked up in `vec` with `labels`
/// the first time) from `*prev` to `now`.
fn advance_child(
    vec: &IntCounterVec,
    labels: &[&str],
    child: &mut Option<IntCounter>,
    prev: &mut u64,
    now: u64,
) {
    if now > *prev {
        child
            .get_or_insert_with(|| vec.with_label_values(labels))
            .inc_by(now - *prev);
        *prev = now;
    }
}

/// The registry and every metric of one node.
pub struct Metrics {
    node: NodeId,
    registry: Registry,
    messages_sent: IntCounterVec,
    messages_received: IntCounterVec,
    retransmissions: IntCounter,
    delivery_failures: IntCounter,
    delivery_failures_to_lost: IntCounter,
    duplicates_dropped: IntCounter,
    incarnation_changes: IntCounter,
    provisional_dropped: IntCounter,
    elections_started: IntCounterVec,
    elections_won: IntCounterVec,
    election_duration: HistogramVec,
    leader: IntGaugeVec,
    is_leader: IntGaugeVec,
    has_leader: IntGaugeVec,
    leader_changes: IntCounterVec,
    term: IntGaugeVec,
    invalid: IntCounterVec,
    datagrams_sent: IntCounter,
    heartbeats_batched: IntCounter,
    bytes_sent: IntCounter,
    send_errors: IntCounterVec,
    hook_runs: IntCounterVec,
    failover: HistogramVec,
    failover_detection: HistogramVec,
    failover_election: HistogramVec,
    leaderless: CounterVec,
    group_bytes_sent: IntCounterVec,
    group_retransmissions: IntCounterVec,
    group_delivery_failures: IntCounterVec,
    key_reloads: IntCounterVec,
    errors: IntCounterVec,
    health: IntGaugeVec,
    check_up: IntGaugeVec,
    check_runs: IntCounterVec,
    fault: IntGaugeVec,
    drained: IntGaugeVec,
    priority_penalty: IntGaugeVec,
    config_mismatch: IntGaugeVec,
    process: Registry,
    exported: Mutex<Exported>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").field("node", &self.node).finish()
    }
}

impl Metrics {
    /// [`Metrics::for_cluster`] without a `cluster` label and with the default failure
    /// timeout (tests and tools that run one anonymous cluster).
    pub fn new(node: NodeId, algorithms: &[AlgorithmKind]) -> Result<Metrics, prometheus::Error> {
        Metrics::for_cluster(
            "",
            node,
            algorithms,
            crate::contract::algorithm::Timing::default().failure_timeout,
        )
    }

    /// Register every metric for `node` of `cluster` running `algorithms` (series of
    /// each group are created up front, so dashboards see zeros rather than gaps).
    /// Every series carries `cluster` (unless empty) and `node`; the failover
    /// histograms' buckets are laid out around `failure_timeout`.
    pub fn for_cluster(
        cluster: &str,
        node: NodeId,
        algorithms: &[AlgorithmKind],
        failure_timeout: std::time::Duration,
    ) -> Result<Metrics, prometheus::Error> {
        let mut constant = HashMap::from([("node".to_string(), node.to_string())]);
        if !cluster.is_empty() {
            constant.insert("cluster".to_string(), cluster.to_string());
        }
        let opts = |name: &str, help: &str| -> Opts {
            Opts::new(name, help)
                .namespace("electd")
                .const_labels(constant.clone())
        };
        let registry = Registry::new();
        let counter_vec =
            |name: &str, help: &str, labels: &[&str]| -> Result<IntCounterVec, prometheus::Error> {
                let c = IntCounterVec::new(opts(name, help), labels)?;
                registry.register(Box::new(c.clone()))?;
                Ok(c)
            };
        let gauge_vec =
            |name: &str, help: &str, labels: &[&str]| -> Result<IntGaugeVec, prometheus::Error> {
                let g = IntGaugeVec::new(opts(name, help), labels)?;
                registry.register(Box::new(g.clone()))?;
                Ok(g)
            };
        let counter = |name: &str, help: &str| -> Result<IntCounter, prometheus::Error> {
            let c = IntCounter::with_opts(opts(name, help))?;
            registry.register(Box::new(c.clone()))?;
            Ok(c)
        };
        let messages_sent = counter_vec(
            "messages_sent_total",
            "Logical election messages sent, one per recipient, counted when first sent.",
            &["algorithm", "type"],
        )?;
        let messages_received = counter_vec(
            "messages_received_total",
            "Election messages received and delivered to a group.",
            &["algorithm", "type"],
        )?;
        let retransmissions = counter(
            "retransmissions_total",
            "Datagrams sent again for lack of an ack.",
        )?;
        let delivery_failures = counter(
            "delivery_failures_total",
            "Messages the reliable link gave up on after its last attempt.",
        )?;
        let delivery_failures_to_lost = counter(
            "delivery_failures_to_lost_total",
            "The part of delivery_failures_total addressed to a peer this node's failure detector had declared lost (a crashed leader) and not heard from since; the rest went to peers believed alive.",
        )?;
        let duplicates_dropped = counter(
            "duplicates_dropped_total",
            "Reliable messages received again (a retransmission whose ack was lost): acked again, delivered once.",
        )?;
        let incarnation_changes = counter(
            "peer_incarnation_changes_total",
            "Changes of the incarnation this node hears from a peer that it had heard before: the peer's restarts, and re-adoptions of an incarnation that forged datagrams had displaced (docs/security.md, One datagram).",
        )?;
        let provisional_dropped = counter(
            "provisional_dropped_total",
            "Datagrams of a peer's incarnation that a higher one had displaced, dropped unacknowledged before it was taken back (docs/security.md, One datagram): zero unless datagrams were forged or a restarted peer's late datagrams arrived.",
        )?;
        let elections_started = counter_vec(
            "elections_started_total",
            "Elections this node started or joined as a candidate.",
            &["algorithm"],
        )?;
        let elections_won = counter_vec(
            "elections_won_total",
            "Elections this node won.",
            &["algorithm"],
        )?;
        let election_duration = HistogramVec::new(
            HistogramOpts::from(opts(
                "election_duration_seconds",
                "From the start of an election at this node to learning its leader.",
            ))
            .buckets(election_buckets()),
            &["algorithm"],
        )?;
        registry.register(Box::new(election_duration.clone()))?;
        let leader = gauge_vec(
            "leader",
            "Id of the leader this node follows, -1 if none.",
            &["algorithm"],
        )?;
        let is_leader = gauge_vec(
            "is_leader",
            "1 if this node leads the group.",
            &["algorithm"],
        )?;
        let has_leader = gauge_vec(
            "has_leader",
            "1 if this node knows a leader.",
            &["algorithm"],
        )?;
        let leader_changes = counter_vec(
            "leader_changes_total",
            "Changes of this node's leader belief (including to none).",
            &["algorithm"],
        )?;
        let term = gauge_vec(
            "term",
            "Epoch of the group (Raft term); the fencing token.",
            &["algorithm"],
        )?;
        let invalid = counter_vec(
            "invalid_datagrams_total",
            "Datagrams dropped as invalid, by reason.",
            &["reason"],
        )?;
        let datagrams_sent = counter("datagrams_sent_total", "UDP datagrams put on the wire.")?;
        let heartbeats_batched = counter(
            "heartbeats_batched_total",
            "Datagrams read from the heartbeat socket: a followed leader's heartbeats, \
             read in a batch as of the time they arrived (transport.batch_heartbeats).",
        )?;
        let bytes_sent = counter("bytes_sent_total", "UDP payload bytes put on the wire.")?;
        let send_errors = counter_vec(
            "send_errors_total",
            "Datagrams the operating system refused to send, by error kind.",
            &["kind"],
        )?;
        let hook_runs = counter_vec(
            "hook_runs_total",
            "Leader-change hook runs, by result (ok, failed, timeout, error, skipped).",
            &["result"],
        )?;
        let histogram = |name: &str, help: &str| -> Result<HistogramVec, prometheus::Error> {
            let h = HistogramVec::new(
                HistogramOpts::from(opts(name, help)).buckets(failover_buckets(failure_timeout)),
                &["algorithm"],
            )?;
            registry.register(Box::new(h.clone()))?;
            Ok(h)
        };
        let failover = histogram(
            "failover_seconds",
            "Failovers seen by this node: from the last datagram heard from the leader it lost to adopting the next one.",
        )?;
        let failover_detection = histogram(
            "failover_detection_seconds",
            "Detection phase of a failover: last datagram heard from the old leader to this node declaring it lost.",
        )?;
        let failover_election = histogram(
            "failover_election_seconds",
            "Election phase of a failover: this node declaring the old leader lost to adopting the next one.",
        )?;
        let leaderless = CounterVec::new(
            opts(
                "leaderless_seconds_total",
                "Time this node had no leader for the group since it started.",
            ),
            &["algorithm"],
        )?;
        registry.register(Box::new(leaderless.clone()))?;
        let group_bytes_sent = counter_vec(
            "group_bytes_sent_total",
            "UDP payload bytes of the datagrams carrying a message of the group (bare acks are not attributed).",
            &["algorithm"],
        )?;
        let group_retransmissions = counter_vec(
            "group_retransmissions_total",
            "Retransmissions of the group's messages.",
            &["algorithm"],
        )?;
        let group_delivery_failures = counter_vec(
            "group_delivery_failures_total",
            "Messages of the group the reliable link gave up on.",
            &["algorithm"],
        )?;
        let key_reloads = counter_vec(
            "key_reloads_total",
            "Key file reloads on SIGHUP, by result (ok, failed, insecure: nothing to reload).",
            &["result"],
        )?;
        let errors = counter_vec(
            "errors_total",
            "Runtime failures without a counter of their own, by class (state_write, receive, resolve).",
            &["class"],
        )?;
        let health = gauge_vec(
            "health",
            "1 while a health check passes, 0 while it fails (check: send, persist, roster); /healthz answers 503 while any is 0.",
            &["check"],
        )?;
        for check in crate::daemon::shared::HEALTH_CHECKS {
            health.with_label_values(&[check]).set(1);
        }
        let check_up = gauge_vec(
            "check_up",
            "1 while a configured [[check]] passes (after rise passes in a row), 0 while it fails (after fall failures in a row).",
            &["check"],
        )?;
        let check_runs = counter_vec(
            "check_runs_total",
            "Runs of a configured [[check]], by result (pass, fail, timeout, error).",
            &["check", "result"],
        )?;
        let priority_penalty = gauge_vec(
            "priority_penalty",
            "How much failing weighted [[check]]s take off this node's priority in the group (0: none).",
            &["algorithm"],
        )?;
        let config_mismatch = gauge_vec(
            "config_mismatch",
            "1 while the configuration digest the peer last sent differs from this node's (config drift: docs/observability.md); 0 otherwise, also while the peer sent none.",
            &["peer"],
        )?;
        let fault = gauge_vec(
            "fault",
            "1 while a failing [[check]] makes this node ineligible in the group (keepalived's FAULT).",
            &["algorithm"],
        )?;
        let drained = gauge_vec(
            "drained",
            "1 while the operator has drained this node in the group (POST /admin/drain; kept across restarts until undrain).",
            &["algorithm"],
        )?;
        let build_info = IntGaugeVec::new(
            opts("build_info", "Build information; always 1."),
            &["version"],
        )?;
        registry.register(Box::new(build_info.clone()))?;
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        let up_since = IntGauge::with_opts(opts(
            "start_time_seconds",
            "Unix time this process started.",
        ))?;
        registry.register(Box::new(up_since.clone()))?;
        if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            up_since.set(d.as_secs() as i64);
        }
        let m = Metrics {
            node,
            registry,
            messages_sent,
            messages_received,
            retransmissions,
            delivery_failures,
            delivery_failures_to_lost,
            duplicates_dropped,
            incarnation_changes,
            provisional_dropped,
            elections_started,
            elections_won,
            election_duration,
            leader,
            is_leader,
            has_leader,
            leader_changes,
            term,
            invalid,
            datagrams_sent,
            heartbeats_batched,
            bytes_sent,
            send_errors,
            hook_runs,
            failover,
            failover_detection,
            failover_election,
            leaderless,
            group_bytes_sent,
            group_retransmissions,
            group_delivery_failures,
            key_reloads,
            errors,
            health,
            check_up,
            check_runs,
            fault,
            drained,
            priority_penalty,
            config_mismatch,
            process: process_registry(cluster, node)?,
            exported: Mutex::new(Exported::default()),
        };
        // Likewise every hook result, so that alerts on hook failures see the first one.
        for result in ["ok", "failed", "timeout", "error", "skipped"] {
            m.hook_runs.with_label_values(&[result]);
        }
        for &a in algorithms {
            let l = [a.as_str()];
            m.elections_started.with_label_values(&l);
            m.elections_won.with_label_values(&l);
            m.leader_changes.with_label_values(&l);
            m.election_duration.with_label_values(&l);
            m.failover.with_label_values(&l);
            m.failover_detection.with_label_values(&l);
            m.failover_election.with_label_values(&l);
            m.leaderless.with_label_values(&l);
            m.group_bytes_sent.with_label_values(&l);
            m.group_retransmissions.with_label_values(&l);
            m.group_delivery_failures.with_label_values(&l);
            m.leader.with_label_values(&l).set(-1);
            m.is_leader.with_label_values(&l).set(0);
            m.has_leader.with_label_values(&l).set(0);
            m.term.with_label_values(&l).set(0);
            m.fault.with_label_values(&l).set(0);
            m.drained.with_label_values(&l).set(0);
            m.priority_penalty.with_label_values(&l).set(0);
        }
        zero_known_series(&m, algorithms);
        Ok(m)
    }

    /// The Prometheus registry every series is in (what `/metrics` encodes).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// [`Metrics::sync`], and `leaderless_seconds_total` advanced to the node time
    /// `now` (a leaderless period still under way included).
    pub fn sync_at(&self, node: &Node, now: crate::node::Time) {
        self.sync(node);
        let Ok(mut ex) = self.exported.lock() else {
            return;
        };
        for a in node.algorithms() {
            let Some(t) = node.leaderless(a, now) else {
                continue;
            };
            let t = t.as_secs_f64();
            let prev = &mut ex.leaderless[a as usize];
            if t > *prev {
                self.leaderless
                    .with_label_values(&[a.as_str()])
                    .inc_by(t - *prev);
                *prev = t;
            }
        }
    }

    /// Bring every counter and gauge up to date with `node`'s own counters.
    pub fn sync(&self, node: &Node) {
        let Ok(mut guard) = self.exported.lock() else {
            return;
        };
        let ex = &mut *guard;
        for a in node.algorithms() {
            let Some(stats) = node.group_stats(a) else {
                continue;
            };
            let i = a as usize;
            for t in MessageType::ALL {
                let (j, labels) = (t as usize, [a.as_str(), t.as_str()]);
                advance_child(
                    &self.messages_sent,
                    &labels,
                    &mut ex.sent_child[i][j],
                    &mut ex.sent[i][j],
                    stats.sent_of(t),
                );
                advance_child(
                    &self.messages_received,
                    &labels,
                    &mut ex.received_child[i][j],
                    &mut ex.received[i][j],
                    stats.received_of(t),
                );
            }
            let l = [a.as_str()];
            // A labelled child is looked up (label hashing, a lock) only when its
            // value changed: a node syncs after every datagram and timer.
            advance_vec(
                &self.elections_started,
                &l,
                &mut ex.started[i],
                stats.elections_started,
            );
            advance_vec(&self.elections_won, &l, &mut ex.won[i], stats.elections_won);
            advance_vec(
                &self.leader_changes,
                &l,
                &mut ex.changes[i],
                stats.leader_changes,
            );
            advance_vec(
                &self.group_retransmissions,
                &l,
                &mut ex.group_retransmissions[i],
                stats.retransmissions,
            );
            advance_vec(
                &self.group_delivery_failures,
                &l,
                &mut ex.group_failures[i],
                stats.delivery_failures,
            );
            if let Some((leader, term)) = node.leadership(a) {
                let now = [
                    leader.map(i64::from).unwrap_or(-1),
                    i64::from(leader == Some(node.id())),
                    i64::from(leader.is_some()),
                    term.min(i64::MAX as u64) as i64,
                ];
                if ex.gauges[i] != Some(now) {
                    self.leader.with_label_values(&l).set(now[0]);
                    self.is_leader.with_label_values(&l).set(now[1]);
                    self.has_leader.with_label_values(&l).set(now[2]);
                    self.term.with_label_values(&l).set(now[3]);
                    ex.gauges[i] = Some(now);
                }
            }
        }
        let link = node.link_stats();
        advance(
            &self.retransmissions,
            &mut ex.retransmissions,
            link.retransmissions,
        );
        advance(
            &self.delivery_failures,
            &mut ex.failures,
            link.delivery_failures,
        );
        advance(
            &self.delivery_failures_to_lost,
            &mut ex.failures_to_lost,
            link.delivery_failures_to_lost,
        );
        advance(
            &self.duplicates_dropped,
            &mut ex.duplicates,
            link.duplicates_dropped,
        );
        advance(
            &self.incarnation_changes,
            &mut ex.incarnation_changes,
            link.incarnation_changes,
        );
        advance(
            &self.provisional_dropped,
            &mut ex.provisional,
            link.provisional_dropped,
        );
        for (&reason, &n) in node.invalid() {
            let prev = ex.invalid.entry(reason).or_insert(0);
            if n > *prev {
                self.invalid.with_label_values(&[reason]).inc_by(n - *prev);
                *prev = n;
            }
        }
    }

    /// The node was replaced by a new incarnation whose own counters start at zero
    /// again (resume after pause): forget what was exported, so the new node's counts
    /// are added on top instead of being hidden until they pass the old ones.
    /// Call [`Metrics::sync`] with the old node first.
    pub fn rebase(&self) {
        if let Ok(mut ex) = self.exported.lock() {
            *ex = Exported::default();
        }
    }

    /// Record what an event says that counters cannot (election and failover times).
    pub fn observe(&self, event: &Event) {
        match event {
            Event::ElectionFinished {
                group, duration, ..
            } => {
                self.election_duration
                    .with_label_values(&[group.as_str()])
                    .observe(duration.as_secs_f64());
            }
            Event::Failover {
                group,
                total,
                phases,
                ..
            } => {
                let l = [group.as_str()];
                self.failover
                    .with_label_values(&l)
                    .observe(total.as_secs_f64());
                if let Some(p) = phases {
                    self.failover_detection
                        .with_label_values(&l)
                        .observe(p.detection.as_secs_f64());
                    self.failover_election
                        .with_label_values(&l)
                        .observe(p.election.as_secs_f64());
                }
            }
            _ => {}
        }
    }

    /// A datagram of `bytes` went on the wire.
    pub fn datagram_sent(&self, bytes: usize) {
        self.datagrams_sent.inc();
        self.bytes_sent.inc_by(bytes as u64);
    }

    /// A datagram was read from the heartbeat socket.
    pub fn heartbeat_batched(&self) {
        self.heartbeats_batched.inc();
    }

    /// A datagram of `bytes` carrying a message of `group` went on the wire (counted
    /// in addition to [`Metrics::datagram_sent`]).
    pub fn group_datagram_sent(&self, group: AlgorithmKind, bytes: usize) {
        self.group_bytes_sent
            .with_label_values(&[group.as_str()])
            .inc_by(bytes as u64);
    }

    /// A datagram was dropped before reaching the node (decode, authentication, …).
    /// Reasons counted by the node itself go through [`Metrics::sync`].
    pub fn invalid_datagram(&self, reason: &str) {
        self.invalid.with_label_values(&[reason]).inc();
    }

    /// The OS refused a send (`kind`: e.g. `permission_denied`, `network_unreachable`).
    pub fn send_error(&self, kind: &str) {
        self.send_errors.with_label_values(&[kind]).inc();
    }

    /// A leader-change hook finished with `result` (`ok`, `failed`, `timeout`, `error`).
    pub fn hook_run(&self, result: &str) {
        self.hook_runs.with_label_values(&[result]).inc();
    }

    /// `n` leader changes got no hook run because the hook fell behind (the hook then
    /// runs once per group with the current state instead).
    pub fn hook_skipped(&self, n: u64) {
        self.hook_runs.with_label_values(&["skipped"]).inc_by(n);
    }

    /// A `SIGHUP` key reload finished with `result` (`ok`, `failed`, `insecure`).
    pub fn key_reload(&self, result: &str) {
        self.key_reloads.with_label_values(&[result]).inc();
    }

    /// A failure of `class` (`state_write`, `receive`, `resolve`).
    pub fn error(&self, class: &str) {
        self.errors.with_label_values(&[class]).inc();
    }

    /// The state of one health check (see [`crate::daemon::shared::HEALTH_CHECKS`]).
    pub fn set_health(&self, check: &str, passing: bool) {
        self.health
            .with_label_values(&[check])
            .set(i64::from(passing));
    }

    /// A configured check's series, created when the check starts (so that its first
    /// failure shows in `rate()`): up, and every result at zero.
    pub fn check_registered(&self, check: &str) {
        self.check_up.with_label_values(&[check]).set(1);
        for result in ["pass", "fail", "timeout", "error"] {
            self.check_runs.with_label_values(&[check, result]);
        }
    }

    /// A run of check `check` ended with `result` (`pass`, `fail`, `timeout`, `error`).
    pub fn check_run(&self, check: &str, result: &str) {
        self.check_runs.with_label_values(&[check, result]).inc();
    }

    /// Check `check` is passing (`true`) or failing after its rise/fall counts.
    pub fn set_check_up(&self, check: &str, up: bool) {
        self.check_up.with_label_values(&[check]).set(i64::from(up));
    }

    /// This node is in FAULT (a failing check) in `algorithm`'s group, or not.
    pub fn set_fault(&self, algorithm: AlgorithmKind, on: bool) {
        self.fault
            .with_label_values(&[algorithm.as_str()])
            .set(i64::from(on));
    }

    /// The operator drained this node in `algorithm`'s group (`on`), or undrained it.
    pub fn set_drained(&self, algorithm: AlgorithmKind, on: bool) {
        self.drained
            .with_label_values(&[algorithm.as_str()])
            .set(i64::from(on));
    }

    /// Weighted checks take `penalty` off this node's priority in `algorithm`'s group.
    pub fn set_penalty(&self, algorithm: AlgorithmKind, penalty: u8) {
        self.priority_penalty
            .with_label_values(&[algorithm.as_str()])
            .set(i64::from(penalty));
    }

    /// The `config_mismatch` series of every peer, at 0 (at start, with the roster
    /// without this node: [`crate::daemon::shared::Shared::set_config_digest`]).
    pub fn config_peers(&self, peers: &[NodeId]) {
        for p in peers {
            self.config_mismatch
                .with_label_values(&[&p.to_string()])
                .set(0);
        }
    }

    /// Peer `peer`'s configuration digest differs from this node's (`true`) or not.
    pub fn set_config_mismatch(&self, peer: NodeId, mismatch: bool) {
        self.config_mismatch
            .with_label_values(&[&peer.to_string()])
            .set(i64::from(mismatch));
    }

    /// The text exposition format, for `GET /metrics`.
    pub fn encode(&self) -> String {
        use prometheus::Encoder;
        let mut buf = Vec::new();
        let enc = prometheus::TextEncoder::new();
        let mut families = self.registry.gather();
        families.extend(self.process.gather());
        if enc.encode(&families, &mut buf).is_err() {
            return String::new();
        }
        String::from_utf8(buf).unwrap_or_default()
    }
}

// ---------------------------------------------------------------- known series at 0
//
// A labelled series appears only when its child is first created, and Prometheus'
// increase()/rate() count nothing before the first sample: what a node counts before
// the first scrape that sees a series (the first election's messages, the first drop)
// would be lost. So every series whose labels are known at start is created here, at 0.

/// Every `kind` of `electd_send_errors_total`: no roster address, the operating
/// system's refusals ([`crate::daemon::socket::send_error_kind`]) and a datagram too
/// large to seal (`oversize`, the only error of [`crate::security::wire::Codec::encode`]).
pub const SEND_ERROR_KINDS: [&str; 11] = [
    "no_address",
    "permission_denied",
    "network_unreachable",
    "host_unreachable",
    "address_unavailable",
    "connection_refused",
    "buffer_full",
    "invalid_address",
    "message_too_long",
    "other",
    "oversize",
];

/// Every `class` of `electd_errors_total` (the runtime's `metrics.error` calls).
pub const ERROR_CLASSES: [&str; 4] = ["resolve", "receive", "heartbeat_select", "state_write"];

/// Every `result` of `electd_key_reloads_total`.
pub const KEY_RELOAD_RESULTS: [&str; 3] = ["ok", "failed", "insecure"];

/// Every `result` of `electd_hook_runs_total`.
pub const HOOK_RESULTS: [&str; 5] = ["ok", "failed", "timeout", "error", "skipped"];

/// The message types a group of `algorithm` may count: its own (the registry's) and
/// the liveness and RESIGN messages every algorithm uses.
pub fn known_message_types(algorithm: AlgorithmKind) -> impl Iterator<Item = MessageType> {
    let own = algorithm.info().message_types.iter();
    own.chain(crate::contract::info::COMMON_TYPES).copied()
}

/// Create, at 0, every series whose labels are known at start: each group's message
/// types (sent and received), every drop reason, send error kind, error class, key
/// reload and hook result, and every health check (at 1: passing until told otherwise).
fn zero_known_series(m: &Metrics, algorithms: &[AlgorithmKind]) {
    for &a in algorithms {
        for t in known_message_types(a) {
            let labels = [a.as_str(), t.as_str()];
            m.messages_sent.with_label_values(&labels);
            m.messages_received.with_label_values(&labels);
        }
    }
    for reason in invalid_reasons() {
        m.invalid.with_label_values(&[reason]);
    }
    for kind in SEND_ERROR_KINDS {
        m.send_errors.with_label_values(&[kind]);
    }
    for class in ERROR_CLASSES {
        m.errors.with_label_values(&[class]);
    }
    for result in KEY_RELOAD_RESULTS {
        m.key_reloads.with_label_values(&[result]);
    }
    for result in HOOK_RESULTS {
        m.hook_runs.with_label_values(&[result]);
    }
    for check in crate::daemon::shared::HEALTH_CHECKS {
        m.health.with_label_values(&[check]);
    }
}
// ------------------------------------------------------------ end of known series at 0

/// The `process_*` collector of this process, labelled with `cluster` and `node` like
/// everything else.
fn process_registry(cluster: &str, node: NodeId) -> Result<Registry, prometheus::Error> {
    let mut labels = HashMap::from([("node".to_string(), node.to_string())]);
    if !cluster.is_empty() {
        labels.insert("cluster".to_string(), cluster.to_string());
    }
    let registry = Registry::new_custom(None, Some(labels))?;
    #[cfg(target_os = "linux")]
    registry.register(Box::new(
        crate::daemon::process_metrics::ProcessMetrics::for_self(),
    ))?;
    Ok(registry)
}

fn advance_vec(c: &IntCounterVec, labels: &[&str], prev: &mut u64, now: u64) {
    if now > *prev {
        c.with_label_values(labels).inc_by(now - *prev);
        *prev = now;
    }
}

fn advance(c: &IntCounter, prev: &mut u64, now: u64) {
    if now > *prev {
        c.inc_by(now - *prev);
        *prev = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::algorithm::{Options, Timing};
    use crate::node::link::LinkConfig;
    use crate::node::NodeConfig;
    use std::time::Duration;

    /// Node `id` of roster `ring`, running `algos`, with the default timing.
    fn test_node(id: NodeId, ring: &[NodeId], algos: &[AlgorithmKind]) -> Node {
        Node::new(NodeConfig {
            id,
            ring: ring.to_vec().into(),
            algorithms: algos.to_vec(),
            timing: Timing::default(),
            options: Options::default(),
            link: LinkConfig::default(),
            incarnation: 1,
            seed: 1,
        })
        .expect("node")
    }

    #[test]
    fn names_labels_and_deltas() {
        let algos = [AlgorithmKind::Bully];
        let m = Metrics::new(3, &algos).expect("registry");
        let mut node = test_node(3, &[1, 2, 3], &algos);
        // Node 3 is the highest: it wins at once and announces to 1 and 2.
        node.start(Duration::ZERO, true);
        m.sync(&node);
        m.sync(&node); // a second sync adds nothing
        let text = m.encode();
        assert!(
            text.contains(
                "electd_messages_sent_total{algorithm=\"bully\",node=\"3\",type=\"coordinator\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains("electd_is_leader{algorithm=\"bully\",node=\"3\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("electd_leader{algorithm=\"bully\",node=\"3\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("electd_build_info{node=\"3\",version="),
            "{text}"
        );
        assert!(text.contains("electd_election_duration_seconds_bucket{algorithm=\"bully\",node=\"3\",le=\"0.001\"}"), "{text}");

        // The same reliable datagram twice (its ack was lost): delivered once, the
        // second copy counted as a duplicate.
        let again = crate::node::Datagram {
            from: 1,
            incarnation: 1,
            seq: 1,
            ack: 0,
            group: Some(AlgorithmKind::Bully),
            body: Some(crate::contract::message::Message::Resign { epoch: 1 }),
        };
        node.handle_datagram(Duration::ZERO, again.clone());
        node.handle_datagram(Duration::ZERO, again);
        m.sync(&node);
        assert!(
            m.encode()
                .contains("electd_duplicates_dropped_total{node=\"3\"} 1"),
            "{}",
            m.encode()
        );
    }

    /// docs/architecture.md: every series carries `node`; per-group series carry `algorithm`;
    /// message counters carry `type`; durations use 1 ms doubling buckets.
    #[test]
    fn every_series_is_labelled() {
        let algos = [AlgorithmKind::Bully, AlgorithmKind::ImprovedBully];
        let m = Metrics::new(7, &algos).expect("registry");
        m.datagram_sent(100);
        m.invalid_datagram("decode");
        m.send_error("network_unreachable");
        m.hook_run("ok");
        m.hook_skipped(2);
        let mut node = test_node(7, &[5, 6, 7], &algos);
        node.start(Duration::ZERO, true);
        m.sync(&node);
        let text = m.encode();
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(samples.len() > 20, "{text}");
        for line in &samples {
            assert!(line.contains("node=\"7\""), "no node label: {line}");
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            let per_group = [
                "electd_messages_",
                "electd_elections_",
                "electd_election_duration",
                "electd_leader",
                "electd_is_leader",
                "electd_has_leader",
                "electd_term",
                "electd_failover_",
                "electd_leaderless_",
                "electd_group_",
            ];
            if per_group.iter().any(|p| name.starts_with(p)) {
                assert!(line.contains("algorithm=\""), "no algorithm: {line}");
            }
            if name.starts_with("electd_messages_") {
                assert!(line.contains("type=\""), "no type: {line}");
            }
        }
        #[cfg(target_os = "linux")]
        assert!(
            text.contains("process_resident_memory_bytes{node=\"7\"}"),
            "{text}"
        );
        assert!(text.contains("electd_hook_runs_total{node=\"7\",result=\"skipped\"} 2"));
        assert!(
            !text.contains("cluster="),
            "no cluster given, none invented"
        );
        assert!(text.contains("electd_bytes_sent_total{node=\"7\"} 100"));
        // Buckets: 1 ms, doubling.
        let b = election_buckets();
        assert_eq!(b[0], 0.001);
        assert!(b.windows(2).all(|w| (w[1] / w[0] - 2.0).abs() < 1e-9));
        assert!(*b.last().unwrap_or(&0.0) >= 10.0, "covers slow elections");
    }

    /// `for_cluster`: every series, `process_*` included, carries `cluster`; the
    /// failover buckets are laid out in tenths of the failure timeout; a leaderless
    /// period still under way counts up to the time of the sync.
    #[test]
    fn cluster_label_failover_buckets_and_leaderless_time() {
        let algos = [AlgorithmKind::Bully];
        let ft = Duration::from_millis(200);
        let m = Metrics::for_cluster("prod-eu", 2, &algos, ft).expect("registry");
        let mut node = test_node(2, &[1, 2, 3], &algos);
        // Node 2 asks node 3 and waits: no leader yet.
        node.start(Duration::ZERO, true);
        m.sync_at(&node, Duration::from_millis(250));
        m.group_datagram_sent(AlgorithmKind::Bully, 40);
        let text = m.encode();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            assert!(line.contains("cluster=\"prod-eu\""), "no cluster: {line}");
        }
        assert!(
            text.contains("electd_leaderless_seconds_total{algorithm=\"bully\",cluster=\"prod-eu\",node=\"2\"} 0.25"),
            "{text}"
        );
        assert!(
            text.contains("electd_group_bytes_sent_total{algorithm=\"bully\",cluster=\"prod-eu\",node=\"2\"} 40"),
            "{text}"
        );
        // A second sync at a later time adds only the difference.
        m.sync_at(&node, Duration::from_millis(400));
        assert!(
            m.encode().contains("electd_leaderless_seconds_total{algorithm=\"bully\",cluster=\"prod-eu\",node=\"2\"} 0.4"),
            "{}",
            m.encode()
        );
        let b = failover_buckets(ft);
        assert!(b.windows(2).all(|w| w[1] > w[0]), "increasing: {b:?}");
        for i in 1..=20 {
            let edge = ft.as_secs_f64() * f64::from(i) / 10.0;
            assert!(b.iter().any(|x| (x - edge).abs() < 1e-9), "{edge} in {b:?}");
        }
    }

    /// The value of the sample `name{labels}` in `text` (labels as encoded: sorted).
    fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
        let key = format!("{name}{{{labels}}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(key.as_str()))
            .and_then(|v| v.trim().parse().ok())
    }

    /// Issue 32: a fresh node's /metrics has every series whose labels are known at
    /// start at 0 (health checks at 1), so that increase() over a window that starts
    /// with the node counts its first election.
    #[test]
    fn a_fresh_node_exports_every_known_series_at_zero() {
        let m = Metrics::new(4, &AlgorithmKind::ALL).expect("registry");
        let text = m.encode();
        for a in AlgorithmKind::ALL {
            for t in known_message_types(a) {
                for name in [
                    "electd_messages_sent_total",
                    "electd_messages_received_total",
                ] {
                    // Labels are encoded sorted: `node` between `algorithm` and `type`.
                    let (a, t) = (a.as_str(), t.as_str());
                    let labels = format!("algorithm=\"{a}\",node=\"4\",type=\"{t}\"");
                    assert_eq!(
                        sample(&text, name, &labels),
                        Some(0.0),
                        "{name}{{{labels}}}"
                    );
                }
            }
        }
        for r in invalid_reasons() {
            let labels = format!("node=\"4\",reason=\"{r}\"");
            assert_eq!(
                sample(&text, "electd_invalid_datagrams_total", &labels),
                Some(0.0),
                "{r}"
            );
        }
        let by_result = |name: &str, label: &str, values: &[&str], v: f64| {
            for x in values {
                let labels = if label < "node" {
                    format!("{label}=\"{x}\",node=\"4\"")
                } else {
                    format!("node=\"4\",{label}=\"{x}\"")
                };
                assert_eq!(
                    sample(&text, name, &labels),
                    Some(v),
                    "{name}{{{labels}}}:\n{text}"
                );
            }
        };
        by_result("electd_send_errors_total", "kind", &SEND_ERROR_KINDS, 0.0);
        by_result("electd_errors_total", "class", &ERROR_CLASSES, 0.0);
        by_result(
            "electd_key_reloads_total",
            "result",
            &KEY_RELOAD_RESULTS,
            0.0,
        );
        by_result("electd_hook_runs_total", "result", &HOOK_RESULTS, 0.0);
        by_result(
            "electd_health",
            "check",
            &crate::daemon::shared::HEALTH_CHECKS,
            1.0,
        );
    }

    /// The label values the code passes to the counters above, read from the source
    /// (`metrics.error("x")`, `count_invalid("x")`, …), are all among those created at
    /// start: a new class or reason added without its zero fails here.
    #[test]
    fn every_label_value_the_code_counts_is_created_at_start() {
        fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).expect("read src").flatten() {
                let p = e.path();
                if p.is_dir() {
                    files(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let mut paths = Vec::new();
        files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut paths,
        );
        let known: Vec<(&str, Vec<&str>)> = vec![
            ("metrics.error(\"", ERROR_CLASSES.to_vec()),
            ("send_error(\"", SEND_ERROR_KINDS.to_vec()),
            ("key_reload(\"", KEY_RELOAD_RESULTS.to_vec()),
            ("hook_run(\"", HOOK_RESULTS.to_vec()),
            ("count_invalid(\"", crate::node::NODE_DROP_REASONS.to_vec()),
        ];
        let mut found = 0;
        for path in paths {
            if path.ends_with("daemon/metrics.rs") {
                continue; // this file's own tests call them with examples
            }
            let src = std::fs::read_to_string(&path).expect("read source");
            for (call, values) in &known {
                for (i, _) in src.match_indices(call) {
                    let rest = &src[i + call.len()..];
                    let value = &rest[..rest.find('"').expect("closing quote")];
                    assert!(
                        values.contains(&value),
                        "{}: {call}{value}\") is not created at start (known: {values:?})",
                        path.display()
                    );
                    found += 1;
                }
            }
        }
        // The calls this test reads exist (it would pass vacuously if they were renamed).
        assert!(
            found >= ERROR_CLASSES.len() + crate::node::NODE_DROP_REASONS.len(),
            "found {found}"
        );
        // send_error_kind's every answer is known too.
        use std::io::{Error, ErrorKind as K};
        let errors = [
            Error::from(K::PermissionDenied),
            Error::from(K::NetworkUnreachable),
            Error::from(K::HostUnreachable),
            Error::from(K::AddrNotAvailable),
            Error::from(K::ConnectionRefused),
            Error::from(K::WouldBlock),
            Error::from(K::InvalidInput),
            Error::from_raw_os_error(105),
            Error::from_raw_os_error(90),
            Error::other("x"),
        ];
        for e in errors {
            let kind = crate::daemon::socket::send_error_kind(&e);
            assert!(SEND_ERROR_KINDS.contains(&kind), "{kind}");
        }
    }

    /// What a node counts in its first election is counted by series that existed
    /// before it (so increase() from a scrape before the election sees all of it).
    #[test]
    fn the_first_election_is_counted_by_series_that_existed_before_it() {
        for a in AlgorithmKind::ALL {
            let m = Metrics::new(3, &[a]).expect("registry");
            let before = m.encode();
            let mut node = test_node(3, &[1, 2, 3], &[a]);
            node.start(Duration::ZERO, true);
            // Raft first waits out its election timeout: run the node's timers (peers
            // are silent) until it has sent something, a bounded number of times.
            let sent_any = |node: &Node| {
                let stats = node.group_stats(a).expect("group");
                MessageType::ALL.iter().any(|&t| stats.sent_of(t) > 0)
            };
            for _ in 0..100 {
                if sent_any(&node) {
                    break;
                }
                let Some(at) = node.poll_timeout() else { break };
                node.handle_timeout(at);
            }
            assert!(sent_any(&node), "{a:?} sent nothing at start");
            m.sync(&node);
            let after = m.encode();
            let stats = node.group_stats(a).expect("group");
            for t in MessageType::ALL
                .into_iter()
                .filter(|&t| stats.sent_of(t) > 0)
            {
                let labels = format!(
                    "algorithm=\"{}\",node=\"3\",type=\"{}\"",
                    a.as_str(),
                    t.as_str()
                );
                let name = "electd_messages_sent_total";
                assert_eq!(sample(&before, name, &labels), Some(0.0), "{labels} before");
                assert_eq!(
                    sample(&after, name, &labels),
                    Some(stats.sent_of(t) as f64),
                    "{labels} after"
                );
            }
        }
    }
}
