//! What comes in: datagrams from the sockets through the gate to the node, batched
//! heartbeats as of their arrival, and the count and log of what the gate refuses.

use super::*;

impl Driver {
    pub(super) fn received(&mut self, r: io::Result<(usize, SocketAddr)>, buf: &[u8]) {
        self.received_at(r, buf, None)
    }

    /// [`Driver::received`], for a datagram that arrived at `at` (`None`: now).
    pub(super) fn received_at(
        &mut self,
        r: io::Result<(usize, SocketAddr)>,
        buf: &[u8],
        at: Option<Time>,
    ) {
        let (n, from) = match r {
            Ok(x) => x,
            Err(e) => {
                // E.g. an ICMP error reported on the socket; never fatal.
                self.shared.metrics.error("receive");
                tracing::debug!("receive error: {e}");
                return;
            }
        };
        if self.paused {
            return;
        }
        match self.gate.open_payload(&buf[..n], Some(from), unix_micros()) {
            Ok((dg, Extra::Config(digest))) => self.config_heard(dg.from, dg.incarnation, digest),
            Ok((_, Extra::Beats(beats))) => {
                let now = match at {
                    Some(at) => at.max(self.fed.get()),
                    None => self.now(),
                };
                // Each message as if it had come alone; one that is malformed is
                // counted and the others are delivered (docs/wire.md §12).
                for beat in beats {
                    match beat {
                        Ok(dg) => {
                            if let Some(t) = self.shared.tracer() {
                                t.received(self.cfg.id, &dg);
                            }
                            self.node.handle_datagram(now, dg);
                        }
                        Err(e) => self.dropped(Dropped::Wire(e), from),
                    }
                }
                self.note_input();
            }
            Ok((dg, Extra::None)) => {
                let now = match at {
                    Some(at) => at.max(self.fed.get()),
                    None => self.now(),
                };
                if let Some(t) = self.shared.tracer() {
                    t.received(self.cfg.id, &dg);
                }
                self.node.handle_datagram(now, dg);
                self.note_input();
            }
            Err(e) => self.dropped(e, from),
        }
    }

    /// Read the datagrams already waiting before a due timer fires: up to one batch, or
    /// two per peer if that is more (a fan-out's acks and replies). At 256 processes
    /// a COORDINATOR's 255 acks had queued up unread behind a batch of 64 while its
    /// sender waited for a core, and its retransmission and give-up timers fired first
    /// (255 copies sent again, 225 give-ups to live peers; docs/bench/ANALYSIS.md,
    /// round 22).
    pub(super) fn drain_pending<T: Transport>(&mut self, socket: &T, buf: &mut [u8]) {
        let most = BATCH.max(2 * self.cfg.peers.len());
        for _ in 0..most {
            match socket.try_recv_from(buf) {
                Some(r) => self.received(r, buf),
                None => return,
            }
        }
    }

    /// Handle the datagrams already queued on the socket after the one just received,
    /// up to [`BATCH`], stopping early when a timer falls due (it then fires before
    /// the next datagram): the caller flushes once for the whole batch.
    pub(super) fn drain_batch<T: Transport>(&mut self, socket: &T, buf: &mut [u8]) {
        for _ in 1..BATCH {
            if self.paused || self.node.poll_timeout().is_some_and(|t| t <= self.now()) {
                return;
            }
            match socket.try_recv_from(buf) {
                Some(r) => self.received(r, buf),
                None => return,
            }
        }
    }

    /// Read everything waiting in the heartbeat socket, oldest first, each as of the
    /// time it arrived (see [`crate::daemon::heartbeats`]). Bounded: the socket's
    /// buffer holds fewer datagrams than that.
    pub(super) fn drain_heartbeats(&mut self, beats: &HeartbeatSocket, buf: &mut [u8]) {
        const MOST: usize = 16_384;
        // Not `now()`: that would hand this instant to the node ahead of the heartbeats
        // that arrived before it, and each of them would then be dated now.
        let cur = heartbeats::Drain {
            now: self.clock(),
            wall: SystemTime::now(),
        };
        let prev = std::mem::replace(&mut self.drained, cur);
        if self.selected.is_empty() && self.selected_acks.is_empty() {
            // Nothing selected: nothing arrived since `prev` either (so `cur` is a
            // true bound for the next drain).
            if self.beats_pending == 0 {
                return;
            }
            self.beats_pending -= 1;
        }
        for _ in 0..MOST {
            match beats.try_recv(buf) {
                None => return,
                Some(Ok(b)) => {
                    self.shared.metrics.heartbeat_batched();
                    let at = arrival(b.at, cur, prev);
                    self.received_at(Ok((b.len, b.from)), buf, Some(at));
                }
                Some(Err(e)) => {
                    // Counted; the rest is read at the next turn.
                    self.received(Err(e), buf);
                    return;
                }
            }
        }
    }

