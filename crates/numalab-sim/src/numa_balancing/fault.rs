//! The hinting fault (docs/balancing.md §6-§9): `do_numa_page`, `mpol_misplaced` with the
//! two-stage filter (3.13 deferral, 6.13 early-life and group rules), `migrate_misplaced_page`
//! (3.13 rate limit, high-watermark refusal, THP moving whole) and `task_numa_fault`.

use numalab_model::PolicyMode;

use super::{effective_policy, Faults, MmView, Numab, World, MS};
use crate::pages::CPUPID_UNSET;
use crate::profile::{MigrateFilter, PlacementCall};

/// 3.13 migration rate limit: 128 MiB per 100 ms window per destination node.
const RATELIMIT_PAGES: u64 = 128 << (20 - 12);
const MIGRATE_INTERVAL: u64 = 100 * MS;

/// What a hinting fault cost the faulting thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct FaultOut {
    pub time_s: f64,
    /// A migration's copy: (from node, to node, 64-byte lines each way).
    pub copy: Option<(usize, usize, f64)>,
}

/// `TNF_*` flags of one fault.
#[derive(Clone, Copy, Default)]
struct Tnf {
    local: bool,
    failed: bool,
    /// TNF_SHARED: the page is in a VM_SHARED mapping and mapped by several processes (3.13
    /// mm/memory.c: do_numa_page, `page_mapcount(page) > 1`; 6.13 numa_migrate_check,
    /// `folio_likely_mapped_shared`); here, a segment several processes map.
    shared: bool,
}

fn cpupid(cpu: usize, pid: u32) -> u32 {
    ((cpu as u32) << 8) | (pid & 0xff)
}

fn cpupid_cpu(c: u32) -> usize {
    (c >> 8) as usize
}

/// `cpupid_pid_unset`: the pid bits are all ones.
fn pid_unset(c: u32) -> bool {
    c & 0xff == 0xff
}

impl Numab {
    fn match_pid(&self, tid: usize, c: u32) -> bool {
        self.tasks[tid].pid & 0xff == c & 0xff
    }

    /// Thread `tid` touched entry `u` of region `r` while it was marked. `now_s`: its clock.
    pub fn hint_fault(
        &mut self,
        w: &mut World,
        view: &mut MmView,
        tid: usize,
        r: usize,
        u: u64,
        now_s: f64,
    ) -> FaultOut {
        let now = super::ns(now_s);
        let cpu = w.sched.cpu[tid];
        let c_node = self.topo.pu_node[cpu];
        let proc = self.tasks[tid].proc;
        let region = &mut view.regions[r];
        region.set_marked(u, false);
        let p_node = region.node[u as usize] as usize;
        let npages = region.base_pages();
        // numa_migrate_check(): a slow-tier page's field holds an access time in tiering mode.
        let last = if self.use_access_time(p_node) { CPUPID_UNSET } else { region.cpupid[u as usize] };
        let mut out = FaultOut { time_s: self.costs.hint_fault_ns * 1e-9, copy: None };
        let shared = region.shared && !region.mappers.is_empty();
        let mut flags = Tnf { local: p_node == c_node, shared, ..Tnf::default() };
        self.vmstat.numa_hint_faults += 1;
        if flags.local {
            self.vmstat.numa_hint_faults_local += 1;
            self.mms[proc].pass.local += 1;
        } else {
            self.mms[proc].pass.remote += 1;
        }
        if self.rules.vma_pid_filter {
            self.set_access_pid_bit(tid, r);
        }
        let pol = effective_policy(&view.regions[r], view.task_policy);
        let (mode, c_in_mask) = (pol.mode, pol.mask.get(c_node).copied().unwrap_or(false));
        let target = if self.use_access_time(p_node) {
            let field = &mut view.regions[r].cpupid[u as usize];
            self.promotion_target(w, mode, c_in_mask, field, p_node, c_node, npages, now)
        } else {
            self.misplaced(tid, mode, c_in_mask, &mut view.regions[r].cpupid[u as usize], p_node, cpu, c_node)
        };
        let mut node_after = p_node;
        if let Some(dst) = target {
            if self.migrate(w, view, r, u, p_node, dst, cpu, now) {
                node_after = dst;
                self.migrated(tid, p_node, dst, npages, &mut out);
            } else {
                flags.failed = true;
            }
        }
        self.cost.hint_faults_s += self.costs.hint_fault_ns * 1e-9;
        self.task_numa_fault(w, tid, last, node_after, c_node, npages, flags, now);
        out
    }

