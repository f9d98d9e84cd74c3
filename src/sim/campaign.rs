//! The chaos campaign: many seeded fault plans per algorithm, each checked for the
//! algorithm's safety and liveness properties.
//!
//! - Liveness (every algorithm): once faults stop, within the recovery bound every live
//!   node agrees on a live leader and its term — the highest live id for the Bully and
//!   ring families. Raft with fewer than a majority of the roster alive must instead
//!   have no leader. The cluster must then stay settled: no node changes its leader or
//!   term for [`SETTLE_TIMEOUTS`] failure timeouts (`stays-settled`).
//! - Token safety (every algorithm, `sim/tokens.rs`): the fencing token a node
//!   adopts never goes back, and no two nodes lead one group with the same token at
//!   the same moment, over the whole run, faults included (`token-safety`).
//! - Election safety (Raft, Ongaro & Ousterhout 2014 §5.2): at most one leader per
//!   term over the whole run. The classic algorithms make no such promise under
//!   partitions (each side of a cut elects its own leader, by design); their two
//!   leaders hold different tokens.
//!
//! A violation carries everything needed to replay it with `electd simulate`.

use crate::contract::algorithm::AlgorithmKind;
use crate::node::link::LinkConfig;
use crate::sim::chaos::{self, FaultSet};
use crate::sim::scenario::Op;
use crate::sim::{Sim, SimConfig};
use crate::NodeId;
use std::collections::HashMap;
use std::time::Duration;

/// One failed check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The algorithm of the failing run.
    pub algorithm: AlgorithmKind,
    /// The seed of the failing run: with the other fields it replays the run exactly.
    pub seed: u64,
    /// Roster size of the failing run.
    pub(crate) nodes: usize,
    /// The property that failed: `setup`, `election-safety`, `liveness`, `stays-settled`
    /// or `token-safety`.
    pub property: &'static str,
    /// What was observed (nodes, leaders, terms), for the report.
    pub detail: String,
    /// The fault mix of the run.
    pub(crate) faults: FaultSet,
}

impl Violation {
    /// The command that replays this run.
    pub fn replay(&self) -> String {
        format!(
            "electd simulate -a {} -n {} --scenario chaos --faults {} --seed {}",
            self.algorithm,
            self.nodes,
            self.faults.as_str(),
            self.seed
        )
    }
}

/// Cluster size used for `seed` (3..=8, so odd and even majorities both occur).
pub fn nodes_for(seed: u64) -> usize {
    3 + (seed % 6) as usize
}

/// Run one seed of `kind` and check its properties.
pub fn check_seed(kind: AlgorithmKind, seed: u64, faults: FaultSet) -> Result<(), Violation> {
    let n = nodes_for(seed);
    let fail = |property: &'static str, detail: String| Violation {
        algorithm: kind,
        seed,
        nodes: n,
        property,
        detail,
        faults,
    };
    let mut cfg = SimConfig::new(kind, n, seed);
    cfg.net = chaos::clean_net();
    let bound = chaos::recovery_bound(kind, &cfg.timing, &LinkConfig::default(), n);
    let ops = chaos::plan(seed, &cfg.ids, &faults.params(), bound);
    let mut sim = Sim::new(cfg).map_err(|e| fail("setup", e.to_string()))?;
    sim.run_ops(&ops)
        .map_err(|e| fail("setup", e.to_string()))?;

    // Election safety of majority voting (Raft §5.2): at most one leader per term.
    if kind.info().leads_by_majority() {
        let mut by_term: HashMap<u64, NodeId> = HashMap::new();
        for c in &sim.claims {
            if let Some(&other) = by_term.get(&c.term) {
                if other != c.node {
                    return Err(fail(
                        "election-safety",
                        format!(
                            "term {} led by both {other} and {} (at {:?})",
                            c.term, c.node, c.at
                        ),
                    ));
                }
            }
            by_term.insert(c.term, c.node);
        }
    }

    let settled = settled_state(&sim, kind, n).map_err(|d| fail("liveness", d))?;
    // Settled must stay settled: no node changes its leader or term for several
    // failure timeouts after the bound.
    let settled_at = sim.now();
    let window = settle_window(kind, &sim.config().timing);
    sim.run_ops(&[Op::RunFor(window)])
        .map_err(|e| fail("setup", e.to_string()))?;
    let later = settled_state(&sim, kind, n).map_err(|d| fail("stays-settled", d))?;
    if later != settled || sim.last_leader_change() > settled_at {
        return Err(fail(
            "stays-settled",
            format!(
                "settled on {settled:?} {bound:?} after faults stopped, but a node changed \
                 its leader or term {:?} later (now {later:?})",
                sim.last_leader_change().saturating_sub(settled_at)
            ),
        ));
    }
    if sim.tokens.count > 0 {
        return Err(fail(
            "token-safety",
            format!(
                "{} violation(s): {}",
                sim.tokens.count,
                sim.tokens.violations.join("; ")
            ),
        ));
    }
    Ok(())
}

