//! The node as the single source of truth: [`Metrics::sync`] advances every counter
//! by the difference between the node's counters and what was exported before.

use super::*;

/// What was exported so far, in arrays indexed by algorithm and message type: a node
/// syncs after every batch (every heartbeat of an idle follower), so this costs a
/// few comparisons when nothing changed, no hashing and no allocation.
#[derive(Default)]
pub(super) struct Exported {
    sent: [[u64; TYPES]; ALGOS],
    received: [[u64; TYPES]; ALGOS],
    /// The labelled children of `messages_sent` / `messages_received`, looked up once.
    sent_child: [[Option<IntCounter>; TYPES]; ALGOS],
    received_child: [[Option<IntCounter>; TYPES]; ALGOS],
    started: [u64; ALGOS],
    won: [u64; ALGOS],
    changes: [u64; ALGOS],
    retransmissions: u64,
    failures: u64,
    failures_to_lost: u64,
    duplicates: u64,
    incarnation_changes: u64,
    provisional: u64,
    invalid: HashMap<&'static str, u64>,
    leaderless: [f64; ALGOS],
    group_retransmissions: [u64; ALGOS],
    group_failures: [u64; ALGOS],
    /// Last (leader, is_leader, has_leader, term) set per group.
    gauges: [Option<[i64; 4]>; ALGOS],
}

/// Advance the labelled counter cached in `child` (looked up in `vec` with `labels`
/// the first time) from `*prev` to `now`.
pub(super) fn advance_child(
    vec: &IntCounterVec,
    labels: &[&str],
    child: &mut Option<IntCounter>,
    prev: &mut u64,
    now: u64,
) {
    if now > *prev {
        child
            .get_or_insert_with(|| vec.with_label_values(labels))
            .inc_by(now - *prev);
        *prev = now;
    }
}

impl Metrics {
    /// [`Metrics::sync`], and `leaderless_seconds_total` advanced to the node time
    /// `now` (a leaderless period still under way included).
    pub(crate) fn sync_at(&self, node: &Node, now: crate::node::Time) {
        self.sync(node);
        let Ok(mut ex) = self.exported.lock() else {
            return;
        };
        for a in node.algorithms() {
            let Some(t) = node.leaderless(a, now) else {
                continue;
            };
            let t = t.as_secs_f64();
            let prev = &mut ex.leaderless[a as usize];
            if t > *prev {
                self.leaderless
                    .with_label_values(&[a.as_str()])
                    .inc_by(t - *prev);
                *prev = t;
            }
        }
    }

    /// Bring every counter and gauge up to date with `node`'s own counters.
    pub(crate) fn sync(&self, node: &Node) {
        let Ok(mut guard) = self.exported.lock() else {
            return;
        };
        let ex = &mut *guard;
        for a in node.algorithms() {
            let Some(stats) = node.group_stats(a) else {
                continue;
            };
            let i = a as usize;
            for t in MessageType::ALL {
                let (j, labels) = (t as usize, [a.as_str(), t.as_str()]);
                advance_child(
                    &self.messages_sent,
                    &labels,
                    &mut ex.sent_child[i][j],
                    &mut ex.sent[i][j],
                    stats.sent_of(t),
                );
                advance_child(
                    &self.messages_received,
                    &labels,
                    &mut ex.received_child[i][j],
                    &mut ex.received[i][j],
                    stats.received_of(t),
                );
            }
            let l = [a.as_str()];
            // A labelled child is looked up (label hashing, a lock) only when its
            // value changed: a node syncs after every datagram and timer.
            advance_vec(
                &self.elections_started,
                &l,
                &mut ex.started[i],
                stats.elections_started,
            );
            advance_vec(&self.elections_won, &l, &mut ex.won[i], stats.elections_won);
            advance_vec(
                &self.leader_changes,
                &l,
                &mut ex.changes[i],
                stats.leader_changes,
            );
            advance_vec(
                &self.group_retransmissions,
                &l,
                &mut ex.group_retransmissions[i],
                stats.retransmissions,
            );
            advance_vec(
                &self.group_delivery_failures,
                &l,
                &mut ex.group_failures[i],
                stats.delivery_failures,
            );
            if let Some((leader, term)) = node.leadership(a) {
                let now = [
                    leader.map(i64::from).unwrap_or(-1),
                    i64::from(leader == Some(node.id())),
                    i64::from(leader.is_some()),
                    term.min(i64::MAX as u64) as i64,
                ];
                if ex.gauges[i] != Some(now) {
                    self.leader.with_label_values(&l).set(now[0]);
                    self.is_leader.with_label_values(&l).set(now[1]);
                    self.has_leader.with_label_values(&l).set(now[2]);
                    self.term.with_label_values(&l).set(now[3]);
                    ex.gauges[i] = Some(now);
                }
            }
        }
        let link = node.link_stats();
        advance(
            &self.retransmissions,
            &mut ex.retransmissions,
            link.retransmissions,
        );
        advance(
            &self.delivery_failures,
            &mut ex.failures,
            link.delivery_failures,
        );
        advance(
            &self.delivery_failures_to_lost,
            &mut ex.failures_to_lost,
            link.delivery_failures_to_lost,
        );
        advance(
            &self.duplicates_dropped,
            &mut ex.duplicates,
            link.duplicates_dropped,
        );
        advance(
            &self.incarnation_changes,
            &mut ex.incarnation_changes,
            link.incarnation_changes,
        );
        advance(
            &self.provisional_dropped,
            &mut ex.provisional,
            link.provisional_dropped,
        );
        for (&reason, &n) in node.invalid() {
            let prev = ex.invalid.entry(reason).or_insert(0);
            if n > *prev {
                self.invalid.with_label_values(&[reason]).inc_by(n - *prev);
                *prev = n;
            }
        }
    }

    /// The node was replaced by a new incarnation whose own counters start at zero
    /// again (resume after pause): forget what was exported, so the new node's counts
    /// are added on top instead of being hidden until they pass the old ones.
    /// Call [`Metrics::sync`] with the old node first.
    pub(crate) fn rebase(&self) {
        if let Ok(mut ex) = self.exported.lock() {
            *ex = Exported::default();
        }
    }

    /// Record what an event says that counters cannot (election and failover times).
    pub(crate) fn observe(&self, event: &Event) {
        match event {
            Event::ElectionFinished {
                group, duration, ..
            } => {
                self.election_duration
                    .with_label_values(&[group.as_str()])
                    .observe(duration.as_secs_f64());
            }
            Event::Failover {
                group,
                total,
                phases,
                ..
            } => {
                let l = [group.as_str()];
                self.failover
                    .with_label_values(&l)
                    .observe(total.as_secs_f64());
                if let Some(p) = phases {
                    self.failover_detection
                        .with_label_values(&l)
                        .observe(p.detection.as_secs_f64());
                    self.failover_election
                        .with_label_values(&l)
                        .observe(p.election.as_secs_f64());
                }
            }
            _ => {}
        }
    }
}

pub(super) fn advance_vec(c: &IntCounterVec, labels: &[&str], prev: &mut u64, now: u64) {
    if now > *prev {
        c.with_label_values(labels).inc_by(now - *prev);
        *prev = now;
    }
}

pub(super) fn advance(c: &IntCounter, prev: &mut u64, now: u64) {
    if now > *prev {
        c.inc_by(now - *prev);
        *prev = now;
    }
}
