//! Automatic NUMA balancing knobs (docs/balancing.md), read and written under a root path, and a
//! journal so every change can be undone. The knobs themselves (names, ranges, where each kernel
//! keeps them) are `numalab_model::knobs`.
//!
//! A knob is looked for at its procfs path first, then at its debugfs path; a kernel has at most
//! one of them. Debugfs is readable only by root and only where it is mounted
//! (`/sys/kernel/debug`).

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::statfs::{fstatfs, DEBUGFS_MAGIC, PROC_SUPER_MAGIC, SYSFS_MAGIC};
pub use numalab_model::knobs::{Knob, KNOBS};
use serde_json::{json, Value};

use crate::error::LinuxError;
use crate::io::{parse_err, read};

/// Which file system a knob was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobLocation {
    Procfs,
    Debugfs,
}

impl KnobLocation {
    pub fn name(self) -> &'static str {
        match self {
            KnobLocation::Procfs => "procfs",
            KnobLocation::Debugfs => "debugfs",
        }
    }
}

/// A knob's current value and where it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnobValue {
    pub name: &'static str,
    /// Relative to the root (`proc/sys/kernel/numa_balancing`).
    pub path: String,
    pub location: KnobLocation,
    pub value: u64,
}

impl KnobValue {
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "path": self.path, "location": self.location.name(), "value": self.value})
    }
}

/// The knob called `name` (any letter case), or an error listing the names.
pub fn knob(name: &str) -> Result<&'static Knob, LinuxError> {
    numalab_model::knobs::knob(name).ok_or_else(|| LinuxError::Parse {
        path: name.to_string(),
        message: format!("unknown NUMA balancing knob (known: {})", numalab_model::knobs::names()),
    })
}

/// Where `k` lives under `root`: its procfs file if present, else its debugfs file, else `None`.
pub fn locate(root: &Path, k: &Knob) -> Option<(&'static str, KnobLocation)> {
    [(k.procfs, KnobLocation::Procfs), (k.debugfs, KnobLocation::Debugfs)]
        .into_iter()
        .find_map(|(rel, loc)| rel.filter(|r| root.join(r).exists()).map(|r| (r, loc)))
}

fn read_at(root: &Path, k: &Knob, rel: &'static str, location: KnobLocation) -> Result<KnobValue, LinuxError> {
    let path = root.join(rel);
    let text = read(&path)?;
    let value = text
        .trim()
        .parse::<u64>()
        .map_err(|_| parse_err(&path, format!("expected a whole number, got '{}'", text.trim())))?;
    Ok(KnobValue { name: k.name, path: rel.to_string(), location, value })
}

/// The knob called `name` under `root`; `None` if this kernel (or a debugfs that is not mounted)
/// does not show it.
pub fn read_knob(root: &Path, name: &str) -> Result<Option<KnobValue>, LinuxError> {
    let k = knob(name)?;
    locate(root, k).map(|(rel, loc)| read_at(root, k, rel, loc)).transpose()
}

/// Every knob present under `root`, and the names of those absent, or in a debugfs that refuses
/// reading even to root (a kernel in lockdown: `fs/debugfs/file.c: debugfs_locked_down()`; seen on
/// this project's development VM with debugfs mounted): the listing reports those as a debugfs
/// that is not mounted rather than failing.
pub fn read_knobs(root: &Path) -> Result<(Vec<KnobValue>, Vec<&'static str>), LinuxError> {
    let mut present = Vec::new();
    let mut absent = Vec::new();
    for k in &KNOBS {
        match locate(root, k).map(|(rel, loc)| (read_at(root, k, rel, loc), loc)) {
            Some((Ok(v), _)) => present.push(v),
            Some((Err(e), loc)) if !unseen(&e, loc) => return Err(e),
            _ => absent.push(k.name),
        }
    }
    Ok((present, absent))
}

/// A debugfs knob that denies reading: not seen, as if debugfs were not mounted.
fn unseen(e: &LinuxError, loc: KnobLocation) -> bool {
    loc == KnobLocation::Debugfs && matches!(e, LinuxError::Denied { .. })
}

/// Check a value for knob `name` without writing anything.
pub fn check_value(name: &str, value: u64) -> Result<(), LinuxError> {
    let k = knob(name)?;
    if value > u64::from(k.max) {
        return Err(LinuxError::Parse {
            path: name.to_string(),
            message: format!("value {value} is out of range (0..={})", k.max),
        });
    }
    Ok(())
}

