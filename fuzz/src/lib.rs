//! The fuzz harness of electd's receive path (shared by the `datagram` target and the
//! `seeds` corpus generator).
//!
//! Input: a sequence of frames `[advance_ms: u8][len: u16 le][len bytes]` (a short
//! tail is one last frame). Each frame is one datagram received by node 1 of a
//! 5-node cluster that runs every algorithm:
//! 1. through an insecure [`Gate`] (so the fuzzer can reach the node with datagrams
//!    it cannot sign), then into [`Node::handle_datagram`], the clock advanced by
//!    `advance_ms` and [`Node::handle_timeout`] run, transmits sealed again;
//! 2. the same bytes through a keyed gate, which must refuse them (the fuzzer does
//!    not know the key) — any acceptance is a bug (`assert!`);
//! 3. when step 1 accepted the datagram: it is re-signed with the key and opened by
//!    a keyed gate, which must accept it exactly when the insecure one did (same
//!    replay state: both gates see the same sequence), and decode to the same value.
//!
//! Invariants checked besides "no panic": every leader a node reports is a roster
//! member; decode∘encode is the identity on every decoded datagram.

use electd::contract::algorithm::{AlgorithmKind, Options, Timing};
use electd::contract::message::{ElectionTag, Message};
use electd::node::link::LinkConfig;
use electd::node::{Datagram, Node, NodeConfig};
use electd::security::gate::{Gate, GateConfig};
use electd::security::keyring::{Key, Keyring, KEY_LEN};
use electd::security::wire::{Codec, Header};
use electd::NodeId;
use std::time::Duration;

pub const ROSTER: [NodeId; 5] = [1, 2, 3, 4, 5];
pub const ME: NodeId = 1;
pub const CLUSTER: &str = "fuzz";
/// The receiver's clock (unix µs) — incarnations below it plus a day are accepted.
pub const NOW_US: u64 = 1_700_000_000_000_000;

pub fn keyring() -> Keyring {
    Keyring::new(Key::new([0x5a; KEY_LEN]))
}

fn gate(keys: Option<Keyring>) -> Gate {
    Gate::new(GateConfig {
        me: ME,
        cluster: CLUSTER.into(),
        roster: ROSTER.to_vec(),
        keys,
        sources: None,
        group: false,
    })
}

fn node() -> Node {
    let mut n = Node::new(NodeConfig {
        id: ME,
        ring: ROSTER.into(),
        algorithms: AlgorithmKind::ALL.to_vec(),
        timing: Timing::default(),
        options: Options::default(),
        link: LinkConfig::default(),
        incarnation: 7,
        seed: 1,
    })
    .expect("every algorithm builds");
    n.start(Duration::ZERO, true);
    n
}

/// Split the input into (advance_ms, datagram) frames.
pub fn frames(mut data: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    while data.len() >= 3 && out.len() < 64 {
        let adv = data[0];
        let len = u16::from_le_bytes([data[1], data[2]]) as usize;
        let rest = &data[3..];
        let take = len.min(rest.len());
        out.push((adv, &rest[..take]));
        data = &rest[take..];
    }
    if !data.is_empty() {
        out.push((0, data));
    }
    out
}

/// Build the framed input for `datagrams`.
pub fn frame(datagrams: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (adv, d) in datagrams {
        out.push(*adv);
        out.extend_from_slice(&(d.len().min(u16::MAX as usize) as u16).to_le_bytes());
        out.extend_from_slice(d);
    }
    out
}

pub fn run(data: &[u8]) {
    let mut plain = gate(None);
    let mut keyed = gate(Some(keyring()));
    let mut resigned = gate(Some(keyring()));
    let plain_codec = Codec::new(CLUSTER, &ROSTER, None);
    let keyed_codec = Codec::new(CLUSTER, &ROSTER, Some(keyring()));
    let mut sealer = gate(None);
    let mut n = node();
    let mut now = Duration::ZERO;
    for (adv, bytes) in frames(data) {
        assert!(
            keyed.open(bytes, None, NOW_US).is_err(),
            "a keyed gate accepted an unsigned datagram"
        );
        let opened = plain.open(bytes, None, NOW_US);
        if let Ok((d, h)) = plain_codec.decode(bytes) {
            let again = plain_codec
                .encode(&d, h)
                .expect("a decoded datagram re-encodes");
            assert_eq!(plain_codec.decode(&again), Ok((d.clone(), h)), "round trip");
            let signed = keyed_codec.encode(&d, h).expect("re-encodes signed");
            assert_eq!(keyed_codec.decode(&signed), Ok((d, h)));
            let via_key = resigned.open(&signed, None, NOW_US);
            assert_eq!(via_key, opened, "keyed and insecure gates disagree");
        }
        if let Ok(d) = opened {
            n.handle_datagram(now, d);
        }
        now += Duration::from_millis(u64::from(adv));
        n.handle_timeout(now);
        let out: Vec<(NodeId, Datagram)> = n.drain_transmits().collect();
        for (to, d) in out {
            assert!(ROSTER.contains(&to) && to != ME, "transmit to {to}");
            let _ = sealer.seal(to, &d);
        }
        n.discard_events();
        for s in n.status() {
            if let Some(l) = s.leader {
                assert!(ROSTER.contains(&l), "leader {l} is not a roster member");
            }
        }
    }
}

