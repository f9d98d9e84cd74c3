//! The wire format: exactly one protobuf `Envelope` (proto/electd.proto) per UDP
//! datagram. This is the only module that sees the generated prost types: it converts
//! between them and [`crate::node::Datagram`], validates every field, and makes and
//! checks the authentication tag.
//!
//! # Contract
//! - [`Codec::decode`] never panics, on any input; it returns the datagram only if it
//!   is well formed, of this cluster, from a roster member, and (unless the node runs
//!   `insecure`) authenticated. Otherwise it returns a [`WireError`] whose
//!   [`WireError::reason`] is the `reason` label of `electd_invalid_datagrams_total`.
//! - prost decodes an empty datagram as an all-default envelope; version 0, an empty
//!   cluster, sender 0, incarnation 0 and a missing body are therefore all invalid.
//! - Authentication (RFC 2104 HMAC-SHA256, see [`crate::security::keyring`]): the tag is computed
//!   over the encoded envelope with `tag` empty and `key_id` set; the receiver decodes,
//!   clears the tag, re-encodes ([`encode_canonical`]) and verifies in constant time
//!   with the key `key_id` names. Only the canonical encoding (docs/wire.md §3) is
//!   accepted (re-encoding the decoded envelope must give back the bytes received:
//!   fields in ascending number order, the body included, no defaults, no unknown
//!   fields, shortest varints), so no two byte strings carry the same authenticated
//!   content.
//! - A body travels only in a group that uses it
//!   ([`crate::contract::info::Info::carries`]); another group is `algorithm`.
//! - Every envelope carries a [`Header`]: the receiver's roster id and a datagram
//!   counter (both non-zero, both covered by the tag). This module only checks that
//!   they are present; [`crate::security::gate`] checks that the datagram is for this node and
//!   runs the replay window ([`crate::security::replay`]) over (sender, incarnation, counter).
//! - Sizes are bounded: a datagram above [`MAX_DATAGRAM`] bytes is `oversize`, a ring
//!   id list longer than twice the roster is `invalid_field`.

use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::{ElectionTag, Message};
use crate::node::Datagram;
use crate::proto::{self, envelope::Body};
use crate::security::keyring::{Keyring, VerifyError};
use crate::NodeId;
use prost::Message as _;
use std::collections::HashSet;

thread_local! {
    /// The re-encoding buffer of [`Codec::decode`] (at most [`MAX_DATAGRAM`] bytes).
    static SCRATCH: std::cell::RefCell<Vec<u8>> =
        std::cell::RefCell::new(Vec::with_capacity(MAX_DATAGRAM));
}

/// Wire version written into every envelope.
pub const WIRE_VERSION: u32 = 1;
/// Largest datagram electd sends or accepts (well under the 65 507 bytes of UDP/IPv4;
/// an envelope with a ring list of 2 000 ids still fits).
pub const MAX_DATAGRAM: usize = 16 * 1024;
/// Largest Hirschberg–Sinclair phase accepted (2^phase hops must fit a u32).
const MAX_PHASE: u32 = 31;

/// Receiver id of a datagram sent to the multicast group (every member at once); its
/// counter runs in the sender's group sequence, apart from the per-receiver ones.
pub const GROUP: NodeId = 0;

/// The per-datagram part of the authenticated envelope that is not in [`Datagram`]:
/// who it is for and its place in the sender's datagram sequence to that receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Roster id of the receiver, or [`GROUP`] for a multicast datagram.
    pub to: NodeId,
    /// Datagram counter of the sender towards `to`: 1, 2, 3, … within an incarnation.
    pub counter: u64,
}

/// Why a datagram was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Larger than the largest datagram electd sends.
    #[error("datagram larger than {MAX_DATAGRAM} bytes")]
    Oversize,
    /// Zero bytes.
    #[error("empty datagram")]
    Empty,
    /// Not a (canonically encoded) protobuf envelope.
    #[error("not a protobuf envelope")]
    Decode,
    /// Another wire version.
    #[error("wire version {0} (this node speaks {WIRE_VERSION})")]
    Version(u32),
    /// Another cluster's name.
    #[error("datagram of another cluster")]
    Cluster,
    /// A sender id outside the roster.
    #[error("sender {0} is not in the roster")]
    UnknownSender(u32),
    /// Tagged with a key this node does not hold.
    #[error("key id {0:#010x} is not in the keyring")]
    NoKey(u32),
    /// The HMAC tag is missing or wrong.
    #[error("missing or wrong authentication tag")]
    BadTag,
    /// The algorithm field is unknown or missing.
    #[error("unknown or missing algorithm")]
    Algorithm,
    /// A field out of its range (named).
    #[error("invalid field {0}")]
    InvalidField(&'static str),
}

impl WireError {
    /// The `reason` label of `electd_invalid_datagrams_total` (stable).
    pub fn reason(&self) -> &'static str {
        match self {
            WireError::Oversize => "oversize",
            WireError::Empty => "empty",
            WireError::Decode => "decode",
            WireError::Version(_) => "version",
            WireError::Cluster => "cluster",
            WireError::UnknownSender(_) => "unknown_sender",
            WireError::NoKey(_) => "no_key",
            WireError::BadTag => "bad_tag",
            WireError::Algorithm => "algorithm",
            WireError::InvalidField(_) => "invalid_field",
        }
    }

    /// Every reason, for dashboards and tests.
    pub const REASONS: [&'static str; 10] = [
        "oversize",
        "empty",
        "decode",
        "version",
        "cluster",
        "unknown_sender",
        "no_key",
        "bad_tag",
        "algorithm",
        "invalid_field",
    ];
}

