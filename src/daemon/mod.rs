//! The daemon: the tokio runtime around one [`crate::node::Node`], its socket, and the
//! state it shares with the HTTP API.

pub(crate) mod beater;
pub mod checks;
pub(crate) mod drift;
pub mod durable;
pub mod heartbeats;
pub mod hooks;
pub mod metrics;
#[cfg(target_os = "linux")]
pub(crate) mod process_metrics;
pub mod runtime;
pub mod sched;
pub mod shared;
pub mod socket;
pub mod timer;
pub mod vip;
pub(crate) mod writer;
