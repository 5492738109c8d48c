//! Load balancers: one trait, one module per strategy. A balancer sees what Charm++'s central
//! strategies see (`BaseLB::LDStats`: measured object loads, the communication records, the
//! current PE of every object) plus the machine's PE-to-node map and node distances, and
//! returns the new PE of every object (`to_proc`).
//!
//! | name | module | keeps the mapping | uses messages | uses topology |
//! |---|---|---|---|---|
//! | `none` | this one | yes | no | no |
//! | `greedy` | [`greedy`] | no | no | no |
//! | `greedy-refine` | [`greedy_refine`] | within a tolerance of greedy's makespan | no | no |
//! | `refine` | [`refine`] | moves only from overloaded PEs | no | no |
//! | `treematch` | [`treematch`] | no | PE-to-PE bytes after greedy | nodes and distances |
//! | `numalab` | [`numalab`] | moves only what pays for itself | bytes per node | nodes, distances, copy rates |

pub mod greedy;
pub mod greedy_refine;
pub mod numalab;
pub mod refine;
pub mod treematch;

use std::cmp::Ordering;

use crate::error::TaskError;
use crate::gen::Params;
use crate::graph::{Adjacency, Edge};
use crate::platform::Platform;

/// What a balancer is given at a balancing step.
pub struct LbInput<'a> {
    /// Load of each object measured over the last iteration (compute and its own messaging), ns.
    pub loads_ns: &'a [f64],
    pub state_bytes: &'a [u64],
    pub edges: &'a [Edge],
    pub adj: &'a Adjacency,
    /// Current PE of each object (`from_proc`).
    pub mapping: &'a [u32],
    /// Which objects may move.
    pub migratable: &'a [bool],
    /// Iterations until the next balancing step: how long a move's gain is expected to last.
    pub lb_period: usize,
    pub platform: &'a Platform,
}

impl LbInput<'_> {
    /// Node (logical index) of each PE.
    pub fn pe_nodes(&self) -> &[usize] {
        &self.platform.pe_node
    }

    /// SLIT distances between nodes (logical indexes).
    pub fn distances(&self) -> &[Vec<u32>] {
        &self.platform.distances
    }

    pub fn n_pes(&self) -> usize {
        self.platform.n_pes()
    }
}

pub trait Balancer {
    fn name(&self) -> String;
    fn balance(&mut self, input: &LbInput<'_>) -> Result<Vec<u32>, TaskError>;
}

/// The names `make` accepts.
pub const NAMES: [&str; 6] = ["none", "greedy", "greedy-refine", "refine", "treematch", "numalab"];

/// Every balancer option of `make`, so one `params` table can serve several balancers.
pub const PARAM_KEYS: [&str; 5] =
    ["greedy_refine_tolerance", "refine_overload", "numalab_tolerance", "numalab_gain_margin", "numalab_locality"];

/// Mark every balancer's options as known (a table shared by a run of several balancers).
pub fn accept_other_params(p: &mut Params<'_>) {
    for k in PARAM_KEYS {
        p.accept(k);
    }
}

/// A built-in balancer by name, its parameters read from `params` (unknown keys are left for the
/// caller's `Params::finish`).
pub fn make(name: &str, params: &mut Params<'_>) -> Result<Box<dyn Balancer + Send>, TaskError> {
    Ok(match name {
        "none" => Box::new(NoLb),
        "greedy" => Box::new(greedy::GreedyLb),
        "greedy-refine" => Box::new(greedy_refine::GreedyRefineLb::read(params)?),
        "refine" => Box::new(refine::RefineLb::read(params)?),
        "treematch" => Box::new(treematch::TreeMatchLb),
        "numalab" => Box::new(numalab::NumaLb::read(params)?),
        other => {
            return Err(TaskError::param(format!(
                "balancer '{other}' (accepted: {}, or a Python callable)",
                NAMES.join(", ")
            )))
        }
    })
}

/// No balancing: every object stays (Charm++'s `DummyLB`).
pub struct NoLb;

impl Balancer for NoLb {
    fn name(&self) -> String {
        "none".into()
    }
    fn balance(&mut self, input: &LbInput<'_>) -> Result<Vec<u32>, TaskError> {
        Ok(input.mapping.to_vec())
    }
}

/// A load as a totally ordered key (loads are finite), ties broken by the PE index for
/// determinism.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Key(pub f64, pub u32);

impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

/// Objects by decreasing load, ties by index (GreedyLB.C sorts by load only; the index makes the
/// order deterministic).
pub(crate) fn heaviest_first(loads: &[f64], which: impl Fn(usize) -> bool) -> Vec<u32> {
    let mut v: Vec<u32> = (0..loads.len() as u32).filter(|&i| which(i as usize)).collect();
    v.sort_by(|&a, &b| loads[b as usize].total_cmp(&loads[a as usize]).then(a.cmp(&b)));
    v
}

/// PE loads of the objects that may not move (their PE's fixed load).
pub(crate) fn fixed_loads(input: &LbInput<'_>) -> Vec<f64> {
    let mut l = vec![0.0; input.n_pes()];
    for (i, &pe) in input.mapping.iter().enumerate() {
        if !input.migratable[i] {
            l[pe as usize] += input.loads_ns[i];
        }
    }
    l
}

/// PE loads under a mapping.
pub fn pe_loads(loads: &[f64], mapping: &[u32], n_pes: usize) -> Vec<f64> {
    let mut l = vec![0.0; n_pes];
    for (i, &pe) in mapping.iter().enumerate() {
        l[pe as usize] += loads[i];
    }
    l
}
