//! The daemon: the tokio runtime around one [`crate::node::Node`], its socket, and the
//! state it shares with the HTTP API.

pub mod durable;
pub mod runtime;
pub mod shared;
pub mod socket;
