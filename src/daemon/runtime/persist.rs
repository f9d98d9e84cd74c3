//! Durable state on disk before the datagrams that depend on it: which changes are
//! claims, handing the state to the writer ([`crate::daemon::writer`]), what its
//! reports release, and the drained groups.
//!
//! The write is made on a thread of its own: while it runs, only the groups whose new
//! state is a claim not on disk yet keep their datagrams back (in [`Driver::held`],
//! sent when the write is reported done); the other groups' datagrams, heartbeats
//! above all, leave as they are made. What the node reports (status, `/watch`, hooks,
//! metrics) waits until no write is under way, so that nothing is reported that is not
//! on disk yet.

use super::*;
use crate::daemon::writer::Written;

/// The most datagrams held back for a write under way; beyond it the oldest are
/// dropped and counted (`electd_errors_total{class="state_held"}`): a disk that
/// does not answer must not grow the node without bound. Reliable messages among them
/// go out again with the link's retransmissions.
pub(super) const HELD_MAX: usize = 4096;

/// The least time between a failed write and the next try of the same state.
pub(super) const WRITE_RETRY: Duration = Duration::from_millis(20);

/// How long a write may take before the `persist` health check fails.
pub(super) const WRITE_STUCK: Duration = Duration::from_secs(1);

/// A write that takes this long is logged (every write is in
/// `electd_state_write_seconds`): a claim held for it left that much later.
pub(super) const SLOW_WRITE: Duration = Duration::from_millis(100);

/// Datagrams held back for a write: unicast (to whom) and multicast.
pub(super) type Held = (Vec<(NodeId, Datagram)>, Vec<Datagram>);

impl Driver {
    /// Whether `d`, group `kind`'s durable state, changed since the last write into
    /// something other than a follower's adoption of another node outside Raft (its
    /// token, `voted_for` naming that leader): a record of what it was told, not a
    /// promise of its own, which its datagrams (acks, a ring's forwarded announcement)
    /// do not depend on. Raft's term and vote, and a node's own claim (`voted_for`
    /// itself, or a term without a leader: an election it numbers), are on disk before
    /// any datagram of the group leaves. A crash between an adoption's send and its
    /// write is the crash before the datagram arrived, as far as the token goes: it was
    /// reported nowhere yet. At 64 processes on two cores the followers' writes before
    /// their acks were most of the time a COORDINATOR took to reach everyone, and on a
    /// ring each hop's write delayed the next hop.
    pub(super) fn is_claim(&self, kind: AlgorithmKind, d: &Durable) -> bool {
        let adoption = !kind.info().durable_vote && d.voted_for.is_some_and(|l| l != self.cfg.id);
        !adoption && !self.stored.iter().any(|s| s.0 == kind && s.1 == *d)
    }

    /// After each input: remember the groups it left a claim in. A batch may hold
    /// several inputs, and a claim made by one and replaced by an adoption in the next
    /// would look like an adoption at the end of it, while the claim's datagrams are
    /// among those the batch sends.
    pub(super) fn note_input(&mut self) {
        if self.writer.is_none() {
            return;
        }
        let mut claims = Vec::new();
        self.node.each_durable(|kind, d| {
            if self.is_claim(kind, &d) {
                claims.push(kind);
            }
        });
        for kind in claims {
            if !self.claimed.contains(&kind) {
                self.claimed.push(kind);
            }
        }
    }

    /// The groups whose datagrams wait for the write of `now`, the node's durable state:
    /// those holding a claim not on disk, or that held one in this batch, or whose
    /// datagrams already wait. None when `now` is on disk (a claim replaced within the
    /// batch by a state already written is covered by it: terms only rise).
    pub(super) fn holding(&mut self, now: &[(AlgorithmKind, Durable)]) -> Vec<AlgorithmKind> {
        let claimed = std::mem::take(&mut self.claimed);
        if now == self.stored.as_slice() {
            return Vec::new();
        }
        let mut hold = std::mem::take(&mut self.holding);
        for kind in claimed.into_iter().chain(
            now.iter()
                .filter(|(k, d)| self.is_claim(*k, d))
                .map(|(k, _)| *k),
        ) {
            if !hold.contains(&kind) {
                hold.push(kind);
            }
        }
        hold
    }

