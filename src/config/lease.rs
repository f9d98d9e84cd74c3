//! `[lease]`: which groups keep a quorum lease (`require_quorum`; Raft keeps one with
//! check-quorum) and the clock-drift bound subtracted from it, with
//! `[lease.<algorithm>]` overrides of the same keys.
//!
//! A lease lasts `base − clock_drift` past the oldest of a majority's latest answers
//! (docs/leases.md), and those answers come once per heartbeat: where a group keeps a
//! lease, `clock_drift` must stay below `base − heartbeat` (`base`: Raft's
//! `election_timeout` min, `failure_timeout` otherwise). At or above it the lease
//! would run out before the next answers could renew it — with `clock_drift ≥ base` no
//! leader would ever hold one: `/is-leader` 503 on every leader, `electd exec` never
//! starting — so the configuration is refused, naming the key.

use super::raw::{RawLease, RawLeaseOf};
use super::validate::ms;
use super::validate::Validator;
use super::ConfigError;
use crate::contract::algorithm::{AlgorithmKind, LeaseOptions, Timing};
use serde::Deserialize;

impl Validator<'_> {
    /// `[lease]` resolved per algorithm (`[lease.<algorithm>]` over `[lease]`), and
    /// each kept lease's `clock_drift` checked against its base and the heartbeat
    /// (see the module documentation; `check_quorum`: Raft keeps a lease).
    pub(super) fn lease(
        &self,
        raw: &RawLease,
        algorithms: &[AlgorithmKind],
        timing: &Timing,
        check_quorum: bool,
    ) -> Result<LeaseOptions, ConfigError> {
        let mut own: Vec<(AlgorithmKind, RawLeaseOf)> = Vec::new();
        for (name, value) in &raw.per_algorithm {
            let key = format!("lease.{name}");
            let kind: AlgorithmKind = name.parse().map_err(|_| {
                self.err(
                    &key,
                    "unknown key: [lease] takes require_quorum, clock_drift and \
                     [lease.<algorithm>] tables",
                )
            })?;
            if !algorithms.contains(&kind) {
                return Err(self.err(&key, format!("{kind} is not in `algorithms`")));
            }
            let of = RawLeaseOf::deserialize(value.clone())
                .map_err(|e| self.err(&key, e.to_string().trim().to_string()))?;
            own.push((kind, of));
        }
        let mut out = LeaseOptions::default();
        for &kind in algorithms {
            let own = own.iter().find(|(k, _)| *k == kind).map(|(_, o)| o);
            // Raft's lease is its check-quorum's: a table of its own asking for
            // require_quorum would get nothing from it, so it is refused, not ignored.
            if kind.info().leads_by_majority() && own.and_then(|o| o.require_quorum) == Some(true) {
                return Err(self.err(
                    format!("lease.{kind}.require_quorum"),
                    format!(
                        "{kind} keeps its lease through its check-quorum ([raft] check_quorum, \
                         on by default), not through require_quorum: remove the key"
                    ),
                ));
            }
            let quorum = own
                .and_then(|o| o.require_quorum)
                .or(raw.require_quorum)
                .unwrap_or(false);
            if quorum && !kind.info().leads_by_majority() {
                out.require_quorum.push(kind);
            }
            let (key, drift) = match own.and_then(|o| o.clock_drift.clone()) {
                Some(d) => (format!("lease.{kind}.clock_drift"), Some(d)),
                None => ("lease.clock_drift".to_string(), raw.clock_drift.clone()),
            };
            let (base, base_name) = if kind.info().uses_failure_detector() {
                (timing.failure_timeout, "timing.failure_timeout")
            } else {
                (timing.election_timeout_min, "timing.election_timeout min")
            };
            let kept = if kind.info().leads_by_majority() {
                check_quorum
            } else {
                quorum
            };
            let given = drift.is_some();
            let d = match drift {
                // Above zero (a lease without a margin for drift and delay promises
                // more than any machine keeps) and at most a day, as every duration.
                Some(d) => self.duration(&key, &Some(d), base / 10)?,
                None => base / 10,
            };
            let room = base.saturating_sub(timing.heartbeat);
            if kept && d >= room {
                let what = if d >= base {
                    "no leader would ever hold a lease"
                } else {
                    "a leader's lease would run out between two heartbeats"
                };
                return Err(self.err(
                    &key,
                    format!(
                        "{}{} is not below {kind}'s lease base ({base_name} = {}) minus \
                         timing.heartbeat ({}): {what}, so /is-leader would answer 503 on \
                         the leader and `electd exec` would not start (or stop) its \
                         command. Set it below {} (docs/leases.md)",
                        ms(d),
                        if given {
                            ""
                        } else {
                            " (the default, a tenth of the base)"
                        },
                        ms(base),
                        ms(timing.heartbeat),
                        ms(room),
                    ),
                ));
            }
            if given {
                out.clock_drift.push((kind, d));
            }
        }
        Ok(out)
    }
}
