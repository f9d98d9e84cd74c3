//! The path of a datagram without a socket: the codec against docs/wire.md's vectors,
//! hostile and forged datagrams through `Gate::open` and `Node::handle_datagram` (and,
//! in `security`, the same forgeries against real processes).
//!
//! One test binary, one module per topic (the module keeps the old file's name:
//! `cargo test --test wire <module>::`); the helpers of every binary are in
//! `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod fuzz_harness;
mod hostile_input;
mod security;
mod spoofed_incarnation;
mod wire_vectors;
