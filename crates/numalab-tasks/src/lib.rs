//! numalab's task-graph mode: over-decomposed runtimes (Charm++ and its kind) on a NUMA machine.
//!
//! - [`graph`]: objects (load, state size) and their messages per iteration.
//! - [`gen`]: lb_test, kNeighbor and jacobi2D built as their Charm++ code builds them.
//! - [`parse`]: user graphs, numalab's edge list and the text form of Charm++'s LB dump.
//! - [`platform`]: PEs on cores and nodes; message and migration costs from the machine.
//! - [`atsync`]: the barrier before each balancing step (a reduction and a broadcast over the PEs).
//! - [`balance`]: none, greedy, greedy-refine, refine, treematch and numalab's NUMA-aware balancer.
//! - [`strategy_time`]: how long each balancing strategy runs on the central PE (a model of its work).
//! - [`lbstep`]: the rest of a balancing step: the decision's broadcast and barrier, resumption.
//! - [`cost`]: what one iteration and one migration step cost under a mapping.
//! - [`measure`]: loads as the runtime's timers record them (resolution, background work, wall or CPU).
//! - [`mod@simulate`]: bulk-synchronous iterations with balancing every `lb_period` iterations.
//!
//! No I/O except reading a graph file; deterministic from the seed.

pub mod atsync;
pub mod balance;
pub mod cost;
pub mod error;
pub mod gen;
pub mod graph;
pub mod lbstep;
pub mod measure;
pub mod parse;
pub mod platform;
pub use numalab_model::rng;
pub mod simulate;
pub mod strategy_time;

pub use balance::{Balancer, LbInput};
pub use error::TaskError;
pub use graph::{Adjacency, Edge, TaskGraph};
pub use measure::{LbTimer, NoiseParams};
pub use platform::{CommLayer, CostParams, Platform};
pub use simulate::{simulate, SimOptions, SimResult};
