//! The security gate of one node: every datagram leaves through [`Gate::seal`] and
//! enters through [`Gate::open`]; the runtime, the fuzz target and the hostile-input
//! tests all use this one receive path in front of [`crate::node::Node`].
//!
//! # Contract
//! - `seal(to, d)`: stamps the [`Header`] (receiver `to`, next datagram counter towards
//!   `to`, starting at 1) and encodes/signs with the [`Codec`].
//! - `open(bytes, source, now_us)`, in this order, each failure a distinct reason:
//!   1. [`Codec::decode`]: size, protobuf, canonical encoding, version, cluster,
//!      authentication (HMAC-SHA256, any key of the ring), roster membership of the
//!      sender and of every id in the body, field validation;
//!   2. `unknown_sender`: a datagram claiming to come from this very node;
//!   3. `receiver`: addressed to another node (a datagram captured on its way to one
//!      peer and replayed to another); a datagram for the multicast group
//!      ([`crate::security::wire::GROUP`]) is accepted only when multicast is configured, and this
//!      node's own group datagrams (the multicast loop) come back as
//!      [`Dropped::OwnEcho`], which is not an attack and is not counted;
//!   4. `source` (only with `[security] check_source`): the UDP source address is not
//!      one of the sender's roster addresses (a DNS name counts with every address it
//!      resolved to at start; IPv4-mapped IPv6 sources compare as IPv4);
//!   5. the replay window ([`crate::security::replay`]): `replay`, `stale_incarnation`,
//!      `future_incarnation` — one window per sender for the datagrams addressed to
//!      this node and one for its group datagrams (they are numbered apart).
//!
//!   Only a datagram that passes everything moves the replay window.
//! - Never panics, on any input; every refusal is a [`Dropped`] whose
//!   [`Dropped::reason`] is the `reason` label of `electd_invalid_datagrams_total`.
//! - Sans-IO: the caller passes the source address and the clock.

use crate::node::Datagram;
use crate::security::keyring::Keyring;
use crate::security::replay::{ReplayError, ReplayGuard};
use crate::security::wire::{Codec, Extra, Header, WireError};
use crate::NodeId;
use std::collections::HashMap;
use std::net::SocketAddr;

/// Why [`Gate::open`] refused a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Dropped {
    /// Refused by the codec (size, encoding, version, cluster, tag, fields).
    #[error("{0}")]
    Wire(#[from] WireError),
    /// A datagram claiming this node as its sender.
    #[error("datagram claims to come from this node ({0})")]
    FromSelf(NodeId),
    /// A datagram addressed to another node.
    #[error("datagram for node {0}, not this one")]
    Receiver(NodeId),
    /// The UDP source is not the sender's roster address (`check_source`).
    #[error("datagram from node {from} arrived from {addr}, not its roster address")]
    Source {
        /// The sender the datagram names.
        from: NodeId,
        /// Where it came from.
        addr: SocketAddr,
    },
    /// Refused by the replay windows.
    #[error("{0}")]
    Replay(#[from] ReplayError),
    /// This node's own multicast datagram, looped back by the network stack.
    #[error("own multicast datagram looped back")]
    OwnEcho,
}

impl Dropped {
    /// The `reason` label of `electd_invalid_datagrams_total` (stable).
    pub fn reason(&self) -> &'static str {
        match self {
            Dropped::Wire(e) => e.reason(),
            Dropped::FromSelf(_) => "unknown_sender",
            Dropped::Receiver(_) => "receiver",
            Dropped::Source { .. } => "source",
            Dropped::Replay(e) => e.reason(),
            Dropped::OwnEcho => "own_echo",
        }
    }

    /// Is this drop worth counting and logging (everything but the multicast loop)?
    pub(crate) fn is_counted(&self) -> bool {
        !matches!(self, Dropped::OwnEcho)
    }

    /// Every reason the gate can give (for metrics pre-registration and dashboards).
    pub fn reasons() -> impl Iterator<Item = &'static str> {
        WireError::REASONS
            .into_iter()
            .chain(["receiver", "source"])
            .chain(ReplayError::REASONS)
    }
}

/// Everything the gate is built from.
#[derive(Clone, Debug)]
pub struct GateConfig {
    /// This node's id (the receiver every datagram must name).
    pub me: NodeId,
    /// The cluster name every datagram must carry.
    pub cluster: String,
    /// The roster: the only senders accepted.
    pub roster: Vec<NodeId>,
    /// `None`: the explicit `insecure` mode.
    pub keys: Option<Keyring>,
    /// Allowed UDP source addresses per roster id; `None` disables the check.
    pub sources: Option<HashMap<NodeId, Vec<SocketAddr>>>,
    /// Multicast is configured: datagrams for the group are accepted.
    pub group: bool,
}

