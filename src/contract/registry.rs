//! The algorithm registry: one entry per election algorithm, holding everything the
//! rest of the program needs to know about it — its names, its wire value, how to
//! build it, whom it elects, how long it may take to recover, the literature's count
//! formulas and the message types it uses.
//!
//! Nothing else in the program matches on [`AlgorithmKind`] to learn a fact about an
//! algorithm: it asks [`AlgorithmKind::info`]. Adding an algorithm is its file under
//! `src/algorithms/`, one [`Entry`] in [`REGISTRY`], its value in `proto/electd.proto`
//! (plus message variants if it brings new ones). `tests` below iterate the registry
//! and fail when an entry is incomplete or inconsistent.

use crate::algorithms::{bully, hs, improved_bully, lcr, raft, ring};
use crate::contract::algorithm::{Algorithm, AlgorithmKind, GroupConfig};
use crate::contract::formulas::{self, Case};
use crate::contract::message::MessageType;
use crate::proto;
use crate::sim::scenario::RingOrder;

/// Whom an algorithm's safety argument promises to elect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elects {
    /// The highest live id (Bully and ring families).
    HighestLiveId,
    /// Whoever first wins a majority; with no majority alive, nobody (Raft).
    MajorityWinner,
}

/// How an election unfolds in time; the chaos campaign's recovery bound and the
/// benchmark's failover model are derived from it (see `sim::chaos::recovery_bound`
/// and `bench::report::model_median`).
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

/// Failover targets of the benchmark, as multiples of `failure_timeout`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FailoverTarget {
    /// Median failover after SIGKILL of the leader.
    pub median: f64,
    /// 99th percentile, where a target is set.
    pub p99: Option<f64>,
}

/// Everything the program knows about one algorithm.
pub struct Entry {
    /// The algorithm this entry describes.
    pub kind: AlgorithmKind,
    /// Name on the CLI, in config files and as the metrics `algorithm` label.
    pub name: &'static str,
    /// Other accepted spellings (lower case; `by_name` also reads `_` as `-`).
    pub aliases: &'static [&'static str],
    /// Human title with its source.
    pub title: &'static str,
    /// One line on how it elects (`--help`).
    pub summary: &'static str,
    /// Value of the `algorithm` field on the wire.
    pub wire: proto::Algorithm,
    /// Builds one instance (the roster is checked by `algorithms::build`).
    pub build: fn(GroupConfig) -> Box<dyn Algorithm>,
    /// Whom it elects.
    pub elects: Elects,
    /// How it recovers from a leader's failure (its recovery bound).
    pub recovery: Recovery,
    /// Message types the algorithm sends in elections (liveness traffic and RESIGN,
    /// which every algorithm may use, are listed apart in [`COMMON_TYPES`]).
    pub message_types: &'static [MessageType],
    /// The literature's message counts (`compare`, the report).
    pub cases: fn() -> Vec<Case>,
    /// What the benchmark expects of its failover.
    pub failover_target: FailoverTarget,
    /// Does it implement `[policy] preempt = false` and `preempt_delay` (a node ranked
    /// above a healthy leader holds back)? A switch it does not implement is refused
    /// by the configuration. Raft never preempts whatever the switch (a returning node
    /// follows the leader whose lease it hears), so it counts as implementing it.
    /// Priorities (the ranking) every algorithm implements.
    pub policy_preempt: bool,
}

/// Message types any algorithm may send besides its own.
pub const COMMON_TYPES: &[MessageType] = &[
    MessageType::Heartbeat,
    MessageType::HeartbeatAck,
    MessageType::Resign,
];

const BULLY_TYPES: &[MessageType] = &[
    MessageType::Election,
    MessageType::Ok,
    MessageType::Coordinator,
];

