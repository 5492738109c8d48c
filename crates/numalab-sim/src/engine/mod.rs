//! The run loop (docs/contention.md §1): time advances in epochs; in each epoch the contention
//! solver turns every thread's recent memory mix into a cost per line for each node, then each
//! thread works through its page visits on its own clock until the epoch ends, a barrier stops
//! it, or its program ends. First writes allocate pages under the policy in force.

pub mod alloc;
pub(crate) mod check;
mod host;
mod phases;
mod premap;
mod procs;
mod team;
mod turns;
mod visits;

use numalab_model::Machine;

use crate::alloc::Allocator;
use crate::contention::{Demand, Solver};
use crate::error::SimError;
use crate::input::{Placement, SimConfig, Sync, WorkloadSpec};
use crate::mempolicy::Resolved;
use crate::numa_balancing::{MmView, Numab, World};
use crate::output::{Recorder, SimOutput};
use crate::pages::{self, Region, NONE};
use crate::pattern::{Sweep, Visit};
use crate::rng::Rng;
use crate::sched::Sched;

/// Slices per epoch: threads run round-robin slice by slice, so first touches made in the same
/// epoch by different threads are ordered by time to within a slice.
const SLICES: usize = 2;
/// Rounds per slice in which every thread advances a little (see `run_slice`).
const ROUNDS: usize = 2;
const DT_MIN_S: f64 = 20e-6;
const DT_MAX_S: f64 = 5e-3;
/// Page visits the fastest thread should make per epoch (amortises the contention solve).
const VISITS_PER_EPOCH: f64 = 2048.0;
/// Epochs per phase at least (a phase changes every thread's mix at once).
const PHASE_EPOCHS: f64 = 4.0;
/// Longest run of samples the hot path serves in one step.
const RUN_PAGES: u64 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Its process has not started yet (a staggered co-run): not placed, not runnable.
    Pending,
    Running,
    /// Arrived at the barrier ending phase execution `seq`.
    Waiting(u64),
    Done,
}

struct Thread {
    pid: usize,
    /// Index inside its process (the OpenMP thread number).
    idx: usize,
    clock: f64,
    state: State,
    /// Phase executions completed, and the program position of the next.
    seq: u64,
    step: usize,
    rep: u64,
    pos: usize,
    sweeps: Vec<Sweep>,
    /// The current phase is a pipeline (its visits go one by one through the general path).
    pipelined: bool,
    /// A visit taken from the sweeps but not yet served (its node had no bandwidth left).
    pending: Option<Visit>,
    compute_left_s: f64,
    compute_per_line_s: f64,
    /// Seconds per line of the phase's dependent add chain (part of `compute_per_line_s`).
    chain_per_line_s: f64,
    /// The current phase's instructions per DRAM line (its descriptor's `instructions` over its
    /// lines), `None` where it does not say: the window's lines in flight (`Engine::mlp`).
    instructions_per_line: Option<f64>,
    lines_total: f64,
    rng: Rng,
    /// Lines read / written per node during this epoch (the next epoch's mix).
    mix_rd: Vec<f64>,
    mix_wr: Vec<f64>,
    prev_rd: Vec<f64>,
    prev_wr: Vec<f64>,
    /// Estimated mix of the current phase (from sampled page entries at its start).
    est_rd: Vec<f64>,
    est_wr: Vec<f64>,
    /// The sums of `prev_rd` then `prev_wr`, and of `est_rd` then `est_wr`, worked out when
    /// they were set (`Engine::solve` reads them every epoch).
    prev_lines: f64,
    est_lines: f64,
    /// Bumped whenever `prev_*` or `est_*` change: the thread's row of the solver's demands is
    /// refilled only when what it was filled from changed (`Engine::solve`).
    mix_version: u64,
    /// `Engine::mlp` for the current phase and its number of SMT sharers (`u32::MAX`: to be
    /// worked out); a phase start resets it.
    mlp: (u32, f64),
    /// The cheapest cost per line (`engine::visits::fast_visits`) among the nodes the thread
    /// used last epoch or expects to, kept for the epoch (NaN: to be worked out). Its inputs
    /// change only between epochs and when a phase starts, which reset it.
    cheapest_s: f64,
    /// Nodes the thread's last run of page visits reached: after a run over several, every
    /// node's cap is worked out before the next (`fast_visits`).
    spread: usize,
    /// Phase execution counter at the start of the last epoch.
    epoch_seq: u64,
    busy_s: f64,
    visits: u64,
    migrations: u64,
    finish_s: f64,
    /// Time spent in `timed` program steps, and the clock at the end of the last phase
    /// (`phases::advance`): the main thread's is what the program's own timer reads.
    timed_s: f64,
    mark_s: f64,
}

struct Process {
    /// Its group in the co-run, its first thread and thread count (`crate::corun`).
    slot: crate::corun::Slot,
    start_s: f64,
    regions: Vec<Region>,
    task_policy: Resolved,
    arrived: u64,
    /// Total lines of each phase over all threads (to split its compute cycles).
    phase_lines: Vec<Option<f64>>,
}

