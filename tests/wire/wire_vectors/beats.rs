//! The BEATS vectors of docs/wire.md §12 against the real codec: each ```` ```beats-vector ````
//! block (body 33) is decoded and rendered as the ```` ```vector ```` ones are, goes
//! through a receiving node's gate, and must be accepted with the messages the block's
//! `messages:` line names, in that order (each a group and a type, or `drop` and the
//! reason that message alone is dropped for), and be what electd's BEATS encoder
//! produces; or be dropped whole for the block's reason. They are apart from the
//! ```` ```vector ```` blocks because a BEATS decodes to several datagrams. The parent
//! module's readers and constants are in scope.

use super::*;
use electd::contract::algorithm::AlgorithmKind;
use electd::contract::message::Message;
use electd::security::gate::Dropped;
use electd::security::wire::Extra;

/// The ```beats-vector blocks of docs/wire.md §12.
pub(super) fn beats_vectors() -> Vec<Vector> {
    blocks("```beats-vector")
}

/// A BEATS' messages as the `messages:` line shows them.
fn render_messages(beats: &Extra) -> String {
    let Extra::Beats(list) = beats else {
        return format!("not a BEATS: {beats:?}");
    };
    list.iter()
        .map(|r| match r {
            Ok(d) => format!(
                "{} {}",
                d.group.map_or("?", |g| g.as_str()),
                d.body.as_ref().map_or("?", |m| m.kind().as_str())
            ),
            Err(e) => format!("drop {}", Dropped::Wire(*e).reason()),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn the_beats_vectors_hold_against_the_codec() {
    let vectors = beats_vectors();
    let mut accepted = 0;
    let mut dropped_alone = std::collections::BTreeSet::new();
    let mut dropped = std::collections::BTreeSet::new();
    for v in &vectors {
        let name = v.get("name");
        let (bytes, me, k, env) = check_rendering(v);
        let verdict = gate(me).open_payload(&bytes, None, NOW_US);
        let expect = v.get("expect");
        match (&verdict, expect) {
            (Ok((head, extra)), "accept") => {
                accepted += 1;
                assert_eq!(
                    render_messages(extra),
                    v.get("messages"),
                    "{name}: messages"
                );
                assert_eq!(
                    (
                        head.group.is_none(),
                        head.body.is_none(),
                        head.seq,
                        head.ack
                    ),
                    (true, true, 0, 0),
                    "{name}: the envelope alone carries nothing for a group"
                );
                let Extra::Beats(list) = extra else {
                    unreachable!()
                };
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&k).unwrap();
                mac.update(&without_tag(&bytes));
                assert_eq!(mac.finalize().into_bytes().to_vec(), env.tag, "{name}: tag");
                if list.iter().all(|r| r.is_ok()) {
                    let msgs: Vec<(AlgorithmKind, &Message)> = list
                        .iter()
                        .flatten()
                        .map(|d| (d.group.unwrap(), d.body.as_ref().unwrap()))
                        .collect();
                    let codec = Codec::new(CLUSTER, &ROSTER, Some(Keyring::new(Key::new(k))));
                    let header = Header {
                        to: env.receiver,
                        counter: env.counter,
                    };
                    let again = codec
                        .encode_beats(head.from, head.incarnation, &msgs, header)
                        .unwrap();
                    assert_eq!(
                        hex(&again),
                        hex(&bytes),
                        "{name}: electd encodes it otherwise"
                    );
                }
                for e in list.iter().filter_map(|r| r.as_ref().err()) {
                    dropped_alone.insert(Dropped::Wire(*e).reason());
                }
            }
            (Err(e), want) if want.strip_prefix("drop ") == Some(e.reason()) => {
                dropped.insert(e.reason());
            }
            _ => panic!(
                "{name}: expected {expect}, got {:?}",
                verdict.map(|(_, x)| x).map_err(|e| e.reason())
            ),
        }
    }
    assert!(accepted >= 2, "{accepted} accepted BEATS vectors");
    assert_eq!(
        dropped,
        ["algorithm", "invalid_field"].into_iter().collect(),
        "the BEATS rules each have a vector"
    );
    assert_eq!(
        dropped_alone,
        ["algorithm", "invalid_field"].into_iter().collect(),
        "a message dropped alone, for each reason"
    );
}

/// The ```beats-vector blocks of docs/wire.md §12, as they were made.
#[test]
#[ignore = "prints the beats-vector blocks of docs/wire.md"]
fn print_beats_vectors() {
    let k1 = Keyring::new(Key::new(key("k1")));
    let codec = Codec::new(CLUSTER, &ROSTER, Some(k1.clone()));
    let hb3 = Message::Heartbeat { term: 3, leader: 5 };
    let hb4 = Message::Heartbeat { term: 4, leader: 5 };
    let prio = Message::Priority {
        term: 3,
        priority: 50,
    };
    let leader: Vec<(AlgorithmKind, &Message)> = vec![
        (AlgorithmKind::Bully, &hb3),
        (AlgorithmKind::Bully, &prio),
        (AlgorithmKind::ImprovedBully, &hb3),
        (AlgorithmKind::Ring, &hb3),
        (AlgorithmKind::Lcr, &hb3),
        (AlgorithmKind::Hs, &hb3),
        (AlgorithmKind::Raft, &hb4),
    ];
    let good = codec
        .encode_beats(5, INCARNATION, &leader, Header { to: 2, counter: 7 })
        .unwrap();
    let raft_ack = Message::HeartbeatAck { term: 4, leader: 0 };
    let bully_ack = Message::HeartbeatAck { term: 3, leader: 5 };
    let acks = codec
        .encode_beats(
            2,
            INCARNATION,
            &[
                (AlgorithmKind::Bully, &bully_ack),
                (AlgorithmKind::Raft, &raft_ack),
            ],
            Header { to: 4, counter: 4 },
        )
        .unwrap();
    let sign = |env: proto::Envelope| resign(&k1, env);
    let print = |name: &str, at: NodeId, bytes: &[u8], expect: &str| {
        print_vector_head("beats-vector", name, &k1, at, bytes);
        if expect == "accept" {
            let (_, extra) = gate(at).open_payload(bytes, None, NOW_US).unwrap();
            println!("messages: {}", render_messages(&extra));
        }
        println!("expect: {expect}");
        println!("```\n");
    };
    let beats = |env: &mut proto::Envelope| match env.body.as_mut() {
        Some(proto::envelope::Body::Beats(b)) => (**b).clone(),
        _ => unreachable!(),
    };
    let with = |f: &dyn Fn(&mut proto::Beats)| {
        let mut env = proto::Envelope::decode(good.as_slice()).unwrap();
        let mut b = beats(&mut env);
        f(&mut b);
        env.body = Some(proto::envelope::Body::Beats(Box::new(b)));
        sign(env)
    };
    print("beats", 2, &good, "accept");
    print("beats-acks", 4, &acks, "accept");
    let entry = |b: &mut proto::Beats, a: proto::Algorithm| -> usize {
        b.entries
            .iter()
            .position(|e| e.algorithm == a as i32)
            .unwrap()
    };
    let raft_priority = with(&|b| {
        let i = entry(b, proto::Algorithm::Raft);
        b.entries[i].priority = Some(proto::Priority {
            term: 4,
            priority: 50,
        })
    });
    print("beats-priority-under-raft", 2, &raft_priority, "accept");
    let outsider = with(&|b| {
        let i = entry(b, proto::Algorithm::Ring);
        b.entries[i].heartbeat.as_mut().unwrap().leader = 9
    });
    print("beats-leader-not-in-roster", 2, &outsider, "accept");
    // A seventh group, unknown to this receiver (a newer node's): its entry alone.
    let newer = with(&|b| {
        let mut e = b.entries[b.entries.len() - 1];
        e.algorithm = 7;
        b.entries.push(e)
    });
    print("beats-unknown-group", 2, &newer, "accept");
    let empty = with(&|b| {
        let i = entry(b, proto::Algorithm::Lcr);
        b.entries[i] = proto::Beat {
            algorithm: proto::Algorithm::Lcr as i32,
            ..Default::default()
        }
    });
    print("beats-empty-entry", 2, &empty, "drop invalid_field");
    let unordered = with(&|b| b.entries.swap(0, 1));
    print("beats-out-of-order", 2, &unordered, "drop invalid_field");
    let mut env = proto::Envelope::decode(good.as_slice()).unwrap();
    env.algorithm = proto::Algorithm::Bully as i32;
    print("beats-with-algorithm", 2, &sign(env), "drop algorithm");
    let mut env = proto::Envelope::decode(good.as_slice()).unwrap();
    env.ack = 3;
    print("beats-with-ack", 2, &sign(env), "drop invalid_field");
}
