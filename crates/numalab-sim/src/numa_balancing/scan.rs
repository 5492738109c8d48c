//! When scans run and what one scan marks (docs/balancing.md §3-§5): `task_tick_numa`,
//! `task_numa_work` with its window walk, and `task_scan_min/max/start`.

use super::{effective_policy, policy_mof, MmView, Numab, VmaNumab, World, MS, TICK_NS};
use crate::input::Balancing;
use crate::pages::{Region, NONE};
use crate::profile::{FirstPeriod, ScanBudget, ScanMax, TickCompare};

/// `MAX_SCAN_WINDOW`: never scan more than 2560 MB of PTEs per second.
const MAX_SCAN_WINDOW: u32 = 2560;
const HPAGE: u64 = 2 << 20;
const PAGE_SHIFT: u32 = 12;

/// How a window walk ended.
enum WalkEnd {
    /// The page budget ran out inside a VMA: the next scan resumes at this address.
    Budget(u64),
    /// A forced scan finished one VMA (6.13): resume after it.
    Forced(u64),
    /// No VMA left: the pass is complete.
    End,
}

/// Budget of one window and what it marked.
struct Window {
    pages: i64,
    virtpages: i64,
    /// 3.13: base pages marked so far in this window (unpopulated space before the first
    /// marked page is free).
    marked: u64,
    entries: u64,
    /// Counted in the pass in progress (a window that completes a pass and goes on into the
    /// next counts in both).
    counted: bool,
}

impl Numab {
    /// Epoch end at `now_s`: `task_tick_numa` for every running thread of `running`, then the
    /// `task_numa_work` each queued. Returns the scan time to charge to each scanning thread.
    pub fn tick(&mut self, w: &mut World, mms: &mut [MmView], now_s: f64, running: &[bool]) -> Vec<(usize, f64)> {
        let now = super::ns(now_s);
        let mut queued: Vec<(i64, usize)> = (0..self.tasks.len())
            .filter(|&t| running[t])
            .filter_map(|t| self.tick_task(t, now).map(|x| (x, t)))
            .collect();
        // The thread furthest past its threshold ticked first (3.13 threads whose node_stamp
        // ran ahead of their runtime come after those that really crossed it).
        queued.sort_by_key(|&(past, tid)| (std::cmp::Reverse(past), tid));
        let mut out = Vec::new();
        for (_, tid) in queued {
            let proc = self.tasks[tid].proc;
            let cost = self.task_numa_work(tid, now, w, &mut mms[proc]);
            if cost > 0.0 {
                out.push((tid, cost));
            }
        }
        out
    }

    /// `task_tick_numa`: Some(runtime past the threshold, ns; negative for a 3.13 wrap) if the
    /// task queues `task_numa_work`.
    fn tick_task(&mut self, tid: usize, now: u64) -> Option<i64> {
        let t = &self.tasks[tid];
        let period = t.scan_period as u64 * MS;
        let crossed = match self.rules.tick_compare {
            // 3.13: `now - node_stamp > period` in u64, wrapping when node_stamp is ahead.
            TickCompare::Wrapping => t.runtime.wrapping_sub(t.node_stamp) > period,
            TickCompare::Ahead => t.runtime > t.node_stamp + period,
        };
        if !crossed {
            return None;
        }
        let past = t.runtime as i64 - (t.node_stamp + period) as i64;
        if t.node_stamp == 0 {
            self.tasks[tid].scan_period = self.first_period(tid);
        }
        self.tasks[tid].node_stamp += period;
        let gate = self.mms[self.tasks[tid].proc].next_scan;
        (now >= gate).then_some(past)
    }

