//! `numalab._core.simulate`: run the engine on resolved JSON inputs, GIL released.

use numalab_sim::{Kernel, Placement, SimConfig, WorkloadSpec};
use pyo3::prelude::*;
use serde::de::DeserializeOwned;

use crate::error;
use crate::machine::PyMachine;

fn parse<T: DeserializeOwned>(what: &str, json: &str) -> PyResult<T> {
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|e| {
        error::SimulationError::new_err(format!("bad {what} for the engine at {}: {}", e.path(), e.inner()))
    })
}

/// Simulate: workload, placement and config are JSON strings; returns the engine's output JSON.
#[pyfunction]
pub fn simulate(
    py: Python<'_>,
    machine: &PyMachine,
    workload: &str,
    placement: &str,
    config: &str,
) -> PyResult<String> {
    let w: WorkloadSpec = parse("workload", workload)?;
    let p: Placement = parse("placement", placement)?;
    let c: SimConfig = parse("config", config)?;
    let m = &machine.inner;
    let out = py
        .detach(|| numalab_sim::simulate(m, &w, &p, &c))
        .map_err(|e| error::SimulationError::new_err(e.to_string()))?;
    Ok(serde_json::to_string(&out).expect("output serialises"))
}

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