    /// Hand `now` to the writer if it is neither on disk nor already on its way (or the
    /// last write failed: try again). A writer that writes inline reports at once.
    pub(super) fn submit(&mut self, now: Vec<(AlgorithmKind, Durable)>) {
        let Some(w) = &self.writer else {
            return;
        };
        if now == self.stored {
            // Everything `now` holds is on disk (the state a failed write meant to
            // store was given up): nothing is missing any more.
            self.write_failed = false;
            return;
        }
        if now == self.wanted && !self.write_failed {
            return;
        }
        if self.write_failed && now == self.wanted && Instant::now() < self.retry_at {
            // Not at once again: the flush after a failed write's report would retry
            // it, and its report call the next flush, around and around.
            return;
        }
        self.submitted += 1;
        self.write_failed = false;
        self.wanted = now.clone();
        if let Some(done) = w.submit(self.submitted, now) {
            self.written(done);
        }
    }

    /// Whether a write is under way (submitted and not reported).
    pub(super) fn writing(&self) -> bool {
        self.submitted > self.reported
    }

    /// A write under way for longer than [`WRITE_STUCK`] is a problem (`persist`) the
    /// health checks show; the next write that succeeds clears it.
    pub(super) fn check_write_time(&mut self) {
        if !self.writing() {
            self.write_since = None;
            return;
        }
        let since = *self.write_since.get_or_insert_with(Instant::now);
        let took = since.elapsed();
        if took >= WRITE_STUCK && !self.shared.problems().iter().any(|p| p.0 == "persist") {
            self.shared.set_problem(
                "persist",
                Some(format!(
                    "a write of the state file has not returned for {:.1} s (the disk does \
                     not answer); the datagrams of {:?} wait for it",
                    took.as_secs_f64(),
                    self.holding
                )),
            );
        }
    }

