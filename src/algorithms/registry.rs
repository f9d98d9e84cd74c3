//! The registry: from an [`AlgorithmKind`] to what its algorithm says about itself
//! (the `INFO` constant in its file), and the names, spellings and list every driver
//! reads from there.
//!
//! It sits above the algorithms (it names each one's file) and below the node, the
//! simulator and everything else, which ask [`AlgorithmKind::info`] or one of its
//! named facts ([`Info::uses_failure_detector`], [`Info::leads_by_majority`],
//! [`Info::durable_vote`], …) rather than compare kinds. [`AlgorithmKind::info`] is the
//! one `match` that must learn of a new algorithm here; the compiler names it.

use crate::contract::algorithm::AlgorithmKind;
use crate::contract::formulas::Case;
use crate::contract::info::Info;
use std::fmt;
use std::str::FromStr;

impl AlgorithmKind {
    /// Everything the program knows about this algorithm: its file's `INFO`.
    pub fn info(self) -> &'static Info {
        match self {
            AlgorithmKind::Bully => &super::bully::INFO,
            AlgorithmKind::ImprovedBully => &super::improved_bully::INFO,
            AlgorithmKind::Ring => &super::ring::INFO,
            AlgorithmKind::Lcr => &super::lcr::INFO,
            AlgorithmKind::Hs => &super::hs::INFO,
            AlgorithmKind::Raft => &super::raft::INFO,
        }
    }

    /// Name used on the CLI, in config files and as the metrics `algorithm` label.
    pub fn as_str(self) -> &'static str {
        self.info().name
    }

    /// Every algorithm, in declaration order.
    pub fn available() -> Vec<AlgorithmKind> {
        AlgorithmKind::ALL.to_vec()
    }

    /// Does the algorithm's safety argument promise "the highest live id leads"?
    /// (Bully and ring families do; Raft elects whoever wins a majority.)
    pub fn elects_highest_id(self) -> bool {
        self.info().elects_highest_id()
    }

    /// The literature's message counts for this algorithm (`compare`, the report).
    pub fn cases(self) -> Vec<Case> {
        (self.info().cases)()
    }
}

impl fmt::Display for AlgorithmKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for an algorithm name that electd does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm {given:?}; expected one of: {}", AlgorithmKind::ALL.map(|k| k.as_str()).join(", "))]
pub struct UnknownAlgorithm {
    /// The name given.
    pub(crate) given: String,
}

impl FromStr for AlgorithmKind {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        by_name(s).ok_or_else(|| UnknownAlgorithm {
            given: s.to_string(),
        })
    }
}

/// The algorithm named `name` or one of its aliases (case-insensitive, `_` = `-`).
pub(crate) fn by_name(name: &str) -> Option<AlgorithmKind> {
    let norm = name.trim().to_ascii_lowercase().replace('_', "-");
    AlgorithmKind::ALL.into_iter().find(|k| {
        let e = k.info();
        e.name == norm || e.aliases.contains(&norm.as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::algorithm::GroupConfig;
    use crate::contract::info::Recovery;
    use std::collections::HashSet;

    #[test]
    fn all_is_in_declaration_order() {
        for (i, kind) in AlgorithmKind::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, i, "{kind:?}");
        }
    }

    #[test]
    fn every_entry_is_complete_and_distinct() {
        let mut names = HashSet::new();
        for kind in AlgorithmKind::ALL {
            let e = kind.info();
            assert!(
                !e.name.is_empty() && !e.title.is_empty() && !e.summary.is_empty(),
                "{kind:?}"
            );
            // The serde name (status JSON, reports) is the registry's name.
            let json = serde_json::to_string(&kind).expect("serialize");
            assert_eq!(json, format!("\"{}\"", e.name), "{kind:?}");
            for n in std::iter::once(&e.name).chain(e.aliases) {
                assert!(names.insert(*n), "name {n} used twice");
                assert_eq!(by_name(n), Some(kind));
                assert_eq!(n.parse::<AlgorithmKind>(), Ok(kind));
            }
            assert!(
                !e.message_types.is_empty(),
                "{} lists no message types",
                e.name
            );
            let cases = kind.cases();
            assert!(!cases.is_empty(), "{} has no count formula", e.name);
            for c in &cases {
                assert_eq!(c.algorithm, kind);
                assert!(c.expected.is_some() && !c.formula.is_empty(), "{}", c.label);
            }
            let cfg = GroupConfig {
                me: 1,
                ring: vec![1, 2, 3].into(),
                timing: Default::default(),
                options: Default::default(),
                incarnation: 1,
            };
            let built = crate::algorithms::build(kind, cfg).expect("builds");
            assert_eq!(built.leader(), None, "{} starts with a leader", e.name);
            // `carries` tells the failure-detector groups by their recovery.
            assert_eq!(
                built.uses_failure_detector(),
                !matches!(e.recovery, Recovery::RandomizedTimeout),
                "{}",
                e.name
            );
            assert_eq!(built.uses_failure_detector(), e.uses_failure_detector());
        }
        assert!("paxos".parse::<AlgorithmKind>().is_err());
    }
}
