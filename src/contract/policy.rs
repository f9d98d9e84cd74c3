//! The policy layer: who may lead and when, on top of every algorithm's textbook rule.
//!
//! - **Priority** (`[[peer]] priority = 0..=255`): every algorithm ranks nodes by
//!   (eligible, priority, id) instead of by id alone. Priority 0 means *never leader*:
//!   such a node takes part in elections (it forwards, answers, votes) but never
//!   announces itself. Without any `priority` key every node has the same priority and
//!   the ranking is the textbook one, highest id first.
//! - **Preemption** (`[policy] preempt = true`, `preempt_delay = "0s"`, overridable per
//!   algorithm in `[policy.<algorithm>]`): with `preempt = false` a node that comes back
//!   (or is outranked by a node that comes back) does not take over from a healthy
//!   leader: it listens first and follows. With `preempt_delay` it follows first and
//!   takes over only after having followed that leader for that long.
//!
//! The defaults (no priorities, `preempt = true`, `preempt_delay = 0s`) are the
//! textbook: every literature message count stays exact. What each switch does to each
//! algorithm's messages is documented in `docs/policy.md`.

use crate::contract::algorithm::AlgorithmKind;
use crate::NodeId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Priority of a peer without a `priority` key. Any value above 0 would do: only the
/// order matters, and with every peer equal the id decides.
pub(crate) const DEFAULT_PRIORITY: u8 = 100;

/// The preemption switches of one algorithm group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Preempt {
    /// May a higher-ranked node take over from a healthy lower-ranked leader?
    pub preempt: bool,
    /// How long a higher-ranked node follows a lower-ranked leader before it takes
    /// over (only with `preempt`).
    pub delay: Duration,
}

impl Default for Preempt {
    fn default() -> Self {
        Preempt {
            preempt: true,
            delay: Duration::ZERO,
        }
    }
}

impl Preempt {
    /// The textbook: take over at once.
    pub fn is_textbook(self) -> bool {
        self.preempt && self.delay.is_zero()
    }

    /// After following a lower-ranked leader for how long does a node take over?
    /// `None`: never (no preemption).
    pub fn after(self) -> Option<Duration> {
        self.preempt.then_some(self.delay)
    }
}

/// The policy of a cluster (config `[[peer]] priority` and `[policy]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// Priority per peer id; a peer not listed has [`DEFAULT_PRIORITY`].
    pub priority: BTreeMap<NodeId, u8>,
    /// `[policy]`.
    pub preempt: Preempt,
    /// `[policy.<algorithm>]` overrides.
    pub per_algorithm: BTreeMap<AlgorithmKind, Preempt>,
    /// Members made ineligible at run time (drained, failing a health check, without a
    /// quorum, handing over): they rank like a never-leader. Each node only knows its
    /// own standing, so in practice this holds this node's id or nothing; the others
    /// learn it from what the node does (it steps down, and answers no ELECTION as a
    /// candidate). Not configuration: empty when loaded.
    #[serde(skip)]
    pub ineligible: std::collections::BTreeSet<NodeId>,
}

/// Why a node is ineligible at run time, in one group (see [`Policy::ineligible`]).
/// A node is ineligible while any reason holds; each is set and cleared apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ineligible {
    /// The operator drained the node (`POST /admin/drain`, `electd drain`).
    Drained,
    /// A health check without a weight is failing (`[[check]]`): keepalived's FAULT.
    Fault,
    /// `[lease] require_quorum`: the leader lost contact with a majority and stepped
    /// down; it stands again once a majority is heard.
    NoQuorum,
    /// Handing leadership to a chosen node: the old leader does not stand meanwhile.
    Transfer,
}

impl Ineligible {
    /// Every reason, in order.
    pub(crate) const ALL: [Ineligible; 4] = [
        Ineligible::Drained,
        Ineligible::Fault,
        Ineligible::NoQuorum,
        Ineligible::Transfer,
    ];
}

/// The sort key of a node: (eligible, priority, id). Higher leads.
pub(crate) type Rank = (bool, u8, NodeId);

impl Policy {
    /// `id`'s priority (the default when its `[[peer]]` sets none).
    pub(crate) fn priority(&self, id: NodeId) -> u8 {
        self.priority.get(&id).copied().unwrap_or(DEFAULT_PRIORITY)
    }

    /// May `id` lead? (Priority 0 = never leader; a member made ineligible at run
    /// time neither.)
    pub fn eligible(&self, id: NodeId) -> bool {
        self.priority(id) > 0 && !self.ineligible.contains(&id)
    }

    /// `id`'s sort key: (eligible, priority, id).
    pub(crate) fn rank(&self, id: NodeId) -> Rank {
        (self.eligible(id), self.priority(id), id)
    }

    /// Does `a` rank above `b`?
    pub fn outranks(&self, a: NodeId, b: NodeId) -> bool {
        self.rank(a) > self.rank(b)
    }

    /// The preemption switches of algorithm `kind`.
    pub fn preempt_for(&self, kind: AlgorithmKind) -> Preempt {
        self.per_algorithm
            .get(&kind)
            .copied()
            .unwrap_or(self.preempt)
    }

    /// The highest-ranked of `ids` (`None` for an empty list).
    pub fn best(&self, ids: impl IntoIterator<Item = NodeId>) -> Option<NodeId> {
        ids.into_iter().max_by_key(|&id| self.rank(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_priorities_the_rank_is_the_id() {
        let p = Policy::default();
        for a in 1..6 {
            for b in 1..6 {
                assert_eq!(p.outranks(a, b), a > b);
            }
        }
        assert_eq!(p.best([3, 5, 1]), Some(5));
        assert!(p.preempt_for(AlgorithmKind::Bully).is_textbook());
    }
}
