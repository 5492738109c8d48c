//! numalab's vocabulary, shared by the simulator, the Linux readers and the bindings; no I/O.
//!
//! - [`machine::Machine`]: Machine / Package / NUMANode / Core / PU with distances, latencies,
//!   bandwidths, links and routes; built from a [`spec::MachineSpec`] and checked by `validate`.
//! - [`bitmap::CpuSet`] / [`bitmap::NodeSet`] and numactl's node-string grammar ([`nodestring`]).
//! - [`policy::MemPolicy`]: the kernel's memory policies under numactl's names.
//! - [`counters`]: the registry of kernel counters numalab reports, and `NodeFaults`.
//! - [`knobs`]: the automatic NUMA balancing knobs: names, defaults, ranges, where a kernel keeps them.
//! - [`rng::Rng`]: the seeded generator both simulators draw from (bit-for-bit per seed).

pub mod bitmap;
pub mod counters;
pub mod error;
pub mod knobs;
pub mod machine;
pub mod nodestring;
pub mod policy;
pub mod rng;
pub mod spec;
mod validate;

pub use bitmap::{Bitmap, CpuSet, NodeSet};
pub use error::{PolicyError, TopologyError};
pub use machine::{Cache, Core, CurvePoint, Hop, Link, Machine, NumaNode, Package, Pu};
pub use nodestring::{parse_cpustring, parse_nodestring};
pub use policy::{MemPolicy, PolicyFlags, PolicyMode};
pub use spec::MachineSpec;
