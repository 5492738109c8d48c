//! The counter registry: every kernel counter numalab reports, defined once with the kernel's
//! name, the file it is read from, its unit and its meaning, so the engine's output, the agent's
//! readers and Python's tables share one vocabulary (docs/allocation.md §8, docs/balancing.md §14,
//! docs/tiering.md §7). `numalab._core.counters()` hands it to Python.

use serde::Serialize;

/// Where a counter lives: which file, and whether it is per node, system-wide or per thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `/sys/devices/system/node/nodeN/numastat`: one set per node (drivers/base/node.c:
    /// `node_read_numastat`).
    Numastat,
    /// `/proc/vmstat`: system-wide (mm/vmstat.c: `vmstat_text`).
    Vmstat,
    /// `/proc/PID/task/TID/sched`: per thread (kernel/sched/debug.c: `sched_show_numa`).
    Sched,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Numastat, Kind::Vmstat, Kind::Sched];

    /// The file the counter is read from (`N`: node, `PID`/`TID`: process and thread ids).
    pub fn file(self) -> &'static str {
        match self {
            Kind::Numastat => "/sys/devices/system/node/nodeN/numastat",
            Kind::Vmstat => "/proc/vmstat",
            Kind::Sched => "/proc/PID/task/TID/sched",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Numastat => "numastat",
            Kind::Vmstat => "vmstat",
            Kind::Sched => "sched",
        }
    }
}

/// What a counter is about; tables group their rows by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Topic {
    /// Page allocation by node (the numastat events).
    Allocation,
    /// Automatic NUMA balancing and the page migration it drives.
    Balancing,
    /// Memory tiering: demotion and promotion between tiers.
    Tiering,
    /// Transparent huge pages: faults and khugepaged's collapses.
    Thp,
}