/// The registry, in [`AlgorithmKind`] declaration order (`AlgorithmKind::info`
/// indexes it; a test checks the order).
pub static REGISTRY: [Entry; 6] = [
    Entry {
        kind: AlgorithmKind::Bully,
        name: "bully",
        aliases: &[],
        title: "Bully (Garcia-Molina 1982)",
        summary: "Garcia-Molina's Bully: the highest live id wins",
        wire: proto::Algorithm::Bully,
        build: |c| Box::new(bully::Bully::new(c)),
        elects: Elects::HighestLiveId,
        recovery: Recovery::Cascade { answer_rounds: 1 },
        message_types: BULLY_TYPES,
        cases: || {
            vec![Case {
                algorithm: AlgorithmKind::Bully,
                order: RingOrder::Ascending,
                label: "bully".into(),
                formula: "N²−1 (Garcia-Molina 1982; seed report Eq. 1, k=1)",
                expected: Some(|n| formulas::bully(n, 1) as f64),
                exact: true,
            }]
        },
        failover_target: FailoverTarget {
            median: 1.10,
            p99: Some(1.30),
        },
        policy_preempt: true,
    },
    Entry {
        kind: AlgorithmKind::ImprovedBully,
        name: "improved-bully",
        aliases: &["improvedbully", "improved_bully"],
        title: "Improved Bully (Soundarabai et al. 2014)",
        summary: "Bully where the initiator hands the election to its highest responder",
        wire: proto::Algorithm::ImprovedBully,
        build: |c| Box::new(improved_bully::ImprovedBully::new(c)),
        elects: Elects::HighestLiveId,
        recovery: Recovery::Cascade { answer_rounds: 2 },
        message_types: &[
            MessageType::Election,
            MessageType::Ok,
            MessageType::Coordinator,
            MessageType::YouAreCoordinator,
        ],
        cases: || {
            vec![Case {
                algorithm: AlgorithmKind::ImprovedBully,
                order: RingOrder::Ascending,
                label: "improved-bully".into(),
                formula: "3N−2 (Soundarabai et al. 2014 Table 1; seed report Eq. 2, k=1)",
                expected: Some(|n| formulas::improved_bully(n, 1) as f64),
                exact: true,
            }]
        },
        failover_target: FailoverTarget {
            median: 1.20,
            p99: None,
        },
        policy_preempt: true,
    },
    Entry {
        kind: AlgorithmKind::Ring,
        name: "ring",
        aliases: &[],
        title: "Ring with id lists (Tanenbaum & van Steen §6.5.1)",
        summary: "ring election: a message collects every id around the ring",
        wire: proto::Algorithm::Ring,
        build: |c| Box::new(ring::Ring::new(c)),
        elects: Elects::HighestLiveId,
        recovery: Recovery::RingLaps {
            hops_per_member: ring::HOPS_PER_MEMBER,
        },
        message_types: &[MessageType::RingElection, MessageType::RingCoordinator],
        cases: || {
            vec![Case {
                algorithm: AlgorithmKind::Ring,
                order: RingOrder::Ascending,
                label: "ring".into(),
                formula: "2N (Tanenbaum §6.5.1; seed slides: ELECTION lap + COORDINATOR lap)",
                expected: Some(|n| formulas::ring(n) as f64),
                exact: true,
            }]
        },
        failover_target: FailoverTarget {
            median: 1.10,
            p99: Some(1.30),
        },
        policy_preempt: true,
    },
    Entry {
        kind: AlgorithmKind::Lcr,
        name: "lcr",
        aliases: &["chang-roberts"],
        title: "Chang–Roberts / LCR (Chang & Roberts 1979)",
        summary: "Chang–Roberts: ids travel clockwise, only higher ones are forwarded",
        wire: proto::Algorithm::Lcr,
        build: |c| Box::new(lcr::Lcr::new(c)),
        elects: Elects::HighestLiveId,
        recovery: Recovery::RingLaps {
            hops_per_member: lcr::HOPS_PER_MEMBER,
        },
        message_types: &[MessageType::LcrElection, MessageType::LcrElected],
        cases: || {
            vec![
                Case {
                    algorithm: AlgorithmKind::Lcr,
                    order: RingOrder::Descending,
                    label: "lcr (descending)".into(),
                    formula: "N(N+1)/2 + N (Chang & Roberts 1979 worst case + ELECTED lap)",
                    expected: Some(|n| (formulas::lcr_worst(n) + n) as f64),
                    exact: true,
                },
                Case {
                    algorithm: AlgorithmKind::Lcr,
                    order: RingOrder::Ascending,
                    label: "lcr (ascending)".into(),
                    formula: "2N−1 + N (Chang & Roberts 1979 best case + ELECTED lap)",
                    expected: Some(|n| (formulas::lcr_best(n) + n) as f64),
                    exact: true,
                },
                Case {
                    algorithm: AlgorithmKind::Lcr,
                    order: RingOrder::Random,
                    label: "lcr (random)".into(),
                    formula: "N·H_N + N (Chang & Roberts 1979 average + ELECTED lap)",
                    expected: Some(|n| formulas::lcr_average(n) + n as f64),
                    exact: false,
                },
            ]
        },
        failover_target: FailoverTarget {
            median: 1.10,
            p99: Some(1.30),
        },
        policy_preempt: true,
    },
    Entry {
        kind: AlgorithmKind::Hs,
        name: "hs",
        aliases: &["hirschberg-sinclair"],
        title: "Hirschberg–Sinclair (Hirschberg & Sinclair 1980)",
        summary: "Hirschberg–Sinclair: probes both ways in doubling phases, O(n log n)",
        wire: proto::Algorithm::Hs,
        build: |c| Box::new(hs::Hs::new(c)),
        elects: Elects::HighestLiveId,
        recovery: Recovery::RingLaps {
            hops_per_member: hs::HOPS_PER_MEMBER,
        },
        message_types: &[
            MessageType::Probe,
            MessageType::Reply,
            MessageType::Terminate,
        ],
        cases: || {
            const HS: &str =
                "≤ 8N(1+⌈log₂N⌉) + N (Hirschberg & Sinclair 1980; seed textbook Thm 13.10)";
            [RingOrder::Descending, RingOrder::Random]
                .into_iter()
                .map(|order| Case {
                    algorithm: AlgorithmKind::Hs,
                    order,
                    label: match order {
                        RingOrder::Descending => "hs (descending)".into(),
                        _ => "hs (random)".into(),
                    },
                    formula: HS,
                    expected: Some(|n| (formulas::hs_bound(n) + n) as f64),
                    exact: false,
                })
                .collect()
        },
        failover_target: FailoverTarget {
            median: 1.10,
            p99: Some(1.30),
        },
        policy_preempt: true,
    },
    Entry {
        kind: AlgorithmKind::Raft,
        name: "raft",
        aliases: &[],
        title: "Raft leader election (Ongaro & Ousterhout 2014 §5.2)",
        summary: "Raft's leader election: terms and majority votes",
        wire: proto::Algorithm::Raft,
        build: |c| Box::new(raft::Raft::new(c)),
        elects: Elects::MajorityWinner,
        recovery: Recovery::RandomizedTimeout,
        message_types: &[
            MessageType::PreVote,
            MessageType::PreVoteResponse,
            MessageType::RequestVote,
            MessageType::Vote,
        ],
        cases: || {
            vec![Case {
                algorithm: AlgorithmKind::Raft,
                order: RingOrder::Ascending,
                label: "raft".into(),
                formula: "4(N−1): (N−1)×(pre_vote, pre_vote_response, request_vote, vote) \
                          (Ongaro & Ousterhout 2014 §5.2; thesis §9.6 pre-vote)",
                expected: Some(|n| formulas::raft(n, true) as f64),
                exact: true,
            }]
        },
        failover_target: FailoverTarget {
            median: 1.25,
            p99: None,
        },
        policy_preempt: true,
    },
];

