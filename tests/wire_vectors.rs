//! The test vectors of docs/wire.md against the real codec: every ```` ```vector ````
//! block of the document is decoded with prost, rendered field by field as the
//! document describes it and compared with the block's `envelope:` and `body:` lines;
//! then it goes through a receiving node's gate ([`electd::security::gate::Gate`], which runs
//! `wire`, `keyring` and `replay`) and must be accepted or dropped for the reason the
//! block names. Accepted vectors must also be exactly what electd's own encoder
//! produces for the decoded datagram (canonical encoding, deterministic tag).
//!
//! Independently of prost and of electd's keyring, the test recomputes each vector's
//! key id (first four bytes of SHA-256 of the key, big-endian) and, for the accepted
//! ones, the HMAC-SHA256 tag over the datagram with the tag field's bytes cut out, as
//! the document tells a third party to do.
//!
//! `cargo test --test wire_vectors -- --ignored --nocapture print_vectors` prints the
//! vector blocks from their construction below (how the document's blocks were made).

use electd::proto::{self, envelope::Body};
use electd::security::gate::{Gate, GateConfig};
use electd::security::keyring::{Key, Keyring, KEY_LEN};
use electd::security::wire::{Codec, Header};
use electd::NodeId;
use hmac::{Hmac, Mac};
use prost::Message as _;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

const CLUSTER: &str = "prod";
const ROSTER: [NodeId; 5] = [1, 2, 3, 4, 5];
/// 2026-01-01T00:00:00Z in unix microseconds: the senders' incarnation.
const INCARNATION: u64 = 1_767_225_600_000_000;
/// The receiver's clock when the vectors arrive: one second later.
const NOW_US: u64 = INCARNATION + 1_000_000;

fn key_bytes(first: u8) -> [u8; KEY_LEN] {
    std::array::from_fn(|i| first + i as u8)
}

