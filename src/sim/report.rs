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
    pub total: u64,
    pub by_type: BTreeMap<&'static str, u64>,
}

impl MessageCounts {
    pub fn from_sent(sent: &[u64; MessageType::ALL.len()]) -> Self {
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

    pub fn of(&self, t: MessageType) -> u64 {
        self.by_type.get(t.as_str()).copied().unwrap_or(0)
    }

    pub fn add(&mut self, other: &MessageCounts) {
        self.total += other.total;
        for (k, v) in &other.by_type {
            *self.by_type.entry(k).or_insert(0) += v;
        }
    }
}

/// One measured election.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ElectionReport {
    pub label: String,
    pub algorithm: AlgorithmKind,
    pub leader: Option<NodeId>,
    pub agreed: bool,
    pub messages: MessageCounts,
    /// Heartbeats (and their acks) during the election, counted apart.
    pub heartbeats: u64,
    pub acks: u64,
    pub retransmissions: u64,
    pub delivery_failures: u64,
    /// Virtual time from the trigger to the last leader change.
    pub virtual_ms: f64,
}

/// The result of `electd simulate`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimReport {
    pub algorithm: AlgorithmKind,
    pub nodes: usize,
    pub scenario: String,
    pub initiator: NodeId,
    pub seed: u64,
    pub loss: f64,
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
    pub acks: u64,
    pub retransmissions: u64,
    /// Sum of the elections' virtual times.
    pub virtual_ms: f64,
    pub elections: Vec<ElectionReport>,
    /// Wall-clock time of the run (not deterministic; for throughput only).
    pub wall_ms: f64,
    /// Datagrams delivered per wall-clock second.
    pub datagrams_per_sec: f64,
}

impl SimReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

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
