//! The `electd` binary's one-shot commands and the configuration: `simulate`,
//! `compare`, `view`, `config init`, `config check` and the probe suite of broken
//! configurations, `[state]`.
//!
//! One test binary, one module per topic (the module keeps the old file's name:
//! `cargo test --test cli <module>::`); the helpers of every binary are in
//! `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod config_init;
mod config_probes;
mod state_config;
mod view;
mod vip_hook;