/// One message of every type, as node `from` would send it.
pub fn every_message(from: NodeId) -> Vec<(AlgorithmKind, Message)> {
    use AlgorithmKind as A;
    let tag = ElectionTag {
        initiator: from,
        seq: 3,
    };
    vec![
        (A::Bully, Message::Election { tag, epoch: 1 }),
        (
            A::Bully,
            Message::Ok {
                responder: from,
                tag,
            },
        ),
        (
            A::Bully,
            Message::Coordinator {
                leader: from,
                epoch: 2,
                tag,
            },
        ),
        (
            A::ImprovedBully,
            Message::YouAreCoordinator { tag, epoch: 1 },
        ),
        (
            A::ImprovedBully,
            Message::Coordinator {
                leader: from,
                epoch: 2,
                tag,
            },
        ),
        (
            A::Ring,
            Message::RingElection {
                initiator: from,
                ids: vec![from, 3],
                epoch: 1,
            },
        ),
        (
            A::Ring,
            Message::RingCoordinator {
                initiator: from,
                leader: 5,
                epoch: 1,
            },
        ),
        (
            A::Lcr,
            Message::LcrElection {
                candidate: from,
                round: 1,
            },
        ),
        (
            A::Lcr,
            Message::LcrElected {
                leader: 5,
                epoch: 1,
            },
        ),
        (
            A::Hs,
            Message::Probe {
                candidate: from,
                phase: 1,
                hops: 1,
                to_right: true,
                round: 1,
            },
        ),
        (
            A::Hs,
            Message::Reply {
                candidate: from,
                phase: 1,
                to_right: false,
                round: 1,
            },
        ),
        (
            A::Hs,
            Message::Terminate {
                leader: 5,
                epoch: 1,
            },
        ),
        (
            A::Raft,
            Message::RequestVote {
                term: 2,
                pre_vote: true,
                transfer: false,
            },
        ),
        (
            A::Raft,
            Message::RequestVote {
                term: 2,
                pre_vote: false,
                transfer: false,
            },
        ),
        (
            A::Raft,
            Message::RequestVote {
                term: 3,
                pre_vote: false,
                transfer: true,
            },
        ),
        (
            A::Raft,
            Message::Vote {
                term: 2,
                granted: true,
                pre_vote: false,
            },
        ),
        (
            A::Raft,
            Message::Vote {
                term: 2,
                granted: true,
                pre_vote: true,
            },
        ),
        (
            A::Raft,
            Message::Heartbeat {
                term: 2,
                leader: from,
            },
        ),
        (A::Raft, Message::HeartbeatAck { term: 2, leader: 0 }),
        (
            A::Bully,
            Message::Heartbeat {
                term: 2,
                leader: from,
            },
        ),
        (A::Bully, Message::Resign { epoch: 2 }),
        (A::Raft, Message::TimeoutNow { term: 2 }),
        (A::Bully, Message::Handoff { epoch: 2, to: ME }),
        (A::Ring, Message::Handoff { epoch: 2, to: ME }),
        (
            A::Bully,
            Message::Priority {
                term: 2,
                priority: 50,
            },
        ),
    ]
}

/// Seed inputs: for each sender, every message type (insecure encoding, so the
/// fuzzer's mutations can reach the node), plus a pure ack.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let codec = Codec::new(CLUSTER, &ROSTER, None);
    let mut out = Vec::new();
    for from in 2..=5 {
        let mut frames = Vec::new();
        let mut seq = 0;
        for (i, (group, msg)) in every_message(from).into_iter().enumerate() {
            let reliable = msg.kind().is_reliable();
            if reliable {
                seq += 1;
            }
            let d = Datagram {
                from,
                incarnation: 1_000 + u64::from(from),
                seq: if reliable { seq } else { 0 },
                ack: 0,
                group: Some(group),
                body: Some(msg),
            };
            let h = Header {
                to: ME,
                counter: i as u64 + 1,
            };
            frames.push((5, codec.encode(&d, h).expect("seed encodes")));
        }
        let ack = Datagram {
            from,
            incarnation: 1_000 + u64::from(from),
            seq: 0,
            ack: 1,
            group: None,
            body: None,
        };
        frames.push((
            50,
            codec
                .encode(
                    &ack,
                    Header {
                        to: ME,
                        counter: 99,
                    },
                )
                .expect("ack"),
        ));
        out.push((format!("sender{from}"), frame(&frames)));
    }
    out
}