pub struct Engine<'a> {
    m: &'a Machine,
    groups: Vec<crate::corun::Group<'a>>,
    cfg: &'a SimConfig,
    alloc: Allocator,
    solver: Solver,
    /// The solver's input, kept from epoch to epoch (`Engine::solve`), and what each thread's
    /// row was filled from.
    demands: Vec<Demand>,
    rows: Vec<RowSrc>,
    /// Last epoch's costs per line, refilled in place by the solver.
    costs: Vec<Vec<f64>>,
    /// Cache instances per PU (docs/contention.md §4.1).
    caches: crate::cache::CacheMap,
    sched: Sched,
    procs: Vec<Process>,
    threads: Vec<Thread>,
    stride: u64,
    now: f64,
    rec: Recorder,
    oom: Option<String>,
    /// Lines each node / link direction may still carry in the current slice: the hard cap
    /// that keeps every resource within its bandwidth even when the solver's mix lags.
    budget_node: Vec<f64>,
    budget_link: Vec<[f64; 2]>,
    /// Base pages per node, kept up to date on every allocation.
    pages_node: Vec<u64>,
    scratch: Scratch,
    /// Set when something happened in a pass that may let other threads go on.
    woke: bool,
    /// Times a thread had to wait for the next slice because a node or link was saturated.
    budget_waits: u64,
    epochs: u64,
    samples: u64,
    /// Automatic NUMA balancing, when enabled.
    numab: Option<Numab>,
    /// Reclaim by demotion and memory tiers (docs/tiering.md), when demotion or tiering is on.
    tiering: Option<crate::tiering::Demotion>,
    /// THP fault fallback and khugepaged (docs/allocation.md §3.2).
    thp: crate::khugepaged::Thp,
    /// The latency-balanced allocation policy (docs/allocation.md §12), when chosen.
    latbal: Option<crate::latbal::LatBal>,
    /// Dynamic schedules' chunk orders by (process, phase execution, chunks), most recent last.
    chunk_orders: std::cell::RefCell<Vec<ChunkOrder>>,
    /// What the C library's allocations wrote (docs/allocation.md §3.5).
    alloc_out: Vec<alloc::AllocRegionOut>,
    /// Threads on each CPU, running or waiting at a barrier (`turns.rs`).
    on_cpu: Vec<Vec<usize>>,
    /// The host running the guest's vCPUs and which it runs this epoch (`crate::vhost`), when
    /// the run simulates one.
    host: Option<(crate::vhost::HostRun, Vec<bool>)>,
}

/// What a thread's row of the solver's demands was filled from (`Engine::solve`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum RowSrc {
    Unset,
    /// Not running: no demand.
    Zero,
    /// Its last epoch's mix (`prev`) or its phase's estimate, as of `Thread::mix_version`.
    Mix {
        prev: bool,
        version: u64,
    },
    /// No mix yet: all of it read from its CPU's node.
    Local(usize),
}

/// A dynamic schedule's chunk order, by (process, phase execution, chunks).
type ChunkOrder = ((usize, u64, u64), std::rc::Rc<Vec<u64>>);

/// Per-node buffers the hot loop reuses.
struct Scratch {
    /// Per node, the samples the current run took there and the most it may take (`[count,
    /// cap]`, side by side: the hot loop reads both for every sample).
    slots: Vec<[u32; 2]>,
    /// Per node, what its budget and those of the links on the way have left, when a run works
    /// out every node's cap up front.
    rems: Vec<f64>,
    /// The link directions between CPU node c and memory node k, both ways (`routes[k][c]`
    /// then `routes[c][k]`, none for k = c), as indices into the flattened link budgets:
    /// `cap_links[lo..hi]` with `[lo, mid, hi] = pair_hops[c * n + k]`, the hops back to the CPU
    /// (read data) in `lo..mid` and out (written data) in `mid..hi`. The hot loop reads them for
    /// every node a run reaches, and nested route vectors cost more to walk than the work.
    cap_links: Vec<u32>,
    pair_hops: Vec<[u32; 3]>,
    /// The same hops per pair, each way padded to two with the index of an infinite link
    /// budget (`Engine::budget_link`, past the machine's links), as u8 indices into the link
    /// budgets' `LINK_FLAT` entries: `[[back, back], [out, out]]`. A node's cap is then the
    /// minimum of five budgets with no loop (the minimum does not depend on the order or on
    /// repeats), and a run takes from each hop with no loop (a pad's budget is never read
    /// otherwise). Empty when a route has more than two hops or the machine more links than
    /// the table holds (the loops over `cap_links` then).
    hops22: Vec<[[u8; 2]; 2]>,
}

/// Link budgets (`[f64; 2]` per link) of the fixed-size table the padded hops index:
/// `LINK_FLAT / 2 - 1` links at most, the last entry being the padding.
pub(super) const LINK_FLAT: usize = 256;

impl Scratch {
    fn new(m: &Machine) -> Self {
        let n = m.nodes.len();
        let (mut cap_links, mut pair_hops) = (Vec::new(), Vec::with_capacity(n * n));
        let flat = |h: &numalab_model::Hop| h.link * 2 + h.dir as u32;
        for c in 0..n {
            for k in 0..n {
                let lo = cap_links.len() as u32;
                if k != c {
                    cap_links.extend(m.routes[k][c].iter().map(flat));
                }
                let mid = cap_links.len() as u32;
                if k != c {
                    cap_links.extend(m.routes[c][k].iter().map(flat));
                }
                pair_hops.push([lo, mid, cap_links.len() as u32]);
            }
        }
        let pad = 2 * m.links.len();
        let mut hops22 = Vec::with_capacity(n * n);
        for &[lo, mid, hi] in &pair_hops {
            let (back, out) = (&cap_links[lo as usize..mid as usize], &cap_links[mid as usize..hi as usize]);
            if back.len() > 2 || out.len() > 2 || pad + 2 > LINK_FLAT {
                hops22.clear();
                break;
            }
            let mut h = [[pad as u8; 2]; 2];
            for (way, hops) in h.iter_mut().zip([back, out]) {
                way.iter_mut().zip(hops).for_each(|(x, &l)| *x = l as u8);
            }
            hops22.push(h);
        }
        Scratch { slots: vec![[0; 2]; n], rems: vec![0.0; n], cap_links, pair_hops, hops22 }
    }
}

