//! `numalab._core.Machine`: a frozen wrapper around `numalab_model::Machine`.

use numalab_model::{parse_cpustring, parse_nodestring, Machine, MachineSpec};
use pyo3::prelude::*;

use crate::error;

#[pyclass(module = "numalab._core", name = "Machine", frozen)]
pub struct PyMachine {
    pub inner: Machine,
}

#[pymethods]
impl PyMachine {
    /// Resolve a machine spec (the JSON form of a preset file) into a validated machine.
    #[staticmethod]
    fn from_spec_json(py: Python<'_>, json: &str) -> PyResult<Self> {
        let inner = error::guarded(py, "the machine resolver", || MachineSpec::from_json(json)?.resolve())?
            .map_err(error::topology)?;
        Ok(PyMachine { inner })
    }

    /// Load an explicit machine (what `to_json` writes).
    #[staticmethod]
    fn from_json(py: Python<'_>, json: &str) -> PyResult<Self> {
        let inner = error::guarded(py, "the machine reader", || Machine::from_json(json))?.map_err(error::topology)?;
        Ok(PyMachine { inner })
    }

    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        error::guarded(py, "the machine writer", || self.inner.to_json())
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.name.clone()
    }

    /// Node OS indexes in logical order (the rows and columns of every per-node table).
    #[getter]
    fn node_os_indexes(&self) -> Vec<u32> {
        self.inner.nodes.iter().map(|n| n.os_index).collect()
    }

    #[getter]
    fn nr_pus(&self) -> usize {
        self.inner.nr_pus()
    }

    /// SLIT distances by node logical index.
    #[getter]
    fn distances(&self) -> Vec<Vec<u32>> {
        self.inner.distances.clone()
    }

    /// Parse a numactl node string (`all`, `0-3,5`, `!1`, `+0-1`) against this machine's nodes.
    fn parse_nodes(&self, py: Python<'_>, s: &Bound<'_, pyo3::types::PyString>) -> PyResult<Vec<u32>> {
        // Lossy: text that is not valid UTF-8 (a lone surrogate from a bad argv) is refused by the parser.
        let s = &*s.to_string_lossy();
        error::guarded(py, "the node-string parser", || parse_nodestring(s, &self.inner.nodeset()))?
            .map(|b| b.iter().collect())
            .map_err(|e| error::policy(numalab_model::PolicyError(e)))
    }

    /// Parse a numactl CPU string against this machine's PUs.
    fn parse_cpus(&self, py: Python<'_>, s: &Bound<'_, pyo3::types::PyString>) -> PyResult<Vec<u32>> {
        // Lossy: text that is not valid UTF-8 (a lone surrogate from a bad argv) is refused by the parser.
        let s = &*s.to_string_lossy();
        error::guarded(py, "the CPU-string parser", || parse_cpustring(s, &self.inner.cpuset()))?
            .map(|b| b.iter().collect())
            .map_err(|e| error::policy(numalab_model::PolicyError(e)))
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.inner == other.inner
    }

    fn __repr__(&self) -> String {
        format!("Machine('{}', nodes={}, pus={})", self.inner.name, self.inner.nr_nodes(), self.inner.nr_pus())
    }
}
