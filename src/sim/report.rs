//! What a simulation reports: per measured election, and for a whole scenario, in the
//! formats of `electd simulate --format table|json|csv`.

use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::MessageType;
use crate::NodeId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Election messages (liveness traffic excluded), in total and by `type`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MessageCounts {
    /// Every election message, all types together.
    pub total: u64,
    /// Count per type label ([`MessageType::as_str`]); types never sent are absent.
    pub by_type: BTreeMap<&'static str, u64>,
}

impl MessageCounts {
    /// Count the election messages of a per-type send counter (indexed by
    /// `MessageType as usize`), leaving liveness traffic out.
    pub(crate) fn from_sent(sent: &[u64; MessageType::ALL.len()]) -> Self {
        let mut by_type = BTreeMap::new();
        let mut total = 0;
        for t in MessageType::ALL {
            let n = sent[t as usize];
            if n > 0 && !t.is_liveness() {
                by_type.insert(t.as_str(), n);
                total += n;
            }
        }
        MessageCounts { total, by_type }
    }

    /// The count of type `t` (0 when none was sent).
    pub fn of(&self, t: MessageType) -> u64 {
        self.by_type.get(t.as_str()).copied().unwrap_or(0)
    }

    /// Add `other`'s counts to these.
    pub(crate) fn add(&mut self, other: &MessageCounts) {
        self.total += other.total;
        for (k, v) in &other.by_type {
            *self.by_type.entry(k).or_insert(0) += v;
        }
    }
}

/// One measured election.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ElectionReport {
    /// The measured election's name (`startup`, `leader-crash`, …).
    pub label: String,
    /// The algorithm elected with.
    pub algorithm: AlgorithmKind,
    /// The leader the live nodes agree on at the end, if they agree.
    pub leader: Option<NodeId>,
    /// Every live node agreed on one live leader.
    pub agreed: bool,
    /// Election messages sent during the election.
    pub messages: MessageCounts,
    /// Heartbeats (and their acks) during the election, counted apart.
    pub heartbeats: u64,
    /// Acknowledgements sent by the reliable link (not counted in `messages`).
    pub acks: u64,
    /// Reliable-link retransmissions (not counted in `messages`).
    pub retransmissions: u64,
    /// Messages the reliable link gave up on.
    pub delivery_failures: u64,
    /// Virtual time from the trigger to the last leader change.
    pub virtual_ms: f64,
}

/// The result of `electd simulate`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimReport {
    /// The algorithm simulated.
    pub algorithm: AlgorithmKind,
    /// Roster size N.
    pub nodes: usize,
    /// The scenario run (`startup`, `leader-crash`, `chaos`).
    pub scenario: String,
    /// The node that called the first election.
    pub initiator: NodeId,
    /// The seed of the run (replays it).
    pub seed: u64,
    /// Datagram loss probability of the run.
    pub loss: f64,
    /// Node ids in ring order.
    pub ring: Vec<NodeId>,
    /// Leader after the last election.
    pub leader: Option<NodeId>,
    /// Every election ended with all live nodes agreeing on a live leader (the highest
    /// live id, for the algorithms that promise it).
    pub agreed: bool,
    /// The highest live id at the end, for the algorithms that must elect it.
    pub expected_leader: Option<NodeId>,
    /// All elections together.
    pub messages: MessageCounts,
    /// Reliable-link acknowledgements over all elections.
    pub acks: u64,
    /// Reliable-link retransmissions over all elections.
    pub retransmissions: u64,
    /// Sum of the elections' virtual times.
    pub virtual_ms: f64,
    /// Each measured election, in order.
    pub elections: Vec<ElectionReport>,
    /// Wall-clock time of the run (not deterministic; for throughput only).
    pub wall_ms: f64,
    /// Datagrams delivered per wall-clock second.
    pub datagrams_per_sec: f64,
}

impl SimReport {
    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The report as CSV: one row per election and message type, then its total.
    pub fn to_csv(&self) -> String {
        let mut s = String::from(
            "algorithm,nodes,scenario,election,leader,agreed,type,messages,virtual_ms\n",
        );
        for e in &self.elections {
            let leader = e.leader.map(|l| l.to_string()).unwrap_or_default();
            for (t, n) in &e.messages.by_type {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{:.3}",
                    self.algorithm,
                    self.nodes,
                    self.scenario,
                    e.label,
                    leader,
                    e.agreed,
                    t,
                    n,
                    e.virtual_ms
                );
            }
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},total,{},{:.3}",
                self.algorithm,
                self.nodes,
                self.scenario,
                e.label,
                leader,
                e.agreed,
                e.messages.total,
                e.virtual_ms
            );
        }
        s
    }

    /// The report as a text table (what `electd simulate` prints by default).
    pub fn to_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} · {} nodes · scenario {} · initiator {} · seed {} · loss {}",
            self.algorithm, self.nodes, self.scenario, self.initiator, self.seed, self.loss
        );
        let mut types: Vec<&str> = Vec::new();
        for e in &self.elections {
            for t in e.messages.by_type.keys() {
                if !types.contains(t) {
                    types.push(t);
                }
            }
        }
        let _ = write!(s, "{:<14} {:>6} {:>6}", "election", "leader", "agreed");
        for t in &types {
            let _ = write!(s, " {:>w$}", t, w = t.len().max(6));
        }
        let _ = writeln!(
            s,
            " {:>8} {:>6} {:>7} {:>11}",
            "total", "acks", "retrans", "virtual_ms"
        );
        for e in &self.elections {
            let leader = e
                .leader
                .map(|l| l.to_string())
                .unwrap_or_else(|| "-".into());
            let _ = write!(s, "{:<14} {:>6} {:>6}", e.label, leader, e.agreed);
            for t in &types {
                let n = e.messages.by_type.get(t).copied().unwrap_or(0);
                let _ = write!(s, " {:>w$}", n, w = t.len().max(6));
            }
            let _ = writeln!(
                s,
                " {:>8} {:>6} {:>7} {:>11.3}",
                e.messages.total, e.acks, e.retransmissions, e.virtual_ms
            );
        }
        let _ = writeln!(
            s,
            "leader {} · agreed {} · {} election messages · {:.1} ms virtual · {:.1} ms wall",
            self.leader
                .map(|l| l.to_string())
                .unwrap_or_else(|| "none".into()),
            self.agreed,
            self.messages.total,
            self.virtual_ms,
            self.wall_ms
        );
        s
    }
}
