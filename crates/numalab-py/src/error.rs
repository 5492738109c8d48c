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

/// Run `f` with the GIL released, turning a panic into `SimulationError` (an ordinary Python
/// exception that pickles, so a study worker can send it back) instead of letting it cross the
/// boundary as a `PanicException`.
pub fn guarded<T: Send>(py: pyo3::Python<'_>, what: &str, f: impl FnOnce() -> T + Send) -> pyo3::PyResult<T> {
    py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))).map_err(|panic| {
        let msg = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        SimulationError::new_err(format!("internal error in {what}: {msg}; please report it"))
    })
}

/// A value that should always serialise did not.
pub fn internal(what: &str, e: impl std::fmt::Display) -> PyErr {
    SimulationError::new_err(format!("internal error: cannot convert the {what}: {e}"))
}
