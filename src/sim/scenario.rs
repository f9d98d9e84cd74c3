//! Scenarios as data: a list of [`Op`]s the simulator executes in order. The CLI
//! (`simulate`, `compare`) and the regression tests share these definitions.

use crate::sim::network::NetConfig;
use crate::NodeId;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// One step of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Boot every node that is not running; none calls an election by itself.
    StartAll,
    /// Boot every node, each calling an election at once (the daemon's cold start).
    StartAllElecting,
    /// Begin a measured election named `label` (counters and clock are read here).
    Measure(String),
    /// `node` calls an election (the initiator of the literature).
    Elect(NodeId),
    /// `node`'s failure detector reports the leader lost.
    Detect(NodeId),
    /// The lowest live node detects the leader lost (the `leader-crash` scenario).
    DetectLowest,
    /// Crash `node`: it loses its state and inbox until restarted.
    Crash(NodeId),
    /// Crash whichever node the live nodes agree leads (no-op without agreement).
    CrashLeader,
    /// Restart a crashed node with a new incarnation; `elect`: it calls an election.
    Restart {
        /// The node to restart.
        node: NodeId,
        /// It calls an election once booted.
        elect: bool,
    },
    /// Gracefully stop `node`: it resigns the groups it leads, then stops.
    Resign(NodeId),
    /// Symmetric partition into sides (nodes not listed keep their links).
    Partition(Vec<Vec<NodeId>>),
    /// Drop everything from `from` to `to` (one direction only).
    OneWay {
        /// The sending side.
        from: Vec<NodeId>,
        /// The receiving side.
        to: Vec<NodeId>,
    },
    /// Remove every cut.
    Heal,
    /// `node` stops for `for_` (a paused process): it handles nothing meanwhile and
    /// resumes with its backlog.
    Pause {
        /// The paused node.
        node: NodeId,
        /// How long it is paused (virtual time).
        for_: Duration,
    },
    /// `node` spends at least `cost` on every input for `for_` (a starved CPU).
    Slow {
        /// The slowed node.
        node: NodeId,
        /// Virtual processing time spent per input, at least.
        cost: Duration,
        /// How long it stays slow.
        for_: Duration,
    },
    /// Change the network faults.
    Net(NetConfig),
    /// Advance virtual time.
    RunFor(Duration),
    /// Run until every live node agrees on a live leader and nothing is in flight,
    /// or until `max` has passed; ends the current measured election.
    Settle {
        /// The longest to wait, in virtual time.
        max: Duration,
    },
}

/// The named scenarios of `electd simulate --scenario`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// All nodes boot; the initiator calls the first election.
    Startup,
    /// Startup, then the leader crashes and the lowest live node detects it and calls
    /// the next election.
    LeaderCrash,
    /// A seeded random plan of crashes, restarts and loss (see [`crate::sim::chaos`]),
    /// then a clean network: replays a property-test failure.
    Chaos,
}

impl Scenario {
    /// The name on the command line (`--scenario`).
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::Startup => "startup",
            Scenario::LeaderCrash => "leader-crash",
            Scenario::Chaos => "chaos",
        }
    }

    /// The ops of this scenario with `initiator` calling the first election
    /// (`Chaos` plans come from [`crate::sim::chaos::plan`] instead).
    pub(crate) fn ops(self, initiator: NodeId, settle: Duration) -> Vec<Op> {
        let mut ops = vec![
            Op::StartAll,
            Op::Measure("startup".into()),
            Op::Elect(initiator),
            Op::Settle { max: settle },
        ];
        if self == Scenario::LeaderCrash {
            ops.extend([
                Op::CrashLeader,
                Op::Measure("leader-crash".into()),
                Op::DetectLowest,
                Op::Settle { max: settle },
            ]);
        }
        ops
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "startup" => Ok(Scenario::Startup),
            "leader-crash" => Ok(Scenario::LeaderCrash),
            "chaos" => Ok(Scenario::Chaos),
            _ => Err(format!(
                "unknown scenario {s:?}; expected startup, leader-crash or chaos"
            )),
        }
    }
}

/// Which node calls the first election.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Initiator {
    /// The lowest id of the roster.
    Lowest,
    /// The highest id of the roster.
    Highest,
    /// This node.
    Id(NodeId),
}

impl Initiator {
    /// Resolve against the roster; `None` if the id is not a member.
    pub(crate) fn resolve(self, ids: &[NodeId]) -> Option<NodeId> {
        match self {
            Initiator::Lowest => ids.iter().copied().min(),
            Initiator::Highest => ids.iter().copied().max(),
            Initiator::Id(id) => ids.contains(&id).then_some(id),
        }
    }
}

impl fmt::Display for Initiator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Initiator::Lowest => f.write_str("lowest"),
            Initiator::Highest => f.write_str("highest"),
            Initiator::Id(id) => write!(f, "{id}"),
        }
    }
}

impl FromStr for Initiator {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "lowest" => Ok(Initiator::Lowest),
            "highest" => Ok(Initiator::Highest),
            other => other.parse::<NodeId>().map(Initiator::Id).map_err(|_| {
                format!("invalid initiator {other:?}: expected lowest, highest or a node id")
            }),
        }
    }
}

/// Ring order of the simulated ids (`--ring-order`), defined beside the count
/// formulas that are stated per order.
pub use crate::contract::formulas::RingOrder;
