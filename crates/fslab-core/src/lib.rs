//! fslab's native core. The engine and models are plain Rust (usable and testable
//! without Python); `bindings` is the only layer that knows about PyO3.

mod bindings;

pub use bindings::*;
