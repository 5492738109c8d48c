//! `numalab._core.TaskGraph` and the task-graph functions: graphs built or read in Rust
//! (`numalab_tasks`), simulated on a `_core.Machine` under a named balancer or a Python callable.
//!
//! Errors: bad parameters raise `SpecError(message)`; a bad graph file raises
//! `SpecError(message, path, line, reason)` (`args[0]` is the one-line message the CLI prints).

use std::path::Path;

use numalab_tasks::balance::{self, Balancer, LbInput};
use numalab_tasks::gen::{self, Params};
use numalab_tasks::{CommLayer, CostParams, LbTimer, NoiseParams, Platform, SimOptions, TaskError, TaskGraph};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

use crate::error;
use crate::machine::PyMachine;
use crate::spec::{to_py, to_value, SpecError};

fn task_err(e: TaskError) -> PyErr {
    match &e {
        TaskError::File { path, line, reason } => {
            SpecError::new_err((e.to_string(), path.display().to_string(), *line, reason.clone()))
        }
        _ => SpecError::new_err(e.to_string()),
    }
}

fn params_value(params: Option<&Bound<'_, PyDict>>, what: &str) -> PyResult<Value> {
    match params {
        None => Ok(Value::Null),
        Some(d) => to_value(d.as_any(), what),
    }
}

#[pyclass(module = "numalab._core", name = "TaskGraph", frozen)]
pub struct PyTaskGraph {
    pub inner: TaskGraph,
}

#[pymethods]
impl PyTaskGraph {
    /// lb_test's graph (tests/charm++/load_balancing/lb_test): `min_us`, `max_us`, `topology`
    /// (ring, mesh2d, mesh3d, randgraph), `ratio`, `msg_bytes`, `state_bytes`.
    #[staticmethod]
    #[pyo3(signature = (n_objects, seed = 0, **params))]
    fn lb_test(py: Python<'_>, n_objects: usize, seed: u64, params: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let p = params_value(params, "lb_test")?;
        let inner =
            error::guarded(py, "the lb_test generator", || gen::lb_test(n_objects, seed, &p))?.map_err(task_err)?;
        Ok(PyTaskGraph { inner })
    }

    /// kNeighbor's graph: `calc_per_step`, `ns_per_op`, `base_ns`, `state_bytes`.
    #[staticmethod]
    #[pyo3(signature = (n_objects, k, msg_bytes, seed = 0, **params))]
    fn kneighbor(
        py: Python<'_>,
        n_objects: usize,
        k: usize,
        msg_bytes: u64,
        seed: u64,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let p = params_value(params, "kneighbor")?;
        let inner =
            error::guarded(py, "the kneighbor generator", || gen::kneighbor(n_objects, k, msg_bytes, seed, &p))?
                .map_err(task_err)?;
        Ok(PyTaskGraph { inner })
    }

    /// jacobi2D's graph: `ns_per_point`, `jitter`.
    #[staticmethod]
    #[pyo3(signature = (nx, ny, block, seed = 0, **params))]
    fn jacobi2d(
        py: Python<'_>,
        nx: usize,
        ny: usize,
        block: usize,
        seed: u64,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let p = params_value(params, "jacobi2d")?;
        let inner = error::guarded(py, "the jacobi2d generator", || gen::jacobi2d(nx, ny, block, seed, &p))?
            .map_err(task_err)?;
        Ok(PyTaskGraph { inner })
    }

    /// numalab's edge-list format (`obj, id, load_ns, state_bytes` / `edge, a, b, msgs, bytes`).
    #[staticmethod]
    fn from_edge_list(py: Python<'_>, path: &str) -> PyResult<Self> {
        let inner =
            error::guarded(py, "the edge-list reader", || numalab_tasks::parse::from_edge_list(Path::new(path)))?
                .map_err(task_err)?;
        Ok(PyTaskGraph { inner })
    }

    /// The text form of a Charm++ LB dump (fields of `LDStats::pup`).
    #[staticmethod]
    fn from_lb_dump(py: Python<'_>, path: &str) -> PyResult<Self> {
        let inner = error::guarded(py, "the LB dump reader", || numalab_tasks::parse::from_lb_dump(Path::new(path)))?
            .map_err(task_err)?;
        Ok(PyTaskGraph { inner })
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.name.clone()
    }

    #[getter]
    fn n_objects(&self) -> usize {
        self.inner.n_objects()
    }

    #[getter]
    fn n_edges(&self) -> usize {
        self.inner.edges.len()
    }

