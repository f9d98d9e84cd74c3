//! Message counts from the literature, for `compare` and the reports. Each entry names
//! its source. Tests do not use these functions: they recompute the formulas inline,
//! so a mistake here cannot hide a mistake in an algorithm.

use crate::contract::algorithm::AlgorithmKind;
use crate::NodeId;
use serde::Serialize;
use std::str::FromStr;

/// How ids are placed around the ring (`--ring-order`): the literature states the
/// ring family's counts per order, and the simulator places its ids by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RingOrder {
    /// 1, 2, …, N clockwise.
    Ascending,
    /// N, N−1, …, 1 clockwise.
    Descending,
    /// A random permutation drawn from the seed.
    Random,
}

impl FromStr for RingOrder {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ascending" => Ok(RingOrder::Ascending),
            "descending" => Ok(RingOrder::Descending),
            "random" => Ok(RingOrder::Random),
            _ => Err(format!(
                "unknown ring order {s:?}; expected ascending, descending or random"
            )),
        }
    }
}

impl RingOrder {
    /// Ids 1..=n arranged in this order (random ones drawn from `seed`).
    pub fn ids(self, n: usize, seed: u64) -> Vec<NodeId> {
        let mut ids: Vec<NodeId> = (1..=n as NodeId).collect();
        match self {
            RingOrder::Ascending => {}
            RingOrder::Descending => ids.reverse(),
            RingOrder::Random => {
                crate::contract::rng::Rng::new(seed ^ 0x005E_ED0F_0DE5).shuffle(&mut ids)
            }
        }
        ids
    }
}

/// One line of the comparison: an algorithm on one ring order, with its formula.
#[derive(Clone, Debug)]
pub struct Case {
    /// The algorithm counted.
    pub algorithm: AlgorithmKind,
    /// The ring order (ids placed ascending, descending or at random).
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
pub(crate) fn bully(n: u64, k: u64) -> u64 {
    (n - k + 1) * (n - k) + n - 1
}

/// Improved Bully, initiator of rank k: 3N − 2k (seed report, Eq. 2;
/// Soundarabai et al. 2014, Table 1).
pub(crate) fn improved_bully(n: u64, k: u64) -> u64 {
    3 * n - 2 * k
}

/// Ring with an id list, one initiator, N live members: N ELECTION + N COORDINATOR
/// hops (Tanenbaum & van Steen §6.5.1; seed slides "A Ring Algorithm").
pub(crate) fn ring(n: u64) -> u64 {
    2 * n
}

/// LCR election messages, ids decreasing clockwise (worst case): n(n+1)/2
/// (Chang & Roberts 1979; seed textbook, "simpler version").
pub(crate) fn lcr_worst(n: u64) -> u64 {
    n * (n + 1) / 2
}

/// LCR election messages, ids increasing clockwise (best case): 2n − 1.
pub(crate) fn lcr_best(n: u64) -> u64 {
    (2 * n).saturating_sub(1)
}

/// LCR average election messages over random orders: n·H_n (Chang & Roberts 1979).
pub(crate) fn lcr_average(n: u64) -> f64 {
    n as f64 * (1..=n).map(|k| 1.0 / k as f64).sum::<f64>()
}

/// ⌈log₂ n⌉ (0 for n ≤ 1).
pub(crate) fn ceil_log2(n: u64) -> u64 {
    if n <= 1 {
        0
    } else {
        u64::from(64 - (n - 1).leading_zeros())
    }
}

/// Hirschberg–Sinclair probe + reply messages: at most 8n(1 + ⌈log₂ n⌉) (seed
/// textbook, Theorem 13.10; Hirschberg & Sinclair 1980).
pub(crate) fn hs_bound(n: u64) -> u64 {
    8 * n * (1 + ceil_log2(n))
}

/// Raft election on a clean start, one initiator, nobody following a leader: each of
/// the N−1 peers gets one request and sends one reply per round; with pre-vote there
/// are two rounds (pre-vote, then RequestVote): 4(N−1), else 2(N−1)
/// (Ongaro & Ousterhout 2014 §5.2; Ongaro's thesis §9.6).
pub(crate) fn raft(n: u64, pre_vote: bool) -> u64 {
    let rounds = if pre_vote { 2 } else { 1 };
    2 * rounds * n.saturating_sub(1)
}