impl<'a> Engine<'a> {
    pub fn new(m: &'a Machine, w: &'a WorkloadSpec, p: &'a Placement, cfg: &'a SimConfig) -> Result<Self, SimError> {
        let group = crate::corun::Group { workload: w, placement: p, start_s: 0.0, thp_madvised: &cfg.thp_madvised };
        Self::with_groups(m, vec![group], cfg)
    }

    /// A co-run: every group's processes in one run (`crate::corun`).
    pub fn with_groups(
        m: &'a Machine,
        groups: Vec<crate::corun::Group<'a>>,
        cfg: &'a SimConfig,
    ) -> Result<Self, SimError> {
        // Before anything is allocated: values in range, and the engine's own memory bounded.
        crate::corun::check(&groups).map_err(SimError::Input)?;
        for g in &groups {
            check::inputs(m, g.workload, g.placement, cfg)?;
        }
        if groups.len() > 1 {
            crate::corun::check_totals(m, &groups, cfg).map_err(SimError::Input)?;
        }
        let slots = crate::corun::slots(&groups);
        let nthreads: usize = slots.iter().map(|s| s.threads).sum();
        let sched_procs: Vec<(&Placement, usize)> =
            slots.iter().map(|s| (groups[s.group].placement, s.threads)).collect();
        let mut sched = Sched::new_procs(m, &sched_procs, cfg.kernel).map_err(SimError::Input)?;
        sched.set_options(cfg.noise.then_some(cfg.seed), cfg.explain_sched);
        if let (true, Some(bg)) = (cfg.noise, &cfg.background) {
            sched.set_background(cfg.seed, bg.clone());
        }
        if cfg.vcpu_host.is_some() {
            sched.newidle_at_host_rounds();
            sched.host_stops_inside_balances(cfg.seed);
        }
        let n = m.nodes.len();
        // The C library's allocations (docs/allocation.md §3.5), once per group of identical processes.
        let allocs: Vec<_> = groups.iter().map(|g| alloc::layouts(g.workload, m.pus.len())).collect();
        let specs: Vec<_> =
            groups.iter().zip(&allocs).map(|(g, a)| a.as_deref().map(|l| alloc::specs(g.workload, l))).collect();
        let mut procs: Vec<Process> = slots
            .iter()
            .map(|&slot| {
                let g = &groups[slot.group];
                let w = g.workload;
                let specs = specs[slot.group].as_deref().unwrap_or(&w.regions);
                let pols = w.regions.iter().map(|r| r.policy.as_ref().map(|pol| Resolved::new(pol, m))).collect();
                Process {
                    slot,
                    start_s: g.start_s,
                    regions: pages::layout(specs, pols),
                    task_policy: Resolved::new(&g.placement.policy, m),
                    arrived: 0,
                    phase_lines: vec![None; w.phases.len()],
                }
            })
            .collect();
        let mut threads = Vec::with_capacity(nthreads);
        // The primary thread creates the workers one by one (docs/scheduler.md §5).
        // No parallel region, no team: a program with nothing to run starts nobody.
        let starts: Vec<Vec<f64>> = slots
            .iter()
            .map(|s| {
                let w = groups[s.group].workload;
                let runs = w.program.iter().any(|s| s.repeat > 0 && !s.phases.is_empty());
                if runs {
                    crate::openmp::start_times(s.threads)
                } else {
                    vec![0.0; s.threads]
                }
            })
            .collect();
        for (pid, start) in starts.iter().enumerate() {
            let start_s = procs[pid].start_s;
            for (idx, &offset) in start.iter().enumerate() {
                let tid = threads.len() as u64;
                let clock = start_s + offset;
                threads.push(Thread {
                    pid,
                    idx,
                    clock,
                    state: if start_s > 0.0 { State::Pending } else { State::Running },
                    seq: 0,
                    step: 0,
                    rep: 0,
                    pos: 0,
                    sweeps: Vec::new(),
                    pending: None,
                    pipelined: false,
                    compute_left_s: 0.0,
                    compute_per_line_s: 0.0,
                    chain_per_line_s: 0.0,
                    instructions_per_line: None,
                    lines_total: 0.0,
                    rng: Rng::new(cfg.seed, tid + 1),
                    mix_rd: vec![0.0; n],
                    mix_wr: vec![0.0; n],
                    prev_rd: vec![0.0; n],
                    prev_wr: vec![0.0; n],
                    est_rd: vec![0.0; n],
                    est_wr: vec![0.0; n],
                    prev_lines: 0.0,
                    est_lines: 0.0,
                    mix_version: 0,
                    mlp: (u32::MAX, 0.0),
                    cheapest_s: f64::NAN,
                    spread: 0,
                    epoch_seq: 0,
                    busy_s: 0.0,
                    visits: 0,
                    migrations: 0,
                    finish_s: 0.0,
                    timed_s: 0.0,
                    // From the exec: a timer started before the first parallel region (RWCP's EP)
                    // counts the team's creation, as the program's would.
                    mark_s: start_s,
                });
            }
        }
        // Threads come to life in order: each process's first thread, then its workers, which
        // wait in libgomp's dock until the team is complete (`team.rs`). A staggered process
        // is placed when it starts (`start_pending`).
        let mut live = vec![false; threads.len()];
        for (pid, offsets) in starts.iter().enumerate() {
            let first = procs[pid].slot.first_tid;
            if threads[first].state == State::Pending {
                continue;
            }
            let spin = cfg.spin_s(offsets.len(), sched.available_cpus);
            let team = &mut threads[first..first + offsets.len()];
            team::start(&mut sched, team, first, offsets, spin, &mut live, cfg.costs.task_move_ns * 1e-9);
        }
        let stride = (1.0 / cfg.sample_rate).round().max(1.0) as u64;
        if cfg.balancing.weighted_interleave_auto {
            let table = crate::tiering::weights::default_weights(m, true);
            for pr in &mut procs {
                let g = &groups[pr.slot.group];
                crate::tiering::weights::apply_defaults(&mut pr.task_policy, &g.placement.policy, m, &table);
                for (r, spec) in pr.regions.iter_mut().zip(&g.workload.regions) {
                    if let (Some(res), Some(pol)) = (r.policy.as_mut(), spec.policy.as_ref()) {
                        crate::tiering::weights::apply_defaults(res, pol, m, &table);
                    }
                }
            }
        }
        let tiering = crate::tiering::needed(&cfg.balancing).then(|| {
            let regions: Vec<&[Region]> = procs.iter().map(|p| p.regions.as_slice()).collect();
            crate::tiering::Demotion::new(m, &cfg.balancing, &cfg.costs, &regions)
        });
        let numab = cfg.balancing.scanning().then(|| {
            let threads_of: Vec<Vec<usize>> =
                slots.iter().map(|s| (s.first_tid..s.first_tid + s.threads).collect()).collect();
            procs.iter_mut().flat_map(|p| p.regions.iter_mut()).for_each(|r| r.enable_balancing());
            let regions: Vec<&[Region]> = procs.iter().map(|p| p.regions.as_slice()).collect();
            let mut nb = Numab::new(m, cfg.kernel, &cfg.balancing, &cfg.costs, &threads_of, &regions, &sched);
            // node_is_toptier() matters to balancing on any tiered machine, tiering mode or not.
            match tiering.as_ref() {
                Some(t) => nb.set_tiers(&t.tiers, m),
                None => {
                    let t = crate::tiering::Tiers::new(m);
                    if t.nr_tiers > 1 {
                        nb.set_tiers(&t, m);
                    }
                }
            }
            nb
        });
        let thp = {
            let regions: Vec<Vec<&Region>> = procs.iter().map(|p| p.regions.iter().collect()).collect();
            let madvised: Vec<&[bool]> = slots.iter().map(|s| groups[s.group].thp_madvised).collect();
            crate::khugepaged::Thp::new(cfg.kernel, &madvised, &regions, m.nodes.len())
        };
        let latbal = cfg.latency_balanced.map(|c| crate::latbal::LatBal::new(c, procs.len()));
        let mut engine = Engine {
            thp,
            latbal,
            m,
            groups,
            cfg,
            alloc: Allocator::new(m, cfg.kernel),
            solver: Solver::new(m),
            demands: Vec::new(),
            rows: Vec::new(),
            costs: Vec::new(),
            caches: crate::cache::CacheMap::new(m),
            sched,
            procs,
            threads,
            stride,
            now: 0.0,
            rec: Recorder::new(m, cfg.timeline_points),
            oom: None,
            budget_node: vec![0.0; m.nodes.len()],
            // More entries than links, never refilled, infinite: the padding of
            // `Scratch::hops22` (taken from but never read), in a table of `LINK_FLAT` entries
            // when the machine's links fit.
            budget_link: (0..(m.links.len() + 1).max(LINK_FLAT / 2))
                .map(|l| if l < m.links.len() { [0.0; 2] } else { [f64::INFINITY; 2] })
                .collect(),
            pages_node: vec![0; m.nodes.len()],
            woke: false,
            budget_waits: 0,
            epochs: 0,
            samples: 0,
            scratch: Scratch::new(m),
            numab,
            tiering,
            chunk_orders: Default::default(),
            alloc_out: Vec::new(),
            on_cpu: Vec::new(),
            host: cfg.vcpu_host.clone().map(|h| {
                let run = crate::vhost::HostRun::new(h, m.pus.len())
                    .with_guest_tick(1.0 / cfg.kernel.profile().sched.hz)
                    .with_seed(cfg.seed)
                    .with_wake_chain(cfg.explain_sched)
                    .with_spells(cfg.explain_sched);
                (run, vec![true; m.pus.len()])
            }),
        };
        for (g, l) in allocs.iter().enumerate() {
            if let Some(l) = l {
                let out = engine.apply_alloc(g, l);
                engine.alloc_out.extend(out);
            }
        }
        Ok(engine)
    }