/// The two keys of the document: k1 (00 01 … 1f), the cluster's; k2 (20 21 … 3f), a
/// key the receiver does not have.
fn key(name: &str) -> [u8; KEY_LEN] {
    match name {
        "k1" => key_bytes(0x00),
        "k2" => key_bytes(0x20),
        other => panic!("unknown key {other}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// The document's rendering of an envelope (everything but the body), fields in
/// field-number order, every field shown (defaults included).
fn render_envelope(e: &proto::Envelope) -> String {
    let algorithm = proto::Algorithm::try_from(e.algorithm)
        .map(|a| a.as_str_name().to_string())
        .unwrap_or_else(|_| format!("{}", e.algorithm));
    format!(
        "version={} cluster={:?} sender={} incarnation={} seq={} ack={} algorithm={} \
         tag={} key_id={:#010x} counter={} receiver={}",
        e.version,
        e.cluster,
        e.sender,
        e.incarnation,
        e.seq,
        e.ack,
        algorithm,
        if e.tag.is_empty() {
            "none".to_string()
        } else {
            format!("{}-bytes", e.tag.len())
        },
        e.key_id,
        e.counter,
        e.receiver
    )
}

fn tag(t: &Option<proto::ElectionTag>) -> String {
    match t {
        Some(t) => format!("tag={{initiator={} seq={}}}", t.initiator, t.seq),
        None => "tag=absent".into(),
    }
}

/// The document's rendering of a body: the oneof field's name, then its fields.
fn render_body(b: &Option<Body>) -> String {
    match b {
        None => "absent".into(),
        Some(Body::Election(m)) => format!("election {} epoch={}", tag(&m.tag), m.epoch),
        Some(Body::Ok(m)) => format!("ok responder={} {}", m.responder, tag(&m.tag)),
        Some(Body::Coordinator(m)) => format!(
            "coordinator leader={} epoch={} {}",
            m.leader,
            m.epoch,
            tag(&m.tag)
        ),
        Some(Body::YouAreCoordinator(m)) => {
            format!("you_are_coordinator {} epoch={}", tag(&m.tag), m.epoch)
        }
        Some(Body::RingElection(m)) => format!(
            "ring_election initiator={} ids={:?} epoch={}",
            m.initiator, m.ids, m.epoch
        ),
        Some(Body::RingCoordinator(m)) => format!(
            "ring_coordinator initiator={} leader={} epoch={}",
            m.initiator, m.leader, m.epoch
        ),
        Some(Body::LcrElection(m)) => {
            format!("lcr_election candidate={} round={}", m.candidate, m.round)
        }
        Some(Body::LcrElected(m)) => format!("lcr_elected leader={} epoch={}", m.leader, m.epoch),
        Some(Body::Probe(m)) => format!(
            "probe candidate={} phase={} hops={} to_right={} round={}",
            m.candidate, m.phase, m.hops, m.to_right, m.round
        ),
        Some(Body::Reply(m)) => format!(
            "reply candidate={} phase={} to_right={} round={}",
            m.candidate, m.phase, m.to_right, m.round
        ),
        Some(Body::Terminate(m)) => format!("terminate leader={} epoch={}", m.leader, m.epoch),
        Some(Body::RequestVote(m)) => format!(
            "request_vote term={} pre_vote={}{}",
            m.term,
            m.pre_vote,
            if m.transfer { " transfer=true" } else { "" }
        ),
        Some(Body::Vote(m)) => format!(
            "vote term={} granted={} pre_vote={}",
            m.term, m.granted, m.pre_vote
        ),
        Some(Body::Heartbeat(m)) => format!("heartbeat term={} leader={}", m.term, m.leader),
        Some(Body::HeartbeatAck(m)) => format!("heartbeat_ack term={} leader={}", m.term, m.leader),
        Some(Body::Resign(m)) => format!("resign epoch={}", m.epoch),
        Some(Body::TimeoutNow(m)) => format!("timeout_now term={}", m.term),
        Some(Body::Handoff(m)) => format!("handoff epoch={} to={}", m.epoch, m.to),
        Some(Body::Priority(m)) => format!("priority term={} priority={}", m.term, m.priority),
        Some(Body::AckOnly(_)) => "ack_only".into(),
        Some(Body::Config(m)) => format!("config digest={:#018x}", m.digest),
    }
}

/// One ```vector block.
#[derive(Debug, Default)]
struct Vector {
    fields: BTreeMap<String, String>,
}

impl Vector {
    fn get(&self, k: &str) -> &str {
        self.fields
            .get(k)
            .unwrap_or_else(|| panic!("vector {:?} has no {k}:", self.fields.get("name")))
    }
}

fn document_vectors() -> Vec<Vector> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/wire.md");
    let text = std::fs::read_to_string(path).expect("docs/wire.md");
    let mut out = Vec::new();
    let mut cur: Option<Vector> = None;
    let mut last_key = String::new();
    for line in text.lines() {
        match (&mut cur, line.trim_end()) {
            (None, "```vector") => cur = Some(Vector::default()),
            (Some(_), "```") => out.push(cur.take().unwrap()),
            (Some(v), l) => {
                if let Some((k, val)) = l.split_once(':').filter(|(k, _)| !k.starts_with(' ')) {
                    last_key = k.trim().to_string();
                    v.fields.insert(last_key.clone(), val.trim().to_string());
                } else {
                    // A continuation line (long hex).
                    let e = v.fields.entry(last_key.clone()).or_default();
                    e.push(' ');
                    e.push_str(l.trim());
                }
            }
            _ => {}
        }
    }
    assert!(cur.is_none(), "unterminated ```vector block");
    out
}

fn gate(me: NodeId) -> Gate {
    Gate::new(GateConfig {
        me,
        cluster: CLUSTER.into(),
        roster: ROSTER.to_vec(),
        keys: Some(Keyring::new(Key::new(key("k1")))),
        sources: None,
        group: false,
    })
}

/// Key id as the document defines it, computed without electd's keyring.
fn key_id(k: &[u8; KEY_LEN]) -> u32 {
    let d = Sha256::digest(k);
    u32::from_be_bytes([d[0], d[1], d[2], d[3]]).max(1)
}

/// Cut the tag field (number 8, wire type 2: byte 0x42, a one-byte length 0x20 and 32
/// bytes) out of a datagram: what the HMAC covers.
fn without_tag(bytes: &[u8]) -> Vec<u8> {
    let tag_value: Vec<u8> = proto::Envelope::decode(bytes).unwrap().tag;
    let mut needle = vec![0x42, tag_value.len() as u8];
    needle.extend_from_slice(&tag_value);
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the tag field is in the datagram");
    [&bytes[..at], &bytes[at + needle.len()..]].concat()
}

#[test]
fn the_documents_vectors_hold_against_the_codec() {
    let vectors = document_vectors();
    assert!(
        vectors.len() >= 10,
        "docs/wire.md has {} vectors",
        vectors.len()
    );
    let by_name: BTreeMap<&str, &Vector> = vectors.iter().map(|v| (v.get("name"), v)).collect();
    let mut accepted = 0;
    let mut reasons = std::collections::BTreeSet::new();
    for v in &vectors {
        let name = v.get("name");
        let bytes = unhex(v.get("hex"));
        let k = key(v.get("key"));
        // The key id the document states is the one derived from the key.
        let kid = u32::from_str_radix(v.get("key_id").trim_start_matches("0x"), 16).unwrap();
        assert_eq!(kid, key_id(&k), "{name}: key_id");
        assert_eq!(kid, Key::new(k).id, "{name}: electd derives another key id");

        // Field by field, as the document renders it.
        match proto::Envelope::decode(bytes.as_slice()) {
            Ok(env) => {
                assert_eq!(render_envelope(&env), v.get("envelope"), "{name}: envelope");
                assert_eq!(render_body(&env.body), v.get("body"), "{name}: body");
            }
            Err(e) => assert_eq!(v.get("envelope"), "not protobuf", "{name}: {e}"),
        }

        // Through a receiving node's gate; `after:` vectors arrive first.
        let me: NodeId = v.get("at").trim_start_matches("node ").parse().unwrap();
        let mut g = gate(me);
        if let Some(before) = v.fields.get("after") {
            let first = by_name[before.as_str()];
            g.open(&unhex(first.get("hex")), None, NOW_US)
                .unwrap_or_else(|e| panic!("{name}: {before} first: {e}"));
        }
        let verdict = g.open(&bytes, None, NOW_US);
        let expect = v.get("expect");
        match (&verdict, expect) {
            (Ok(d), "accept") => {
                accepted += 1;
                // Canonical and deterministic: electd's encoder gives the same bytes.
                let env = proto::Envelope::decode(bytes.as_slice()).unwrap();
                let codec = Codec::new(CLUSTER, &ROSTER, Some(Keyring::new(Key::new(k))));
                let header = Header {
                    to: env.receiver,
                    counter: env.counter,
                };
                assert_eq!(
                    hex(&codec.encode(d, header).unwrap()),
                    hex(&bytes),
                    "{name}: electd encodes this datagram differently"
                );
                // The tag: HMAC-SHA256 with the key over the datagram minus its tag field.
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&k).unwrap();
                mac.update(&without_tag(&bytes));
                assert_eq!(
                    mac.finalize().into_bytes().to_vec(),
                    env.tag,
                    "{name}: the tag is not the HMAC the document describes"
                );
            }
            (Err(e), want) if want.strip_prefix("drop ") == Some(e.reason()) => {
                reasons.insert(e.reason());
            }
            _ => panic!(
                "{name}: expected {expect}, got {:?}",
                verdict.map_err(|e| e.reason())
            ),
        }
    }
    assert!(accepted >= 4, "only {accepted} accepted vectors");
    assert!(reasons.len() >= 6, "drop reasons covered: {reasons:?}");
}

/// The vectors as they were made: datagrams from electd's own encoder, and for the
/// malformed ones envelopes built by hand and signed the documented way.
#[test]
#[ignore = "prints the vector blocks of docs/wire.md"]
fn print_vectors() {
    use electd::contract::algorithm::AlgorithmKind;
    use electd::contract::message::{ElectionTag, Message};
    use electd::node::Datagram;

    let k1 = Keyring::new(Key::new(key("k1")));
    let k2 = Keyring::new(Key::new(key("k2")));
    let codec = |k: &Keyring| Codec::new(CLUSTER, &ROSTER, Some(k.clone()));
    let dg = |from, seq, ack, group: Option<AlgorithmKind>, body: Option<Message>| Datagram {
        from,
        incarnation: INCARNATION,
        seq,
        ack,
        group,
        body,
    };
    let sign = |mut env: proto::Envelope, k: &Keyring| {
        env.tag.clear();
        env.key_id = k.primary().id;
        let (_, t) = k.sign(&env.encode_to_vec());
        env.tag = t;
        env.encode_to_vec()
    };
    let print =
        |name: &str, key: &str, at: NodeId, bytes: &[u8], expect: &str, after: Option<&str>| {
            println!("```vector");
            println!("name: {name}");
            println!("key: {key}");
            println!("key_id: {:#010x}", Key::new(self::key(key)).id);
            println!("at: node {at}");
            if let Some(a) = after {
                println!("after: {a}");
            }
            let h = hex(bytes);
            for (i, chunk) in h.as_bytes().chunks(64).enumerate() {
                let chunk = std::str::from_utf8(chunk).unwrap();
                if i == 0 {
                    println!("hex: {chunk}");
                } else {
                    println!("     {chunk}");
                }
            }
            match proto::Envelope::decode(bytes) {
                Ok(env) => {
                    println!("envelope: {}", render_envelope(&env));
                    println!("body: {}", render_body(&env.body));
                }
                Err(_) => println!("envelope: not protobuf"),
            }
            println!("expect: {expect}");
            println!("```\n");
        };
    let t = ElectionTag {
        initiator: 5,
        seq: 1,
    };
    let coord = dg(
        5,
        1,
        0,
        Some(AlgorithmKind::Bully),
        Some(Message::Coordinator {
            leader: 5,
            epoch: 1,
            tag: t,
        }),
    );
    let coord_bytes = codec(&k1)
        .encode(&coord, Header { to: 1, counter: 1 })
        .unwrap();
    print("bully-coordinator", "k1", 1, &coord_bytes, "accept", None);

    let ack = dg(1, 0, 1, None, None);
    let ack_bytes = codec(&k1)
        .encode(&ack, Header { to: 5, counter: 1 })
        .unwrap();
    print("ack-only", "k1", 5, &ack_bytes, "accept", None);

    let hb = dg(
        5,
        0,
        0,
        Some(AlgorithmKind::Raft),
        Some(Message::Heartbeat { term: 3, leader: 5 }),
    );
    let hb_bytes = codec(&k1)
        .encode(&hb, Header { to: 2, counter: 7 })
        .unwrap();
    print("raft-heartbeat", "k1", 2, &hb_bytes, "accept", None);

    let ring = dg(
        2,
        4,
        3,
        Some(AlgorithmKind::Ring),
        Some(Message::RingElection {
            initiator: 1,
            ids: vec![1, 2],
            epoch: 0,
        }),
    );
    let ring_bytes = codec(&k1)
        .encode(&ring, Header { to: 3, counter: 9 })
        .unwrap();
    print(
        "ring-election-with-ack",
        "k1",
        3,
        &ring_bytes,
        "accept",
        None,
    );

    print(
        "replayed-coordinator",
        "k1",
        1,
        &coord_bytes,
        "drop replay",
        Some("bully-coordinator"),
    );
    print(
        "wrong-receiver",
        "k1",
        2,
        &coord_bytes,
        "drop receiver",
        None,
    );

    let mut flipped = coord_bytes.clone();
    let last = flipped.len() - 1;
    let env = proto::Envelope::decode(coord_bytes.as_slice()).unwrap();
    // Flip the tag's last byte (the tag field precedes key_id, counter, receiver and
    // the body, so find it rather than assume its position).
    let at = without_tag_position(&coord_bytes, &env.tag);
    flipped[at] ^= 0x01;
    let _ = last;
    print("bad-tag", "k1", 1, &flipped, "drop bad_tag", None);

    let other = codec(&k2)
        .encode(&coord, Header { to: 1, counter: 1 })
        .unwrap();
    print("unknown-key", "k2", 1, &other, "drop no_key", None);

    let other_cluster = Codec::new("staging", &ROSTER, Some(k1.clone()))
        .encode(&coord, Header { to: 1, counter: 1 })
        .unwrap();
    print(
        "other-cluster",
        "k1",
        1,
        &other_cluster,
        "drop cluster",
        None,
    );

    // A liveness body with a link sequence: signed, so it fails on the field.
    let mut env = proto::Envelope::decode(hb_bytes.as_slice()).unwrap();
    env.seq = 1;
    print(
        "heartbeat-with-seq",
        "k1",
        2,
        &sign(env, &k1),
        "drop invalid_field",
        None,
    );

    // An ack-only datagram that names an algorithm.
    let mut env = proto::Envelope::decode(ack_bytes.as_slice()).unwrap();
    env.algorithm = proto::Algorithm::Bully as i32;
    print(
        "ack-only-with-algorithm",
        "k1",
        5,
        &sign(env, &k1),
        "drop algorithm",
        None,
    );

    // A sender outside the roster (signed with the cluster key all the same).
    let mut env = proto::Envelope::decode(coord_bytes.as_slice()).unwrap();
    env.sender = 9;
    print(
        "sender-not-in-roster",
        "k1",
        1,
        &sign(env, &k1),
        "drop unknown_sender",
        None,
    );

    // An incarnation two days ahead of the receiver's clock.
    let mut env = proto::Envelope::decode(coord_bytes.as_slice()).unwrap();
    env.incarnation = NOW_US + 2 * 86_400 * 1_000_000;
    print(
        "future-incarnation",
        "k1",
        1,
        &sign(env, &k1),
        "drop future_incarnation",
        None,
    );

    // The same sender one second earlier (a previous life) after the coordinator.
    let mut env = proto::Envelope::decode(coord_bytes.as_slice()).unwrap();
    env.incarnation = INCARNATION - 1_000_000;
    env.counter = 2;
    print(
        "stale-incarnation",
        "k1",
        1,
        &sign(env, &k1),
        "drop stale_incarnation",
        Some("bully-coordinator"),
    );

    // Not canonical: version written with a two-byte varint (0x81 0x00 for 1).
    let mut noncanon = vec![0x08, 0x81, 0x00];
    noncanon.extend_from_slice(&coord_bytes[2..]);
    print("overlong-varint", "k1", 1, &noncanon, "drop decode", None);
}

/// Index of the last byte of the tag field's value inside `bytes`.
fn without_tag_position(bytes: &[u8], tag: &[u8]) -> usize {
    let mut needle = vec![0x42, tag.len() as u8];
    needle.extend_from_slice(tag);
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    at + needle.len() - 1
}

// CONFIG (body 32, docs/wire.md §11): its blocks are ```config-vector, apart from the
// ```vector ones because a CONFIG decodes to no election datagram: what is checked is
// the digest the gate hands over, and electd's CONFIG encoder.

/// The ```config-vector blocks of docs/wire.md (same layout as ```vector, plus
/// `digest:` for the accepted ones).
fn config_vectors() -> Vec<Vector> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/wire.md");
    let text = std::fs::read_to_string(path).expect("docs/wire.md");
    let mut out = Vec::new();
    let mut cur: Option<Vector> = None;
    let mut last_key = String::new();
    for line in text.lines() {
        match (&mut cur, line.trim_end()) {
            (None, "```config-vector") => cur = Some(Vector::default()),
            (Some(_), "```") => out.push(cur.take().unwrap()),
            (Some(v), l) => {
                if let Some((k, val)) = l.split_once(':').filter(|(k, _)| !k.starts_with(' ')) {
                    last_key = k.trim().to_string();
                    v.fields.insert(last_key.clone(), val.trim().to_string());
                } else {
                    let e = v.fields.entry(last_key.clone()).or_default();
                    e.push(' ');
                    e.push_str(l.trim());
                }
            }
            _ => {}
        }
    }
    assert!(cur.is_none(), "unterminated ```config-vector block");
    out
}

