//! Property: random bytes and mutations of valid signed datagrams (bit flips,
//! truncations, extensions, byte and field swaps, splices of two datagrams) fed to a
//! node's full receive path (`Gate::open` → `Node::handle_datagram`, what the runtime
//! runs per datagram) never panic, are all refused with a known reason, and never
//! change the node's leader, while the genuine leader's heartbeats keep arriving.

use electd::contract::algorithm::{AlgorithmKind, Options, Timing};
use electd::contract::message::{ElectionTag, Message};
use electd::contract::rng::Rng;
use electd::node::link::LinkConfig;
use electd::node::{Datagram, Node, NodeConfig};
use electd::security::gate::{Dropped, Gate, GateConfig};
use electd::security::keyring::{Key, Keyring, KEY_LEN};
use electd::security::wire::{Codec, Header};
use electd::NodeId;
use std::collections::BTreeMap;
use std::time::Duration;

const ROSTER: [NodeId; 5] = [1, 2, 3, 4, 5];
const NOW_US: u64 = 1_700_000_000_000_000;

fn keys() -> Keyring {
    Keyring::new(Key::new([0x42; KEY_LEN]))
}

/// Signed datagrams node `from` could send to node 1, counters from `counter`.
fn valid_datagrams(codec: &Codec, from: NodeId, counter: &mut u64) -> Vec<Vec<u8>> {
    let tag = ElectionTag {
        initiator: from,
        seq: 9,
    };
    let msgs = [
        (
            AlgorithmKind::Bully,
            Message::Coordinator {
                leader: from,
                epoch: 9,
                tag,
            },
        ),
        (AlgorithmKind::Bully, Message::Election { tag, epoch: 9 }),
        (
            AlgorithmKind::Bully,
            Message::Ok {
                responder: from,
                tag,
            },
        ),
        (
            AlgorithmKind::Bully,
            Message::Heartbeat {
                term: 9,
                leader: from,
            },
        ),
        (AlgorithmKind::Bully, Message::Resign { epoch: 9 }),
        (
            AlgorithmKind::Raft,
            Message::RequestVote {
                term: 9,
                pre_vote: false,
                transfer: false,
            },
        ),
        (AlgorithmKind::Raft, Message::TimeoutNow { term: 9 }),
        (AlgorithmKind::Bully, Message::Handoff { epoch: 9, to: 2 }),
        (
            AlgorithmKind::Raft,
            Message::Heartbeat {
                term: 9,
                leader: from,
            },
        ),
        (
            AlgorithmKind::Ring,
            Message::RingElection {
                initiator: from,
                ids: vec![from, 2, 3],
                epoch: 9,
            },
        ),
        (
            AlgorithmKind::Ring,
            Message::RingCoordinator {
                initiator: from,
                leader: from,
                epoch: 9,
            },
        ),
    ];
    msgs.into_iter()
        .enumerate()
        .map(|(i, (group, msg))| {
            *counter += 1;
            let reliable = msg.kind().is_reliable();
            let d = Datagram {
                from,
                incarnation: NOW_US - 1_000 + u64::from(from),
                seq: if reliable { 100 + i as u64 } else { 0 },
                ack: 0,
                group: Some(group),
                body: Some(msg),
            };
            codec
                .encode(
                    &d,
                    Header {
                        to: 1,
                        counter: *counter,
                    },
                )
                .unwrap()
        })
        .collect()
}

/// Split a protobuf message into its top-level fields (tag+value byte ranges), or
/// `None` if it does not parse as a field sequence.
fn fields(b: &[u8]) -> Option<Vec<std::ops::Range<usize>>> {
    fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *b.get(*i)?;
            *i += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let key = varint(b, &mut i)?;
        match key & 7 {
            0 => {
                varint(b, &mut i)?;
            }
            2 => {
                let len = varint(b, &mut i)? as usize;
                i = i.checked_add(len).filter(|&e| e <= b.len())?;
            }
            _ => return None,
        }
        out.push(start..i);
    }
    Some(out)
}

