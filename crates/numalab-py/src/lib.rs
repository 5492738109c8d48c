//! `numalab._core`: thin bindings. Each class wraps a Rust value; validation of user input
//! happens in Python (study files, CLI) and the model re-checks its invariants.

mod error;
mod machine;
mod sim;
mod spec;
mod tasks;
mod vocab;

use pyo3::prelude::*;

/// Read the host topology under `root` (`/` for this machine) and return its facts as JSON.
#[pyfunction]
fn read_host_topology(py: Python<'_>, root: &str) -> PyResult<String> {
    let root = std::path::PathBuf::from(root);
    let topo =
        error::guarded(py, "the host topology reader", || numalab_linux::read_topology(&root))?.map_err(error::host)?;
    Ok(topo.to_json().to_string())
}

/// Panic inside the guard, so tests can check that a Rust panic reaches Python as an ordinary
/// `SimulationError` (and prints nothing).
#[pyfunction]
fn _panic_through_guard(py: Python<'_>, message: &str) -> PyResult<()> {
    error::guarded(py, "the panic check", || panic!("{message}"))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<machine::PyMachine>()?;
    m.add_function(wrap_pyfunction!(read_host_topology, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_through_guard, m)?)?;
    m.add_function(wrap_pyfunction!(sim::zonelists, m)?)?;
    m.add_class::<spec::PyRunSpec>()?;
    m.add_function(wrap_pyfunction!(spec::balancing_knobs, m)?)?;
    m.add_function(wrap_pyfunction!(spec::simulate_corun, m)?)?;
    m.add_function(wrap_pyfunction!(spec::corun_mapping_metrics, m)?)?;
    tasks::register(m)?;
    vocab::register(m)?;
    m.add("SpecError", py.get_type::<spec::SpecError>())?;
    m.add("NumalabError", py.get_type::<error::NumalabError>())?;
    m.add("TopologyError", py.get_type::<error::TopologyError>())?;
    m.add("PolicyError", py.get_type::<error::PolicyError>())?;
    m.add("SimulationError", py.get_type::<error::SimulationError>())?;
    m.add("HostError", py.get_type::<error::HostError>())?;
    m.add("KERNEL_PROFILES", numalab_sim::Kernel::ALL.map(|(name, _)| name).to_vec())?;
    let thp: std::collections::BTreeMap<&str, &str> =
        numalab_sim::Kernel::ALL.iter().map(|(name, k)| (*name, k.profile().thp.enabled_default.name())).collect();
    m.add("KERNEL_THP_DEFAULTS", thp)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
