//! The automatic NUMA balancing knobs, defined once: numalab's name for each, the kernel's default
//! and the values numalab accepts, and where a kernel keeps it. The simulator's options and checks
//! (`numalab_sim::input`), the Linux readers and writers (`numalab_linux::knobs`) and Python
//! (`numalab._core.balancing_knobs()`) all read this table (docs/balancing.md §1).
//!
//! Where each knob lives depends on the kernel:
//! - `kernel/numa_balancing` (procfs, `/proc/sys/kernel/numa_balancing`) on every kernel since 3.8;
//!   0 off, 1 normal balancing; 2 memory tiering and 3 both since 5.18 ("NUMA balancing: optimize
//!   page placement for memory tiering system", `NUMA_BALANCING_MEMORY_TIERING`).
//! - The scanner's knobs were sysctls `kernel/numa_balancing_scan_{delay_ms,period_min_ms,
//!   period_max_ms,size_mb}` until Linux 5.12. Linux 5.13 moved them to debugfs,
//!   `sched/numa_balancing/{scan_delay_ms,scan_period_min_ms,scan_period_max_ms,scan_size_mb}`
//!   (commit 8a99b6833c88 "sched: Move SCHED_DEBUG sysctl to debugfs"; `sched_init_debug()` in
//!   kernel/sched/debug.c creates them).
//! - Memory tiering's hot-page selection (6.1) added `sched/numa_balancing/hot_threshold_ms`
//!   (debugfs) and the sysctl `kernel/numa_balancing_promote_rate_limit_MBps` (procfs,
//!   `sched_fair_sysctls[]` in kernel/sched/fair.c).
//!
//! The kernel stores each as an unsigned int (`kernel/sched/fair.c`: `sysctl_numa_balancing_*`).

use serde::Serialize;

/// One knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Knob {
    /// numalab's name: the debugfs file name where there is one, else the sysctl's without its
    /// `numa_balancing_` prefix, in lower case (`promote_rate_limit_mbps`; the kernel's `MBps` is
    /// accepted too, see [`knob`]).
    pub name: &'static str,
    /// The kernel's default (for `numa_balancing`, off: numalab's runs have it off unless asked).
    pub default: u32,
    pub min: u32,
    /// The kernel's `extra2`, or `u32::MAX` for an unsigned int.
    pub max: u32,
    pub help: &'static str,
    /// Its sysctl under the root (`proc/sys/kernel/...`), on the kernels that have one.
    pub procfs: Option<&'static str>,
    /// Its debugfs file under the root (`sys/kernel/debug/sched/numa_balancing/...`, 5.13+).
    pub debugfs: Option<&'static str>,
    /// A memory-tiering knob (it acts only with `numa_balancing` 2 or 3).
    pub tiering: bool,
}

const fn tunable(name: &'static str, default: u32, min: u32, help: &'static str) -> Knob {
    Knob { name, default, min, max: u32::MAX, help, procfs: None, debugfs: None, tiering: false }
}

/// `kernel.numa_balancing` itself: the mode (0-3), not a tunable.
pub const NUMA_BALANCING: Knob = Knob {
    name: "numa_balancing",
    default: 0,
    min: 0,
    max: 3,
    help: "0 off, 1 NUMA balancing, 2 memory tiering (5.18+), 3 both",
    procfs: Some("proc/sys/kernel/numa_balancing"),
    debugfs: None,
    tiering: false,
};

/// The scanner and tiering tunables, in documentation order. Defaults are the kernel's
/// (`kernel/sched/fair.c`, 3.13 and 6.13 alike).
pub const TUNABLES: [Knob; 6] = [
    Knob {
        procfs: Some("proc/sys/kernel/numa_balancing_scan_delay_ms"),
        debugfs: Some("sys/kernel/debug/sched/numa_balancing/scan_delay_ms"),
        ..tunable("scan_delay_ms", 1000, 0, "first scan of a new process after this much of its CPU time")
    },
    Knob {
        procfs: Some("proc/sys/kernel/numa_balancing_scan_period_min_ms"),
        debugfs: Some("sys/kernel/debug/sched/numa_balancing/scan_period_min_ms"),
        ..tunable("scan_period_min_ms", 1000, 0, "shortest time between two scans of a process's whole address space")
    },
    Knob {
        procfs: Some("proc/sys/kernel/numa_balancing_scan_period_max_ms"),
        debugfs: Some("sys/kernel/debug/sched/numa_balancing/scan_period_max_ms"),
        ..tunable("scan_period_max_ms", 60000, 0, "longest time between two scans of a process's whole address space")
    },
    // task_numa_work returns at once when the scan size is 0 pages: 0 would switch scanning off.
    Knob {
        procfs: Some("proc/sys/kernel/numa_balancing_scan_size_mb"),
        debugfs: Some("sys/kernel/debug/sched/numa_balancing/scan_size_mb"),
        ..tunable("scan_size_mb", 256, 1, "address space marked per scan window")
    },
    // Memory tiering (numa_balancing = 2, 5.18+): kernel/sched/fair.c
    // `sysctl_numa_balancing_hot_threshold` (MSEC_PER_SEC) and
    // `sysctl_numa_balancing_promote_rate_limit` (65536 MB/s), docs/tiering.md §5.
    Knob {
        debugfs: Some("sys/kernel/debug/sched/numa_balancing/hot_threshold_ms"),
        tiering: true,
        ..tunable(
            "hot_threshold_ms",
            1000,
            0,
            "memory tiering: a slow-tier page faulted within this long after its scan is hot",
        )
    },
    Knob {
        procfs: Some("proc/sys/kernel/numa_balancing_promote_rate_limit_MBps"),
        tiering: true,
        ..tunable(
            "promote_rate_limit_mbps",
            65536,
            0,
            "memory tiering: promotion candidates per second into one node, in MB",
        )
    },
];

/// Every knob: the mode, then the tunables.
pub const KNOBS: [Knob; 7] =
    [NUMA_BALANCING, TUNABLES[0], TUNABLES[1], TUNABLES[2], TUNABLES[3], TUNABLES[4], TUNABLES[5]];

/// The knob called `name`, in any letter case (the kernel's sysctl says `MBps`).
pub fn knob(name: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.name.eq_ignore_ascii_case(name))
}

/// Every knob's name, for messages.
pub fn names() -> String {
    KNOBS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_has_a_home_and_one_name() {
        for k in KNOBS {
            assert!(k.procfs.is_some() || k.debugfs.is_some(), "{}", k.name);
            assert!(k.procfs.is_none_or(|p| p.starts_with("proc/sys/kernel/numa_balancing")), "{}", k.name);
            assert!(
                k.debugfs.is_none_or(|p| p == format!("sys/kernel/debug/sched/numa_balancing/{}", k.name)),
                "{}",
                k.name
            );
            assert!(k.min <= k.default && k.default <= k.max, "{}", k.name);
            assert_eq!(knob(&k.name.to_uppercase()), Some(&k));
        }
        assert_eq!(knob("promote_rate_limit_MBps").map(|k| k.name), Some("promote_rate_limit_mbps"));
        assert_eq!(TUNABLES.iter().filter(|k| k.tiering).count(), 2);
        assert!(knob("scan_size").is_none());
    }
}