/// The gate (see the module documentation).
#[derive(Clone, Debug)]
pub struct Gate {
    me: NodeId,
    codec: Codec,
    sources: Option<HashMap<NodeId, Vec<SocketAddr>>>,
    replay: ReplayGuard,
    counters: HashMap<NodeId, u64>,
    group: bool,
}

fn canonical(a: SocketAddr) -> (std::net::IpAddr, u16) {
    (a.ip().to_canonical(), a.port())
}

impl Gate {
    /// A gate for `cfg`, with empty replay windows.
    pub fn new(cfg: GateConfig) -> Gate {
        Gate {
            me: cfg.me,
            codec: Codec::new(&cfg.cluster, &cfg.roster, cfg.keys),
            sources: cfg.sources,
            replay: ReplayGuard::new(),
            counters: HashMap::new(),
            group: cfg.group,
        }
    }

    /// Accept datagrams for the multicast group (multicast configured).
    pub(crate) fn set_group(&mut self, group: bool) {
        self.group = group;
    }

    /// The addresses `id` now resolves to (DNS re-resolution): its datagrams are
    /// accepted from those. No effect without the source check.
    pub(crate) fn set_sources(&mut self, id: NodeId, addrs: Vec<SocketAddr>) {
        if let Some(sources) = &mut self.sources {
            sources.insert(id, addrs);
        }
    }

    /// Replace the keyring (key rotation); `None` turns authentication off.
    pub(crate) fn set_keys(&mut self, keys: Option<Keyring>) {
        self.codec.set_keys(keys);
    }

    /// Are datagrams sealed and checked with a keyring (not `insecure`)?
    pub(crate) fn is_authenticated(&self) -> bool {
        self.codec.is_authenticated()
    }

    /// Is the UDP source address checked against the roster?
    pub(crate) fn checks_source(&self) -> bool {
        self.sources.is_some()
    }

    /// The incarnation of `peer` accepted so far (`None` before any datagram of it was).
    pub fn incarnation_of(&self, peer: NodeId) -> Option<u64> {
        self.replay.incarnation_of(peer)
    }

    /// The prefix of the heartbeats of `leader` (of `incarnation`) in group `kind` at
    /// `term`: see [`Codec::heartbeat_prefix`].
    pub(crate) fn heartbeat_prefix(
        &self,
        leader: NodeId,
        incarnation: u64,
        kind: crate::contract::algorithm::AlgorithmKind,
        term: u64,
    ) -> (Vec<u8>, Vec<bool>) {
        self.codec.heartbeat_prefix(leader, incarnation, kind, term)
    }

    /// The prefix of the answers `follower` (of `incarnation`) sends to this node's
    /// heartbeats in group `kind` at `term`, naming `leader`: see
    /// [`Codec::heartbeat_ack_prefix`].
    pub(crate) fn heartbeat_ack_prefix(
        &self,
        follower: NodeId,
        incarnation: u64,
        kind: crate::contract::algorithm::AlgorithmKind,
        term: u64,
        leader: NodeId,
    ) -> (Vec<u8>, Vec<bool>) {
        self.codec
            .heartbeat_ack_prefix(follower, incarnation, kind, term, leader)
    }

    /// The BEATS of `leader` (of `incarnation`) to this node holding the heartbeats of
    /// `groups`, with a counter of `counter_len` bytes: see [`Codec::beats_prefix`].
    pub(crate) fn beats_prefix(
        &self,
        leader: NodeId,
        incarnation: u64,
        groups: &[(crate::contract::algorithm::AlgorithmKind, u64)],
        counter_len: u32,
    ) -> Option<(Vec<u8>, Vec<bool>)> {
        self.codec
            .beats_prefix(leader, incarnation, groups, self.me, counter_len)
    }

    /// Encode and sign `d` for `to` ([`crate::security::wire::GROUP`] for the multicast group)
    /// with the next counter towards `to`.
    pub fn seal(&mut self, to: NodeId, d: &Datagram) -> Result<Vec<u8>, WireError> {
        let c = self.counters.entry(to).or_insert(0);
        *c += 1;
        self.codec.encode(d, Header { to, counter: *c })
    }

    /// [`Gate::seal`] for a CONFIG datagram: this node (`from`, of `incarnation`) tells
    /// `to` its configuration digest (docs/wire.md §11).
    pub(crate) fn seal_config(
        &mut self,
        to: NodeId,
        from: NodeId,
        incarnation: u64,
        digest: u64,
    ) -> Result<Vec<u8>, WireError> {
        let c = self.counters.entry(to).or_insert(0);
        *c += 1;
        self.codec
            .encode_config(from, incarnation, digest, Header { to, counter: *c })
    }

