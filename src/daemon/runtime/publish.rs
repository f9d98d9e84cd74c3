//! What the rest of the process sees after a batch: metrics, the status snapshot,
//! leader events for `/watch` and hooks, answers to transfer requests, and the peers'
//! configuration digests.

use super::*;
use crate::node::Refusal;

impl Driver {
    /// A CONFIG from `peer` (docs/wire.md §11): record it, answer the first of the
    /// peer's incarnation, and report a change (gauge, `/status`, one log line).
    pub(super) fn config_heard(&mut self, peer: NodeId, incarnation: u64, digest: u64) {
        let Some(drift) = &mut self.drift else {
            return;
        };
        let theirs = ConfigDigest(digest);
        let heard = drift.heard(peer, incarnation, theirs);
        if heard.answer && !self.config_out.contains(&peer) {
            self.config_out.push(peer);
        }
        if heard.new {
            self.shared.publish_config(drift.view());
        }
        let Some(mismatch) = heard.changed else {
            return;
        };
        let mine = drift.mine();
        self.shared.metrics.set_config_mismatch(peer, mismatch);
        if mismatch {
            tracing::warn!(
                node = self.cfg.id,
                peer,
                digest = %mine,
                peer_digest = %theirs,
                "configuration drift: peer {peer} runs with another configuration (digest \
                 {theirs}, this node's {mine}): compare the roster, [timing], [policy], \
                 [lease], [raft] and algorithms of both files"
            );
        } else {
            tracing::info!(
                node = self.cfg.id,
                peer,
                digest = %mine,
                "configuration drift ended: peer {peer} runs with this node's configuration again"
            );
        }
    }

    /// Tell the requests waiting on a transfer that its target refused it; forget the
    /// waiters of transfers that are over.
    pub(super) fn settle_transfer_waiters(&mut self) {
        for (kind, by, refusal) in self.node.take_transfer_refusals() {
            let why = match refusal {
                Refusal::MayNotLead => format!(
                    "node {by} refused the hand-over: it may not lead {kind} now (drained, or \
                     failing a health check; its /status lists why under `ineligible`); this \
                     node leads on"
                ),
                Refusal::Unreachable => format!(
                    "node {by} did not acknowledge the hand-over within transport.give_up: \
                     it is down or cut off; this node leads on (if the hand-over still reaches \
                     node {by}, as it does a stopped process that resumes, node {by} takes \
                     over then, at a new term)"
                ),
            };
            tracing::warn!(node = self.cfg.id, algorithm = %kind, to = by, reason = ?refusal, "leadership transfer refused or its target unreachable");
            if let Some(i) = self
                .transfer_waiters
                .iter()
                .position(|w| w.0 == kind && w.1 == by)
            {
                let (_, _, tx) = self.transfer_waiters.swap_remove(i);
                let _ = tx.send(why);
            }
        }
        if !self.transfer_waiters.is_empty() {
            let node = &self.node;
            self.transfer_waiters.retain(|w| {
                !w.2.is_closed()
                    && node
                        .ineligible(w.0)
                        .is_some_and(|r| r.contains(&Ineligible::Transfer))
            });
        }
    }

