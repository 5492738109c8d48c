//! Errors of the Linux readers: which file, and what was wrong with it.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum LinuxError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
}
