//! Read the host's NUMA topology from sysfs under a root path (`/` on a live system, a captured
//! tree in tests): `sys/devices/system/node/nodeN/{cpulist,meminfo,distance}` and
//! `sys/devices/system/cpu/cpuK/topology/{physical_package_id,core_id,thread_siblings_list}`.
//! A kernel without NUMA support has no node directory: the whole machine is then node 0, with
//! the CPUs of `sys/devices/system/cpu/online` and `proc/meminfo`'s MemTotal and MemFree.
//! Formats: Documentation/ABI/stable/sysfs-devices-node (`distance` is one line of the node's SLIT
//! row over the online nodes, `meminfo` is `Node N Key:  value kB` lines).
//!
//! Caches come from `sys/devices/system/cpu/cpuK/cache/indexI/{level,type,size,shared_cpu_list}`
//! (Documentation/ABI/testing/sysfs-devices-system-cpu, written by drivers/base/cacheinfo.c:
//! `type` is `Data`, `Instruction` or `Unified`, `size` is `%uK`, and
//! `cache_default_attrs_is_visible()` hides an attribute whose value the architecture code left
//! at 0, so a missing `size` or `level` means "unknown", not an error). Every CPU lists every
//! cache it uses, so one instance appears once per CPU that shares it: instances are the distinct
//! (level, shared_cpu_list) pairs.

use std::collections::BTreeSet;
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
    /// MemFree at the time of reading (what `numactl --hardware` prints as `node N free:`);
    /// `None` if the meminfo file has no MemFree line.
    pub memory_free_bytes: Option<u64>,
    /// This node's row of the SLIT, over the online nodes in ascending order.
    pub distances: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HostCore {
    pub package: u32,
    pub core_id: u32,
    pub cpus: CpuSet,
}

/// One data or unified cache instance (instruction caches are left out: they hold no data).
#[derive(Clone, Debug, PartialEq)]
pub struct HostCache {
    pub level: u32,
    /// `Data` or `Unified`, as sysfs spells it.
    pub kind: String,
    pub size_bytes: u64,
    /// The PUs that share it (`shared_cpu_list`, restricted to the machine's CPUs).
    pub cpus: CpuSet,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HostTopology {
    pub nodes: Vec<HostNode>,
    pub cores: Vec<HostCore>,
    /// Data and unified caches of every level, by level then first CPU; empty when the kernel
    /// exposes no `cpuK/cache` directory (many virtual machines, kernels without cacheinfo).
    pub caches: Vec<HostCache>,
    /// True if the kernel exposed no NUMA node directories.
    pub numa_disabled: bool,
}

/// A sysfs attribute (bounded, as every reader's; a permission error is named as such).
fn read(path: &Path) -> Result<String, LinuxError> {
    crate::io::read(path)
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

/// The value of `key` in kB, as bytes, from a meminfo file: `Node 0 MemTotal:  16314464 kB`
/// (node meminfo) or `MemTotal:  16314464 kB` (/proc/meminfo); `None` if no line has the key.
fn meminfo_bytes(path: &Path, text: &str, key: &str) -> Result<Option<u64>, LinuxError> {
    let label = format!("{key}:");
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.by_ref().any(|w| w == label) {
            let v = words.next().ok_or_else(|| parse_err(path, format!("{key} has no value")))?;
            let kb: u64 =
                v.parse().map_err(|_| parse_err(path, format!("bad {key} value '{v}' (expected a number of kB)")))?;
            return Ok(Some(kb * 1024));
        }
    }
    Ok(None)
}

/// MemTotal (required) and MemFree (optional) of a meminfo file.
fn memory(path: &Path) -> Result<(u64, Option<u64>), LinuxError> {
    let text = read(path)?;
    let total = meminfo_bytes(path, &text, "MemTotal")?.ok_or_else(|| parse_err(path, "no MemTotal line"))?;
    Ok((total, meminfo_bytes(path, &text, "MemFree")?))
}

/// One SLIT row: whitespace-separated integers, one per online node.
fn distance_row(path: &Path, nr_nodes: usize) -> Result<Vec<u32>, LinuxError> {
    let row = read(path)?
        .split_whitespace()
        .map(|w| w.parse::<u32>().map_err(|_| parse_err(path, format!("bad distance '{w}' (expected a whole number)"))))
        .collect::<Result<Vec<_>, _>>()?;
    if row.len() != nr_nodes {
        return Err(parse_err(path, format!("has {} distances, expected {nr_nodes} (one per online node)", row.len())));
    }
    Ok(row)
}

fn node_dirs(node_root: &Path) -> Result<Vec<(u32, PathBuf)>, LinuxError> {
    let mut out = Vec::new();
    let entries = fs::read_dir(node_root)
        .map_err(|e| LinuxError::Read { path: node_root.display().to_string(), message: e.to_string() })?;
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
        (vec![whole_machine_node(root, &sys)?], true)
    } else {
        (dirs.iter().map(|(id, dir)| read_node(*id, dir, dirs.len())).collect::<Result<Vec<_>, _>>()?, false)
    };
    let cores = read_cores(&sys.join("cpu"), &nodes)?;
    let caches = read_caches(&sys.join("cpu"), &nodes)?;
    Ok(HostTopology { nodes, cores, caches, numa_disabled })
}

fn read_node(os_index: u32, dir: &Path, nr_nodes: usize) -> Result<HostNode, LinuxError> {
    let cpus = cpulist(&dir.join("cpulist"))?;
    let (memory_bytes, memory_free_bytes) = memory(&dir.join("meminfo"))?;
    let distances = distance_row(&dir.join("distance"), nr_nodes)?;
    Ok(HostNode { os_index, cpus, memory_bytes, memory_free_bytes, distances })
}

