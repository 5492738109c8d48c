//! The only numalab crate that touches the operating system. Every reader takes a root path,
//! so tests run on captured sysfs/procfs trees (`tests/fixtures/sysfs/`).
//!
//! - [`topology::read_topology`]: nodes, CPUs, memory and SLIT distances from sysfs.

pub mod error;
pub mod topology;

pub use error::LinuxError;
pub use topology::{read_topology, HostCore, HostNode, HostTopology};
