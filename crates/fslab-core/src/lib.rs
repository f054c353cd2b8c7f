//! fslab's native core. The engine and models are plain Rust (usable and testable
//! without Python); `bindings` is the only layer that knows about PyO3.
//!
//! Glossary: a *request* is one block-layer I/O (time, op, sector, bytes); a *model* is a
//! device (HDD, SSD, RAID) that turns requests into completion times; *replay* drives a
//! model with a request list; all simulated time is integer nanoseconds.

pub mod alloc;
mod bindings;
pub mod engine;
pub mod error;
pub mod models;
pub mod params;
pub mod replay;
pub mod request;
pub mod rng;
pub mod stats;
pub mod synthetic;
pub mod trace;
#[cfg(test)]
mod tests;