#[test]
fn the_config_digest_vectors_hold_against_the_codec() {
    let vectors = config_vectors();
    let mut accepted = 0;
    let mut dropped = std::collections::BTreeSet::new();
    for v in &vectors {
        let name = v.get("name");
        let bytes = unhex(v.get("hex"));
        let k = key(v.get("key"));
        let kid = u32::from_str_radix(v.get("key_id").trim_start_matches("0x"), 16).unwrap();
        assert_eq!(kid, key_id(&k), "{name}: key_id");
        let env = proto::Envelope::decode(bytes.as_slice()).expect("protobuf");
        assert_eq!(render_envelope(&env), v.get("envelope"), "{name}: envelope");
        assert_eq!(render_body(&env.body), v.get("body"), "{name}: body");

        let me: NodeId = v.get("at").trim_start_matches("node ").parse().unwrap();
        let verdict = gate(me).open_with_config(&bytes, None, NOW_US);
        let expect = v.get("expect");
        match (&verdict, expect) {
            (Ok((d, Some(digest))), "accept") => {
                accepted += 1;
                let want = u64::from_str_radix(v.get("digest").trim_start_matches("0x"), 16);
                assert_eq!(Ok(*digest), want, "{name}: digest");
                // Nothing for an election group: no group, no body, no ack.
                assert_eq!(
                    (d.group.is_none(), d.body.is_none(), d.ack),
                    (true, true, 0)
                );
                let codec = Codec::new(CLUSTER, &ROSTER, Some(Keyring::new(Key::new(k))));
                let header = Header {
                    to: env.receiver,
                    counter: env.counter,
                };
                let again = codec
                    .encode_config(d.from, d.incarnation, *digest, header)
                    .unwrap();
                assert_eq!(
                    hex(&again),
                    hex(&bytes),
                    "{name}: electd encodes it otherwise"
                );
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&k).unwrap();
                mac.update(&without_tag(&bytes));
                assert_eq!(mac.finalize().into_bytes().to_vec(), env.tag, "{name}: tag");
                // An electd that does not know CONFIG (the plain decode) is handed no
                // election message either.
                let (plain, _) = codec.decode(&bytes).unwrap();
                assert_eq!(plain.body, None, "{name}");
            }
            (Err(e), want) if want.strip_prefix("drop ") == Some(e.reason()) => {
                dropped.insert(e.reason());
            }
            _ => panic!(
                "{name}: expected {expect}, got {:?}",
                verdict.map(|(_, c)| c).map_err(|e| e.reason())
            ),
        }
    }
    assert_eq!(accepted, 1, "one accepted CONFIG vector");
    assert_eq!(
        dropped,
        ["algorithm", "invalid_field"].into_iter().collect(),
        "the CONFIG rules each have a vector"
    );
}