/// Without NUMA support the kernel still lists online CPUs and total memory: one node 0.
fn whole_machine_node(root: &Path, sys: &Path) -> Result<HostNode, LinuxError> {
    let cpus = cpulist(&sys.join("cpu/online"))?;
    let (memory_bytes, memory_free_bytes) = memory(&root.join("proc/meminfo"))?;
    Ok(HostNode { os_index: 0, cpus, memory_bytes, memory_free_bytes, distances: vec![10] })
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
            // A CPU is its own sibling; adding it keeps a malformed list from leaving it coreless.
            let siblings =
                cpulist(&topo.join("thread_siblings_list"))?.intersection(&all).union(&CpuSet::from_indexes([cpu]));
            HostCore {
                package: number(&topo.join("physical_package_id"))?,
                core_id: number(&topo.join("core_id"))?,
                cpus: siblings,
            }
        } else {
            let package = 0;
            HostCore { package, core_id: cpu, cpus: CpuSet::from_indexes([cpu]) }
        };
        covered = covered.union(&core.cpus);
        cores.push(core);
    }
    Ok(cores)
}

/// The numbered `indexI` directories of one CPU's `cache` directory, in index order.
fn cache_index_dirs(cache_dir: &Path) -> Result<Vec<PathBuf>, LinuxError> {
    let entries = fs::read_dir(cache_dir)
        .map_err(|e| LinuxError::Read { path: cache_dir.display().to_string(), message: e.to_string() })?;
    let mut out: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.strip_prefix("index").and_then(|s| s.parse::<u32>().ok()).map(|i| (i, e.path()))
        })
        .collect();
    out.sort();
    Ok(out.into_iter().map(|(_, p)| p).collect())
}

/// `size` as cacheinfo.c's `size_show` writes it (`32K`, `32768K`): bytes.
fn cache_size(path: &Path) -> Result<u64, LinuxError> {
    let s = read(path)?;
    let t = s.trim();
    let kib: u64 = t
        .strip_suffix('K')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| parse_err(path, format!("bad cache size '{t}' (expected a number of KiB such as 32768K)")))?;
    Ok(kib * 1024)
}

/// One index directory as a cache of `cpu`; `None` for an instruction cache or one whose
/// type, level or size the kernel does not show.
fn read_cache(dir: &Path, cpu: u32, all: &CpuSet) -> Result<Option<HostCache>, LinuxError> {
    let (type_path, level_path, size_path) = (dir.join("type"), dir.join("level"), dir.join("size"));
    if !(type_path.is_file() && level_path.is_file() && size_path.is_file()) {
        return Ok(None);
    }
    let kind = read(&type_path)?.trim().to_string();
    if kind != "Data" && kind != "Unified" {
        return Ok(None);
    }
    let level = number(&level_path)?;
    let size_bytes = cache_size(&size_path)?;
    let list = dir.join("shared_cpu_list");
    let shared = if list.is_file() { cpulist(&list)?.intersection(all) } else { CpuSet::new() };
    // The CPU whose directory this is uses the cache, whatever the list says.
    let cpus = shared.union(&CpuSet::from_indexes([cpu]));
    Ok(Some(HostCache { level, kind, size_bytes, cpus }))
}

/// Every CPU's data and unified caches, one entry per (level, shared CPUs).
fn read_caches(cpu_root: &Path, nodes: &[HostNode]) -> Result<Vec<HostCache>, LinuxError> {
    let all = nodes.iter().fold(CpuSet::new(), |a, n| a.union(&n.cpus));
    let mut caches: Vec<HostCache> = Vec::new();
    // (level, shared CPUs) already seen: a set, since every CPU of an instance lists it again.
    let mut seen: BTreeSet<(u32, String)> = BTreeSet::new();
    for cpu in all.iter() {
        let cache_dir = cpu_root.join(format!("cpu{cpu}/cache"));
        if !cache_dir.is_dir() {
            continue;
        }
        for dir in cache_index_dirs(&cache_dir)? {
            if let Some(c) = read_cache(&dir, cpu, &all)? {
                if seen.insert((c.level, c.cpus.to_list_string())) {
                    caches.push(c);
                }
            }
        }
    }
    caches.sort_by_key(|c| (c.level, c.cpus.first()));
    Ok(caches)
}

impl HostTopology {
    /// The facts as JSON (`nodes`, `cores`, `caches`, `numa_disabled`), for the Python layer to
    /// complete; `memory_free_bytes` is `null` when meminfo had no MemFree line.
    pub fn to_json(&self) -> Value {
        let node_pkg = |n: &HostNode| {
            self.cores.iter().find(|c| c.cpus.intersection(&n.cpus).weight() > 0).map(|c| c.package).unwrap_or(0)
        };
        json!({
            "numa_disabled": self.numa_disabled,
            "nodes": self.nodes.iter().map(|n| json!({
                "os_index": n.os_index,
                "package": node_pkg(n),
                "cpus": n.cpus.to_list_string(),
                "memory_bytes": n.memory_bytes,
                "memory_free_bytes": n.memory_free_bytes,
                "distances": n.distances,
            })).collect::<Vec<_>>(),
            "cores": self.cores.iter().map(|c| json!({
                "package": c.package,
                "os_index": c.core_id,
                "cpus": c.cpus.to_list_string(),
            })).collect::<Vec<_>>(),
            "caches": self.caches.iter().map(|c| json!({
                "level": c.level,
                "type": c.kind,
                "size_bytes": c.size_bytes,
                "cpus": c.cpus.to_list_string(),
            })).collect::<Vec<_>>(),
        })
    }
}
