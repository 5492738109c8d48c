//! numalab's vocabulary for Python, from its one definition in `numalab_model`: the counter
//! registry (`counters()`) and CPU/node sets in Linux cpulists and hwloc bitmap strings
//! (`parse_cpulist`, `format_cpulist`, `parse_hwloc`, `format_hwloc`; errors are `ValueError`).

use numalab_model::bitmap::MAX_INDEX;
use numalab_model::counters::COUNTERS;
use numalab_model::Bitmap;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(counters, m)?)?;
    m.add_function(wrap_pyfunction!(parse_cpulist, m)?)?;
    m.add_function(wrap_pyfunction!(format_cpulist, m)?)?;
    m.add_function(wrap_pyfunction!(parse_hwloc, m)?)?;
    m.add_function(wrap_pyfunction!(format_hwloc, m)?)?;
    Ok(())
}

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

/// A Linux cpulist (`0-3,8`; empty = empty set) as its sorted indexes.
#[pyfunction]
pub fn parse_cpulist(text: &str) -> PyResult<Vec<u32>> {
    Ok(Bitmap::parse_list(text).map_err(PyValueError::new_err)?.iter().collect())
}

/// hwloc's bitmap string (`0x00000100,0x000000ff`) as its sorted indexes; a set bit at or above
/// `limit` (default and at most `numalab_model::bitmap::MAX_INDEX`) is refused before the set is built.
#[pyfunction]
#[pyo3(signature = (text, limit = None))]
pub fn parse_hwloc(text: &str, limit: Option<u32>) -> PyResult<Vec<u32>> {
    let limit = limit.unwrap_or(MAX_INDEX).min(MAX_INDEX);
    Ok(Bitmap::parse_hwloc_below(text, limit).map_err(PyValueError::new_err)?.iter().collect())
}

/// A set of indexes as a cpulist, runs collapsed (`0-3,8`).
#[pyfunction]
pub fn format_cpulist(indexes: Vec<i64>) -> PyResult<String> {
    Ok(bitmap_of(indexes)?.to_list_string())
}

/// A set of indexes as hwloc writes it: `0x0` when empty, else every 32-bit word up to the highest.
#[pyfunction]
pub fn format_hwloc(indexes: Vec<i64>) -> PyResult<String> {
    Ok(bitmap_of(indexes)?.to_hwloc_string())
}

fn bitmap_of(indexes: Vec<i64>) -> PyResult<Bitmap> {
    let mut b = Bitmap::new();
    for i in indexes {
        match u32::try_from(i) {
            Ok(i) if i < MAX_INDEX => b.set(i),
            _ => return Err(PyValueError::new_err(format!("index {i} is outside 0..{MAX_INDEX}"))),
        }
    }
    Ok(b)
}