/// The entry whose wire value is `wire` (`None` for UNSPECIFIED or unknown).
pub fn by_wire(wire: proto::Algorithm) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.wire == wire)
}

/// The entry named `name` or one of its aliases (case-insensitive, `_` = `-`).
pub fn by_name(name: &str) -> Option<&'static Entry> {
    let norm = name.trim().to_ascii_lowercase().replace('_', "-");
    REGISTRY
        .iter()
        .find(|e| e.name == norm || e.aliases.contains(&norm.as_str()))
}

impl Entry {
    /// Does a body of type `t` belong to this group (docs/wire.md §7)? Its own election
    /// types, the [`COMMON_TYPES`], and the transfer and priority bodies of its kind:
    /// TIMEOUT_NOW where elections run on randomized timeouts (Raft), HANDOFF and
    /// PRIORITY where a heartbeat failure detector watches the leader (every other
    /// group). The codec drops a body of another group as `algorithm`.
    pub fn carries(&self, t: MessageType) -> bool {
        let detector = !matches!(self.recovery, Recovery::RandomizedTimeout);
        self.message_types.contains(&t)
            || COMMON_TYPES.contains(&t)
            || match t {
                MessageType::TimeoutNow => !detector,
                MessageType::Handoff | MessageType::Priority => detector,
                _ => false,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::runner::{simulate, SimulateParams};
    use crate::sim::scenario::Scenario;
    use std::collections::HashSet;

    #[test]
    fn registry_is_in_kind_order_and_covers_every_kind() {
        assert_eq!(REGISTRY.len(), AlgorithmKind::ALL.len());
        for (i, kind) in AlgorithmKind::ALL.into_iter().enumerate() {
            assert_eq!(REGISTRY[i].kind, kind, "entry {i} out of order");
            assert!(std::ptr::eq(kind.info(), &REGISTRY[i]));
        }
    }

    #[test]
    fn every_entry_is_complete_and_distinct() {
        let mut names = HashSet::new();
        let mut wires = HashSet::new();
        for e in &REGISTRY {
            assert!(
                !e.name.is_empty() && !e.title.is_empty() && !e.summary.is_empty(),
                "{:?}",
                e.kind
            );
            for n in std::iter::once(&e.name).chain(e.aliases) {
                assert!(names.insert(*n), "name {n} used twice");
                assert_eq!(by_name(n).map(|x| x.kind), Some(e.kind));
                assert_eq!(n.parse::<AlgorithmKind>(), Ok(e.kind));
            }
            assert_ne!(e.wire, proto::Algorithm::Unspecified, "{}", e.name);
            assert!(
                wires.insert(e.wire as i32),
                "wire value of {} reused",
                e.name
            );
            assert_eq!(by_wire(e.wire).map(|x| x.kind), Some(e.kind));
            assert!(
                !e.message_types.is_empty(),
                "{} lists no message types",
                e.name
            );
            let cases = (e.cases)();
            assert!(!cases.is_empty(), "{} has no count formula", e.name);
            for c in &cases {
                assert_eq!(c.algorithm, e.kind);
                assert!(c.expected.is_some() && !c.formula.is_empty(), "{}", c.label);
            }
            assert!(e.failover_target.median >= 1.0, "{}", e.name);
            let cfg = GroupConfig {
                me: 1,
                ring: vec![1, 2, 3].into(),
                timing: Default::default(),
                options: Default::default(),
                incarnation: 1,
            };
            let built = crate::algorithms::build(e.kind, cfg).expect("builds");
            assert_eq!(built.leader(), None, "{} starts with a leader", e.name);
            // `carries` tells the failure-detector groups by their recovery.
            assert_eq!(
                built.uses_failure_detector(),
                !matches!(e.recovery, Recovery::RandomizedTimeout),
                "{}",
                e.name
            );
        }
        // Every wire value the proto defines is claimed by exactly one entry.
        for v in 1..=REGISTRY.len() as i32 {
            let w = proto::Algorithm::try_from(v).expect("proto value");
            assert!(by_wire(w).is_some(), "proto value {v} has no entry");
        }
    }

    /// The message types an entry lists are the ones the algorithm really sends
    /// (startup and leader crash in the simulator), and only those.
    #[test]
    fn listed_message_types_match_what_the_algorithm_sends() {
        for e in &REGISTRY {
            let mut sent: HashSet<&str> = HashSet::new();
            for scenario in [Scenario::Startup, Scenario::LeaderCrash] {
                let mut p = SimulateParams::new(e.kind, 6);
                p.scenario = scenario;
                let report = simulate(&p).expect("simulate");
                for el in &report.elections {
                    let used = el.messages.by_type.iter().filter(|(_, &n)| n > 0);
                    sent.extend(used.map(|(t, _)| *t));
                }
            }
            let allowed: HashSet<&str> = e
                .message_types
                .iter()
                .chain(COMMON_TYPES)
                .map(|t| t.as_str())
                .collect();
            assert!(
                sent.is_subset(&allowed),
                "{} sent {:?}, registry lists {:?}",
                e.name,
                sent,
                e.message_types
            );
            for t in e.message_types {
                assert!(sent.contains(t.as_str()), "{} never sent its {t}", e.name);
            }
        }
    }
}
