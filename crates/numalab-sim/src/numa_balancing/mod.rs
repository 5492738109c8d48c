//! Automatic NUMA balancing ("NUMAB") as Linux runs it, for the 3.13 and 6.13 profiles
//! (docs/balancing.md):
//!
//! - [`scan`]: `task_tick_numa` (runtime-driven trigger), `task_numa_work` (per-mm wall-clock
//!   gate, window walk over the VMAs in address order, 6.13 per-VMA filters) and the scan period
//!   bounds of §4.5;
//! - [`fault`]: the hinting fault (`do_numa_page`), `mpol_misplaced` with the two-stage filter,
//!   3.13 deferral and 6.13 early-life/group rules, page migration with the 3.13 rate limit and
//!   the high-watermark refusal, and `task_numa_fault`;
//! - [`placement`]: statistics folded once per pass, preferred node, numa groups, adaptive period;
//! - [`taskmove`]: `numa_migrate_preferred` / `task_numa_migrate` (moves and swaps).
//!
//! What the engine cannot represent exactly, and the closest faithful thing done instead:
//! - Ticks: `task_tick_numa` runs for every running thread at each epoch end (epochs are at most
//!   5 ms, about one 250 Hz tick); queued scans run at once, in the order the threads crossed
//!   their thresholds (the thread furthest past it first), so the mm gate picks one winner.
//!   `TICK_NSEC` is 4 ms (`CONFIG_HZ_250`, the Kconfig default).
//! - Runtime (`sum_exec_runtime`) is the CPU time a thread spent working (its busy time times
//!   its CPU share); threads waiting at a barrier sleep (libgomp's spin phase is not counted).
//!   Identical workers accumulate runtime in lockstep, so their threshold crossings stay in
//!   step where a real machine's drift apart.
//! - Processes are exec'd programs: `mm->numa_next_scan` starts at 0, so the first
//!   `task_numa_work` only arms the gate `scan_delay` later (both profiles read it that way).
//! - 3.13 compares `runtime - node_stamp > period` in unsigned arithmetic: once a scan pushed
//!   `node_stamp` past the runtime, the difference wraps and every tick queues work, leaving the
//!   mm gate alone to pace scanning. Kept as the kernel does it.
//! - Each workload region is one VMA (the kernel may merge adjacent anonymous mappings); all
//!   are anonymous, private and written at first touch, so every hinting fault is writable
//!   (no `TNF_NO_GROUP`) and no page is mapped by two processes (no `TNF_SHARED`).
//! - `cpu_rq(cpu)->curr` is the lowest-numbered live thread on that CPU (time-sharing threads
//!   do not rotate within an epoch).
//! - Task moves and swaps happen inside the fault, as `stop_one_cpu` does; the moved thread's
//!   cost per line follows its new node from the next epoch (the solver runs per epoch), and
//!   its epoch's accesses are recorded under the node it ends the epoch on.
//! - Loads seen by `task_numa_migrate` count every live thread as one always-runnable task
//!   (1024), as the engine's load balancer does; 3.13 CPU power is 1024 per core split over SMT
//!   siblings with `smt_gain` 1178.
//! - A migration copies the page at the machine's node-pair rate and its DRAM lines (read from
//!   the old node, written to the new) load the controllers and links like any access. Copies
//!   never fail once the target passed the watermark check, so `pgmigrate_fail` stays 0.
//! - With sampling (`sample_rate < 1`) a sweep sample takes the faults of every page it stands
//!   for; a random-pattern sample stands for pages it does not touch, so gather/scatter faults
//!   are under-counted by the sampling factor.
//! - Memory tiering (`numa_balancing = 2` and 3) follows docs/tiering.md §5: `tier` holds the
//!   top-tier flags and the per-node promotion state (`crate::tiering::promote`).
//!
//! Kernel behaviour kept as the code has it although it may surprise (all [code-read]):
//! - 6.13: a hinting fault on a page already on the faulting CPU's node leaves `last_cpupid`
//!   alone (5.x `mpol_misplaced` returns before the MORON filter when the page is in the
//!   default policy's node, the local one); 3.13 exchanges it on every fault.
//! - 6.13: threads other than a process's first start with `node_stamp != 0`, so they keep
//!   `numa_scan_period = scan_delay` until their first fold, one completed pass later.
//! - Not modelled: the load balancer's NUMA run-queue classes (§4.13 `fbq_type`); with no
//!   cache-hotness in the engine's balancer, `NUMA_FAVOUR_HIGHER` and 6.13's locality resistance
//!   (idle destinations only) change nothing.

