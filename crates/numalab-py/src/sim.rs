//! `numalab._core.zonelists`: the engine's fallback lists, for `numalab topo` and tests.

use numalab_sim::Kernel;
use pyo3::prelude::*;

use crate::error;
use crate::machine::PyMachine;

/// The kernel's fallback order of every node (OS indexes), as "Fallback order for Node X" logs it.
#[pyfunction]
pub fn zonelists(py: Python<'_>, machine: &PyMachine, kernel: &str) -> PyResult<Vec<Vec<u32>>> {
    let k = Kernel::parse(kernel).map_err(error::SimulationError::new_err)?;
    let m = &machine.inner;
    error::guarded(py, "the zonelist builder", || {
        numalab_sim::alloc::build_zonelists(m, k)
            .into_iter()
            .map(|l| l.into_iter().map(|n| m.nodes[n].os_index).collect())
            .collect()
    })
}
