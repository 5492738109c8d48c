//! `numalab._core.RunSpec`: one run, handed over as Python objects and read straight into the
//! engine's typed inputs (no JSON text on the way in or out), then checked once by
//! `numalab_sim::RunSpec::new`. `simulate()` runs it with the GIL released.

use numalab_sim::input::BALANCING_KNOBS;
use pyo3::create_exception;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::error::{self, NumalabError};
use crate::machine::PyMachine;

create_exception!(numalab._core, SpecError, NumalabError, "A run specification is wrong (bad input).");

/// A Python value as a JSON value tree (dicts, lists, str, int, float, bool, None).
pub(crate) fn to_value(obj: &Bound<'_, PyAny>, path: &str) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(SpecError::new_err(format!("{path}: {obj} is out of range (at most 2^64-1)")));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        return Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| SpecError::new_err(format!("{path}: {v} is not a finite number")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let text =
            s.to_str().map_err(|_| SpecError::new_err(format!("{path}: {} is not valid text", s.to_string_lossy())))?;
        return Ok(Value::String(text.to_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in d.iter() {
            let key = k.str()?.to_string_lossy().into_owned();
            let sub = to_value(&v, &format!("{path}.{key}"))?;
            map.insert(key, sub);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for (i, v) in obj.try_iter()?.enumerate() {
            out.push(to_value(&v?, &format!("{path}[{i}]"))?);
        }
        return Ok(Value::Array(out));
    }
    Err(SpecError::new_err(format!("{path}: cannot pass a {} to the engine", obj.get_type().name()?)))
}

/// Python object -> typed engine input, with the key path of the first bad value.
fn typed<T: DeserializeOwned>(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<T> {
    let value = to_value(obj, what)?;
    serde_path_to_error::deserialize(value)
        .map_err(|e| SpecError::new_err(format!("{what}.{}: {}", e.path(), e.inner())))
}

/// A JSON value tree as Python objects (the engine's output document).
pub(crate) fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into_pyobject(py)?.into_any(),
            (None, Some(i)) => i.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for x in a {
                list.append(to_py(py, x)?)?;
            }
            list.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

#[pyclass(module = "numalab._core", name = "RunSpec", frozen)]
pub struct PyRunSpec {
    machine: Py<PyMachine>,
    inner: numalab_sim::RunSpec,
}

#[pymethods]
impl PyRunSpec {
    /// `RunSpec(machine, workload, placement, region_policies, config)`: `workload` is the
    /// resolved descriptor (regions without policies), `placement` a `PlacementRequest`,
    /// `region_policies` one `PolicyRequest` or None per region, `config` a `SimConfig`.
    #[new]
    fn new(
        machine: Bound<'_, PyMachine>,
        workload: &Bound<'_, PyAny>,
        placement: &Bound<'_, PyAny>,
        region_policies: &Bound<'_, PyAny>,
        config: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let w: numalab_sim::WorkloadSpec = typed("workload", workload)?;
        let p: numalab_sim::PlacementRequest = typed("placement", placement)?;
        let r: Vec<Option<numalab_sim::PolicyRequest>> = typed("region_policies", region_policies)?;
        let c: numalab_sim::SimConfig = typed("config", config)?;
        let inner =
            numalab_sim::RunSpec::new(&machine.get().inner, w, &p, &r, c).map_err(|e| SpecError::new_err(e.0))?;
        Ok(PyRunSpec { machine: machine.unbind(), inner })
    }

    /// The result document's `placement` (policy, nodes, cpubind, OpenMP binding).
    fn placement_doc<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let doc = self.inner.placement_doc(&self.machine.get().inner);
        to_py(py, &serde_json::to_value(doc).map_err(|e| error::internal("placement", e))?)
    }

    #[getter]
    fn threads(&self) -> u32 {
        self.inner.workload.threads
    }

    /// Run the engine (GIL released); returns the engine's output as Python objects.
    fn simulate<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let m = &self.machine.get().inner;
        let s = &self.inner;
        let out = error::guarded(py, "the simulator", || {
            numalab_sim::simulate(m, &s.workload, &s.placement, &s.config).map_err(|e| e.to_string())
        })?
        .map_err(error::SimulationError::new_err)?;
        to_py(py, &serde_json::to_value(&out).map_err(|e| error::internal("output", e))?)
    }

    /// The per-page access analysis of the workload (docs/mapping.md): exclusivity, its
    /// histogram and coarser page sizes, per-region summaries, numalize's mapping scores and the
    /// thread communication matrix. `thread_nodes`: each thread's node (logical index).
    fn mapping_metrics<'py>(&self, py: Python<'py>, thread_nodes: Vec<usize>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.machine.get().inner.nodes.len();
        let w = &self.inner.workload;
        let out = error::guarded(py, "the mapping analysis", || {
            numalab_sim::mapping::page_accesses(w, &thread_nodes, n)
                .map(|pa| numalab_sim::mapping::mapping_metrics(&pa))
        })?
        .map_err(SpecError::new_err)?;
        to_py(py, &serde_json::to_value(&out).map_err(|e| error::internal("mapping", e))?)
    }

    /// Simulate with every page placed by one of numalize's mappings (`numalab_sim::mapping::MAPPINGS`)
    /// before the run (docs/mapping.md §4); `thread_nodes` as for `mapping_metrics`.
    fn simulate_mapping<'py>(
        &self,
        py: Python<'py>,
        mapping: &str,
        thread_nodes: Vec<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = &self.machine.get().inner;
        let s = &self.inner;
        let out = error::guarded(py, "the simulator", || {
            let pa = numalab_sim::mapping::page_accesses(&s.workload, &thread_nodes, m.nodes.len())?;
            let nodes = numalab_sim::mapping::mapping_nodes(&pa, mapping)?;
            numalab_sim::simulate_mapped(m, &s.workload, &s.placement, &s.config, &nodes).map_err(|e| e.to_string())
        })?
        .map_err(error::SimulationError::new_err)?;
        to_py(py, &serde_json::to_value(&out).map_err(|e| error::internal("output", e))?)
    }
}

