//! `/proc/PID/task/TID/sched`: the scheduler's per-task debug view (`proc_sched_show_task()` in
//! the kernel's kernel/sched/debug.c). numalab reads the header, a few `name : value` lines and the
//! NUMA balancing block that `sched_show_numa()` appends when the kernel has
//! CONFIG_NUMA_BALANCING:
//!
//! ```text
//! dgemv (4242, #threads: 4)
//! -------------------------------------------------------------------
//! se.sum_exec_runtime                          :          1234.567890
//! se.nr_migrations                             :                   17
//! ...
//! mm->numa_scan_seq                            :                    3
//! numa_pages_migrated                          :                  120
//! numa_preferred_nid                           :                    1
//! total_numa_faults                            :                  830
//! current_node=1, numa_group_id=4242
//! numa_faults node=0 task_private=10 task_shared=0 group_private=12 group_shared=0
//! numa_faults node=1 task_private=800 task_shared=20 group_private=801 group_shared=20
//! ```
//!
//! `numa_faults` lines come from `print_numa_stats()` (one per online node, from
//! `show_numa_stats()` in kernel/sched/fair.c); `mm->numa_scan_seq` is absent for a task without
//! an mm, and the whole block is absent without CONFIG_NUMA_BALANCING.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use crate::error::LinuxError;
use crate::io::{parse_err, read};

/// `numa_faults node=N ...`, the one type the engine's output uses too.
pub use numalab_model::counters::NodeFaults;

/// The NUMA balancing block of a task's sched file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskNuma {
    /// `mm->numa_scan_seq`: completed scan passes over the address space (`None` without an mm).
    pub numa_scan_seq: Option<u64>,
    pub numa_pages_migrated: u64,
    /// `-1` when the task has no preferred node yet.
    pub numa_preferred_nid: i64,
    pub total_numa_faults: u64,
    /// `current_node=`: the node of the CPU the task is on.
    pub current_node: Option<i64>,
    /// `numa_group_id=`: 0 when the task is in no numa group.
    pub numa_group_id: Option<i64>,
    pub faults: Vec<NodeFaults>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TaskSched {
    pub tid: u32,
    pub comm: String,
    /// `se.sum_exec_runtime`, in nanoseconds (printed as milliseconds with 6 decimals).
    pub sum_exec_runtime_ns: u64,
    /// `se.nr_migrations`: moves between CPUs.
    pub nr_migrations: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    /// `None` when the kernel has no NUMA balancing (no CONFIG_NUMA_BALANCING).
    pub numa: Option<TaskNuma>,
}

/// Read `proc/PID/task/TID/sched` under `root`.
pub fn read_task_sched(root: &Path, pid: u32, tid: u32) -> Result<TaskSched, LinuxError> {
    let path = root.join(format!("proc/{pid}/task/{tid}/sched"));
    parse_sched(&path, tid, &read(&path)?)
}