    /// `task_numa_work`: pass the per-mm gate, then mark one window. Returns the scan time (s).
    fn task_numa_work(&mut self, tid: usize, now: u64, w: &mut World, view: &mut MmView) -> f64 {
        let proc = self.tasks[tid].proc;
        let delay = self.knobs.scan_delay_ms as u64 * MS;
        if self.mms[proc].next_scan == 0 {
            self.mms[proc].next_scan = now + delay;
        }
        if now < self.mms[proc].next_scan {
            return 0.0;
        }
        if self.tasks[tid].scan_period == 0 {
            self.tasks[tid].scan_period_max = self.scan_max(tid);
            self.tasks[tid].scan_period = self.first_period(tid);
        }
        self.mms[proc].next_scan = now + self.tasks[tid].scan_period as u64 * MS;
        self.tasks[tid].node_stamp += 2 * TICK_NS;
        let pages = (self.knobs.scan_size_mb as i64) << (20 - PAGE_SHIFT);
        let mut win = Window { pages, virtpages: pages * 8, marked: 0, entries: 0, counted: false };
        // 6.13 (4.10+): a single-threaded process's pages already on its CPU's node stay unmarked.
        let single = self.mms[proc].tids.iter().filter(|&&t| self.live[t]).count() == 1;
        let skip_node = (self.rules.skip_local_single_thread && single).then(|| self.topo.pu_node[w.sched.cpu[tid]]);
        self.scan_now = now;
        match self.walk(tid, now, view, &mut win, skip_node) {
            WalkEnd::Budget(at) | WalkEnd::Forced(at) => self.mms[proc].offset = at,
            WalkEnd::End => self.complete_pass(proc, tid, now),
        }
        let cost_s = win.entries as f64 * self.costs.scan_pte_ns * 1e-9;
        let cost = super::ns(cost_s);
        self.tasks[tid].runtime += cost;
        if self.rules.scan_cost_defers {
            // 4.5+: the task must run 32x as long elsewhere before its next scan.
            self.tasks[tid].node_stamp += 32 * cost;
        }
        self.cost.scan_s += cost_s;
        cost_s
    }

    /// Walk the VMAs from the scan offset, marking chunks until the budget runs out.
    fn walk(&mut self, tid: usize, now: u64, view: &mut MmView, win: &mut Window, skip_node: Option<usize>) -> WalkEnd {
        let proc = self.tasks[tid].proc;
        let mut forced = false;
        loop {
            let mut start = self.mms[proc].offset;
            let mut i = self.first_vma(proc, view.regions, start);
            if i.is_none() {
                self.complete_pass(proc, tid, now);
                win.counted = false;
                start = 0;
                i = self.first_vma(proc, view.regions, 0);
            }
            let mut pids_skipped = false;
            let mut idx = i.unwrap_or(usize::MAX);
            while idx < self.mms[proc].order.len() {
                let r = self.mms[proc].order[idx];
                idx += 1;
                let region = &view.regions[r];
                if !policy_mof(effective_policy(region, view.task_policy), self.rules) {
                    continue;
                }
                if self.rules.vma_pid_filter {
                    match self.vma_filter(tid, now, r, region, forced) {
                        VmaVerdict::Scan => {}
                        VmaVerdict::Skip => continue,
                        VmaVerdict::SkipPid => {
                            pids_skipped = true;
                            continue;
                        }
                    }
                }
                if !win.counted {
                    self.mms[proc].pass.windows += 1;
                    win.counted = true;
                }
                let region = &mut view.regions[r];
                // Not for a shared mapping (mm/mprotect.c: change_pte_range, `!(vma->vm_flags &
                // VM_SHARED) && mm_users == 1`): another process may use its pages.
                let skip_node = skip_node.filter(|_| !region.shared);
                if let Some(at) = self.scan_vma(tid, region, &mut start, win, skip_node) {
                    return WalkEnd::Budget(at);
                }
                if self.rules.vma_pid_filter {
                    let seq = self.mms[proc].seq;
                    if let Some(v) = self.mms[proc].vmas[r].as_mut() {
                        v.prev_seq = seq;
                    }
                    if forced {
                        return WalkEnd::Forced(start);
                    }
                }
            }
            // Everything was skipped only because this thread never faulted there: force once.
            if self.rules.vma_pid_filter && !forced && pids_skipped {
                forced = true;
                continue;
            }
            return WalkEnd::End;
        }
    }

    /// Index (in address order) of the VMA containing or following `addr`.
    fn first_vma(&self, proc: usize, regions: &[Region], addr: u64) -> Option<usize> {
        self.mms[proc].order.iter().position(|&r| regions[r].vm_end() > addr)
    }

