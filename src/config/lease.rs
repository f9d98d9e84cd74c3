//! `[lease]`: which groups keep a quorum lease (`require_quorum`; Raft keeps one with
//! check-quorum) and the clock-drift bound subtracted from it, with
//! `[lease.<algorithm>]` overrides of the same keys.

use super::raw::{RawLease, RawLeaseOf};
use super::validate::Validator;
use super::ConfigError;
use crate::contract::algorithm::{AlgorithmKind, LeaseOptions};
use serde::Deserialize;

impl Validator<'_> {
    /// `[lease]` resolved per algorithm (`[lease.<algorithm>]` over `[lease]`).
    pub(super) fn lease(
        &self,
        raw: &RawLease,
        algorithms: &[AlgorithmKind],
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
            let quorum = own
                .and_then(|o| o.require_quorum)
                .or(raw.require_quorum)
                .unwrap_or(false);
            if quorum && kind != AlgorithmKind::Raft {
                out.require_quorum.push(kind);
            }
            let (key, drift) = match own.and_then(|o| o.clock_drift.clone()) {
                Some(d) => (format!("lease.{kind}.clock_drift"), Some(d)),
                None => ("lease.clock_drift".to_string(), raw.clock_drift.clone()),
            };
            if let Some(d) = drift {
                let d = humantime::parse_duration(d.trim()).map_err(|e| {
                    self.err(&key, format!("{d:?} is not a duration like \"10ms\" ({e})"))
                })?;
                out.clock_drift.push((kind, d));
            }
        }
        Ok(out)
    }
}
