//! `/proc/PID/numa_maps`: one line per mapping, as `show_numa_map()` in the kernel's
//! fs/proc/task_mmu.c prints it:
//!
//! ```text
//! 7f2c4a000000 bind:0-1 anon=512 dirty=512 active=0 N0=256 N1=256 kernelpagesize_kB=4
//! 55d0c0a00000 default file=/usr/bin/cat mapped=6 N0=6 kernelpagesize_kB=4
//! 7ffd1e9f0000 interleave:0-3 stack anon=3 dirty=3 N0=2 N1=1 kernelpagesize_kB=4
//! ```
//!
//! The policy is `mpol_to_str()` (mm/mempolicy.c): a mode from `policy_modes[]` (`default`,
//! `prefer`, `bind`, `interleave`, `weighted interleave`, `local`, `prefer (many)`), optional
//! `=flags` (`static`, `relative`, `balancing`, joined by `|`), optional `:nodelist`. Then `file=PATH`,
//! `heap` or `stack`; `huge` for hugetlb; counters printed only when non-zero (`anon`, `dirty`,
//! `mapmax`, `swapcache`, `writeback`), `mapped` only when it differs from both anon and dirty,
//! `active` only when below the page count; `N<node>=pages` per node with memory; and
//! `kernelpagesize_kB` (absent when the mapping has no pages). Pages are counted in base pages,
//! except in hugetlb mappings, where one is a huge page of `kernelpagesize_kB`.

use std::collections::BTreeMap;
use std::path::Path;

use numalab_model::{NodeSet, PolicyMode};

use crate::error::LinuxError;
use crate::io::{parse_err, read_bounded, NUMA_MAPS_MAX};

/// What backs a mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MappingKind {
    File(String),
    Heap,
    Stack,
    /// Anonymous memory other than the initial heap and stack (mmap, thread stacks, ...).
    Anon,
}

impl MappingKind {
    /// `heap`, `stack`, `anon`, or the file's path.
    pub fn label(&self) -> &str {
        match self {
            MappingKind::File(p) => p,
            MappingKind::Heap => "heap",
            MappingKind::Stack => "stack",
            MappingKind::Anon => "anon",
        }
    }
}

/// A mapping's policy as numa_maps prints it.
#[derive(Clone, Debug, PartialEq)]
pub struct MappingPolicy {
    pub mode: PolicyMode,
    /// `static`, `relative`, `balancing` (kernel spellings), in printed order.
    pub flags: Vec<String>,
    pub nodes: NodeSet,
    /// The policy text exactly as printed (`bind:0-1`, `prefer (many):0,2`, `interleave=static:0-3`).
    pub text: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NumaMapping {
    pub address: u64,
    pub policy: MappingPolicy,
    pub kind: MappingKind,
    /// A hugetlb mapping (`huge`): its node counts are huge pages.
    pub huge: bool,
    pub anon: u64,
    pub dirty: u64,
    /// `mapped=`; `None` when the kernel left it out because it equals anon or dirty.
    pub mapped: Option<u64>,
    pub mapmax: u64,
    pub swapcache: u64,
    /// `active=`; `None` when the kernel left it out (all pages active, or hugetlb).
    pub active: Option<u64>,
    pub writeback: u64,
    /// `N<node>=<pages>`, nodes in ascending order.
    pub pages_per_node: BTreeMap<u32, u64>,
    /// `kernelpagesize_kB=`; `None` for a mapping with no pages.
    pub kernelpagesize_kb: Option<u64>,
}

impl NumaMapping {
    /// Pages of the mapping on any node.
    pub fn pages(&self) -> u64 {
        self.pages_per_node.values().sum()
    }

    /// Bytes on each node (`pages * kernelpagesize_kB * 1024`).
    pub fn bytes_per_node(&self) -> BTreeMap<u32, u64> {
        let page = self.kernelpagesize_kb.unwrap_or(4) * 1024;
        self.pages_per_node.iter().map(|(n, p)| (*n, p * page)).collect()
    }
}

/// Read `proc/PID/numa_maps` under `root`.
pub fn read_numa_maps(root: &Path, pid: u32) -> Result<Vec<NumaMapping>, LinuxError> {
    let path = root.join(format!("proc/{pid}/numa_maps"));
    parse_numa_maps(&path, &read_bounded(&path, NUMA_MAPS_MAX)?)
}

/// Parse the text of a numa_maps file; `path` names it in errors.
pub fn parse_numa_maps(path: &Path, text: &str) -> Result<Vec<NumaMapping>, LinuxError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| parse_line(l).map_err(|m| parse_err(path, format!("line {}: {m}", i + 1))))
        .collect()
}