    /// Mark chunks of one VMA from `start`; Some(resume address) if the budget ran out.
    fn scan_vma(
        &mut self,
        tid: usize,
        region: &mut Region,
        start: &mut u64,
        win: &mut Window,
        skip_node: Option<usize>,
    ) -> Option<u64> {
        let end_vma = region.vm_end();
        loop {
            let s = (*start).max(region.vm_start);
            let e = (s + ((win.pages.max(0) as u64) << PAGE_SHIFT)).div_ceil(HPAGE) * HPAGE;
            let e = e.min(end_vma);
            let nr = self.mark(tid, region, s, e, skip_node, win);
            let chunk = ((e - s) >> PAGE_SHIFT) as i64;
            let virtual_cap = match self.rules.scan_budget {
                ScanBudget::MarkedPages => {
                    win.marked += nr;
                    if win.marked > 0 {
                        win.pages -= chunk;
                    }
                    false
                }
                ScanBudget::ChunksWithVirtualCap => {
                    if nr > 0 {
                        win.pages -= chunk;
                    }
                    win.virtpages -= chunk;
                    true
                }
            };
            *start = e;
            if win.pages <= 0 || (virtual_cap && win.virtpages <= 0) {
                return Some(e);
            }
            if e >= end_vma {
                return None;
            }
        }
    }

    /// `change_prot_numa` over `[s, e)`: mark present, unmarked pages; returns base pages marked.
    fn mark(
        &mut self,
        tid: usize,
        region: &mut Region,
        s: u64,
        e: u64,
        skip_node: Option<usize>,
        win: &mut Window,
    ) -> u64 {
        let bp = region.base_pages();
        let u0 = (s - region.vm_start) >> region.shift;
        let u1 = ((e - region.vm_start).div_ceil(region.page_bytes())).min(region.units());
        let mut entries = 0u64;
        for u in u0..u1 {
            let node = region.node[u as usize];
            if node == NONE || region.is_marked(u) || skip_node == Some(node as usize) {
                continue;
            }
            if let Some(ts) = self.tier.as_ref() {
                // change_pte_range(): without NUMA_BALANCING_NORMAL top-tier pages are skipped;
                // slow-tier pages record the scan time (folio_xchg_access_time()).
                if !self.knobs.enabled && ts.toptier[node as usize] {
                    continue;
                }
                if ts.tiering && !ts.toptier[node as usize] {
                    let ms = crate::tiering::promote::jiffies_ms(self.scan_now);
                    crate::tiering::promote::xchg_access_time(&mut region.cpupid[u as usize], ms);
                }
            }
            region.set_marked(u, true);
            entries += 1;
        }
        let pages = entries * bp;
        self.vmstat.numa_pte_updates += pages;
        if bp > 1 {
            self.vmstat.numa_huge_pte_updates += entries;
        }
        win.entries += entries;
        self.mms[self.tasks[tid].proc].pass.marked += pages;
        pages
    }

    /// The 6.13 (6.4+) per-VMA filters of `task_numa_work`, in the kernel's order.
    fn vma_filter(&mut self, tid: usize, now: u64, r: usize, region: &Region, forced: bool) -> VmaVerdict {
        let proc = self.tasks[tid].proc;
        let delay = self.knobs.scan_delay_ms as u64 * MS;
        let seq = self.mms[proc].seq;
        let v = self.mms[proc].vmas[r].get_or_insert_with(|| VmaNumab {
            next_scan: now + delay,
            pids_reset: now + delay + 4 * delay,
            pids: [0, 0],
            start_seq: seq,
            prev_seq: seq.wrapping_sub(1),
        });
        if seq != 0 && now < v.next_scan {
            return VmaVerdict::Skip;
        }
        if seq != 0 && now > v.pids_reset {
            v.pids_reset += 4 * delay;
            v.pids = [v.pids[1], 0];
        }
        if v.prev_seq == seq {
            self.mms[proc].offset = region.vm_end();
            return VmaVerdict::Skip;
        }
        let v = *v;
        if !forced && !self.vma_accessed(tid, &v, region) {
            return VmaVerdict::SkipPid;
        }
        VmaVerdict::Scan
    }