/// The ```config-vector blocks of docs/wire.md §11, as they were made.
#[test]
#[ignore = "prints the config-vector blocks of docs/wire.md"]
fn print_config_vectors() {
    let k1 = Keyring::new(Key::new(key("k1")));
    let codec = Codec::new(CLUSTER, &ROSTER, Some(k1.clone()));
    let digest = 0x0123_4567_89ab_cdef;
    let good = codec
        .encode_config(5, INCARNATION, digest, Header { to: 1, counter: 3 })
        .unwrap();
    let sign = |mut env: proto::Envelope| {
        env.tag.clear();
        env.key_id = k1.primary().id;
        let (_, t) = k1.sign(&env.encode_to_vec());
        env.tag = t;
        env.encode_to_vec()
    };
    let print = |name: &str, bytes: &[u8], expect: &str, digest: Option<u64>| {
        println!("```config-vector");
        println!("name: {name}");
        println!("key: k1");
        println!("key_id: {:#010x}", k1.primary().id);
        println!("at: node 1");
        let h = hex(bytes);
        for (i, chunk) in h.as_bytes().chunks(64).enumerate() {
            let chunk = std::str::from_utf8(chunk).unwrap();
            println!("{}{chunk}", if i == 0 { "hex: " } else { "     " });
        }
        let env = proto::Envelope::decode(bytes).unwrap();
        println!("envelope: {}", render_envelope(&env));
        println!("body: {}", render_body(&env.body));
        if let Some(d) = digest {
            println!("digest: {d:#018x}");
        }
        println!("expect: {expect}");
        println!("```\n");
    };
    print("config", &good, "accept", Some(digest));
    let mut env = proto::Envelope::decode(good.as_slice()).unwrap();
    env.algorithm = proto::Algorithm::Bully as i32;
    print("config-with-algorithm", &sign(env), "drop algorithm", None);
    let mut env = proto::Envelope::decode(good.as_slice()).unwrap();
    env.seq = 1;
    print("config-with-seq", &sign(env), "drop invalid_field", None);
    let mut env = proto::Envelope::decode(good.as_slice()).unwrap();
    env.body = Some(Body::Config(proto::ConfigDigest { digest: 0 }));
    print("config-digest-zero", &sign(env), "drop invalid_field", None);
}