/// Pages per node summed over mappings (base pages and huge pages mixed, as numa_maps counts them).
pub fn pages_per_node(maps: &[NumaMapping]) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for m in maps {
        for (n, p) in &m.pages_per_node {
            *out.entry(*n).or_insert(0) += p;
        }
    }
    out
}

/// Bytes per node summed over mappings.
pub fn bytes_per_node(maps: &[NumaMapping]) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for m in maps {
        for (n, b) in m.bytes_per_node() {
            *out.entry(n).or_insert(0) += b;
        }
    }
    out
}

/// Policy modes whose printed name has a space in it.
const SPACED_MODES: [&str; 2] = ["prefer (many)", "weighted interleave"];

fn parse_line(line: &str) -> Result<NumaMapping, String> {
    let line = line.trim_end();
    let (addr, rest) = line.split_once(' ').ok_or_else(|| format!("'{line}' has no policy"))?;
    let address = u64::from_str_radix(addr, 16).map_err(|_| format!("bad address '{addr}' (expected hex)"))?;
    let rest = rest.trim_start();
    let policy_len = match SPACED_MODES.iter().find(|m| rest.starts_with(*m)) {
        Some(m) => m.len() + rest[m.len()..].find(' ').unwrap_or(rest.len() - m.len()),
        None => rest.find(' ').unwrap_or(rest.len()),
    };
    let policy = parse_policy(&rest[..policy_len])?;
    let tokens: Vec<&str> = rest[policy_len..].split_whitespace().collect();

    let mut m = NumaMapping {
        address,
        policy,
        kind: MappingKind::Anon,
        huge: false,
        anon: 0,
        dirty: 0,
        mapped: None,
        mapmax: 0,
        swapcache: 0,
        active: None,
        writeback: 0,
        pages_per_node: BTreeMap::new(),
        kernelpagesize_kb: None,
    };
    let mut i = 0;
    while i < tokens.len() {
        let tok = tokens[i];
        i += 1;
        if let Some(first) = tok.strip_prefix("file=") {
            // A path may hold spaces (seq_file_path escapes only newlines): it runs up to the
            // first token the kernel prints after it.
            let mut path = first.to_string();
            while i < tokens.len() && !is_field(tokens[i]) {
                path.push(' ');
                path.push_str(tokens[i]);
                i += 1;
            }
            m.kind = MappingKind::File(path);
            continue;
        }
        match tok {
            "heap" => m.kind = MappingKind::Heap,
            "stack" => m.kind = MappingKind::Stack,
            "huge" => m.huge = true,
            _ => {
                let (key, value) = tok.split_once('=').ok_or_else(|| format!("unexpected token '{tok}'"))?;
                let v: u64 = value.parse().map_err(|_| format!("bad value in '{tok}' (expected a whole number)"))?;
                match key {
                    "anon" => m.anon = v,
                    "dirty" => m.dirty = v,
                    "mapped" => m.mapped = Some(v),
                    "mapmax" => m.mapmax = v,
                    "swapcache" => m.swapcache = v,
                    "active" => m.active = Some(v),
                    "writeback" => m.writeback = v,
                    "kernelpagesize_kB" => m.kernelpagesize_kb = Some(v),
                    // Unknown keys are counters a newer kernel added: not an error.
                    _ => {
                        if let Some(node) = key.strip_prefix('N').and_then(|n| n.parse::<u32>().ok()) {
                            m.pages_per_node.insert(node, v);
                        }
                    }
                }
            }
        }
    }
    Ok(m)
}

