//! Errors of the Linux readers: which file, and what was wrong with it.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum LinuxError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    /// The file exists but is not ours to read (`/proc/PID/*` of another user's or a setuid
    /// process: the kernel's ptrace access check, `proc_mem_open` / `mm_access`; debugfs under a
    /// kernel in lockdown).
    #[error("no permission to read {path}")]
    Denied { path: String },
    #[error("cannot write {path}: {message}")]
    Write { path: String, message: String },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
}
