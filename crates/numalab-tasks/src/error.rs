//! Errors of the task-graph mode: a bad graph file names the file, the line and the reason; every
//! other bad input names the parameter and what is accepted.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TaskError {
    /// A graph file that cannot be read or parsed (`line` is 1-based; 0 = the file as a whole).
    #[error("{}:{line}: {reason}", path.display())]
    File { path: PathBuf, line: usize, reason: String },
    /// A parameter outside what is accepted (generator, simulation or balancer option).
    #[error("{0}")]
    Param(String),
    /// A balancer returned a mapping the simulator cannot apply.
    #[error("balancer '{name}': {reason}")]
    Balancer { name: String, reason: String },
}

impl TaskError {
    pub fn file(path: impl Into<PathBuf>, line: usize, reason: impl Into<String>) -> Self {
        TaskError::File { path: path.into(), line, reason: reason.into() }
    }

    pub fn param(msg: impl Into<String>) -> Self {
        TaskError::Param(msg.into())
    }
}