    pub(super) fn after_send(&mut self) {
        self.settle_transfer_waiters();
        self.check_terms();
        let unreachable: Vec<NodeId> = self.node.drain_unreachable().collect();
        for id in unreachable {
            if self.resolver.names.contains_key(&id) {
                tracing::debug!(peer = id, "unreachable: looking its name up again");
                self.resolver.lookup(id);
            }
        }
        // A gap above the timeout's base − heartbeat left the follower less than one
        // beat of margin: said in the log (at a bounded rate), with the leader. The base
        // is failure_timeout, or Raft's election timeout's lower bound (a Raft-only
        // cluster need not keep failure_timeout above its heartbeat).
        let t = &self.cfg.timing;
        let gaps: Vec<(AlgorithmKind, Duration)> = self.node.drain_gaps().collect();
        for (group, gap) in gaps {
            self.shared.metrics.heartbeat_gap(group, gap);
            let (base, name) = if group.info().uses_failure_detector() {
                (t.failure_timeout, "failure_timeout")
            } else {
                (t.election_timeout_min, "election_timeout min")
            };
            if gap > base.saturating_sub(t.heartbeat) {
                let leader = self.node.leader(group);
                let line = format!(
                    "heartbeat gap of {:.1} ms from leader {leader:?} ({name} {} ms, \
                     heartbeat {} ms): less than one heartbeat of margin was left",
                    gap.as_secs_f64() * 1e3,
                    base.as_millis(),
                    t.heartbeat.as_millis()
                );
                let now = self.now();
                match self.errlog.record("heartbeat_gap", now) {
                    Verdict::Quiet => {}
                    Verdict::Log => {
                        tracing::warn!(node = self.cfg.id, algorithm = %group, "{line}")
                    }
                    Verdict::Summary(n) => tracing::warn!(
                        node = self.cfg.id,
                        algorithm = %group,
                        "{line} ({n} more like it since the last report)"
                    ),
                }
            }
        }
        let events: Vec<Event> = self.node.drain_events().collect();
        let now = self.now();
        if let Some(t) = self.shared.tracer() {
            t.decided(self.cfg.id, &self.node, &events);
        }
        self.shared.metrics.sync_at(&self.node, now);
        self.publish();
        for (reply, bound) in self.drain_replies.drain(..) {
            let _ = reply.send(Ok(bound));
        }
        for ev in std::mem::take(&mut self.deferred) {
            self.shared.emit(ev);
        }
        let metrics = &self.shared.metrics;
        for e in &events {
            metrics.observe(e);
            if let Event::LeaderChanged {
                group,
                leader,
                term,
                ..
            } = *e
            {
                tracing::info!(node = self.cfg.id, algorithm = %group, ?leader, term, "leader changed");
                let mut ev = LeaderEvent::new(self.cfg.id, group, leader, term);
                ev.fault = self.in_fault(group);
                self.shared.emit(ev);
            }
            if let Event::ElectionStarted { group, .. } = *e {
                let term = self.node.leadership(group).map_or(0, |(_, t)| t);
                tracing::debug!(node = self.cfg.id, algorithm = %group, term, "election started");
            }
            if let Event::Failover {
                group,
                from,
                to,
                total,
                ..
            } = *e
            {
                tracing::info!(node = self.cfg.id, algorithm = %group, from, to, failover_ms = total.as_secs_f64() * 1e3, "failover");
            }
        }
    }

    /// Republish the status snapshot if anything it shows changed (a held lease
    /// always does: its end moves with every answer; so does the first publish
    /// after one).
    pub(super) fn publish(&mut self) {
        let now = self.now();
        let mut leased = false;
        for kind in self.node.algorithms() {
            leased |= self.node.lease(kind, now).is_some_and(|d| !d.is_zero());
        }
        let same = !leased
            && self.published_as == Some((self.paused, false))
            && self.published.len() == self.node.algorithms().count()
            && self
                .node
                .status_keys()
                .zip(&self.published)
                .all(|(a, b)| a == *b);
        if same {
            return;
        }
        self.published.clear();
        self.published.extend(self.node.status_keys());
        self.published_as = Some((self.paused, leased));
        let groups = self
            .node
            .status()
            .iter()
            .map(|s| {
                let mut v = GroupView::from_status(s, self.origin_unix);
                v.lease = match self.node.lease(s.algorithm, now) {
                    None => Lease::None,
                    Some(left) => Lease::Until(std::time::Instant::now() + left),
                };
                if self.paused {
                    if v.lease != Lease::None {
                        v.lease = Lease::Until(std::time::Instant::now());
                    }
                    v.state = "paused";
                    v.leader = None;
                    v.electing = false;
                }
                v
            })
            .collect();
        self.shared.publish_status(groups);
    }
}
