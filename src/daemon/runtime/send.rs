//! What goes out: the flush of a batch (durable state first when it must be), sealing
//! and sending each datagram, the CONFIG datagrams, and the resignations of a graceful
//! leave.

use super::*;

impl Driver {
    pub(super) async fn flush<T: Transport>(&mut self, socket: &T) {
        self.send_configs(socket).await;
        if self.writer.is_none() {
            let transmits: Vec<(NodeId, Datagram)> = self.node.drain_transmits().collect();
            let multicasts: Vec<Datagram> = self.node.drain_multicasts().collect();
            self.send_all(socket, transmits, multicasts).await;
            self.after_send();
            return;
        }
        if self.drained_now() != self.stored_drained {
            // A failure is logged and counted there; the next flush tries again.
            let _ = self.persist_drains();
        }
        let now = self.node.durable();
        // A vote or a claim must be on disk before it is sent: the datagrams of the
        // groups holding one not written yet wait for the writer (`persist`); the
        // others leave now, adoptions included (their write follows).
        let holding = self.holding(&now);
        if holding.is_empty() {
            let transmits: Vec<(NodeId, Datagram)> = self.node.drain_transmits().collect();
            let multicasts: Vec<Datagram> = self.node.drain_multicasts().collect();
            self.send_all(socket, transmits, multicasts).await;
        } else {
            let mine = |d: &Datagram| d.group.is_some_and(|g| holding.contains(&g));
            let (wait, go): (Vec<_>, Vec<_>) =
                self.node.drain_transmits().partition(|(_, d)| mine(d));
            let (wait_m, go_m): (Vec<_>, Vec<_>) = self.node.drain_multicasts().partition(mine);
            self.send_all(socket, go, go_m).await;
            self.hold(wait, wait_m);
        }
        self.holding = holding;
        self.submit(now);
        self.check_write_time();
        self.send_released(socket).await;
        // Reported once on disk: status, /watch, hooks and metrics never show a token
        // this node would not hold after a crash now. Nor while a claim or a vote that
        // a write failed to store is held back (`holding`): it is not on disk until a
        // retry succeeds (a node whose disk failed reported "leader, term 3" and,
        // restarted, claimed term 2, below the token a command had run under; the
        // audit). An adoption's failed write holds nothing back: the token it reports
        // is its leader's, and its datagrams have left.
        let claim_not_stored = self.write_failed && !self.holding.is_empty();
        if !self.writing() && !claim_not_stored {
            self.after_send();
        }
    }

    /// Send what a finished write released; the link's clocks of those messages start
    /// when they have left.
    async fn send_released<T: Transport>(&mut self, socket: &T) {
        let Some((transmits, multicasts)) = self.release() else {
            return;
        };
        let sent: Vec<(NodeId, u64)> = transmits
            .iter()
            .map(|(to, d)| (*to, d.seq))
            .chain(multicasts.iter().map(|d| (0, d.seq)))
            .collect();
        self.send_all(socket, transmits, multicasts).await;
        let now = self.now();
        for (to, seq) in sent {
            self.node.departed(now, to, seq);
        }
    }

    /// Send this node's CONFIG to the peers queued for it.
    pub(super) async fn send_configs<T: Transport>(&mut self, socket: &T) {
        let Some(drift) = &self.drift else {
            return;
        };
        if self.config_out.is_empty() || self.paused {
            return;
        }
        let mine = drift.mine().0;
        for to in std::mem::take(&mut self.config_out) {
            let Some(&addr) = self.peers.get(&to) else {
                self.shared.metrics.send_error("no_address");
                continue;
            };
            match self
                .gate
                .seal_config(to, self.cfg.id, self.incarnation, mine)
            {
                Ok(bytes) => {
                    self.send_sealed(socket, &bytes, addr, to).await;
                }
                Err(e) => self.shared.metrics.send_error(e.reason()),
            }
        }
    }

    pub(super) async fn send_all<T: Transport>(
        &mut self,
        socket: &T,
        transmits: Vec<(NodeId, Datagram)>,
        multicasts: Vec<Datagram>,
    ) {
        // Sealed first, then sent together (`Transport::send_many`): one system call
        // for the whole flush on a real socket.
        let mut sealed: Vec<Sealed> = Vec::with_capacity(transmits.len() + multicasts.len());
        // The groups of every sealed datagram, one after another (`Sealed::groups`).
        let mut groups: Vec<AlgorithmKind> = Vec::with_capacity(sealed.capacity());
        self.seal_unicast(&transmits, &mut sealed, &mut groups);
        if let Some(group) = self.multicast {
            for dg in &multicasts {
                match self.gate.seal(0, dg) {
                    Ok(bytes) => sealed.push(Sealed {
                        to: 0,
                        addr: group,
                        groups: push_groups(&mut groups, dg.group),
                        bytes,
                    }),
                    Err(e) => self.shared.metrics.send_error(e.reason()),
                }
            }
        }
        if sealed.is_empty() {
            return;
        }
        let out: Vec<(&[u8], SocketAddr)> = sealed
            .iter()
            .map(|s| (s.bytes.as_slice(), self.wire_addr(s.addr)))
            .collect();
        let results = socket.send_many(&out).await;
        for (s, r) in sealed.iter().zip(results) {
            if self.sent(r, s.addr, s.to) {
                let mine = &groups[s.groups.clone()];
                for (&g, share) in mine.iter().zip(shares(s.bytes.len(), mine.len())) {
                    self.shared.metrics.group_datagram_sent(g, share);
                }
            }
        }
    }

