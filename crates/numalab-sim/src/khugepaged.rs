//! Transparent huge pages after the first fault (docs/allocation.md §3.2): where a THP fault
//! may not take a remote huge page and falls back to 4 KiB pages, and khugepaged, which later
//! collapses such ranges into huge pages at its default rate.
//!
//! - **Fault** (`mm/mempolicy.c: alloc_pages_mpol()`, v6.13; `alloc_pages_vma()` since 4.20):
//!   for a PMD-order allocation under a non-interleave policy that allows the faulting node
//!   (or the preferred node), the kernel first tries that node alone (`__GFP_THISNODE |
//!   __GFP_NORETRY`); if it fails and the fault may not reclaim directly, it returns no page and
//!   the fault falls back to base pages (`thp_fault_fallback`). With the default
//!   `transparent_hugepage/defrag = madvise`, only regions marked `MADV_HUGEPAGE` reclaim
//!   directly (`mm/huge_memory.c: vma_thp_gfp_mask()`); they go on to the normal walk and may
//!   get a remote huge page. v3.13 (`alloc_pages_vma()`) walks the zonelist for every huge page.
//! - **khugepaged** (`mm/khugepaged.c`): every `scan_sleep_millisecs` (10,000) it scans
//!   `pages_to_scan` (4,096) base pages' worth of PMD ranges (`khugepaged_do_scan()`, each
//!   range counts `HPAGE_PMD_NR` in `khugepaged_scan_mm_slot()`), i.e. 8 ranges of 2 MiB per
//!   wake-up, resuming where it stopped. A range mapped by base pages with at most
//!   `max_ptes_none` (511) empty entries (`hpage_collapse_scan_pmd()`) is collapsed into a huge
//!   page allocated on the node holding most of its pages (`hpage_collapse_find_target_node()`,
//!   `__GFP_THISNODE`): `thp_collapse_alloc`, or `thp_collapse_alloc_failed` when that node has
//!   no room. Its work runs in a kernel thread and is not charged to the workload.
//!
//! The engine keeps a THP region's entries at 2 MiB; an entry that fell back is marked here as
//! mapped by 512 base pages, all on the node the fault's walk gave (one allocation call). Such an
//! entry otherwise behaves as a huge page (NUMA balancing moves it as one).

use serde::Serialize;

use crate::alloc::{Allocator, Walk};
use crate::input::Kernel;
use crate::mempolicy::Resolved;
use crate::pages::Region;
use crate::profile::ThpFault;
use numalab_model::PolicyMode;

/// `/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan` (HPAGE_PMD_NR * 8).
pub const PAGES_TO_SCAN: u64 = 4096;
/// `.../khugepaged/scan_sleep_millisecs`.
pub const SCAN_SLEEP_S: f64 = 10.0;
/// `.../khugepaged/max_ptes_none` (HPAGE_PMD_NR - 1): a range needs one mapped base page; the
/// engine's fallen-back ranges have all of theirs.
pub const MAX_PTES_NONE: u64 = 511;
const HPAGE_PMD_NR: u64 = 512;

/// What the THP code did in one region (for `numalab sim --explain-thp`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ThpRegionOut {
    pub pid: u32,
    pub region: String,
    /// Huge pages placed by first-touch faults, per node (logical index: the output's node order).
    pub fault_alloc: Vec<u64>,
    /// 2 MiB ranges whose fault fell back to base pages, per node the base pages went to.
    pub fault_fallback: Vec<u64>,
    /// Ranges khugepaged collapsed, per node of the new huge page.
    pub collapse_alloc: Vec<u64>,
    pub collapse_alloc_failed: u64,
}

/// THP fault rules and khugepaged for one run.
pub struct Thp {
    fault_rule: ThpFault,
    /// `MADV_HUGEPAGE` per process and region (the descriptor's mark): direct reclaim allowed at fault time.
    madvised: Vec<Vec<bool>>,
    /// Next wake-up of khugepaged (after the first THP-eligible fault registers the mm).
    next_scan_s: Option<f64>,
    /// Where the scan resumes: (process, region, entry).
    cursor: (usize, usize, u64),
    /// Per process and region, one bit per 2 MiB entry mapped by 512 base pages (its fault fell
    /// back); empty until the region's first fallback.
    small: Vec<Vec<Vec<u64>>>,
    pub regions: Vec<Vec<ThpRegionOut>>,
    pub fault_alloc: u64,
    pub fault_fallback: u64,
    pub collapse_alloc: u64,
    pub collapse_alloc_failed: u64,
    pub full_scans: u64,
}

