//! Per-page access counts of a workload (docs/mapping.md §1): every access of every phase is
//! turned into the byte ranges each thread sweeps (`pattern::ranges`, the engine's own split),
//! and each 4 KiB page gets the 64-byte lines each node's threads move on it over the whole
//! program. This is numalize's per-page x per-thread table (Diener et al.), expected rather
//! than sampled:
//! - a dynamic schedule hands each chunk to every thread equally often;
//! - a random pattern (gather, scatter) spreads its lines evenly over the region;
//! - cache effects (`cached`) are not applied: every access counts, as numalize counts them.
//!
//! The first write of each page (first touch) is the earliest writing phase's; inside it, the
//! writer that reaches the page first from the start of its own ranges, the lower thread on a tie.
//! A file mapping's page is placed by its first access, read or write (its read-around is not
//! applied here).

use serde::Serialize;

use crate::input::{AccessSpec, Pattern, WorkloadSpec};
use crate::pages::{self, Region};
use crate::pattern;

/// Pages are counted at 4 KiB whatever the region's page size (as numalize does).
pub const PAGE_SHIFT: u32 = 12;
const NONE: u8 = u8::MAX;

/// One region of one process, page by page.
#[derive(Clone, Debug, Serialize)]
pub struct RegionPages {
    pub pid: u32,
    pub region: usize,
    pub name: String,
    /// Virtual page number of its first 4 KiB page.
    pub vpn: u64,
    pub pages: usize,
    /// Lines moved per page and node (logical index), `pages x nodes`, row-major.
    #[serde(skip)]
    pub acc: Vec<f64>,
    /// Node of each page's first write (logical index), `u8::MAX` if no phase writes it.
    #[serde(skip)]
    pub first: Vec<u8>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PageAccesses {
    pub nodes: usize,
    /// The node of each thread (all processes, process by process).
    pub thread_node: Vec<usize>,
    pub regions: Vec<RegionPages>,
    /// Thread x thread: lines two threads move on the same bytes in the same phase execution
    /// (the smaller of their two amounts); the diagonal is 0.
    pub comm: Vec<Vec<f64>>,
}

impl RegionPages {
    pub fn node_acc(&self, p: usize, nodes: usize) -> &[f64] {
        &self.acc[p * nodes..(p + 1) * nodes]
    }
}

/// One thread's part of one access: bytes `[s, e)` of a region at `dens` lines per byte;
/// `before` bytes of its own ranges come before `s` (how far it got when it reaches `s`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    tid: usize,
    s: u64,
    e: u64,
    dens: f64,
    before: u64,
    write: bool,
}

/// Per-page counts of `w` with thread `t` (all processes, in order) on node `thread_node[t]`.
pub fn page_accesses(w: &WorkloadSpec, thread_node: &[usize], nodes: usize) -> Result<PageAccesses, String> {
    let nt = w.threads as usize;
    let total = nt * w.processes as usize;
    if thread_node.len() != total {
        return Err(format!("thread_node has {} entries, the workload has {total} threads", thread_node.len()));
    }
    if let Some(&n) = thread_node.iter().find(|&&n| n >= nodes) {
        return Err(format!("thread node {n} is not one of the machine's {nodes} nodes"));
    }
    let layout = pages::layout(&w.regions, vec![None; w.regions.len()]);
    let (mult, order) = phase_order(w);
    let mut regions = Vec::new();
    let mut comm = vec![vec![0.0; total]; total];
    for pid in 0..w.processes as usize {
        let mut out: Vec<RegionPages> = layout
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let pages = r.bytes.div_ceil(1 << PAGE_SHIFT) as usize;
                RegionPages {
                    pid: pid as u32 + 1,
                    region: i,
                    name: r.name.clone(),
                    vpn: r.vm_start >> PAGE_SHIFT,
                    pages,
                    acc: vec![0.0; pages * nodes],
                    first: vec![NONE; pages],
                }
            })
            .collect();
        for &ph in &order {
            let mut spans: Vec<Vec<Span>> = vec![Vec::new(); layout.len()];
            for a in &w.phases[ph].accesses {
                let r = &layout[a.region];
                for idx in 0..nt {
                    spans[a.region].extend(thread_spans(a, r, idx, nt, pid * nt + idx));
                }
            }
            for (ri, sp) in spans.iter().enumerate() {
                let rp = &mut out[ri];
                add_counts(rp, sp, thread_node, nodes, mult[ph] as f64);
                first_writes(rp, sp, thread_node);
                add_comm(&mut comm, sp, mult[ph] as f64, &|_, _| true);
            }
        }
        regions.extend(out);
    }
    Ok(PageAccesses { nodes, thread_node: thread_node.to_vec(), regions, comm })
}

/// Executions of each phase over the program, and the order phases first run in.
fn phase_order(w: &WorkloadSpec) -> (Vec<u64>, Vec<usize>) {
    let mut mult = vec![0u64; w.phases.len()];
    let mut order = Vec::new();
    for step in w.program.iter().filter(|s| s.repeat > 0) {
        for &ph in &step.phases {
            if mult[ph] == 0 {
                order.push(ph);
            }
            mult[ph] += step.repeat;
        }
    }
    (mult, order)
}

