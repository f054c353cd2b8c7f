//! fslab's native core: the tracefs ring-buffer reader and trace summary (`trace`,
//! `stats`), the discrete-event `engine` with the HDD/SSD/RAID `models` and their `replay`
//! (parameters in `params`, synthetic request streams in `synthetic`, seeded randomness in
//! `rng`), and the allocation micro-operations of seed 003 (`alloc`). All of it is plain
//! Rust, usable and testable without Python; `bindings` is the only layer that knows PyO3.
//!
//! Glossary: a *request* is one block-layer I/O (time, op, sector, bytes); a *model* is a
//! device (HDD, SSD, RAID) that turns requests into completion times; *replay* drives a
//! model with a request list; all simulated time is integer nanoseconds.

pub mod alloc;
mod bindings;
pub mod engine;
pub mod error;
pub mod mem;
pub mod models;
pub mod params;
pub mod replay;
pub mod request;
pub mod rng;
pub mod stats;
pub mod synthetic;
pub mod trace;
#[cfg(test)]
mod mechanism_tests;
#[cfg(test)]
mod tests;

