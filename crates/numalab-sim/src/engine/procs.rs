//! Processes of a co-run (`crate::corun`): starting staggered ones, the segments they share,
//! and what each reports.

use super::*;
use crate::output::ProcessOut;

impl Thread {
    /// Started and not finished: it counts for the scheduler and the caches.
    pub(super) fn live(&self) -> bool {
        !matches!(self.state, State::Done | State::Pending)
    }
}

impl Engine<'_> {
    /// Exec the processes whose start time falls before `until`: each thread is placed now
    /// (fork/exec placement among the threads running then) and begins at its own start time.
    pub(super) fn start_pending(&mut self, until: f64) {
        for pid in 0..self.procs.len() {
            let slot = self.procs[pid].slot;
            if self.procs[pid].start_s >= until || self.threads[slot.first_tid].state != State::Pending {
                continue;
            }
            for tid in slot.first_tid..slot.first_tid + slot.threads {
                let live: Vec<bool> = self.threads.iter().map(Thread::live).collect();
                let parent = (tid != slot.first_tid).then_some(slot.first_tid);
                self.sched.place_new_at(self.now, tid, parent, &live);
                self.threads[tid].state = State::Running;
                self.start_next_phase(tid);
            }
        }
    }

    /// Per process: its name, start, the timer's reading if its program has one, and the base
    /// pages of its regions on each node at the end.
    pub(super) fn process_outputs(&self) -> Vec<ProcessOut> {
        let n = self.m.nodes.len();
        self.procs
            .iter()
            .enumerate()
            .map(|(pid, p)| {
                let w = self.wl(pid);
                let mut pages = vec![0u64; n];
                for r in &p.regions {
                    let mut i = 0;
                    while i < r.node.len() {
                        let run = r.node.run(i, usize::MAX);
                        for &x in run.iter().filter(|&&x| x != NONE) {
                            pages[x as usize] += r.base_pages();
                        }
                        i += run.len();
                    }
                }
                // The program's timer runs in its main thread.
                let timer_s = w.has_timer().then(|| self.threads[p.slot.first_tid].timed_s);
                ProcessOut {
                    pid: pid as u32 + 1,
                    name: w.name.clone(),
                    threads: p.slot.threads as u32,
                    start_s: p.start_s,
                    time_s: 0.0,
                    reported_time_s: 0.0,
                    timer_s,
                    pages_per_node: pages,
                }
            })
            .collect()
    }

    /// Let each of `segments` (`crate::corun::segments`) be one set of pages that all its
    /// mappings see, before the run starts. A segment's page is allocated once, by the first
    /// process to fault it, under the segment's policy or else that process's task policy
    /// (mm/shmem.c: shmem_alloc_folio, shmem_get_pgoff_policy: `mpol_shared_policy_lookup`,
    /// else `get_task_policy(current)`); its node, `last_cpupid` and migrations are the page's,
    /// so every mapping follows them (`mirror`). A segment `split[s]` is divided among its
    /// mappers: the k-th (in process order) of P accesses slice k of it (`pattern::ranges`).
    pub fn share(&mut self, segments: &[Vec<(usize, usize)>], split: &[bool]) -> Result<(), String> {
        for (si, seg) in segments.iter().enumerate().filter(|(_, s)| s.len() > 1) {
            let (p0, r0) = seg[0];
            let first = &self.wl(p0).regions[r0];
            for &(pid, ri) in seg {
                let spec = &self.wl(pid).regions[ri];
                let name = &spec.name;
                if self.tiering.is_some() {
                    return Err(format!("shared region '{name}': segments shared by processes are not modelled with demotion or memory tiers"));
                }
                if spec.alloc.is_some() {
                    return Err(format!("shared region '{name}' of workload {}: shared memory is mapped (shmget/mmap MAP_SHARED), not malloc'd: remove its alloc", self.wl(pid).name));
                }
                if spec.bytes != first.bytes || spec.file.is_some() != first.file.is_some() || spec.file != first.file {
                    return Err(format!("shared region '{name}': every process must map it with the same size and kind ({} bytes{} in workload {}, {} bytes{} in workload {})",
                        first.bytes, if first.file.is_some() { ", file" } else { "" }, self.wl(p0).name,
                        spec.bytes, if spec.file.is_some() { ", file" } else { "" }, self.wl(pid).name));
                }
                if self.procs[pid].regions[ri].policy != self.procs[p0].regions[r0].policy {
                    return Err(format!("shared region '{name}': its policy is the segment's (mbind on shared memory sets it for every mapper): workloads {} and {} give different ones", self.wl(p0).name, self.wl(pid).name));
                }
            }
            let parts = seg.len() as u64;
            for (k, &(pid, ri)) in seg.iter().enumerate() {
                let region = &mut self.procs[pid].regions[ri];
                if split.get(si).copied().unwrap_or(false) {
                    region.part = (k as u64, parts);
                }
                if region.shift != 12 {
                    // Shared memory takes 4 KiB pages whatever the THP mode of anonymous memory
                    // (mm/shmem.c: shmem_huge defaults to SHMEM_HUGE_NEVER, shmem_enabled=never).
                    region.shift = 12;
                    region.node = pages::PageTable::new(region.bytes.div_ceil(4096) as usize);
                    if !region.marked.is_empty() {
                        region.enable_balancing();
                    }
                }
                region.shared = true;
                region.mappers = seg.iter().copied().filter(|&x| x != (pid, ri)).collect();
            }
        }
        Ok(())
    }

    /// After process `pid` faulted or migrated entries `lo..hi` of its region `ri`: every other
    /// mapping of the segment maps the same pages. A page another mapping gains counts in that
    /// process's RSS (each `mm` counts the shared pages it maps: MM_SHMEMPAGES); a page that
    /// moved is mapped afresh there, without the hinting-fault protection of its old entry
    /// (mm/migrate.c: remove_migration_pte builds the entry from `vma->vm_page_prot`).
    pub(super) fn mirror(&mut self, pid: usize, ri: usize, lo: u64, hi: u64) {
        if self.procs[pid].regions[ri].mappers.is_empty() {
            return;
        }
        let mappers = std::mem::take(&mut self.procs[pid].regions[ri].mappers);
        for &(q, qi) in &mappers {
            let (src, dst) = two(&mut self.procs, pid, q);
            let (src, dst) = (&src.regions[ri], &mut dst.regions[qi]);
            let bp = dst.base_pages();
            for u in lo..hi.min(src.units()) {
                let n = src.node[u as usize];
                if n == NONE {
                    continue;
                }
                let had = dst.node[u as usize];
                if had != n {
                    dst.node[u as usize] = n;
                    if had == NONE {
                        if let Some(nb) = self.numab.as_mut() {
                            nb.on_alloc(q, bp);
                        }
                    } else if !dst.marked.is_empty() {
                        dst.set_marked(u, false);
                    }
                }
                if !src.cpupid.is_empty() {
                    dst.cpupid[u as usize] = src.cpupid[u as usize];
                }
            }
        }
        self.procs[pid].regions[ri].mappers = mappers;
    }
}

/// Two different processes, mutably.
fn two(procs: &mut [Process], a: usize, b: usize) -> (&mut Process, &mut Process) {
    assert_ne!(a, b, "a segment maps once per process");
    if a < b {
        let (x, y) = procs.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = procs.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}