    pub fn run(mut self) -> SimOutput {
        for t in 0..self.threads.len() {
            if self.threads[t].state != State::Pending {
                self.start_next_phase(t);
            }
        }
        let mut dt = DT_MIN_S;
        while self.oom.is_none() && self.threads.iter().any(|t| t.state != State::Done) {
            self.start_pending(self.now + dt);
            let live: Vec<bool> = self.threads.iter().map(Thread::live).collect();
            let background = self.sched.background(self.now, self.now + dt, &live);
            let (mut costs, mean_shares) = self.solve(&background);
            self.refresh_members();
            let shares = self.turn_shares(&mut costs, &mean_shares, &background);
            if let Some(lb) = self.latbal.as_mut() {
                lb.observe(self.now, self.now + dt, &self.solver.controller_latency_ns());
            }
            for t in &mut self.threads {
                t.epoch_seq = t.seq;
                t.cheapest_s = f64::NAN;
            }
            let end = self.now + dt;
            let (mut visits, mut busy) = (0u64, 0.0);
            // The shortest phase in progress (from last epoch's pace): epochs stay well below it,
            // so the contention solution follows phase changes.
            let mut shortest_phase = f64::INFINITY;
            for s in 1..=SLICES {
                let slice_start = self.now + dt * (s - 1) as f64 / SLICES as f64;
                let slice_end = self.now + dt * s as f64 / SLICES as f64;
                self.run_slice(slice_start, slice_end, &costs, &shares);
                if self.oom.is_some() {
                    break;
                }
            }
            self.costs = costs;
            for (tid, t) in self.threads.iter_mut().enumerate() {
                // Every entry is a count of lines (>= 0): a sum of 0 is a mix of zeros, which
                // would add nothing to the access map (most turn-takers move no line in an
                // epoch).
                let lines: f64 = t.mix_rd.iter().chain(&t.mix_wr).sum();
                if lines != 0.0 {
                    // A thread's CPU only changes between epochs, so its mix is its access-map row.
                    let cpu_node = self.sched.pu_node[self.sched.cpu[tid]];
                    self.rec.add_row(cpu_node, &t.mix_rd, &t.mix_wr);
                }
                visits += t.visits;
                // The epoch's pace by the thread's mean share of its CPU: one that takes turns ran
                // at full speed for part of the epoch and waited for the rest (`turns.rs`).
                let paced_s =
                    if shares[tid] == mean_shares[tid] { t.busy_s } else { t.busy_s * shares[tid] / mean_shares[tid] };
                busy += paced_s;
                self.samples += t.visits;
                if lines > 0.0 && t.lines_total > 0.0 {
                    shortest_phase = shortest_phase.min(t.lines_total * paced_s / lines);
                }
                if let Some(nb) = self.numab.as_mut() {
                    nb.add_runtime(tid, t.busy_s * shares[tid]);
                }
                t.visits = 0;
                t.busy_s = 0.0;
                if t.state == State::Running && t.clock < end {
                    t.clock = end; // blocked by a pipeline dependency for the rest of the epoch
                }
                // This epoch's mix becomes the previous one and the new one starts empty; both
                // empty already, nothing changes.
                if lines != 0.0 || t.prev_lines != 0.0 {
                    std::mem::swap(&mut t.mix_rd, &mut t.prev_rd);
                    std::mem::swap(&mut t.mix_wr, &mut t.prev_wr);
                    if t.prev_lines != 0.0 {
                        t.mix_rd.iter_mut().for_each(|v| *v = 0.0);
                        t.mix_wr.iter_mut().for_each(|v| *v = 0.0);
                    }
                    t.prev_lines = lines;
                    t.mix_version += 1;
                }
            }
            let host_epoch_s = self.host_max_epoch();
            self.epochs += 1;
            self.now = end;
            self.numab_epoch_end();
            self.kswapd(self.now);
            if self.thp.due(self.now) {
                let regions: Vec<&[Region]> = self.procs.iter().map(|p| p.regions.as_slice()).collect();
                self.thp.tick(self.now, &mut self.alloc, &regions);
            }
            match (&self.tiering, &self.numab) {
                // Demotion counts live beside balancing's: the timeline carries both.
                (Some(t), nb) => {
                    let mut v = nb.as_ref().map(|nb| nb.vmstat.clone()).unwrap_or_default();
                    (v.pgdemote_kswapd, v.pgdemote_direct) = (t.pgdemote_kswapd, t.pgdemote_direct);
                    self.rec.epoch_end(self.now, &self.pages_node, Some(&v));
                }
                (None, nb) => self.rec.epoch_end(self.now, &self.pages_node, nb.as_ref().map(|nb| &nb.vmstat)),
            }
            self.rebalance();
            // Epochs as long as VISITS_PER_EPOCH unsampled visits, whatever the sample rate.
            let per_epoch = VISITS_PER_EPOCH / self.stride as f64;
            let by_visits = if visits > 0 { per_epoch * busy / visits as f64 } else { DT_MAX_S };
            dt = by_visits.min(shortest_phase / PHASE_EPOCHS).clamp(DT_MIN_S, DT_MAX_S).min(host_epoch_s);
        }
        // A run stopped early (out of memory) reports how far each thread got.
        for t in self.threads.iter_mut().filter(|t| t.state != State::Done) {
            let w = self.groups[self.procs[t.pid].slot.group].workload;
            t.finish_s = t.clock;
            if w.program.get(t.step).is_some_and(|s| s.timed) {
                t.timed_s += t.clock - t.mark_s;
            }
        }
        let processes = self.process_outputs();
        let pages = self.pages_node.clone();
        let threads_out = self
            .threads
            .iter()
            .enumerate()
            .map(|(tid, t)| {
                let cpu = self.sched.cpu[tid];
                (t.pid, self.sched.pu_os[cpu], self.m.nodes[self.sched.pu_node[cpu]].os_index, t.finish_s, t.migrations)
            })
            .collect();
        let sched_out = self.sched_outputs();
        let mut numab = self.numab.take();
        let sched_lines: Vec<_> = numab
            .as_ref()
            .map(|nb| (0..self.threads.len()).map(|tid| nb.thread_sched(tid, &self.sched)).collect())
            .unwrap_or_default();
        let mut out = self.rec.finish(
            self.m,
            processes,
            threads_out,
            pages,
            self.alloc,
            self.oom,
            self.stride,
            self.cfg.sample_rate,
            [self.budget_waits, self.epochs, self.samples],
        );
        sched_out.apply(&mut out);
        let t = &self.thp;
        let thp_counts = [t.fault_alloc, t.fault_fallback, t.collapse_alloc, t.collapse_alloc_failed];
        out.thp = self.thp.report();
        out.alloc = std::mem::take(&mut self.alloc_out);
        out.latency_balanced = self.latbal.take().map(crate::latbal::LatBal::report);
        if let Some(t) = self.tiering.as_ref() {
            out.vmstat.pgdemote_kswapd = t.pgdemote_kswapd;
            out.vmstat.pgdemote_direct = t.pgdemote_direct;
        }
        // The machine's tiers, whatever the run switched on (a report plots pages per tier).
        let tiers = self.tiering.as_ref().map_or_else(|| crate::tiering::Tiers::new(self.m), |t| t.tiers.clone());
        if tiers.nr_tiers > 1 {
            out.memory_tiers = tiers.tier.iter().zip(&tiers.has_memory).map(|(&x, &m)| m.then_some(x)).collect();
        }
        if let Some(nb) = numab.as_mut() {
            let demoted = (out.vmstat.pgdemote_kswapd, out.vmstat.pgdemote_direct);
            out.vmstat = nb.vmstat.clone();
            (out.vmstat.pgdemote_kswapd, out.vmstat.pgdemote_direct) = demoted;
            out.balancing_passes = nb.take_passes();
            out.balancing_cost = Some(nb.cost());
            for (t, s) in out.threads.iter_mut().zip(sched_lines) {
                t.sched = Some(s);
            }
        }
        let v = &mut out.vmstat;
        [v.thp_fault_alloc, v.thp_fault_fallback, v.thp_collapse_alloc, v.thp_collapse_alloc_failed] = thp_counts;
        out
    }

