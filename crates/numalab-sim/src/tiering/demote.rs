//! Reclaim-driven demotion (docs/tiering.md §4): `mm/vmscan.c` (v6.13) `can_demote()`,
//! `shrink_folio_list()` -> `demote_folio_list()` with `alloc_demote_folio()`, kswapd's
//! `balance_pgdat()` / `pgdat_balanced()`, and direct reclaim (`try_to_free_pages()`).
//! Anonymous memory with no swap is reclaimable only by demotion
//! (`can_reclaim_anon_pages()` returns true when `can_demote()`), so without
//! `demotion_enabled` nothing is reclaimed, as before.

use numalab_model::{Machine, PolicyMode};

use super::Tiers;
use crate::alloc::{Allocator, Walk};
use crate::input::{Balancing, Costs};
use crate::mempolicy::Resolved;
use crate::pages::{Region, CPUPID_UNSET, NONE};

/// `SWAP_CLUSTER_MAX`: what one direct reclaim pass tries to free (`sc.nr_to_reclaim`).
const SWAP_CLUSTER_MAX: u64 = 32;

/// Where reclaim's clock hand is on one node: process, region (in address order), entry.
#[derive(Clone, Copy, Default)]
struct Hand {
    proc: usize,
    region: usize,
    unit: u64,
}

/// Demotion state of a run.
pub struct Demotion {
    pub tiers: Tiers,
    enabled: bool,
    memory_tiering: bool,
    dist: Vec<Vec<u32>>,
    copy_gbps: f64,
    hands: Vec<Hand>,
    /// Next preferred target to use, per node (`next_demotion_node()`).
    rr: Vec<usize>,
    /// `__GFP_THISNODE` masks, one per node.
    only: Vec<Vec<bool>>,
    /// Each process's regions in address order.
    order: Vec<Vec<usize>>,
    pub pgdemote_kswapd: u64,
    pub pgdemote_direct: u64,
}

/// One process's regions, as reclaim walks them.
pub type Space<'a> = Vec<&'a mut [Region]>;

impl Demotion {
    pub fn new(m: &Machine, b: &Balancing, costs: &Costs, regions: &[&[Region]]) -> Self {
        let n = m.nodes.len();
        let order = regions
            .iter()
            .map(|rs| {
                let mut o: Vec<usize> = (0..rs.len()).collect();
                o.sort_by_key(|&i| rs[i].vm_start);
                o
            })
            .collect();
        Demotion {
            tiers: Tiers::new(m),
            enabled: b.demotion_enabled,
            memory_tiering: b.memory_tiering,
            dist: m.distances.clone(),
            copy_gbps: costs.migrate_copy_gbps,
            hands: vec![Hand::default(); n],
            rr: vec![0; n],
            only: (0..n).map(|x| (0..n).map(|y| x == y).collect()).collect(),
            order,
            pgdemote_kswapd: 0,
            pgdemote_direct: 0,
        }
    }

    /// `can_demote(nid)`: `demotion_enabled` and a demotion target.
    pub fn can_demote(&self, n: usize) -> bool {
        self.enabled && self.tiers.can_demote(n)
    }

    /// Copy rate of one thread from `from` to `to`, in base pages per second.
    fn pages_per_s(&self, from: usize, to: usize) -> f64 {
        let d = self.dist[from][to].max(10) as f64;
        self.copy_gbps * 20.0 / d * 1e9 / 4096.0
    }

    /// kswapd of every node woken since the last epoch end (`wakeup_kswapd()` from the
    /// allocator's slow path, or from a refused promotion): demote until the node is balanced,
    /// free above `high` (memory-tiering mode: the `promo` watermark, `pgdat_balanced()`), at
    /// most what one thread copies in `dt_s`.
    pub fn kswapd(&mut self, a: &mut Allocator, space: &mut Space, pages_node: &mut [u64], dt_s: f64) {
        for n in 0..a.wake.len() {
            if !std::mem::take(&mut a.wake[n]) || !self.can_demote(n) {
                continue;
            }
            let mark = if self.memory_tiering { promo_mark(a, n) } else { a.marks[n].high };
            let to = self.tiers.preferred[n][0];
            let mut budget = (dt_s * self.pages_per_s(n, to)).ceil() as u64;
            while a.free[n] < mark && budget > 0 {
                let Some(moved) = self.demote_one(a, space, pages_node, n) else { break };
                self.pgdemote_kswapd += moved;
                budget = budget.saturating_sub(moved);
            }
        }
    }