impl Topic {
    pub fn name(self) -> &'static str {
        match self {
            Topic::Allocation => "allocation",
            Topic::Balancing => "balancing",
            Topic::Tiering => "tiering",
            Topic::Thp => "thp",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Counter {
    /// The kernel's name, as it appears in the file.
    pub name: &'static str,
    pub kind: Kind,
    pub topic: Topic,
    pub unit: &'static str,
    /// A level (a node id, a pass number) rather than a count since boot.
    pub gauge: bool,
    /// The engine reports it too; `false`: measured runs only (the agent reads it on a host).
    pub simulated: bool,
    /// One line: what one count means.
    pub meaning: &'static str,
    /// Where the kernel counts it (upstream path and function).
    pub source: &'static str,
}

const fn c(
    name: &'static str,
    kind: Kind,
    topic: Topic,
    unit: &'static str,
    simulated: bool,
    meaning: &'static str,
    source: &'static str,
) -> Counter {
    Counter { name, kind, topic, unit, gauge: false, simulated, meaning, source }
}

use Kind::{Numastat as N, Sched as S, Vmstat as V};
use Topic::{Allocation as A, Balancing as B, Thp as H, Tiering as T};

/// The registry, in each file's order (one row per counter: rustfmt would spread each over nine lines).
#[rustfmt::skip]
pub const COUNTERS: [Counter; 32] = [
    // numastat, in node_read_numastat()'s order; one event per allocation call (a THP counts 1).
    c("numa_hit", N, A, "allocations", true, "allocated on the node the policy intended", "mm/page_alloc.c: zone_statistics"),
    c("numa_miss", N, A, "allocations", true, "allocated here although another node was intended", "mm/page_alloc.c: zone_statistics"),
    c("numa_foreign", N, A, "allocations", true, "intended for this node but allocated on another", "mm/page_alloc.c: zone_statistics"),
    c("interleave_hit", N, A, "allocations", true, "interleave allocations that got the node interleave chose", "mm/mempolicy.c: alloc_pages_mpol"),
    c("local_node", N, A, "allocations", true, "allocated here by a CPU of this node", "mm/page_alloc.c: zone_statistics"),
    c("other_node", N, A, "allocations", true, "allocated here by a CPU of another node", "mm/page_alloc.c: zone_statistics"),
    // vmstat: the same events summed over the nodes (NUMA_* of include/linux/mmzone.h), which the
    // agent reads in one file; the engine reports them per node only.
    c("numa_hit", V, A, "allocations", false, "numastat numa_hit summed over the nodes", "mm/vmstat.c: vmstat_text"),
    c("numa_miss", V, A, "allocations", false, "numastat numa_miss summed over the nodes", "mm/vmstat.c: vmstat_text"),
    c("numa_foreign", V, A, "allocations", false, "numastat numa_foreign summed over the nodes", "mm/vmstat.c: vmstat_text"),
    c("numa_interleave", V, A, "allocations", false, "numastat interleave_hit summed over the nodes", "mm/vmstat.c: vmstat_text"),
    c("numa_local", V, A, "allocations", false, "numastat local_node summed over the nodes", "mm/vmstat.c: vmstat_text"),
    c("numa_other", V, A, "allocations", false, "numastat other_node summed over the nodes", "mm/vmstat.c: vmstat_text"),
    // vmstat: automatic NUMA balancing (include/linux/vm_event_item.h, NUMA_*) and migration.
    c("numa_pte_updates", V, B, "pages", true, "base pages made PROT_NONE by the NUMA scanner (a THP counts 512)", "mm/mprotect.c: change_protection"),
    c("numa_huge_pte_updates", V, B, "pmds", true, "huge-page PMDs made PROT_NONE by the NUMA scanner", "mm/mprotect.c: change_pmd_range"),
    c("numa_hint_faults", V, B, "faults", true, "NUMA hinting faults taken", "mm/memory.c: do_numa_page"),
    c("numa_hint_faults_local", V, B, "faults", true, "hinting faults on a page already on the faulting CPU's node", "mm/memory.c: do_numa_page"),
    c("numa_pages_migrated", V, B, "pages", true, "pages migrated by NUMA balancing", "mm/migrate.c: migrate_misplaced_folio"),
    c("pgmigrate_success", V, B, "pages", true, "pages migrated, any cause", "mm/migrate.c: migrate_pages"),
    c("pgmigrate_fail", V, B, "pages", true, "page migrations attempted that failed", "mm/migrate.c: migrate_pages"),
    // vmstat: memory tiering (include/linux/mmzone.h, PGPROMOTE_*, PGDEMOTE_*).
    c("pgpromote_success", V, T, "pages", true, "pages promoted to a top memory tier (memory-tiering mode)", "mm/migrate.c: migrate_misplaced_folio"),
    c("pgpromote_candidate", V, T, "pages", true, "hot slow-tier pages that passed the promotion rate limit", "kernel/sched/fair.c: numa_promotion_rate_limit"),
    c("pgdemote_kswapd", V, T, "pages", true, "pages demoted to a lower memory tier by kswapd", "mm/vmscan.c: demote_folio_list"),
    c("pgdemote_direct", V, T, "pages", true, "pages demoted to a lower memory tier by direct reclaim", "mm/vmscan.c: demote_folio_list"),
    c("pgdemote_khugepaged", V, T, "pages", false, "pages demoted to a lower memory tier by khugepaged's reclaim", "mm/vmscan.c: demote_folio_list"),
    // vmstat: transparent huge pages (include/linux/vm_event_item.h, THP_*).
    c("thp_fault_alloc", V, H, "huge pages", true, "huge pages allocated at a page fault", "mm/huge_memory.c: __do_huge_pmd_anonymous_page"),
    c("thp_fault_fallback", V, H, "faults", true, "huge-page faults that fell back to base pages", "mm/huge_memory.c: do_huge_pmd_anonymous_page"),
    c("thp_collapse_alloc", V, H, "huge pages", true, "huge pages khugepaged allocated to collapse a range", "mm/khugepaged.c: alloc_charge_folio"),
    c("thp_collapse_alloc_failed", V, H, "attempts", true, "khugepaged allocations of a huge page that failed", "mm/khugepaged.c: alloc_charge_folio"),
    // sched: the NUMA lines of a thread (kernel/sched/debug.c: sched_show_numa).
    Counter { gauge: true, ..c("numa_preferred_nid", S, B, "node", true, "the thread's preferred node (-1 = none)", "kernel/sched/fair.c: task_numa_placement") },
    c("total_numa_faults", S, B, "pages", true, "the thread's decayed NUMA hinting faults", "kernel/sched/fair.c: task_numa_placement"),
    c("numa_pages_migrated", S, B, "pages", true, "pages this thread migrated on its hinting faults", "mm/migrate.c: migrate_misplaced_folio"),
    Counter { gauge: true, ..c("numa_scan_seq", S, B, "passes", true, "completed NUMA scan passes of the thread's mm", "kernel/sched/fair.c: task_numa_work") },
];

/// The counters of one kind, in registry order.
pub fn of_kind(kind: Kind) -> impl Iterator<Item = &'static Counter> {
    COUNTERS.iter().filter(move |c| c.kind == kind)
}

/// Whether `name` is a registered counter of `kind` (the agent's readers keep only those).
pub fn is_registered(kind: Kind, name: &str) -> bool {
    of_kind(kind).any(|c| c.name == name)
}

/// `numa_faults node=N ...` of `/proc/PID/task/TID/sched`: a task's and its numa group's decayed
/// hinting faults on node N (kernel/sched/fair.c: `show_numa_stats`), read by the agent and
/// reported by the engine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NodeFaults {
    pub node: u32,
    pub task_private: u64,
    pub task_shared: u64,
    pub group_private: u64,
    pub group_shared: u64,
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn a_name_is_registered_once_per_kind() {
        let mut seen = HashSet::new();
        for c in &COUNTERS {
            assert!(seen.insert((c.kind, c.name)), "{} is registered twice as {:?}", c.name, c.kind);
            assert!(!c.meaning.is_empty() && c.source.contains(": "), "{} needs a meaning and a kernel source", c.name);
        }
    }

    #[test]
    fn numastat_is_the_kernels_six_lines_in_order() {
        let names: Vec<_> = of_kind(Kind::Numastat).map(|c| c.name).collect();
        assert_eq!(names, ["numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node"]);
        assert!(is_registered(Kind::Vmstat, "thp_fault_alloc") && !is_registered(Kind::Numastat, "thp_fault_alloc"));
        assert_eq!(Kind::Vmstat.file(), "/proc/vmstat");
    }
}
