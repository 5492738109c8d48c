//! Caches (docs/contention.md §4.1): how much of an access's re-use misses to memory, from the
//! capacity the thread actually gets of the caches it shares.
//!
//! An access states its DRAM traffic when nothing is re-used from cache (`rd`, `wr`), its
//! traffic when the re-use hits (`cached.rd`, `cached.wr`, usually the compulsory misses), and
//! its **reuse window**: the bytes touched between two uses of the same line (its LRU stack
//! distance), per thread or, with `shared`, by all the process's threads under one cache
//! together. Working-set model (Denning 1968): the re-use hits when the window fits in the
//! capacity available to it; past that, the fraction of the window resident is `C / W`, so
//!
//! `traffic = cached + (full - cached) x miss`, `miss = 0` if `W <= C`, else `1 - C / W`.
//!
//! A thread's capacity is its share of its last-level cache (the instance's size divided by the
//! run's threads on its PUs: "effective capacity per sharer") or of its L2, whichever is larger;
//! a shared window gets the whole last-level cache. Machines without cache data get one
//! last-level cache per node of 2 MiB per core [est: the LLC per core of the Xeon and EPYC
//! parts of the presets is 1.25-4 MiB].

use numalab_model::Machine;

use crate::input::{AccessSpec, Cached};

/// Last-level cache per core where the machine describes no caches [est, see above].
const FALLBACK_LLC_PER_CORE: f64 = 2.0 * 1024.0 * 1024.0;

/// Fraction of a re-use window of `window` bytes that misses in `capacity` bytes.
pub fn miss_ratio(window: f64, capacity: f64) -> f64 {
    if window <= capacity || window <= 0.0 {
        0.0
    } else {
        1.0 - capacity.max(0.0) / window
    }
}

/// Per PU, its last-level cache instance and L2 instance (if the machine has a separate L2).
pub struct CacheMap {
    llc_of: Vec<usize>,
    llc_bytes: Vec<f64>,
    l2_of: Vec<Option<usize>>,
    l2_bytes: Vec<f64>,
}

/// Threads of the run on the PUs of each cache instance.
pub struct Sharers {
    pub llc: Vec<u32>,
    pub l2: Vec<u32>,
}

impl CacheMap {
    pub fn new(m: &Machine) -> Self {
        let top = m.caches.iter().map(|c| c.level).max();
        let pu_os: Vec<u32> = m.pus.iter().map(|p| p.os_index).collect();
        let instances = |level: u8| -> (Vec<Option<usize>>, Vec<f64>) {
            let list: Vec<_> = m.caches.iter().filter(|c| c.level == level).collect();
            let of = pu_os.iter().map(|&os| list.iter().position(|c| c.cpuset.contains(os))).collect();
            (of, list.iter().map(|c| c.size_bytes as f64).collect())
        };
        match top {
            Some(top) => {
                let (llc, llc_bytes) = instances(top);
                let (l2_of, l2_bytes) = if top > 2 { instances(2) } else { (vec![None; pu_os.len()], Vec::new()) };
                // A PU no last-level instance lists gets a zero-size cache of its own.
                let mut llc_bytes = llc_bytes;
                let llc_of = llc
                    .into_iter()
                    .map(|x| {
                        x.unwrap_or_else(|| {
                            llc_bytes.push(0.0);
                            llc_bytes.len() - 1
                        })
                    })
                    .collect();
                CacheMap { llc_of, llc_bytes, l2_of, l2_bytes }
            }
            None => {
                let llc_of = m.pus.iter().map(|p| m.node_logical(p.node).unwrap_or(0)).collect();
                let llc_bytes = m
                    .nodes
                    .iter()
                    .map(|n| m.cores.iter().filter(|c| c.node == n.os_index).count() as f64 * FALLBACK_LLC_PER_CORE)
                    .collect();
                CacheMap { llc_of, llc_bytes, l2_of: vec![None; m.pus.len()], l2_bytes: Vec::new() }
            }
        }
    }

    /// How many of the given threads' PUs (`None`: not counted) sit under each cache instance.
    pub fn sharers(&self, pus: impl Iterator<Item = Option<usize>>) -> Sharers {
        let mut s = Sharers { llc: vec![0; self.llc_bytes.len()], l2: vec![0; self.l2_bytes.len()] };
        for pu in pus.flatten() {
            s.llc[self.llc_of[pu]] += 1;
            if let Some(i) = self.l2_of[pu] {
                s.l2[i] += 1;
            }
        }
        s
    }

    /// Capacity for a per-thread window of a thread on `pu`, and for a window shared by the
    /// process's threads under the same last-level cache.
    pub fn capacity(&self, pu: usize, s: &Sharers) -> (f64, f64) {
        let llc = self.llc_bytes[self.llc_of[pu]];
        let own = llc / s.llc[self.llc_of[pu]].max(1) as f64;
        let l2 = self.l2_of[pu].map_or(0.0, |i| self.l2_bytes[i] / s.l2[i].max(1) as f64);
        (own.max(l2), llc)
    }
}

/// `a` with the DRAM traffic its re-use leaves at these capacities (per-thread, shared).
pub fn effective(a: &AccessSpec, capacity: (f64, f64)) -> AccessSpec {
    let Some(c) = &a.cached else { return a.clone() };
    let miss = miss_ratio(c.window_bytes, if c.shared { capacity.1 } else { capacity.0 });
    let mix = |full: f64, hit: f64| hit + (full - hit) * miss;
    AccessSpec { rd: mix(a.rd, c.rd), wr: mix(a.wr, c.wr), cached: None::<Cached>, ..a.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_that_fits_hits_and_a_larger_one_misses_in_proportion() {
        assert_eq!(miss_ratio(1e6, 2e6), 0.0);
        assert_eq!(miss_ratio(2e6, 2e6), 0.0);
        assert!((miss_ratio(8e6, 2e6) - 0.75).abs() < 1e-12);
        assert_eq!(miss_ratio(0.0, 0.0), 0.0);
    }
}
