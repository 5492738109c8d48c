//! `numalab._core.zonelists`: the engine's fallback lists, for `numalab topo` and tests.

use numalab_sim::Kernel;
use pyo3::prelude::*;

use crate::error;
use crate::machine::PyMachine;

/// The kernel's fallback order of every node (OS indexes), as "Fallback order for Node X" logs it.
#[pyfunction]
pub fn zonelists(machine: &PyMachine, kernel: &str) -> PyResult<Vec<Vec<u32>>> {
    let k = match kernel {
        "3.13" => Kernel::K313,
        "6.13" => Kernel::K6,
        other => {
            return Err(error::SimulationError::new_err(format!(
                "unknown kernel profile '{other}' (expected 3.13 or 6.13)"
            )))
        }
    };
    let m = &machine.inner;
    Ok(numalab_sim::alloc::build_zonelists(m, k)
        .into_iter()
        .map(|l| l.into_iter().map(|n| m.nodes[n].os_index).collect())
        .collect())
}
