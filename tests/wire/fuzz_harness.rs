//! The fuzz harness (`fuzz/src/lib.rs`; the cargo-fuzz crate is a workspace of its own,
//! so plain `cargo test` never builds it) compiled into this binary and run on its seed
//! corpus: a change of the library that breaks the harness fails here, not months later
//! at the next fuzzing session (the harness had stopped compiling when `RequestVote`
//! gained `transfer`).

#[allow(unreachable_pub, dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod harness;

use electd::contract::message::MessageType;

/// The seeds reach every message type: each sender's corpus file frames one message of
/// every type, so the fuzzer starts from every decoder and handler.
#[test]
fn the_seeds_hold_every_message_type() {
    let kinds: Vec<MessageType> = harness::every_message(2)
        .iter()
        .map(|(_, m)| m.kind())
        .collect();
    let missing: Vec<&str> = MessageType::ALL
        .iter()
        .filter(|t| !kinds.contains(t))
        .map(|t| t.as_str())
        .collect();
    assert!(missing.is_empty(), "no seed of type {missing:?}");
}

/// Every seed passes the harness (its invariants are `assert!`s: a keyed gate refuses
/// what it cannot authenticate, keyed and insecure gates agree, decode∘encode is the
/// identity, every leader is a roster member).
#[test]
fn every_seed_passes_the_harness() {
    let seeds = harness::seeds();
    assert_eq!(
        seeds.len(),
        harness::ROSTER.len() - 1,
        "one file per sender"
    );
    for (name, bytes) in seeds {
        let frames = harness::frames(&bytes);
        // Every message of every type, then one pure ack.
        assert_eq!(frames.len(), harness::every_message(2).len() + 1, "{name}");
        harness::run(&bytes);
    }
}
