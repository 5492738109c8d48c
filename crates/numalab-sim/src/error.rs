//! Errors of a simulation that cannot start. A run that starts and fails (out of memory under
//! `bind`) is not an error: it ends with a result whose status says what happened.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum SimError {
    /// The workload, placement or configuration is not usable.
    #[error("{0}")]
    Input(String),
}