    /// Trace and seal `transmits` as they go on the wire ([`crate::node::pack`]): each
    /// datagram into `sealed`, the groups of its messages into `groups`
    /// ([`Sealed::groups`]).
    pub(super) fn seal_unicast(
        &mut self,
        transmits: &[(NodeId, Datagram)],
        sealed: &mut Vec<Sealed>,
        groups: &mut Vec<AlgorithmKind>,
    ) {
        for p in crate::node::pack(transmits) {
            match p {
                Packet::One(to, dg) => {
                    let Some(&addr) = self.peers.get(&to) else {
                        self.shared.metrics.send_error("no_address");
                        continue;
                    };
                    if let Some(t) = self.shared.tracer() {
                        t.sent(self.cfg.id, to, dg);
                    }
                    match self.gate.seal(to, dg) {
                        Ok(bytes) => sealed.push(Sealed {
                            to,
                            addr,
                            groups: push_groups(groups, dg.group),
                            bytes,
                        }),
                        Err(e) => self.shared.metrics.send_error(e.reason()),
                    }
                }
                Packet::Beats(to, dgs) => {
                    if let Some(s) = self.seal_beats(to, &dgs, groups) {
                        sealed.push(s);
                    }
                }
            }
        }
    }

    /// Trace and seal the liveness messages `dgs` to `to` (at most one of each type per
    /// group, see [`crate::node::pack`]) as one BEATS datagram (docs/wire.md §12). Its
    /// bytes are shared out among the groups of its messages (docs/observability.md).
    fn seal_beats(
        &mut self,
        to: NodeId,
        dgs: &[&Datagram],
        groups: &mut Vec<AlgorithmKind>,
    ) -> Option<Sealed> {
        let Some(&addr) = self.peers.get(&to) else {
            self.shared.metrics.send_error("no_address");
            return None;
        };
        let first = dgs.first()?;
        if let Some(t) = self.shared.tracer() {
            for dg in dgs {
                t.sent(self.cfg.id, to, dg);
            }
        }
        let beats: Vec<(AlgorithmKind, &Message)> = dgs
            .iter()
            .filter_map(|d| Some((d.group?, d.body.as_ref()?)))
            .collect();
        match self
            .gate
            .seal_beats(to, first.from, first.incarnation, &beats)
        {
            Ok(bytes) => Some(Sealed {
                to,
                addr,
                groups: {
                    let from = groups.len();
                    groups.extend(beats.iter().map(|b| b.0));
                    from..groups.len()
                },
                bytes,
            }),
            Err(e) => {
                self.shared.metrics.send_error(e.reason());
                None
            }
        }
    }

    pub(super) async fn transmit<T: Transport>(&mut self, socket: &T, to: NodeId, dg: &Datagram) {
        let metrics = &self.shared.metrics;
        let Some(&addr) = self.peers.get(&to) else {
            metrics.send_error("no_address");
            return;
        };
        if let Some(t) = self.shared.tracer() {
            t.sent(self.cfg.id, to, dg);
        }
        self.send_bytes(socket, dg, addr, to).await;
    }

    /// Encode and send one datagram to `addr` (`to` = 0 for the multicast group).
    pub(super) async fn send_bytes<T: Transport>(
        &mut self,
        socket: &T,
        dg: &Datagram,
        addr: SocketAddr,
        to: NodeId,
    ) {
        let bytes = match self.gate.seal(to, dg) {
            Ok(b) => b,
            Err(e) => {
                self.shared.metrics.send_error(e.reason());
                return;
            }
        };
        let n = bytes.len();
        if self.send_sealed(socket, &bytes, addr, to).await {
            if let Some(g) = dg.group {
                self.shared.metrics.group_datagram_sent(g, n);
            }
        }
    }

    /// Send encoded `bytes` to `addr` (`to` = 0 for the multicast group); whether the
    /// send succeeded.
    pub(super) async fn send_sealed<T: Transport>(
        &mut self,
        socket: &T,
        bytes: &[u8],
        addr: SocketAddr,
        to: NodeId,
    ) -> bool {
        let r = socket.send_to(bytes, self.wire_addr(addr)).await;
        self.sent(r, addr, to)
    }

