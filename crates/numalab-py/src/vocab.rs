//! numalab's vocabulary for Python, from its one definition in `numalab_model`: the counter
//! registry (`counters()`).

use numalab_model::counters::COUNTERS;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Every counter numalab reports, in registry order: dicts with `name`, `kind` (`numastat`,
/// `vmstat`, `sched`), `file`, `topic` (`allocation`, `balancing`, `tiering`, `thp`), `unit`,
/// `gauge`, `simulated` (the engine reports it too), `meaning` and `source` (the kernel's).
#[pyfunction]
pub fn counters(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for c in &COUNTERS {
        let d = PyDict::new(py);
        d.set_item("name", c.name)?;
        d.set_item("kind", c.kind.name())?;
        d.set_item("file", c.kind.file())?;
        d.set_item("topic", c.topic.name())?;
        d.set_item("unit", c.unit)?;
        d.set_item("gauge", c.gauge)?;
        d.set_item("simulated", c.simulated)?;
        d.set_item("meaning", c.meaning)?;
        d.set_item("source", c.source)?;
        out.append(d)?;
    }
    Ok(out)
}
