//! Random fault plans for property tests and the chaos campaign: a seeded sequence of
//! crashes, restarts, loss, duplication, reordering and partitions, followed by a
//! clean network for a recovery bound derived from the timeouts. The same seed gives
//! the same plan, so a failure replays with `electd simulate --scenario chaos --seed S`.

use crate::contract::algorithm::{AlgorithmKind, Timing};
use crate::contract::rng::Rng;
use crate::node::link::LinkConfig;
use crate::sim::network::NetConfig;
use crate::sim::scenario::Op;
use crate::NodeId;
use std::time::Duration;

/// Which faults a plan may contain.
#[derive(Clone, Debug)]
pub struct ChaosParams {
    /// How long faults last (virtual time).
    pub(crate) fault_time: Duration,
    /// Largest loss probability drawn while faults last.
    pub(crate) max_loss: f64,
    /// Also duplicate and reorder datagrams while faults last.
    pub(crate) duplicate_reorder: bool,
    /// Also cut the network (symmetric and one-way partitions).
    pub(crate) partitions: bool,
    /// Also pause nodes (up to 2 × failure_timeout, then they resume with their
    /// backlog) and slow them down (up to 2 ms per input); both end by the end of the
    /// fault time.
    pub(crate) pauses: Option<Duration>,
}

/// Named fault mixes (`--faults`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultSet {
    /// Crashes, restarts, loss up to 20% (the core property of the Bully issue).
    Basic,
    /// Also symmetric and one-way partitions, duplication, reordering, loss up to 30%,
    /// paused and slow nodes.
    Full,
}

impl FaultSet {
    /// The chaos parameters this fault set stands for.
    pub fn params(self) -> ChaosParams {
        match self {
            FaultSet::Basic => ChaosParams::default(),
            FaultSet::Full => ChaosParams {
                max_loss: 0.3,
                duplicate_reorder: true,
                partitions: true,
                pauses: Some(Timing::default().failure_timeout * 2),
                ..ChaosParams::default()
            },
        }
    }
    /// The name of the fault set (`basic` or `full`), as reports and the CLI write it.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultSet::Basic => "basic",
            FaultSet::Full => "full",
        }
    }
}

impl std::str::FromStr for FaultSet {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "basic" => Ok(FaultSet::Basic),
            "full" => Ok(FaultSet::Full),
            _ => Err(format!("unknown fault set {s:?}; expected basic or full")),
        }
    }
}

impl Default for ChaosParams {
    fn default() -> Self {
        ChaosParams {
            fault_time: Duration::from_secs(2),
            max_loss: 0.2,
            duplicate_reorder: false,
            partitions: false,
            pauses: None,
        }
    }
}

/// The network once faults stop: no loss, no cuts, a small delay spread.
pub fn clean_net() -> NetConfig {
    NetConfig {
        delay_min: Duration::from_millis(1),
        delay_max: Duration::from_millis(2),
        ..NetConfig::default()
    }
}

/// How long after faults stop every live node must agree (on the highest live id for
/// the Bully and ring families). Derivation, from the moment faults stop:
/// 1. leftover reliable messages are acked or given up within `link.give_up_after()`;
/// 2. a node following a dead leader hears no heartbeat and reports it lost within
///    `failure_timeout`; a node without a leader calls an election from its watchdog
///    within `2·failure_timeout`;
/// 3. two live leaders (split brain) hear each other's heartbeat within `heartbeat`;
/// 4. an election then takes at most T (answer) + T' (coordinator wait) per attempt;
///    an attempt interrupted by a message still in flight from step 1 restarts once,
///    so two attempts, plus one ring lap / cascade of delays;
/// 5. Raft instead needs a randomized election timeout per round; split votes repeat a
///    round with probability < 1/2, so ten maximal timeouts bound it in practice.
/// 6. The ring family restarts an unfinished election after its bound B
///    (`ring_common::election_bound`, drawn in [B, 2B]) and forgets a wrongly suspected
///    member after `SUSPICION_ROUNDS`·B; three rounds are budgeted (the one running when
///    faults stopped, one that still skipped a wrongly suspected member, and the one
///    that member triggers): G + 2F + SUSPICION_ROUNDS·B + 3·2B.
pub fn recovery_bound(
    kind: AlgorithmKind,
    timing: &Timing,
    link: &LinkConfig,
    nodes: usize,
) -> Duration {
    use crate::algorithms::ring_common;
    use crate::contract::info::Recovery;
    let lap = clean_net().delay_max * (4 * nodes as u32 + 8);
    match kind.info().recovery {
        Recovery::RingLaps { hops_per_member } => {
            let b = ring_common::election_bound(timing, nodes, hops_per_member);
            link.give_up_after()
                + timing.failure_timeout * 2
                + b * ring_common::SUSPICION_ROUNDS
                + b * 6
                + lap
        }
        Recovery::RandomizedTimeout => {
            timing.election_timeout_max * 10 + link.give_up_after() + lap
        }
        Recovery::Cascade { .. } => {
            timing.failure_timeout * 2
                + link.give_up_after()
                + timing.heartbeat
                + (timing.answer_timeout + timing.coordinator_timeout) * 2
                + lap
        }
    }
}