/// How a THP fault was served.
pub enum Fault {
    Huge(usize),
    /// 512 base pages, on this node.
    Fallback(usize),
}

impl Thp {
    pub fn new(kernel: Kernel, madvised: &[&[bool]], regions: &[Vec<&Region>], nodes: usize) -> Self {
        let out = regions
            .iter()
            .enumerate()
            .map(|(pid, rs)| {
                rs.iter()
                    .map(|r| ThpRegionOut {
                        pid: pid as u32 + 1,
                        region: r.name.clone(),
                        fault_alloc: vec![0; nodes],
                        fault_fallback: vec![0; nodes],
                        collapse_alloc: vec![0; nodes],
                        collapse_alloc_failed: 0,
                    })
                    .collect()
            })
            .collect();
        Thp {
            fault_rule: kernel.profile().thp.fault,
            madvised: madvised.iter().map(|m| m.to_vec()).collect(),
            next_scan_s: None,
            cursor: (0, 0, 0),
            small: regions.iter().map(|rs| vec![Vec::new(); rs.len()]).collect(),
            regions: out,
            fault_alloc: 0,
            fault_fallback: 0,
            collapse_alloc: 0,
            collapse_alloc_failed: 0,
            full_scans: 0,
        }
    }

    /// Whether entry `u` of region `ri` of process `pid` is mapped by base pages.
    pub fn is_small(&self, pid: usize, ri: usize, u: u64) -> bool {
        self.small[pid][ri].get((u >> 6) as usize).is_some_and(|w| w & (1 << (u & 63)) != 0)
    }

    fn set_small(&mut self, pid: usize, ri: usize, u: u64, units: u64, on: bool) {
        let bits = &mut self.small[pid][ri];
        if bits.is_empty() {
            *bits = vec![0; units.div_ceil(64) as usize];
        }
        let (w, b) = ((u >> 6) as usize, 1u64 << (u & 63));
        if on {
            bits[w] |= b;
        } else {
            bits[w] &= !b;
        }
    }

    /// A first write to the unplaced 2 MiB entry `u` (of `units`, interleave index `ilx`) of
    /// region `ri` of process `pid` at time `now`. `None`: no memory under the policy.
    pub fn fault(
        &mut self,
        a: &mut Allocator,
        policy: &Resolved,
        (pid, ri): (usize, usize),
        (u, units, ilx): (u64, u64, u64),
        cpu_node: usize,
        now: f64,
    ) -> Option<Fault> {
        self.next_scan_s.get_or_insert(now + SCAN_SLEEP_S);
        let madvised = self.madvised.get(pid).and_then(|m| m.get(ri)).copied().unwrap_or(false);
        let this_node_first = match self.fault_rule {
            ThpFault::Zonelist => false,
            ThpFault::ThisNodeUnlessMadvised => !madvised,
        };
        if this_node_first {
            if let Some(nid) = this_node(policy, cpu_node) {
                // __GFP_THISNODE | __GFP_NORETRY without direct reclaim: the node's free pages
                // above its low watermark, or nothing.
                let mut mask = vec![false; a.free.len()];
                mask[nid] = true;
                if let Some(n) = a.alloc(nid, Some(&mask), cpu_node, HPAGE_PMD_NR, Walk::NoReclaim, None) {
                    self.fault_alloc += 1;
                    self.regions[pid][ri].fault_alloc[n] += 1;
                    return Some(Fault::Huge(n));
                }
                let n = policy.allocate(a, ilx, cpu_node, HPAGE_PMD_NR)?;
                self.set_small(pid, ri, u, units, true);
                self.fault_fallback += 1;
                self.regions[pid][ri].fault_fallback[n] += 1;
                return Some(Fault::Fallback(n));
            }
        }
        let n = policy.allocate(a, ilx, cpu_node, HPAGE_PMD_NR)?;
        self.fault_alloc += 1;
        self.regions[pid][ri].fault_alloc[n] += 1;
        Some(Fault::Huge(n))
    }

