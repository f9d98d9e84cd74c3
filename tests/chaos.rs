//! The chaos campaign (src/sim/campaign.rs, `electd chaos`) with the full fault set —
//! crashes, restarts, partitions, one-way cuts, loss, duplication, reordering — over
//! 500 seeds of every algorithm, in the ordinary suite. `electd chaos --seeds 10000`
//! runs the long version. A failure prints the command that replays it.

use electd::algorithm::AlgorithmKind;
use electd::sim::campaign::{self, Violation};
use electd::sim::chaos::FaultSet;

const SEEDS: u64 = 500;

#[test]
fn full_fault_campaign_finds_no_violation() {
    let mut runs = 0;
    let mut failures: Vec<Violation> = Vec::new();
    for kind in AlgorithmKind::available() {
        for seed in 0..SEEDS {
            runs += 1;
            if let Err(v) = campaign::check_seed(kind, seed, FaultSet::Full) {
                failures.push(v);
            }
        }
    }
    assert_eq!(runs, SEEDS as usize * AlgorithmKind::available().len());
    let shown: Vec<String> = failures
        .iter()
        .take(5)
        .map(|v| {
            format!(
                "{} seed {}: {} — {}\n  replay: {}",
                v.algorithm,
                v.seed,
                v.property,
                v.detail,
                v.replay()
            )
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {runs} runs violated a property:\n{}",
        failures.len(),
        shown.join("\n")
    );
}
