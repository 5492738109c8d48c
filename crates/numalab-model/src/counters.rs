//! The counter catalogue: every counter numalab reports, with the kernel's name, unit, kind and
//! meaning, so simulated and measured tables share columns (docs/allocation.md §8, docs/balancing.md §14).

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterKind {
    Cumulative,
    Gauge,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct Counter {
    /// Namespaced name: `numastat.<name>` (per node), `vmstat.<name>`, `sched.<name>` (per thread).
    pub name: &'static str,
    pub unit: &'static str,
    pub kind: CounterKind,
    pub description: &'static str,
}

const fn c(name: &'static str, unit: &'static str, description: &'static str) -> Counter {
    Counter { name, unit, kind: CounterKind::Cumulative, description }
}

/// `/sys/devices/system/node/nodeN/numastat`, in the kernel's order (one event per allocation call).
pub const NUMASTAT: [Counter; 6] = [
    c("numastat.numa_hit", "allocations", "allocated on the intended (preferred) node"),
    c("numastat.numa_miss", "allocations", "allocated here although another node was preferred"),
    c("numastat.numa_foreign", "allocations", "intended for this node but allocated elsewhere"),
    c("numastat.interleave_hit", "allocations", "interleave allocations that got the node interleave chose"),
    c("numastat.local_node", "allocations", "allocated here by a CPU of this node"),
    c("numastat.other_node", "allocations", "allocated here by a CPU of another node"),
];

/// `/proc/vmstat` NUMA-balancing, migration and memory-tiering counters (docs/tiering.md §7).
pub const VMSTAT: [Counter; 11] = [
    c("vmstat.numa_pte_updates", "pages", "base pages marked PROT_NONE by the NUMA scanner (a THP counts 512)"),
    c("vmstat.numa_huge_pte_updates", "pmds", "huge-page PMDs marked by the NUMA scanner"),
    c("vmstat.numa_hint_faults", "faults", "NUMA hinting faults taken"),
    c("vmstat.numa_hint_faults_local", "faults", "hinting faults on a page already on the faulting CPU's node"),
    c("vmstat.numa_pages_migrated", "pages", "pages migrated by NUMA balancing"),
    c("vmstat.pgmigrate_success", "pages", "pages migrated, any cause"),
    c("vmstat.pgmigrate_fail", "pages", "page migrations attempted that failed"),
    c("vmstat.pgpromote_success", "pages", "pages promoted from a lower to a top memory tier (memory-tiering mode)"),
    c("vmstat.pgpromote_candidate", "pages", "hot slow-tier pages that reached the promotion rate limit"),
    c("vmstat.pgdemote_kswapd", "pages", "pages demoted to a lower memory tier by kswapd"),
    c("vmstat.pgdemote_direct", "pages", "pages demoted to a lower memory tier by direct reclaim"),
];

/// Per-thread lines of `/proc/PID/task/TID/sched` (CONFIG_SCHED_DEBUG).
pub const SCHED: [Counter; 4] = [
    Counter {
        name: "sched.numa_preferred_nid",
        unit: "node",
        kind: CounterKind::Gauge,
        description: "preferred node (-1 = none)",
    },
    c("sched.total_numa_faults", "pages", "decayed NUMA faults of the task"),
    c("sched.numa_pages_migrated", "pages", "pages this task migrated on its faults"),
    Counter {
        name: "sched.numa_scan_seq",
        unit: "passes",
        kind: CounterKind::Gauge,
        description: "completed scan passes of the mm",
    },
];

pub fn catalogue() -> impl Iterator<Item = &'static Counter> {
    NUMASTAT.iter().chain(VMSTAT.iter()).chain(SCHED.iter())
}