mod fault;
mod placement;
mod scan;
mod taskmove;

pub use scan::scan_period_bounds;

use numalab_model::Machine;

use crate::alloc::Allocator;
use crate::input::{Balancing, Costs, Kernel};
use crate::mempolicy::Resolved;
use crate::output::{BalancingCost, NodeFaults, PassOut, ThreadSched, Vmstat};
use crate::pages::Region;
use crate::profile::NumaBalancingRules;
use crate::sched::{llc_parent_imb_numa_nr, Sched};

/// `TICK_NSEC` at `CONFIG_HZ=250`.
const TICK_NS: u64 = 4_000_000;
const MS: u64 = 1_000_000;

/// What balancing reads and changes outside its own state.
pub struct World<'a> {
    pub alloc: &'a mut Allocator,
    pub sched: &'a mut Sched,
    pub pages_node: &'a mut [u64],
}

/// One process's address space as balancing sees it.
pub struct MmView<'a> {
    pub regions: &'a mut [Region],
    pub task_policy: &'a Resolved,
}

/// `sched_numa_topology_type` (3.19+; 6.13 only uses it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TopoType {
    Direct,
    GluelessMesh,
    Backplane,
}

/// Machine facts the scheduler side of balancing uses, computed once.
struct Topo {
    n: usize,
    pu_node: Vec<usize>,
    node_pus: Vec<Vec<usize>>,
    /// PUs sharing a core with each PU (itself included).
    siblings: Vec<Vec<usize>>,
    /// 3.13 `power_of(cpu)`: 1024 per core, `smt_gain` 1178 split over SMT siblings.
    power: Vec<i64>,
    dist: Vec<Vec<u32>>,
    max_dist: u32,
    ttype: TopoType,
    has_cpus: Vec<bool>,
    has_memory: Vec<bool>,
    node_os: Vec<u32>,
    /// NUMA balancing's `imbalance_pct` (`NumaBalancingRules::imbalance_pct`).
    imbalance_pct: i64,
    /// 6.x `sd_numa->imb_numa_nr` per node (5.18+), which `task_numa_migrate()` copies into
    /// `env.imb_numa_nr` from the CPU's lowest `SD_NUMA` domain: the node's allowance, as
    /// `build_sched_domains()` sets it (`llc_parent_imb_numa_nr()`; one LLC per node here).
    imb_numa_nr: Vec<usize>,
}

impl Topo {
    fn new(m: &Machine, rules: &NumaBalancingRules) -> Self {
        let n = m.nodes.len();
        let pu_node: Vec<usize> = m.pus.iter().map(|u| m.node_logical(u.node).unwrap_or(0)).collect();
        let node_pus: Vec<Vec<usize>> =
            (0..n).map(|x| (0..m.pus.len()).filter(|&p| pu_node[p] == x).collect()).collect();
        let siblings: Vec<Vec<usize>> =
            m.pus.iter().map(|u| (0..m.pus.len()).filter(|&q| m.pus[q].core == u.core).collect()).collect();
        let power = siblings.iter().map(|s| if s.len() > 1 { 1178 / s.len() as i64 } else { 1024 }).collect();
        let dist = m.distances.clone();
        let max_dist = dist.iter().flatten().copied().max().unwrap_or(10);
        let imb_numa_nr = node_pus.iter().map(|p| llc_parent_imb_numa_nr(p.len(), p.len())).collect();
        Topo {
            n,
            ttype: topo_type(&dist, max_dist),
            has_cpus: node_pus.iter().map(|p| !p.is_empty()).collect(),
            has_memory: m.nodes.iter().map(|x| x.local_memory_bytes > 0).collect(),
            node_os: m.nodes.iter().map(|x| x.os_index).collect(),
            imbalance_pct: rules.imbalance_pct,
            pu_node,
            node_pus,
            siblings,
            power,
            dist,
            max_dist,
            imb_numa_nr,
        }
    }
}