/// Encoder/decoder of one node (cluster, roster and keys are fixed at start).
#[derive(Clone, Debug)]
pub struct Codec {
    cluster: String,
    roster: HashSet<NodeId>,
    keys: Option<Keyring>,
}

impl Codec {
    /// `keys = None` is the explicit `insecure` mode: no tag is made or checked.
    pub fn new(cluster: &str, roster: &[NodeId], keys: Option<Keyring>) -> Codec {
        Codec {
            cluster: cluster.to_string(),
            roster: roster.iter().copied().collect(),
            keys,
        }
    }

    /// Replace the keyring (key rotation).
    pub fn set_keys(&mut self, keys: Option<Keyring>) {
        self.keys = keys;
    }

    /// Does this codec make and check tags (not `insecure`)?
    pub fn is_authenticated(&self) -> bool {
        self.keys.is_some()
    }

    /// Encode (and sign) one datagram. Fails only if it would exceed [`MAX_DATAGRAM`].
    pub fn encode(&self, d: &Datagram, h: Header) -> Result<Vec<u8>, WireError> {
        self.seal(self.envelope(d, h))
    }

    /// Encode (and sign) a CONFIG datagram (docs/wire.md §11): node `from`, of
    /// `incarnation`, tells `h.to` the digest of its configuration
    /// ([`crate::config::digest`]; not 0). Node-level: no group, no link sequence.
    pub fn encode_config(
        &self,
        from: NodeId,
        incarnation: u64,
        digest: u64,
        h: Header,
    ) -> Result<Vec<u8>, WireError> {
        let ack = Datagram {
            from,
            incarnation,
            seq: 0,
            ack: 0,
            group: None,
            body: None,
        };
        let mut env = self.envelope(&ack, h);
        env.body = Some(Body::Config(proto::ConfigDigest { digest }));
        self.seal(env)
    }

    /// Sign `env` (unless insecure) and encode it.
    fn seal(&self, mut env: proto::Envelope) -> Result<Vec<u8>, WireError> {
        let mut bytes = Vec::with_capacity(128);
        if let Some(keys) = &self.keys {
            env.key_id = keys.primary().id;
            encode_canonical(&mut env, &mut bytes);
            let (_, tag) = keys.sign(&bytes);
            env.tag = tag;
            bytes.clear();
        }
        encode_canonical(&mut env, &mut bytes);
        if bytes.len() > MAX_DATAGRAM {
            return Err(WireError::Oversize);
        }
        Ok(bytes)
    }

    /// The envelope of `d` for `h`, not yet signed (tag empty, key id 0).
    fn envelope(&self, d: &Datagram, h: Header) -> proto::Envelope {
        let (algorithm, body) = match (&d.body, d.group) {
            (Some(m), Some(g)) => (algorithm_to_proto(g) as i32, to_body(m)),
            _ => (
                proto::Algorithm::Unspecified as i32,
                Body::AckOnly(proto::Ack {}),
            ),
        };
        proto::Envelope {
            version: WIRE_VERSION,
            cluster: self.cluster.clone(),
            sender: d.from,
            incarnation: d.incarnation,
            seq: d.seq,
            ack: d.ack,
            algorithm,
            tag: Vec::new(),
            key_id: 0,
            counter: h.counter,
            receiver: h.to,
            body: Some(body),
        }
    }

    /// The first bytes of every heartbeat `leader` (of incarnation `incarnation`) sends
    /// in group `kind` at `term`, unacknowledging and under this node's primary key id,
    /// up to the end of its body; `compare` is false on the authentication tag's bytes.
    /// The counter and receiver fields follow the body (fields in number order), so the
    /// prefix is the same for every such heartbeat (see [`crate::daemon::heartbeats`]).
    pub fn heartbeat_prefix(
        &self,
        leader: NodeId,
        incarnation: u64,
        kind: AlgorithmKind,
        term: u64,
    ) -> (Vec<u8>, Vec<bool>) {
        // The envelope `encode` makes of such a heartbeat; counter and receiver 0 are
        // left out, so the encoding ends with the body.
        let beat = Datagram {
            from: leader,
            incarnation,
            seq: 0,
            ack: 0,
            group: Some(kind),
            body: Some(Message::Heartbeat { term, leader }),
        };
        let mut env = self.envelope(&beat, Header::default());
        let Some(keys) = &self.keys else {
            let bytes = canonical(env);
            let compare = vec![true; bytes.len()];
            return (bytes, compare);
        };
        let (key_id, tag) = keys.sign(b"");
        env.key_id = key_id;
        env.tag = vec![0; tag.len()];
        let zeros = canonical(env.clone());
        env.tag = vec![0xff; tag.len()];
        let ones = canonical(env);
        let compare = zeros.iter().zip(&ones).map(|(a, b)| a == b).collect();
        (zeros, compare)
    }

    /// Decode, authenticate and validate one datagram (see the module documentation).
    /// Allocates only what the datagram's own fields hold.
    pub fn decode(&self, bytes: &[u8]) -> Result<(Datagram, Header), WireError> {
        self.decode_with_config(bytes).map(|(d, h, _)| (d, h))
    }