    /// khugepaged's wake-ups up to `now`: each scans 8 PMD ranges of the processes' THP regions
    /// in address order and collapses the ranges mapped by base pages into a huge page on their
    /// node (the new page is allocated before the base pages are freed: net zero on that node).
    pub fn tick(&mut self, now: f64, a: &mut Allocator, procs: &[&[Region]]) {
        while let Some(at) = self.next_scan_s.filter(|&t| t <= now) {
            self.next_scan_s = Some(at + SCAN_SLEEP_S);
            self.scan(a, procs);
        }
    }

    /// Whether khugepaged wakes up by `now`.
    pub fn due(&self, now: f64) -> bool {
        self.next_scan_s.is_some_and(|t| t <= now)
    }

    fn scan(&mut self, a: &mut Allocator, procs: &[&[Region]]) {
        if !procs.iter().flat_map(|rs| rs.iter()).any(|r| r.shift == 21) {
            return;
        }
        // Each process's VMAs in address order (the engine lays regions out top-down).
        let orders: Vec<Vec<usize>> = procs
            .iter()
            .map(|rs| {
                let mut o: Vec<usize> = (0..rs.len()).collect();
                o.sort_by_key(|&i| rs[i].vm_start);
                o
            })
            .collect();
        let mut budget = PAGES_TO_SCAN;
        while budget >= HPAGE_PMD_NR {
            let (p, k, u) = self.cursor;
            if p >= procs.len() {
                self.cursor = (0, 0, 0);
                self.full_scans += 1;
                continue;
            }
            if k >= procs[p].len() {
                self.cursor = (p + 1, 0, 0);
                continue;
            }
            let ri = orders[p][k];
            let r = &procs[p][ri];
            if r.shift != 21 || u >= r.units() {
                self.cursor = (p, k + 1, 0);
                continue;
            }
            budget -= HPAGE_PMD_NR;
            self.cursor = (p, k, u + 1);
            // Only ranges mapped by base pages collapse; a fallen-back range has all 512 mapped,
            // so none of its entries is empty (0 <= MAX_PTES_NONE). Entries not yet written
            // have no page table and are skipped (SCAN_PMD_NULL).
            if !self.is_small(p, ri, u) {
                continue;
            }
            let (from, units) = (r.node[u as usize] as usize, r.units());
            let mut mask = vec![false; a.free.len()];
            mask[from] = true;
            if a.alloc(from, Some(&mask), from, HPAGE_PMD_NR, Walk::Normal, None).is_some() {
                a.release(from, HPAGE_PMD_NR);
                self.set_small(p, ri, u, units, false);
                self.collapse_alloc += 1;
                self.regions[p][ri].collapse_alloc[from] += 1;
            } else {
                self.collapse_alloc_failed += 1;
                self.regions[p][ri].collapse_alloc_failed += 1;
            }
        }
    }

    /// Per-region reports of the regions with any THP activity.
    pub fn report(&self) -> Vec<ThpRegionOut> {
        self.regions
            .iter()
            .flatten()
            .filter(|r| r.fault_alloc.iter().chain(&r.fault_fallback).chain(&r.collapse_alloc).any(|&x| x > 0))
            .cloned()
            .collect()
    }
}

/// The node a v6.13 THP fault tries alone: the faulting CPU's node for default, local and bind
/// (if the mask allows it), the preferred node for preferred; `None` for interleave and
/// preferred-many, which allocate the standard way.
fn this_node(policy: &Resolved, cpu_node: usize) -> Option<usize> {
    match policy.mode {
        PolicyMode::Default | PolicyMode::Local => Some(cpu_node),
        PolicyMode::Preferred => policy.nodes.first().copied(),
        PolicyMode::Bind => policy.mask.get(cpu_node).copied().unwrap_or(false).then_some(cpu_node),
        _ => None,
    }
}
