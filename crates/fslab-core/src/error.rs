//! Errors of the native core. Plain `thiserror` types; `bindings` turns them into Python ones.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum CoreError {
    #[error("model parameter `{name}`: {reason}")]
    BadParam { name: String, reason: String },
    #[error("unknown model parameter `{name}` for a {kind} model (known: {known})")]
    UnknownParam { name: String, kind: String, known: String },
    #[error("unknown model kind `{0}` (known: {1})")]
    UnknownKind(String, String),
    #[error("request {index}: {reason}")]
    BadRequest { index: usize, reason: String },
    #[error("synthetic stream: {0}")]
    BadSynthetic(String),
    #[error("model failed: {0}")]
    Model(String),
}

pub type Result<T> = std::result::Result<T, CoreError>;
