//! Durable state on disk before the datagrams that depend on it: which changes are
//! claims, the write, and the drained groups.

use super::*;

impl Driver {
    /// Whether every change of the durable state since the last write is a follower
    /// adopting another node's leadership outside Raft (its token, `voted_for` naming
    /// that leader): a record of what it was told, not a promise of its own, which its
    /// datagrams (acks, a ring's forwarded announcement) do not depend on. Raft's term
    /// and vote, and a node's own claim (`voted_for` itself, or a term without a
    /// leader: an election it numbers), are written before anything leaves. A crash
    /// between the send and the write is the crash before the datagram arrived, as far
    /// as the token goes: it was reported nowhere yet. At 64 processes on two cores
    /// the followers' writes before their acks were most of the time a COORDINATOR
    /// took to reach everyone, and on a ring each hop's write delayed the next hop.
    /// A batch may hold several inputs, and a claim made by one and replaced by an
    /// adoption in the next would look like an adoption at the end of it: so every
    /// input is looked at ([`Driver::note_input`]). A claim whose write failed, and
    /// whose datagrams wait for retransmission, blocks this until a write succeeds; an
    /// adoption whose write failed holds nothing back (a ring member with a broken
    /// disk still forwards the next announcement).
    pub(super) fn adoptions_only(&self, now: &[(AlgorithmKind, Durable)]) -> bool {
        !self.claimed
            && !self.claim_unwritten
            && now.iter().all(|(kind, d)| !self.is_claim(*kind, d))
    }

    /// Whether `d`, group `kind`'s durable state, changed since the last write into
    /// something other than a follower's adoption of another node (see
    /// [`Driver::adoptions_only`]).
    pub(super) fn is_claim(&self, kind: AlgorithmKind, d: &Durable) -> bool {
        let adoption = kind != AlgorithmKind::Raft && d.voted_for.is_some_and(|l| l != self.cfg.id);
        !adoption && !self.stored.iter().any(|s| s.0 == kind && s.1 == *d)
    }

    /// After each input: remember whether it left a claim in the durable state.
    pub(super) fn note_input(&mut self) {
        if self.state_file.is_none() || self.claimed {
            return;
        }
        let mut claimed = false;
        self.node
            .each_durable(|kind, d| claimed |= self.is_claim(kind, &d));
        self.claimed = claimed;
    }

    /// Write `now`, the node's durable state, if it changed since the last write. If it
    /// could not be written, the caller sends nothing of the affected groups (a vote
    /// must be on disk before it is sent); their reliable messages go out later with
    /// the link's retransmissions, after the next successful write.
    /// Returns the groups whose new state is not on disk (empty when all is written).
    pub(super) fn persist(&mut self, now: Vec<(AlgorithmKind, Durable)>) -> Vec<AlgorithmKind> {
        if self.state_file.is_none() {
            return Vec::new();
        }
        let drained = self.drained_now();
        let Some(file) = &mut self.state_file else {
            return Vec::new();
        };
        if now == self.stored && drained == self.stored_drained {
            self.claim_unwritten = false;
            return Vec::new();
        }
        match file.store(&now, &drained) {
            Ok(()) => {
                self.claim_unwritten = false;
                self.stored = now;
                self.stored_drained = drained;
                if self.shared.problems().iter().any(|p| p.0 == "persist") {
                    tracing::info!(node = self.cfg.id, "durable state written again");
                    self.shared.set_problem("persist", None);
                }
                Vec::new()
            }
            Err(e) => {
                self.shared.metrics.error("state_write");
                self.shared
                    .set_problem("persist", Some(format!("cannot write the state file: {e}")));
                let changed: Vec<AlgorithmKind> = now
                    .iter()
                    .filter(|n| !self.stored.contains(n))
                    .map(|n| n.0)
                    .collect();
                self.log_error(
                    "state_write",
                    &format!(
                        "durable state not written, holding back the datagrams of {changed:?}: {e}"
                    ),
                );
                changed
            }
        }
    }

    /// The groups this node is drained in now.
    pub(super) fn drained_now(&self) -> Vec<AlgorithmKind> {
        self.node.drained().collect()
    }

    /// Write the drained groups (with the durable state as last written) at once, if
    /// they changed: a drain holds across restarts (see [`durable`]). Without a state
    /// file a drain lasts as long as the process, and the log says so.
    pub(super) fn persist_drains(&mut self) {
        let drained = self.drained_now();
        if drained == self.stored_drained {
            return;
        }
        let Some(file) = &mut self.state_file else {
            if !drained.is_empty() {
                tracing::warn!(
                    node = self.cfg.id,
                    "drained, but without a state file ([state] file) the drain ends when \
                     this process stops"
                );
            }
            self.stored_drained = drained;
            return;
        };
        match file.store(&self.stored, &drained) {
            Ok(()) => self.stored_drained = drained,
            Err(e) => {
                self.shared.metrics.error("state_write");
                self.shared
                    .set_problem("persist", Some(format!("cannot write the state file: {e}")));
                self.log_error(
                    "state_write",
                    &format!("the drain is not on disk and would not survive a restart: {e}"),
                );
            }
        }
    }
}
