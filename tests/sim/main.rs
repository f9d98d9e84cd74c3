//! The election algorithms on the deterministic simulator (no sockets, no processes):
//! message counts against the literature, properties over seeds, fencing tokens,
//! policy, storms, convergence.
//!
//! One test binary, one module per topic (the module keeps the old file's name:
//! `cargo test --test sim <module>::`); the helpers of every binary are in
//! `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod bully_family;
mod convergence;
mod fencing;
mod policy;
mod properties;
mod raft;
mod rejoin;
mod ring_family;
mod scale;
mod storms;
