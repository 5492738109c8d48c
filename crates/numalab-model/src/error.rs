//! Errors of the model crate. Messages are lower-case, name the bad value and where it is
//! (`path` is a key path such as `distances[2]` or `topology.cores_per_node`).

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum TopologyError {
    /// A field of a machine description is wrong; `path` says which.
    #[error("{path}: {message}")]
    Field { path: String, message: String },
}

impl TopologyError {
    pub fn field(path: impl Into<String>, message: impl Into<String>) -> Self {
        TopologyError::Field { path: path.into(), message: message.into() }
    }

    pub fn path(&self) -> &str {
        match self {
            TopologyError::Field { path, .. } => path,
        }
    }

    pub(crate) fn from_serde(e: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // serde_json appends " at line L column C" of the JSON we built, which means nothing to a user.
        let message = match inner.find(" at line ") {
            Some(i) => inner[..i].to_string(),
            None => inner,
        };
        TopologyError::field(if path == "." { "(top level)".to_string() } else { path }, message)
    }
}

/// Bad memory policy or placement (unknown mode, bad node string, empty mask).
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{0}")]
pub struct PolicyError(pub String);
