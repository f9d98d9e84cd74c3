//! `[policy]` and the peers' `priority` keys: parsed from the TOML into the
//! [`crate::contract::policy::Policy`] the algorithms consult, checked against what
//! each enabled algorithm implements, and reported with the key to blame.

use super::raw::RawPeer;
use super::validate::Validator;
use super::ConfigError;
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::policy::{Policy, Preempt};
use crate::NodeId;
use std::time::Duration;

impl Validator<'_> {
    /// `[policy]` and the peers' `priority` keys.
    pub(super) fn policy(
        &self,
        table: Option<&toml::Value>,
        peers: &[RawPeer],
    ) -> Result<Policy, ConfigError> {
        let prio: Vec<(usize, NodeId, Option<i64>)> = peers
            .iter()
            .enumerate()
            .map(|(i, p)| (i, NodeId::try_from(p.id).unwrap_or(0), p.priority))
            .collect();
        parse(table, &prio).map_err(|e| self.err(e.key, e.message))
    }

    /// Refuse the `[policy]` switches an enabled algorithm does not implement.
    pub(super) fn policy_check(
        &self,
        policy: &Policy,
        algorithms: &[AlgorithmKind],
    ) -> Result<(), ConfigError> {
        check(policy, algorithms).map_err(|e| self.err(e.key, e.message))
    }
}

/// Refuse switches an enabled algorithm does not implement (rather than ignore them;
/// see [`crate::contract::info::Info::policy_preempt`]).
pub(super) fn check(policy: &Policy, algorithms: &[AlgorithmKind]) -> Result<(), PolicyError> {
    // A table of a group the node does not run (a typo of the roster, or a group
    // removed from it) is refused as `[lease.<algorithm>]`'s is, not ignored.
    if let Some(kind) = policy
        .per_algorithm
        .keys()
        .find(|k| !algorithms.contains(k))
    {
        return Err(err(
            format!("policy.{kind}"),
            format!("{kind} is not in `algorithms`"),
        ));
    }
    for &kind in algorithms {
        if !kind.info().policy_preempt && !policy.preempt_for(kind).is_textbook() {
            return Err(err(
                format!("policy.{kind}"),
                format!(
                    "{kind} does not implement preempt = false or preempt_delay yet; \
                     set [policy.{kind}] preempt = true (and no preempt_delay)"
                ),
            ));
        }
    }
    Ok(())
}

/// A `[policy]` or `[[peer]] priority` error: the key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PolicyError {
    /// The key to blame, e.g. `peer[2].priority` or `policy.preempt_delay`.
    key: String,
    /// What is wrong with it.
    message: String,
}

fn err(key: impl Into<String>, message: impl Into<String>) -> PolicyError {
    PolicyError {
        key: key.into(),
        message: message.into(),
    }
}

/// Parse `[policy]` (the raw TOML table, if present) and the peers' `priority` keys
/// (`(peer index, id, priority)`).
pub(super) fn parse(
    table: Option<&toml::Value>,
    priorities: &[(usize, NodeId, Option<i64>)],
) -> Result<Policy, PolicyError> {
    let mut policy = Policy::default();
    for &(i, id, p) in priorities {
        let Some(p) = p else { continue };
        let p = u8::try_from(p).map_err(|_| {
            err(
                format!("peer[{i}].priority"),
                format!("{p} is out of range: 0..=255 (0 = never leader)"),
            )
        })?;
        policy.priority.insert(id, p);
    }
    if !priorities.is_empty() && priorities.iter().all(|&(_, id, _)| !policy.eligible(id)) {
        return Err(err(
            "peer.priority",
            "every peer has priority 0 (never leader): no node could ever lead",
        ));
    }
    let Some(table) = table else {
        return Ok(policy);
    };
    let toml::Value::Table(t) = table else {
        return Err(err("policy", "must be a table"));
    };
    policy.preempt = preempt_table("policy", t, Preempt::default(), true)?;
    for (k, v) in t {
        if k == "preempt" || k == "preempt_delay" {
            continue;
        }
        let key = format!("policy.{k}");
        let kind: AlgorithmKind =
            k.parse()
                .map_err(|e: crate::algorithms::registry::UnknownAlgorithm| {
                    err(
                        &key,
                        format!(
                    "unknown key: expected preempt, preempt_delay or a table per algorithm ({e})"
                ),
                    )
                })?;
        let toml::Value::Table(sub) = v else {
            return Err(err(key, "must be a table (preempt, preempt_delay)"));
        };
        let p = preempt_table(&key, sub, policy.preempt, false)?;
        policy.per_algorithm.insert(kind, p);
    }
    Ok(policy)
}

