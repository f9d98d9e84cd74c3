//! The contract every election algorithm is written against, and the vocabulary in
//! which each algorithm describes itself.
//!
//! Nothing here does I/O, reads a clock or draws an unseeded random number: an
//! algorithm sees only [`algorithm::Algorithm`]'s inputs and answers with effects as
//! data, speaking the domain [`message`]s. [`info`] is what an algorithm declares about
//! itself (its file's `INFO`: names, constructor, whom it elects, recovery model,
//! message types, the literature's count [`formulas`]); [`policy`] the ranking and
//! preemption switches every algorithm consults; [`rng`] the seeded generator that
//! keeps every driver of the same code deterministic.
//!
//! This is the bottom layer: it uses nothing of the crate above it, nor `toml` or
//! `tokio` (the registry that maps a kind to its algorithm's `INFO` is
//! `crate::algorithms::registry`); the crate's test of its layer order
//! (`layers::every_layer_uses_only_the_layers_before_it`) keeps it so.

pub mod algorithm;
pub mod formulas;
pub mod info;
pub mod message;
pub mod policy;
pub mod rng;