    /// [`Codec::decode`], and the configuration digest when the datagram is a CONFIG
    /// (docs/wire.md §11). A CONFIG comes back as a datagram with neither group nor
    /// body and `ack` 0, which a node ignores.
    pub fn decode_with_config(
        &self,
        bytes: &[u8],
    ) -> Result<(Datagram, Header, Option<u64>), WireError> {
        if bytes.len() > MAX_DATAGRAM {
            return Err(WireError::Oversize);
        }
        if bytes.is_empty() {
            return Err(WireError::Empty);
        }
        let mut env = proto::Envelope::decode(bytes).map_err(|_| WireError::Decode)?;
        if env == proto::Envelope::default() {
            return Err(WireError::Empty);
        }
        // Only the canonical encoding is accepted: no unknown fields, no over-long
        // varints, no repeated fields. The tag then binds the exact bytes received.
        // (Both re-encodings go to one buffer per thread: no allocation per datagram.)
        SCRATCH.with_borrow_mut(|buf| {
            buf.clear();
            encode_canonical(&mut env, buf);
            if buf.as_slice() != bytes {
                return Err(WireError::Decode);
            }
            if env.version != WIRE_VERSION {
                return Err(WireError::Version(env.version));
            }
            if env.cluster != self.cluster {
                return Err(WireError::Cluster);
            }
            if let Some(keys) = &self.keys {
                let tag = std::mem::take(&mut env.tag);
                if tag.is_empty() {
                    return Err(WireError::BadTag);
                }
                buf.clear();
                encode_canonical(&mut env, buf);
                keys.verify(env.key_id, buf, &tag).map_err(|e| match e {
                    VerifyError::UnknownKey => WireError::NoKey(env.key_id),
                    VerifyError::BadTag => WireError::BadTag,
                })?;
            }
            Ok(())
        })?;
        if env.sender == 0 || !self.roster.contains(&env.sender) {
            return Err(WireError::UnknownSender(env.sender));
        }
        if env.incarnation == 0 {
            return Err(WireError::InvalidField("incarnation"));
        }
        if env.counter == 0 {
            return Err(WireError::InvalidField("counter"));
        }
        if env.receiver != GROUP && !self.roster.contains(&env.receiver) {
            return Err(WireError::InvalidField("receiver"));
        }
        let header = Header {
            to: env.receiver,
            counter: env.counter,
        };
        let body = env.body.take().ok_or(WireError::Empty)?;
        if let Body::AckOnly(_) = body {
            if env.ack == 0 || env.seq != 0 {
                return Err(WireError::InvalidField("ack"));
            }
            if env.algorithm != proto::Algorithm::Unspecified as i32 {
                return Err(WireError::Algorithm);
            }
            let d = Datagram {
                from: env.sender,
                incarnation: env.incarnation,
                seq: 0,
                ack: env.ack,
                group: None,
                body: None,
            };
            return Ok((d, header, None));
        }
        if let Body::Config(c) = body {
            if env.seq != 0 || env.ack != 0 || c.digest == 0 {
                return Err(WireError::InvalidField("config"));
            }
            if env.algorithm != proto::Algorithm::Unspecified as i32 {
                return Err(WireError::Algorithm);
            }
            let d = Datagram {
                from: env.sender,
                incarnation: env.incarnation,
                seq: 0,
                ack: 0,
                group: None,
                body: None,
            };
            return Ok((d, header, Some(c.digest)));
        }
        let group = proto::Algorithm::try_from(env.algorithm)
            .ok()
            .and_then(algorithm_from_proto)
            .ok_or(WireError::Algorithm)?;
        let msg = self.message_of(body)?;
        // A body travels only in a group that uses it: an ELECTION under RAFT or a
        // TIMEOUT_NOW under BULLY names the wrong group.
        if !group.info().carries(msg.kind()) {
            return Err(WireError::Algorithm);
        }
        // Reliable bodies travel with a link sequence, liveness beacons without.
        if msg.kind().is_reliable() != (env.seq != 0) {
            return Err(WireError::InvalidField("seq"));
        }
        let d = Datagram {
            from: env.sender,
            incarnation: env.incarnation,
            seq: env.seq,
            ack: env.ack,
            group: Some(group),
            body: Some(msg),
        };
        Ok((d, header, None))
    }

    fn member(&self, id: u32, field: &'static str) -> Result<NodeId, WireError> {
        if self.roster.contains(&id) {
            Ok(id)
        } else {
            Err(WireError::InvalidField(field))
        }
    }

    fn tag(&self, t: Option<proto::ElectionTag>) -> Result<ElectionTag, WireError> {
        let t = t.ok_or(WireError::InvalidField("tag"))?;
        // The default tag (initiator 0) is what a node that never ran an election holds.
        if t.initiator != 0 {
            self.member(t.initiator, "tag.initiator")?;
        }
        Ok(ElectionTag {
            initiator: t.initiator,
            seq: t.seq,
        })
    }