    /// Direct reclaim for an allocation that found no node above `min`: demote up to
    /// `SWAP_CLUSTER_MAX` base pages (at least `npages`) from the nodes the allocation may
    /// use, in its walk's order. Returns the pages demoted and the time it took the thread.
    #[allow(clippy::too_many_arguments)]
    pub fn direct_reclaim(
        &mut self,
        a: &mut Allocator,
        space: &mut Space,
        pages_node: &mut [u64],
        policy: &Resolved,
        ilx: u64,
        cpu_node: usize,
        npages: u64,
    ) -> (u64, f64) {
        let start = match policy.mode {
            PolicyMode::Preferred => policy.nodes[0],
            PolicyMode::Interleave | PolicyMode::WeightedInterleave => policy.interleave_node(ilx),
            _ => cpu_node,
        };
        let nodes: Vec<usize> =
            a.zonelists[start].iter().copied().filter(|&n| policy.mode != PolicyMode::Bind || policy.mask[n]).collect();
        let goal = SWAP_CLUSTER_MAX.max(npages);
        let (mut done, mut time_s) = (0u64, 0.0);
        for n in nodes {
            while done < goal && self.can_demote(n) {
                let to = self.tiers.preferred[n][0];
                let Some(moved) = self.demote_one(a, space, pages_node, n) else { break };
                done += moved;
                time_s += moved as f64 / self.pages_per_s(n, to);
            }
        }
        self.pgdemote_direct += done;
        (done, time_s)
    }

    /// `demote_folio_list()` for the next page of node `n` under the clock hand: allocate on
    /// the next demotion target (`__GFP_THISNODE`, no direct reclaim), else anywhere in the
    /// lower tiers (`alloc_demote_folio()`); move the page. Returns the base pages moved.
    fn demote_one(&mut self, a: &mut Allocator, space: &mut Space, pages_node: &mut [u64], n: usize) -> Option<u64> {
        let (p, r, u) = self.next_on(space, n)?;
        let region = &mut space[p][r];
        let npages = region.base_pages();
        let targets = &self.tiers.preferred[n];
        let target = targets[self.rr[n] % targets.len()];
        self.rr[n] = self.rr[n].wrapping_add(1);
        // kswapd runs on the node it reclaims (the nearest CPUs for a CPU-less node): numastat
        // counts the demotion target's allocation as such.
        let got = a
            .alloc(target, Some(&self.only[target]), n, npages, Walk::Normal, None)
            .or_else(|| a.alloc(target, Some(&self.tiers.allowed[n]), n, npages, Walk::Normal, None))?;
        a.release(n, npages);
        pages_node[n] -= npages;
        pages_node[got] += npages;
        region.node[u as usize] = got as u8;
        if !region.marked.is_empty() {
            // The migrated PTE is made from vma->vm_page_prot: any NUMA hinting mark is gone.
            region.set_marked(u, false);
            // folio_migrate_flags(): in memory-tiering mode last_cpupid holds an access time on
            // slow nodes, reset when a page changes between top and lower tiers.
            if self.memory_tiering && self.tiers.toptier[n] != self.tiers.toptier[got] {
                region.cpupid[u as usize] = CPUPID_UNSET;
            }
        }
        self.hands[n].unit = u + 1;
        Some(npages)
    }

    /// The next entry on node `n` from its hand, once around the address space at most.
    fn next_on(&mut self, space: &Space, n: usize) -> Option<(usize, usize, u64)> {
        let nprocs = space.len();
        if nprocs == 0 {
            return None;
        }
        let h = &mut self.hands[n];
        let total_regions: usize = space.iter().map(|s| s.len()).sum();
        // Each region is visited at most twice (start and, after wrapping, up to the hand).
        for _ in 0..=2 * total_regions + 1 {
            let proc = h.proc % nprocs;
            let order = &self.order[proc];
            if h.region >= order.len() {
                h.proc = (proc + 1) % nprocs;
                h.region = 0;
                h.unit = 0;
                continue;
            }
            let reg = &space[proc][order[h.region]];
            let units = reg.units();
            let mut u = h.unit;
            while u < units {
                let x = reg.node[u as usize];
                if x != NONE && x as usize == n {
                    h.unit = u;
                    return Some((proc, order[h.region], u));
                }
                u += 1;
            }
            h.region += 1;
            h.unit = 0;
        }
        None
    }
}

/// The `promo` watermark (6.x, `__setup_per_zone_wmarks()`): `high` plus one more step of the
/// watermark gap (`WMARK_PROMO`).
pub fn promo_mark(a: &Allocator, n: usize) -> u64 {
    let w = a.marks[n];
    w.high + (w.high - w.low)
}
