//! Message counts from the literature, for `compare` and the reports. Each entry names
//! its source. Tests do not use these functions: they recompute the formulas inline,
//! so a mistake here cannot hide a mistake in an algorithm.

use crate::algorithm::AlgorithmKind;
use crate::sim::scenario::RingOrder;

/// One line of the comparison: an algorithm on one ring order, with its formula.
#[derive(Clone, Debug)]
pub struct Case {
    pub algorithm: AlgorithmKind,
    pub order: RingOrder,
    /// Short label for tables and the plot legend.
    pub label: String,
    /// Human form of the formula, with its source.
    pub formula: &'static str,
    /// Expected election messages for N nodes with the lowest id initiating, if the
    /// literature gives a closed form for this case.
    pub expected: Option<fn(u64) -> f64>,
    /// Is `expected` an exact count (true) or an upper bound / average (false)?
    pub exact: bool,
}

/// Bully, initiator of rank k among N (ids 1..N), synchronous network, all alive:
/// (N−k+1)(N−k) + N − 1 (seed report, Eq. 1; Garcia-Molina 1982).
pub fn bully(n: u64, k: u64) -> u64 {
    (n - k + 1) * (n - k) + n - 1
}

/// Improved Bully, initiator of rank k: 3N − 2k (seed report, Eq. 2;
/// Soundarabai et al. 2014, Table 1).
pub fn improved_bully(n: u64, k: u64) -> u64 {
    3 * n - 2 * k
}

/// The comparison cases of `algorithm` (empty for an algorithm without one).
pub fn cases(algorithm: AlgorithmKind) -> Vec<Case> {
    match algorithm {
        AlgorithmKind::Bully => vec![Case {
            algorithm,
            order: RingOrder::Ascending,
            label: "bully".into(),
            formula: "N²−1 (Garcia-Molina 1982; seed report Eq. 1, k=1)",
            expected: Some(|n| bully(n, 1) as f64),
            exact: true,
        }],
        AlgorithmKind::ImprovedBully => vec![Case {
            algorithm,
            order: RingOrder::Ascending,
            label: "improved-bully".into(),
            formula: "3N−2 (Soundarabai et al. 2014 Table 1; seed report Eq. 2, k=1)",
            expected: Some(|n| improved_bully(n, 1) as f64),
            exact: true,
        }],
        _ => Vec::new(),
    }
}