/// `init_numa_topology_type`: direct with at most two distance levels; otherwise a glueless
/// mesh if two nodes at the maximum distance have a common nearer node, else a backplane.
fn topo_type(d: &[Vec<u32>], max: u32) -> TopoType {
    let mut levels: Vec<u32> = d.iter().flatten().copied().collect();
    levels.sort();
    levels.dedup();
    if levels.len() <= 2 {
        return TopoType::Direct;
    }
    let n = d.len();
    for a in 0..n {
        for b in 0..n {
            if d[a][b] == max {
                let mesh = (0..n).any(|c| d[a][c] < max && d[c][b] < max);
                return if mesh { TopoType::GluelessMesh } else { TopoType::Backplane };
            }
        }
    }
    TopoType::Direct
}

/// Fault statistics of one task (`numa_faults`, §4.9): per node, [shared, private].
#[derive(Clone, Default)]
struct Faults {
    mem: Vec<[u64; 2]>,
    membuf: Vec<[u64; 2]>,
    /// CPU-side series (3.15+): where the task ran when it faulted, runtime-weighted.
    cpu: Vec<[u64; 2]>,
    cpubuf: Vec<[u64; 2]>,
}

/// Per-task NUMA state (`task_struct`, §4.2).
struct Task {
    pid: u32,
    proc: usize,
    runtime: u64,
    node_stamp: u64,
    scan_period: u32,
    scan_period_max: u32,
    scan_seq: u32,
    migrate_retry: u64,
    preferred: Option<usize>,
    /// `p->numa_faults` is allocated on the first fault.
    faults: Option<Faults>,
    total_faults: u64,
    /// `numa_faults_locality`: remote, local, migration failed.
    locality: [u64; 3],
    pages_migrated: u64,
    group: Option<usize>,
    migrate_deferred: u32,
    last_placement: u64,
    last_runtime: u64,
}

struct Group {
    gid: u32,
    nr_tasks: u32,
    mem: Vec<[u64; 2]>,
    cpu: Vec<[u64; 2]>,
    total: u64,
    active_nodes: u32,
    max_faults_cpu: u64,
}

impl Group {
    fn faults(&self, n: usize) -> u64 {
        self.mem[n][0] + self.mem[n][1]
    }

    fn faults_cpu(&self, n: usize) -> u64 {
        self.cpu[n][0] + self.cpu[n][1]
    }

    /// `numa_is_active_node` (4.6+).
    fn active(&self, n: usize) -> bool {
        self.faults_cpu(n) * 3 > self.max_faults_cpu
    }
}

/// 6.13 (6.4+) `vma->numab_state`.
#[derive(Clone, Copy)]
struct VmaNumab {
    next_scan: u64,
    pids_reset: u64,
    pids: [u64; 2],
    start_seq: u32,
    prev_seq: u32,
}

/// Counters of the pass in progress (for `--explain-balancing`).
#[derive(Clone, Copy, Default)]
struct PassAcc {
    windows: u64,
    marked: u64,
    local: u64,
    remote: u64,
    migrated: u64,
    moves: u64,
}

/// Per-process state (`mm_struct`).
struct Mm {
    /// `numa_next_scan` in ns; 0 = not armed yet.
    next_scan: u64,
    offset: u64,
    seq: u32,
    rss: u64,
    tids: Vec<usize>,
    /// Region indexes in address order (the VMA list).
    order: Vec<usize>,
    vmas: Vec<Option<VmaNumab>>,
    pass: PassAcc,
}

/// 3.13 per-destination migration rate-limit window (`pgdat->numabalancing_migrate_*`).
#[derive(Clone, Copy, Default)]
struct RateWindow {
    next: u64,
    nr: u64,
}

