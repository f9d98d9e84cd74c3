//! The daemon: the tokio runtime around one [`crate::node::Node`], and the state it
//! shares with the HTTP API.

pub mod shared;