/// Write `value` to knob `name` under `root`; returns the value it had before.
pub fn write_knob(root: &Path, name: &str, value: u64) -> Result<KnobValue, LinuxError> {
    check_value(name, value)?;
    let before = read_knob(root, name)?.ok_or_else(|| absent(root, name))?;
    write_file(root, &before.path, &format!("{value}\n"))?;
    Ok(before)
}

fn absent(root: &Path, name: &str) -> LinuxError {
    let k = knob(name).expect("checked by the caller");
    let places: Vec<String> =
        [k.procfs, k.debugfs].into_iter().flatten().map(|r| root.join(r).display().to_string()).collect();
    LinuxError::Read {
        path: places.join(" or "),
        message: format!(
            "this kernel has no {name} knob (or debugfs is not mounted at {})",
            root.join("sys/kernel/debug").display()
        ),
    }
}

/// A knob file opened for writing, checked: never created (a knob that is absent is not this
/// kernel's), reached through no symbolic link (in any component under the root), a regular file,
/// and on the live system (root `/`) a procfs, sysfs or debugfs file.
struct KnobFile {
    file: fs::File,
    path: PathBuf,
    /// On procfs, sysfs or debugfs (else a copied tree).
    kernel: bool,
}

impl KnobFile {
    fn open(root: &Path, rel: &str) -> Result<KnobFile, LinuxError> {
        let path = root.join(rel);
        let werr = |m: String| LinuxError::Write { path: path.display().to_string(), message: m };
        let mut sofar = root.to_path_buf();
        for part in Path::new(rel).components() {
            sofar.push(part);
            if fs::symlink_metadata(&sofar).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(werr(format!(
                    "{} is a symbolic link; numalab writes knobs only to the regular files themselves",
                    sofar.display()
                )));
            }
        }
        // O_NOFOLLOW closes the window between the check above and the open for the last
        // component; O_NONBLOCK makes a FIFO fail at once (ENXIO) instead of waiting for a reader.
        let file = fs::OpenOptions::new()
            .write(true)
            .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
            .open(&path)
            .map_err(|e| werr(e.to_string()))?;
        if !file.metadata().map_err(|e| werr(e.to_string()))?.file_type().is_file() {
            return Err(werr("not a regular file; numalab writes knobs only to regular proc/sys files".into()));
        }
        let kernel = fstatfs(&file)
            .map(|s| [PROC_SUPER_MAGIC, SYSFS_MAGIC, DEBUGFS_MAGIC].contains(&s.filesystem_type()))
            .map_err(|e| werr(format!("cannot tell its file system: {e}")))?;
        if !kernel && root == Path::new("/") {
            return Err(werr("not a procfs, sysfs or debugfs file; numalab writes knobs only there".into()));
        }
        Ok(KnobFile { file, path, kernel })
    }

    /// Write `text` as the kernel takes it: one `write()` of the whole value at offset 0
    /// (`proc_sys_call_handler()` in fs/proc/proc_sysctl.c and debugfs's `debugfs_attr_write()`
    /// parse one write), so a reader sees the old value or the new one, never half of one. In a
    /// copied tree, whose file system would show a truncated file to a concurrent reader, the
    /// value goes to a temporary file beside the knob, renamed over it.
    fn write(self, text: &str) -> Result<(), LinuxError> {
        let werr = |m: String| LinuxError::Write { path: self.path.display().to_string(), message: m };
        if self.kernel {
            let n = (&self.file).write(text.as_bytes()).map_err(|e| werr(e.to_string()))?;
            if n != text.len() {
                return Err(werr(format!("the kernel took {n} of {} bytes", text.len())));
            }
            return Ok(());
        }
        let name = self.path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let tmp = self.path.with_file_name(format!(".{name}.numalab-{}", std::process::id()));
        let mut t = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| werr(format!("cannot create {}: {e}", tmp.display())))?;
        let done = t.write_all(text.as_bytes()).and_then(|_| fs::rename(&tmp, &self.path));
        if let Err(e) = done {
            // The temporary file is ours; leaving it would litter the tree.
            let _ = fs::remove_file(&tmp);
            return Err(werr(e.to_string()));
        }
        Ok(())
    }
}

/// Write `text` to the knob file `rel` under `root` ([`KnobFile`]).
fn write_file(root: &Path, rel: &str, text: &str) -> Result<(), LinuxError> {
    KnobFile::open(root, rel)?.write(text)
}

/// The original values of changed knobs, kept in a JSON file until they are restored:
/// `{"root": "/", "knobs": [{"name": ..., "path": ..., "location": ..., "value": original}]}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Journal {
    pub root: PathBuf,
    pub entries: Vec<KnobValue>,
}