/// Region `ri`'s spans in each phase of `w` (in the order phases first run, with their
/// executions), for one process whose threads are numbered from `tid0`.
pub(super) fn region_spans(w: &WorkloadSpec, ri: usize, tid0: usize) -> Vec<(f64, Vec<Span>)> {
    let layout = pages::layout(&w.regions, vec![None; w.regions.len()]);
    let (mult, order) = phase_order(w);
    let nt = w.threads as usize;
    order
        .iter()
        .map(|&ph| {
            let mut spans = Vec::new();
            for a in w.phases[ph].accesses.iter().filter(|a| a.region == ri) {
                for idx in 0..nt {
                    spans.extend(thread_spans(a, &layout[ri], idx, nt, tid0 + idx));
                }
            }
            (mult[ph] as f64, spans)
        })
        .collect()
}

/// Pairs of threads of two different processes (`proc_of`) on the same bytes (`add_comm`).
pub(super) fn add_cross_comm(comm: &mut [Vec<f64>], spans: &[Span], mult: f64, proc_of: &dyn Fn(usize) -> usize) {
    add_comm(comm, spans, mult, &|a, b| proc_of(a) != proc_of(b));
}

/// The spans of thread `idx` (global `tid`) for one access.
fn thread_spans(a: &AccessSpec, r: &Region, idx: usize, nt: usize, tid: usize) -> Vec<Span> {
    let traffic = (a.rd + a.wr) * a.passes;
    if traffic <= 0.0 {
        return Vec::new();
    }
    // A file page is placed by its first access, read or write (docs/allocation.md §3.6).
    let write = a.wr > 0.0 || r.readaround > 0;
    let whole = |dens: f64| vec![Span { tid, s: 0, e: r.bytes, dens, before: 0, write }];
    match a.pattern {
        // `count` lines per thread, anywhere in the region.
        Pattern::Gather | Pattern::Scatter => whole(a.count as f64 * traffic / r.bytes as f64),
        // Every chunk goes to each thread once in `nt` executions on average.
        Pattern::Dynamic => whole(traffic / 64.0 / nt as f64),
        _ => {
            let mut before = 0;
            pattern::ranges(a, r, idx as u64, nt as u64, &[])
                .into_iter()
                .map(|(s, e)| {
                    let sp = Span { tid, s, e, dens: traffic / 64.0, before, write };
                    before += e - s;
                    sp
                })
                .collect()
        }
    }
}

/// Pages `[first, last]` a byte range covers, with the bytes of each inside it.
fn page_bytes(s: u64, e: u64) -> impl Iterator<Item = (usize, u64)> {
    let (first, last) = (s >> PAGE_SHIFT, (e - 1) >> PAGE_SHIFT);
    (first..=last).map(move |p| {
        let (ps, pe) = (p << PAGE_SHIFT, (p + 1) << PAGE_SHIFT);
        (p as usize, pe.min(e) - ps.max(s))
    })
}

fn add_counts(rp: &mut RegionPages, spans: &[Span], thread_node: &[usize], nodes: usize, mult: f64) {
    for sp in spans.iter().filter(|sp| sp.e > sp.s) {
        let n = thread_node[sp.tid];
        for (p, b) in page_bytes(sp.s, sp.e) {
            rp.acc[p * nodes + n] += b as f64 * sp.dens * mult;
        }
    }
}

/// Pages no earlier phase wrote go to the writer of this phase that reaches them first.
fn first_writes(rp: &mut RegionPages, spans: &[Span], thread_node: &[usize]) {
    let mut best: std::collections::BTreeMap<usize, (u64, usize)> = Default::default();
    for sp in spans.iter().filter(|sp| sp.write && sp.e > sp.s) {
        for (p, _) in page_bytes(sp.s, sp.e) {
            if rp.first[p] != NONE {
                continue;
            }
            let at = sp.before + ((p as u64) << PAGE_SHIFT).saturating_sub(sp.s);
            let cand = (at, sp.tid);
            best.entry(p).and_modify(|b| *b = (*b).min(cand)).or_insert(cand);
        }
    }
    for (p, (_, tid)) in best {
        rp.first[p] = thread_node[tid] as u8;
    }
}

/// Pairs of threads on the same bytes: the smaller of their two line counts, per stretch of
/// bytes where the set of threads does not change; only the pairs `pair` accepts.
fn add_comm(comm: &mut [Vec<f64>], spans: &[Span], mult: f64, pair: &dyn Fn(usize, usize) -> bool) {
    let mut cuts: Vec<u64> = spans.iter().flat_map(|sp| [sp.s, sp.e]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    if cuts.len() < 2 {
        return;
    }
    let mut by_start: Vec<&Span> = spans.iter().filter(|sp| sp.e > sp.s).collect();
    by_start.sort_by_key(|sp| sp.s);
    let mut open: Vec<&Span> = Vec::new();
    let mut next = 0;
    for win in cuts.windows(2) {
        let (x0, x1) = (win[0], win[1]);
        open.retain(|sp| sp.e > x0);
        while next < by_start.len() && by_start[next].s <= x0 {
            open.push(by_start[next]);
            next += 1;
        }
        // One density per thread (a thread may sweep the same bytes in two accesses).
        let mut dens: Vec<(usize, f64)> = Vec::new();
        for sp in open.iter().filter(|sp| sp.s <= x0 && sp.e >= x1) {
            match dens.iter_mut().find(|(t, _)| *t == sp.tid) {
                Some((_, d)) => *d += sp.dens,
                None => dens.push((sp.tid, sp.dens)),
            }
        }
        let bytes = (x1 - x0) as f64 * mult;
        for i in 0..dens.len() {
            for j in i + 1..dens.len() {
                if !pair(dens[i].0, dens[j].0) {
                    continue;
                }
                let v = dens[i].1.min(dens[j].1) * bytes;
                comm[dens[i].0][dens[j].0] += v;
                comm[dens[j].0][dens[i].0] += v;
            }
        }
    }
}