    fn message_of(&self, body: Body) -> Result<Message, WireError> {
        Ok(match body {
            Body::Election(m) => Message::Election {
                tag: self.tag(m.tag)?,
                epoch: m.epoch,
            },
            Body::Ok(m) => Message::Ok {
                responder: self.member(m.responder, "ok.responder")?,
                tag: self.tag(m.tag)?,
            },
            Body::Coordinator(m) => Message::Coordinator {
                leader: self.member(m.leader, "coordinator.leader")?,
                epoch: m.epoch,
                tag: self.tag(m.tag)?,
            },
            Body::YouAreCoordinator(m) => Message::YouAreCoordinator {
                tag: self.tag(m.tag)?,
                epoch: m.epoch,
            },
            Body::RingElection(m) => {
                if m.ids.len() > 2 * self.roster.len() {
                    return Err(WireError::InvalidField("ring_election.ids"));
                }
                for &id in &m.ids {
                    self.member(id, "ring_election.ids")?;
                }
                Message::RingElection {
                    initiator: self.member(m.initiator, "ring_election.initiator")?,
                    ids: m.ids,
                    epoch: m.epoch,
                }
            }
            Body::RingCoordinator(m) => Message::RingCoordinator {
                initiator: self.member(m.initiator, "ring_coordinator.initiator")?,
                leader: self.member(m.leader, "ring_coordinator.leader")?,
                epoch: m.epoch,
            },
            Body::LcrElection(m) => Message::LcrElection {
                candidate: self.member(m.candidate, "lcr_election.candidate")?,
                round: m.round,
            },
            Body::LcrElected(m) => Message::LcrElected {
                leader: self.member(m.leader, "lcr_elected.leader")?,
                epoch: m.epoch,
            },
            Body::Probe(m) => {
                if m.phase > MAX_PHASE {
                    return Err(WireError::InvalidField("probe.phase"));
                }
                Message::Probe {
                    candidate: self.member(m.candidate, "probe.candidate")?,
                    phase: m.phase,
                    hops: m.hops,
                    to_right: m.to_right,
                    round: m.round,
                }
            }
            Body::Reply(m) => {
                if m.phase > MAX_PHASE {
                    return Err(WireError::InvalidField("reply.phase"));
                }
                Message::Reply {
                    candidate: self.member(m.candidate, "reply.candidate")?,
                    phase: m.phase,
                    to_right: m.to_right,
                    round: m.round,
                }
            }
            Body::Terminate(m) => Message::Terminate {
                leader: self.member(m.leader, "terminate.leader")?,
                epoch: m.epoch,
            },
            Body::RequestVote(m) => Message::RequestVote {
                term: m.term,
                pre_vote: m.pre_vote,
                transfer: m.transfer,
            },
            Body::Vote(m) => Message::Vote {
                term: m.term,
                granted: m.granted,
                pre_vote: m.pre_vote,
            },
            Body::Heartbeat(m) => Message::Heartbeat {
                term: m.term,
                leader: self.member(m.leader, "heartbeat.leader")?,
            },
            Body::HeartbeatAck(m) => Message::HeartbeatAck {
                term: m.term,
                leader: match m.leader {
                    0 => 0,
                    l => self.member(l, "heartbeat_ack.leader")?,
                },
            },
            Body::Resign(m) => Message::Resign { epoch: m.epoch },
            Body::TimeoutNow(m) => Message::TimeoutNow { term: m.term },
            Body::Priority(m) => Message::Priority {
                term: m.term,
                priority: m.priority,
            },
            Body::Handoff(m) => Message::Handoff {
                epoch: m.epoch,
                to: self.member(m.to, "handoff.to")?,
            },
            Body::AckOnly(_) | Body::Config(_) => return Err(WireError::InvalidField("body")),
        })
    }
}

fn tag_to_proto(t: &ElectionTag) -> Option<proto::ElectionTag> {
    Some(proto::ElectionTag {
        initiator: t.initiator,
        seq: t.seq,
    })
}

fn to_body(m: &Message) -> Body {
    match m {
        Message::Election { tag, epoch } => Body::Election(proto::Election {
            tag: tag_to_proto(tag),
            epoch: *epoch,
        }),
        Message::Ok { responder, tag } => Body::Ok(proto::Ok {
            responder: *responder,
            tag: tag_to_proto(tag),
        }),
        Message::Coordinator { leader, epoch, tag } => Body::Coordinator(proto::Coordinator {
            leader: *leader,
            epoch: *epoch,
            tag: tag_to_proto(tag),
        }),
        Message::YouAreCoordinator { tag, epoch } => {
            Body::YouAreCoordinator(proto::YouAreCoordinator {
                tag: tag_to_proto(tag),
                epoch: *epoch,
            })
        }
        Message::RingElection {
            initiator,
            ids,
            epoch,
        } => Body::RingElection(proto::RingElection {
            initiator: *initiator,
            ids: ids.clone(),
            epoch: *epoch,
        }),
        Message::RingCoordinator {
            initiator,
            leader,
            epoch,
        } => Body::RingCoordinator(proto::RingCoordinator {
            initiator: *initiator,
            leader: *leader,
            epoch: *epoch,
        }),
        Message::LcrElection { candidate, round } => Body::LcrElection(proto::LcrElection {
            candidate: *candidate,
            round: *round,
        }),
        Message::LcrElected { leader, epoch } => Body::LcrElected(proto::LcrElected {
            leader: *leader,
            epoch: *epoch,
        }),
        Message::Probe {
            candidate,
            phase,
            hops,
            to_right,
            round,
        } => Body::Probe(proto::Probe {
            candidate: *candidate,
            phase: *phase,
            hops: *hops,
            to_right: *to_right,
            round: *round,
        }),
        Message::Reply {
            candidate,
            phase,
            to_right,
            round,
        } => Body::Reply(proto::Reply {
            candidate: *candidate,
            phase: *phase,
            to_right: *to_right,
            round: *round,
        }),
        Message::Terminate { leader, epoch } => Body::Terminate(proto::Terminate {
            leader: *leader,
            epoch: *epoch,
        }),
        Message::RequestVote {
            term,
            pre_vote,
            transfer,
        } => Body::RequestVote(proto::RequestVote {
            term: *term,
            pre_vote: *pre_vote,
            transfer: *transfer,
        }),
        Message::Vote {
            term,
            granted,
            pre_vote,
        } => Body::Vote(proto::Vote {
            term: *term,
            granted: *granted,
            pre_vote: *pre_vote,
        }),
        Message::Heartbeat { term, leader } => Body::Heartbeat(proto::Heartbeat {
            term: *term,
            leader: *leader,
        }),
        Message::HeartbeatAck { term, leader } => Body::HeartbeatAck(proto::HeartbeatAck {
            term: *term,
            leader: *leader,
        }),
        Message::Resign { epoch } => Body::Resign(proto::Resign { epoch: *epoch }),
        Message::TimeoutNow { term } => Body::TimeoutNow(proto::TimeoutNow { term: *term }),
        Message::Priority { term, priority } => Body::Priority(proto::Priority {
            term: *term,
            priority: *priority,
        }),
        Message::Handoff { epoch, to } => Body::Handoff(proto::Handoff {
            epoch: *epoch,
            to: *to,
        }),
    }
}

