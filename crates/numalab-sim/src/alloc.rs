//! The page allocator as the kernel runs it for one zone per node
//! (docs/allocation.md §5-§8): fallback lists (zonelists) built the
//! kernel's way, watermarks, the allocation walk of each kernel profile, and `numastat`.

use serde::Serialize;

use numalab_model::Machine;

use crate::input::Kernel;
use crate::profile::{AllocRules, FastPath, WatermarkGaps, ZonelistTieBreak};

/// `/sys/devices/system/node/nodeN/numastat`, counted per allocation call (a THP counts 1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NumaStat {
    pub numa_hit: u64,
    pub numa_miss: u64,
    pub numa_foreign: u64,
    pub interleave_hit: u64,
    pub local_node: u64,
    pub other_node: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

/// How hard an allocation may try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// The normal walk of the profile (fast path at `low`, slow path at `min`).
    Normal,
    /// `MPOL_PREFERRED_MANY` pass 1: the mask only, no direct reclaim: `low` only.
    NoReclaim,
}

pub struct Allocator {
    rules: &'static AllocRules,
    /// Free base pages per node (logical index).
    pub free: Vec<u64>,
    pub managed: Vec<u64>,
    pub marks: Vec<Watermarks>,
    /// Fallback order per node (logical indexes), memoryless nodes excluded.
    pub zonelists: Vec<Vec<usize>>,
    pub numastat: Vec<NumaStat>,
    /// kswapd woken per node since reclaim last ran (`wakeup_kswapd()` from the slow path,
    /// docs/tiering.md §4); only reclaim by demotion acts on it.
    pub wake: Vec<bool>,
}

const NODES_SHIFT: u64 = 10; // CONFIG_NODES_SHIFT of x86_64 distribution kernels (MAX_NUMNODES = 1024)

impl Allocator {
    pub fn new(m: &Machine, kernel: Kernel) -> Self {
        let managed: Vec<u64> = m.nodes.iter().map(|n| n.local_memory_bytes / 4096).collect();
        let marks = watermarks(&managed, kernel);
        Allocator {
            rules: &kernel.profile().alloc,
            free: managed.clone(),
            managed,
            marks,
            zonelists: build_zonelists(m, kernel),
            numastat: vec![NumaStat::default(); m.nodes.len()],
            wake: vec![false; m.nodes.len()],
        }
    }

    /// Allocate `npages` base pages (one call) for a fault whose policy resolved to start at
    /// `pref` (logical node), restricted to `mask` (by logical index) if given, by a CPU of
    /// node `cpu_node`. Returns the node that supplied the pages, or `None` if none can.
    /// `interleave` is the node interleave chose, for `interleave_hit`.
    pub fn alloc(
        &mut self,
        pref: usize,
        mask: Option<&[bool]>,
        cpu_node: usize,
        npages: u64,
        walk: Walk,
        interleave: Option<usize>,
    ) -> Option<usize> {
        let allowed = |n: usize| mask.is_none_or(|m| m[n]);
        let list = &self.zonelists[pref];
        // The first allowed node of the walk is the "preferred zone" of zone_statistics.
        let preferred = *list.iter().find(|&&n| allowed(n))?;
        let above = |free: &[u64], n: usize, mark: u64| free[n] >= npages && free[n] - npages >= mark;
        let fast = match (self.rules.fast_path, walk) {
            // 3.13's fair-zone fast path uses only the preferred node.
            (FastPath::PreferredZoneOnly, Walk::Normal) => {
                Some(preferred).filter(|&n| above(&self.free, n, self.marks[n].low))
            }
            (FastPath::PreferredZoneOnly, Walk::NoReclaim) | (FastPath::Zonelist, _) => {
                list.iter().copied().find(|&n| allowed(n) && above(&self.free, n, self.marks[n].low))
            }
        };
        let chosen = match fast {
            Some(n) => n,
            None => {
                // The slow path (`__alloc_pages_slowpath()`) first wakes kswapd of every allowed
                // node of the list (`wake_all_kswapds()`); pass 1 of preferred-many keeps
                // __GFP_KSWAPD_RECLAIM too. Then, except for that pass, it walks again at min.
                for &n in list.iter().filter(|&&n| allowed(n)) {
                    self.wake[n] = true;
                }
                if walk == Walk::NoReclaim {
                    return None;
                }
                list.iter().copied().find(|&n| allowed(n) && above(&self.free, n, self.marks[n].min))?
            }
        };
        self.free[chosen] -= npages;
        self.account(preferred, chosen, cpu_node, interleave);
        Some(chosen)
    }

