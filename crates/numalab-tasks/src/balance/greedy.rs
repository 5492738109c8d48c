//! GreedyLB (Charm++ src/ck-ldb/GreedyLB.C, `GreedyLB::work`): heaviest object first onto the
//! least-loaded PE (a min-heap of PEs), ignoring where objects are and what they send: the LPT
//! schedule, makespan at most 4/3 of the optimum for independent objects (Graham 1969).
//!
//! - Algorithm: PE loads start at their non-migratable objects' loads; objects sorted by
//!   decreasing load; each is popped onto the least-loaded PE, which is pushed back.
//! - Complexity: O(n log n + n log P).
//! - Migrations: about n(1 - 1/P), almost every object, since the result ignores `from_proc`.
//! - Parameters: none.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{fixed_loads, heaviest_first, Balancer, Key, LbInput};
use crate::error::TaskError;

pub struct GreedyLb;

/// The greedy assignment and its PE loads (shared by GreedyRefine and TreeMatch).
pub(crate) fn greedy_assign(input: &LbInput<'_>) -> (Vec<u32>, Vec<f64>) {
    let mut loads = fixed_loads(input);
    let mut heap: BinaryHeap<Reverse<Key>> =
        loads.iter().enumerate().map(|(p, &l)| Reverse(Key(l, p as u32))).collect();
    let mut to = input.mapping.to_vec();
    for i in heaviest_first(input.loads_ns, |i| input.migratable[i]) {
        let Reverse(Key(_, p)) = heap.pop().expect("at least one PE");
        loads[p as usize] += input.loads_ns[i as usize];
        to[i as usize] = p;
        heap.push(Reverse(Key(loads[p as usize], p)));
    }
    (to, loads)
}

impl Balancer for GreedyLb {
    fn name(&self) -> String {
        "greedy".into()
    }
    fn balance(&mut self, input: &LbInput<'_>) -> Result<Vec<u32>, TaskError> {
        Ok(greedy_assign(input).0)
    }
}