/// The canonical encoding of `env` (docs/wire.md §3), appended to `buf`: every field
/// in ascending field-number order, defaults left out.
///
/// prost writes a oneof where its lowest number (10) falls, so a body numbered above
/// `receiver` (28) — TIMEOUT_NOW (29), HANDOFF (30), PRIORITY (31) — would land between
/// `key_id` (9) and `counter` (27). The envelope is therefore written in parts: the
/// header fields below the body (1–9), then the body and the trailer (`counter` 27,
/// `receiver` 28) in the order of their numbers. `env` is left as it was.
pub fn encode_canonical(env: &mut proto::Envelope, buf: &mut Vec<u8>) {
    let body = env.body.take();
    let (counter, receiver) = (env.counter, env.receiver);
    (env.counter, env.receiver) = (0, 0);
    // prost writes the fields of a message in ascending number order; with no body and
    // no trailer that is exactly fields 1–9. (Writing to a Vec cannot fail.)
    let _ = env.encode(buf);
    (env.counter, env.receiver) = (counter, receiver);
    let trailer = proto::Envelope {
        counter,
        receiver,
        ..Default::default()
    };
    let at = buf.len();
    if let Some(b) = &body {
        b.encode(buf);
    }
    let body_len = buf.len() - at;
    let _ = trailer.encode(buf);
    // The body's field number, read back from the key just written.
    let number = prost::encoding::decode_key(&mut &buf[at..at + body_len]).map_or(0, |(n, _)| n);
    if number > TRAILER_FIRST {
        buf[at..].rotate_left(body_len);
    }
    env.body = body;
}

/// The lowest field number of the envelope's trailer (`counter`): bodies numbered
/// above it are written after the trailer.
const TRAILER_FIRST: u32 = 27;

/// [`encode_canonical`] into a new vector.
pub fn canonical(mut env: proto::Envelope) -> Vec<u8> {
    let mut buf = Vec::with_capacity(128);
    encode_canonical(&mut env, &mut buf);
    buf
}

/// The wire value of each algorithm (`proto/electd.proto`'s `Algorithm`): this match
/// and [`algorithm_from_proto`] are exhaustive, so a new kind or a new proto value
/// does not compile until it is mapped both ways.
fn algorithm_to_proto(k: AlgorithmKind) -> proto::Algorithm {
    match k {
        AlgorithmKind::Bully => proto::Algorithm::Bully,
        AlgorithmKind::ImprovedBully => proto::Algorithm::ImprovedBully,
        AlgorithmKind::Ring => proto::Algorithm::Ring,
        AlgorithmKind::Lcr => proto::Algorithm::Lcr,
        AlgorithmKind::Hs => proto::Algorithm::Hs,
        AlgorithmKind::Raft => proto::Algorithm::Raft,
    }
}

fn algorithm_from_proto(a: proto::Algorithm) -> Option<AlgorithmKind> {
    match a {
        proto::Algorithm::Unspecified => None,
        proto::Algorithm::Bully => Some(AlgorithmKind::Bully),
        proto::Algorithm::ImprovedBully => Some(AlgorithmKind::ImprovedBully),
        proto::Algorithm::Ring => Some(AlgorithmKind::Ring),
        proto::Algorithm::Lcr => Some(AlgorithmKind::Lcr),
        proto::Algorithm::Hs => Some(AlgorithmKind::Hs),
        proto::Algorithm::Raft => Some(AlgorithmKind::Raft),
    }
}

