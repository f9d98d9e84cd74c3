//! electd — leader election daemon and simulator.
//!
//! The crate is layered so that the same algorithm code runs everywhere:
//! - [`algorithm`]: the sans-IO contract (inputs → effects as data), and
//!   [`algorithms`]: one file per election algorithm;
//! - [`node`]: one node's groups, failure detector, reliable link and deadline table,
//!   still without I/O or clocks;
//! - [`sim`]: a deterministic discrete-event simulator that drives [`node::Node`];
//! - [`compare`] and [`formulas`]: the literature's message counts against measured ones.

pub mod algorithm;
pub mod algorithms;
pub mod bench;
pub mod compare;
pub mod config;
pub mod config_template;
pub mod daemon;
pub mod droplog;
pub mod formulas;
pub mod gate;
pub mod hooks;
pub mod http;
pub mod keyring;
pub mod message;
pub mod metrics;
pub mod node;
pub mod policy;
#[cfg(target_os = "linux")]
pub mod process_metrics;
pub mod registry;
pub mod replay;
pub mod rng;
pub mod sim;
pub mod trace;
pub mod view;
pub mod wire;

/// A node id from the roster; 0 is reserved (never a valid id).
pub type NodeId = u32;

/// Generated protobuf types (only `wire` should use them).
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/electd.v1.rs"));
}
