//! The label values known at start (drop reasons, send error kinds, error classes,
//! results, message types), the histograms' buckets, and every known series created
//! at 0 so that what a node counts before the first scrape is not lost.

use super::*;

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
pub(crate) fn election_buckets() -> Vec<f64> {
    exponential_buckets(0.001, 2.0, 15).unwrap_or_else(|_| vec![0.001])
}

/// Histogram buckets of the failover series, as multiples of the failure timeout
/// `ft` (the failover's natural unit, from the config): a few small ones for the
/// election phase, tenths of `ft` up to 2×`ft` where failovers fall (so that
/// `histogram_quantile` interpolates within a tenth of `ft`), then a coarse tail.
pub(crate) fn failover_buckets(ft: std::time::Duration) -> Vec<f64> {
    let ft = ft.as_secs_f64().max(1e-3);
    let mut m = vec![0.01, 0.02, 0.05];
    m.extend((1..=20).map(|i| f64::from(i) / 10.0));
    m.extend([2.5, 3.0, 4.0, 6.0, 8.0, 10.0, 20.0, 50.0]);
    m.into_iter().map(|x| x * ft).collect()
}

/// Every `kind` of `electd_send_errors_total`: no roster address, the operating
/// system's refusals ([`crate::daemon::socket::send_error_kind`]) and a datagram too
/// large to seal (`oversize`, the only error of [`crate::security::wire::Codec::encode`]).
pub(crate) const SEND_ERROR_KINDS: [&str; 11] = [
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
pub(crate) const ERROR_CLASSES: [&str; 5] = [
    "resolve",
    "receive",
    "heartbeat_select",
    "state_write",
    "state_held",
];

/// Every `result` of `electd_key_reloads_total`.
pub(crate) const KEY_RELOAD_RESULTS: [&str; 3] = ["ok", "failed", "insecure"];

/// Every `result` of `electd_hook_runs_total`.
pub(crate) const HOOK_RESULTS: [&str; 5] = ["ok", "failed", "timeout", "error", "skipped"];

/// The message types a group of `algorithm` may count: every type the group carries
/// (docs/wire.md §7): its own, the liveness and RESIGN messages every algorithm uses,
/// and its transfer and priority messages (TIMEOUT_NOW; HANDOFF and PRIORITY), which
/// appeared only when first sent, so `increase()` lost the first transfer.
pub(crate) fn known_message_types(algorithm: AlgorithmKind) -> impl Iterator<Item = MessageType> {
    let info = algorithm.info();
    MessageType::ALL
        .into_iter()
        .filter(move |&t| info.carries(t))
}

/// Create, at 0, every series whose labels are known at start: each group's message
/// types (sent and received), every drop reason, send error kind, error class, key
/// reload and hook result, and every health check (at 1: passing until told otherwise).
pub(super) fn zero_known_series(m: &Metrics, algorithms: &[AlgorithmKind]) {
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

/// The `process_*` collector of this process, labelled with `cluster` and `node` like
/// everything else.
pub(super) fn process_registry(cluster: &str, node: NodeId) -> Result<Registry, prometheus::Error> {
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