/// `simulate_corun([RunSpec, ...], [start_s, ...], shared=None, split=None)`: one run of every spec's
/// processes (`numalab_sim::corun`), on the first spec's machine under its configuration (seed,
/// kernel, balancing); each spec keeps its own workload, copies and placement. `shared`: per
/// spec, the regions its processes map from the run's segment of that name
/// (`numalab_sim::simulate_shared`); `split`: the segments whose mappers each work on their own
/// block (`numalab_sim::simulate_split`). GIL released.
#[pyfunction]
#[pyo3(signature = (specs, starts_s, shared=None, split=None))]
pub fn simulate_corun<'py>(
    py: Python<'py>,
    specs: Vec<PyRef<'py, PyRunSpec>>,
    starts_s: Vec<f64>,
    shared: Option<Vec<Vec<String>>>,
    split: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    if specs.is_empty() || specs.len() != starts_s.len() {
        return Err(SpecError::new_err(format!(
            "a co-run needs one start time per process group, got {} groups and {} start times",
            specs.len(),
            starts_s.len()
        )));
    }
    let m = &specs[0].machine.get().inner;
    let inner: Vec<&numalab_sim::RunSpec> = specs.iter().map(|s| &s.inner).collect();
    let out = error::guarded(py, "the simulator", || {
        let groups = inner
            .iter()
            .zip(&starts_s)
            .map(|(s, &start_s)| numalab_sim::corun::Group {
                workload: &s.workload,
                placement: &s.placement,
                start_s,
                thp_madvised: &s.config.thp_madvised,
            })
            .collect();
        match &shared {
            Some(names) => {
                numalab_sim::simulate_split(m, groups, names, split.as_deref().unwrap_or(&[]), &inner[0].config)
            }
            None => numalab_sim::simulate_groups(m, groups, &inner[0].config),
        }
        .map_err(|e| e.to_string())
    })?
    .map_err(error::SimulationError::new_err)?;
    to_py(py, &serde_json::to_value(&out).map_err(|e| error::internal("output", e))?)
}

/// `corun_mapping_metrics([RunSpec, ...], thread_nodes, shared)`: the data mapping analysis of a
/// co-run (`numalab_sim::mapping::corun_page_accesses`): `thread_nodes` gives every thread of the
/// run its node, spec by spec; `shared` as for `simulate_corun`.
#[pyfunction]
pub fn corun_mapping_metrics<'py>(
    py: Python<'py>,
    specs: Vec<PyRef<'py, PyRunSpec>>,
    thread_nodes: Vec<usize>,
    shared: Vec<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(first) = specs.first() else {
        return Err(SpecError::new_err("a co-run needs at least one process group"));
    };
    let n = first.machine.get().inner.nodes.len();
    let inner: Vec<&numalab_sim::RunSpec> = specs.iter().map(|s| &s.inner).collect();
    let out = error::guarded(py, "the mapping analysis", || {
        let mut parts = Vec::new();
        let mut at = 0;
        for s in &inner {
            let w = &s.workload;
            let k = (w.threads * w.processes) as usize;
            let tn =
                thread_nodes.get(at..at + k).ok_or("thread_nodes has fewer entries than the co-run has threads")?;
            parts.push((w, tn));
            at += k;
        }
        if at != thread_nodes.len() {
            return Err("thread_nodes has more entries than the co-run has threads".to_string());
        }
        numalab_sim::mapping::corun_page_accesses(&parts, &shared, n)
            .map(|pa| numalab_sim::mapping::mapping_metrics(&pa))
    })?
    .map_err(SpecError::new_err)?;
    to_py(py, &serde_json::to_value(&out).map_err(|e| error::internal("mapping", e))?)
}

/// The balancing tunables (name, default, min, max, help, procfs, debugfs, tiering), defined once
/// in `numalab_model::knobs` (the simulator and the Linux knob writers read the same table).
#[pyfunction]
pub fn balancing_knobs<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &serde_json::to_value(BALANCING_KNOBS).map_err(|e| error::internal("knobs", e))?)
}
