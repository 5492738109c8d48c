//! Read the host's NUMA topology from sysfs under a root path (`/` on a live system, a captured
//! tree in tests): `sys/devices/system/node/nodeN/{cpulist,meminfo,distance}` and
//! `sys/devices/system/cpu/cpuK/topology/{physical_package_id,core_id,thread_siblings_list}`.
//! A kernel without NUMA support has no node directory: the whole machine is then node 0, with
//! the CPUs of `sys/devices/system/cpu/online` and `proc/meminfo`'s MemTotal.

use std::fs;
use std::path::{Path, PathBuf};

use numalab_model::CpuSet;
use serde_json::{json, Value};

use crate::error::LinuxError;

#[derive(Clone, Debug, PartialEq)]
pub struct HostNode {
    pub os_index: u32,
    pub cpus: CpuSet,
    pub memory_bytes: u64,
    /// This node's row of the SLIT, over the online nodes in ascending order.
    pub distances: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HostCore {
    pub package: u32,
    pub core_id: u32,
    pub cpus: CpuSet,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HostTopology {
    pub nodes: Vec<HostNode>,
    pub cores: Vec<HostCore>,
    /// True if the kernel exposed no NUMA node directories.
    pub numa_disabled: bool,
}

fn read(path: &Path) -> Result<String, LinuxError> {
    fs::read_to_string(path).map_err(|e| LinuxError::Read { path: path.display().to_string(), message: e.to_string() })
}

fn parse_err(path: &Path, message: impl Into<String>) -> LinuxError {
    LinuxError::Parse { path: path.display().to_string(), message: message.into() }
}

fn cpulist(path: &Path) -> Result<CpuSet, LinuxError> {
    CpuSet::parse_list(&read(path)?).map_err(|e| parse_err(path, e))
}

fn number(path: &Path) -> Result<u32, LinuxError> {
    let s = read(path)?;
    // physical_package_id is -1 on some virtual machines: treat as package 0.
    let v: i64 = s.trim().parse().map_err(|_| parse_err(path, format!("expected a number, got '{}'", s.trim())))?;
    Ok(v.max(0) as u32)
}

/// `Node 0 MemTotal:       16314464 kB` (node meminfo) or `MemTotal:  16314464 kB` (/proc/meminfo).
fn mem_total_bytes(path: &Path) -> Result<u64, LinuxError> {
    let text = read(path)?;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            if w == "MemTotal:" {
                let v = words.next().ok_or_else(|| parse_err(path, "MemTotal has no value"))?;
                let kb: u64 = v.parse().map_err(|_| parse_err(path, format!("bad MemTotal value '{v}'")))?;
                return Ok(kb * 1024);
            }
        }
    }
    Err(parse_err(path, "no MemTotal line"))
}

fn node_dirs(node_root: &Path) -> Result<Vec<(u32, PathBuf)>, LinuxError> {
    let mut out = Vec::new();
    let entries = fs::read_dir(node_root).map_err(|e| LinuxError::Read { path: node_root.display().to_string(), message: e.to_string() })?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(id) = name.strip_prefix("node").and_then(|s| s.parse::<u32>().ok()) {
            out.push((id, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Read the topology under `root` (the directory that holds `sys/` and `proc/`).
pub fn read_topology(root: &Path) -> Result<HostTopology, LinuxError> {
    let sys = root.join("sys/devices/system");
    let node_root = sys.join("node");
    let dirs = if node_root.is_dir() { node_dirs(&node_root)? } else { Vec::new() };
    let (nodes, numa_disabled) = if dirs.is_empty() {
        let cpus = cpulist(&sys.join("cpu/online"))?;
        let memory_bytes = mem_total_bytes(&root.join("proc/meminfo"))?;
        (vec![HostNode { os_index: 0, cpus, memory_bytes, distances: vec![10] }], true)
    } else {
        let mut nodes = Vec::new();
        for (id, dir) in &dirs {
            let cpus = cpulist(&dir.join("cpulist"))?;
            let memory_bytes = mem_total_bytes(&dir.join("meminfo"))?;
            let dpath = dir.join("distance");
            let distances = read(&dpath)?
                .split_whitespace()
                .map(|w| w.parse::<u32>().map_err(|_| parse_err(&dpath, format!("bad distance '{w}'"))))
                .collect::<Result<Vec<_>, _>>()?;
            if distances.len() != dirs.len() {
                return Err(parse_err(&dpath, format!("{} distances for {} nodes", distances.len(), dirs.len())));
            }
            nodes.push(HostNode { os_index: *id, cpus, memory_bytes, distances });
        }
        (nodes, false)
    };
    let cores = read_cores(&sys.join("cpu"), &nodes)?;
    Ok(HostTopology { nodes, cores, numa_disabled })
}

/// Cores from `cpuK/topology`; if absent (some containers), every CPU is its own core.
fn read_cores(cpu_root: &Path, nodes: &[HostNode]) -> Result<Vec<HostCore>, LinuxError> {
    let all = nodes.iter().fold(CpuSet::new(), |a, n| a.union(&n.cpus));
    let mut cores: Vec<HostCore> = Vec::new();
    let mut covered = CpuSet::new();
    for cpu in all.iter() {
        if covered.contains(cpu) {
            continue;
        }
        let topo = cpu_root.join(format!("cpu{cpu}/topology"));
        let core = if topo.is_dir() {
            let siblings = cpulist(&topo.join("thread_siblings_list"))?.intersection(&all);
            HostCore { package: number(&topo.join("physical_package_id"))?, core_id: number(&topo.join("core_id"))?, cpus: siblings }
        } else {
            let package = 0;
            HostCore { package, core_id: cpu, cpus: CpuSet::from_indexes([cpu]) }
        };
        covered = covered.union(&core.cpus);
        cores.push(core);
    }
    Ok(cores)
}

impl HostTopology {
    /// The facts as JSON (`nodes`, `cores`, `numa_disabled`), for the Python layer to complete.
    pub fn to_json(&self) -> Value {
        let node_pkg = |n: &HostNode| self.cores.iter().find(|c| c.cpus.intersection(&n.cpus).weight() > 0).map(|c| c.package).unwrap_or(0);
        json!({
            "numa_disabled": self.numa_disabled,
            "nodes": self.nodes.iter().map(|n| json!({
                "os_index": n.os_index,
                "package": node_pkg(n),
                "cpus": n.cpus.to_list_string(),
                "memory_bytes": n.memory_bytes,
                "distances": n.distances,
            })).collect::<Vec<_>>(),
            "cores": self.cores.iter().map(|c| json!({
                "package": c.package,
                "os_index": c.core_id,
                "cpus": c.cpus.to_list_string(),
            })).collect::<Vec<_>>(),
        })
    }
}
