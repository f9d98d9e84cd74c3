//! The codec under every message, every field rule, authentication and hostile bytes.

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

// --- BEATS (docs/wire.md §12) ---

fn beat_msgs() -> Vec<(AlgorithmKind, Message)> {
    let mut v: Vec<(AlgorithmKind, Message)> = AlgorithmKind::ALL
        .iter()
        .map(|&k| (k, Message::Heartbeat { term: 3, leader: 5 }))
        .collect();
    v.push((
        AlgorithmKind::Bully,
        Message::Priority {
            term: 3,
            priority: 40,
        },
    ));
    v.push((
        AlgorithmKind::Raft,
        Message::HeartbeatAck { term: 3, leader: 0 },
    ));
    v
}

fn beats_bytes(c: &Codec, msgs: &[(AlgorithmKind, Message)]) -> Vec<u8> {
    let refs: Vec<(AlgorithmKind, &Message)> = msgs.iter().map(|(k, m)| (*k, m)).collect();
    c.encode_beats(5, 77, &refs, HDR).unwrap()
}

#[test]
fn beats_round_trip_every_group_in_body_order() {
    for c in [secure(), insecure()] {
        let msgs = beat_msgs();
        let bytes = beats_bytes(&c, &msgs);
        let (head, h, extra) = c.decode_payload(&bytes).unwrap();
        assert_eq!(h, HDR);
        assert_eq!(
            (
                head.from,
                head.incarnation,
                head.seq,
                head.ack,
                head.group,
                head.body
            ),
            (5, 77, 0, 0, None, None)
        );
        let Extra::Beats(got) = extra else {
            panic!("not a BEATS: {extra:?}")
        };
        // By group (the order of the Algorithm values), then heartbeat, ack, priority.
        let mut want: Vec<(AlgorithmKind, Message)> = msgs.clone();
        let rank = |m: &Message| match m {
            Message::Heartbeat { .. } => 0,
            Message::HeartbeatAck { .. } => 1,
            _ => 2,
        };
        want.sort_by_key(|(k, m)| (algorithm_to_proto(*k) as i32, rank(m)));
        let got: Vec<(AlgorithmKind, Message)> = got
            .into_iter()
            .map(|r| {
                let d = r.unwrap();
                assert_eq!((d.from, d.incarnation, d.seq, d.ack), (5, 77, 0, 0));
                (d.group.unwrap(), d.body.unwrap())
            })
            .collect();
        assert_eq!(got, want);
        // Canonical: one encoding, and the plain decode sees no election message.
        assert_eq!(c.decode(&bytes).unwrap().0.body, None);
        let mut env = proto::Envelope::decode(bytes.as_slice()).unwrap();
        let mut again = Vec::new();
        encode_canonical(&mut env, &mut again);
        assert_eq!(again, bytes);
    }
}

#[test]
fn beats_that_do_not_fit_are_refused_by_the_encoder() {
    let c = secure();
    let hb = Message::Heartbeat { term: 1, leader: 5 };
    let twice = [(AlgorithmKind::Bully, &hb), (AlgorithmKind::Bully, &hb)];
    assert_eq!(
        c.encode_beats(5, 1, &twice, HDR),
        Err(WireError::InvalidField("beats"))
    );
    assert_eq!(
        c.encode_beats(5, 1, &[], HDR),
        Err(WireError::InvalidField("beats"))
    );
    let election = Message::Resign { epoch: 1 };
    assert_eq!(
        c.encode_beats(5, 1, &[(AlgorithmKind::Bully, &election)], HDR),
        Err(WireError::InvalidField("beats"))
    );
}

/// Re-sign an altered envelope with the codec's key, canonically.
fn resign(c: &Codec, mut env: proto::Envelope) -> Vec<u8> {
    env.tag.clear();
    env.key_id = 0;
    c.seal(env).unwrap()
}