    /// Balancing at an epoch end: every running thread's `task_tick_numa` and the scans it
    /// queues, each charged to its scanning thread.
    fn numab_epoch_end(&mut self) {
        let Some(nb) = self.numab.as_mut() else { return };
        let live: Vec<bool> = self.threads.iter().map(Thread::live).collect();
        let running: Vec<bool> = self.threads.iter().map(|t| t.state == State::Running).collect();
        nb.set_live(&live, &self.sched);
        let mut views: Vec<MmView> =
            self.procs.iter_mut().map(|p| MmView { regions: &mut p.regions, task_policy: &p.task_policy }).collect();
        let mut world = World { alloc: &mut self.alloc, sched: &mut self.sched, pages_node: &mut self.pages_node };
        for (tid, cost_s) in nb.tick(&mut world, &mut views, self.now, &running) {
            self.threads[tid].clock += cost_s;
        }
    }

    /// kswapd of every node woken or still awake, caught up to `now_s` (docs/tiering.md §4.3):
    /// at epoch ends and before each visit on the general path.
    pub(super) fn kswapd(&mut self, now_s: f64) {
        let Some(t) = self.tiering.as_mut() else {
            // Nothing reclaims anonymous memory without demotion: forget the wake-ups.
            if self.alloc.wake.iter().any(|&x| x) {
                self.alloc.wake.iter_mut().for_each(|x| *x = false);
            }
            return;
        };
        if !t.kswapd_pending(&self.alloc) {
            return;
        }
        let mut space: crate::tiering::demote::Space =
            self.procs.iter_mut().map(|p| p.regions.as_mut_slice()).collect();
        t.kswapd_until(&mut self.alloc, &mut space, &mut self.pages_node, now_s);
    }