    /// A write was made: on success the state it stored is on disk, and once the
    /// latest state submitted is, the datagrams held back for it go out at the next
    /// flush ([`Driver::release`]). A failed write drops them (reliable ones go out
    /// again with the link's retransmissions, after a write that succeeds: the groups
    /// stay held until then) and is reported as a problem; the next flush tries again.
    pub(super) fn written(&mut self, w: Written) {
        self.reported = self.reported.max(w.seq);
        self.shared.metrics.state_written(w.took);
        if w.took >= SLOW_WRITE {
            tracing::info!(
                node = self.cfg.id,
                took_ms = w.took.as_millis() as u64,
                "a write of the state file was slow; the datagrams held for it waited"
            );
        }
        let latest = w.seq == self.submitted;
        match w.result {
            Ok(()) => {
                self.stored = w.groups;
                if latest {
                    self.release = true;
                }
                if self.shared.problems().iter().any(|p| p.0 == "persist") {
                    tracing::info!(node = self.cfg.id, "durable state written again");
                    self.shared.set_problem("persist", None);
                }
            }
            Err(e) => {
                self.shared.metrics.error("state_write");
                self.shared
                    .set_problem("persist", Some(format!("cannot write the state file: {e}")));
                if latest {
                    self.write_failed = true;
                    self.retry_at = Instant::now() + WRITE_RETRY;
                    let dropped = self.held.len() + self.held_multicast.len();
                    let held = std::mem::take(&mut self.held);
                    let held_multicast = std::mem::take(&mut self.held_multicast);
                    self.let_go(&held, &held_multicast);
                    let what = if self.holding.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", holding back the datagrams of {:?} ({dropped} dropped)",
                            self.holding
                        )
                    };
                    self.log_error(
                        "state_write",
                        &format!("durable state not written{what}: {e}"),
                    );
                }
            }
        }
    }

    /// Keep `dgs`, datagrams of groups held for a write, for [`Driver::release`].
    /// The link stops their clocks until they leave ([`Driver::let_go`]): a message
    /// that waits for the disk is not retransmitted before its first copy is sent.
    pub(super) fn hold(&mut self, dgs: Vec<(NodeId, Datagram)>, multicasts: Vec<Datagram>) {
        for (to, d) in &dgs {
            self.node.held(*to, d.seq);
        }
        for d in &multicasts {
            self.node.held(0, d.seq);
        }
        self.held.extend(dgs);
        self.held_multicast.extend(multicasts);
        let over = (self.held.len() + self.held_multicast.len()).saturating_sub(HELD_MAX);
        if over > 0 {
            let from_unicast = over.min(self.held.len());
            let gone: Vec<_> = self.held.drain(..from_unicast).collect();
            let gone_m: Vec<_> = self.held_multicast.drain(..over - from_unicast).collect();
            self.let_go(&gone, &gone_m);
            for _ in 0..over {
                self.shared.metrics.error("state_held");
            }
        }
    }

    /// Held datagrams that left now, or were dropped (then retransmitted as if lost):
    /// their clocks in the link start now.
    pub(super) fn let_go(&mut self, dgs: &[(NodeId, Datagram)], multicasts: &[Datagram]) {
        let now = self.now();
        for (to, d) in dgs {
            self.node.departed(now, *to, d.seq);
        }
        for d in multicasts {
            self.node.departed(now, 0, d.seq);
        }
    }

    /// The datagrams held back, if the write they waited for is done (else none).
    pub(super) fn release(&mut self) -> Option<Held> {
        if !std::mem::take(&mut self.release) || self.writing() {
            return None;
        }
        self.holding.clear();
        Some((
            std::mem::take(&mut self.held),
            std::mem::take(&mut self.held_multicast),
        ))
    }

    /// A crash as far as the held datagrams go (pause): they never leave. The write
    /// under way goes on, as a write the crash came after would have.
    pub(super) fn forget_held(&mut self) {
        let held = std::mem::take(&mut self.held);
        let held_multicast = std::mem::take(&mut self.held_multicast);
        self.let_go(&held, &held_multicast);
        self.holding.clear();
        self.claimed.clear();
    }

    /// The groups this node is drained in now.
    /// The drained groups to keep on disk (sorted): this node's, and those kept from
    /// the state file of groups it does not run.
    pub(super) fn drained_now(&self) -> Vec<AlgorithmKind> {
        let mut all: Vec<AlgorithmKind> = self
            .node
            .drained()
            .chain(self.kept_drains.iter().copied())
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Write the drained groups (with the durable state as last written) at once, if
    /// they changed: a drain holds across restarts (see [`durable`]). Without a state
    /// file a drain lasts as long as the process, and the log says so.
    /// Err says why the drains are not on disk.
    pub(super) fn persist_drains(&mut self) -> Result<(), String> {
        let drained = self.drained_now();
        if drained == self.stored_drained {
            return Ok(());
        }
        let Some(w) = &self.writer else {
            if !drained.is_empty() {
                tracing::warn!(
                    node = self.cfg.id,
                    "drained, but without a state file ([state] file) the drain ends when \
                     this process stops"
                );
            }
            self.stored_drained = drained;
            return Ok(());
        };
        match w.store_drained(&drained) {
            Ok(()) => {
                self.stored_drained = drained;
                // The disk works again: a problem a drain's failed write set is over,
                // unless the fencing tokens' latest write is still failing.
                if !self.write_failed
                    && !self.writing()
                    && self.shared.problems().iter().any(|p| p.0 == "persist")
                {
                    tracing::info!(node = self.cfg.id, "the state file is written again");
                    self.shared.set_problem("persist", None);
                }
                Ok(())
            }
            Err(e) => {
                self.shared.metrics.error("state_write");
                self.shared
                    .set_problem("persist", Some(format!("cannot write the state file: {e}")));
                self.log_error(
                    "state_write",
                    &format!("the drain is not on disk and would not survive a restart: {e}"),
                );
                Err(format!("cannot write the state file: {e}"))
            }
        }
    }
}
