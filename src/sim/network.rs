//! The simulated network: per-link delay range, loss, duplication, reordering, and
//! directed cuts (a symmetric partition cuts both directions, a one-way one only one).

use crate::NodeId;
use serde::Serialize;
use std::collections::HashSet;
use std::time::Duration;

/// Faults applied to every datagram while they are in force.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NetConfig {
    /// One-way delay, uniform in `[delay_min, delay_max]`.
    pub delay_min: Duration,
    /// Upper end of the one-way delay (equal to `delay_min`: a constant delay).
    pub delay_max: Duration,
    /// Probability a datagram is lost.
    pub loss: f64,
    /// Probability a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability a datagram is held back by up to 4× `delay_max` extra (reordering).
    pub reorder: f64,
}

impl Default for NetConfig {
    /// The synchronous network of the literature: a constant 1 ms, nothing lost.
    fn default() -> Self {
        NetConfig {
            delay_min: Duration::from_millis(1),
            delay_max: Duration::from_millis(1),
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
        }
    }
}

/// Directed links that currently drop everything.
#[derive(Clone, Debug, Default)]
pub struct Cuts {
    blocked: HashSet<(NodeId, NodeId)>,
}

impl Cuts {
    /// Does a cut drop datagrams from `from` to `to`?
    pub(crate) fn blocks(&self, from: NodeId, to: NodeId) -> bool {
        !self.blocked.is_empty() && self.blocked.contains(&(from, to))
    }

    /// Cut every link between different sides, both directions.
    pub fn partition(&mut self, sides: &[Vec<NodeId>]) {
        for (i, a) in sides.iter().enumerate() {
            for (j, b) in sides.iter().enumerate() {
                if i != j {
                    for &x in a {
                        for &y in b {
                            self.blocked.insert((x, y));
                        }
                    }
                }
            }
        }
    }

    /// Cut only the direction `from` → `to`.
    pub(crate) fn one_way(&mut self, from: &[NodeId], to: &[NodeId]) {
        for &x in from {
            for &y in to {
                self.blocked.insert((x, y));
            }
        }
    }

    /// Remove every cut.
    pub fn heal(&mut self) {
        self.blocked.clear();
    }
}