    /// Cost per line for every running thread from its last epoch's memory mix.
    /// `background`: the share of each CPU taken by background work this epoch.
    fn solve(&mut self, background: &[f64]) -> (Vec<Vec<f64>>, Vec<f64>) {
        let n = self.m.nodes.len();
        let mut nr = vec![0usize; self.sched.cpu.len().max(self.m.pus.len())];
        for (tid, t) in self.threads.iter().enumerate() {
            if t.state == State::Running {
                nr[self.sched.cpu[tid]] += 1;
            }
        }
        // PUs of each core with a running thread: SMT siblings share the core's fill buffers.
        let mut busy_pus = vec![0u32; self.m.cores.len()];
        for (pu, _) in nr.iter().enumerate().filter(|(_, &k)| k > 0) {
            if let Some(u) = self.m.pus.get(pu) {
                busy_pus[u.core as usize] += 1;
            }
        }
        // Last epoch's demands are refilled in place: their per-node vectors are not allocated
        // again every epoch.
        let mut demands = std::mem::take(&mut self.demands);
        self.rows.resize(self.threads.len(), RowSrc::Unset);
        demands.resize_with(self.threads.len(), || Demand {
            cpu_node: 0,
            mlp: 1.0,
            compute_per_line: 0.0,
            chain_per_line: 0.0,
            cpu_share: 1.0,
            rd: vec![0.0; n],
            wr: vec![0.0; n],
        });
        for (tid, ((t, d), row)) in
            self.threads.iter_mut().zip(demands.iter_mut()).zip(self.rows.iter_mut()).enumerate()
        {
            let cpu = self.sched.cpu[tid];
            let node = self.sched.pu_node[cpu];
            // Last epoch's observed mix if the thread stayed in one phase, else the estimate
            // for the phase it is in now.
            let prev = t.prev_lines > 0.0 && t.seq == t.epoch_seq;
            let total = if prev { t.prev_lines } else { t.est_lines };
            let src = if t.state != State::Running {
                RowSrc::Zero
            } else if total > 0.0 {
                RowSrc::Mix { prev, version: t.mix_version }
            } else {
                RowSrc::Local(node)
            };
            // A row filled from the same mix holds the same quotients already (most threads
            // waiting for their turn did not run last epoch).
            if *row != src {
                *row = src;
                let (src_rd, src_wr) = if prev { (&t.prev_rd, &t.prev_wr) } else { (&t.est_rd, &t.est_wr) };
                match src {
                    RowSrc::Mix { .. } => {
                        d.rd.iter_mut().zip(src_rd).for_each(|(o, v)| *o = v / total);
                        d.wr.iter_mut().zip(src_wr).for_each(|(o, v)| *o = v / total);
                    }
                    RowSrc::Local(_) => {
                        d.rd.fill(0.0);
                        d.rd[node] = 1.0;
                        d.wr.fill(0.0);
                    }
                    RowSrc::Zero | RowSrc::Unset => {
                        d.rd.fill(0.0);
                        d.wr.fill(0.0);
                    }
                }
            }
            d.cpu_node = node;
            let sharers = self.m.pus.get(cpu).map_or(1, |u| busy_pus[u.core as usize]);
            if t.mlp.0 != sharers {
                t.mlp = (sharers, Self::mlp_of(self.m, self.groups[self.procs[t.pid].slot.group].workload, t, sharers));
            }
            d.mlp = t.mlp.1;
            d.compute_per_line = t.compute_per_line_s;
            d.chain_per_line = t.chain_per_line_s;
            // While background work is runnable it shares the CPU fairly with the threads.
            d.cpu_share = {
                let n = nr[cpu].max(1) as f64;
                (1.0 - background[cpu]) / n + background[cpu] / (n + 1.0)
            };
        }
        let shares = demands.iter().map(|d| d.cpu_share).collect();
        let mut costs = std::mem::take(&mut self.costs);
        self.solver.solve(&demands, &mut costs);
        self.demands = demands;
        (costs, shares)
    }

