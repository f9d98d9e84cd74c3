//! What an algorithm says about itself: the [`Info`] every algorithm file declares as
//! its `INFO` constant (names, constructor, whom it elects, how it recovers, its
//! message types, the literature's counts, the policy switches it implements).
//!
//! This module only defines the vocabulary; the registry (`crate::algorithms::registry`,
//! above the algorithms) maps each [`AlgorithmKind`] to its algorithm's `INFO` with an
//! exhaustive `match`, and the rest of the program asks `AlgorithmKind::info` or one
//! of the named facts below instead of comparing kinds.
//!
//! [`AlgorithmKind`]: crate::contract::algorithm::AlgorithmKind

use crate::contract::algorithm::{Algorithm, GroupConfig};
use crate::contract::formulas::Case;
use crate::contract::message::MessageType;

/// Whom an algorithm's safety argument promises to elect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elects {
    /// The highest live id (Bully and ring families).
    HighestLiveId,
    /// Whoever first wins a majority; with no majority alive, nobody (Raft).
    MajorityWinner,
}

/// How an election unfolds in time; the chaos campaign's recovery bound and the
/// benchmark's failover model are derived from it (see `sim::chaos::recovery_bound`
/// and the bench's `model_median`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Detection by the failure detector, then a cascade of answer waits
    /// (`answer_rounds` answer timeouts T before the winner announces itself).
    Cascade {
        /// Answer timeouts T waited before the winner announces itself.
        answer_rounds: u32,
    },
    /// Detection, then laps around the logical ring; an unfinished election is
    /// restarted after a bound of `hops_per_member` hops per member.
    RingLaps {
        /// Hops per member in the restart bound.
        hops_per_member: u32,
    },
    /// Randomized election timeouts (no separate detector).
    RandomizedTimeout,
}

/// Everything the program knows about one algorithm, declared in the algorithm's own
/// file as `pub(crate) const INFO: Info`.
pub struct Info {
    /// Name on the CLI, in config files and as the metrics `algorithm` label.
    pub name: &'static str,
    /// Other accepted spellings (lower case; the registry's `by_name` also reads `_`
    /// as `-`).
    pub aliases: &'static [&'static str],
    /// Human title with its source.
    pub title: &'static str,
    /// One line on how it elects (`--help`).
    pub summary: &'static str,
    /// Builds one instance (the roster is checked by `algorithms::build`).
    pub(crate) build: fn(GroupConfig) -> Box<dyn Algorithm>,
    /// Whom it elects.
    pub(crate) elects: Elects,
    /// How it recovers from a leader's failure (its recovery bound).
    pub recovery: Recovery,
    /// Message types the algorithm sends in elections (liveness traffic and RESIGN,
    /// which every algorithm may use, are listed apart in [`COMMON_TYPES`]).
    pub(crate) message_types: &'static [MessageType],
    /// The literature's message counts (`compare`, the report).
    pub cases: fn() -> Vec<Case>,
    /// Does it implement `[policy] preempt = false` and `preempt_delay` (a node ranked
    /// above a healthy leader holds back)? A switch it does not implement is refused
    /// by the configuration. Raft never preempts whatever the switch (a returning node
    /// follows the leader whose lease it hears), so it counts as implementing it.
    /// Priorities (the ranking) every algorithm implements.
    pub policy_preempt: bool,
    /// Do its nodes cast votes that must survive a restart (Raft's `votedFor`, §5.2)?
    /// Then a node without a state file may vote twice in one term (the configuration
    /// refuses that unless `[state] ephemeral`), and the durable `voted_for` is a
    /// vote, written before the reply, never a follower's adoption of a leader.
    pub(crate) durable_vote: bool,
}

/// Message types any algorithm may send besides its own.
pub(crate) const COMMON_TYPES: &[MessageType] = &[
    MessageType::Heartbeat,
    MessageType::HeartbeatAck,
    MessageType::Resign,
];

impl Info {
    /// Does a heartbeat failure detector watch the leader (every group but those
    /// electing on randomized timeouts)? Such a group's followers do not answer
    /// heartbeats, and its silence is measured in `failure_timeout`.
    pub fn uses_failure_detector(&self) -> bool {
        !matches!(self.recovery, Recovery::RandomizedTimeout)
    }

    /// Does the winner announce itself by a lap round the ring (the ring family)? The
    /// last member then hears of it n − 1 hops after the win; the node layer sends the
    /// new leader's first heartbeat to every member at once as well (see
    /// `Node::leader_changed`).
    pub(crate) fn announces_by_lap(&self) -> bool {
        matches!(self.recovery, Recovery::RingLaps { .. })
    }

    /// Does a leader hold office through a majority (Raft)? Then at most one leader
    /// is elected per term, nobody leads without a live majority, and its lease is
    /// kept by its own quorum check (`require_quorum` adds nothing).
    pub(crate) fn leads_by_majority(&self) -> bool {
        self.elects == Elects::MajorityWinner
    }

    /// Does its safety argument promise "the highest live id leads"?
    pub(crate) fn elects_highest_id(&self) -> bool {
        self.elects == Elects::HighestLiveId
    }

    /// Does a body of type `t` belong to this group (docs/wire.md §7)? Its own election
    /// types, the [`COMMON_TYPES`], and the transfer and priority bodies of its kind:
    /// TIMEOUT_NOW where elections run on randomized timeouts (Raft), HANDOFF and
    /// PRIORITY where a heartbeat failure detector watches the leader (every other
    /// group). The codec drops a body of another group as `algorithm`.
    pub fn carries(&self, t: MessageType) -> bool {
        let detector = self.uses_failure_detector();
        self.message_types.contains(&t)
            || COMMON_TYPES.contains(&t)
            || match t {
                MessageType::TimeoutNow => !detector,
                MessageType::Handoff | MessageType::Priority => detector,
                _ => false,
            }
    }
}
