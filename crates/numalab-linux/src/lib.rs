//! The only numalab crate that reads the OS. Every reader takes a root path (`/` on a live system,
//! a captured tree in tests) and touches nothing outside it.
//!
//! - [`topology`]: nodes, CPUs, cores, SLIT from sysfs.
//! - [`status`]: `/proc/PID/status` allowed CPUs and nodes; node state masks.
//! - [`numa_maps`]: `/proc/PID/numa_maps`, pages per node per mapping and the policy in force.
//! - [`sched`]: `/proc/PID/task/TID/sched`, per-thread NUMA balancing statistics.
//! - [`vmstat`]: `/proc/vmstat` NUMA counters and per-node `numastat`.
//! - [`knobs`]: automatic NUMA balancing knobs (procfs or debugfs) with a restore journal.

pub mod error;
mod io;
pub mod knobs;
pub mod numa_maps;
pub mod sched;
pub mod status;
pub mod topology;
pub mod vmstat;

pub use error::LinuxError;
pub use knobs::{
    read_knob, read_knobs, restore_knobs, set_knobs, write_knob, Journal, Knob, KnobLocation, KnobValue, KNOBS,
};
pub use numa_maps::{parse_numa_maps, read_numa_maps, MappingKind, MappingPolicy, NumaMapping};
pub use sched::{read_task_sched, read_threads_sched, NodeFaults, TaskNuma, TaskSched};
pub use status::{read_node_states, read_status, NodeStates, ProcStatus};
pub use topology::{read_topology, HostCore, HostNode, HostTopology};
pub use vmstat::{read_numastat, read_vmstat, Counters};
