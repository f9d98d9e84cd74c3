//! What the runtime, the hooks and the health checks count or set directly, one
//! method per series.

use super::*;

impl Metrics {
    /// A datagram of `bytes` went on the wire.
    pub(crate) fn datagram_sent(&self, bytes: usize) {
        self.datagrams_sent.inc();
        self.bytes_sent.inc_by(bytes as u64);
    }

    /// A datagram was read from the heartbeat socket.
    pub(crate) fn heartbeat_batched(&self) {
        self.heartbeats_batched.inc();
    }

    /// A gap between two heartbeats in a row of the leader `group` follows.
    pub(crate) fn heartbeat_gap(&self, group: AlgorithmKind, gap: std::time::Duration) {
        self.heartbeat_gap
            .with_label_values(&[group.as_str()])
            .observe(gap.as_secs_f64());
    }

    /// A write of the state file took `took`.
    pub(crate) fn state_written(&self, took: std::time::Duration) {
        self.state_write.observe(took.as_secs_f64());
    }

    /// The runtime woke `late` after its deadline.
    pub(crate) fn timer_late(&self, late: std::time::Duration) {
        self.timer_lateness.observe(late.as_secs_f64());
    }

    /// A datagram of `bytes` carrying a message of `group` went on the wire (counted
    /// in addition to [`Metrics::datagram_sent`]).
    pub(crate) fn group_datagram_sent(&self, group: AlgorithmKind, bytes: usize) {
        self.group_bytes_sent
            .with_label_values(&[group.as_str()])
            .inc_by(bytes as u64);
    }

    /// A datagram was dropped before reaching the node (decode, authentication, …).
    /// Reasons counted by the node itself go through [`Metrics::sync`].
    pub(crate) fn invalid_datagram(&self, reason: &str) {
        self.invalid.with_label_values(&[reason]).inc();
    }

    /// The OS refused a send (`kind`: e.g. `permission_denied`, `network_unreachable`).
    pub(crate) fn send_error(&self, kind: &str) {
        self.send_errors.with_label_values(&[kind]).inc();
    }

    /// A leader-change hook finished with `result` (`ok`, `failed`, `timeout`, `error`).
    pub(crate) fn hook_run(&self, result: &str) {
        self.hook_runs.with_label_values(&[result]).inc();
    }

    /// The `[[vip]]` addresses of this node: their series start at 0.
    pub(crate) fn vip_known(&self, addresses: &[String]) {
        for a in addresses {
            self.vip_held.with_label_values(&[a]).set(0);
            for op in ["add", "delete", "announce"] {
                for result in ["ok", "error"] {
                    self.vip_operations.with_label_values(&[a, op, result]);
                }
            }
        }
    }

    /// A `[[vip]]` request to the kernel ended with `result`.
    pub(crate) fn vip_operation(&self, address: &str, operation: &str, result: &str) {
        self.vip_operations
            .with_label_values(&[address, operation, result])
            .inc();
    }

    /// Whether this node holds the `[[vip]]` address.
    pub(crate) fn vip_held(&self, address: &str, held: bool) {
        self.vip_held
            .with_label_values(&[address])
            .set(i64::from(held));
    }

    /// `n` leader changes got no hook run because the hook fell behind (the hook then
    /// runs once per group with the current state instead).
    pub(crate) fn hook_skipped(&self, n: u64) {
        self.hook_runs.with_label_values(&["skipped"]).inc_by(n);
    }

    /// A `SIGHUP` key reload finished with `result` (`ok`, `failed`, `insecure`).
    pub fn key_reload(&self, result: &str) {
        self.key_reloads.with_label_values(&[result]).inc();
    }

    /// A failure of `class` (`state_write`, `receive`, `resolve`).
    pub(crate) fn error(&self, class: &str) {
        self.errors.with_label_values(&[class]).inc();
    }

    /// The state of one health check (see [`crate::daemon::shared::HEALTH_CHECKS`]).
    pub(crate) fn set_health(&self, check: &str, passing: bool) {
        self.health
            .with_label_values(&[check])
            .set(i64::from(passing));
    }

    /// A configured check's series, created when the check starts (so that its first
    /// failure shows in `rate()`): up, and every result at zero.
    pub(crate) fn check_registered(&self, check: &str) {
        self.check_up.with_label_values(&[check]).set(1);
        for result in ["pass", "fail", "timeout", "error"] {
            self.check_runs.with_label_values(&[check, result]);
        }
    }

    /// A run of check `check` ended with `result` (`pass`, `fail`, `timeout`, `error`).
    pub(crate) fn check_run(&self, check: &str, result: &str) {
        self.check_runs.with_label_values(&[check, result]).inc();
    }

    /// Check `check` is passing (`true`) or failing after its rise/fall counts.
    pub(crate) fn set_check_up(&self, check: &str, up: bool) {
        self.check_up.with_label_values(&[check]).set(i64::from(up));
    }

    /// This node is in FAULT (a failing check) in `algorithm`'s group, or not.
    pub(crate) fn set_fault(&self, algorithm: AlgorithmKind, on: bool) {
        self.fault
            .with_label_values(&[algorithm.as_str()])
            .set(i64::from(on));
    }

    /// The operator drained this node in `algorithm`'s group (`on`), or undrained it.
    pub(crate) fn set_drained(&self, algorithm: AlgorithmKind, on: bool) {
        self.drained
            .with_label_values(&[algorithm.as_str()])
            .set(i64::from(on));
    }

    /// Weighted checks take `penalty` off this node's priority in `algorithm`'s group.
    pub(crate) fn set_penalty(&self, algorithm: AlgorithmKind, penalty: u8) {
        self.priority_penalty
            .with_label_values(&[algorithm.as_str()])
            .set(i64::from(penalty));
    }

    /// The `config_mismatch` series of every peer, at 0 (at start, with the roster
    /// without this node: [`crate::daemon::shared::Shared::set_config_digest`]).
    pub(crate) fn config_peers(&self, peers: &[NodeId]) {
        for p in peers {
            self.config_mismatch
                .with_label_values(&[&p.to_string()])
                .set(0);
        }
    }

    /// Peer `peer`'s configuration digest differs from this node's (`true`) or not.
    pub(crate) fn set_config_mismatch(&self, peer: NodeId, mismatch: bool) {
        self.config_mismatch
            .with_label_values(&[&peer.to_string()])
            .set(i64::from(mismatch));
    }
}
