//! Codec cost per datagram: encode (protobuf + HMAC-SHA256 tag) and decode
//! (parse, canonical re-encoding check, tag verification, validation) of typical
//! datagrams, timed in a loop here for the report; `benches/codec.rs` measures the same
//! operations with criterion for rigor (`cargo bench --bench codec`).

use electd::contract::algorithm::AlgorithmKind;
use electd::contract::message::{ElectionTag, Message};
use electd::node::Datagram;
use electd::security::keyring::{Key, Keyring};
use electd::security::wire::{Codec, Header};
use electd::NodeId;
use serde::Serialize;
use std::hint::black_box;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize)]
pub struct CodecPoint {
    pub datagram: String,
    pub bytes: usize,
    pub authenticated: bool,
    pub encode_ns: f64,
    pub decode_ns: f64,
    /// encode + decode: the CPU cost of one datagram end to end.
    pub total_ns: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct CodecResults {
    pub points: Vec<CodecPoint>,
}

/// The roster of the samples: 64 nodes.
pub const ROSTER: NodeId = 64;

/// Typical datagrams, named as in the report (shared with `benches/codec.rs`).
pub fn samples() -> Vec<(&'static str, Datagram)> {
    let tag = ElectionTag {
        initiator: 3,
        seq: (1_700_000_000_000_000 << 8) | 7,
    };
    let dg = |seq, group, body| Datagram {
        from: 3,
        incarnation: 1_700_000_000_000_000,
        seq,
        ack: 0,
        group,
        body,
    };
    vec![
        (
            "heartbeat",
            dg(
                0,
                Some(AlgorithmKind::Bully),
                Some(Message::Heartbeat {
                    term: 12,
                    leader: 3,
                }),
            ),
        ),
        (
            "election",
            dg(
                41,
                Some(AlgorithmKind::Bully),
                Some(Message::Election { tag, epoch: 12 }),
            ),
        ),
        (
            "coordinator",
            dg(
                42,
                Some(AlgorithmKind::Bully),
                Some(Message::Coordinator {
                    leader: 3,
                    epoch: 12,
                    tag,
                }),
            ),
        ),
        (
            "ring_election (64 ids)",
            dg(
                43,
                Some(AlgorithmKind::Ring),
                Some(Message::RingElection {
                    initiator: 3,
                    ids: (1..=ROSTER).collect(),
                    epoch: 12,
                }),
            ),
        ),
        (
            "ack",
            Datagram {
                ack: 41,
                ..dg(0, None, None)
            },
        ),
    ]
}

/// The envelope header of the samples: to node 2, first datagram of the sequence.
pub const HEADER: Header = Header { to: 2, counter: 1 };

/// A codec of the sample roster, authenticated or not.
pub fn codec(authenticated: bool) -> Codec {
    let roster: Vec<NodeId> = (1..=ROSTER).collect();
    let keys = authenticated.then(|| Keyring::new(Key::new([0x5A; 32])));
    Codec::new("bench", &roster, keys)
}

fn time_per_op(budget: Duration, mut f: impl FnMut()) -> f64 {
    // Warm up, then run batches until the budget is spent.
    for _ in 0..100 {
        f();
    }
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget {
        for _ in 0..256 {
            f();
        }
        n += 256;
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

pub fn run(quick: bool) -> CodecResults {
    let budget = if quick {
        Duration::from_millis(20)
    } else {
        Duration::from_millis(400)
    };
    let mut points = Vec::new();
    for authenticated in [true, false] {
        let c = codec(authenticated);
        for (name, d) in samples() {
            let Ok(bytes) = c.encode(&d, HEADER) else {
                continue;
            };
            let encode_ns = time_per_op(budget, || {
                let _ = black_box(c.encode(black_box(&d), HEADER));
            });
            let decode_ns = time_per_op(budget, || {
                let _ = black_box(c.decode(black_box(&bytes)));
            });
            points.push(CodecPoint {
                datagram: name.to_string(),
                bytes: bytes.len(),
                authenticated,
                encode_ns,
                decode_ns,
                total_ns: encode_ns + decode_ns,
            });
        }
    }
    CodecResults { points }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_round_trips() {
        for auth in [true, false] {
            let c = codec(auth);
            for (name, d) in samples() {
                let bytes = c.encode(&d, HEADER).expect(name);
                assert_eq!(c.decode(&bytes).expect(name), (d, HEADER), "{name}");
            }
        }
    }
}
