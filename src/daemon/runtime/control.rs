//! The operator's requests ([`Control`]): one function per request.

use super::*;
use tokio::sync::oneshot;

impl Driver {
    /// Carry out one operator request (a pause while paused, or a resume while
    /// running, changes nothing).
    pub(super) fn control(&mut self, c: Control) {
        match c {
            Control::Elect(kind, reply) => self.elect(kind, reply),
            Control::Pause if !self.paused => self.pause(),
            Control::Resume if self.paused => self.resume(),
            Control::Keys(keys) => self.reload_keys(keys),
            Control::Drain {
                algorithm,
                on,
                reply,
            } => self.drain(algorithm, on, reply),
            Control::Fault { algorithm, on } => self.fault(algorithm, on),
            Control::Transfer {
                algorithm,
                to,
                reply,
            } => self.transfer(algorithm, to, reply),
            Control::Penalty { algorithm, penalty } => self.penalty(algorithm, penalty),
            Control::Pause | Control::Resume => {}
        }
    }

    /// [`Control::Elect`]: call an election in `kind`'s group; the reply says whether
    /// one was called (not while paused, not in a group this node does not run).
    fn elect(&mut self, kind: AlgorithmKind, reply: oneshot::Sender<bool>) {
        let ok = !self.paused && self.node.call_election(self.now(), kind);
        let _ = reply.send(ok);
    }

    /// [`Control::Pause`]: stop all traffic as if the process had crashed.
    fn pause(&mut self) {
        tracing::info!(node = self.cfg.id, "paused: all traffic stopped");
        if let Some(t) = self.shared.tracer() {
            t.crash(self.cfg.id);
        }
        self.shared.metrics.sync(&self.node);
        self.node.discard_events();
        let _ = self.node.drain_transmits().count();
        let _ = self.node.drain_multicasts().count();
        self.forget_held();
        self.paused = true;
        self.shared.set_paused(true);
        for s in self.node.status() {
            if s.leader.is_some() {
                let mut ev = LeaderEvent::new(self.cfg.id, s.algorithm, None, s.term);
                ev.paused = true;
                self.shared.emit(ev);
            }
        }
    }

    /// [`Control::Resume`]: come back as a restarted process (a new node, a higher
    /// incarnation, an election in every group).
    fn resume(&mut self) {
        let next = incarnation_now().max(self.incarnation + 1);
        match self.new_node(next) {
            Ok(mut node) => {
                // Raft's term and vote survive a restart (§5.2, Figure 2).
                node.restore(&self.node.durable());
                // So do the operator's drain and a failing check's FAULT (the
                // quorum and transfer reasons belong to the old life).
                let now = self.now();
                for &kind in &self.cfg.algorithms {
                    for why in self.node.ineligible(kind).unwrap_or_default() {
                        if matches!(why, Ineligible::Drained | Ineligible::Fault) {
                            node.set_ineligible(now, Some(kind), why, true);
                        }
                    }
                    node.set_penalty(now, Some(kind), self.node.penalty(kind));
                }
                self.incarnation = next;
                self.shared.set_incarnation(next);
                self.node = node;
                // A new life tells every peer its configuration digest again.
                self.config_due = self.now();
                self.shared.metrics.rebase();
                self.paused = false;
                self.shared.set_paused(false);
                tracing::info!(node = self.cfg.id, incarnation = next, "resumed");
                if let Some(t) = self.shared.tracer() {
                    t.start(self.cfg.id, next);
                }
                let now = self.now();
                self.node.start(now, true);
            }
            // Cannot happen: the same configuration built the first node.
            Err(e) => tracing::error!("cannot rebuild the node on resume: {e}"),
        }
    }

    /// [`Control::Keys`]: swap the keyring (refused when the node runs insecure).
    fn reload_keys(&mut self, keys: Keyring) {
        if self.gate.is_authenticated() {
            tracing::info!(
                node = self.cfg.id,
                primary = format_args!("{:#010x}", keys.primary().id),
                keys = keys.len(),
                "keyring reloaded"
            );
            self.cfg.keys = Some(keys);
            self.gate.set_keys(self.cfg.keys.clone());
            // The heartbeats and answers to select now carry the new primary key's id.
            self.selected.clear();
            self.selected_acks.clear();
        } else {
            tracing::warn!(
                node = self.cfg.id,
                "key reload ignored: this node runs insecure; restart it to enable authentication"
            );
        }
    }

