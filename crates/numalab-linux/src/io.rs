//! File access shared by the readers: every path is under a caller's root, every error names the
//! file, and every read is bounded, so a captured tree whose file is a link to `/dev/zero` (or a
//! FIFO) ends in an error instead of growing without bound or blocking.

use std::fs;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::OFlag;

use crate::error::LinuxError;

/// The most a small system file (a sysctl, `status`, `sched`, `vmstat`, a sysfs attribute) may hold.
pub const SMALL_FILE_MAX: u64 = 1 << 20;
/// The most `/proc/PID/numa_maps` may hold: one line of ~200 bytes per mapping, so ~300,000
/// mappings (the default `vm.max_map_count` is 65,530).
pub const NUMA_MAPS_MAX: u64 = 64 << 20;

/// Read a small text file (at most [`SMALL_FILE_MAX`] bytes).
pub(crate) fn read(path: &Path) -> Result<String, LinuxError> {
    read_bounded(path, SMALL_FILE_MAX)
}

/// Read a whole text file of at most `max` bytes; a permission error becomes
/// [`LinuxError::Denied`]. Only regular files are read: procfs, sysfs and debugfs files are
/// regular, and a device or FIFO in a captured tree would never end (or never start).
pub(crate) fn read_bounded(path: &Path, max: u64) -> Result<String, LinuxError> {
    let shown = || path.display().to_string();
    let rerr = |e: std::io::Error| {
        if e.kind() == ErrorKind::PermissionDenied {
            LinuxError::Denied { path: shown() }
        } else {
            LinuxError::Read { path: shown(), message: e.to_string() }
        }
    };
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it changes nothing for regular files.
    let f = fs::OpenOptions::new().read(true).custom_flags(OFlag::O_NONBLOCK.bits()).open(path).map_err(rerr)?;
    let kind = f.metadata().map_err(rerr)?.file_type();
    if !kind.is_file() {
        let what = if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(LinuxError::Read { path: shown(), message: format!("{what}, not a regular system file") });
    }
    let mut bytes = Vec::new();
    f.take(max + 1).read_to_end(&mut bytes).map_err(rerr)?;
    if bytes.len() as u64 > max {
        return Err(LinuxError::Read {
            path: shown(),
            message: format!("larger than {} (the most numalab reads from one such file)", size(max)),
        });
    }
    String::from_utf8(bytes).map_err(|_| LinuxError::Read { path: shown(), message: "not UTF-8 text".into() })
}

fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_bounded_and_only_of_regular_files() {
        let e = read(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("/dev/zero") && e.contains("a device"), "{e}");
        let dir = std::env::temp_dir().join(format!("numalab-io-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big");
        fs::write(&big, vec![b'1'; 2000]).unwrap();
        let e = read_bounded(&big, 1000).unwrap_err().to_string();
        assert!(e.contains("larger than 1000 bytes"), "{e}");
        assert_eq!(read_bounded(&big, 2000).unwrap().len(), 2000);
        fs::remove_dir_all(&dir).unwrap();
    }
}