#[cfg(test)]
#[test]
fn algorithm_wire_values_map_both_ways() {
    for k in AlgorithmKind::ALL {
        assert_ne!(algorithm_to_proto(k), proto::Algorithm::Unspecified, "{k}");
        assert_eq!(algorithm_from_proto(algorithm_to_proto(k)), Some(k), "{k}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::rng::Rng;
    use crate::security::keyring::{Key, KEY_LEN};

    const ROSTER: [NodeId; 5] = [1, 2, 3, 4, 5];
    const HDR: Header = Header { to: 1, counter: 5 };

    fn ring(b: u8) -> Keyring {
        Keyring::new(Key::new([b; KEY_LEN]))
    }

    fn secure() -> Codec {
        Codec::new("c", &ROSTER, Some(ring(1)))
    }

    fn insecure() -> Codec {
        Codec::new("c", &ROSTER, None)
    }

    fn tag() -> ElectionTag {
        ElectionTag {
            initiator: 1,
            seq: (7 << 12) + 3,
        }
    }

    /// One message of every type.
    fn every_message() -> Vec<Message> {
        vec![
            Message::Election {
                tag: tag(),
                epoch: 4,
            },
            Message::Ok {
                responder: 5,
                tag: tag(),
            },
            Message::Coordinator {
                leader: 5,
                epoch: 9,
                tag: tag(),
            },
            Message::YouAreCoordinator {
                tag: tag(),
                epoch: 2,
            },
            Message::RingElection {
                initiator: 2,
                ids: vec![2, 3, 4],
                epoch: 1,
            },
            Message::RingCoordinator {
                initiator: 2,
                leader: 5,
                epoch: 1,
            },
            Message::LcrElection {
                candidate: 4,
                round: 8,
            },
            Message::LcrElected {
                leader: 5,
                epoch: 3,
            },
            Message::Probe {
                candidate: 3,
                phase: 2,
                hops: 1,
                to_right: true,
                round: 1,
            },
            Message::Reply {
                candidate: 3,
                phase: 2,
                to_right: false,
                round: 1,
            },
            Message::Terminate {
                leader: 5,
                epoch: 6,
            },
            Message::RequestVote {
                term: 12,
                pre_vote: true,
                transfer: false,
            },
            Message::RequestVote {
                term: 13,
                pre_vote: false,
                transfer: true,
            },
            Message::TimeoutNow { term: 14 },
            Message::Handoff { epoch: 15, to: 2 },
            Message::Priority {
                term: 16,
                priority: 130,
            },
            Message::Vote {
                term: 12,
                granted: true,
                pre_vote: false,
            },
            Message::Vote {
                term: 12,
                granted: false,
                pre_vote: true,
            },
            Message::Heartbeat { term: 3, leader: 2 },
            Message::HeartbeatAck { term: 3, leader: 2 },
            Message::Resign { epoch: 7 },
        ]
    }

    /// A datagram of `msg` in the first group that carries it.
    fn datagram(msg: Message) -> Datagram {
        let seq = if msg.kind().is_reliable() { 42 } else { 0 };
        let group = AlgorithmKind::ALL
            .into_iter()
            .find(|k| k.info().carries(msg.kind()));
        Datagram {
            from: 2,
            incarnation: 1_700_000_000_000_000,
            seq,
            ack: 0,
            group: Some(group.expect("some group carries every message")),
            body: Some(msg),
        }
    }

    fn ack() -> Datagram {
        Datagram {
            from: 3,
            incarnation: 9,
            seq: 0,
            ack: 17,
            group: None,
            body: None,
        }
    }

    #[test]
    fn every_message_type_round_trips_signed_and_unsigned() {
        assert_eq!(
            every_message().len(),
            crate::contract::message::MessageType::ALL.len()
        );
        for codec in [secure(), insecure()] {
            for msg in every_message() {
                let d = datagram(msg);
                let bytes = codec.encode(&d, HDR).unwrap();
                assert_eq!(codec.decode(&bytes), Ok((d, HDR)));
            }
            let a = ack();
            assert_eq!(codec.decode(&codec.encode(&a, HDR).unwrap()), Ok((a, HDR)));
        }
    }

    /// The field numbers of a protobuf message's top level, in the order written
    /// (a walker of its own: keys, then varint / length-delimited values skipped).
    fn field_numbers(mut b: &[u8]) -> Vec<u64> {
        fn varint(b: &mut &[u8]) -> u64 {
            let mut v = 0;
            for shift in (0..64).step_by(7) {
                let (&byte, rest) = b.split_first().expect("truncated varint");
                *b = rest;
                v |= u64::from(byte & 0x7f) << shift;
                if byte < 0x80 {
                    break;
                }
            }
            v
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            out.push(key >> 3);
            match key & 7 {
                0 => {
                    varint(&mut b);
                }
                2 => {
                    let n = varint(&mut b) as usize;
                    b = &b[n..];
                }
                w => panic!("wire type {w}"),
            }
        }
        out
    }

    /// docs/wire.md §3: fields in ascending number order, the body included — also
    /// the bodies numbered above `counter` (27) and `receiver` (28).
    #[test]
    fn every_body_is_written_in_ascending_field_order() {
        for codec in [secure(), insecure()] {
            for msg in every_message() {
                let bytes = codec.encode(&datagram(msg.clone()), HDR).unwrap();
                let numbers = field_numbers(&bytes);
                assert!(
                    numbers.windows(2).all(|w| w[0] < w[1]),
                    "{msg:?}: fields {numbers:?}"
                );
                assert!(numbers.ends_with(&[27, 28]) || numbers.last() > Some(&28));
            }
        }
    }

    /// The documented order of a body above the trailer is the one accepted: a
    /// TIMEOUT_NOW written after `receiver` decodes, one written where prost puts a
    /// oneof (before `counter`) is `decode`.
    #[test]
    fn a_high_numbered_body_after_the_trailer_is_the_canonical_one() {
        let d = datagram(Message::TimeoutNow { term: 14 });
        let env = envelope(&d);
        // prost's own order: the body where its lowest number (10) falls.
        let prost_order = env.encode_to_vec();
        let c = insecure();
        assert_eq!(c.decode(&prost_order), Err(WireError::Decode));
        // Hand-assembled: the header without trailer and body, then counter 5 and
        // receiver 1 (d8 01 05, e0 01 01), then field 29 (ea 01) holding term 14.
        let mut head = env.clone();
        (head.counter, head.receiver, head.body) = (0, 0, None);
        let mut bytes = head.encode_to_vec();
        bytes.extend_from_slice(&[
            0xd8, 0x01, 0x05, 0xe0, 0x01, 0x01, 0xea, 0x01, 0x02, 0x08, 0x0e,
        ]);
        assert_eq!(c.decode(&bytes), Ok((d, HDR)));
    }

    /// docs/wire.md §7: a body travels only in its own group; any other is dropped as
    /// `algorithm` (an ELECTION under RAFT, a TIMEOUT_NOW under BULLY, …).
    #[test]
    fn a_body_of_another_group_is_dropped_as_algorithm() {
        let c = insecure();
        let mut refused = 0;
        for msg in every_message() {
            for k in AlgorithmKind::ALL {
                let mut d = datagram(msg.clone());
                d.group = Some(k);
                let got = c.decode(&c.encode(&d, HDR).unwrap());
                if k.info().carries(msg.kind()) {
                    assert_eq!(got, Ok((d, HDR)));
                } else {
                    assert_eq!(got, Err(WireError::Algorithm), "{msg:?} in {k}");
                    refused += 1;
                }
            }
        }
        // Each of the 6 groups refuses at least the bodies of another family.
        assert!(refused >= AlgorithmKind::ALL.len(), "{refused}");
        for (msg, k) in [
            (
                Message::Election {
                    tag: tag(),
                    epoch: 1,
                },
                AlgorithmKind::Raft,
            ),
            (Message::TimeoutNow { term: 1 }, AlgorithmKind::Bully),
            (
                Message::Priority {
                    term: 1,
                    priority: 9,
                },
                AlgorithmKind::Raft,
            ),
        ] {
            let mut d = datagram(msg);
            d.group = Some(k);
            assert_eq!(
                c.decode(&c.encode(&d, HDR).unwrap()),
                Err(WireError::Algorithm)
            );
        }
    }

    /// `heartbeat_ack.leader`: 0 (none known; Raft; a peer from before the field) or a
    /// member of the roster.
    #[test]
    fn heartbeat_ack_leader_is_none_or_a_member() {
        let c = insecure();
        for leader in [0, 2] {
            let d = datagram(Message::HeartbeatAck { term: 3, leader });
            assert_eq!(c.decode(&c.encode(&d, HDR).unwrap()), Ok((d, HDR)));
        }
        let d = datagram(Message::HeartbeatAck {
            term: 3,
            leader: 99,
        });
        assert_eq!(
            c.decode(&c.encode(&d, HDR).unwrap()),
            Err(WireError::InvalidField("heartbeat_ack.leader"))
        );
    }

    #[test]
    fn every_algorithm_round_trips() {
        for k in AlgorithmKind::ALL {
            let mut d = datagram(Message::Resign { epoch: 1 });
            d.group = Some(k);
            let c = secure();
            assert_eq!(
                c.decode(&c.encode(&d, HDR).unwrap()).unwrap().0.group,
                Some(k)
            );
        }
    }

    #[test]
    fn empty_and_all_default_datagrams_are_invalid() {
        let c = insecure();
        assert_eq!(c.decode(&[]), Err(WireError::Empty));
        let default = proto::Envelope::default().encode_to_vec();
        assert_eq!(c.decode(&default), Err(WireError::Empty));
        // Explicit zeros on the wire decode to the default envelope too.
        assert_eq!(c.decode(&[0x08, 0x00]), Err(WireError::Empty));
        // A body but nothing else: version 0.
        let only_body = proto::Envelope {
            body: Some(Body::AckOnly(proto::Ack {})),
            ..Default::default()
        };
        assert_eq!(
            c.decode(&only_body.encode_to_vec()),
            Err(WireError::Version(0))
        );
    }

    fn envelope(d: &Datagram) -> proto::Envelope {
        proto::Envelope::decode(insecure().encode(d, HDR).unwrap().as_slice()).unwrap()
    }

    fn check(env: proto::Envelope, want: &str) {
        let got = insecure().decode(&env.encode_to_vec());
        assert_eq!(got.map_err(|e| e.reason()), Err(want), "{env:?}");
    }

    #[test]
    fn header_fields_are_checked() {
        let base = envelope(&datagram(Message::Resign { epoch: 1 }));
        check(
            proto::Envelope {
                version: 2,
                ..base.clone()
            },
            "version",
        );
        check(
            proto::Envelope {
                cluster: "other".into(),
                ..base.clone()
            },
            "cluster",
        );
        check(
            proto::Envelope {
                sender: 0,
                ..base.clone()
            },
            "unknown_sender",
        );
        check(
            proto::Envelope {
                sender: 99,
                ..base.clone()
            },
            "unknown_sender",
        );
        check(
            proto::Envelope {
                incarnation: 0,
                ..base.clone()
            },
            "invalid_field",
        );
        check(
            proto::Envelope {
                counter: 0,
                ..base.clone()
            },
            "invalid_field",
        );
        check(
            proto::Envelope {
                receiver: 6,
                ..base.clone()
            },
            "invalid_field",
        );
        check(
            proto::Envelope {
                algorithm: 0,
                ..base.clone()
            },
            "algorithm",
        );
        check(
            proto::Envelope {
                algorithm: 77,
                ..base.clone()
            },
            "algorithm",
        );
        check(
            proto::Envelope {
                body: None,
                ..base.clone()
            },
            "empty",
        );
        // A reliable body needs a sequence, a heartbeat must not have one.
        check(
            proto::Envelope {
                seq: 0,
                ..base.clone()
            },
            "invalid_field",
        );
        let hb = envelope(&datagram(Message::Heartbeat { term: 1, leader: 2 }));
        check(proto::Envelope { seq: 5, ..hb }, "invalid_field");
        let a = envelope(&ack());
        check(
            proto::Envelope {
                ack: 0,
                ..a.clone()
            },
            "invalid_field",
        );
        check(proto::Envelope { algorithm: 1, ..a }, "algorithm");
    }

    #[test]
    fn body_fields_are_checked() {
        let bad = [
            Message::Ok {
                responder: 0,
                tag: tag(),
            },
            Message::Coordinator {
                leader: 6,
                epoch: 1,
                tag: tag(),
            },
            Message::RingElection {
                initiator: 2,
                ids: vec![2, 9],
                epoch: 1,
            },
            Message::RingElection {
                initiator: 2,
                ids: vec![2; 11],
                epoch: 1,
            },
            Message::LcrElection {
                candidate: 0,
                round: 1,
            },
            Message::Probe {
                candidate: 3,
                phase: 32,
                hops: 1,
                to_right: true,
                round: 1,
            },
            Message::Reply {
                candidate: 3,
                phase: 40,
                to_right: true,
                round: 1,
            },
            Message::Heartbeat { term: 1, leader: 8 },
        ];
        for m in bad {
            check(envelope(&datagram(m)), "invalid_field");
        }
        // An ELECTION without its tag.
        let mut env = envelope(&datagram(Message::Election {
            tag: tag(),
            epoch: 1,
        }));
        env.body = Some(Body::Election(proto::Election {
            tag: None,
            epoch: 1,
        }));
        check(env, "invalid_field");
    }

    #[test]
    fn authentication() {
        let d = datagram(Message::Coordinator {
            leader: 5,
            epoch: 2,
            tag: tag(),
        });
        let signed = secure().encode(&d, HDR).unwrap();
        // Unsigned datagrams are refused by a node with a key…
        let unsigned = insecure().encode(&d, HDR).unwrap();
        assert_eq!(secure().decode(&unsigned), Err(WireError::BadTag));
        // …as are datagrams signed with a key it does not have…
        let other = Codec::new("c", &ROSTER, Some(ring(2)))
            .encode(&d, HDR)
            .unwrap();
        assert_eq!(
            secure().decode(&other).map_err(|e| e.reason()),
            Err("no_key")
        );
        // …or whose content changed after signing.
        let mut env = proto::Envelope::decode(signed.as_slice()).unwrap();
        env.sender = 4;
        assert_eq!(
            secure().decode(&env.encode_to_vec()),
            Err(WireError::BadTag)
        );
        // A keyring accepts every key it holds.
        let both = Keyring::parse(&format!(
            "{}\n{}",
            crate::security::keyring::to_hex(&[2; KEY_LEN]),
            crate::security::keyring::to_hex(&[1; KEY_LEN])
        ))
        .unwrap();
        let rotating = Codec::new("c", &ROSTER, Some(both));
        assert_eq!(rotating.decode(&signed), Ok((d.clone(), HDR)));
        assert_eq!(rotating.decode(&other), Ok((d, HDR)));
    }

    #[test]
    fn every_single_bit_flip_of_a_signed_datagram_is_rejected() {
        let c = secure();
        for msg in every_message() {
            let bytes = c.encode(&datagram(msg), HDR).unwrap();
            for i in 0..bytes.len() * 8 {
                let mut m = bytes.clone();
                m[i / 8] ^= 1 << (i % 8);
                assert!(c.decode(&m).is_err(), "bit {i} of {bytes:?}");
            }
        }
    }

    #[test]
    fn truncations_are_rejected() {
        let c = secure();
        for msg in every_message() {
            let bytes = c.encode(&datagram(msg), HDR).unwrap();
            for n in 0..bytes.len() {
                assert!(c.decode(&bytes[..n]).is_err(), "prefix {n} of {bytes:?}");
            }
        }
    }

    #[test]
    fn random_and_mutated_bytes_never_panic() {
        let mut rng = Rng::new(5);
        let valid: Vec<Vec<u8>> = every_message()
            .into_iter()
            .map(|m| insecure().encode(&datagram(m), HDR).unwrap())
            .collect();
        for codec in [secure(), insecure()] {
            for round in 0..20_000 {
                let bytes: Vec<u8> = if round % 2 == 0 {
                    let n = rng.below(300) as usize;
                    (0..n).map(|_| rng.next_u64() as u8).collect()
                } else {
                    // Mutate a valid datagram: a few random bytes, maybe cut short.
                    let mut b = valid[rng.below(valid.len() as u64) as usize].clone();
                    for _ in 0..=rng.below(3) {
                        let i = rng.below(b.len() as u64) as usize;
                        b[i] = rng.next_u64() as u8;
                    }
                    let keep = b.len() - rng.below(3) as usize;
                    b.truncate(keep);
                    b
                };
                if let Err(e) = codec.decode(&bytes) {
                    assert!(WireError::REASONS.contains(&e.reason()));
                }
            }
        }
        let big = vec![0u8; MAX_DATAGRAM + 1];
        assert_eq!(insecure().decode(&big), Err(WireError::Oversize));
    }

    #[test]
    fn oversize_datagrams_are_not_encoded() {
        let roster: Vec<NodeId> = (1..=10_000).collect();
        let c = Codec::new("c", &roster, None);
        let mut d = datagram(Message::Resign { epoch: 1 });
        d.body = Some(Message::RingElection {
            initiator: 1,
            ids: (1..=9_000).collect(),
            epoch: 1,
        });
        assert_eq!(c.encode(&d, HDR), Err(WireError::Oversize));
    }
}
