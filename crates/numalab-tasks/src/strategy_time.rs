//! How long a balancing strategy runs on the central PE (`CentralLB::Strategy`, between
//! `ReceiveStats` and `ApplyDecision` in src/ck-ldb/CentralLB.C), as a model of its work: every
//! PE waits for it. The model, not the balancer's wall time here, enters the run's time, so runs
//! stay bit-for-bit deterministic.
//!
//! Work units per call, from each strategy's complexity (n objects, E communication records,
//! P PEs; docs/taskgraph.md §3):
//!
//! | strategy | units |
//! |---|---|
//! | none (DummyLB) | 0 |
//! | greedy (GreedyLB: sort, then a PE heap) | n log2 n + n log2 P |
//! | greedy-refine (greedy's makespan, then a second pass) | 2 (n log2 n + n log2 P) |
//! | refine (Refiner::multirefine: about 8 trials over the objects and PE sets) | n log2 n + 8 (n + P log2 P) |
//! | treematch (greedy, the PE-pair matrix, grouping) | n log2 n + n log2 P + E + P^2 |
//! | numalab (sort, phases, locality pass) | n log2 n + n log2 P + 2 E |
//! | random (RandCentLB) | n |
//! | metis, scotch (the object graph partitioned into P parts) | (n + E) log2 P |
//!
//! In-process strategies cost [`CostParams::strategy_op_ns`] per unit; METIS and Scotch their own
//! constants, fitted to their run time measured on this project's machine by
//! `bench/lb_strategy_time.py` (the library call and gpart's own mapping time alone). A strategy
//! of another name (a user's Python callable) is not modelled: 0.

use crate::platform::CostParams;

/// The modelled run time of strategy `name` on `n` objects, `edges` communication records and
/// `pes` PEs, in ns.
pub fn strategy_ns(name: &str, n: usize, edges: usize, pes: usize, c: &CostParams) -> f64 {
    let (n, e, p) = (n as f64, edges as f64, pes.max(1) as f64);
    let log = |x: f64| x.max(1.0).log2();
    let sort = n * log(n);
    let heap = n * log(p);
    match name {
        "greedy" => c.strategy_op_ns * (sort + heap),
        "greedy-refine" => c.strategy_op_ns * 2.0 * (sort + heap),
        "refine" => c.strategy_op_ns * (sort + 8.0 * (n + p * log(p))),
        "treematch" => c.strategy_op_ns * (sort + heap + e + p * p),
        "numalab" => c.strategy_op_ns * (sort + heap + 2.0 * e),
        "random" => c.strategy_op_ns * n,
        "metis" => c.metis_unit_ns * (n + e) * log(p),
        "scotch" => c.scotch_unit_ns * (n + e) * log(p),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_grows_with_objects_and_edges_and_none_is_free() {
        let c = CostParams::default();
        assert_eq!(strategy_ns("none", 1000, 1000, 32, &c), 0.0);
        for s in ["greedy", "refine", "treematch", "numalab", "metis", "scotch"] {
            let small = strategy_ns(s, 100, 200, 32, &c);
            let big = strategy_ns(s, 1000, 200, 32, &c);
            assert!(small > 0.0 && big > small, "{s}");
        }
        for s in ["treematch", "numalab", "metis", "scotch"] {
            assert!(strategy_ns(s, 100, 2000, 32, &c) > strategy_ns(s, 100, 200, 32, &c), "{s}");
        }
    }
}
