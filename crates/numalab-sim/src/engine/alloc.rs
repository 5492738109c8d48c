//! The C library's writes at allocation time (docs/allocation.md §3.5): `crate::malloc` gives
//! each allocated region its size and the pages the allocating threads write; the engine faults
//! those pages in before the program's first phase, as the threads' first writes, under the
//! policy in force, and reports them for `numalab sim --explain-alloc`.

use serde::Serialize;

use crate::input::{RegionSpec, WorkloadSpec};
use crate::malloc::{self, Kind, Layout, Request, Why};
use crate::pages::NONE;
use crate::pattern::Visit;

use super::Engine;

/// Per region allocated through the C library: how, and which threads wrote which pages.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AllocRegionOut {
    pub pid: u32,
    pub region: String,
    pub kind: Kind,
    pub by: malloc::By,
    pub chunks: u64,
    pub freed: bool,
    pub heap_chunks: u64,
    pub mmap_chunks: u64,
    /// Arenas the chunks came from (0: the main arena, on the `brk` heap).
    pub arenas: Vec<u32>,
    /// Bytes of the region, chunk headers included, and its 4 KiB pages.
    pub bytes: u64,
    pub pages: u64,
    pub touched: Vec<AllocTouchOut>,
}

/// Pages one thread first wrote while allocating, for one reason, by node (the output's order).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AllocTouchOut {
    /// The thread's index in its process (0: the main thread).
    pub thread: u32,
    pub why: Why,
    pub pages: u64,
    pub per_node: Vec<u64>,
}

/// The allocation model of a process's regions (identical processes: run once). `None` when
/// no region states an allocation, so the engine does exactly what it did before.
pub(super) fn layouts(w: &WorkloadSpec, cpus: usize) -> Option<Vec<Option<Layout>>> {
    if w.regions.iter().all(|r| r.alloc.is_none()) {
        return None;
    }
    let reqs: Vec<Request> = w
        .regions
        .iter()
        .filter_map(|r| r.alloc.as_ref().map(|a| (r, a)))
        .map(|(r, a)| Request {
            kind: a.kind,
            size: r.bytes.div_ceil(a.chunks),
            count: a.chunks,
            by: a.by,
            freed: a.freed,
        })
        .collect();
    let mut out = malloc::model(&reqs, w.threads, cpus as u32).into_iter();
    Some(w.regions.iter().map(|r| r.alloc.as_ref().and_then(|_| out.next())).collect())
}

/// The regions as laid out: an allocated region spans its chunks, headers included.
pub(super) fn specs(w: &WorkloadSpec, layouts: &[Option<Layout>]) -> Vec<RegionSpec> {
    w.regions
        .iter()
        .zip(layouts)
        .map(|(r, l)| match l {
            // A static array is one block of `bytes` whatever `chunks` says.
            Some(l) if r.alloc.is_some_and(|a| a.kind != Kind::Static) => {
                RegionSpec { bytes: l.span.max(1), ..r.clone() }
            }
            _ => r.clone(),
        })
        .collect()
}

impl Engine<'_> {
    /// Fault in every page the allocator wrote, as a write by its thread on the node its CPU is
    /// on now, and charge the faults to that thread. The main thread allocates before it starts
    /// the team, so its time delays the workers' creation too.
    pub(super) fn apply_alloc(&mut self, group: usize, layouts: &[Option<Layout>]) -> Vec<AllocRegionOut> {
        let n = self.m.nodes.len();
        let mut out = Vec::new();
        let pids: Vec<usize> = (0..self.procs.len()).filter(|&p| self.procs[p].slot.group == group).collect();
        for pid in pids {
            let (first, nt) = (self.procs[pid].slot.first_tid, self.procs[pid].slot.threads);
            let mut master_s = 0.0;
            for (ri, l) in layouts.iter().enumerate() {
                let (Some(l), Some(a)) = (l, self.wl(pid).regions[ri].alloc) else { continue };
                let mut touched: Vec<AllocTouchOut> = Vec::new();
                let shift = self.procs[pid].regions[ri].shift;
                for t in if a.freed { &[][..] } else { &l.touched[..] } {
                    let tid = first + t.thread as usize;
                    let cpu_node = self.sched.pu_node[self.sched.cpu[tid]];
                    let (e0, e1) = (t.first >> (shift - 12), (t.first + t.pages - 1) >> (shift - 12));
                    let units = self.procs[pid].regions[ri].units();
                    let (e0, e1) = (e0.min(units - 1), e1.min(units - 1));
                    let before: Vec<bool> =
                        (e0..=e1).map(|u| self.procs[pid].regions[ri].node[u as usize] == NONE).collect();
                    // One write per run of unplaced entries (with THP two threads' runs may share one).
                    let mut u = e0;
                    while u <= e1 {
                        if !before[(u - e0) as usize] {
                            u += 1;
                            continue;
                        }
                        let end = (u..=e1).find(|&x| !before[(x - e0) as usize]).unwrap_or(e1 + 1);
                        let v = Visit {
                            region: ri as u32,
                            unit: u,
                            first: u,
                            units: end - u,
                            lines: 0.0,
                            write: true,
                            rd_share: 0.0,
                        };
                        let Some(cost_s) = self.first_touch(tid, &v, cpu_node, 1.0) else { return out };
                        if t.thread == 0 {
                            master_s += cost_s;
                        } else {
                            self.threads[tid].clock += cost_s;
                        }
                        u = end;
                    }
                    let r = &self.procs[pid].regions[ri];
                    let mut per_node = vec![0u64; n];
                    for (u, was_none) in (e0..=e1).zip(before) {
                        let node = r.node[u as usize];
                        if was_none && node != NONE {
                            per_node[node as usize] += r.base_pages();
                        }
                    }
                    let pages = per_node.iter().sum();
                    match touched.iter_mut().find(|x| x.thread == t.thread && x.why == t.why) {
                        Some(x) => {
                            x.pages += pages;
                            x.per_node.iter_mut().zip(&per_node).for_each(|(a, b)| *a += b);
                        }
                        None if pages > 0 => {
                            touched.push(AllocTouchOut { thread: t.thread, why: t.why, pages, per_node })
                        }
                        None => {}
                    }
                }
                touched.sort_by_key(|x| (x.thread, x.why));
                let r = &self.procs[pid].regions[ri];
                out.push(AllocRegionOut {
                    pid: pid as u32 + 1,
                    region: r.name.clone(),
                    kind: a.kind,
                    by: a.by,
                    chunks: a.chunks,
                    freed: a.freed,
                    heap_chunks: l.heap_chunks,
                    mmap_chunks: l.mmap_chunks,
                    arenas: l.arenas.clone(),
                    bytes: r.bytes,
                    pages: r.bytes.div_ceil(malloc::PAGE),
                    touched,
                });
            }
            for t in &mut self.threads[first..first + nt] {
                t.clock += master_s;
            }
        }
        out
    }
}
