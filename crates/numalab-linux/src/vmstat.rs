//! System-wide NUMA counters: `/proc/vmstat` (`vmstat_text[]` in the kernel's mm/vmstat.c; one
//! `name value` per line) and `/sys/devices/system/node/nodeN/numastat` (`node_read_numastat()` in
//! drivers/base/node.c: `numa_hit`, `numa_miss`, `numa_foreign`, `interleave_hit`, `local_node`,
//! `other_node`). Every counter is cumulative since boot; numalab reports deltas.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use numalab_model::counters::{is_registered, Kind};

use crate::error::LinuxError;
use crate::io::{key_values, read};

/// Counter name to value.
pub type Counters = BTreeMap<String, u64>;

/// The registered vmstat counters of `proc/vmstat` under `root` (`numalab_model::counters`:
/// NUMA allocation and balancing, migration, memory tiering, THP); a counter the running kernel
/// lacks (tiering before 5.15) is absent.
pub fn read_vmstat(root: &Path) -> Result<Counters, LinuxError> {
    let path = root.join("proc/vmstat");
    parse_vmstat(&path, &read(&path)?)
}

pub fn parse_vmstat(path: &Path, text: &str) -> Result<Counters, LinuxError> {
    Ok(key_values(path, text, |k| is_registered(Kind::Vmstat, k))?.into_iter().collect())
}

pub fn parse_numastat(path: &Path, text: &str) -> Result<Counters, LinuxError> {
    Ok(key_values(path, text, |k| is_registered(Kind::Numastat, k))?.into_iter().collect())
}

/// `numastat` of every node directory under `root` (`sys/devices/system/node/nodeN/numastat`),
/// by node; empty when the kernel shows no node directory (no NUMA support).
pub fn read_numastat(root: &Path) -> Result<BTreeMap<u32, Counters>, LinuxError> {
    let dir = root.join("sys/devices/system/node");
    let mut out = BTreeMap::new();
    let Ok(entries) = fs::read_dir(&dir) else { return Ok(out) };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(node) = name.strip_prefix("node").and_then(|s| s.parse::<u32>().ok()) {
            let path = e.path().join("numastat");
            out.insert(node, parse_numastat(&path, &read(&path)?)?);
        }
    }
    Ok(out)
}

/// `after - before` for every counter of `after` (a counter missing before counts from 0; a
/// counter that went backwards, which only a reset can do, gives 0).
pub fn delta(before: &Counters, after: &Counters) -> Counters {
    after.iter().map(|(k, v)| (k.clone(), v.saturating_sub(before.get(k).copied().unwrap_or(0)))).collect()
}

#[cfg(test)]
mod tests {
    use numalab_model::counters::of_kind;

    use super::*;

    #[test]
    fn keeps_only_numa_counters() {
        let text =
            "nr_free_pages 100\nnuma_hit 5\npgmigrate_success 2\npgpromote_success 1\npgdemote_kswapd 3\npgfault 9\n";
        let c = parse_vmstat(Path::new("vmstat"), text).unwrap();
        assert_eq!(
            c.keys().cloned().collect::<Vec<_>>(),
            ["numa_hit", "pgdemote_kswapd", "pgmigrate_success", "pgpromote_success"]
        );
    }

    /// A file holding every registered counter among others gives exactly the registry's names.
    #[test]
    fn the_readers_keys_are_the_registry() {
        for (kind, parse) in [
            (Kind::Vmstat, parse_vmstat as fn(&Path, &str) -> Result<Counters, LinuxError>),
            (Kind::Numastat, parse_numastat),
        ] {
            let names: Vec<&str> = of_kind(kind).map(|c| c.name).collect();
            let text: String = ["nr_free_pages", "thp_split_pmd", "pgdemote_proactive", "numa_huge_pte_updates_x"]
                .iter()
                .chain(&names)
                .map(|k| format!("{k} 1\n"))
                .collect();
            let got = parse(Path::new("f"), &text).unwrap();
            let mut want = names.clone();
            want.sort_unstable();
            assert_eq!(got.keys().map(String::as_str).collect::<Vec<_>>(), want, "{kind:?}");
        }
    }

    #[test]
    fn a_bad_line_is_an_error_naming_it() {
        let e = parse_vmstat(Path::new("p/vmstat"), "numa_hit x\n").unwrap_err().to_string();
        assert!(e.contains("p/vmstat") && e.contains("numa_hit"), "{e}");
    }

    #[test]
    fn deltas() {
        let b: Counters = [("a".to_string(), 5), ("b".to_string(), 9)].into();
        let a: Counters = [("a".to_string(), 8), ("b".to_string(), 1), ("c".to_string(), 2)].into();
        let d = delta(&b, &a);
        assert_eq!((d["a"], d["b"], d["c"]), (3, 0, 2));
    }
}
