//! The deterministic numalab engine: no I/O, no clock; a run is a pure function of machine,
//! workload, placement and configuration (seed included).
//!
//! - [`spec`]: a run as the user asks for it, checked once and resolved against the machine;
//! - [`input`]: the resolved run description (workload, placement, configuration);
//! - [`alloc`], [`mempolicy`], [`pages`]: page allocation, first touch and memory policies;
//! - [`pattern`]: access patterns as page-visit streams;
//! - [`contention`]: the closed-loop latency/bandwidth solution;
//! - [`sched`]: thread placement and load balancing;
//! - [`engine`]: the epoch loop; [`output`]: what a run reports.
//! - [`footprint`]: the engine's own memory and work for a run, estimated and bounded up front.

pub mod alloc;
pub mod cache;
pub mod ceil;
pub mod contention;
pub mod corun;
pub mod engine;
pub mod error;
pub mod footprint;
pub mod input;
pub mod khugepaged;
pub mod latbal;
pub mod malloc;
pub mod mapping;
pub mod mempolicy;
pub mod numa_balancing;
pub mod openmp;
pub mod output;
pub mod pages;
pub mod pattern;
pub mod profile;
pub use numalab_model::rng;
pub mod sched;
pub mod spec;
pub mod tiering;
pub mod vhost;

pub use error::SimError;
pub use input::{Placement, SimConfig, WorkloadSpec};
pub use output::SimOutput;
pub use profile::{Kernel, KernelProfile};
pub use spec::{PlacementRequest, PolicyRequest, RunSpec, SpecError};

use numalab_model::Machine;

/// Simulate `workload` on `machine` under `placement`.
pub fn simulate(
    machine: &Machine,
    workload: &WorkloadSpec,
    placement: &Placement,
    config: &SimConfig,
) -> Result<SimOutput, SimError> {
    Ok(engine::Engine::new(machine, workload, placement, config)?.run())
}

/// Simulate a co-run: every group's processes on `machine` in one run (`corun`).
pub fn simulate_groups(
    machine: &Machine,
    groups: Vec<corun::Group<'_>>,
    config: &SimConfig,
) -> Result<SimOutput, SimError> {
    Ok(engine::Engine::with_groups(machine, groups, config)?.run())
}

/// Simulate a co-run whose processes share segments: `shared[g]` names the regions of group
/// `g`'s workload its processes map from the run's segment of that name (`corun::segments`,
/// docs/corun.md §6).
pub fn simulate_shared(
    machine: &Machine,
    groups: Vec<corun::Group<'_>>,
    shared: &[Vec<String>],
    config: &SimConfig,
) -> Result<SimOutput, SimError> {
    simulate_split(machine, groups, shared, &[], config)
}

/// `simulate_shared` where the processes mapping each segment named in `split` divide it, each
/// working on its own block (`corun::split_segments`, docs/corun.md §6).
pub fn simulate_split(
    machine: &Machine,
    groups: Vec<corun::Group<'_>>,
    shared: &[Vec<String>],
    split: &[String],
    config: &SimConfig,
) -> Result<SimOutput, SimError> {
    let workloads: Vec<&WorkloadSpec> = groups.iter().map(|g| g.workload).collect();
    let segments = corun::segments(&workloads, shared).map_err(SimError::Input)?;
    let split = corun::split_segments(&workloads, shared, split).map_err(SimError::Input)?;
    let mut e = engine::Engine::with_groups(machine, groups, config)?;
    e.share(&segments, &split).map_err(SimError::Input)?;
    Ok(e.run())
}

/// Simulate with pages placed before the run (`engine::Engine::premap`, docs/mapping.md §4):
/// `nodes` per process and region, the node of each 4 KiB page (`u8::MAX`: first touch).
pub fn simulate_mapped(
    machine: &Machine,
    workload: &WorkloadSpec,
    placement: &Placement,
    config: &SimConfig,
    nodes: &[Vec<u8>],
) -> Result<SimOutput, SimError> {
    let mut e = engine::Engine::new(machine, workload, placement, config)?;
    e.premap(nodes);
    Ok(e.run())
}
