//! What the timing model predicts for a failover, and the failover targets per
//! algorithm.

use crate::bench::Results;
use electd::contract::algorithm::AlgorithmKind;

/// Median target of a SIGKILL failover, as a multiple of failure_timeout.
pub fn median_target(kind: AlgorithmKind) -> f64 {
    crate::bench::targets::failover_target(kind).median
}

/// p99 target where the issue sets one.
pub fn p99_target(kind: AlgorithmKind) -> Option<f64> {
    crate::bench::targets::failover_target(kind).p99
}

/// What the timing model predicts for the median (× failure_timeout): detection at
/// failure_timeout minus the mean heartbeat phase (hb/2), then the algorithm's own
/// waits (a cascade: its answer timeouts T; a ring lap of loopback hops, ~0;
/// randomized timeouts: the minimum of the survivors' timeouts, whose median lies at
/// ln 2 / s of the range above its start for s survivors).
pub fn model_median(kind: AlgorithmKind, r: &Results) -> f64 {
    use electd::contract::info::Recovery;
    let t = &r.failover.timing;
    let f = t.failure_ms as f64;
    let hb = t.heartbeat_ms as f64;
    let answer = t.answer_ms as f64;
    let ms = match kind.info().recovery {
        Recovery::Cascade { answer_rounds } => f - hb / 2.0 + f64::from(answer_rounds) * answer,
        Recovery::RandomizedTimeout => raft_model_ms(t, r.failover.nodes, 0.5),
        Recovery::RingLaps { .. } => f - hb / 2.0,
    };
    ms / f
}

/// Raft's failover after a crash at quantile `q` (ms), as the election timeouts are
/// drawn. Ranked timeouts (the default, `[raft] ranked_timeouts`): the highest
/// survivor fires first, `min + margin + J` after the last heartbeat it heard, with
/// J uniform in [0, w/4) for the slot width w = (max − min)/N and margin = min(hb/8,
/// w/2) (`LEASE_MARGIN_DIV`); the crash falls φ, uniform in [0, hb), after that
/// heartbeat. Uniform timeouts: the first of the N − 1 survivors' draws in [min, max),
/// less the median φ.
pub fn raft_model_ms(
    t: &electd::testkit::procs::ClusterTiming,
    nodes: electd::NodeId,
    q: f64,
) -> f64 {
    let min = t.election_min_ms as f64;
    let range = t.election_max_ms.saturating_sub(t.election_min_ms) as f64;
    let hb = t.heartbeat_ms as f64;
    if electd::contract::algorithm::Options::default().ranked_timeouts {
        let width = range / f64::from(nodes.max(1));
        let margin = lease_margin(hb).min(width / 2.0);
        min + margin + quantile_of_difference(width / 4.0, hb, q)
    } else {
        let survivors = f64::from(nodes.saturating_sub(1).max(1));
        min + range * (1.0 - (1.0 - q).powf(1.0 / survivors)) - hb / 2.0
    }
}

/// The ranked timeouts' margin after the lease, before the slot's half-slot cap (ms).
fn lease_margin(hb: f64) -> f64 {
    hb / f64::from(electd::algorithms::raft::LEASE_MARGIN_DIV)
}

/// Quantile `q` of J − φ for J uniform in [0, a) and φ uniform in [0, b), on a grid
/// fine enough for a report (0.25 % of the range).
fn quantile_of_difference(a: f64, b: f64, q: f64) -> f64 {
    const K: usize = 400;
    let mut v: Vec<f64> = Vec::with_capacity(K * K);
    for i in 0..K {
        for j in 0..K {
            let u = (i as f64 + 0.5) / K as f64;
            let w = (j as f64 + 0.5) / K as f64;
            v.push(a * u - b * w);
        }
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use electd::testkit::procs::ClusterTiming;

    #[test]
    fn quantiles_of_a_difference_of_uniforms() {
        // J − φ is symmetric about a/2 − b/2; with b = 0 it is J itself.
        assert!((quantile_of_difference(4.0, 0.0, 0.5) - 2.0).abs() < 0.02);
        assert!((quantile_of_difference(4.0, 0.0, 0.9) - 3.6).abs() < 0.02);
        assert!((quantile_of_difference(5.0, 10.0, 0.5) - (2.5 - 5.0)).abs() < 0.05);
        // Below the median, above the minimum.
        let p10 = quantile_of_difference(5.0, 10.0, 0.1);
        assert!(p10 > -10.0 && p10 < -2.5);
    }

    #[test]
    fn raft_model_follows_the_timeout_spread_in_use() {
        let t = ClusterTiming::failover();
        let median = raft_model_ms(&t, 5, 0.5);
        let p90 = raft_model_ms(&t, 5, 0.9);
        assert!(p90 > median);
        let min = t.election_min_ms as f64;
        let range = (t.election_max_ms - t.election_min_ms) as f64;
        let hb = t.heartbeat_ms as f64;
        if electd::contract::algorithm::Options::default().ranked_timeouts {
            // Slot width range/5, margin hb/8, jitter from the first quarter of a slot.
            let width = range / 5.0;
            let expect = min + (hb / 8.0).min(width / 2.0) + width / 8.0 - hb / 2.0;
            assert!((median - expect).abs() < 0.1, "{median} vs {expect}");
            assert!(p90 < min + (hb / 8.0) + width / 4.0);
        } else {
            let expect = min + range * (1.0 - 0.5f64.powf(1.0 / 4.0)) - hb / 2.0;
            assert!((median - expect).abs() < 1e-9);
        }
    }
}