    /// Charge a successful migration to the faulting task: its copy time and DRAM traffic.
    fn migrated(&mut self, tid: usize, from: usize, to: usize, npages: u64, out: &mut FaultOut) {
        let copy_s = self.copy_time(from, to, npages);
        out.time_s += copy_s;
        out.copy = Some((from, to, (npages * 64) as f64));
        self.cost.migration_s += copy_s;
        self.tasks[tid].pages_migrated += npages;
        self.mms[self.tasks[tid].proc].pass.migrated += npages;
    }

    /// Migration time of `npages` base pages: the fixed migrate-on-fault work plus the copy at
    /// the node pair's rate (per call: one THP is one call).
    fn copy_time(&self, from: usize, to: usize, npages: u64) -> f64 {
        let d = self.topo.dist[from][to].max(10) as f64;
        let gbps = self.costs.migrate_copy_gbps * 20.0 / d;
        self.costs.migrate_base_ns * 1e-9 + (npages * 4096) as f64 / (gbps * 1e9)
    }

    /// `vma_set_access_pid_bit` (6.4+): remember that this task faulted in the VMA.
    fn set_access_pid_bit(&mut self, tid: usize, r: usize) {
        let bit = super::scan::pid_bit(self.tasks[tid].pid);
        let proc = self.tasks[tid].proc;
        if let Some(v) = self.mms[proc].vmas[r].as_mut() {
            v.pids[1] |= 1 << bit;
        }
    }

    /// `mpol_misplaced` for a MOF policy: the node the page should move to, if any. Updates the
    /// page's `last_cpupid` where the kernel exchanges it.
    #[allow(clippy::too_many_arguments, reason = "mpol_misplaced()'s inputs, as the kernel names them")]
    fn misplaced(
        &mut self,
        tid: usize,
        mode: PolicyMode,
        c_in_mask: bool,
        last_cpupid: &mut u32,
        p_node: usize,
        cpu: usize,
        c_node: usize,
    ) -> Option<usize> {
        match mode {
            // The system default is PREFERRED(local node) | MOF | MORON. 6.13 (5.x) leaves a page
            // already in the preferred mask alone before the MORON filter (no cpupid exchange).
            PolicyMode::Default if self.rules.local_page_stays && p_node == c_node => return None,
            PolicyMode::Default => {}
            // BIND | NUMA_BALANCING: MORON only when the faulting CPU's node is in the mask.
            PolicyMode::Bind if c_in_mask => {}
            _ => return None,
        }
        let this = cpupid(cpu, self.tasks[tid].pid);
        let last = std::mem::replace(last_cpupid, this);
        let go = match self.rules.migrate_filter {
            MigrateFilter::DeferShared => self.k313_filter(tid, last, c_node),
            MigrateFilter::GroupFaults => self.should_numa_migrate_memory(tid, last, p_node, c_node),
        };
        (go && p_node != c_node).then_some(c_node)
    }