    /// [`Gate::seal`] for a BEATS datagram: this node (`from`, of `incarnation`) tells
    /// `to` the liveness messages of several groups at once (docs/wire.md §12).
    pub(crate) fn seal_beats(
        &mut self,
        to: NodeId,
        from: NodeId,
        incarnation: u64,
        beats: &[(
            crate::contract::algorithm::AlgorithmKind,
            &crate::contract::message::Message,
        )],
    ) -> Result<Vec<u8>, WireError> {
        let c = self.counters.entry(to).or_insert(0);
        *c += 1;
        self.codec
            .encode_beats(from, incarnation, beats, Header { to, counter: *c })
    }

    /// Decode, authenticate and check one datagram received from `source` (the UDP
    /// source address, if the transport knows it) at `now_us` (unix microseconds).
    pub fn open(
        &mut self,
        bytes: &[u8],
        source: Option<SocketAddr>,
        now_us: u64,
    ) -> Result<Datagram, Dropped> {
        self.open_with_config(bytes, source, now_us).map(|(d, _)| d)
    }

    /// [`Gate::open`], and the sender's configuration digest when the datagram is a
    /// CONFIG (docs/wire.md §11).
    pub fn open_with_config(
        &mut self,
        bytes: &[u8],
        source: Option<SocketAddr>,
        now_us: u64,
    ) -> Result<(Datagram, Option<u64>), Dropped> {
        self.open_payload(bytes, source, now_us).map(|(d, x)| {
            let digest = match x {
                Extra::Config(c) => Some(c),
                _ => None,
            };
            (d, digest)
        })
    }

