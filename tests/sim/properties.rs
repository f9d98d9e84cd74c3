//! Property: after random crashes, restarts and up to 20% loss, once faults stop and
//! the network is clean, every live node agrees on a live leader — the highest live
//! id for the algorithms that promise it — within the recovery bound derived from the
//! timeouts in `electd::sim::chaos::recovery_bound` (its doc gives the derivation).
//!
//! Runs every algorithm of this build over 1,000 seeds each (the checks live in
//! `electd::sim::campaign`, shared with `electd chaos`). A failure prints the seed and
//! the command that replays it with `electd simulate`.

use electd::contract::algorithm::AlgorithmKind;
use electd::sim::campaign::{self, Violation};
use electd::sim::chaos::{self, ChaosParams, FaultSet};
use electd::sim::{Sim, SimConfig};

const SEEDS: u64 = 1_000;

fn property(kind: AlgorithmKind) {
    property_with(kind, FaultSet::Basic, SEEDS);
}

fn property_with(kind: AlgorithmKind, faults: FaultSet, seeds: u64) {
    let failures: Vec<Violation> = (0..seeds)
        .filter_map(|s| campaign::check_seed(kind, s, faults).err())
        .collect();
    let shown: Vec<String> = failures
        .iter()
        .take(3)
        .map(|v| {
            format!(
                "seed {}: {} — {}\n  replay: {}",
                v.seed,
                v.property,
                v.detail,
                v.replay()
            )
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{kind}, {faults:?} faults: {} of {seeds} seeds failed; first ones:\n{}",
        failures.len(),
        shown.join("\n")
    );
}

#[test]
fn bully_converges_to_highest_live_id_after_faults() {
    property(AlgorithmKind::Bully);
}

#[test]
fn improved_bully_converges_to_highest_live_id_after_faults() {
    property(AlgorithmKind::ImprovedBully);
}

#[test]
fn every_other_algorithm_in_this_build_converges_after_faults() {
    for kind in AlgorithmKind::available() {
        if !matches!(kind, AlgorithmKind::Bully | AlgorithmKind::ImprovedBully) {
            property(kind);
        }
    }
}

/// The chaos campaign (`electd chaos`) with the full fault set — crashes, restarts,
/// symmetric and one-way partitions, loss, duplication, reordering — over 500 seeds of
/// every algorithm; Raft is also checked for election safety (one leader per term).
/// `electd chaos --seeds 10000` runs the long version.
#[test]
fn full_fault_campaign_finds_no_violation() {
    for kind in AlgorithmKind::available() {
        property_with(kind, FaultSet::Full, 500);
    }
}

/// The replay command really replays: `simulate --scenario chaos` runs the same plan as
/// the campaign for the same seed and size.
#[test]
fn simulate_chaos_replays_the_campaign_run() {
    use electd::sim::runner::{simulate, SimulateParams};
    use electd::sim::scenario::Scenario;
    for seed in 0..20 {
        let kind = AlgorithmKind::Bully;
        let n = campaign::nodes_for(seed);
        let mut p = SimulateParams::new(kind, n);
        p.scenario = Scenario::Chaos;
        p.seed = seed;
        let report = simulate(&p).expect("simulate");
        let mut cfg = SimConfig::new(kind, n, seed);
        cfg.net = chaos::clean_net();
        let bound = chaos::recovery_bound(
            kind,
            &cfg.timing,
            &electd::node::link::LinkConfig::default(),
            n,
        );
        let ops = chaos::plan(seed, &cfg.ids, &FaultSet::Basic.params(), bound);
        let mut sim = Sim::new(cfg).expect("sim");
        sim.run_ops(&ops).expect("ops");
        sim.end_measure();
        assert_eq!(report.elections, sim.elections, "seed {seed}");
    }
}

/// The simulator's replay promise: the same seed gives the same run.
#[test]
fn chaos_plans_replay_exactly() {
    let kind = AlgorithmKind::Bully;
    let run = |seed| {
        let mut cfg = SimConfig::new(kind, 6, seed);
        cfg.net = chaos::clean_net();
        let ops = chaos::plan(
            seed,
            &cfg.ids,
            &ChaosParams::default(),
            std::time::Duration::from_millis(500),
        );
        let mut sim = Sim::new(cfg).expect("sim");
        sim.run_ops(&ops).expect("ops");
        (sim.totals(kind), sim.link_totals(), sim.claims.clone())
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

/// Guard against a vacuous property: the plans really crash nodes, lose datagrams and
/// force elections.
#[test]
fn chaos_plans_really_inject_faults() {
    use electd::sim::scenario::Op;
    let (mut crashes, mut restarts, mut lossy) = (0, 0, 0);
    let mut elections = 0u64;
    for seed in 0..100 {
        let mut cfg = SimConfig::new(AlgorithmKind::Bully, 6, seed);
        cfg.net = chaos::clean_net();
        let ops = chaos::plan(
            seed,
            &cfg.ids,
            &ChaosParams::default(),
            std::time::Duration::from_millis(500),
        );
        crashes += ops.iter().filter(|o| matches!(o, Op::Crash(_))).count();
        restarts += ops
            .iter()
            .filter(|o| matches!(o, Op::Restart { .. }))
            .count();
        lossy += ops
            .iter()
            .filter(|o| matches!(o, Op::Net(n) if n.loss > 0.0))
            .count();
        let mut sim = Sim::new(cfg).expect("sim");
        sim.run_ops(&ops).expect("ops");
        elections += sim.claims.len() as u64;
    }
    assert!(
        crashes > 300 && restarts > 100 && lossy > 200,
        "{crashes} {restarts} {lossy}"
    );
    assert!(
        elections > 200,
        "only {elections} leadership claims in 100 runs"
    );
}
