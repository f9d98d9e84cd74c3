//! `electd simulate` as a library call: build the roster, run a named scenario, report.

use crate::contract::algorithm::{AlgorithmKind, Timing};
use crate::node::link::LinkConfig;
use crate::sim::chaos::{self, FaultSet};
use crate::sim::report::{MessageCounts, SimReport};
use crate::sim::scenario::{Initiator, RingOrder, Scenario};
use crate::sim::{Sim, SimConfig, SimError};
use crate::trace::{Header, Record, Recorder};
use crate::NodeId;
use std::time::{Duration, Instant};

/// Parameters of one simulated run.
#[derive(Clone, Debug)]
pub struct SimulateParams {
    /// The algorithm to run.
    pub algorithm: AlgorithmKind,
    /// Node ids in ring order.
    pub ids: Vec<NodeId>,
    /// Which node calls the first election.
    pub initiator: Initiator,
    /// The scenario to run.
    pub scenario: Scenario,
    /// Seeds every random draw of the run.
    pub seed: u64,
    /// Datagram loss probability for the whole run.
    pub loss: f64,
    /// Heartbeat, failure timeout and election timeouts.
    pub timing: Timing,
    /// Fault mix of the `chaos` scenario.
    pub faults: FaultSet,
}

impl SimulateParams {
    /// `nodes` nodes with ids 1..=N ascending, lowest id initiating the startup
    /// scenario, seed 1, no loss, the default timing.
    pub fn new(algorithm: AlgorithmKind, nodes: usize) -> Self {
        SimulateParams {
            algorithm,
            ids: RingOrder::Ascending.ids(nodes, 0),
            initiator: Initiator::Lowest,
            scenario: Scenario::Startup,
            seed: 1,
            loss: 0.0,
            timing: Timing::default(),
            faults: FaultSet::Basic,
        }
    }
}

/// Errors of a simulate request (bad input, not bugs).
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The initiator given is not in the roster: (the initiator, the roster's ids).
    #[error("initiator {0} is not in the roster (ids: {1})")]
    InitiatorNotInRoster(String, String),
    /// The simulation could not be set up or run.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// Run `p` and report. Virtual time is bounded (the run stops if an election never
/// settles; `agreed` is then false).
pub fn simulate(p: &SimulateParams) -> Result<SimReport, SimulateError> {
    run(p, None).map(|(r, _)| r)
}

/// [`simulate`], recording a trace (at most `limit` records) of the whole run in
/// virtual time. The trace ends with the report's leader and election messages.
pub fn simulate_traced(
    p: &SimulateParams,
    limit: usize,
) -> Result<(SimReport, Header, Vec<Record>), SimulateError> {
    let (report, rec) = run(p, Some(Recorder::new(limit)))?;
    let mut records = rec.map(Recorder::finish).unwrap_or_default();
    let t = records.last().map(Record::time).unwrap_or(0);
    records.push(Record::End {
        t,
        alg: p.algorithm.as_str().into(),
        leader: report.leader,
        messages: report.messages.total,
    });
    let mut header = Header::new(
        "simulate",
        "virtual",
        vec![p.algorithm.as_str().to_string()],
        p.ids.clone(),
    );
    header.scenario = Some(p.scenario.as_str().to_string());
    header.seed = Some(p.seed);
    Ok((report, header, records))
}

fn run(
    p: &SimulateParams,
    trace: Option<Recorder>,
) -> Result<(SimReport, Option<Recorder>), SimulateError> {
    let initiator = p.initiator.resolve(&p.ids).ok_or_else(|| {
        let shown = if p.ids.len() > 8 {
            format!(
                "{}..{}",
                p.ids.iter().min().unwrap_or(&0),
                p.ids.iter().max().unwrap_or(&0)
            )
        } else {
            format!("{:?}", p.ids)
        };
        SimulateError::InitiatorNotInRoster(p.initiator.to_string(), shown)
    })?;
    let mut cfg = SimConfig::new(p.algorithm, p.ids.len(), p.seed);
    cfg.ids = p.ids.clone();
    cfg.timing = p.timing.clone();
    if p.scenario != Scenario::Chaos {
        cfg.net.loss = p.loss;
    }
    let mut sim = Sim::new(cfg)?;
    if let Some(t) = trace {
        sim.set_trace(t);
    }
    // Generous bound: every election of every algorithm settles far sooner.
    let settle = Duration::from_secs(600);
    let ops = match p.scenario {
        Scenario::Chaos => {
            let bound =
                chaos::recovery_bound(p.algorithm, &p.timing, &LinkConfig::default(), p.ids.len());
            let mut params = p.faults.params();
            if p.loss > 0.0 {
                params.max_loss = p.loss;
            }
            sim.set_net(chaos::clean_net());
            chaos::plan(p.seed, &p.ids, &params, bound)
        }
        s => s.ops(initiator, settle),
    };
    let started = Instant::now();
    sim.run_ops(&ops)?;
    sim.end_measure();
    let expected_leader = if p.algorithm.elects_highest_id() {
        sim.live_ids().into_iter().max()
    } else {
        None
    };
    let wall = started.elapsed().as_secs_f64();
    let mut messages = MessageCounts::default();
    let (mut acks, mut retransmissions, mut virtual_ms) = (0, 0, 0.0);
    for e in &sim.elections {
        messages.add(&e.messages);
        acks += e.acks;
        retransmissions += e.retransmissions;
        virtual_ms += e.virtual_ms;
    }
    let report = SimReport {
        algorithm: p.algorithm,
        nodes: p.ids.len(),
        scenario: p.scenario.as_str().to_string(),
        initiator,
        seed: p.seed,
        loss: p.loss,
        ring: p.ids.clone(),
        leader: sim.elections.last().and_then(|e| e.leader),
        agreed: !sim.elections.is_empty()
            && sim.elections.iter().all(|e| e.agreed)
            && (expected_leader.is_none()
                || sim.elections.last().and_then(|e| e.leader) == expected_leader),
        expected_leader,
        messages,
        acks,
        retransmissions,
        virtual_ms,
        elections: sim.elections.clone(),
        wall_ms: wall * 1e3,
        datagrams_per_sec: if wall > 0.0 {
            sim.delivered as f64 / wall
        } else {
            0.0
        },
    };
    Ok((report, sim.take_trace()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::algorithm::AlgorithmKind;
    use crate::contract::info::COMMON_TYPES;
    use std::collections::HashSet;

    /// The message types an algorithm's `INFO` lists are the ones it really sends
    /// (startup and leader crash in the simulator), and only those.
    #[test]
    fn listed_message_types_match_what_the_algorithm_sends() {
        for kind in AlgorithmKind::ALL {
            let e = kind.info();
            let mut sent: HashSet<&str> = HashSet::new();
            for scenario in [Scenario::Startup, Scenario::LeaderCrash] {
                let mut p = SimulateParams::new(kind, 6);
                p.scenario = scenario;
                let report = simulate(&p).expect("simulate");
                for el in &report.elections {
                    let used = el.messages.by_type.iter().filter(|(_, &n)| n > 0);
                    sent.extend(used.map(|(t, _)| *t));
                }
            }
            let allowed: HashSet<&str> = e
                .message_types
                .iter()
                .chain(COMMON_TYPES)
                .map(|t| t.as_str())
                .collect();
            assert!(
                sent.is_subset(&allowed),
                "{} sent {:?}, INFO lists {:?}",
                e.name,
                sent,
                e.message_types
            );
            for t in e.message_types {
                assert!(sent.contains(t.as_str()), "{} never sent its {t}", e.name);
            }
        }
    }
}
