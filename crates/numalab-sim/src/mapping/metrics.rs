//! Exclusivity and mapping scores (docs/mapping.md §2, §3), as numalize's `scripts/page.R`
//! computes them (Diener et al.): only pages with at least one access count; nodes and pages
//! are taken in address order, process by process.

use serde::Serialize;

use super::accesses::{PageAccesses, PAGE_SHIFT};

/// The mappings scored, in numalize's names: first touch, locality (the page's most frequent
/// node), interleave by address, round-robin by page index, mixed (locality for pages more than
/// 95 % exclusive, round-robin otherwise) and balance.
pub const MAPPINGS: [&str; 6] = ["first-touch", "locality", "interleave", "round-robin", "mixed", "balance"];
/// Page sizes exclusivity is also given at: 2 MiB and 1 GiB (pages merged by address).
const MERGED_SHIFTS: [u32; 2] = [21, 30];
/// numalize's cut between "exclusive" and "shared" pages for the mixed mapping (95 %).
const MIXED_CUT: f64 = 0.95;

#[derive(Clone, Debug, Serialize)]
pub struct Bin {
    /// Exclusivity rounded to 10 % (R's round, half to even).
    pub exclusivity_pct: u32,
    pub pages: u64,
    /// Share of all accesses that go to pages of this bin.
    pub access_share: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct AtPageSize {
    pub page_bytes: u64,
    pub exclusivity: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RegionSummary {
    pub pid: u32,
    pub region: String,
    pub pages: u64,
    pub accesses: f64,
    pub exclusivity: f64,
    /// Share of the region's accesses made from each node (logical order).
    pub node_share: Vec<f64>,
    /// Share of the region's pages each node first-touches (logical order).
    pub first_touch_share: Vec<f64>,
    /// Share of the region's accesses that are local under first touch.
    pub first_touch_local: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Scores {
    pub mapping: String,
    /// % of pages on their most frequent node.
    pub loc_pages: f64,
    /// % of accesses to pages on their most frequent node.
    pub loc_app: f64,
    /// (max / mean - 1) x 100 over pages per node.
    pub b_pages: f64,
    /// (max / mean - 1) x 100 over accesses per node.
    pub b_acc: f64,
    pub pages_per_node: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CommSummary {
    pub threads: usize,
    pub matrix: Vec<Vec<f64>>,
    /// Sum of the matrix over threads squared.
    pub comm_avg: f64,
    /// (max / mean - 1) x 100 over the threads' totals.
    pub balance: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct MappingMetrics {
    pub page_bytes: u64,
    /// Pages with at least one access, and the accesses (64-byte lines moved) to them.
    pub pages: u64,
    pub accesses: f64,
    /// Access-weighted exclusivity, sum of max / sum of all, in [1/N, 1].
    pub exclusivity: f64,
    pub histogram: Vec<Bin>,
    pub by_page_size: Vec<AtPageSize>,
    pub regions: Vec<RegionSummary>,
    pub mappings: Vec<Scores>,
    pub comm: CommSummary,
}

/// One accessed page in address order.
struct Page {
    pid: u32,
    vpn: u64,
    sum: f64,
    max: f64,
    local: usize,
    first: Option<usize>,
}

fn argmax(v: &[f64]) -> (usize, f64) {
    // The first maximum, as R's max.col(ties = "first").
    v.iter().enumerate().fold((0, f64::MIN), |b, (i, &x)| if x > b.1 { (i, x) } else { b })
}

fn accessed(pa: &PageAccesses) -> Vec<Page> {
    let n = pa.nodes;
    let mut order: Vec<&_> = pa.regions.iter().collect();
    order.sort_by_key(|r| (r.pid, r.vpn));
    let mut out = Vec::new();
    for r in order {
        for p in 0..r.pages {
            let a = r.node_acc(p, n);
            let sum: f64 = a.iter().sum();
            if sum <= 0.0 {
                continue;
            }
            let (local, max) = argmax(a);
            let first = (r.first[p] != u8::MAX).then_some(r.first[p] as usize);
            out.push(Page { pid: r.pid, vpn: r.vpn + p as u64, sum, max, local, first });
        }
    }
    out
}

/// Node of each accessed page (in `accessed` order) under `mapping`.
fn assign(pages: &[Page], n: usize, mapping: &str) -> Vec<usize> {
    let rr = |i: usize| i % n;
    match mapping {
        // A page no phase writes keeps its most frequent node (it is never placed by a fault).
        "first-touch" => pages.iter().map(|p| p.first.unwrap_or(p.local)).collect(),
        "locality" => pages.iter().map(|p| p.local).collect(),
        "interleave" => pages.iter().map(|p| (p.vpn % n as u64) as usize).collect(),
        "round-robin" => (0..pages.len()).map(rr).collect(),
        "mixed" => {
            pages.iter().enumerate().map(|(i, p)| if p.max / p.sum > MIXED_CUT { p.local } else { rr(i) }).collect()
        }
        "balance" => {
            let share = pages.iter().map(|p| p.sum).sum::<f64>() / n as f64;
            let mut sums = vec![0.0; n];
            pages
                .iter()
                .map(|p| {
                    let mut to = p.local;
                    if sums[to] >= share {
                        to = argmin(&sums);
                    }
                    sums[to] += p.sum;
                    to
                })
                .collect()
        }
        other => unreachable!("unknown mapping {other}"),
    }
}

fn argmin(v: &[f64]) -> usize {
    v.iter().enumerate().fold((0, f64::MAX), |b, (i, &x)| if x < b.1 { (i, x) } else { b }).0
}

fn imbalance(v: &[f64]) -> f64 {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    if mean <= 0.0 {
        return 0.0;
    }
    (v.iter().copied().fold(0.0, f64::max) / mean - 1.0) * 100.0
}

fn scores(pages: &[Page], n: usize, mapping: &str) -> Scores {
    let map = assign(pages, n, mapping);
    let total: f64 = pages.iter().map(|p| p.sum).sum();
    let (mut pn, mut an) = (vec![0u64; n], vec![0.0; n]);
    let (mut loc_p, mut loc_a) = (0u64, 0.0);
    for (p, &m) in pages.iter().zip(&map) {
        pn[m] += 1;
        an[m] += p.sum;
        if m == p.local {
            loc_p += 1;
            loc_a += p.sum;
        }
    }
    let pct = |x: f64, of: f64| if of > 0.0 { 100.0 * x / of } else { 0.0 };
    Scores {
        mapping: mapping.to_string(),
        loc_pages: pct(loc_p as f64, pages.len() as f64),
        loc_app: pct(loc_a, total),
        b_pages: imbalance(&pn.iter().map(|&x| x as f64).collect::<Vec<_>>()),
        b_acc: imbalance(&an),
        pages_per_node: pn,
    }
}

/// Exclusivity with pages merged into pages of `1 << shift` bytes (by address, per process).
fn merged(pa: &PageAccesses, shift: u32) -> f64 {
    let n = pa.nodes;
    let mut groups: std::collections::BTreeMap<(u32, u64), Vec<f64>> = Default::default();
    for r in &pa.regions {
        for p in 0..r.pages {
            let a = r.node_acc(p, n);
            if a.iter().all(|&x| x == 0.0) {
                continue;
            }
            let g = groups.entry((r.pid, (r.vpn + p as u64) >> (shift - PAGE_SHIFT))).or_insert_with(|| vec![0.0; n]);
            g.iter_mut().zip(a).for_each(|(x, y)| *x += y);
        }
    }
    let (max, sum) = groups.values().fold((0.0, 0.0), |(m, s), g| (m + argmax(g).1, s + g.iter().sum::<f64>()));
    if sum > 0.0 {
        max / sum
    } else {
        1.0
    }
}

fn region_summary(pa: &PageAccesses) -> Vec<RegionSummary> {
    let n = pa.nodes;
    pa.regions
        .iter()
        .map(|r| {
            let (mut share, mut ft) = (vec![0.0; n], vec![0.0; n]);
            let (mut max, mut sum, mut local, mut pages, mut written) = (0.0, 0.0, 0.0, 0u64, 0.0);
            for p in 0..r.pages {
                let a = r.node_acc(p, n);
                let s: f64 = a.iter().sum();
                if s <= 0.0 {
                    continue;
                }
                pages += 1;
                sum += s;
                max += argmax(a).1;
                share.iter_mut().zip(a).for_each(|(x, y)| *x += y);
                if r.first[p] != u8::MAX {
                    ft[r.first[p] as usize] += 1.0;
                    written += 1.0;
                    local += a[r.first[p] as usize];
                } else {
                    local += argmax(a).1;
                }
            }
            let norm = |v: Vec<f64>, by: f64| v.into_iter().map(|x| if by > 0.0 { x / by } else { 0.0 }).collect();
            RegionSummary {
                pid: r.pid,
                region: r.name.clone(),
                pages,
                accesses: sum,
                exclusivity: if sum > 0.0 { max / sum } else { 1.0 },
                node_share: norm(share, sum),
                first_touch_share: norm(ft, written),
                first_touch_local: if sum > 0.0 { local / sum } else { 1.0 },
            }
        })
        .collect()
}

fn comm_summary(m: &[Vec<f64>]) -> CommSummary {
    let t = m.len();
    let totals: Vec<f64> = m.iter().map(|r| r.iter().sum()).collect();
    let all: f64 = totals.iter().sum();
    CommSummary {
        threads: t,
        matrix: m.to_vec(),
        comm_avg: if t > 0 { all / (t * t) as f64 } else { 0.0 },
        balance: imbalance(&totals),
    }
}

pub fn mapping_metrics(pa: &PageAccesses) -> MappingMetrics {
    let n = pa.nodes;
    let pages = accessed(pa);
    let sum: f64 = pages.iter().map(|p| p.sum).sum();
    let max: f64 = pages.iter().map(|p| p.max).sum();
    let mut bins: Vec<Bin> = (0..=10).map(|i| Bin { exclusivity_pct: i * 10, pages: 0, access_share: 0.0 }).collect();
    for p in &pages {
        let b = (p.max / p.sum * 10.0).round_ties_even() as usize;
        bins[b].pages += 1;
        bins[b].access_share += p.sum / sum;
    }
    let mut by_page_size =
        vec![AtPageSize { page_bytes: 1 << PAGE_SHIFT, exclusivity: if sum > 0.0 { max / sum } else { 1.0 } }];
    by_page_size.extend(MERGED_SHIFTS.iter().map(|&s| AtPageSize { page_bytes: 1 << s, exclusivity: merged(pa, s) }));
    MappingMetrics {
        page_bytes: 1 << PAGE_SHIFT,
        pages: pages.len() as u64,
        accesses: sum,
        exclusivity: by_page_size[0].exclusivity,
        histogram: bins,
        by_page_size,
        regions: region_summary(pa),
        mappings: MAPPINGS.iter().map(|m| scores(&pages, n, m)).collect(),
        comm: comm_summary(&pa.comm),
    }
}

/// The node of every 4 KiB page of every region (as `pa.regions`) under `mapping`; pages with
/// no access keep `u8::MAX` (left to first touch).
pub fn mapping_nodes(pa: &PageAccesses, mapping: &str) -> Result<Vec<Vec<u8>>, String> {
    if !MAPPINGS.contains(&mapping) {
        return Err(format!("unknown mapping '{mapping}' (one of {})", MAPPINGS.join(", ")));
    }
    let pages = accessed(pa);
    let map = assign(&pages, pa.nodes, mapping);
    let mut out: Vec<Vec<u8>> = pa.regions.iter().map(|r| vec![u8::MAX; r.pages]).collect();
    let index: std::collections::BTreeMap<(u32, u64), usize> =
        pa.regions.iter().enumerate().map(|(i, r)| ((r.pid, r.vpn), i)).collect();
    // `accessed` walks regions in (pid, vpn) order: find each page's region by its start.
    for (p, &node) in pages.iter().zip(&map) {
        let (&(_, vpn0), &ri) = index.range(..=(p.pid, p.vpn)).next_back().expect("page inside a region");
        out[ri][(p.vpn - vpn0) as usize] = node as u8;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::WorkloadSpec;
    use crate::mapping::page_accesses;

    /// One region of `pages` 4 KiB pages in `planes` planes; phases as (pattern, rd, wr).
    fn workload(threads: u32, pages: u64, planes: u64, phases: &[(&str, f64, f64)]) -> WorkloadSpec {
        let phases: Vec<_> = phases
            .iter()
            .enumerate()
            .map(|(i, (pat, rd, wr))| {
                serde_json::json!({"name": format!("p{i}"), "cycles": 0.0, "mlp": null, "sync": "barrier",
                    "accesses": [{"region": 0, "pattern": pat, "rd": rd, "wr": wr}]})
            })
            .collect();
        let program: Vec<_> = (0..phases.len()).map(|i| serde_json::json!({"phases": [i], "repeat": 1})).collect();
        serde_json::from_value(serde_json::json!({
            "name": "t", "threads": threads,
            "regions": [{"name": "a", "bytes": pages * 4096, "planes": planes}],
            "phases": phases, "program": program,
        }))
        .unwrap()
    }

    fn metrics(w: &WorkloadSpec, thread_node: &[usize], nodes: usize) -> MappingMetrics {
        mapping_metrics(&page_accesses(w, thread_node, nodes).unwrap())
    }

    #[test]
    fn a_block_partitioned_region_is_fully_exclusive() {
        let w = workload(4, 64, 64, &[("block", 1.0, 1.0)]);
        let m = metrics(&w, &[0, 0, 1, 1], 2);
        assert_eq!((m.pages, m.exclusivity), (64, 1.0));
        assert_eq!(m.histogram[10].pages, 64);
        // Nothing is shared: no communication between threads.
        assert_eq!(m.comm.comm_avg, 0.0);
    }

    #[test]
    fn a_uniformly_shared_region_is_one_over_n_exclusive() {
        let w = workload(4, 64, 64, &[("shared", 1.0, 0.0)]);
        let m = metrics(&w, &[0, 1, 2, 3], 4);
        assert!((m.exclusivity - 0.25).abs() < 1e-12, "{}", m.exclusivity);
        // Rounded to 10 %: 25 % goes to 20 % (R rounds half to even).
        assert_eq!(m.histogram[2].pages, 64);
        // Every pair of threads shares every line (64 lines per page).
        let c = &m.comm.matrix;
        assert_eq!((c[0][0], c[0][1], c[2][3]), (0.0, 64.0 * 64.0, 64.0 * 64.0));
    }

    #[test]
    fn merging_pages_lowers_exclusivity_when_ownership_interleaves() {
        // 512 threads, one page each, alternating between two nodes: every 4 KiB page is
        // exclusive, every 2 MiB page half and half.
        let w = workload(512, 512, 512, &[("block", 1.0, 0.0)]);
        let nodes: Vec<usize> = (0..512).map(|t| t % 2).collect();
        let m = metrics(&w, &nodes, 2);
        assert_eq!(m.by_page_size[0].exclusivity, 1.0);
        assert!((m.by_page_size[1].exclusivity - 0.5).abs() < 1e-12);
        assert!((m.by_page_size[2].exclusivity - 0.5).abs() < 1e-12);
    }

    #[test]
    fn serial_initialisation_puts_every_page_on_the_master_node() {
        // The owners read their block four times as much as the master wrote it.
        let w = workload(4, 64, 64, &[("master", 0.0, 1.0), ("block", 4.0, 0.0)]);
        let m = metrics(&w, &[0, 0, 1, 1], 2);
        let score = |name: &str| m.mappings.iter().find(|s| s.mapping == name).unwrap().clone();
        let (ft, loc) = (score("first-touch"), score("locality"));
        assert_eq!(ft.pages_per_node, vec![64, 0]);
        assert_eq!((ft.b_pages, loc.loc_pages, loc.loc_app), (100.0, 100.0, 100.0));
        // Half the pages are read mostly from node 1: first touch has them remote.
        assert_eq!(ft.loc_pages, 50.0);
        assert_eq!(score("round-robin").pages_per_node, vec![32, 32]);
        assert_eq!(score("balance").b_acc, 0.0);
        assert!((m.regions[0].first_touch_local - m.regions[0].node_share[0]).abs() < 1e-12);
        // Node 1's pages have a fifth of their accesses from the master's writes.
        assert!((m.exclusivity - 0.9).abs() < 1e-12, "{}", m.exclusivity);
    }

    #[test]
    fn mapping_nodes_gives_each_page_its_node() {
        let w = workload(4, 64, 64, &[("block", 1.0, 1.0)]);
        let pa = page_accesses(&w, &[0, 0, 1, 1], 2).unwrap();
        let loc = mapping_nodes(&pa, "locality").unwrap();
        assert_eq!(loc[0].iter().filter(|&&n| n == 1).count(), 32);
        assert_eq!((loc[0][0], loc[0][63]), (0, 1));
        assert!(mapping_nodes(&pa, "random").unwrap_err().contains("one of first-touch"));
    }
}