    /// [`Control::Drain`]: drain or undrain one group or every group, on disk before
    /// the answer; the reply is the hand-over bound at this node's timing, or why the
    /// change is not on disk (it holds in this process all the same).
    fn drain(
        &mut self,
        algorithm: Option<AlgorithmKind>,
        on: bool,
        reply: oneshot::Sender<Result<Duration, String>>,
    ) {
        let now = self.now();
        let changed = self
            .node
            .set_ineligible(now, algorithm, Ineligible::Drained, on);
        for &kind in &self.cfg.algorithms {
            if algorithm.is_none_or(|a| a == kind) {
                self.shared.metrics.set_drained(kind, on);
            }
        }
        // On disk before the answer: a drain survives a restart.
        let written = self.persist_drains();
        tracing::info!(
            node = self.cfg.id,
            groups = changed,
            algorithm = algorithm.map_or("all", |a| a.as_str()),
            "{} through the admin API",
            if on { "drained" } else { "undrained" }
        );
        let t = &self.cfg.timing;
        let bound =
            t.failure_timeout + t.election_timeout_max + t.answer_timeout + t.coordinator_timeout;
        // Answered once the status shows the change (the caller reads it next): now if
        // everything the status would show is on disk, else when the node reports
        // again, after the write (an undrained node may have claimed at once).
        if let Err(why) = written {
            self.publish();
            let _ = reply.send(Err(why));
            return;
        }
        let on_disk =
            self.writer.is_none() || (!self.writing() && self.node.durable() == self.stored);
        if !on_disk {
            self.drain_replies.push((reply, bound));
        } else {
            self.publish();
            let _ = reply.send(Ok(bound));
        }
    }

    /// [`Control::Fault`]: a health check put this node in FAULT, or took it out;
    /// each group whose state changed is logged and told to `/watch` and the hooks.
    fn fault(&mut self, algorithm: Option<AlgorithmKind>, on: bool) {
        let now = self.now();
        let before: Vec<(AlgorithmKind, bool)> = self
            .cfg
            .algorithms
            .iter()
            .map(|&k| (k, self.in_fault(k)))
            .collect();
        self.node
            .set_ineligible(now, algorithm, Ineligible::Fault, on);
        for (kind, was) in before {
            let is = self.in_fault(kind);
            self.shared.metrics.set_fault(kind, is);
            if was == is {
                continue;
            }
            tracing::warn!(
                node = self.cfg.id,
                algorithm = %kind,
                "{}",
                if is {
                    "FAULT: a health check fails; this node may not lead the group"
                } else {
                    "health checks pass again; this node may lead the group"
                }
            );
            // Tell /watch and the hooks (state fault / follower) even when the
            // leader does not change (a follower going into FAULT).
            if let Some(s) = self.node.group_status(kind) {
                // A paused node names no leader (its status says so): its events too.
                let leader = s.leader.filter(|_| !self.paused);
                let mut ev = LeaderEvent::new(self.cfg.id, kind, leader, s.term);
                ev.fault = is;
                ev.paused = self.paused;
                // The token it names is reported once it is on disk (with the next
                // report, after the write under way).
                if self.writer.is_some() && (self.writing() || self.node.durable() != self.stored) {
                    self.deferred.push(ev);
                } else {
                    self.shared.emit(ev);
                }
            }
        }
    }

    /// [`Control::Transfer`]: hand `algorithm`'s leadership to `to`, or say why not.
    fn transfer(
        &mut self,
        algorithm: AlgorithmKind,
        to: NodeId,
        reply: oneshot::Sender<Result<TransferStarted, String>>,
    ) {
        let now = self.now();
        let answer = if self.paused {
            Err("the node is paused".to_string())
        } else {
            self.node
                .transfer(now, algorithm, to)
                .map_err(|e| e.to_string())
        };
        let answer = match answer {
            Ok(bound) => {
                tracing::info!(node = self.cfg.id, %algorithm, to, "leadership transfer started");
                let (tx, refused) = oneshot::channel();
                self.transfer_waiters.retain(|w| w.0 != algorithm);
                self.transfer_waiters.push((algorithm, to, tx));
                Ok(TransferStarted { bound, refused })
            }
            Err(why) => {
                tracing::warn!(node = self.cfg.id, %algorithm, to, "leadership transfer refused: {why}");
                Err(why)
            }
        };
        let _ = reply.send(answer);
    }

    /// [`Control::Penalty`]: lower (or restore) this node's priority in one group or
    /// every group.
    fn penalty(&mut self, algorithm: Option<AlgorithmKind>, penalty: u8) {
        let now = self.now();
        if self.node.set_penalty(now, algorithm, penalty) > 0 {
            tracing::warn!(
                node = self.cfg.id,
                algorithm = algorithm.map_or("all", |a| a.as_str()),
                penalty,
                "priority lowered by weighted health checks (0: restored)"
            );
        }
        for &kind in &self.cfg.algorithms {
            if algorithm.is_none_or(|a| a == kind) {
                self.shared.metrics.set_penalty(kind, penalty);
            }
        }
    }

    /// Is this node in FAULT (a failing health check) in `kind`'s group?
    pub(super) fn in_fault(&self, kind: AlgorithmKind) -> bool {
        self.node
            .ineligible(kind)
            .is_some_and(|r| r.contains(&Ineligible::Fault))
    }
}