/// The balancing state of a whole run.
pub struct Numab {
    rules: &'static NumaBalancingRules,
    knobs: Balancing,
    costs: Costs,
    topo: Topo,
    tasks: Vec<Task>,
    mms: Vec<Mm>,
    groups: Vec<Group>,
    rate: Vec<RateWindow>,
    /// The thread `cpu_rq(cpu)->curr` names, per logical PU.
    curr: Vec<Option<usize>>,
    /// The CPU of each thread `curr` was worked out from (with `live`): `curr` depends on
    /// nothing else, so an epoch end where no thread moved or ended keeps it.
    curr_cpus: Vec<usize>,
    live: Vec<bool>,
    pub vmstat: Vmstat,
    cost: BalancingCost,
    passes: Vec<PassOut>,
    /// Threads moved by NUMA placement since the engine last looked (it charges their move).
    pub moved: Vec<usize>,
    /// Memory tiers, when the run has tiering (docs/tiering.md §5).
    tier: Option<TierState>,
    /// Time of the scan in progress (the access time memory tiering stores in marked pages).
    scan_now: u64,
}

/// What NUMA balancing needs of memory tiering.
struct TierState {
    toptier: Vec<bool>,
    /// `NUMA_BALANCING_MEMORY_TIERING` is set.
    tiering: bool,
    promo: Vec<crate::tiering::promote::NodePromo>,
    knobs: crate::tiering::promote::PromoKnobs,
    present: Vec<u64>,
}

fn ns(s: f64) -> u64 {
    round_ns(s * 1e9)
}

/// `x.round().max(0.0) as u64`, bit for bit, without the library call `round` is on baseline
/// x86-64 (no SSE4.1 `roundsd`): runtimes are added for every thread at every epoch end.
/// Below 2^52 the integer part converts exactly and `x - t` is the exact fraction, so
/// rounding half away from zero is `t + (fraction >= 0.5)`; NaN, negatives and large values
/// take `round` itself.
#[inline]
fn round_ns(x: f64) -> u64 {
    if (0.0..4_503_599_627_370_496.0).contains(&x) {
        // Through i64: one conversion instruction each way, where u64's takes a branch.
        let t = x as i64;
        (t + i64::from(x - t as f64 >= 0.5)) as u64
    } else {
        x.round().max(0.0) as u64
    }
}

impl Numab {
    /// `threads_of[p]`: the thread ids of process `p`; `regions`: each process's regions.
    pub fn new(
        m: &Machine,
        kernel: Kernel,
        knobs: &Balancing,
        costs: &Costs,
        threads_of: &[Vec<usize>],
        regions: &[&[Region]],
        sched: &Sched,
    ) -> Self {
        let rules = &kernel.profile().numab;
        let topo = Topo::new(m, rules);
        let n = topo.n;
        let nthreads = threads_of.iter().map(|t| t.len()).sum();
        let mut tasks = Vec::with_capacity(nthreads);
        for (proc, tids) in threads_of.iter().enumerate() {
            for &tid in tids {
                assert_eq!(tid, tasks.len());
                tasks.push(Task {
                    pid: tid as u32 + 1,
                    proc,
                    runtime: 0,
                    node_stamp: 0,
                    scan_period: knobs.scan_delay_ms,
                    scan_period_max: 0,
                    scan_seq: 0,
                    migrate_retry: 0,
                    preferred: None,
                    faults: None,
                    total_faults: 0,
                    locality: [0; 3],
                    pages_migrated: 0,
                    group: None,
                    migrate_deferred: 0,
                    last_placement: 0,
                    last_runtime: 0,
                });
            }
        }
        let mms = threads_of
            .iter()
            .zip(regions)
            .map(|(tids, regs)| {
                let mut order: Vec<usize> = (0..regs.len()).collect();
                order.sort_by_key(|&i| regs[i].vm_start);
                Mm {
                    next_scan: 0,
                    offset: 0,
                    seq: 0,
                    rss: 0,
                    tids: tids.clone(),
                    order,
                    vmas: vec![None; regs.len()],
                    pass: PassAcc::default(),
                }
            })
            .collect();
        let mut nb = Numab {
            rules,
            knobs: knobs.clone(),
            costs: costs.clone(),
            tasks,
            mms,
            groups: Vec::new(),
            rate: vec![RateWindow::default(); n],
            curr: vec![None; topo.pu_node.len()],
            curr_cpus: Vec::new(),
            live: vec![true; nthreads],
            vmstat: Vmstat::default(),
            cost: BalancingCost::default(),
            passes: Vec::new(),
            moved: Vec::new(),
            tier: None,
            scan_now: 0,
            topo,
        };
        nb.stagger_new_threads();
        nb.refresh_curr(sched);
        nb
    }