    /// `zone_statistics(preferred, supplier)` with the allocating CPU's node.
    fn account(&mut self, preferred: usize, z: usize, cpu_node: usize, interleave: Option<usize>) {
        if z == preferred {
            self.numastat[z].numa_hit += 1;
        } else {
            self.numastat[z].numa_miss += 1;
            self.numastat[preferred].numa_foreign += 1;
        }
        if z == cpu_node {
            self.numastat[z].local_node += 1;
        } else {
            self.numastat[z].other_node += 1;
        }
        if interleave == Some(z) {
            self.numastat[z].interleave_hit += 1;
        }
    }

    /// Allocate exactly on `node` (`__GFP_THISNODE`, as page migration does) if it stays above
    /// `high + npages`; counts one allocation call.
    pub fn alloc_on(&mut self, node: usize, cpu_node: usize, npages: u64) -> bool {
        if self.free[node] < npages || self.free[node] - npages < self.marks[node].high {
            return false;
        }
        self.free[node] -= npages;
        self.account(node, node, cpu_node, None);
        true
    }

    pub fn release(&mut self, node: usize, npages: u64) {
        self.free[node] += npages;
    }
}

/// `min_free_kbytes = sqrt(16 x lowmem_kB)` clamped, split by managed pages; `low`/`high` per
/// profile (`crate::profile::WatermarkGaps`).
pub fn watermarks(managed: &[u64], kernel: Kernel) -> Vec<Watermarks> {
    let rules = &kernel.profile().alloc;
    let total_kb: u64 = managed.iter().sum::<u64>() * 4;
    let min_free_kb = ((16.0 * total_kb as f64).sqrt().floor() as u64).clamp(128, rules.min_free_kbytes_max);
    let total_pages: u64 = managed.iter().sum::<u64>().max(1);
    managed
        .iter()
        .map(|&pages| {
            let min = (min_free_kb / 4) * pages / total_pages;
            match rules.watermark_gaps {
                WatermarkGaps::MinQuarters => Watermarks { min, low: min + min / 4, high: min + min / 2 },
                WatermarkGaps::ScaleFactor { per_10k } => {
                    let delta = (min / 4).max(pages * per_10k / 10_000);
                    Watermarks { min, low: min + delta, high: min + 2 * delta }
                }
            }
        })
        .collect()
}

/// Fallback order of every node, built in node order 0..N-1 as the kernel does at boot
/// (`build_zonelists` / `find_next_best_node`): the node itself, then by
/// `(distance + [n < L] + [n has CPUs]) * M + load[n]`, where `load[]` is a boot-global
/// tie-breaker raised at each new distance tier (`crate::profile::ZonelistTieBreak`).
pub fn build_zonelists(m: &Machine, kernel: Kernel) -> Vec<Vec<usize>> {
    let tie_break = kernel.profile().alloc.zonelist_tie_break;
    let n = m.nodes.len();
    let has_mem: Vec<bool> = m.nodes.iter().map(|x| x.local_memory_bytes > 0).collect();
    let has_cpus: Vec<bool> = m.nodes.iter().map(|x| !x.cpuset.is_empty()).collect();
    let big_m = match tie_break {
        ZonelistTieBreak::IncrementLoad => 1u64 << NODES_SHIFT,
        ZonelistTieBreak::DescendingLoad => (1u64 << NODES_SHIFT) * n as u64,
    };
    let mut load = vec![0u64; n];
    let mut lists = Vec::with_capacity(n);
    for local in 0..n {
        let mut used = vec![false; n];
        let mut order = Vec::new();
        let mut prev = local;
        let mut descending = n as u64;
        loop {
            let next = if !used[local] && has_mem[local] {
                Some(local)
            } else {
                (0..n).filter(|&c| !used[c] && has_mem[c]).min_by_key(|&c| {
                    let d = m.distances[local][c] as u64 + u64::from(c < local) + u64::from(has_cpus[c]);
                    (d * big_m + load[c], c)
                })
            };
            used[local] = true;
            let Some(node) = next else { break };
            used[node] = true;
            if m.distances[local][node] != m.distances[local][prev] {
                match tie_break {
                    ZonelistTieBreak::IncrementLoad => load[node] += 1,
                    ZonelistTieBreak::DescendingLoad => load[node] = descending,
                }
            }
            descending = descending.saturating_sub(1);
            order.push(node);
            prev = node;
        }
        lists.push(order);
    }
    lists
}