impl Journal {
    /// Load a journal; `None` if the file does not exist. A knob listed more than once keeps its
    /// first entry: that is the value before any change (a later entry was written over a change).
    pub fn load(path: &Path) -> Result<Option<Journal>, LinuxError> {
        if fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
            return Ok(None);
        }
        let text = read(path)?;
        let bad = |m: &str| parse_err(path, format!("not a numalab knob journal: {m}"));
        let v: Value = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
        let root = v["root"].as_str().ok_or_else(|| bad("no root"))?;
        let mut entries = Vec::new();
        for e in v["knobs"].as_array().ok_or_else(|| bad("no knobs list"))? {
            let name = e["name"].as_str().ok_or_else(|| bad("a knob without name"))?;
            let k = knob(name).map_err(|_| bad(&format!("unknown knob '{name}'")))?;
            let rel = e["path"].as_str().ok_or_else(|| bad("a knob without path"))?;
            let (rel, location) = [(k.procfs, KnobLocation::Procfs), (k.debugfs, KnobLocation::Debugfs)]
                .into_iter()
                .find_map(|(r, l)| r.filter(|r| *r == rel).map(|r| (r, l)))
                .ok_or_else(|| bad(&format!("'{rel}' is not where {name} lives")))?;
            let value = e["value"].as_u64().ok_or_else(|| bad("a knob without a whole-number value"))?;
            if entries.iter().any(|x: &KnobValue| x.name == k.name) {
                continue;
            }
            entries.push(KnobValue { name: k.name, path: rel.to_string(), location, value });
        }
        Ok(Some(Journal { root: PathBuf::from(root), entries }))
    }

    pub fn to_json(&self) -> Value {
        json!({
            "root": self.root.display().to_string(),
            "knobs": self.entries.iter().map(KnobValue::to_json).collect::<Vec<_>>(),
        })
    }

    /// Write the journal durably (a temporary file, fsync, rename), so a crash never leaves a
    /// half-written journal behind.
    pub fn save(&self, path: &Path) -> Result<(), LinuxError> {
        let werr = |e: std::io::Error| LinuxError::Write { path: path.display().to_string(), message: e.to_string() };
        let tmp = path.with_extension("tmp");
        let mut f = fs::File::create(&tmp).map_err(werr)?;
        f.write_all(format!("{}\n", self.to_json()).as_bytes()).map_err(werr)?;
        f.sync_all().map_err(werr)?;
        fs::rename(&tmp, path).map_err(werr)
    }
}

/// Set knobs under `root`, journalling each original value in `journal` before the first write.
/// A knob already in the journal keeps its first original, so repeated `set`s restore to the
/// values before the first. Nothing is written if any name, value or knob is wrong.
pub fn set_knobs(root: &Path, journal: &Path, changes: &[(String, u64)]) -> Result<Vec<KnobValue>, LinuxError> {
    let mut j = match Journal::load(journal)? {
        Some(j) if j.root != root => {
            return Err(parse_err(
                journal,
                format!("journals changes under {}, not {}: restore it first", j.root.display(), root.display()),
            ))
        }
        Some(j) => j,
        None => Journal { root: root.to_path_buf(), entries: Vec::new() },
    };
    let mut current = Vec::new();
    for (name, value) in changes {
        check_value(name, *value)?;
        current.push(read_knob(root, name)?.ok_or_else(|| absent(root, name))?);
    }
    // Every file is opened (and checked) before the journal is written or any knob changed.
    let files = current.iter().map(|c| KnobFile::open(root, &c.path)).collect::<Result<Vec<_>, _>>()?;
    for c in &current {
        if !j.entries.iter().any(|e| e.name == c.name) {
            j.entries.push(c.clone());
        }
    }
    j.save(journal)?;
    for ((_, value), f) in changes.iter().zip(files) {
        f.write(&format!("{value}\n"))?;
    }
    Ok(current)
}

