//! Crowd effects of many processes started on few cores, in the simulator: a *busy
//! start*, N nodes booted one after another `gap` apart (as a shell or a service
//! manager spawns processes), each calling its election when it boots (the daemon's
//! cold start), with an optional processing cost per datagram.
//!
//! The start order decides the cost of a Bully-family cold start: when the highest
//! node boots first its COORDINATOR ends everyone's waiting (N − 1 messages); booted in
//! id order with a gap longer than the answer timeout, every node's rank wait runs out
//! before the nodes above it exist, so each calls an election towards peers that are
//! not running yet — the all-initiating count of the literature, every message to an
//! absent peer retransmitted until the link gives up (docs/bench/ANALYSIS.md, round 8).
//! `electd bench --only scale-cold` runs this beside every cold start of processes,
//! with the gap those processes were started at, so the two can be compared.

use crate::contract::algorithm::{AlgorithmKind, Timing};
use crate::node::link::LinkConfig;
use crate::sim::scenario::Op;
use crate::sim::{Cost, Sim, SimConfig, SimError};
use crate::NodeId;
use serde::Serialize;
use std::time::Duration;

/// The order a busy start boots the roster in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StartOrder {
    /// Lowest id first (the bench's and a shell loop's order): the worst case for the
    /// Bully family.
    Ascending,
    /// Highest id first.
    Descending,
}

/// One busy start to simulate.
#[derive(Clone, Debug)]
pub struct BusyStart {
    /// The algorithm (one group).
    pub algorithm: AlgorithmKind,
    /// Roster size; ids 1..=N.
    pub nodes: usize,
    /// The nodes' timing.
    pub timing: Timing,
    /// The reliable link's settings.
    pub link: LinkConfig,
    /// Time between two boots.
    pub gap: Duration,
    /// Processing time per datagram (a timer round costs half of it).
    pub cost: Duration,
    /// Boot order.
    pub order: StartOrder,
    /// When given, each node's boot time after the first boot (index `id − 1`), as a
    /// cold start of processes measured them (their incarnations); `gap` and `order`
    /// are then not used. Nodes booting at the same instant boot in id order.
    pub boots: Option<Vec<Duration>>,
    /// Seeds the simulation.
    pub seed: u64,
}

/// What a busy start cost, from the first boot until the cluster settled.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BusyCost {
    /// Election messages (liveness excluded), counted as the literature does.
    pub election_messages: u64,
    /// Reliable-link retransmissions.
    pub retransmissions: u64,
    /// Messages the link gave up on (here: almost all to peers not booted yet).
    pub delivery_failures: u64,
    /// The leader every node agrees on at the end, if they agree.
    pub leader: Option<NodeId>,
    /// Virtual time from the last boot until the last leader change (0 when the
    /// cluster had agreed before the last node booted and it followed at once).
    pub agreed_after_last_start_ms: f64,
}

/// Run `b` until every node agrees and nothing is in flight (at most 30 s of
/// virtual time after the last boot).
pub fn busy_start(b: &BusyStart) -> Result<BusyCost, SimError> {
    let mut cfg = SimConfig::new(b.algorithm, b.nodes, b.seed);
    cfg.timing = b.timing.clone();
    cfg.link = b.link.clone();
    cfg.cost = Cost {
        datagram: b.cost,
        timer: b.cost / 2,
    };
    let mut sim = Sim::new(cfg)?;
    let mut order: Vec<NodeId> = (1..=b.nodes as NodeId).collect();
    if b.order == StartOrder::Descending {
        order.reverse();
    }
    // (boot time, node), in boot order.
    let schedule: Vec<(Duration, NodeId)> = match &b.boots {
        Some(at) => {
            if at.len() != b.nodes {
                return Err(SimError::Invalid(format!(
                    "busy start: {} boot times for {} nodes",
                    at.len(),
                    b.nodes
                )));
            }
            let mut s: Vec<(Duration, NodeId)> = at
                .iter()
                .zip(1..=b.nodes as NodeId)
                .map(|(&t, id)| (t, id))
                .collect();
            s.sort();
            s
        }
        None => order
            .into_iter()
            .enumerate()
            .map(|(k, id)| (b.gap * k as u32, id))
            .collect(),
    };
    let mut ops = vec![Op::Measure("busy start".into())];
    let mut clock = Duration::ZERO;
    for &(at, id) in &schedule {
        if at > clock {
            ops.push(Op::RunFor(at - clock));
            clock = at;
        }
        ops.push(Op::Restart {
            node: id,
            elect: true,
        });
    }
    ops.push(Op::Settle {
        max: Duration::from_secs(30),
    });
    let last_boot = clock;
    sim.run_ops(&ops)?;
    let e = sim.elections.last().cloned();
    let leader = sim.agreement(b.algorithm);
    Ok(match e {
        Some(e) => BusyCost {
            election_messages: e.messages.total,
            retransmissions: e.retransmissions,
            delivery_failures: e.delivery_failures,
            leader,
            agreed_after_last_start_ms: (e.virtual_ms - last_boot.as_secs_f64() * 1e3).max(0.0),
        },
        None => BusyCost {
            election_messages: 0,
            retransmissions: 0,
            delivery_failures: 0,
            leader,
            agreed_after_last_start_ms: 0.0,
        },
    })
}