/// Tokens that end a `file=` path.
fn is_field(tok: &str) -> bool {
    tok == "huge"
        || tok.split_once('=').is_some_and(|(k, v)| {
            !v.is_empty()
                && v.bytes().all(|b| b.is_ascii_digit())
                && (matches!(
                    k,
                    "anon" | "dirty" | "mapped" | "mapmax" | "swapcache" | "active" | "writeback" | "kernelpagesize_kB"
                ) || k.strip_prefix('N').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
        })
}

/// `mode[=flag|flag][:nodelist]`, as `mpol_to_str()` writes it.
pub fn parse_policy(text: &str) -> Result<MappingPolicy, String> {
    let (head, nodes) = match text.split_once(':') {
        Some((h, n)) => (h, NodeSet::parse_list(n).map_err(|e| format!("bad node list in policy '{text}': {e}"))?),
        None => (text, NodeSet::new()),
    };
    let (mode, flags) = match head.split_once('=') {
        Some((m, f)) => (m, f.split('|').filter(|s| !s.is_empty()).map(str::to_string).collect()),
        None => (head, Vec::new()),
    };
    let mode = PolicyMode::parse(mode).map_err(|e| format!("bad policy '{text}': {}", e.0))?;
    Ok(MappingPolicy { mode, flags, nodes, text: text.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> NumaMapping {
        parse_line(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn anonymous_bound_mapping() {
        let m = one("7f2c4a000000 bind:0-1 anon=512 dirty=512 active=0 N0=256 N1=256 kernelpagesize_kB=4");
        assert_eq!(m.address, 0x7f2c4a000000);
        assert_eq!(m.policy.mode, PolicyMode::Bind);
        assert_eq!(m.policy.nodes.to_list_string(), "0-1");
        assert_eq!(m.kind, MappingKind::Anon);
        assert_eq!((m.anon, m.dirty, m.active, m.mapped), (512, 512, Some(0), None));
        assert_eq!(m.pages(), 512);
        assert_eq!(m.bytes_per_node()[&1], 256 * 4096);
    }

    #[test]
    fn spaced_modes_flags_and_paths_with_spaces() {
        let m = one("7f00 prefer (many):0,2 file=/tmp/a b/lib x.so mapped=3 N2=3 kernelpagesize_kB=4");
        assert_eq!(m.policy.mode, PolicyMode::PreferredMany);
        assert_eq!(m.policy.nodes.to_list_string(), "0,2");
        assert_eq!(m.kind, MappingKind::File("/tmp/a b/lib x.so".into()));
        assert_eq!(m.mapped, Some(3));
        let m = one("7f00 weighted interleave:0-3 anon=8 N0=2 N1=2 N2=2 N3=2 kernelpagesize_kB=4");
        assert_eq!(m.policy.mode, PolicyMode::WeightedInterleave);
        let m = one("7f00 interleave=static|balancing:1-2 heap anon=1 N1=1 kernelpagesize_kB=4");
        assert_eq!(m.policy.flags, vec!["static".to_string(), "balancing".to_string()]);
        assert_eq!(m.kind, MappingKind::Heap);
        let m = one("7f00 prefer:1 stack");
        assert_eq!(m.policy.mode, PolicyMode::Preferred);
        assert_eq!((m.pages(), m.kernelpagesize_kb), (0, None));
        assert_eq!(m.kind, MappingKind::Stack);
        let m = one("7f00 local");
        assert_eq!(m.policy.mode, PolicyMode::Local);
        assert!(m.policy.nodes.is_empty());
    }

    #[test]
    fn hugetlb_pages_count_as_huge_pages() {
        let m = one("7f8000000000 default file=/dev/hugepages/x huge dirty=4 N0=2 N1=2 kernelpagesize_kB=2048");
        assert!(m.huge);
        assert_eq!(m.bytes_per_node()[&0], 2 * 2048 * 1024);
    }

    #[test]
    fn errors_name_the_line_and_token() {
        let e = parse_numa_maps(Path::new("numa_maps"), "7f00 default N0=1\nzz default\n").unwrap_err();
        assert!(e.to_string().contains("line 2") && e.to_string().contains("'zz'"), "{e}");
        let e = parse_line("7f00 bind:0 N0=x").unwrap_err();
        assert!(e.contains("'N0=x'"), "{e}");
        let e = parse_line("7f00 sometimes:0").unwrap_err();
        assert!(e.contains("sometimes"), "{e}");
    }
}