    /// `vma_is_accessed` (6.4-6.8 rules): the first two passes, this task's PID bit, a scan
    /// already inside the VMA, or more passes without a scan than the process has threads.
    fn vma_accessed(&self, tid: usize, v: &VmaNumab, region: &Region) -> bool {
        let mm = &self.mms[self.tasks[tid].proc];
        if mm.seq.wrapping_sub(v.start_seq) < 2 {
            return true;
        }
        if (v.pids[0] | v.pids[1]) & (1 << pid_bit(self.tasks[tid].pid)) != 0 {
            return true;
        }
        if mm.offset > region.vm_start {
            return true;
        }
        let threads = mm.tids.iter().filter(|&&t| self.live[t]).count() as u32;
        mm.seq > v.prev_seq.wrapping_add(threads)
    }

    pub(super) fn scan_min(&self, tid: usize) -> u32 {
        scan_period_bounds(&self.knobs, self.mms[self.tasks[tid].proc].rss).0
    }

    pub(super) fn scan_max(&self, tid: usize) -> u32 {
        let (smin, smax) = scan_period_bounds(&self.knobs, self.mms[self.tasks[tid].proc].rss);
        match self.rules.scan_max {
            ScanMax::Sysctl => return smax,
            ScanMax::GroupScaled => {}
        }
        let windows = nr_windows(&self.knobs, self.mms[self.tasks[tid].proc].rss);
        let base = self.knobs.scan_period_max_ms as u64 / windows;
        (smin as u64).max(base.max(self.group_scaled(tid, base))).min(u32::MAX as u64) as u32
    }

    /// The first scan period of a task (`crate::profile::FirstPeriod`).
    pub(super) fn first_period(&self, tid: usize) -> u32 {
        match self.rules.first_period {
            FirstPeriod::ScanMin => self.scan_min(tid),
            FirstPeriod::ScanStart => self.scan_start(tid),
        }
    }

    /// 6.13 `task_scan_start`: the minimum, scaled up for tasks in groups with shared memory.
    pub(super) fn scan_start(&self, tid: usize) -> u32 {
        let smin = self.scan_min(tid) as u64;
        smin.max(self.group_scaled(tid, smin)).min(u32::MAX as u64) as u32
    }

    /// `period x refcount x (shared + 1) / (private + shared + 1)` over the group's memory
    /// faults (4.14+); the period itself for a task without a group.
    fn group_scaled(&self, tid: usize, period: u64) -> u64 {
        let Some(g) = self.tasks[tid].group else { return period };
        let g = &self.groups[g];
        let shared: u64 = g.mem.iter().map(|f| f[0]).sum();
        let private: u64 = g.mem.iter().map(|f| f[1]).sum();
        // In u128: huge knobs times many tasks and faults must not wrap.
        let scaled =
            period as u128 * g.nr_tasks as u128 * (shared as u128 + 1) / (private as u128 + shared as u128 + 1);
        scaled.min(u64::MAX as u128) as u64
    }
}

/// `task_nr_scan_windows`: RSS in scan-size windows, rounded up (RSS 0 counts as one).
fn nr_windows(knobs: &Balancing, rss: u64) -> u64 {
    let per = (knobs.scan_size_mb as u64) << (20 - PAGE_SHIFT);
    let rss = if rss == 0 { per } else { rss };
    rss.div_ceil(per)
}

/// `task_scan_min` and `task_scan_max` (ms) of a task outside any numa group, for a process of
/// `rss` resident base pages (§4.5): the minimum never below the `MAX_SCAN_WINDOW` floor, the
/// maximum never below the minimum; integer arithmetic as in the kernel.
pub fn scan_period_bounds(knobs: &Balancing, rss: u64) -> (u32, u32) {
    let size = knobs.scan_size_mb;
    let floor = 1000 / if size < MAX_SCAN_WINDOW { MAX_SCAN_WINDOW / size } else { 1 };
    let windows = nr_windows(knobs, rss);
    let smin = floor.max((knobs.scan_period_min_ms as u64 / windows) as u32);
    let smax = (knobs.scan_period_max_ms as u64 / windows) as u32;
    (smin, smin.max(smax))
}

enum VmaVerdict {
    Scan,
    Skip,
    SkipPid,
}

/// `hash_32(pid, ilog2(BITS_PER_LONG))`: the task's bit in a VMA's `pids_active`.
pub(super) fn pid_bit(pid: u32) -> u32 {
    pid.wrapping_mul(0x61C8_8647) >> (32 - 6)
}