    /// [`Gate::open`], and what a node-level body carries: a CONFIG's digest, a BEATS'
    /// messages, each to be handed to the node as a datagram of its own, or counted as
    /// dropped (docs/wire.md §11, §12). Every check above applies to the datagram
    /// once, before any of its messages.
    pub fn open_payload(
        &mut self,
        bytes: &[u8],
        source: Option<SocketAddr>,
        now_us: u64,
    ) -> Result<(Datagram, Extra), Dropped> {
        let (d, h, config) = self.codec.decode_payload(bytes)?;
        let for_group = h.to == crate::security::wire::GROUP;
        if d.from == self.me {
            return Err(if for_group && self.group {
                Dropped::OwnEcho
            } else {
                Dropped::FromSelf(d.from)
            });
        }
        if h.to != self.me && !(for_group && self.group) {
            return Err(Dropped::Receiver(h.to));
        }
        if let (Some(sources), Some(addr)) = (&self.sources, source) {
            let allowed = sources
                .get(&d.from)
                .is_some_and(|list| list.iter().any(|a| canonical(*a) == canonical(addr)));
            if !allowed {
                return Err(Dropped::Source { from: d.from, addr });
            }
        }
        self.replay
            .check_in(d.from, for_group, d.incarnation, h.counter, now_us)?;
        Ok((d, config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::algorithm::AlgorithmKind;
    use crate::contract::message::{ElectionTag, Message};
    use crate::security::keyring::{Key, KEY_LEN};

    const NOW: u64 = 1_700_000_000_000_000;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn gate(me: NodeId, check_source: bool) -> Gate {
        let roster = vec![1, 2, 3];
        Gate::new(GateConfig {
            me,
            cluster: "c".into(),
            roster: roster.clone(),
            keys: Some(Keyring::new(Key::new([7; KEY_LEN]))),
            sources: check_source.then(|| {
                roster
                    .iter()
                    .map(|&id| (id, vec![addr(7000 + id as u16)]))
                    .collect()
            }),
            group: false,
        })
    }

    fn coordinator(from: NodeId, incarnation: u64) -> Datagram {
        Datagram {
            from,
            incarnation,
            seq: 1,
            ack: 0,
            group: Some(AlgorithmKind::Bully),
            body: Some(Message::Coordinator {
                leader: from,
                epoch: 1,
                tag: ElectionTag::default(),
            }),
        }
    }

    fn reason(r: Result<Datagram, Dropped>) -> Result<Datagram, &'static str> {
        r.map_err(|e| e.reason())
    }

    #[test]
    fn counters_grow_per_receiver_and_replays_are_dropped() {
        let mut s = gate(3, false);
        let mut r1 = gate(1, false);
        let mut r2 = gate(2, false);
        let d = coordinator(3, 100);
        let a = s.seal(1, &d).unwrap();
        let b = s.seal(1, &d).unwrap();
        let c = s.seal(2, &d).unwrap();
        assert_ne!(a, b, "the same content gets a new counter");
        assert_eq!(r1.open(&a, None, NOW), Ok(d.clone()));
        assert_eq!(reason(r1.open(&a, None, NOW)), Err("replay"));
        assert_eq!(r1.open(&b, None, NOW), Ok(d.clone()));
        // Addressed to node 2: node 1 refuses it, node 2 takes it.
        assert_eq!(reason(r1.open(&c, None, NOW)), Err("receiver"));
        assert_eq!(r2.open(&c, None, NOW), Ok(d.clone()));
        // The sender restarts: a new incarnation opens a new window (the window from
        // its second datagram on)…
        let mut s2 = gate(3, false);
        for _ in 0..2 {
            let e = s2.seal(1, &coordinator(3, 200)).unwrap();
            assert!(r1.open(&e, None, NOW).is_ok());
        }
        assert_eq!(r1.incarnation_of(3), Some(200));
        // …and once it was heard twice more, the previous life's datagrams are stale.
        for _ in 0..2 {
            let e = s2.seal(1, &coordinator(3, 200)).unwrap();
            assert!(r1.open(&e, None, NOW).is_ok());
        }
        let old = s.seal(1, &d).unwrap();
        assert_eq!(reason(r1.open(&old, None, NOW)), Err("stale_incarnation"));
        // A datagram "from" the receiver itself.
        let mut me = gate(1, false);
        let own = me.seal(1, &coordinator(1, 5)).unwrap();
        assert_eq!(reason(r1.open(&own, None, NOW)), Err("unknown_sender"));
    }

    #[test]
    fn source_addresses_are_checked_when_enabled() {
        let mut s = gate(3, true);
        let mut r = gate(1, true);
        let d = coordinator(3, 100);
        let a = s.seal(1, &d).unwrap();
        assert_eq!(reason(r.open(&a, Some(addr(7002)), NOW)), Err("source"));
        // A refused datagram does not move the window: the genuine one still passes.
        assert_eq!(r.open(&a, Some(addr(7003)), NOW), Ok(d.clone()));
        // An IPv4-mapped IPv6 source (dual-stack socket) is the same address.
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:7003".parse().unwrap();
        assert!(r.open(&s.seal(1, &d).unwrap(), Some(mapped), NOW).is_ok());
        // Disabled: any source.
        let mut open = gate(1, false);
        assert!(open
            .open(&s.seal(1, &d).unwrap(), Some(addr(9)), NOW)
            .is_ok());
    }

    #[test]
    fn every_reason_is_listed() {
        let all: Vec<&str> = Dropped::reasons().collect();
        for r in [
            "replay",
            "stale_incarnation",
            "future_incarnation",
            "receiver",
            "source",
            "unknown_sender",
            "bad_tag",
        ] {
            assert!(all.contains(&r), "{r}");
        }
    }

    /// Multicast: one datagram sealed for the group reaches every member once; it is
    /// refused where multicast is not configured; the sender's own copy looped back
    /// is an uncounted echo; group and unicast counters are separate sequences.
    #[test]
    fn group_datagrams_are_accepted_once_and_only_with_multicast() {
        use crate::security::wire::GROUP;
        let mut s = gate(3, true);
        s.set_group(true);
        let mut r1 = gate(1, true);
        r1.set_group(true);
        let mut r2 = gate(2, true);
        r2.set_group(true);
        let mut plain = gate(1, true);
        let d = coordinator(3, 100);
        let g = s.seal(GROUP, &d).unwrap();
        let from3 = Some(addr(7003));
        assert_eq!(r1.open(&g, from3, NOW), Ok(d.clone()));
        assert_eq!(r2.open(&g, from3, NOW), Ok(d.clone()));
        assert_eq!(reason(r1.open(&g, from3, NOW)), Err("replay"));
        assert_eq!(reason(plain.open(&g, from3, NOW)), Err("receiver"));
        let echo = s.open(&g, from3, NOW).unwrap_err();
        assert_eq!(echo, Dropped::OwnEcho);
        assert!(!echo.is_counted());
        // Unicast counter 1 towards node 1 is not a replay of group counter 1.
        let u = s.seal(1, &d).unwrap();
        assert_eq!(r1.open(&u, from3, NOW), Ok(d.clone()));
        // The source check still applies to group datagrams.
        let g2 = s.seal(GROUP, &d).unwrap();
        assert_eq!(reason(r1.open(&g2, Some(addr(9999)), NOW)), Err("source"));
        // … and follows DNS: after re-resolution the new address is the accepted one.
        r1.set_sources(3, vec![addr(9999)]);
        assert_eq!(r1.open(&g2, Some(addr(9999)), NOW), Ok(d));
    }
}