    /// A dual-stack socket reaches IPv4 peers by their IPv4-mapped address.
    pub(super) fn wire_addr(&self, addr: SocketAddr) -> SocketAddr {
        match (self.bound, addr) {
            (Some(SocketAddr::V6(_)), SocketAddr::V4(v4)) => {
                SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port())
            }
            _ => addr,
        }
    }

    /// Count a send's result `r` (to `addr`, node `to`; 0 for the multicast group) and
    /// judge the `send` health check; whether it succeeded.
    pub(super) fn sent(&mut self, r: io::Result<usize>, addr: SocketAddr, to: NodeId) -> bool {
        let addr = self.wire_addr(addr);
        let metrics = &self.shared.metrics;
        match r {
            Ok(n) => {
                metrics.datagram_sent(n);
                if self.send_failures >= SEND_FAILURE_STREAK {
                    tracing::info!(node = self.cfg.id, "sending works again");
                    self.shared.set_problem("send", None);
                }
                self.send_failures = 0;
                true
            }
            Err(e) => {
                metrics.send_error(send_error_kind(&e));
                self.send_failures = self.send_failures.saturating_add(1);
                if self.send_failures == SEND_FAILURE_STREAK {
                    self.shared.set_problem(
                        "send",
                        Some(format!(
                            "the last {SEND_FAILURE_STREAK} sends failed, the last to {addr}: {e}"
                        )),
                    );
                }
                self.log_error("send", &format!("send to {to} ({addr}) failed: {e}"));
                false
            }
        }
    }

    /// Graceful leave: resign every group this node leads and wait (bounded by the
    /// link's give-up time) until the resignations are acknowledged. Nothing else is
    /// delivered or sent meanwhile: this node must not take part in the election its
    /// resignation starts.
    pub(super) async fn leave<T: Transport>(&mut self, socket: &T, buf: &mut [u8]) {
        if self.paused {
            return;
        }
        // The write under way first (bounded): the datagrams it holds back go out, and
        // the state a restart starts from is on disk.
        let until = Instant::now() + Duration::from_secs(5);
        while self.writing() {
            match tokio::time::timeout_at(until, written(self.writer.as_mut())).await {
                Ok(Some(w)) => self.written(w),
                _ => break,
            }
        }
        self.send_released(socket).await;
        let now = self.now();
        let led: Vec<_> = self
            .node
            .status()
            .into_iter()
            .filter(|s| s.leader == Some(self.cfg.id))
            .collect();
        let resigned = self.node.resign(now);
        self.send_resignations(socket).await;
        self.shared.metrics.sync(&self.node);
        for s in &led {
            self.shared
                .emit(LeaderEvent::new(self.cfg.id, s.algorithm, None, s.term));
        }
        if resigned == 0 {
            return;
        }
        tracing::info!(
            node = self.cfg.id,
            groups = resigned,
            "resigned; waiting for acks"
        );
        let until = Instant::now() + self.cfg.link.give_up_after();
        while self.node.in_flight() > 0 && Instant::now() < until {
            let next = self.deadline().min(until);
            tokio::select! {
                r = socket.recv_from(buf) => {
                    if let Ok((n, from)) = r {
                        // Acks only: bodies are not for a node that is leaving.
                        if let Ok((dg, None)) = self.gate.open_with_config(&buf[..n], Some(from), unix_micros()) {
                            if dg.body.is_none() {
                                let now = self.now();
                                self.node.handle_datagram(now, dg);
                            }
                        }
                    }
                }
                _ = tokio::time::sleep_until(next) => {
                    let now = self.now();
                    self.node.handle_timeout(now);
                }
            }
            self.send_resignations(socket).await;
        }
        self.shared.metrics.sync(&self.node);
    }

    pub(super) async fn send_resignations<T: Transport>(&mut self, socket: &T) {
        self.node.discard_events();
        let resign = |d: &Datagram| matches!(d.body, Some(Message::Resign { .. }));
        let group_out: Vec<Datagram> = self.node.drain_multicasts().filter(resign).collect();
        if let Some(group) = self.multicast {
            for dg in &group_out {
                self.send_bytes(socket, dg, group, 0).await;
            }
        }
        let out: Vec<(NodeId, Datagram)> = self
            .node
            .drain_transmits()
            .filter(|(_, d)| resign(d))
            .collect();
        for (to, dg) in &out {
            self.transmit(socket, *to, dg).await;
        }
    }
}

/// `bytes` shared out among `n` messages: equal shares, the remainder one byte each to
/// the first ones, so that the shares add up to `bytes`.
pub(crate) fn shares(bytes: usize, n: usize) -> impl Iterator<Item = usize> {
    let n = n.max(1);
    (0..n).map(move |i| bytes / n + usize::from(i < bytes % n))
}

/// A datagram sealed for the wire, waiting for its flush's send.
pub(super) struct Sealed {
    pub(super) to: NodeId,
    pub(super) addr: SocketAddr,
    /// Where the groups whose messages it carries stand in its flush's list of groups
    /// (its bytes are shared out among them).
    pub(super) groups: std::ops::Range<usize>,
    pub(super) bytes: Vec<u8>,
}

/// Append `group` (if any) to a flush's list of groups; where it stands.
fn push_groups(
    groups: &mut Vec<AlgorithmKind>,
    group: Option<AlgorithmKind>,
) -> std::ops::Range<usize> {
    let from = groups.len();
    groups.extend(group);
    from..groups.len()
}
