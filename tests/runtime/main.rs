//! The daemon's runtime in this process (tokio): the HTTP API and `/watch`, hooks,
//! health checks, network options, message counts over real UDP on 127.0.0.1, and the
//! runtime over turmoil's simulated network.
//!
//! One test binary, one module per topic (the module keeps the old file's name:
//! `cargo test --test runtime <module>::`); the helpers of every binary are in
//! `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod counts;
mod health;
mod hooks;
mod http_api;
mod http_e2e;
mod net_options;
mod turmoil;
