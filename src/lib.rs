//! electd — leader election daemon and simulator.
//!
//! The crate is layered so that the same algorithm code runs everywhere. Each module
//! uses only itself and the ones listed before it, test code aside; the unit test
//! `layers::every_layer_uses_only_the_layers_before_it` reads the sources and fails on
//! a use of a module listed later (this list is the order it checks), and
//! docs/architecture.md draws the same order:
//! - [`contract`]: the sans-IO contract (inputs → effects as data), the domain
//!   messages, the vocabulary an algorithm describes itself in ([`contract::info`]),
//!   the literature's count formulas; it names no other module, nor `toml` or `tokio`;
//! - [`algorithms`]: one file per election algorithm, by family, each with its `INFO`;
//!   above them the registry (`algorithms::registry`: `AlgorithmKind::info`);
//! - [`node`]: one node's groups, failure detector, reliable link and deadline table,
//!   still without I/O or clocks (it and the algorithms name no `toml` or `tokio`);
//! - [`trace`]: the trace format and `electd view`'s diagrams;
//! - [`sim`]: a deterministic discrete-event simulator that drives [`node::Node`], and
//!   the comparison of measured counts with the formulas;
//! - [`security`]: the envelope, its authentication and the checks every datagram passes;
//! - [`config`]: the cluster's TOML file and its validation;
//! - [`daemon`]: the tokio runtime of one node, its metrics and hooks;
//! - [`http`]: the HTTP API;
//! - `testkit` (hidden): the process-cluster harness of the bench and the tests.
//!
//! The binary adds the CLI and the bench (`src/main.rs`), which use only this API.

// Library code does not `unwrap()`: input from the network or from files is handled,
// and an invariant says why it holds in `expect`. Unit tests may unwrap.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod algorithms;
pub mod config;
pub mod contract;
pub mod daemon;
pub mod http;
#[cfg(test)]
mod layers;
pub mod node;
pub mod security;
pub mod sim;
#[doc(hidden)]
pub mod testkit;
pub mod trace;
/// A node id from the roster; 0 is reserved (never a valid id).
pub type NodeId = u32;

/// Generated protobuf types (only `wire` should use them); documented in
/// `proto/electd.proto`.
#[allow(missing_docs, unreachable_pub)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/electd.v1.rs"));
}
