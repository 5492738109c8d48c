//! Who may run where: `/proc/PID/status` (`Cpus_allowed_list`, `Mems_allowed_list`, from
//! `task_cpus_allowed()` / `task_mems_allowed()` in fs/proc/array.c and kernel/cgroup/cpuset.c) and
//! the node state masks of `/sys/devices/system/node/{possible,online,has_memory,has_cpu}`
//! (Documentation/ABI/stable/sysfs-devices-node; `print_nodes_state()` in drivers/base/node.c).

use std::path::Path;

use numalab_model::{CpuSet, NodeSet};

use crate::error::LinuxError;
use crate::io::{parse_err, read};

#[derive(Clone, Debug, PartialEq)]
pub struct ProcStatus {
    /// `Name:` (the command name, at most 15 bytes).
    pub name: String,
    /// `Threads:`.
    pub threads: u32,
    /// `Cpus_allowed_list:` (affinity, within the cpuset).
    pub cpus_allowed: CpuSet,
    /// `Mems_allowed_list:` (the cpuset's memory nodes; not the memory policy).
    pub mems_allowed: NodeSet,
}

/// Read `proc/PID/status` under `root`.
pub fn read_status(root: &Path, pid: u32) -> Result<ProcStatus, LinuxError> {
    let path = root.join(format!("proc/{pid}/status"));
    parse_status(&path, &read(&path)?)
}

pub fn parse_status(path: &Path, text: &str) -> Result<ProcStatus, LinuxError> {
    let field = |key: &str| -> Result<&str, LinuxError> {
        text.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(':')))
            .map(str::trim)
            .ok_or_else(|| parse_err(path, format!("no {key} line")))
    };
    let list = |key: &str| -> Result<CpuSet, LinuxError> {
        CpuSet::parse_list(field(key)?).map_err(|e| parse_err(path, format!("{key}: {e}")))
    };
    let threads = field("Threads")?;
    Ok(ProcStatus {
        name: field("Name")?.to_string(),
        threads: threads.parse().map_err(|_| parse_err(path, format!("bad Threads value '{threads}'")))?,
        cpus_allowed: list("Cpus_allowed_list")?,
        mems_allowed: list("Mems_allowed_list")?,
    })
}

/// The kernel's node states (`node_states[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeStates {
    pub possible: NodeSet,
    pub online: NodeSet,
    /// Nodes with memory (`N_MEMORY`): the only ones `MPOL_BIND` / `MPOL_PREFERRED` can allocate on.
    pub has_memory: NodeSet,
    /// Nodes with CPUs (`N_CPU`).
    pub has_cpu: NodeSet,
    /// True if the kernel has no node directory (no NUMA): everything is node 0.
    pub numa_disabled: bool,
}

/// Read the node state masks under `root`.
pub fn read_node_states(root: &Path) -> Result<NodeStates, LinuxError> {
    let dir = root.join("sys/devices/system/node");
    if !dir.is_dir() {
        let zero = NodeSet::from_indexes([0]);
        return Ok(NodeStates {
            possible: zero.clone(),
            online: zero.clone(),
            has_memory: zero.clone(),
            has_cpu: zero,
            numa_disabled: true,
        });
    }
    let mask = |name: &str| -> Result<NodeSet, LinuxError> {
        let path = dir.join(name);
        NodeSet::parse_list(&read(&path)?).map_err(|e| parse_err(&path, e))
    };
    Ok(NodeStates {
        possible: mask("possible")?,
        online: mask("online")?,
        has_memory: mask("has_memory")?,
        has_cpu: mask("has_cpu")?,
        numa_disabled: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lists() {
        let text = "Name:\tdgemv\nUmask:\t0022\nThreads:\t4\nCpus_allowed:\tff\nCpus_allowed_list:\t0-3,8\nMems_allowed:\t00000003\nMems_allowed_list:\t0-1\n";
        let s = parse_status(Path::new("status"), text).unwrap();
        assert_eq!(s.name, "dgemv");
        assert_eq!(s.threads, 4);
        assert_eq!(s.cpus_allowed.to_list_string(), "0-3,8");
        assert_eq!(s.mems_allowed.to_list_string(), "0-1");
        let e = parse_status(Path::new("p/status"), "Name:\tx\nThreads:\t1\n").unwrap_err().to_string();
        assert!(e.contains("p/status") && e.contains("Cpus_allowed_list"), "{e}");
    }
}
