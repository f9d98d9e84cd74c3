//! Measurement: agreement and settling, message totals over every node's lives, and
//! the per-election reports of a scenario's measured steps.

use super::report::{ElectionReport, MessageCounts};
use super::{Sim, Time, Totals};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::MessageType;
use crate::NodeId;

impl Sim {
    /// When a node last changed its belief about a leader (or its term).
    pub fn last_leader_change(&self) -> Time {
        self.last_leader_change
    }

    /// The leader every live node of `group` agrees on, if they all agree on a live one.
    pub fn agreement(&self, group: AlgorithmKind) -> Option<NodeId> {
        let mut agreed: Option<NodeId> = None;
        for sn in self.nodes.iter().filter(|n| n.alive) {
            let leader = sn.node.as_ref()?.leader(group)?;
            match agreed {
                None => agreed = Some(leader),
                Some(l) if l == leader => {}
                Some(_) => return None,
            }
        }
        agreed.filter(|&l| self.is_alive(l))
    }

    /// Every group agrees, no live node is electing and no election datagram is in flight.
    pub fn settled(&self) -> bool {
        self.election_in_flight == 0
            && self.cfg.algorithms.iter().all(|&g| {
                self.agreement(g).is_some()
                    && self
                        .nodes
                        .iter()
                        .filter(|n| n.alive)
                        .all(|n| n.node.as_ref().is_some_and(|x| !x.is_electing(g)))
            })
    }

    /// Election messages sent so far by type (liveness excluded), past lives included.
    pub fn totals(&self, group: AlgorithmKind) -> [u64; MessageType::ALL.len()] {
        let mut t = self
            .retired
            .get(&group)
            .copied()
            .unwrap_or([0; MessageType::ALL.len()]);
        for sn in &self.nodes {
            if let Some(s) = sn.node.as_ref().and_then(|n| n.group_stats(group)) {
                for (a, b) in t.iter_mut().zip(s.sent.iter()) {
                    *a += b;
                }
            }
        }
        t
    }

    /// (acks, retransmissions, delivery failures) summed over all nodes.
    pub fn link_totals(&self) -> [u64; 3] {
        let mut t = self.retired_link;
        for n in self.nodes.iter().filter_map(|n| n.node.as_ref()) {
            let l = n.link_stats();
            t[0] += l.acks_sent;
            t[1] += l.retransmissions;
            t[2] += l.delivery_failures;
        }
        t
    }

    fn all_totals(&self) -> Totals {
        self.cfg
            .algorithms
            .iter()
            .map(|&g| (g, self.totals(g)))
            .collect()
    }

    /// Start measuring an election.
    pub(crate) fn begin_measure(&mut self, label: &str) {
        self.measure = Some((
            label.to_string(),
            self.now,
            self.all_totals(),
            self.link_totals(),
        ));
        self.last_leader_change = self.now;
    }

    /// Close the current measurement (per group) and append it to `elections`.
    pub fn end_measure(&mut self) {
        let Some((label, start, before, link_before)) = self.measure.take() else {
            return;
        };
        let after = self.all_totals();
        let link_after = self.link_totals();
        for &g in &self.cfg.algorithms {
            let b = before.get(&g).copied().unwrap_or_default();
            let a = after.get(&g).copied().unwrap_or_default();
            let mut delta = [0u64; MessageType::ALL.len()];
            for i in 0..delta.len() {
                delta[i] = a[i] - b[i];
            }
            let leader = self.agreement(g);
            let agreed = leader.is_some();
            let end = if agreed {
                self.last_leader_change
            } else {
                self.now
            };
            self.elections.push(ElectionReport {
                label: label.clone(),
                algorithm: g,
                leader,
                agreed,
                messages: MessageCounts::from_sent(&delta),
                heartbeats: delta[MessageType::Heartbeat as usize]
                    + delta[MessageType::HeartbeatAck as usize],
                acks: link_after[0] - link_before[0],
                retransmissions: link_after[1] - link_before[1],
                delivery_failures: link_after[2] - link_before[2],
                virtual_ms: end.saturating_sub(start).as_secs_f64() * 1e3,
            });
        }
    }
}
