//! The contract every election algorithm is written against, and the facts about each
//! algorithm that the rest of the program reads from one place.
//!
//! Nothing here does I/O, reads a clock or draws an unseeded random number: an
//! algorithm sees only [`algorithm::Algorithm`]'s inputs and answers with effects as
//! data, speaking the domain [`message`]s. The [`registry`] holds one entry per
//! algorithm (names, wire value, constructor, whom it elects, recovery model, message
//! types, the literature's count [`formulas`]); [`rng`] is the seeded generator that
//! keeps every driver of the same code deterministic.

pub mod algorithm;
pub mod formulas;
pub mod info;
pub mod message;
pub mod policy;
pub mod rng;
