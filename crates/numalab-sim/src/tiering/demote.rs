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
    /// Per node, how far kswapd's own clock has got (s) while it is awake; `None` asleep.
    awake: Vec<Option<f64>>,
    /// The time of the last catch-up (s): a wake-up seen now happened after it.
    seen_s: f64,
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
            awake: vec![None; n],
            seen_s: 0.0,
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

    /// kswapd as the kernel runs it (`mm/vmscan.c: kswapd()`): a thread per node, woken by
    /// `wakeup_kswapd()` (the allocator's slow path, `wake_all_kswapds()`, or a refused
    /// promotion) and running `balance_pgdat()` beside the allocating threads until the node is
    /// balanced, free above `high` (memory-tiering mode: the `promo` watermark,
    /// `pgdat_balanced()`), then asleep until the next wake-up. The engine catches every awake
    /// kswapd up to `now_s` whenever an allocation could see its work (before each visit on the
    /// general path, and at epoch ends): from its wake-up it demotes at the copy rate of one
    /// thread, so between two catch-ups it has demoted what it could copy in that time.
    pub fn kswapd_until(&mut self, a: &mut Allocator, space: &mut Space, pages_node: &mut [u64], now_s: f64) {
        for n in 0..a.wake.len() {
            if std::mem::take(&mut a.wake[n]) && self.awake[n].is_none() && self.can_demote(n) {
                // Woken by an allocation since the last catch-up, which began then.
                self.awake[n] = Some(self.seen_s.min(now_s));
            }
            let Some(mut t) = self.awake[n] else { continue };
            let mark = if self.memory_tiering { promo_mark(a, n) } else { a.marks[n].high };
            let s_per_page = 1.0 / self.pages_per_s(n, self.tiers.preferred[n][0]);
            let mut stuck = false;
            while a.free[n] < mark && t < now_s {
                let Some(moved) = self.demote_one(a, space, pages_node, n) else {
                    stuck = true;
                    break;
                };
                self.pgdemote_kswapd += moved;
                t += moved as f64 * s_per_page;
            }
            // Balanced, or nothing left to demote: kswapd sleeps until woken again.
            self.awake[n] = (!stuck && a.free[n] < mark).then_some(t);
        }
        self.seen_s = self.seen_s.max(now_s);
    }

    /// Whether a catch-up has anything to do: a kswapd awake or just woken.
    pub fn kswapd_pending(&self, a: &Allocator) -> bool {
        self.awake.iter().any(Option::is_some) || a.wake.iter().any(|&w| w)
    }

    /// Direct reclaim for an allocation that found no node above `min`: demote up to
    /// `SWAP_CLUSTER_MAX` base pages (at least `npages`) from the nodes the allocation may
    /// use, in its walk's order. Returns the pages demoted and the time it took the thread.
    #[allow(clippy::too_many_arguments, reason = "the allocation's inputs and the state reclaim changes")]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Kernel;
    use crate::pages::{PageTable, Region};
    use numalab_model::MachineSpec;

    /// Node 0: one CPU, 64 MiB; node 1: a CPU-less CXL node of 256 MiB beside it.
    fn machine() -> Machine {
        let spec = r#"{"name": "t", "description": "DRAM + CXL",
          "nodes": [
            {"os_index": 0, "package": 0, "cpus": "0", "memory_bytes": 67108864, "bandwidth_gbps": 20},
            {"os_index": 1, "package": 0, "cpus": "", "memory_bytes": 268435456, "bandwidth_gbps": 10, "subtype": "CXL-DRAM"}],
          "cores": [{"cpus": "0"}],
          "distances": [[10,14],[14,10]],
          "latency": {"local_ns": 100, "matrix_ns": [[100,250],[250,250]]},
          "bandwidth": {"node_gbps": 20},
          "links": [{"nodes": [0,1], "gbps": 16}],
          "core": {"frequency_ghz": 2.0, "mlp": 10}}"#;
        MachineSpec::from_json(spec).unwrap().resolve().unwrap()
    }

    #[test]
    fn kswapd_demotes_beside_the_thread_at_its_copy_rate_until_high_then_sleeps() {
        let m = machine();
        let mut a = Allocator::new(&m, Kernel::V6_13);
        let w = a.marks[0];
        // Node 0 filled to one page below `low`, all of it one region's pages.
        let used = a.managed[0] - (w.low - 1);
        let mut region = Region {
            name: "a".into(),
            bytes: used * 4096,
            planes: 1,
            shift: 12,
            vm_start: 0x7f00_0000_0000,
            node: PageTable::new(used as usize),
            policy: None,
            marked: Vec::new(),
            nr_marked: 0,
            cpupid: Vec::new(),
            readaround: 0,
            shared: false,
            mappers: Vec::new(),
            part: (0, 1),
        };
        for u in 0..used as usize {
            region.node[u] = 0;
        }
        a.free[0] -= used;
        let mut pages_node = vec![used, 0];
        let b = Balancing { demotion_enabled: true, ..Balancing::default() };
        let costs = Costs::default();
        let mut d = Demotion::new(&m, &b, &costs, &[std::slice::from_ref(&region)]);
        // One thread copies 11 GB/s x 20 / 14 to the CXL node: 4 KiB every `s` seconds.
        let s = 4096.0 / (costs.migrate_copy_gbps * 20.0 / 14.0 * 1e9);
        let mut space: Space = vec![std::slice::from_mut(&mut region)];

        // An allocation at t = 0 found node 0 below low and woke its kswapd.
        a.wake[0] = true;
        d.kswapd_until(&mut a, &mut space, &mut pages_node, 0.0);
        assert_eq!(d.pgdemote_kswapd, 0, "no time has passed");
        assert!(d.kswapd_pending(&a), "awake: node 0 is below high");
        // 10.5 copies' time later kswapd has begun 11 copies, the thread sees their room.
        d.kswapd_until(&mut a, &mut space, &mut pages_node, 10.5 * s);
        assert_eq!(d.pgdemote_kswapd, 11);
        assert_eq!(a.free[0], w.low - 1 + 11);
        assert_eq!(pages_node, vec![used - 11, 11]);
        // Given time, it stops where the node is balanced (free at `high`) and sleeps.
        d.kswapd_until(&mut a, &mut space, &mut pages_node, 1.0);
        assert_eq!(a.free[0], w.high);
        assert_eq!(d.pgdemote_kswapd, w.high - (w.low - 1));
        assert!(!d.kswapd_pending(&a), "balanced: asleep until the next wake-up");
        // Asleep, it demotes nothing more, however long.
        d.kswapd_until(&mut a, &mut space, &mut pages_node, 2.0);
        assert_eq!(d.pgdemote_kswapd, w.high - (w.low - 1));
    }
}