/// `preempt` and `preempt_delay` of one table; with `extra_ok`, other keys are left to
/// the caller (the per-algorithm tables), otherwise they are errors.
fn preempt_table(
    at: &str,
    t: &toml::Table,
    base: Preempt,
    extra_ok: bool,
) -> Result<Preempt, PolicyError> {
    let mut p = base;
    let mut delay_given = false;
    for (k, v) in t {
        let key = format!("{at}.{k}");
        match (k.as_str(), v) {
            ("preempt", toml::Value::Boolean(b)) => p.preempt = *b,
            ("preempt", _) => return Err(err(key, "must be true or false")),
            ("preempt_delay", toml::Value::String(s)) => {
                delay_given = true;
                p.delay = humantime::parse_duration(s.trim()).map_err(|e| {
                    err(&key, format!("{s:?} is not a duration like \"30s\" ({e})"))
                })?;
                if p.delay > super::validate::MAX_DURATION {
                    return Err(err(key, format!("{s:?} is more than a day")));
                }
            }
            ("preempt_delay", _) => return Err(err(key, "must be a duration string like \"30s\"")),
            _ if extra_ok => {}
            _ => return Err(err(key, "unknown key: expected preempt or preempt_delay")),
        }
    }
    if !p.preempt && !delay_given {
        p.delay = Duration::ZERO;
    }
    if !p.preempt && !p.delay.is_zero() {
        return Err(err(
            format!("{at}.preempt_delay"),
            "preempt_delay needs preempt = true (with preempt = false a node never takes over)",
        ));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> toml::Value {
        let t: toml::Table = toml::from_str(s).expect("toml");
        t.get("policy").cloned().expect("policy table")
    }

    #[test]
    fn priority_ranks_before_the_id_and_zero_never_leads() {
        let p = parse(None, &[(0, 1, Some(200)), (1, 2, None), (2, 3, Some(0))]).unwrap();
        assert!(p.outranks(1, 2) && p.outranks(2, 3) && p.outranks(1, 3));
        assert!(!p.eligible(3) && p.eligible(2));
        assert_eq!(p.best([1, 2, 3]), Some(1));
        assert_eq!(
            p.best([3]),
            Some(3),
            "best is a rank, eligibility is checked apart"
        );
    }

    #[test]
    fn bad_priorities_are_refused_with_the_key() {
        let e = parse(None, &[(0, 1, Some(256))]).unwrap_err();
        assert_eq!(e.key, "peer[0].priority");
        let e = parse(None, &[(0, 1, Some(0)), (1, 2, Some(0))]).unwrap_err();
        assert!(e.message.contains("never leader"), "{e:?}");
    }

    #[test]
    fn policy_table_and_per_algorithm_overrides() {
        let t = table(
            "[policy]\npreempt = true\npreempt_delay = \"30s\"\n[policy.raft]\npreempt = false\n",
        );
        let p = parse(Some(&t), &[]).unwrap();
        assert_eq!(
            p.preempt_for(AlgorithmKind::Bully).after(),
            Some(Duration::from_secs(30))
        );
        assert_eq!(p.preempt_for(AlgorithmKind::Raft).after(), None);
        for (bad, key) in [
            ("[policy]\npreempt = 1\n", "policy.preempt"),
            (
                "[policy]\npreempt_delay = \"soon\"\n",
                "policy.preempt_delay",
            ),
            (
                "[policy]\npreempt = false\npreempt_delay = \"1s\"\n",
                "policy.preempt_delay",
            ),
            ("[policy.paxos]\npreempt = false\n", "policy.paxos"),
            ("[policy.bully]\nweight = 3\n", "policy.bully.weight"),
        ] {
            let e = parse(Some(&table(bad)), &[]).unwrap_err();
            assert_eq!(e.key, key, "{bad}: {e:?}");
        }
        // A table of a group not run is refused, as [lease.<algorithm>]'s is (it was
        // accepted and did nothing).
        let e = check(&p, &[AlgorithmKind::Bully]).unwrap_err();
        assert_eq!(e.key, "policy.raft");
        assert!(e.message.contains("not in `algorithms`"), "{e:?}");
        check(&p, &[AlgorithmKind::Bully, AlgorithmKind::Raft]).expect("raft is run");
    }
}