fn mutate(rng: &mut Rng, valid: &[Vec<u8>]) -> Vec<u8> {
    let pick = |rng: &mut Rng| valid[rng.below(valid.len() as u64) as usize].clone();
    let mut b = pick(rng);
    match rng.below(7) {
        // Random bytes.
        0 => {
            let n = rng.below(200) as usize;
            b = (0..n).map(|_| rng.next_u64() as u8).collect();
        }
        // Bit flips.
        1 => {
            for _ in 0..=rng.below(4) {
                let i = rng.below(b.len() as u64 * 8) as usize;
                b[i / 8] ^= 1 << (i % 8);
            }
        }
        // Truncation.
        2 => {
            let keep = rng.below(b.len() as u64) as usize;
            b.truncate(keep);
        }
        // Extension with random bytes, or with a copy of a field (a repeated field).
        3 => {
            if let (Some(f), true) = (fields(&b), rng.below(2) == 0) {
                let r = f[rng.below(f.len() as u64) as usize].clone();
                let copy = b[r].to_vec();
                b.extend_from_slice(&copy);
            } else {
                for _ in 0..=rng.below(16) {
                    b.push(rng.next_u64() as u8);
                }
            }
        }
        // Swap two top-level fields (same content, another order).
        4 => {
            if let Some(f) = fields(&b).filter(|f| f.len() >= 2) {
                let i = rng.below(f.len() as u64) as usize;
                let j = (i + 1 + rng.below(f.len() as u64 - 1) as usize) % f.len();
                let mut parts: Vec<Vec<u8>> = f.iter().map(|r| b[r.clone()].to_vec()).collect();
                parts.swap(i, j);
                b = parts.concat();
            } else {
                b.reverse();
            }
        }
        // Splice: the head of one datagram, the tail of another (e.g. a tag moved over).
        5 => {
            let other = pick(rng);
            let cut = rng.below(b.len().min(other.len()) as u64) as usize;
            b.truncate(cut);
            b.extend_from_slice(&other[cut..]);
        }
        // Overwrite a byte with an extreme value.
        _ => {
            let i = rng.below(b.len() as u64) as usize;
            b[i] = [0x00, 0xff, 0x80, 0x7f][rng.below(4) as usize];
        }
    }
    b
}

#[test]
fn mutated_and_random_datagrams_never_panic_or_move_the_leader() {
    let keys = keys();
    let codec = Codec::new("hostile", &ROSTER, Some(keys.clone()));
    let mut gate = Gate::new(GateConfig {
        me: 1,
        cluster: "hostile".into(),
        roster: ROSTER.to_vec(),
        keys: Some(keys),
        sources: None,
        group: false,
    });
    let mut node = Node::new(NodeConfig {
        id: 1,
        ring: ROSTER.into(),
        algorithms: vec![
            AlgorithmKind::Bully,
            AlgorithmKind::Raft,
            AlgorithmKind::Ring,
        ],
        timing: Timing::default(),
        options: Options::default(),
        link: LinkConfig::default(),
        incarnation: NOW_US - 10,
        seed: 1,
    })
    .unwrap();
    node.start(Duration::ZERO, false);
    let mut now = Duration::ZERO;

    // Node 5 is the genuine Bully leader; it keeps heartbeating.
    let mut counters: BTreeMap<NodeId, u64> = BTreeMap::new();
    let mut genuine = |from: NodeId, msg: Message, seq: u64| {
        let c = counters.entry(from).or_insert(10_000);
        *c += 1;
        let d = Datagram {
            from,
            incarnation: NOW_US - 1_000 + u64::from(from),
            seq,
            ack: 0,
            group: Some(AlgorithmKind::Bully),
            body: Some(msg),
        };
        codec.encode(&d, Header { to: 1, counter: *c }).unwrap()
    };
    let coord = genuine(
        5,
        Message::Coordinator {
            leader: 5,
            epoch: 20,
            tag: ElectionTag::default(),
        },
        1,
    );
    node.handle_datagram(now, gate.open(&coord, None, NOW_US).unwrap());
    assert_eq!(node.leader(AlgorithmKind::Bully), Some(5));

    // A pool of valid signed datagrams from every other node. Each passes the gate
    // once (so it is in the replay window: a "mutation" that changes nothing is a
    // replay) before its mutations start.
    let mut counter = 0;
    let mut valid = Vec::new();
    for from in 2..=4 {
        valid.extend(valid_datagrams(&codec, from, &mut counter));
    }
    for v in &valid {
        assert!(gate.open(v, None, NOW_US).is_ok());
    }
    let mut rng = Rng::new(0x5eed);
    let known: Vec<&str> = Dropped::reasons().collect();
    let mut reasons: BTreeMap<&str, u64> = BTreeMap::new();
    let rounds = 30_000;
    for round in 0..rounds {
        let bytes = mutate(&mut rng, &valid);
        match gate.open(&bytes, None, NOW_US) {
            Ok(d) => panic!("round {round}: a mutated datagram was accepted: {d:?}"),
            Err(e) => {
                assert!(known.contains(&e.reason()), "{e}");
                *reasons.entry(e.reason()).or_insert(0) += 1;
            }
        }
        if round % 50 == 0 {
            now += Duration::from_millis(5);
            let hb = genuine(
                5,
                Message::Heartbeat {
                    term: 20,
                    leader: 5,
                },
                0,
            );
            node.handle_datagram(now, gate.open(&hb, None, NOW_US).unwrap());
            node.handle_timeout(now);
            let _ = node.drain_transmits().count();
            assert_eq!(node.leader(AlgorithmKind::Bully), Some(5), "round {round}");
        }
    }
    // The replay window remembers the originals: the exact bytes come back as replays.
    assert!(valid
        .iter()
        .all(|v| gate.open(v, None, NOW_US).unwrap_err().reason() == "replay"));
    eprintln!("drops by reason: {reasons:?}");
    assert_eq!(reasons.values().sum::<u64>(), rounds);
    // The mutations exercise several layers, not just the protobuf decoder.
    for r in ["decode", "bad_tag"] {
        assert!(
            reasons.get(r).copied().unwrap_or(0) > 100,
            "{r}: {reasons:?}"
        );
    }
}
