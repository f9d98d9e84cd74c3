//! Safety of the fencing token, checked while a simulation runs (every algorithm):
//! - the token a node adopts never goes back, across its restarts too (the simulator
//!   keeps its durable state, as a disk would);
//! - no two nodes lead one group with the same token at the same moment.
//!
//! The token is ([`crate::contract::algorithm::Token`]) the term and the leader's id, ordered
//! lexicographically.

use crate::contract::algorithm::{AlgorithmKind, Token};
use crate::node::Time;
use crate::NodeId;
use std::collections::{BTreeMap, HashMap};

/// Violations kept in full (the rest are only counted).
const KEEP: usize = 8;

/// The watcher (see the module documentation).
#[derive(Debug, Default)]
pub struct TokenWatch {
    last: HashMap<(NodeId, AlgorithmKind), Token>,
    leading: HashMap<AlgorithmKind, BTreeMap<NodeId, Token>>,
    /// The first violations, described.
    pub violations: Vec<String>,
    /// Every violation, counted.
    pub count: usize,
}

impl TokenWatch {
    fn violation(&mut self, text: String) {
        self.count += 1;
        if self.violations.len() < KEEP {
            self.violations.push(text);
        }
    }

    /// Node `node` now believes `leader` leads `group` with `term`.
    pub(crate) fn leader_changed(
        &mut self,
        node: NodeId,
        group: AlgorithmKind,
        leader: Option<NodeId>,
        term: u64,
        at: Time,
    ) {
        let Some(l) = leader else {
            if let Some(m) = self.leading.get_mut(&group) {
                m.remove(&node);
            }
            return;
        };
        let token = Token::new(term, l);
        if let Some(&prev) = self.last.get(&(node, group)) {
            if token < prev {
                self.violation(format!(
                    "{group}: node {node} adopted token (term {term}, leader {l}) after \
                     (term {}, leader {}) at {at:?}",
                    prev.term, prev.leader
                ));
            }
        }
        self.last.insert((node, group), token);
        let leading = self.leading.entry(group).or_default();
        if l != node {
            leading.remove(&node);
            return;
        }
        leading.insert(node, token);
        let twin = leading
            .iter()
            .find(|&(&other, &t)| other != node && t.term == term && t.leader == l)
            .map(|(&other, _)| other);
        if let Some(other) = twin {
            self.violation(format!(
                "{group}: nodes {node} and {other} both lead with token (term {term}, \
                 leader {l}) at {at:?}"
            ));
        }
    }

    /// `node` restarted with an empty disk: it cannot remember its tokens, so its
    /// adoptions are checked afresh from now on.
    pub(crate) fn forget(&mut self, node: NodeId) {
        self.last.retain(|&(n, _), _| n != node);
    }

    /// `node` crashed: it leads nothing any more (its adopted tokens are remembered).
    pub(crate) fn crashed(&mut self, node: NodeId) {
        for m in self.leading.values_mut() {
            m.remove(&node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: AlgorithmKind = AlgorithmKind::Bully;

    #[test]
    fn a_token_going_back_is_a_violation() {
        let mut w = TokenWatch::default();
        let t = Time::ZERO;
        w.leader_changed(1, G, Some(5), 3, t);
        w.leader_changed(1, G, None, 3, t);
        w.leader_changed(1, G, Some(5), 3, t);
        w.leader_changed(1, G, Some(6), 3, t);
        assert_eq!(w.count, 0, "{:?}", w.violations);
        w.leader_changed(1, G, Some(5), 3, t);
        assert_eq!(w.count, 1);
        w.leader_changed(1, G, Some(9), 2, t);
        assert_eq!(w.count, 2);
        assert!(w.violations[1].contains("node 1 adopted token (term 2, leader 9)"));
        // Another group of the same node is independent.
        w.leader_changed(1, AlgorithmKind::Ring, Some(1), 1, t);
        assert_eq!(w.count, 2);
    }

    #[test]
    fn leaders_are_tracked_until_they_step_down_or_crash() {
        let mut w = TokenWatch::default();
        let t = Time::ZERO;
        w.leader_changed(4, G, Some(4), 7, t);
        w.leader_changed(5, G, Some(5), 7, t);
        assert_eq!(w.count, 0, "different leaders hold different tokens");
        assert_eq!(w.leading[&G].len(), 2);
        w.leader_changed(4, G, Some(5), 7, t);
        assert_eq!(w.leading[&G].len(), 1);
        w.crashed(5);
        assert!(w.leading[&G].is_empty());
    }
}
