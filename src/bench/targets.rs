//! The benchmark's failover targets per algorithm: what `electd bench` expects of a
//! SIGKILL failover, as multiples of `failure_timeout`. They are the bench's, not the
//! algorithms' (the library knows nothing of them); the `match` is exhaustive, so a
//! new algorithm does not build until its target is set here.

use electd::contract::algorithm::AlgorithmKind;

/// Failover targets of the benchmark, as multiples of `failure_timeout`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FailoverTarget {
    /// Median failover after SIGKILL of the leader.
    pub median: f64,
    /// 99th percentile, where a target is set.
    pub p99: Option<f64>,
}

/// The failover target of `kind`.
pub fn failover_target(kind: AlgorithmKind) -> FailoverTarget {
    let (median, p99) = match kind {
        AlgorithmKind::Bully => (1.10, Some(1.30)),
        AlgorithmKind::ImprovedBully => (1.20, None),
        AlgorithmKind::Ring => (1.10, Some(1.30)),
        AlgorithmKind::Lcr => (1.10, Some(1.30)),
        AlgorithmKind::Hs => (1.10, Some(1.30)),
        AlgorithmKind::Raft => (1.25, None),
    };
    FailoverTarget { median, p99 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_is_at_least_the_failure_timeout() {
        for kind in AlgorithmKind::ALL {
            let t = failover_target(kind);
            assert!(t.median >= 1.0, "{kind}");
            assert!(t.p99.is_none_or(|p| p >= t.median), "{kind}");
        }
    }
}
