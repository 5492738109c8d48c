//! GreedyRefine (Charm++ src/ck-ldb/greedy.h, `GreedyRefine::solve`, the TreeLB strategy that
//! replaced GreedyRefineLB.C): compute greedy's makespan M, set M <- M * tolerance; then,
//! heaviest object first, keep each object on its old PE if that PE's load plus the object stays
//! within M, else put it on the least-loaded PE; raise M to any new maximum.
//!
//! - Complexity: O(n log n + n log P) (an ordered set of PEs, so any PE can be taken out).
//! - Migrations: only objects that do not fit on their old PE; few to moderate.
//! - Parameters: `greedy_refine_tolerance` (1.0: greedy.h's default; > 1 trades makespan for fewer moves).

use std::collections::BTreeSet;

use super::greedy::greedy_assign;
use super::{fixed_loads, heaviest_first, Balancer, Key, LbInput};
use crate::error::TaskError;
use crate::gen::Params;

pub struct GreedyRefineLb {
    pub tolerance: f64,
}

impl GreedyRefineLb {
    pub fn read(p: &mut Params<'_>) -> Result<Self, TaskError> {
        Ok(GreedyRefineLb { tolerance: p.f64("greedy_refine_tolerance", 1.0, 1.0)? })
    }
}

impl Balancer for GreedyRefineLb {
    fn name(&self) -> String {
        "greedy-refine".into()
    }
    fn balance(&mut self, input: &LbInput<'_>) -> Result<Vec<u32>, TaskError> {
        let (_, greedy_loads) = greedy_assign(input);
        let mut m = greedy_loads.iter().copied().fold(0.0, f64::max) * self.tolerance;
        let mut loads = fixed_loads(input);
        let mut set: BTreeSet<Key> = loads.iter().enumerate().map(|(p, &l)| Key(l, p as u32)).collect();
        let mut to = input.mapping.to_vec();
        for i in heaviest_first(input.loads_ns, |i| input.migratable[i]) {
            let (i, w) = (i as usize, input.loads_ns[i as usize]);
            let old = input.mapping[i] as usize;
            let p = if loads[old] + w <= m { old } else { set.iter().next().expect("at least one PE").1 as usize };
            set.remove(&Key(loads[p], p as u32));
            loads[p] += w;
            set.insert(Key(loads[p], p as u32));
            to[i] = p as u32;
            m = m.max(loads[p]);
        }
        Ok(to)
    }
}
