//! One place that maps every Rust error to the Python exception tree of `numalab.exceptions`.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use numalab_linux::LinuxError;
use numalab_model::{PolicyError as ModelPolicyError, TopologyError as ModelTopologyError};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::PyErr;

// Each type's Python name is the name `numalab._core` exports it under, so `pickle` finds the
// class again when a study worker sends an exception back to the parent process.
create_exception!(numalab._core, NumalabError, PyException, "Base of every numalab error.");
create_exception!(numalab._core, TopologyError, NumalabError, "A machine description is wrong.");
create_exception!(numalab._core, PolicyError, NumalabError, "A memory policy or placement is wrong.");
create_exception!(numalab._core, SimulationError, NumalabError, "A simulation could not run.");
create_exception!(numalab._core, HostError, NumalabError, "Reading the host (sysfs/procfs) failed.");

pub fn topology(e: ModelTopologyError) -> PyErr {
    TopologyError::new_err((e.to_string(), e.path().to_string()))
}

pub fn policy(e: ModelPolicyError) -> PyErr {
    PolicyError::new_err(e.0)
}

pub fn host(e: LinuxError) -> PyErr {
    HostError::new_err(e.to_string())
}

thread_local! {
    /// How many `guarded` calls this thread is inside (they may nest), and the last panic's
    /// message and place, recorded there instead of printed.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Chain a panic hook once: inside `guarded` it records the message and where it happened (the
/// caller turns it into an exception, nothing is printed); anywhere else the previous hook runs.
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if DEPTH.with(Cell::get) == 0 {
                return previous(info);
            }
            let p = info.payload();
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
            CAUGHT.with(|c| *c.borrow_mut() = Some(format!("{msg}{at}")));
        }));
    });
}

/// Run `f` with the GIL released, turning a panic into `SimulationError("internal error in
/// <what>: <message> at <file:line>; please report it")`: an ordinary Python exception that
/// pickles (a study worker sends it back), instead of a `PanicException` and a
/// "thread panicked" line on stderr. Every binding that calls into Rust code goes through it.
pub fn guarded<T: Send>(py: pyo3::Python<'_>, what: &str, f: impl FnOnce() -> T + Send) -> pyo3::PyResult<T> {
    install_hook();
    py.detach(|| {
        DEPTH.with(|d| d.set(d.get() + 1));
        let r = panic::catch_unwind(AssertUnwindSafe(f));
        DEPTH.with(|d| d.set(d.get() - 1));
        r.map_err(|_| CAUGHT.with(|c| c.borrow_mut().take()).unwrap_or_else(|| "unknown panic".into()))
    })
    .map_err(|msg| SimulationError::new_err(format!("internal error in {what}: {msg}; please report it")))
}

/// A value that should always serialise did not.
pub fn internal(what: &str, e: impl std::fmt::Display) -> PyErr {
    SimulationError::new_err(format!("internal error: cannot convert the {what}: {e}"))
}