    #[getter]
    fn loads_ns(&self) -> Vec<f64> {
        self.inner.loads_ns.clone()
    }

    #[getter]
    fn state_bytes(&self) -> Vec<u64> {
        self.inner.state_bytes.clone()
    }

    /// `(a, b, msgs, bytes)` per edge: a sends msgs messages totalling bytes to b per iteration.
    #[getter]
    fn edges(&self) -> Vec<(u32, u32, u64, u64)> {
        self.inner.edges.iter().map(|e| (e.a, e.b, e.msgs, e.bytes)).collect()
    }

    /// The initial PE of each object when the source gives one (an LB dump), else None.
    #[getter]
    fn initial_pe(&self) -> Option<Vec<u32>> {
        self.inner.initial_pe.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "TaskGraph('{}', objects={}, edges={})",
            self.inner.name,
            self.inner.n_objects(),
            self.inner.edges.len()
        )
    }
}

/// A Python callable as a balancer: `f(state) -> list[int]`, called with the GIL held. A Python
/// exception inside it is kept and raised again once the simulation stops.
struct PyBalancer {
    f: Py<PyAny>,
    name: String,
    raised: Option<PyErr>,
}

impl PyBalancer {
    fn call(&self, py: Python<'_>, input: &LbInput<'_>) -> PyResult<Vec<i64>> {
        let state = PyDict::new(py);
        state.set_item("loads_ns", input.loads_ns.to_vec())?;
        let edges: Vec<(u32, u32, u64, u64)> = input.edges.iter().map(|e| (e.a, e.b, e.msgs, e.bytes)).collect();
        state.set_item("edges", PyList::new(py, edges)?)?;
        state.set_item("mapping", input.mapping.to_vec())?;
        state.set_item("pe_nodes", input.pe_nodes().to_vec())?;
        state.set_item("distances", input.distances().to_vec())?;
        state.set_item("n_pes", input.n_pes())?;
        state.set_item("state_bytes", input.state_bytes.to_vec())?;
        state.set_item("lb_period", input.lb_period)?;
        self.f.bind(py).call1((state,))?.extract::<Vec<i64>>()
    }
}

impl Balancer for PyBalancer {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn balance(&mut self, input: &LbInput<'_>) -> Result<Vec<u32>, TaskError> {
        match Python::attach(|py| self.call(py, input)) {
            Ok(v) => v
                .into_iter()
                .enumerate()
                .map(|(i, p)| {
                    u32::try_from(p).map_err(|_| TaskError::Balancer {
                        name: self.name.clone(),
                        reason: format!("object {i} mapped to PE {p}, outside 0..{}", input.n_pes()),
                    })
                })
                .collect(),
            Err(e) => {
                self.raised = Some(e);
                Err(TaskError::Balancer { name: self.name.clone(), reason: "raised an exception".into() })
            }
        }
    }
}

/// A built-in balancer or a Python callable.
enum Lb {
    Named(Box<dyn Balancer + Send>),
    Py(PyBalancer),
}

impl Lb {
    fn get(&mut self) -> &mut (dyn Balancer + Send) {
        match self {
            Lb::Named(b) => b.as_mut(),
            Lb::Py(b) => b,
        }
    }

    /// The error to raise for `e`: the callable's own exception when it raised one.
    fn error(&mut self, e: TaskError) -> PyErr {
        match self {
            Lb::Py(b) => b.raised.take().unwrap_or_else(|| task_err(e)),
            Lb::Named(_) => task_err(e),
        }
    }
}

/// The balancer for `balancer` (a name or a callable) with its parameters read from `p`.
fn balancer_of(obj: &Bound<'_, PyAny>, p: &mut Params<'_>) -> PyResult<Lb> {
    if let Ok(name) = obj.extract::<String>() {
        return balance::make(&name, p).map(Lb::Named).map_err(task_err);
    }
    if obj.is_callable() {
        let name = obj.getattr("__name__").and_then(|n| n.extract::<String>()).unwrap_or_else(|_| "external".into());
        return Ok(Lb::Py(PyBalancer { f: obj.clone().unbind(), name, raised: None }));
    }
    Err(SpecError::new_err(format!(
        "balancer: {} is neither a name ({}) nor a callable",
        obj.repr()?,
        balance::NAMES.join(", ")
    )))
}

fn platform(machine: &PyMachine, pes: Option<usize>, comm_layer: &str, p: &mut Params<'_>) -> PyResult<Platform> {
    let layer = CommLayer::parse(comm_layer).map_err(task_err)?;
    let costs = CostParams::read(p).map_err(task_err)?;
    Platform::new(&machine.inner, pes, layer, costs).map_err(task_err)
}