    /// `init_numa_balancing` for the threads a process's first thread creates: 6.13 (≈4.20+)
    /// staggers them by `min(task_scan_max(current), current->numa_scan_period * mm_users *
    /// NSEC_PER_MSEC) + 2 ticks`, where the first term is in ms but compared as ns (the kernel's
    /// unit mix, kept). 3.13 starts every thread at `node_stamp = 0`.
    fn stagger_new_threads(&mut self) {
        if !self.rules.stagger_new_threads {
            return;
        }
        for proc in 0..self.mms.len() {
            let tids = self.mms[proc].tids.clone();
            let Some(&parent) = tids.first() else { continue };
            let smax = self.scan_max(parent) as u64;
            for (users, &tid) in tids.iter().enumerate().skip(1) {
                let by_users = (self.tasks[parent].scan_period as u64 * users as u64 * MS) as u32 as u64;
                self.tasks[tid].node_stamp = smax.min(by_users) + 2 * TICK_NS;
            }
        }
    }

    /// The machine's memory tiers (docs/tiering.md §2), for memory-tiering mode and the
    /// `node_is_toptier()` tests of the scanner and the fault path.
    pub fn set_tiers(&mut self, tiers: &crate::tiering::Tiers, m: &Machine) {
        use crate::tiering::promote::{NodePromo, PromoKnobs};
        let k = &self.knobs;
        self.tier = Some(TierState {
            toptier: tiers.toptier.clone(),
            tiering: k.memory_tiering,
            promo: vec![NodePromo::default(); m.nodes.len()],
            knobs: PromoKnobs::new(k.hot_threshold_ms, k.promote_rate_limit_mbps, k.scan_period_max_ms),
            present: m.nodes.iter().map(|x| x.local_memory_bytes / 4096).collect(),
        });
    }

    /// Memory-tiering mode and the page's node is not a top tier: its `last_cpupid` holds an
    /// access time (`folio_use_access_time()`).
    fn use_access_time(&self, node: usize) -> bool {
        self.tier.as_ref().is_some_and(|t| t.tiering && !t.toptier[node])
    }

    fn is_toptier(&self, node: usize) -> bool {
        self.tier.as_ref().is_none_or(|t| t.toptier[node])
    }

    /// A first touch allocated `pages` base pages to process `proc` (its RSS).
    pub fn on_alloc(&mut self, proc: usize, pages: u64) {
        self.mms[proc].rss += pages;
    }

    /// CPU time a thread consumed in the epoch that just ended.
    pub fn add_runtime(&mut self, tid: usize, s: f64) {
        self.tasks[tid].runtime += ns(s);
    }

    /// Which threads still exist (finished threads leave the run queues and `mm_users`).
    pub fn set_live(&mut self, live: &[bool], sched: &Sched) {
        if self.live != live {
            self.live.copy_from_slice(live);
            self.curr_cpus.clear();
        }
        self.refresh_curr(sched);
    }

    /// Recompute `rq->curr` for every CPU after threads moved.
    pub fn refresh_curr(&mut self, sched: &Sched) {
        if self.curr_cpus == sched.cpu {
            return;
        }
        self.curr_cpus.clone_from(&sched.cpu);
        self.curr.iter_mut().for_each(|c| *c = None);
        for (tid, &cpu) in sched.cpu.iter().enumerate() {
            if self.live[tid] && self.curr[cpu].is_none() {
                self.curr[cpu] = Some(tid);
            }
        }
    }

    /// The load balancer moved threads (`(tid, previous cpu)`): 6.13's `update_scan_period`
    /// resets the scan period of a task pulled across nodes (4.19+).
    pub fn after_balance(&mut self, moved: &[(usize, usize)], sched: &Sched) {
        for &(tid, src) in moved {
            self.update_scan_period(tid, src, sched.cpu[tid]);
        }
        self.refresh_curr(sched);
    }

    fn update_scan_period(&mut self, tid: usize, src_cpu: usize, dst_cpu: usize) {
        let (src, dst) = (self.topo.pu_node[src_cpu], self.topo.pu_node[dst_cpu]);
        let t = &self.tasks[tid];
        if !self.rules.reset_scan_on_move || t.faults.is_none() || src == dst {
            return;
        }
        if t.scan_seq != 0 && (Some(dst) == t.preferred || (t.preferred.is_some() && Some(src) != t.preferred)) {
            return;
        }
        self.tasks[tid].scan_period = self.scan_start(tid);
    }