/// How long a settled cluster must stay settled: several failure timeouts (Raft: its
/// election timeout plays that part).
pub(crate) fn settle_window(
    kind: AlgorithmKind,
    timing: &crate::contract::algorithm::Timing,
) -> Duration {
    let f = if kind.info().uses_failure_detector() {
        timing.failure_timeout
    } else {
        timing.election_timeout_max
    };
    f * SETTLE_TIMEOUTS
}

/// Failure timeouts a settled cluster is watched for.
pub(crate) const SETTLE_TIMEOUTS: u32 = 5;

/// The settled state of `kind` now: `None` when Raft rightly has no leader (no
/// majority alive), else the leader and term every live node agrees on — the highest
/// live id for the Bully and ring families. An error describes what is not settled.
fn settled_state(
    sim: &Sim,
    kind: AlgorithmKind,
    n: usize,
) -> Result<Option<(NodeId, u64)>, String> {
    let live = sim.live_ids();
    let expected = live.iter().copied().max();
    // Raft needs a majority of the roster alive (§5.2): with fewer, electing nobody is
    // the correct outcome, and any live node believing in a leader is the violation.
    let quorum_lost = kind.info().leads_by_majority() && live.len() < n / 2 + 1;
    let status = |id: NodeId| sim.node(id).and_then(|x| x.group_status(kind));
    let nobody_leads = || {
        live.iter()
            .all(|&id| sim.node(id).and_then(|x| x.leader(kind)).is_none())
    };
    let terms: Vec<u64> = live
        .iter()
        .filter_map(|&id| status(id).map(|s| s.term))
        .collect();
    let one_term = terms.windows(2).all(|w| w[0] == w[1]);
    match sim.agreement(kind) {
        _ if quorum_lost && nobody_leads() => Ok(None),
        Some(l)
            if !quorum_lost && one_term && (!kind.elects_highest_id() || Some(l) == expected) =>
        {
            Ok(Some((l, terms.first().copied().unwrap_or(0))))
        }
        agreed => {
            let beliefs: Vec<String> = live
                .iter()
                .map(|&id| {
                    let s = status(id);
                    format!(
                        "{id}→{:?}@{}",
                        s.as_ref().and_then(|s| s.leader),
                        s.map_or(0, |s| s.term)
                    )
                })
                .collect();
            Err(format!(
                "agreement {agreed:?}, highest live {expected:?}, leader@term {}",
                beliefs.join(" ")
            ))
        }
    }
}

/// Summary of a campaign for one algorithm.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Seeds run for this algorithm.
    pub seeds: u64,
    /// Every failed check, at most one per seed.
    pub violations: Vec<Violation>,
}

/// Run seeds `start..start+count` of every algorithm in `kinds` on `threads` threads.
/// `progress(done, total)` is called now and then from the calling thread.
pub fn run(
    kinds: &[AlgorithmKind],
    start: u64,
    count: u64,
    faults: FaultSet,
    threads: usize,
    mut progress: impl FnMut(u64, u64),
) -> Vec<(AlgorithmKind, Outcome)> {
    let threads = threads.max(1) as u64;
    let total = count * kinds.len() as u64;
    let mut done = 0u64;
    let mut results = Vec::new();
    for &kind in kinds {
        let violations = std::thread::scope(|scope| {
            let (tick, ticks) = std::sync::mpsc::channel::<()>();
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let tick = tick.clone();
                    scope.spawn(move || {
                        let mut v = Vec::new();
                        let mut seed = start + t;
                        while seed < start + count {
                            if let Err(x) = check_seed(kind, seed, faults) {
                                v.push(x);
                            }
                            let _ = tick.send(());
                            seed += threads;
                        }
                        v
                    })
                })
                .collect();
            drop(tick);
            // Ends when every worker has dropped its sender.
            for () in ticks {
                done += 1;
                if done % 100 == 0 || done == total {
                    progress(done, total);
                }
            }
            let mut v: Vec<Violation> = handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect();
            v.sort_by_key(|x| x.seed);
            v
        });
        results.push((
            kind,
            Outcome {
                seeds: count,
                violations,
            },
        ));
    }
    results
}
