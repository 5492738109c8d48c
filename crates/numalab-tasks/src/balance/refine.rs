//! RefineLB (Charm++ src/ck-ldb/RefineLB.C with src/ck-ldb/Refiner.C, `Refiner::multirefine`
//! and `Refiner::refine`): start from the current mapping and move objects only off overloaded
//! PEs.
//!
//! - `refine(o)`: heavy PEs (load > o * average) in a max-heap, light PEs (load < average) in a
//!   set. Take the heaviest donor; over every light PE q and migratable object c on the donor,
//!   pick the largest c with `load(q) + c < o * average`; move it; q leaves the light set once above
//!   the average; the donor goes back to heavy or light. Fails when a donor has no such move.
//! - `multirefine`: try o = `overload` (1.05 in RefineLB.C); if that fails, try o_max = 1.05 +
//!   0.01 * (floor((max/avg - 1.05) / 0.01) + 1); then binary-search o in steps of 0.01 between the
//!   two, restarting from the original mapping each trial. As in Refiner.C, the mapping kept is
//!   the last trial's.
//! - Complexity: O(moves x light PEs x objects per donor) per trial, x log2((max/avg - 1.05)/0.01)
//!   trials.
//! - Migrations: only objects leaving overloaded PEs (a few percent of n on lb_test).
//! - Parameters: `refine_overload` (1.05).

use std::collections::BinaryHeap;

use super::{Balancer, Key, LbInput};
use crate::error::TaskError;
use crate::gen::Params;

pub struct RefineLb {
    pub overload: f64,
}

impl RefineLb {
    pub fn read(p: &mut Params<'_>) -> Result<Self, TaskError> {
        Ok(RefineLb { overload: p.f64("refine_overload", 1.05, 1.0)? })
    }
}

/// One `Refiner::refine` at threshold `o`: returns whether every heavy PE was relieved.
fn refine(input: &LbInput<'_>, o: f64, avg: f64, to: &mut [u32]) -> bool {
    let np = input.n_pes();
    let mut load = vec![0.0; np];
    let mut objs: Vec<Vec<u32>> = vec![Vec::new(); np];
    for (i, &p) in to.iter().enumerate() {
        load[p as usize] += input.loads_ns[i];
        objs[p as usize].push(i as u32);
    }
    let limit = o * avg;
    let mut heavy: BinaryHeap<Key> = (0..np).filter(|&p| load[p] > limit).map(|p| Key(load[p], p as u32)).collect();
    let mut light: Vec<bool> = (0..np).map(|p| load[p] < avg).collect();
    while let Some(Key(_, d)) = heavy.pop() {
        let d = d as usize;
        let mut best: Option<(f64, usize, usize)> = None; // (load, index in donor list, receiver)
        for q in (0..np).filter(|&q| light[q]) {
            for (k, &c) in objs[d].iter().enumerate() {
                let w = input.loads_ns[c as usize];
                if input.migratable[c as usize] && w + load[q] < limit && best.is_none_or(|b| w > b.0) {
                    best = Some((w, k, q));
                }
            }
        }
        let Some((w, k, q)) = best else { return false };
        let c = objs[d].swap_remove(k);
        objs[q].push(c);
        to[c as usize] = q as u32;
        load[d] -= w;
        load[q] += w;
        if load[q] > avg {
            light[q] = false;
        }
        if load[d] > limit {
            heavy.push(Key(load[d], d as u32));
        } else if load[d] < avg {
            light[d] = true;
        }
    }
    true
}

impl Balancer for RefineLb {
    fn name(&self) -> String {
        "refine".into()
    }
    fn balance(&mut self, input: &LbInput<'_>) -> Result<Vec<u32>, TaskError> {
        let np = input.n_pes();
        let total: f64 = input.loads_ns.iter().sum();
        let avg = total / np as f64;
        if avg <= 0.0 {
            return Ok(input.mapping.to_vec());
        }
        let max = super::pe_loads(input.loads_ns, input.mapping, np).into_iter().fold(0.0, f64::max);
        let step = 0.01;
        let start = self.overload;
        let (mut lo, mut hi) = (0i64, (((max / avg - start) / step) as i64 + 1).max(0));
        let mut to = input.mapping.to_vec();
        if refine(input, lo as f64 * step + start, avg, &mut to) {
            return Ok(to);
        }
        to.copy_from_slice(input.mapping);
        if !refine(input, hi as f64 * step + start, avg, &mut to) {
            return Ok(to);
        }
        while hi - lo > 1 {
            let cur = (hi + lo) / 2;
            to.copy_from_slice(input.mapping);
            if refine(input, cur as f64 * step + start, avg, &mut to) {
                hi = cur;
            } else {
                lo = cur;
            }
        }
        Ok(to)
    }
}