/// Write back every original value of `journal`, then remove it; returns the restored values.
/// With no journal file there is nothing to restore (an empty list). If a write fails the journal
/// stays, so the restore can be retried.
pub fn restore_knobs(root: &Path, journal: &Path) -> Result<Vec<KnobValue>, LinuxError> {
    let Some(j) = Journal::load(journal)? else { return Ok(Vec::new()) };
    if j.root != root {
        return Err(parse_err(journal, format!("journals changes under {}, not {}", j.root.display(), root.display())));
    }
    for e in &j.entries {
        write_file(root, &e.path, &format!("{}\n", e.value))?;
    }
    fs::remove_file(journal)
        .map_err(|e| LinuxError::Write { path: journal.display().to_string(), message: e.to_string() })?;
    Ok(j.entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_debugfs_knob_that_denies_reading_is_unseen_a_procfs_one_an_error() {
        let denied = LinuxError::Denied { path: "sys/kernel/debug/sched/numa_balancing/scan_delay_ms".into() };
        assert!(unseen(&denied, KnobLocation::Debugfs));
        assert!(!unseen(&denied, KnobLocation::Procfs));
        let other = LinuxError::Read { path: "x".into(), message: "I/O error".into() };
        assert!(!unseen(&other, KnobLocation::Debugfs));
    }

    #[test]
    fn every_debugfs_knob_is_under_the_numa_balancing_directory() {
        for k in KNOBS.iter().filter_map(|k| k.debugfs) {
            assert!(k.starts_with("sys/kernel/debug/sched/numa_balancing/"), "{k}");
        }
        assert!(knob("scan_size").unwrap_err().to_string().contains("scan_size_mb"));
        assert!(check_value("numa_balancing", 4).is_err());
        assert!(check_value("numa_balancing", 3).is_ok());
    }

    /// A copied knob tree (numa_balancing and scan_size_mb in procfs) in a fresh directory.
    fn tree(tag: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("numalab-knobs-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
        fs::write(root.join("proc/sys/kernel/numa_balancing"), "0\n").unwrap();
        fs::write(root.join("proc/sys/kernel/numa_balancing_scan_size_mb"), "256\n").unwrap();
        root
    }

    #[test]
    fn writes_never_follow_a_symbolic_link() {
        let root = tree("link");
        let victim = root.join("victim");
        fs::write(&victim, "7\n").unwrap(); // a number, so the read before the write succeeds
        let knob = root.join("proc/sys/kernel/numa_balancing_scan_size_mb");
        fs::remove_file(&knob).unwrap();
        std::os::unix::fs::symlink(&victim, &knob).unwrap();
        let e = write_knob(&root, "scan_size_mb", 64).unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        // A link higher up the path is refused too.
        fs::remove_file(&knob).unwrap();
        fs::rename(root.join("proc/sys/kernel"), root.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("proc/sys/kernel")).unwrap();
        let e = write_knob(&root, "numa_balancing", 1).unwrap_err().to_string();
        assert!(e.contains("proc/sys/kernel is a symbolic link"), "{e}");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "7\n");
        assert_eq!(fs::read_to_string(root.join("elsewhere/numa_balancing")).unwrap(), "0\n");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_knob_listed_twice_in_a_journal_restores_its_first_value() {
        let root = tree("dup");
        let journal = root.join("journal.json");
        let entry = |v: u64| json!({"name": "numa_balancing", "path": "proc/sys/kernel/numa_balancing", "location": "procfs", "value": v});
        let text = json!({"root": root.display().to_string(), "knobs": [entry(0), entry(1)]});
        fs::write(&journal, text.to_string()).unwrap();
        fs::write(root.join("proc/sys/kernel/numa_balancing"), "2\n").unwrap();
        let restored = restore_knobs(&root, &journal).unwrap();
        assert_eq!(restored.iter().map(|k| k.value).collect::<Vec<_>>(), [0]);
        assert_eq!(fs::read_to_string(root.join("proc/sys/kernel/numa_balancing")).unwrap(), "0\n");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_reader_never_sees_a_half_written_knob() {
        let root = tree("atomic");
        let path = root.join("proc/sys/kernel/numa_balancing_scan_size_mb");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (path, stop) = (path.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let text = fs::read_to_string(&path).unwrap();
                    assert!(text == "256\n" || text == "64\n", "read {text:?}");
                    reads += 1;
                }
                reads
            })
        };
        for i in 0..2000 {
            write_knob(&root, "scan_size_mb", if i % 2 == 0 { 64 } else { 256 }).unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        assert_eq!(fs::read_dir(root.join("proc/sys/kernel")).unwrap().count(), 2, "no temporary file is left");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_live_root_takes_only_kernel_files() {
        // A regular file under / that is not on procfs, sysfs or debugfs is refused, even to root.
        let rel = format!("tmp/numalab-knob-live-{}", std::process::id());
        let path = Path::new("/").join(&rel);
        fs::write(&path, "5\n").unwrap();
        let e = write_file(Path::new("/"), &rel, "6\n").unwrap_err().to_string();
        assert!(e.contains("not a procfs, sysfs or debugfs file"), "{e}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "5\n");
        fs::remove_file(&path).unwrap();
    }
}
