//! File access shared by the readers: every path is under a caller's root, and every error names
//! the file.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use crate::error::LinuxError;

/// Read a whole text file; a permission error becomes [`LinuxError::Denied`].
pub(crate) fn read(path: &Path) -> Result<String, LinuxError> {
    fs::read_to_string(path).map_err(|e| {
        let path = path.display().to_string();
        if e.kind() == ErrorKind::PermissionDenied {
            LinuxError::Denied { path }
        } else {
            LinuxError::Read { path, message: e.to_string() }
        }
    })
}

pub(crate) fn parse_err(path: &Path, message: impl Into<String>) -> LinuxError {
    LinuxError::Parse { path: path.display().to_string(), message: message.into() }
}

/// `key value` lines (vmstat, numastat): every line whose key passes `keep`, in file order.
pub(crate) fn key_values(
    path: &Path,
    text: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<(String, u64)>, LinuxError> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let (Some(key), Some(value), None) = (words.next(), words.next(), words.next()) else {
            return Err(parse_err(path, format!("bad line '{line}' (expected 'name value')")));
        };
        if !keep(key) {
            continue;
        }
        let v = value
            .parse::<u64>()
            .map_err(|_| parse_err(path, format!("bad value '{value}' of {key} (expected a whole number)")))?;
        out.push((key.to_string(), v));
    }
    Ok(out)
}
