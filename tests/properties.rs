//! Property: after random crashes, restarts and up to 20% loss, once faults stop and
//! the network is clean, every live node agrees on a live leader — the highest live
//! id for the algorithms that promise it — within the recovery bound derived from the
//! timeouts in `electd::sim::chaos::recovery_bound` (its doc gives the derivation).
//!
//! Runs every algorithm of this build over 1,000 seeds each. A failure prints the seed,
//! the plan, and the command that replays it.

use electd::algorithm::AlgorithmKind;
use electd::node::link::LinkConfig;
use electd::sim::chaos::{self, ChaosParams};
use electd::sim::{Sim, SimConfig};

const SEEDS: u64 = 1_000;

fn check(kind: AlgorithmKind, seed: u64) -> Result<(), String> {
    let n = 3 + (seed % 6) as usize; // 3..=8 nodes
    let mut cfg = SimConfig::new(kind, n, seed);
    cfg.net = chaos::clean_net();
    let bound = chaos::recovery_bound(kind, &cfg.timing, &LinkConfig::default(), n);
    let ops = chaos::plan(seed, &cfg.ids, &ChaosParams::default(), bound);
    let mut sim = Sim::new(cfg).map_err(|e| e.to_string())?;
    sim.run_ops(&ops).map_err(|e| e.to_string())?;
    let live = sim.live_ids();
    let agreed = sim.agreement(kind);
    let expected = live.iter().copied().max();
    let ok = match agreed {
        Some(l) if kind.elects_highest_id() => Some(l) == expected,
        Some(_) => true,
        None => false,
    };
    if ok {
        return Ok(());
    }
    let beliefs: Vec<String> = live
        .iter()
        .map(|&id| {
            let node = sim.node(id);
            format!(
                "{id}:{:?}/{}",
                node.and_then(|x| x.leader(kind)),
                node.and_then(|x| x.group_status(kind))
                    .map(|s| s.state)
                    .unwrap_or("-")
            )
        })
        .collect();
    Err(format!(
        "{kind} seed {seed} N={n}: after {bound:?} of clean network live nodes {live:?} \
         agree on {agreed:?}, expected {expected:?}; beliefs {beliefs:?}\n  plan: {}\n  \
         replay: electd simulate -a {kind} -n {n} --scenario chaos --seed {seed}",
        chaos::describe(&ops)
    ))
}

fn property(kind: AlgorithmKind) {
    let failures: Vec<String> = (0..SEEDS).filter_map(|s| check(kind, s).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {SEEDS} seeds failed; first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
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
