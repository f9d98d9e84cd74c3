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
pub const DEFAULT_PRIORITY: u8 = 100;

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
    pub const ALL: [Ineligible; 4] = [
        Ineligible::Drained,
        Ineligible::Fault,
        Ineligible::NoQuorum,
        Ineligible::Transfer,
    ];

    /// The name used in `/status`, metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Ineligible::Drained => "drained",
            Ineligible::Fault => "fault",
            Ineligible::NoQuorum => "no_quorum",
            Ineligible::Transfer => "transfer",
        }
    }
}

/// The sort key of a node: (eligible, priority, id). Higher leads.
pub type Rank = (bool, u8, NodeId);

impl Policy {
    /// `id`'s priority (the default when its `[[peer]]` sets none).
    pub fn priority(&self, id: NodeId) -> u8 {
        self.priority.get(&id).copied().unwrap_or(DEFAULT_PRIORITY)
    }

    /// May `id` lead? (Priority 0 = never leader; a member made ineligible at run
    /// time neither.)
    pub fn eligible(&self, id: NodeId) -> bool {
        self.priority(id) > 0 && !self.ineligible.contains(&id)
    }

    /// `id`'s sort key: (eligible, priority, id).
    pub fn rank(&self, id: NodeId) -> Rank {
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

impl Policy {
    /// Refuse switches an enabled algorithm does not implement (rather than ignore
    /// them; see `registry::Entry::policy_preempt`).
    pub fn check(&self, algorithms: &[AlgorithmKind]) -> Result<(), PolicyError> {
        for &kind in algorithms {
            if !kind.info().policy_preempt && !self.preempt_for(kind).is_textbook() {
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
}

/// A `[policy]` or `[[peer]] priority` error: the key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// The key to blame, e.g. `peer[2].priority` or `policy.preempt_delay`.
    pub key: String,
    /// What is wrong with it.
    pub message: String,
}

fn err(key: impl Into<String>, message: impl Into<String>) -> PolicyError {
    PolicyError {
        key: key.into(),
        message: message.into(),
    }
}

/// Parse `[policy]` (the raw TOML table, if present) and the peers' `priority` keys
/// (`(peer index, id, priority)`).
pub fn parse(
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
                .map_err(|e: crate::contract::algorithm::UnknownAlgorithm| {
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
    }
}
