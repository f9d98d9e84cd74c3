//! Real `electd` processes on 127.0.0.1: `electd run` clusters (failover, drain,
//! transfer, checks, drift, operator failures, Raft's durable vote), the operator's
//! commands (`status`, `watch`, `exec`), `demo` and `bench --quick`.
//!
//! One test binary, one module per topic (the module keeps the old file's name:
//! `cargo test --test processes <module>::`); the helpers of every binary are in
//! `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod beat_thread;
mod bench_quick;
mod checks;
mod config_drift;
mod daemon_hygiene;
mod demo;
mod drain;
mod exec;
mod failover;
mod loopback;
mod operator_failures;
mod operator_promises;
mod ops;
mod raft_durable;
mod transfer;
mod watch_status;