    /// Have the kernel select the heartbeats of the leaders now followed quietly
    /// (after a turn: a no-op unless they changed).
    pub(super) fn select_heartbeats(&mut self, beats: &HeartbeatSocket) {
        if self.batching_failed {
            return;
        }
        let gate = &self.gate;
        let paused = self.paused;
        let acks_refused = self.acks_refused;
        let want = || {
            self.node
                .quiet_heartbeats()
                .filter(move |_| !paused)
                .filter_map(|(kind, leader, term)| {
                    let inc = gate.incarnation_of(leader)?;
                    Some((kind, leader, inc, term))
                })
        };
        let want_acks = || {
            self.node
                .quiet_acks()
                .filter(move |_| !paused && !acks_refused)
                .filter_map(|(kind, follower, term, named)| {
                    let inc = gate.incarnation_of(follower)?;
                    Some((kind, follower, inc, term, named))
                })
        };
        // Most turns change nothing: compare before collecting.
        if want().eq(self.selected.iter().copied())
            && want_acks().eq(self.selected_acks.iter().copied())
        {
            return;
        }
        let want: Vec<_> = want().collect();
        let want_acks: Vec<_> = want_acks().collect();
        let mut patterns: Vec<Pattern> = want
            .iter()
            .map(|&(kind, leader, inc, term)| {
                let (prefix, compare) = gate.heartbeat_prefix(leader, inc, kind, term);
                Pattern::new(&prefix, &compare)
            })
            .collect();
        // A leader followed quietly in several groups sends their heartbeats as one
        // BEATS (docs/wire.md §12): selected when it holds exactly those heartbeats,
        // one pattern per length of its counter (it precedes the body).
        let mut leaders: Vec<(NodeId, u64)> = want.iter().map(|w| (w.1, w.2)).collect();
        leaders.sort_unstable();
        leaders.dedup();
        for (leader, inc) in leaders {
            let mut groups: Vec<(AlgorithmKind, u64)> = want
                .iter()
                .filter(|w| (w.1, w.2) == (leader, inc))
                .map(|w| (w.0, w.3))
                .collect();
            if groups.len() < 2 {
                continue;
            }
            groups.sort_unstable();
            for len in 1..=heartbeats::BEATS_COUNTER_LENGTHS {
                if let Some((prefix, compare)) = gate.beats_prefix(leader, inc, &groups, len) {
                    patterns.push(Pattern::new(&prefix, &compare));
                }
            }
        }
        // The answers to this node's heartbeats, one pattern per follower, as many as
        // the limit on a program's length leaves room for (about eighty members, see
        // `MAX_PROGRAM`); the others are read at once, as before. (`selected_acks`
        // keeps every answer wanted, selected or not: the comparison above must not
        // rebuild the program every turn when some did not fit.)
        let acks = want_acks.iter().map(|&(kind, follower, inc, term, named)| {
            let (prefix, compare) = gate.heartbeat_ack_prefix(follower, inc, kind, term, named);
            Pattern::new(&prefix, &compare)
        });
        let heartbeats_only = patterns.len();
        heartbeats::extend_within_limit(&mut patterns, acks);
        // What the selection before sent is still to read, and what this one sends.
        self.beats_pending = 2;
        let mut selected = beats.select(&patterns);
        if let Err(e) = &selected {
            if patterns.len() > heartbeats_only {
                // A kernel that takes a shorter program: the heartbeats alone, and the
                // answers read at once from now on.
                self.shared.metrics.error("heartbeat_select");
                tracing::warn!(
                    node = self.cfg.id,
                    "cannot select the followers' answers to this node's heartbeats ({e}, \
                     {} patterns); they are read one by one from now on",
                    patterns.len() - heartbeats_only
                );
                self.acks_refused = true;
                selected = beats.select(&patterns[..heartbeats_only]);
                if selected.is_ok() {
                    self.selected = want;
                    self.selected_acks.clear();
                    return;
                }
            }
        }
        match selected {
            Ok(()) => {
                self.selected = want;
                self.selected_acks = want_acks;
            }
            Err(e) => {
                // From now on every datagram to the main socket, read at once: the
                // program before may select heartbeats that are no longer quiet.
                self.shared.metrics.error("heartbeat_select");
                let cleared = match beats.select(&[]) {
                    Ok(()) => String::new(),
                    Err(e) => format!(
                        " (nor could the previous selection be removed: {e}; what it \
                         selects is still read at the start of every turn)"
                    ),
                };
                tracing::error!(
                    node = self.cfg.id,
                    "cannot select heartbeats ({e}); they are read one by one from now on{cleared}"
                );
                self.batching_failed = true;
                self.selected.clear();
                self.selected_acks.clear();
            }
        }
    }

    /// Count a refused datagram and log it, at a rate bounded per reason.
    pub(super) fn dropped(&mut self, e: Dropped, from: SocketAddr) {
        if !e.is_counted() {
            return;
        }
        let reason = e.reason();
        self.shared.metrics.invalid_datagram(reason);
        match self.drops.record(reason, self.now()) {
            Verdict::Quiet => {}
            Verdict::Log => {
                tracing::warn!(node = self.cfg.id, %from, reason, "dropped datagram: {e}")
            }
            Verdict::Summary(n) => tracing::warn!(
                node = self.cfg.id,
                %from,
                reason,
                "dropped datagram: {e} ({n} more dropped for reason {reason} since the last report)"
            ),
        }
    }
}
