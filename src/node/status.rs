//! What the node shows of itself: status snapshots, leadership and counters, for the
//! drivers, `/status`, metrics and the simulator.

use super::link::LinkStats;
use super::{GroupStats, GroupStatus, Node, StatusKey, Time};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::policy::Ineligible;
use crate::NodeId;
use std::collections::BTreeMap;
use std::time::Duration;

impl Node {
    /// A snapshot of every group's state, in configuration order.
    pub fn status(&self) -> Vec<GroupStatus> {
        self.status_keys()
            .map(|k| GroupStatus {
                algorithm: k.algorithm,
                state: k.state,
                leader: k.leader,
                term: k.term,
                since: k.since,
                electing: k.electing,
                last_election: k.last_election,
                // The reasons in their order (a set's order is the enum's).
                ineligible: Ineligible::ALL
                    .into_iter()
                    .filter(|i| k.ineligible & (1 << (*i as u8)) != 0)
                    .collect(),
            })
            .collect()
    }

    /// What [`Node::status`] shows of each group, without building it: equal keys,
    /// equal status (the runtime republishes `/status` only when one changed).
    pub(crate) fn status_keys(&self) -> impl Iterator<Item = StatusKey> + '_ {
        self.groups.iter().map(|g| StatusKey {
            algorithm: g.kind,
            state: g.algo.state(),
            leader: g.leader,
            term: g.term,
            since: g.since,
            electing: g.algo.is_electing(),
            last_election: g.stats.last_election,
            ineligible: g
                .ineligible
                .iter()
                .fold(0u8, |bits, i| bits | 1 << (*i as u8)),
        })
    }

    /// The snapshot of group `kind`, if the node runs it.
    pub fn group_status(&self, kind: AlgorithmKind) -> Option<GroupStatus> {
        self.status().into_iter().find(|s| s.algorithm == kind)
    }

    /// The leader group `kind` believes in and its term, without building the status
    /// (`None` for a group not run).
    pub fn leadership(&self, kind: AlgorithmKind) -> Option<(Option<NodeId>, u64)> {
        self.group_index(kind)
            .map(|g| (self.groups[g].leader, self.groups[g].term))
    }

    /// The leader group `kind` believes in (`None` also for a group not run).
    pub fn leader(&self, kind: AlgorithmKind) -> Option<NodeId> {
        self.group_index(kind).and_then(|g| self.groups[g].leader)
    }

    /// Is an election in progress in group `kind` (false for a group not run)?
    pub(crate) fn is_electing(&self, kind: AlgorithmKind) -> bool {
        self.group_index(kind)
            .map(|g| self.groups[g].algo.is_electing())
            .unwrap_or(false)
    }

    /// Time group `kind` has been without a leader since the node started, up to `now`
    /// (a period still under way included).
    pub(crate) fn leaderless(&self, kind: AlgorithmKind, now: Time) -> Option<Duration> {
        self.group_index(kind).map(|g| {
            let grp = &self.groups[g];
            let open = grp
                .leaderless_since
                .map_or(Duration::ZERO, |s| now.saturating_sub(s));
            grp.stats.leaderless + open
        })
    }

    /// Counters of group `kind`, if the node runs it.
    pub(crate) fn group_stats(&self, kind: AlgorithmKind) -> Option<&GroupStats> {
        self.group_index(kind).map(|g| &self.groups[g].stats)
    }

    /// The groups this node runs, in configuration order.
    pub fn algorithms(&self) -> impl Iterator<Item = AlgorithmKind> + '_ {
        self.groups.iter().map(|g| g.kind)
    }

    /// Counters of the reliable link (shared by every group).
    pub(crate) fn link_stats(&self) -> &LinkStats {
        &self.link.stats
    }

    /// Messages the link still waits an ack for.
    pub(crate) fn in_flight(&self) -> usize {
        self.link.in_flight()
    }

    /// Datagrams dropped at this layer, by reason.
    pub fn invalid(&self) -> &BTreeMap<&'static str, u64> {
        &self.invalid
    }

    /// Count a dropped datagram: the node's own drops ([`NODE_DROP_REASONS`]), and a
    /// driver without metrics of its own may count the gate's here too.
    pub fn count_invalid(&mut self, reason: &'static str) {
        *self.invalid.entry(reason).or_insert(0) += 1;
    }

    /// The groups whose term is out of its peers' reach: (group, this node's term, the
    /// last peer heard, that peer's term), where the peer's term is more than
    /// [`MAX_TERM_AHEAD`] below. The peers drop this node's datagrams as
    /// `future_epoch`, so it takes part in no election of the group: a voter silently
    /// lost unless reported (the runtime's `term` health check).
    pub(crate) fn terms_out_of_reach(&self) -> Vec<(AlgorithmKind, u64, NodeId, u64)> {
        self.groups
            .iter()
            .filter_map(|g| g.out_of_reach.map(|(p, t)| (g.kind, g.term, p, t)))
            .collect()
    }
}
