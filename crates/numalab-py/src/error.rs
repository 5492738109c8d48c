//! One place that maps every Rust error to the Python exception tree of `numalab.exceptions`.

use numalab_linux::LinuxError;
use numalab_model::{PolicyError, TopologyError};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::PyErr;

create_exception!(numalab._core, NumalabError, PyException, "Base of every numalab error.");
create_exception!(numalab._core, TopologyError_, NumalabError, "A machine description is wrong.");
create_exception!(numalab._core, PolicyError_, NumalabError, "A memory policy or placement is wrong.");
create_exception!(numalab._core, SimulationError, NumalabError, "A simulation could not run.");
create_exception!(numalab._core, HostError, NumalabError, "Reading the host (sysfs/procfs) failed.");

pub fn topology(e: TopologyError) -> PyErr {
    TopologyError_::new_err((e.to_string(), e.path().to_string()))
}

pub fn policy(e: PolicyError) -> PyErr {
    PolicyError_::new_err(e.0)
}

pub fn host(e: LinuxError) -> PyErr {
    HostError::new_err(e.to_string())
}