    /// `mpol_misplaced()` for a slow-tier page in memory-tiering mode: the MORON target is the
    /// faulting CPU's node, judged by hotness (`should_numa_migrate_memory()`'s tiering branch,
    /// docs/tiering.md §5) instead of the private/shared rules; no `last_cpupid` exchange.
    #[allow(clippy::too_many_arguments, reason = "the tiering branch's inputs, as the kernel names them")]
    fn promotion_target(
        &mut self,
        w: &World,
        mode: PolicyMode,
        c_in_mask: bool,
        field: &mut u32,
        p_node: usize,
        c_node: usize,
        npages: u64,
        now: u64,
    ) -> Option<usize> {
        use crate::tiering::{demote::promo_mark, promote};
        match mode {
            PolicyMode::Default if p_node == c_node => return None,
            PolicyMode::Default => {}
            PolicyMode::Bind if c_in_mask => {}
            _ => return None,
        }
        // "Cannot migrate to memoryless nodes."
        if !self.topo.has_memory[c_node] {
            return None;
        }
        let ts = self.tier.as_mut()?;
        let enough = promote::free_space_enough(w.alloc.free[c_node], promo_mark(w.alloc, c_node), ts.present[c_node]);
        let verdict = ts.promo[c_node].decide(ts.knobs, field, npages, promote::jiffies_ms(now), enough);
        if matches!(verdict, promote::Verdict::Hot | promote::Verdict::RateLimited) {
            self.vmstat.pgpromote_candidate += npages;
        }
        (verdict.promote() && p_node != c_node).then_some(c_node)
    }

    /// 3.13's MORON filter: two faults from the same node in a row; shared faults from another
    /// node arm `migrate_deferred`, and a task with deferral left skips non-private migrations.
    fn k313_filter(&mut self, tid: usize, last: u32, c_node: usize) -> bool {
        let private = self.match_pid(tid, last);
        if !pid_unset(last) && self.topo.pu_node[cpupid_cpu(last)] != c_node {
            if !private {
                self.tasks[tid].migrate_deferred = self.knobs.deferred();
            }
            return false;
        }
        if !private && self.tasks[tid].migrate_deferred > 0 {
            self.tasks[tid].migrate_deferred -= 1;
            return false;
        }
        true
    }

    /// `should_numa_migrate_memory` (4.19+ form, §4.7 6.13).
    fn should_numa_migrate_memory(&self, tid: usize, last: u32, p_node: usize, c_node: usize) -> bool {
        let t = &self.tasks[tid];
        // "Cannot migrate to memoryless nodes" (a CPU of a memoryless node faulting).
        if !self.topo.has_memory[c_node] {
            return false;
        }
        // Without NUMA_BALANCING_MEMORY_TIERING, a slow-tier page never faulted before stays.
        if !self.knobs.memory_tiering && !self.is_toptier(p_node) && pid_unset(last) {
            return false;
        }
        let private = self.match_pid(tid, last);
        if (t.preferred.is_none() || t.scan_seq <= 4) && (pid_unset(last) || private) {
            return true;
        }
        if !pid_unset(last) && self.topo.pu_node[cpupid_cpu(last)] != c_node {
            return false;
        }
        if private {
            return true;
        }
        let Some(g) = t.group else { return true };
        let g = &self.groups[g];
        if g.faults_cpu(c_node) > g.faults_cpu(p_node) * 3 {
            return true;
        }
        g.faults_cpu(c_node) * g.faults(p_node) * 3 > g.faults_cpu(p_node) * g.faults(c_node) * 4
    }

    /// `migrate_misplaced_page`/`_folio`: the refusals of §4.8, then the move. True on success.
    #[allow(clippy::too_many_arguments, reason = "migrate_misplaced_folio()'s inputs and the page's place")]
    fn migrate(
        &mut self,
        w: &mut World,
        view: &mut MmView,
        r: usize,
        u: u64,
        from: usize,
        to: usize,
        cpu: usize,
        now: u64,
    ) -> bool {
        let npages = view.regions[r].base_pages();
        if self.rules.migrate_ratelimit && self.ratelimited(to, npages, now) {
            return false;
        }
        // Target nearly full (`migrate_balanced_pgdat`): alloc_on refuses below high + npages.
        if !w.alloc.alloc_on(to, self.topo.pu_node[cpu], npages) {
            // migrate_misplaced_folio_prepare(): in tiering mode wake the target's kswapd, so
            // demotion makes room for later promotions.
            if self.knobs.memory_tiering {
                w.alloc.wake[to] = true;
            }
            return false;
        }
        if self.knobs.memory_tiering && self.is_toptier(from) != self.is_toptier(to) {
            // folio_migrate_flags(): the access time does not carry across tiers.
            view.regions[r].cpupid[u as usize] = CPUPID_UNSET;
            if self.is_toptier(to) {
                self.vmstat.pgpromote_success += npages;
            }
        }
        w.alloc.release(from, npages);
        w.pages_node[from] -= npages;
        w.pages_node[to] += npages;
        view.regions[r].node[u as usize] = to as u8;
        self.vmstat.numa_pages_migrated += npages;
        self.vmstat.pgmigrate_success += npages;
        true
    }