/// Simulate `iterations` bulk-synchronous iterations of `graph` on `machine`'s first `pes` cores,
/// balancing every `lb_period` iterations with `balancer`. `params`: cost constants
/// (`shm_msg_ns`, `net_dgram_ns`, `net_dgram_bytes`, `migration_fixed_ns`), `load_noise`, the LB
/// database's measurement noise (`os_noise`: 0 off, 1 the machine's estimates) and timer
/// (`lb_timer`: wall or cpu), and
/// balancer options (`greedy_refine_tolerance`, `refine_overload`, `numalab_tolerance`,
/// `numalab_gain_margin`, `numalab_locality`).
#[pyfunction]
#[pyo3(signature = (graph, machine, balancer, iterations = 100, lb_period = 10, comm_layer = "shm", pes = None, seed = 0, params = None))]
#[allow(clippy::too_many_arguments, reason = "the Python function's keyword arguments, one to one")]
pub fn taskgraph_simulate<'py>(
    py: Python<'py>,
    graph: &PyTaskGraph,
    machine: &PyMachine,
    balancer: &Bound<'py, PyAny>,
    iterations: usize,
    lb_period: usize,
    comm_layer: &str,
    pes: Option<usize>,
    seed: u64,
    params: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let pv = params_value(params, "params")?;
    let mut p = Params::new("params", &pv).map_err(task_err)?;
    let plat = platform(machine, pes, comm_layer, &mut p)?;
    let load_noise = p.f64("load_noise", 0.0, 0.0).map_err(task_err)?;
    let noise = NoiseParams::read(&mut p).map_err(task_err)?;
    let timer = LbTimer::parse(&p.choice("lb_timer", "wall", &["wall", "cpu"]).map_err(task_err)?).map_err(task_err)?;
    let mut lb = balancer_of(balancer, &mut p)?;
    balance::accept_other_params(&mut p);
    p.finish().map_err(task_err)?;
    let opts = SimOptions { iterations, lb_period, seed, load_noise, noise, timer };
    let g = &graph.inner;
    let out = error::guarded(py, "the task-graph simulator", || numalab_tasks::simulate(g, &plat, lb.get(), &opts))?;
    let res = out.map_err(|e| lb.error(e))?;
    let mut v = serde_json::to_value(&res).map_err(|e| error::internal("task-graph result", e))?;
    if let Value::Object(m) = &mut v {
        m.remove("balancer");
    }
    to_py(py, &v)
}

/// Time to migrate `n_objects` objects of `state_bytes` each from PE `src_pe` to PE `dst_pe`,
/// one after the other (PE k = the machine's k-th core), in ns.
#[pyfunction]
#[pyo3(signature = (machine, src_pe, dst_pe, state_bytes, n_objects = 1, comm_layer = "shm", params = None))]
pub fn taskgraph_migration_time_ns(
    machine: &PyMachine,
    src_pe: usize,
    dst_pe: usize,
    state_bytes: u64,
    n_objects: usize,
    comm_layer: &str,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<f64> {
    let pv = params_value(params, "params")?;
    let mut p = Params::new("params", &pv).map_err(task_err)?;
    let plat = platform(machine, None, comm_layer, &mut p)?;
    p.finish().map_err(task_err)?;
    let np = plat.n_pes();
    if src_pe >= np || dst_pe >= np {
        return Err(SpecError::new_err(format!(
            "src_pe = {src_pe}, dst_pe = {dst_pe} (accepted: 0 to {}, the cores of {})",
            np - 1,
            machine.inner.name
        )));
    }
    Ok(n_objects as f64 * plat.migration_total_ns(src_pe, dst_pe, state_bytes as f64))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTaskGraph>()?;
    m.add_function(wrap_pyfunction!(taskgraph_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(taskgraph_migration_time_ns, m)?)?;
    m.add("TASK_BALANCERS", balance::NAMES.to_vec())?;
    // (parameter, default, low, high, source) of each estimated simulator constant.
    let defaults = serde_json::to_value(CostParams::default()).map_err(|e| error::internal("cost defaults", e))?;
    let estimates: Vec<(&str, f64, f64, f64, &str)> = numalab_tasks::platform::ESTIMATES
        .iter()
        .map(|&(k, lo, hi, src)| (k, defaults[k].as_f64().unwrap_or(f64::NAN), lo, hi, src))
        .collect();
    m.add("TASKGRAPH_ESTIMATES", estimates)?;
    Ok(())
}
