//! The election algorithms, one file each, all behind [`crate::contract::algorithm::Algorithm`].

pub(crate) mod bully;
mod bully_common;
pub mod hs;
pub(crate) mod improved_bully;
pub mod lcr;
pub mod raft;
pub(crate) mod registry;
pub mod ring;
pub mod ring_common;
mod tags;
#[cfg(test)]
mod tests;

pub use bully_common::rank_step;

use crate::contract::algorithm::{Algorithm, AlgorithmKind, GroupConfig};

/// Why an algorithm instance could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// This node's id is not one of the roster's.
    #[error("node {me} is not in the roster {ring:?}")]
    NotInRoster {
        /// This node's id.
        me: crate::NodeId,
        /// The roster given.
        ring: Vec<crate::NodeId>,
    },
    /// An id appears twice in the roster.
    #[error("roster lists node {0} twice")]
    DuplicateId(crate::NodeId),
    /// Id 0 in the roster.
    #[error("node id 0 is reserved (ids start at 1)")]
    ZeroId,
}

/// Build the algorithm `kind` for one node.
pub fn build(kind: AlgorithmKind, cfg: GroupConfig) -> Result<Box<dyn Algorithm>, BuildError> {
    if !cfg.ring.contains(&cfg.me) {
        return Err(BuildError::NotInRoster {
            me: cfg.me,
            ring: cfg.ring.to_vec(),
        });
    }
    let mut seen = std::collections::HashSet::new();
    for &id in cfg.ring.iter() {
        if id == 0 {
            return Err(BuildError::ZeroId);
        }
        if !seen.insert(id) {
            return Err(BuildError::DuplicateId(id));
        }
    }
    Ok((kind.info().build)(cfg))
}