    /// `numamigrate_update_ratelimit` (3.8-4.18): refuse once more than 128 MiB went to `node`
    /// in the current 100 ms window; the request that crosses the limit still passes.
    fn ratelimited(&mut self, node: usize, npages: u64, now: u64) -> bool {
        let win = &mut self.rate[node];
        if now > win.next {
            win.nr = 0;
            win.next = now + MIGRATE_INTERVAL;
        }
        if win.nr > RATELIMIT_PAGES {
            return true;
        }
        win.nr += npages;
        false
    }

    /// `task_numa_fault(last_cpupid, mem_node, npages, flags)` (§4.9).
    #[allow(clippy::too_many_arguments, reason = "task_numa_fault()'s arguments, the world and the clock")]
    fn task_numa_fault(
        &mut self,
        w: &mut World,
        tid: usize,
        last: u32,
        mem_node: usize,
        cpu_node: usize,
        npages: u64,
        mut flags: Tnf,
        now: u64,
    ) {
        // No fault statistics for slow-tier memory in tiering mode, nor for a slow-tier page
        // faulted for the first time.
        if !self.is_toptier(mem_node) && (self.knobs.memory_tiering || last == CPUPID_UNSET) {
            return;
        }
        let n = self.topo.n;
        let t = &mut self.tasks[tid];
        if t.faults.is_none() {
            t.faults = Some(Faults {
                mem: vec![[0; 2]; n],
                membuf: vec![[0; 2]; n],
                cpu: vec![[0; 2]; n],
                cpubuf: vec![[0; 2]; n],
            });
            t.total_faults = 0;
            t.locality = [0; 3];
        }
        let mut private = true;
        if last != CPUPID_UNSET {
            private = self.match_pid(tid, last);
            if !private {
                private = self.task_numa_group(tid, last, flags.shared);
            }
        }
        if self.rules.shared_fault_in_active_nodes_local && !private && !flags.local {
            // A shared fault inside the group's active nodes counts as local (3.15+).
            if let Some(g) = self.tasks[tid].group.map(|g| &self.groups[g]) {
                if g.active_nodes > 1 && g.active(cpu_node) && g.active(mem_node) {
                    flags.local = true;
                }
            }
        }
        match self.rules.placement_call {
            PlacementCall::EveryFault => {
                self.task_numa_placement(w, tid, now);
                if now > self.tasks[tid].migrate_retry {
                    self.numa_migrate_preferred(w, tid, now);
                }
            }
            PlacementCall::AtRetry => {
                if now > self.tasks[tid].migrate_retry {
                    self.task_numa_placement(w, tid, now);
                    self.numa_migrate_preferred(w, tid, now);
                }
            }
        }
        let (counts_failed, cpu_faults) =
            (self.rules.scan_period_adapt.counts_failed(), self.rules.placement.tracks_cpu_faults());
        let t = &mut self.tasks[tid];
        if flags.failed && counts_failed {
            t.locality[2] += npages;
        }
        let f = t.faults.as_mut().expect("allocated above");
        f.membuf[mem_node][private as usize] += npages;
        if cpu_faults {
            f.cpubuf[cpu_node][private as usize] += npages;
        }
        t.locality[flags.local as usize] += npages;
    }
}