    /// Misses a thread keeps in flight: what its phase's address streams keep in flight, or the
    /// loads of the core's instruction window where the machine measured one and the phase says
    /// its instructions, up to its share of the core's fill buffers (`sharers` SMT threads run
    /// on the core), or fewer if its phase says so (docs/contention.md §4).
    fn mlp_of(m: &Machine, w: &WorkloadSpec, t: &Thread, sharers: u32) -> f64 {
        let phase = w.program.get(t.step).and_then(|s| s.phases.get(t.pos)).map(|&p| &w.phases[p]);
        let streams = phase.map_or(1, |p| p.accesses.len());
        let core_mlp = m.cores.first().map_or(10.0, |c| c.lines_in_flight(streams, t.instructions_per_line))
            / sharers.max(1) as f64;
        phase.and_then(|p| p.mlp).map_or(core_mlp, |m| m.min(core_mlp)).max(1.0)
    }

    fn current_phase(&self, t: &Thread) -> Option<usize> {
        self.wl(t.pid).program.get(t.step).and_then(|s| s.phases.get(t.pos)).copied()
    }

    /// The workload process `pid` runs.
    fn wl(&self, pid: usize) -> &'a WorkloadSpec {
        self.groups[self.procs[pid].slot.group].workload
    }

    fn rebalance(&mut self) {
        // Runnable: running, or spinning at a barrier; a thread asleep on its futex is not.
        let spin = self.spin_s();
        let live: Vec<bool> =
            self.threads.iter().map(|t| t.state == State::Running || self.spinning(t, self.now, spin)).collect();
        let before = self.numab.is_some().then(|| self.sched.cpu.clone());
        let moved = self.sched.balance(self.now, &live);
        self.balanced_moves(&moved, before);
    }

    /// The costs of the threads a balance `moved` (their CPUs `before` it, kept for NUMA
    /// balancing only).
    fn balanced_moves(&mut self, moved: &[usize], before: Option<Vec<usize>>) {
        for &tid in moved {
            let t = &mut self.threads[tid];
            t.migrations += 1;
            t.clock += self.cfg.costs.task_move_ns * 1e-9;
        }
        if let (Some(nb), Some(before)) = (self.numab.as_mut(), before) {
            let from: Vec<(usize, usize)> = moved.iter().map(|&t| (t, before[t])).collect();
            nb.after_balance(&from, &self.sched);
        }
    }
}

