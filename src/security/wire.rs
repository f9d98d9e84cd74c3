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

mod body;

use body::{algorithm_from_proto, algorithm_to_proto, to_body};

thread_local! {
    /// The re-encoding buffer of [`Codec::decode`] (at most [`MAX_DATAGRAM`] bytes).
    static SCRATCH: std::cell::RefCell<Vec<u8>> =
        std::cell::RefCell::new(Vec::with_capacity(MAX_DATAGRAM));
}

/// Wire version written into every envelope.
pub(crate) const WIRE_VERSION: u32 = 1;
/// Largest datagram electd sends or accepts (well under the 65 507 bytes of UDP/IPv4;
/// an envelope with a ring list of 2 000 ids still fits).
pub(crate) const MAX_DATAGRAM: usize = 16 * 1024;
/// Largest Hirschberg–Sinclair phase accepted (2^phase hops must fit a u32).
const MAX_PHASE: u32 = 31;

/// Receiver id of a datagram sent to the multicast group (every member at once); its
/// counter runs in the sender's group sequence, apart from the per-receiver ones.
pub(crate) const GROUP: NodeId = 0;

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
    pub(crate) fn reason(&self) -> &'static str {
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
    pub(crate) const REASONS: [&'static str; 10] = [
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
    pub(crate) fn set_keys(&mut self, keys: Option<Keyring>) {
        self.keys = keys;
    }

    /// Does this codec make and check tags (not `insecure`)?
    pub(crate) fn is_authenticated(&self) -> bool {
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
    pub(crate) fn heartbeat_prefix(
        &self,
        leader: NodeId,
        incarnation: u64,
        kind: AlgorithmKind,
        term: u64,
    ) -> (Vec<u8>, Vec<bool>) {
        self.liveness_prefix(
            leader,
            incarnation,
            kind,
            Message::Heartbeat { term, leader },
        )
    }

    /// [`Codec::heartbeat_prefix`] for the answers to this node's heartbeats that
    /// `follower` (of `incarnation`) sends in group `kind`: `heartbeat_ack` with `term`
    /// and `leader` (Raft's name no leader: 0; `[lease] require_quorum`'s name the
    /// leader answered).
    pub(crate) fn heartbeat_ack_prefix(
        &self,
        follower: NodeId,
        incarnation: u64,
        kind: AlgorithmKind,
        term: u64,
        leader: NodeId,
    ) -> (Vec<u8>, Vec<bool>) {
        self.liveness_prefix(
            follower,
            incarnation,
            kind,
            Message::HeartbeatAck { term, leader },
        )
    }

    /// The first bytes, up to the end of the body, of every datagram `from` (of
    /// `incarnation`) sends carrying `body` alone in group `kind`, with no link sequence
    /// or acknowledgement, under this node's primary key id; `compare` is false on the
    /// authentication tag's bytes.
    fn liveness_prefix(
        &self,
        from: NodeId,
        incarnation: u64,
        kind: AlgorithmKind,
        body: Message,
    ) -> (Vec<u8>, Vec<bool>) {
        // The envelope `encode` makes of such a datagram; counter and receiver 0 are
        // left out, so the encoding ends with the body.
        let beat = Datagram {
            from,
            incarnation,
            seq: 0,
            ack: 0,
            group: Some(kind),
            body: Some(body),
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

    /// Encode (and sign) a BEATS datagram (docs/wire.md §12): node `from`, of
    /// `incarnation`, tells `h.to` the liveness messages of several groups at once.
    /// `beats` holds at most one message of each liveness type per group (heartbeat,
    /// heartbeat ack, priority); anything else is `invalid_field`.
    pub fn encode_beats(
        &self,
        from: NodeId,
        incarnation: u64,
        beats: &[(AlgorithmKind, &Message)],
        h: Header,
    ) -> Result<Vec<u8>, WireError> {
        let head = Datagram {
            from,
            incarnation,
            seq: 0,
            ack: 0,
            group: None,
            body: None,
        };
        let mut env = self.envelope(&head, h);
        env.body = Some(Body::Beats(Box::new(body::beats_to_proto(beats)?)));
        self.seal(env)
    }

    /// Every byte of each BEATS `leader` (of `incarnation`) sends `to` whose messages are
    /// exactly the heartbeats of `groups` (group, term), unacknowledging and under this
    /// node's primary key id, when its counter is a varint of `counter_len` bytes (1–10);
    /// `compare` is false on the authentication tag's and the counter's bytes. A BEATS
    /// body follows the counter and the receiver (field 33), so unlike
    /// [`Codec::heartbeat_prefix`] this is the whole datagram, one per counter length
    /// (see [`crate::daemon::heartbeats`]).
    pub(crate) fn beats_prefix(
        &self,
        leader: NodeId,
        incarnation: u64,
        groups: &[(AlgorithmKind, u64)],
        to: NodeId,
        counter_len: u32,
    ) -> Option<(Vec<u8>, Vec<bool>)> {
        if !(1..=10).contains(&counter_len) {
            return None;
        }
        let beats: Vec<Message> = groups
            .iter()
            .map(|&(_, term)| Message::Heartbeat { term, leader })
            .collect();
        let refs: Vec<(AlgorithmKind, &Message)> = groups.iter().map(|g| g.0).zip(&beats).collect();
        let body = Body::Beats(Box::new(body::beats_to_proto(&refs).ok()?));
        let head = Datagram {
            from: leader,
            incarnation,
            seq: 0,
            ack: 0,
            group: None,
            body: None,
        };
        // The least and the greatest counter of that length: every byte differs.
        let shift = 7 * (counter_len - 1);
        let low = 1u64.checked_shl(shift)?;
        let high = if counter_len >= 10 {
            u64::MAX
        } else {
            (1u64 << (7 * counter_len)) - 1
        };
        let tag_len = self.keys.as_ref().map(|k| k.sign(b"").1.len());
        let make = |counter: u64, fill: u8| {
            let mut env = self.envelope(&head, Header { to, counter });
            env.body = Some(body.clone());
            if let (Some(keys), Some(n)) = (&self.keys, tag_len) {
                env.key_id = keys.primary().id;
                env.tag = vec![fill; n];
            }
            canonical(env)
        };
        let (a, b) = (make(low, 0), make(high, 0xff));
        if a.len() != b.len() {
            return None;
        }
        let compare = a.iter().zip(&b).map(|(x, y)| x == y).collect();
        Some((a, compare))
    }

    /// Decode, authenticate and validate one datagram (see the module documentation).
    /// Allocates only what the datagram's own fields hold.
    pub fn decode(&self, bytes: &[u8]) -> Result<(Datagram, Header), WireError> {
        self.decode_with_config(bytes).map(|(d, h, _)| (d, h))
    }

    /// [`Codec::decode`], and the configuration digest when the datagram is a CONFIG
    /// (docs/wire.md §11). A CONFIG or a BEATS comes back as a datagram with neither
    /// group nor body and `ack` 0, which a node ignores ([`Codec::decode_payload`]
    /// hands over a BEATS' messages).
    pub(crate) fn decode_with_config(
        &self,
        bytes: &[u8],
    ) -> Result<(Datagram, Header, Option<u64>), WireError> {
        self.decode_payload(bytes).map(|(d, h, x)| {
            let digest = match x {
                Extra::Config(c) => Some(c),
                _ => None,
            };
            (d, h, digest)
        })
    }

    /// [`Codec::decode`], and what a node-level body carries ([`Extra`]): a CONFIG's
    /// digest, a BEATS' messages (docs/wire.md §11, §12). For those the datagram
    /// returned is the envelope's sender and incarnation alone (no group, no body,
    /// `ack` 0).
    pub fn decode_payload(&self, bytes: &[u8]) -> Result<(Datagram, Header, Extra), WireError> {
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
            return Ok((d, header, Extra::None));
        }
        if let Body::Beats(b) = body {
            if env.seq != 0 || env.ack != 0 {
                return Err(WireError::InvalidField("beats"));
            }
            let d = groupless_head(&env)?;
            let beats = self.beats_of(&d, *b)?;
            return Ok((d, header, Extra::Beats(beats)));
        }
        if let Body::Config(c) = body {
            if env.seq != 0 || env.ack != 0 || c.digest == 0 {
                return Err(WireError::InvalidField("config"));
            }
            let d = groupless_head(&env)?;
            return Ok((d, header, Extra::Config(c.digest)));
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
        Ok((d, header, Extra::None))
    }
}

/// What a node-level body hands over besides its envelope ([`Codec::decode_payload`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Extra {
    /// Nothing: the datagram is all there is (a group's message or a bare ack).
    None,
    /// A CONFIG: the sender's configuration digest (docs/wire.md §11).
    Config(u64),
    /// A BEATS (docs/wire.md §12): each message as the datagram it would have been
    /// alone (sender, incarnation, group, body; `seq` and `ack` 0), in the order of
    /// the body (by group, then heartbeat, heartbeat ack, priority), or why that
    /// message alone is dropped.
    Beats(Vec<Result<Datagram, WireError>>),
}

/// The canonical encoding of `env` (docs/wire.md §3), appended to `buf`: every field
/// in ascending field-number order, defaults left out.
///
/// prost writes a oneof where its lowest number (10) falls, so a body numbered above
/// `receiver` (28) — TIMEOUT_NOW (29), HANDOFF (30), PRIORITY (31) — would land between
/// `key_id` (9) and `counter` (27). The envelope is therefore written in parts: the
/// header fields below the body (1–9), then the body and the trailer (`counter` 27,
/// `receiver` 28) in the order of their numbers. `env` is left as it was.
pub(crate) fn encode_canonical(env: &mut proto::Envelope, buf: &mut Vec<u8>) {
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

/// The head of a body that belongs to no group (BEATS, CONFIG): its envelope names no
/// algorithm (else `algorithm`), and it carries no sequence number or ack.
fn groupless_head(env: &proto::Envelope) -> Result<Datagram, WireError> {
    if env.algorithm != proto::Algorithm::Unspecified as i32 {
        return Err(WireError::Algorithm);
    }
    Ok(Datagram {
        from: env.sender,
        incarnation: env.incarnation,
        seq: 0,
        ack: 0,
        group: None,
        body: None,
    })
}

#[cfg(test)]
mod tests;
