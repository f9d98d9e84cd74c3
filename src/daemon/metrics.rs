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
//! (`heartbeat`, `heartbeat_ack`, `priority`: [`MessageType::is_liveness`]) carries its
//! own `type` and is excluded from the "messages per election" figures by the
//! dashboard and the recording rules (a test holds their filters to that list).

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

mod labels;
mod record;
mod sync;
#[cfg(test)]
mod tests;

pub use labels::invalid_reasons;
pub(crate) use labels::{election_buckets, failover_buckets};
#[cfg(test)]
use labels::{known_message_types, HOOK_RESULTS, KEY_RELOAD_RESULTS, SEND_ERROR_KINDS};
use labels::{process_registry, zero_known_series, ERROR_CLASSES};
use sync::Exported;

/// Per-algorithm slots of [`Exported`], indexed by `AlgorithmKind as usize`.
const ALGOS: usize = AlgorithmKind::ALL.len();
/// Per-type slots, indexed by `MessageType as usize`.
const TYPES: usize = MessageType::ALL.len();

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
    vip_held: IntGaugeVec,
    vip_operations: IntCounterVec,
    failover: HistogramVec,
    failover_detection: HistogramVec,
    failover_election: HistogramVec,
    heartbeat_gap: HistogramVec,
    timer_lateness: prometheus::Histogram,
    state_write: prometheus::Histogram,
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

/// Buckets of `electd_timer_lateness_seconds` and `electd_state_write_seconds`: 100 µs
/// to 1 s.
const TIMER_LATENESS_BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0,
];

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
            "Datagrams read from the heartbeat socket, in a batch, as of the time they \
             arrived (transport.batch_heartbeats): a followed leader's heartbeats, and on \
             a leader its followers' answers to them (Raft, [lease] require_quorum).",
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
        let vip_held = gauge_vec(
            "vip_held",
            "1 while this node holds the [[vip]] address (it leads the address's group).",
            &["address"],
        )?;
        let vip_operations = counter_vec(
            "vip_operations_total",
            "[[vip]] requests to the kernel, by address, operation (add, delete, announce: \
             a gratuitous ARP) and result (ok, error).",
            &["address", "operation", "result"],
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
        let heartbeat_gap = histogram(
            "heartbeat_gap_seconds",
            "At a follower: time between two heartbeats in a row from the leader it follows, by arrival (the failure timeout's margin is failure_timeout minus the largest).",
        )?;
        let timer_lateness = prometheus::Histogram::with_opts(
            HistogramOpts::from(opts(
                "timer_lateness_seconds",
                "How late the runtime woke for its next deadline (a heartbeat to send, a detector deadline, a retransmission): the time the process waited for a CPU, mostly.",
            ))
            .buckets(TIMER_LATENESS_BUCKETS.to_vec()),
        )?;
        registry.register(Box::new(timer_lateness.clone()))?;
        let state_write = prometheus::Histogram::with_opts(
            HistogramOpts::from(opts(
                "state_write_seconds",
                "How long a write of the state file took (its fdatasync included): a claim's datagrams wait for it before they leave.",
            ))
            .buckets(TIMER_LATENESS_BUCKETS.to_vec()),
        )?;
        registry.register(Box::new(state_write.clone()))?;
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
            &format!(
                "Runtime failures without a counter of their own, by class ({}).",
                ERROR_CLASSES.join(", ")
            ),
            &["class"],
        )?;
        let health = gauge_vec(
            "health",
            &format!(
                "1 while a health check passes, 0 while it fails (check: {}); /healthz answers 503 while any is 0.",
                crate::daemon::shared::HEALTH_CHECKS.join(", ")
            ),
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
            "The sum of the weights of the failing weighted [[check]]s in the group, up to 255 (0: none); the priority drops by it but never below 1.",
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
            vip_held,
            vip_operations,
            failover,
            failover_detection,
            failover_election,
            heartbeat_gap,
            timer_lateness,
            state_write,
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