/// A seeded fault plan over `ids` (ring order). The plan starts every node (each
/// calling an election, as after a power cut), then applies random faults for
/// `params.fault_time`, then heals everything and runs for the recovery bound.
pub fn plan(seed: u64, ids: &[NodeId], params: &ChaosParams, recovery: Duration) -> Vec<Op> {
    let mut rng = Rng::new(seed ^ 0xC4A0_5EED);
    let mut ops = vec![Op::StartAllElecting];
    let mut alive: Vec<NodeId> = ids.to_vec();
    let mut dead: Vec<NodeId> = Vec::new();
    let mut elapsed = Duration::ZERO;
    while elapsed < params.fault_time {
        let step = Duration::from_millis(5 + rng.below(150));
        ops.push(Op::RunFor(step));
        elapsed += step;
        match rng.below(10) {
            0..=2 if alive.len() > 1 => {
                let i = rng.below(alive.len() as u64) as usize;
                let id = alive.swap_remove(i);
                dead.push(id);
                ops.push(Op::Crash(id));
            }
            3..=4 if !dead.is_empty() => {
                let i = rng.below(dead.len() as u64) as usize;
                let id = dead.swap_remove(i);
                alive.push(id);
                ops.push(Op::Restart {
                    node: id,
                    elect: true,
                });
            }
            5..=6 => {
                let mut net = clean_net();
                net.loss = rng.unit() * params.max_loss;
                if params.duplicate_reorder {
                    net.duplicate = rng.unit() * 0.2;
                    net.reorder = rng.unit() * 0.3;
                    net.delay_max = Duration::from_millis(1 + rng.below(5));
                }
                ops.push(Op::Net(net));
            }
            7 if params.partitions => {
                let mut shuffled = ids.to_vec();
                rng.shuffle(&mut shuffled);
                let cut = 1 + rng.below(ids.len().max(2) as u64 - 1) as usize;
                let (a, b) = shuffled.split_at(cut.min(ids.len()));
                if rng.chance(0.5) {
                    ops.push(Op::Partition(vec![a.to_vec(), b.to_vec()]));
                } else {
                    ops.push(Op::OneWay {
                        from: a.to_vec(),
                        to: b.to_vec(),
                    });
                }
            }
            8 if params.partitions => ops.push(Op::Heal),
            9 if params.pauses.is_some() && !alive.is_empty() => {
                let node = alive[rng.below(alive.len() as u64) as usize];
                let left = params.fault_time.saturating_sub(elapsed);
                let longest = params.pauses.unwrap_or_default().min(left);
                let for_ = Duration::from_micros(rng.below(longest.as_micros() as u64 + 1));
                if rng.chance(0.5) {
                    ops.push(Op::Pause { node, for_ });
                } else {
                    let cost = Duration::from_micros(100 + rng.below(1900));
                    ops.push(Op::Slow { node, cost, for_ });
                }
            }
            _ => {}
        }
    }
    ops.push(Op::Heal);
    ops.push(Op::Net(clean_net()));
    ops.push(Op::Measure("recovery".into()));
    ops.push(Op::RunFor(recovery));
    ops
}

/// Render a plan compactly for failure messages.
pub fn describe(ops: &[Op]) -> String {
    ops.iter()
        .map(|op| match op {
            Op::RunFor(d) => format!("+{}ms", d.as_millis()),
            Op::Net(n) => format!(
                "net(loss={:.2},dup={:.2},reorder={:.2})",
                n.loss, n.duplicate, n.reorder
            ),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