/// Every thread of process `pid` (`proc/PID/task/*`), by thread id; a thread that exits between
/// listing and reading is left out.
pub fn read_threads_sched(root: &Path, pid: u32) -> Result<Vec<TaskSched>, LinuxError> {
    let dir = root.join(format!("proc/{pid}/task"));
    let entries = fs::read_dir(&dir).map_err(|e| {
        let path = dir.display().to_string();
        match e.kind() {
            ErrorKind::PermissionDenied => LinuxError::Denied { path },
            _ => LinuxError::Read { path, message: e.to_string() },
        }
    })?;
    let mut tids: Vec<u32> = entries.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    tids.sort_unstable();
    let mut out = Vec::with_capacity(tids.len());
    for tid in tids {
        match read_task_sched(root, pid, tid) {
            Ok(t) => out.push(t),
            Err(LinuxError::Read { .. }) if !root.join(format!("proc/{pid}/task/{tid}")).exists() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Parse the text of a sched file; `tid` is the thread it belongs to, `path` names it in errors.
pub fn parse_sched(path: &Path, tid: u32, text: &str) -> Result<TaskSched, LinuxError> {
    let mut lines = text.lines();
    let header = lines.next().ok_or_else(|| parse_err(path, "empty file"))?;
    // `comm (pid, #threads: n)`; comm may itself hold spaces and parentheses.
    let comm =
        header.rfind(" (").map(|i| &header[..i]).ok_or_else(|| parse_err(path, format!("bad header '{header}'")))?;
    let mut t = TaskSched {
        tid,
        comm: comm.to_string(),
        sum_exec_runtime_ns: 0,
        nr_migrations: 0,
        nr_voluntary_switches: 0,
        nr_involuntary_switches: 0,
        numa: None,
    };
    let mut numa = TaskNuma { numa_preferred_nid: -1, ..TaskNuma::default() };
    let mut has_numa = false;
    let int = |name: &str, v: &str| -> Result<i64, LinuxError> {
        v.trim().parse::<i64>().map_err(|_| parse_err(path, format!("bad {name} value '{}'", v.trim())))
    };
    let count = |name: &str, v: &str| -> Result<u64, LinuxError> {
        v.trim().parse::<u64>().map_err(|_| parse_err(path, format!("bad {name} value '{}'", v.trim())))
    };
    for line in lines {
        if let Some(rest) = line.strip_prefix("numa_faults ") {
            has_numa = true;
            numa.faults.push(parse_faults(path, rest)?);
        } else if line.starts_with("current_node=") {
            has_numa = true;
            for part in line.split(',') {
                let (k, v) =
                    part.trim().split_once('=').ok_or_else(|| parse_err(path, format!("bad line '{line}'")))?;
                match k {
                    "current_node" => numa.current_node = Some(int(k, v)?),
                    "numa_group_id" => numa.numa_group_id = Some(int(k, v)?),
                    _ => {}
                }
            }
        } else if let Some((k, v)) = line.split_once(':') {
            let k = k.trim();
            match k {
                "se.sum_exec_runtime" => t.sum_exec_runtime_ns = ms_to_ns(path, v.trim())?,
                "se.nr_migrations" => t.nr_migrations = count(k, v)?,
                "nr_voluntary_switches" => t.nr_voluntary_switches = count(k, v)?,
                "nr_involuntary_switches" => t.nr_involuntary_switches = count(k, v)?,
                "mm->numa_scan_seq" => {
                    has_numa = true;
                    numa.numa_scan_seq = Some(count(k, v)?);
                }
                "numa_pages_migrated" => {
                    has_numa = true;
                    numa.numa_pages_migrated = count(k, v)?;
                }
                "numa_preferred_nid" => {
                    has_numa = true;
                    numa.numa_preferred_nid = int(k, v)?;
                }
                "total_numa_faults" => {
                    has_numa = true;
                    numa.total_numa_faults = count(k, v)?;
                }
                _ => {}
            }
        }
    }
    if has_numa {
        t.numa = Some(numa);
    }
    Ok(t)
}

/// `node=0 task_private=1 task_shared=2 group_private=3 group_shared=4`.
fn parse_faults(path: &Path, rest: &str) -> Result<NodeFaults, LinuxError> {
    let mut f = NodeFaults::default();
    let mut seen_node = false;
    for tok in rest.split_whitespace() {
        let (k, v) = tok.split_once('=').ok_or_else(|| parse_err(path, format!("bad numa_faults token '{tok}'")))?;
        let n: u64 = v.parse().map_err(|_| parse_err(path, format!("bad numa_faults value in '{tok}'")))?;
        match k {
            "node" => {
                f.node = n as u32;
                seen_node = true;
            }
            "task_private" => f.task_private = n,
            "task_shared" => f.task_shared = n,
            "group_private" => f.group_private = n,
            "group_shared" => f.group_shared = n,
            _ => {}
        }
    }
    if !seen_node {
        return Err(parse_err(path, format!("numa_faults line without node= ('{rest}')")));
    }
    Ok(f)
}

/// `1234.567890` (milliseconds, `SPLIT_NS`) to nanoseconds.
fn ms_to_ns(path: &Path, v: &str) -> Result<u64, LinuxError> {
    let bad = || parse_err(path, format!("bad time '{v}' (expected milliseconds as N.NNNNNN)"));
    let (ms, frac) = v.split_once('.').unwrap_or((v, "0"));
    let ms: i64 = ms.parse().map_err(|_| bad())?;
    let frac_ns: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<6}")[..6].parse().map_err(|_| bad())? };
    Ok((ms.max(0) as u64) * 1_000_000 + frac_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
my prog (x) (4243, #threads: 4)
-------------------------------------------------------------------
se.exec_start                                :        586396.999780
se.sum_exec_runtime                          :          1234.567890
se.nr_migrations                             :                   17
nr_voluntary_switches                        :                    5
nr_involuntary_switches                      :                    2
mm->numa_scan_seq                            :                    3
numa_pages_migrated                          :                  120
numa_preferred_nid                           :                    1
total_numa_faults                            :                  830
current_node=1, numa_group_id=4242
numa_faults node=0 task_private=10 task_shared=0 group_private=12 group_shared=0
numa_faults node=1 task_private=800 task_shared=20 group_private=801 group_shared=21
";

    #[test]
    fn parses_the_numa_block() {
        let t = parse_sched(Path::new("sched"), 4243, SAMPLE).unwrap();
        assert_eq!(t.comm, "my prog (x)");
        assert_eq!(t.sum_exec_runtime_ns, 1_234_567_890);
        assert_eq!((t.nr_migrations, t.nr_voluntary_switches, t.nr_involuntary_switches), (17, 5, 2));
        let n = t.numa.unwrap();
        assert_eq!((n.numa_scan_seq, n.numa_pages_migrated, n.numa_preferred_nid), (Some(3), 120, 1));
        assert_eq!((n.current_node, n.numa_group_id, n.total_numa_faults), (Some(1), Some(4242), 830));
        assert_eq!(n.faults.len(), 2);
        assert_eq!(
            n.faults[1],
            NodeFaults { node: 1, task_private: 800, task_shared: 20, group_private: 801, group_shared: 21 }
        );
    }

    #[test]
    fn without_numa_balancing_there_is_no_block() {
        let text: String = SAMPLE.lines().take(7).map(|l| format!("{l}\n")).collect();
        let t = parse_sched(Path::new("sched"), 1, &text).unwrap();
        assert!(t.numa.is_none());
    }

    #[test]
    fn a_bad_value_names_the_field() {
        let text = SAMPLE
            .replace("total_numa_faults                            :                  830", "total_numa_faults : x");
        let e = parse_sched(Path::new("t/sched"), 1, &text).unwrap_err().to_string();
        assert!(e.contains("t/sched") && e.contains("total_numa_faults") && e.contains("'x'"), "{e}");
    }
}