impl Engine<'_> {
    /// Per thread: first node, time away from it, CPU history; the decisions if asked.
    fn sched_outputs(&self) -> SchedOutputs {
        let s = &self.sched;
        let node_os = |cpu: usize| self.m.nodes[s.pu_node[cpu]].os_index;
        let threads = (0..self.threads.len())
            .map(|tid| {
                let hist = &s.history[tid];
                let first = hist.first().map(|&(_, c)| node_os(c));
                let run = self.threads[tid].finish_s;
                let away = if run > 0.0 { (100.0 * s.away_s[tid] / run).min(100.0) } else { 0.0 };
                (first, away, hist.iter().map(|&(ts, c)| (ts, s.pu_os[c], node_os(c))).collect())
            })
            .collect();
        let events = s
            .log
            .iter()
            .map(|e| crate::output::SchedEventOut {
                t_s: e.t_s,
                tid: e.tid as u32 + 1,
                from_cpu: e.from.map(|c| s.pu_os[c]),
                to_cpu: s.pu_os[e.to],
                from_node: e.from.map(node_os),
                to_node: node_os(e.to),
                path: e.path.to_string(),
                level: e.level.clone(),
                why: e.why.clone(),
            })
            .collect();
        // Only with the decisions: a new field in every document would change the goldens.
        let rq = if self.cfg.explain_sched { s.rq_stats() } else { None };
        let cpus = if self.cfg.explain_sched {
            let end = self.threads.iter().map(|t| t.finish_s).fold(0.0, f64::max);
            s.cpu_schedstat(end)
                .into_iter()
                .enumerate()
                .map(|(c, (busy, goidle))| {
                    let th = self.host.as_ref().map(|(host, _)| host.threads()[c]);
                    let bql = self.host.as_ref().and_then(|(host, _)| host.bql_stats()).map(|b| b[c]);
                    let (domains, gate) = s.lb_schedstat(c);
                    crate::output::SchedCpuOut {
                        cpu: s.pu_os[c],
                        node: node_os(c),
                        rq_cpu_time_s: busy,
                        sched_goidle: goidle,
                        host_s: self.host.as_ref().map(|(host, _)| host.received_s()[c]),
                        host_wait_s: th.map(|t| t.wait_s),
                        host_slices: th.map(|t| t.slices),
                        host_voluntary: th.map(|t| t.voluntary),
                        host_involuntary: th.map(|t| t.involuntary),
                        host_preempted_wait_s: th.map(|t| t.preempted_wait_s),
                        host_preempted_waits: th.map(|t| t.preempted_waits),
                        host_tick_delays: self.host.as_ref().map(|(host, _)| host.tick_delays()[c].bins.to_vec()),
                        host_bql: bql.map(crate::output::BqlOut::from),
                        domains: domains
                            .into_iter()
                            .map(|(level, lb)| crate::output::SchedDomainOut { level, lb })
                            .collect(),
                        newidle_gate: gate,
                        rq_s: rq.as_ref().map_or([0.0; 4], |r| r.time_s[c]),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let main_loop =
            self.host.as_ref().and_then(|(host, _)| host.main_loop_thread()).filter(|_| self.cfg.explain_sched);
        let main_bql = self.host.as_ref().and_then(|(host, _)| host.bql_stats()).and_then(|b| b.last().copied());
        let main_loop = main_loop.map(|(t, run_s)| crate::output::HostThreadOut {
            host_s: run_s,
            host_wait_s: t.wait_s,
            host_slices: t.slices,
            host_voluntary: t.voluntary,
            host_involuntary: t.involuntary,
            host_bql: main_bql.map(crate::output::BqlOut::from),
        });
        let others = self.host.as_ref().map(|(host, _)| host.others_received_s().to_vec()).unwrap_or_default();
        let idle = self.host.as_ref().filter(|(host, _)| self.cfg.explain_sched && host.is_mttcg()).map(|(host, _)| {
            crate::output::HostIdleOut {
                queued_s: host.idle().queued_s,
                none_queued_s_by_halted: host.idle().none_queued_s_by_halted.clone(),
            }
        });
        let wake_chain = self.host.as_ref().and_then(|(host, _)| host.wake_chain());
        let spells = self.host.as_ref().and_then(|(host, _)| host.spells());
        let rq = rq.map(|r| crate::output::SchedRqOut {
            ticks: r.ticks.iter().map(|&([m, o], n)| [u64::from(m), u64::from(o), n]).collect(),
            imbalanced_s: r.imbalanced_s,
            span_s: r.span_s,
            episodes: r.episodes,
            since: r.since,
        });
        SchedOutputs { threads, events, cpus, main_loop, others, idle, rq, wake_chain, spells }
    }
}

type ThreadSchedOut = (Option<u32>, f64, Vec<(f64, u32, u32)>);

/// What the scheduler adds to the output (docs/scheduler.md §7).
struct SchedOutputs {
    /// Per thread: first node, percent of time away from it, (seconds, CPU, node) history.
    threads: Vec<ThreadSchedOut>,
    events: Vec<crate::output::SchedEventOut>,
    cpus: Vec<crate::output::SchedCpuOut>,
    main_loop: Option<crate::output::HostThreadOut>,
    idle: Option<crate::output::HostIdleOut>,
    /// Host seconds each of the host's other threads received (`VcpuHost::other_threads`).
    others: Vec<f64>,
    /// The workload's run queues (`sched/rq_trace.rs`), with the decisions only.
    rq: Option<crate::output::SchedRqOut>,
    /// The sleepers' wake-ups until they run (`vhost/wake_chain.rs`), `mttcg` with the decisions.
    wake_chain: Option<crate::vhost::WakeChainOut>,
    /// Each vCPU thread's host waits and runs (`vhost/spells.rs`), `mttcg` with the decisions.
    spells: Option<crate::vhost::HostSpellsOut>,
}

impl SchedOutputs {
    fn apply(self, out: &mut SimOutput) {
        for (t, (first, away, hist)) in out.threads.iter_mut().zip(self.threads) {
            t.first_node = first.unwrap_or(t.node);
            t.away_from_first_node_pct = away;
            t.cpu_history = hist;
        }
        out.sched_events = self.events;
        out.sched_cpus = self.cpus;
        out.sched_host_main_loop = self.main_loop;
        out.sched_host_others_s = self.others;
        out.sched_host_idle = self.idle;
        out.sched_rq = self.rq;
        out.sched_wake_chain = self.wake_chain;
        out.sched_host_spells = self.spells;
    }
}

fn progress(t: &Thread) -> f64 {
    if t.lines_total <= 0.0 {
        return 1.0;
    }
    t.sweeps.iter().map(|s| s.done_lines).sum::<f64>() / t.lines_total
}