    /// The per-thread `/proc/PID/task/TID/sched` NUMA lines.
    pub fn thread_sched(&self, tid: usize, sched: &Sched) -> ThreadSched {
        let t = &self.tasks[tid];
        let g = t.group.map(|g| &self.groups[g]);
        let faults = (0..self.topo.n)
            .map(|x| {
                let (tf, gf) = (t.faults.as_ref().map_or([0, 0], |f| f.mem[x]), g.map_or([0, 0], |g| g.mem[x]));
                NodeFaults {
                    node: self.topo.node_os[x],
                    task_private: tf[1],
                    task_shared: tf[0],
                    group_private: gf[1],
                    group_shared: gf[0],
                }
            })
            .collect();
        ThreadSched {
            numa_scan_seq: self.mms[t.proc].seq,
            numa_pages_migrated: t.pages_migrated,
            numa_preferred_nid: t.preferred.map_or(-1, |x| self.topo.node_os[x] as i64),
            total_numa_faults: t.total_faults,
            current_node: self.topo.node_os[self.topo.pu_node[sched.cpu[tid]]],
            numa_group_id: g.map_or(0, |g| g.gid),
            numa_scan_period_ms: t.scan_period,
            faults,
        }
    }

    pub fn cost(&self) -> BalancingCost {
        self.cost.clone()
    }

    pub fn take_passes(&mut self) -> Vec<PassOut> {
        std::mem::take(&mut self.passes)
    }

    /// `reset_ptenuma_scan`: a pass over the address space is complete.
    fn complete_pass(&mut self, proc: usize, tid: usize, now: u64) {
        let mm = &mut self.mms[proc];
        mm.seq += 1;
        mm.offset = 0;
        let acc = std::mem::take(&mut mm.pass);
        if self.knobs.explain {
            self.passes.push(PassOut {
                pid: proc as u32 + 1,
                pass: mm.seq,
                t_s: now as f64 * 1e-9,
                period_ms: self.tasks[tid].scan_period,
                windows: acc.windows,
                pages_marked: acc.marked,
                faults_local: acc.local,
                faults_remote: acc.remote,
                pages_migrated: acc.migrated,
                task_moves: acc.moves,
            });
        }
    }
}

/// True if the effective policy of a region carries `MPOL_F_MOF` (§3.1): the system default,
/// and (6.13, 5.12+) bind with `MPOL_F_NUMA_BALANCING`. A VMA policy of mode default defers to
/// the task policy, as `mbind(MPOL_DEFAULT)` removes the VMA's own.
pub fn effective_policy<'a>(region: &'a Region, task: &'a Resolved) -> &'a Resolved {
    match &region.policy {
        Some(p) if p.mode != numalab_model::PolicyMode::Default => p,
        _ => task,
    }
}

fn policy_mof(p: &Resolved, rules: &NumaBalancingRules) -> bool {
    use numalab_model::PolicyMode;
    match p.mode {
        PolicyMode::Default => true,
        PolicyMode::Bind => p.numa_balancing && rules.bind_numa_balancing,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::round_ns;

    /// Runtimes and clocks in ns must be what `round` gives, or balancing's timeline changes.
    #[test]
    fn round_ns_is_round_clamped_at_zero() {
        let halves = [0.5, 1.5, 2.5, 1e9 + 0.5, 4_503_599_627_370_495.5];
        let near = [0.499_999_999_999_999_94, 0.500_000_000_000_000_1, 2.499_999_999_999_999_6, 1e6 - 1e-10];
        let odd = [0.0, -0.0, -0.4, -0.5, -3.7, f64::NAN, f64::INFINITY, 4_503_599_627_370_496.0, 1e19, 1e300];
        for x in halves.into_iter().chain(near).chain(odd).chain((0..10_000).map(|i| i as f64 * 0.123_456_789)) {
            assert_eq!(round_ns(x), x.round().max(0.0) as u64, "{x}");
        }
    }
}