#[test]
fn a_malformed_beat_is_dropped_alone_and_a_malformed_beats_whole() {
    let c = secure();
    let good = beats_bytes(&c, &beat_msgs());
    let env = proto::Envelope::decode(good.as_slice()).unwrap();
    let with = |f: &dyn Fn(&mut proto::Beats)| {
        let mut e = env.clone();
        if let Some(Body::Beats(b)) = e.body.as_mut() {
            f(b);
        }
        resign(&c, e)
    };
    let messages = |bytes: &[u8]| match c.decode_payload(bytes) {
        Ok((_, _, Extra::Beats(v))) => Ok(v
            .into_iter()
            .map(|r| r.map(|d| d.group.unwrap()).map_err(|e| e.reason()))
            .collect::<Vec<_>>()),
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e.reason()),
    };
    let entry = |b: &mut proto::Beats, a: proto::Algorithm| -> usize {
        b.entries
            .iter()
            .position(|e| e.algorithm == a as i32)
            .unwrap()
    };
    // A priority under Raft (Raft does not carry it): that message alone, `algorithm`.
    let bytes = with(&|b| {
        let i = entry(b, proto::Algorithm::Raft);
        b.entries[i].priority = Some(proto::Priority {
            term: 3,
            priority: 9,
        })
    });
    let got = messages(&bytes).unwrap();
    assert_eq!(got.iter().filter(|r| r.is_ok()).count(), beat_msgs().len());
    assert_eq!(got.last(), Some(&Err("algorithm")));
    // A leader outside the roster: that heartbeat alone, `invalid_field`.
    let bytes = with(&|b| {
        let i = entry(b, proto::Algorithm::Hs);
        b.entries[i].heartbeat.as_mut().unwrap().leader = 9
    });
    let got = messages(&bytes).unwrap();
    assert_eq!(got.iter().filter(|r| r.is_err()).count(), 1);
    assert!(got.contains(&Err("invalid_field")));
    // A group electd does not know (a newer node's, or none): that entry's messages
    // alone, `algorithm`; the others are delivered.
    for unknown in [7, 0] {
        let bytes = with(&|b| {
            let mut e = b.entries[0];
            e.algorithm = unknown;
            b.entries.push(e);
            b.entries.sort_by_key(|e| e.algorithm);
        });
        let got = messages(&bytes).unwrap();
        assert_eq!(got.iter().filter(|r| r.is_ok()).count(), beat_msgs().len());
        assert_eq!(
            got.iter().filter(|r| **r == Err("algorithm")).count(),
            got.len() - beat_msgs().len(),
            "group {unknown}"
        );
    }
    // An entry without a message, a body without an entry, a group twice, groups out
    // of order: the datagram.
    let lcr_empty = with(&|b| {
        let i = entry(b, proto::Algorithm::Lcr);
        b.entries[i] = proto::Beat {
            algorithm: proto::Algorithm::Lcr as i32,
            ..Default::default()
        }
    });
    assert_eq!(messages(&lcr_empty), Err("invalid_field"));
    let twice = with(&|b| {
        let e = b.entries[0];
        b.entries.insert(0, e)
    });
    assert_eq!(messages(&twice), Err("invalid_field"));
    assert_eq!(
        messages(&with(&|b| b.entries.reverse())),
        Err("invalid_field")
    );
    assert_eq!(
        messages(&with(&|b| *b = proto::Beats::default())),
        Err("invalid_field")
    );
    // Node-level: a group, a sequence or an ack on the envelope.
    let mut e = env.clone();
    e.algorithm = proto::Algorithm::Bully as i32;
    assert_eq!(messages(&resign(&c, e)), Err("algorithm"));
    for (seq, ack) in [(1, 0), (0, 1)] {
        let mut e = env.clone();
        (e.seq, e.ack) = (seq, ack);
        assert_eq!(messages(&resign(&c, e)), Err("invalid_field"));
    }
}
