//! The run loop (design/model.md §1, §4): time advances in epochs; in each epoch the contention
//! solver turns every thread's recent memory mix into a cost per line for each node, then each
//! thread works through its page visits on its own clock until the epoch ends, a barrier stops
//! it, or its program ends. First writes allocate pages under the policy in force.

use numalab_model::Machine;

use crate::alloc::Allocator;
use crate::balancing::{MmView, Numab, World};
use crate::contention::{Demand, Solver};
use crate::error::SimError;
use crate::input::{Placement, SimConfig, Sync, WorkloadSpec};
use crate::mempolicy::Resolved;
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
    /// Phase execution counter at the start of the last epoch.
    epoch_seq: u64,
    busy_s: f64,
    visits: u64,
    migrations: u64,
    finish_s: f64,
}

struct Process {
    regions: Vec<Region>,
    task_policy: Resolved,
    arrived: u64,
    /// Total lines of each phase over all threads (to split its compute cycles).
    phase_lines: Vec<Option<Vec<f64>>>,
}

pub struct Engine<'a> {
    m: &'a Machine,
    w: &'a WorkloadSpec,
    cfg: &'a SimConfig,
    alloc: Allocator,
    solver: Solver,
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
}

/// Per-node buffers the hot loop reuses.
struct Scratch {
    count: Vec<u32>,
    cap: Vec<u32>,
}

impl<'a> Engine<'a> {
    pub fn new(m: &'a Machine, w: &'a WorkloadSpec, p: &'a Placement, cfg: &'a SimConfig) -> Result<Self, SimError> {
        w.check()?;
        if !(cfg.sample_rate > 0.0 && cfg.sample_rate <= 1.0) {
            return Err(SimError::Input(format!("sample rate must be in (0, 1], got {}", cfg.sample_rate)));
        }
        p.policy.check().map_err(|e| SimError::Input(e.0))?;
        let nproc = w.processes as usize;
        let nt = w.threads as usize;
        let mut sched = Sched::new(m, p, cfg.kernel, nproc, nt).map_err(SimError::Input)?;
        let n = m.nodes.len();
        cfg.balancing.check(cfg.kernel)?;
        let mut procs: Vec<Process> = (0..nproc)
            .map(|_| {
                let pols = w.regions.iter().map(|r| r.policy.as_ref().map(|pol| Resolved::new(pol, m))).collect();
                Process {
                    regions: pages::layout(&w.regions, pols),
                    task_policy: Resolved::new(&p.policy, m),
                    arrived: 0,
                    phase_lines: vec![None; w.phases.len()],
                }
            })
            .collect();
        let mut threads = Vec::with_capacity(nproc * nt);
        for pid in 0..nproc {
            for idx in 0..nt {
                let tid = threads.len() as u64;
                threads.push(Thread {
                    pid,
                    idx,
                    clock: 0.0,
                    state: State::Running,
                    seq: 0,
                    step: 0,
                    rep: 0,
                    pos: 0,
                    sweeps: Vec::new(),
                    pending: None,
                    pipelined: false,
                    compute_left_s: 0.0,
                    compute_per_line_s: 0.0,
                    lines_total: 0.0,
                    rng: Rng::new(cfg.seed, tid + 1),
                    mix_rd: vec![0.0; n],
                    mix_wr: vec![0.0; n],
                    prev_rd: vec![0.0; n],
                    prev_wr: vec![0.0; n],
                    est_rd: vec![0.0; n],
                    est_wr: vec![0.0; n],
                    epoch_seq: 0,
                    busy_s: 0.0,
                    visits: 0,
                    migrations: 0,
                    finish_s: 0.0,
                });
            }
        }
        // Threads come to life in order: each process's first thread, then its workers.
        let mut live = vec![false; threads.len()];
        for tid in 0..threads.len() {
            let parent = if threads[tid].idx == 0 { None } else { Some(tid - threads[tid].idx) };
            sched.place_new(tid, parent, &live);
            live[tid] = true;
        }
        let stride = (1.0 / cfg.sample_rate).round().max(1.0) as u64;
        let numab = cfg.balancing.enabled.then(|| {
            let threads_of: Vec<Vec<usize>> = (0..nproc).map(|p| (p * nt..(p + 1) * nt).collect()).collect();
            procs.iter_mut().flat_map(|p| p.regions.iter_mut()).for_each(|r| r.enable_balancing());
            let regions: Vec<&[Region]> = procs.iter().map(|p| p.regions.as_slice()).collect();
            Numab::new(m, cfg.kernel, &cfg.balancing, &cfg.costs, &threads_of, &regions, &sched)
        });
        Ok(Engine {
            m,
            w,
            cfg,
            alloc: Allocator::new(m, cfg.kernel),
            solver: Solver::new(m),
            sched,
            procs,
            threads,
            stride,
            now: 0.0,
            rec: Recorder::new(m, cfg.timeline_points),
            oom: None,
            budget_node: vec![0.0; m.nodes.len()],
            budget_link: vec![[0.0; 2]; m.links.len()],
            pages_node: vec![0; m.nodes.len()],
            woke: false,
            budget_waits: 0,
            epochs: 0,
            samples: 0,
            scratch: Scratch { count: vec![0; m.nodes.len()], cap: vec![0; m.nodes.len()] },
            numab,
        })
    }

    pub fn run(mut self) -> SimOutput {
        for t in 0..self.threads.len() {
            self.start_next_phase(t);
        }
        let mut dt = DT_MIN_S;
        while self.oom.is_none() && self.threads.iter().any(|t| t.state != State::Done) {
            let (costs, shares) = self.solve();
            for t in &mut self.threads {
                t.epoch_seq = t.seq;
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
            for (tid, t) in self.threads.iter_mut().enumerate() {
                // A thread's CPU only changes between epochs, so its mix is its access-map row.
                let cpu_node = self.sched.pu_node[self.sched.cpu[tid]];
                self.rec.add_row(cpu_node, &t.mix_rd, &t.mix_wr);
                visits += t.visits;
                busy += t.busy_s;
                self.samples += t.visits;
                let lines: f64 = t.mix_rd.iter().chain(&t.mix_wr).sum();
                if lines > 0.0 && t.lines_total > 0.0 {
                    shortest_phase = shortest_phase.min(t.lines_total * t.busy_s / lines);
                }
                if let Some(nb) = self.numab.as_mut() {
                    nb.add_runtime(tid, t.busy_s * shares[tid]);
                }
                t.visits = 0;
                t.busy_s = 0.0;
                if t.state == State::Running && t.clock < end {
                    t.clock = end; // blocked by a pipeline dependency for the rest of the epoch
                }
                std::mem::swap(&mut t.mix_rd, &mut t.prev_rd);
                std::mem::swap(&mut t.mix_wr, &mut t.prev_wr);
                t.mix_rd.iter_mut().for_each(|v| *v = 0.0);
                t.mix_wr.iter_mut().for_each(|v| *v = 0.0);
            }
            self.epochs += 1;
            self.now = end;
            self.numab_epoch_end();
            self.rec.epoch_end(self.now, &self.pages_node, self.numab.as_ref().map(|nb| &nb.vmstat));
            self.rebalance();
            // Epochs as long as VISITS_PER_EPOCH unsampled visits, whatever the sample rate.
            let per_epoch = VISITS_PER_EPOCH / self.stride as f64;
            let by_visits = if visits > 0 { per_epoch * busy / visits as f64 } else { DT_MAX_S };
            dt = by_visits.min(shortest_phase / PHASE_EPOCHS).clamp(DT_MIN_S, DT_MAX_S);
        }
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
        let mut numab = self.numab.take();
        let sched_lines: Vec<_> = numab.as_ref().map(|nb| (0..self.threads.len()).map(|tid| nb.thread_sched(tid, &self.sched)).collect()).unwrap_or_default();
        let mut out = self.rec.finish(self.m, self.w, threads_out, pages, self.alloc, self.oom, self.stride, self.cfg.sample_rate, [self.budget_waits, self.epochs, self.samples]);
        if let Some(nb) = numab.as_mut() {
            out.vmstat = nb.vmstat.clone();
            out.balancing_passes = nb.take_passes();
            out.balancing_cost = Some(nb.cost());
            for (t, s) in out.threads.iter_mut().zip(sched_lines) {
                t.sched = Some(s);
            }
        }
        out
    }

    /// Balancing at an epoch end: every running thread's `task_tick_numa` and the scans it
    /// queues, each charged to its scanning thread.
    fn numab_epoch_end(&mut self) {
        let Some(nb) = self.numab.as_mut() else { return };
        let live: Vec<bool> = self.threads.iter().map(|t| t.state != State::Done).collect();
        let running: Vec<bool> = self.threads.iter().map(|t| t.state == State::Running).collect();
        nb.set_live(&live, &self.sched);
        let mut views: Vec<MmView> = self.procs.iter_mut().map(|p| MmView { regions: &mut p.regions, task_policy: &p.task_policy }).collect();
        let mut world = World { alloc: &mut self.alloc, sched: &mut self.sched, pages_node: &mut self.pages_node };
        for (tid, cost_s) in nb.tick(&mut world, &mut views, self.now, &running) {
            self.threads[tid].clock += cost_s;
        }
    }

    /// Cost per line for every running thread from its last epoch's memory mix.
    fn solve(&mut self) -> (Vec<Vec<f64>>, Vec<f64>) {
        let n = self.m.nodes.len();
        let mut nr = vec![0usize; self.sched.cpu.len().max(self.m.pus.len())];
        for (tid, t) in self.threads.iter().enumerate() {
            if t.state == State::Running {
                nr[self.sched.cpu[tid]] += 1;
            }
        }
        let demands: Vec<Demand> = self
            .threads
            .iter()
            .enumerate()
            .map(|(tid, t)| {
                let cpu = self.sched.cpu[tid];
                let node = self.sched.pu_node[cpu];
                // Last epoch's observed mix if the thread stayed in one phase, else the estimate
                // for the phase it is in now.
                let observed: f64 = t.prev_rd.iter().chain(&t.prev_wr).sum();
                let (src_rd, src_wr) =
                    if observed > 0.0 && t.seq == t.epoch_seq { (&t.prev_rd, &t.prev_wr) } else { (&t.est_rd, &t.est_wr) };
                let total: f64 = src_rd.iter().chain(src_wr).sum();
                let (rd, wr) = if total > 0.0 {
                    (src_rd.iter().map(|v| v / total).collect(), src_wr.iter().map(|v| v / total).collect())
                } else {
                    let mut rd = vec![0.0; n];
                    rd[node] = 1.0;
                    (rd, vec![0.0; n])
                };
                let (rd, wr) = if t.state == State::Running { (rd, wr) } else { (vec![0.0; n], vec![0.0; n]) };
                Demand {
                    cpu_node: node,
                    mlp: self.mlp(t),
                    compute_per_line: t.compute_per_line_s,
                    cpu_share: 1.0 / nr[cpu].max(1) as f64,
                    rd,
                    wr,
                }
            })
            .collect();
        let shares = demands.iter().map(|d| d.cpu_share).collect();
        (self.solver.solve(&demands).cost_per_line, shares)
    }

    fn mlp(&self, t: &Thread) -> f64 {
        let phase = self.current_phase(t);
        let core_mlp = self.m.cores.first().map_or(10.0, |c| c.mlp);
        phase.and_then(|p| self.w.phases[p].mlp).unwrap_or(core_mlp).max(1.0)
    }

    fn current_phase(&self, t: &Thread) -> Option<usize> {
        self.w.program.get(t.step).and_then(|s| s.phases.get(t.pos)).copied()
    }

    /// A new round's budgets; an overdraft (at most a page per path) is carried over, unused
    /// capacity is not.
    fn refill_budgets(&mut self, round_s: f64) {
        for (b, n) in self.budget_node.iter_mut().zip(&self.m.nodes) {
            *b = b.min(0.0) + n.bandwidth_gbps * 1e9 * round_s / 64.0;
        }
        for (b, l) in self.budget_link.iter_mut().zip(&self.m.links) {
            for d in 0..2 {
                b[d] = b[d].min(0.0) + l.gbps[d] * 1e9 * round_s / 80.0;
            }
        }
    }

    /// Take `rd`/`wr` lines between CPU node `c` and memory node `n` from the slice budgets;
    /// false (nothing taken) if the node or a link on the way is already exhausted.
    fn take_budget(&mut self, c: usize, n: usize, rd: f64, wr: f64) -> bool {
        let routes = &self.m.routes;
        let link_ok = |hops: &[numalab_model::Hop], b: &[[f64; 2]]| hops.iter().all(|h| b[h.link as usize][h.dir as usize] > 0.0);
        if self.budget_node[n] <= 0.0
            || (rd > 0.0 && !link_ok(&routes[n][c], &self.budget_link))
            || (wr > 0.0 && !link_ok(&routes[c][n], &self.budget_link))
        {
            return false;
        }
        self.budget_node[n] -= rd + wr;
        for h in &routes[n][c] {
            self.budget_link[h.link as usize][h.dir as usize] -= rd;
        }
        for h in &routes[c][n] {
            self.budget_link[h.link as usize][h.dir as usize] -= wr;
        }
        true
    }

    /// Run every thread to `slice_end` in small rounds, so the slice's bandwidth budget is
    /// consumed in time order by all threads rather than first-come by thread number.
    fn run_slice(&mut self, slice_start: f64, slice_end: f64, costs: &[Vec<f64>], shares: &[f64]) {
        let nt = self.threads.len();
        for round in 1..=ROUNDS {
            let round_end = slice_start + (slice_end - slice_start) * round as f64 / ROUNDS as f64;
            self.refill_budgets((slice_end - slice_start) / ROUNDS as f64);
            // Another pass only if a barrier released threads or a pipeline moved on, since
            // only that lets a thread already visited in this round do more.
            loop {
                self.woke = false;
                for tid in 0..nt {
                    self.run_thread(tid, round_end, &costs[tid], shares[tid]);
                    if self.oom.is_some() {
                        return;
                    }
                }
                if !self.woke {
                    break;
                }
            }
        }
    }

    /// Run one thread up to `until`; true if it did anything.
    fn run_thread(&mut self, tid: usize, until: f64, cost: &[f64], share: f64) -> bool {
        let mut did = false;
        while self.threads[tid].state == State::Running && self.threads[tid].clock < until {
            if !self.threads[tid].pipelined && self.fast_visits(tid, until, cost, share) {
                did = true;
            }
            if self.threads[tid].clock >= until {
                break;
            }
            if let Some(cap) = self.pipeline_cap(tid) {
                let pred = tid - 1;
                let t = &self.threads[tid];
                if t.lines_total > 0.0 && progress(t) >= cap {
                    let pc = self.threads[pred].clock;
                    let t = &mut self.threads[tid];
                    if pc > t.clock {
                        t.clock = pc.min(until);
                        did = true;
                    }
                    // The predecessor may go on later in this round: look again then.
                    self.woke |= self.threads[pred].state == State::Running && pc < until;
                    return did;
                }
            }
            let t = &mut self.threads[tid];
            let next = t.pending.take().or_else(|| next_visit(t, self.procs[t.pid].regions.as_slice()));
            if let Some(v) = next {
                if !self.visit(tid, v, cost, share) {
                    // No bandwidth left on the way this round: wait for the next one.
                    self.budget_waits += 1;
                    let t = &mut self.threads[tid];
                    t.pending = Some(v);
                    t.clock = t.clock.max(until);
                    return true;
                }
                did = true;
                continue;
            }
            let t = &mut self.threads[tid];
            if t.compute_left_s > 0.0 {
                let need = t.compute_left_s / share;
                let avail = until - t.clock;
                if need <= avail {
                    t.clock += need;
                    t.busy_s += need;
                    t.compute_left_s = 0.0;
                } else {
                    t.clock = until;
                    t.busy_s += avail;
                    t.compute_left_s -= avail * share;
                }
                did = true;
                continue;
            }
            self.end_phase(tid);
            did = true;
        }
        did
    }

    /// The hot loop: serve visits to pages already placed whose path has bandwidth left, until
    /// `until`, the end of the phase's visits, or a visit that needs the general path (first
    /// touch, exhausted budget); that visit is left in `pending`. Runs of whole samples are
    /// served in one step. True if any visit was served.
    fn fast_visits(&mut self, tid: usize, until: f64, cost: &[f64], share: f64) -> bool {
        let cpu_node = self.sched.pu_node[self.sched.cpu[tid]];
        let Engine { threads, procs, budget_node, budget_link, m, scratch, .. } = self;
        let Scratch { count, cap } = scratch;
        let t = &mut threads[tid];
        let regions = &procs[t.pid].regions;
        let kappa = t.compute_per_line_s / share;
        let cheapest = cost.iter().copied().fold(f64::INFINITY, f64::min) + kappa;
        let mut served = false;

        while t.clock < until && t.pending.is_none() {
            let Some(i) = pick_sweep(t) else { break };
            let sweep = &mut t.sweeps[i];
            let r = &regions[sweep.region as usize];
            let rd_share = sweep.rd_share();
            let per_sample = sweep.sample_lines(r.shift);
            let room = if per_sample > 0.0 { ((until - t.clock) / (per_sample * cheapest)).ceil().max(1.0) as u64 } else { 1 };
            // Samples each node can still take this round (its memory and the links on the way):
            // a run stops there, so no resource goes over its budget by more than one sample.
            for (n, c) in cap.iter_mut().enumerate() {
                let mut rem = budget_node[n];
                if n != cpu_node {
                    for h in m.routes[n][cpu_node].iter().chain(&m.routes[cpu_node][n]) {
                        rem = rem.min(budget_link[h.link as usize][h.dir as usize]);
                    }
                }
                *c = if rem <= 0.0 { 0 } else if per_sample > 0.0 { (rem / per_sample).ceil().min(u32::MAX as f64) as u32 } else { u32::MAX };
            }
            count.iter_mut().for_each(|x| *x = 0);
            let (k, per) = sweep.extend_run(r.shift, &r.node, &r.marked, cap, room.min(RUN_PAGES), count);
            if k > 0 {
                let mut c = 0.0;
                for (n, &cnt) in count.iter().enumerate().filter(|(_, &x)| x > 0) {
                    let lines = cnt as f64 * per;
                    let (rd, wr) = (lines * rd_share, lines * (1.0 - rd_share));
                    budget_node[n] -= lines;
                    if n != cpu_node {
                        for h in &m.routes[n][cpu_node] {
                            let b = &mut budget_link[h.link as usize][h.dir as usize];
                            *b -= rd;
                        }
                        for h in &m.routes[cpu_node][n] {
                            let b = &mut budget_link[h.link as usize][h.dir as usize];
                            *b -= wr;
                        }
                    }
                    c += lines * (kappa + cost[n]);
                    t.mix_rd[n] += rd;
                    t.mix_wr[n] += wr;
                }
                t.visits += k;
                t.clock += c;
                t.busy_s += c;
                served = true;
                continue;
            }
            // A partial page, a page not placed yet, or a saturated path: the general path.
            let shift = r.shift;
            if let Some(v) = t.sweeps[i].next(shift, &mut t.rng) {
                t.pending = Some(v);
            }
        }
        served
    }

    /// For a thread in a pipelined phase: how far (fraction) it may get, given its predecessor.
    fn pipeline_cap(&self, tid: usize) -> Option<f64> {
        let t = &self.threads[tid];
        let phase = self.current_phase(t)?;
        let spec = &self.w.phases[phase];
        if spec.sync != Sync::Pipeline || t.idx == 0 {
            return None;
        }
        let pred = &self.threads[tid - 1];
        if pred.seq > t.seq || pred.state == State::Done || matches!(pred.state, State::Waiting(_)) {
            return None;
        }
        Some(progress(pred) - 1.0 / spec.pipeline_steps as f64)
    }

    /// Serve one visit; false if the bandwidth budget of its path is exhausted (nothing done).
    fn visit(&mut self, tid: usize, v: Visit, cost: &[f64], share: f64) -> bool {
        let cpu_node = self.sched.pu_node[self.sched.cpu[tid]];
        if let Some(node) = self.placed_node(tid, &v) {
            if !self.take_budget(cpu_node, node, v.lines * v.rd_share, v.lines * (1.0 - v.rd_share)) {
                return false;
            }
        }
        let Some(mut extra) = self.first_touch(tid, &v, cpu_node, share) else { return true };
        extra += self.hint_faults(tid, &v, cpu_node);
        let t = &mut self.threads[tid];
        // The access goes to the page's node after any migration its hinting fault made.
        let node = self.procs[t.pid].regions[v.region as usize].node[v.unit as usize] as usize;
        let c = v.lines * (t.compute_per_line_s / share + cost[node]) + extra;
        t.mix_rd[node] += v.lines * v.rd_share;
        t.mix_wr[node] += v.lines * (1.0 - v.rd_share);
        t.clock += c;
        t.busy_s += c;
        t.visits += 1;
        true
    }

    /// Allocate the pages of a visit not placed yet (first write). Returns the fault time, or
    /// None when the visit is fully served here (a first read maps the zero page) or ran out
    /// of memory.
    fn first_touch(&mut self, tid: usize, v: &Visit, cpu_node: usize, share: f64) -> Option<f64> {
        let t = &mut self.threads[tid];
        let proc = &mut self.procs[t.pid];
        let region = &mut proc.regions[v.region as usize];
        if region.node[v.first as usize] != NONE && region.node[v.unit as usize] != NONE {
            return Some(0.0);
        }
        if !v.write {
            // A first read maps the shared zero page: nothing allocated, no DRAM traffic.
            t.visits += 1;
            let c = v.lines * t.compute_per_line_s / share;
            t.clock += c;
            t.busy_s += c;
            return None;
        }
        let policy = region.policy.as_ref().unwrap_or(&proc.task_policy);
        let bp = region.base_pages();
        let mut extra = 0.0;
        for u in v.first..(v.first + v.units).min(region.units()) {
            if region.node[u as usize] != NONE {
                continue;
            }
            match policy.allocate(&mut self.alloc, region.ilx(u), cpu_node, bp) {
                Some(node) => {
                    region.node[u as usize] = node as u8;
                    self.pages_node[node] += bp;
                    if let Some(nb) = self.numab.as_mut() {
                        nb.on_alloc(t.pid, bp);
                    }
                }
                None => {
                    self.oom = Some(oom_message(self.m, policy, &region.name, bp));
                    return None;
                }
            }
            extra += if bp > 1 { self.cfg.costs.fault_2m_ns } else { self.cfg.costs.fault_4k_ns } * 1e-9;
        }
        Some(extra)
    }

    /// NUMA hinting faults on the marked pages a visit touches, each handled in the touching
    /// thread; returns their time. Migration copies load memory and links like accesses do;
    /// threads moved by NUMA placement are charged their move.
    fn hint_faults(&mut self, tid: usize, v: &Visit, cpu_node: usize) -> f64 {
        let Some(nb) = self.numab.as_mut() else { return 0.0 };
        let pid = self.threads[tid].pid;
        let proc = &mut self.procs[pid];
        let r = v.region as usize;
        let end = (v.first + v.units).min(proc.regions[r].units());
        if !pages::any_marked(&proc.regions[r].marked, v.first, end - v.first) {
            return 0.0;
        }
        let start = self.threads[tid].clock;
        let mut view = MmView { regions: &mut proc.regions, task_policy: &proc.task_policy };
        let mut world = World { alloc: &mut self.alloc, sched: &mut self.sched, pages_node: &mut self.pages_node };
        let mut extra = 0.0;
        for u in v.first..end {
            if !view.regions[r].is_marked(u) {
                continue;
            }
            let out = nb.hint_fault(&mut world, &mut view, tid, r, u, start + extra);
            extra += out.time_s;
            if let Some((from, to, lines)) = out.copy {
                let t = &mut self.threads[tid];
                t.mix_rd[from] += lines;
                t.mix_wr[to] += lines;
                charge_copy(self.m, &mut self.budget_node, &mut self.budget_link, cpu_node, from, to, lines);
            }
            for moved in nb.moved.drain(..) {
                let move_s = self.cfg.costs.task_move_ns * 1e-9;
                self.threads[moved].migrations += 1;
                if moved == tid {
                    extra += move_s;
                } else {
                    self.threads[moved].clock += move_s;
                }
            }
        }
        extra
    }

    /// The node of an already placed page of a visit (the budget check needs it up front).
    fn placed_node(&self, tid: usize, v: &Visit) -> Option<usize> {
        let r = &self.procs[self.threads[tid].pid].regions[v.region as usize];
        match r.node[v.unit as usize] {
            NONE => None,
            x => Some(x as usize),
        }
    }

    fn end_phase(&mut self, tid: usize) {
        let phase = self.current_phase(&self.threads[tid]).expect("a running thread has a phase");
        let sync = self.w.phases[phase].sync;
        let pid = self.threads[tid].pid;
        let seq = self.threads[tid].seq;
        if sync == Sync::None {
            self.advance(tid);
            self.start_next_phase(tid);
            return;
        }
        self.threads[tid].state = State::Waiting(seq);
        self.procs[pid].arrived += 1;
        if self.procs[pid].arrived < self.w.threads as u64 {
            return;
        }
        // Last to arrive: release everyone at the latest arrival time.
        self.procs[pid].arrived = 0;
        let members: Vec<usize> = (0..self.threads.len()).filter(|&i| self.threads[i].pid == pid).collect();
        let release = members.iter().map(|&i| self.threads[i].clock).fold(0.0, f64::max);
        self.woke = true;
        for i in members {
            self.threads[i].clock = release;
            self.threads[i].state = State::Running;
            self.advance(i);
            self.start_next_phase(i);
        }
    }

    /// Move a thread's program position past the phase it finished.
    fn advance(&mut self, tid: usize) {
        let t = &mut self.threads[tid];
        t.seq += 1;
        t.pos += 1;
        let steps = &self.w.program;
        if t.pos >= steps[t.step].phases.len() {
            t.pos = 0;
            t.rep += 1;
            if t.rep >= steps[t.step].repeat {
                t.rep = 0;
                t.step += 1;
            }
        }
    }

    fn start_next_phase(&mut self, tid: usize) {
        // Skip steps repeated zero times or with no phases.
        loop {
            let t = &self.threads[tid];
            match self.w.program.get(t.step) {
                None => {
                    let t = &mut self.threads[tid];
                    t.state = State::Done;
                    t.finish_s = t.clock;
                    return;
                }
                Some(s) if s.repeat == 0 || s.phases.is_empty() => {
                    let t = &mut self.threads[tid];
                    t.step += 1;
                    t.rep = 0;
                    t.pos = 0;
                }
                Some(_) => break,
            }
        }
        let phase = self.current_phase(&self.threads[tid]).expect("position checked above");
        let spec = &self.w.phases[phase];
        let (pid, idx, seq) = {
            let t = &self.threads[tid];
            (t.pid, t.idx as u64, t.seq)
        };
        let nt = self.w.threads as u64;
        let sweeps = self.sweeps_for(pid, phase, idx, seq);
        let lines: f64 = sweeps.iter().map(|s| s.total_lines).sum();
        let per_thread = self.phase_lines(pid, phase, seq);
        let total: f64 = per_thread.iter().sum();
        let share = if total > 0.0 { lines / total } else { 1.0 / nt as f64 };
        let freq = self.m.cores.first().map_or(2e9, |c| c.frequency_hz);
        let compute_s = spec.cycles * share / freq;
        let (est_rd, est_wr) = self.estimate_mix(tid, &sweeps);
        let t = &mut self.threads[tid];
        t.est_rd = est_rd;
        t.est_wr = est_wr;
        t.sweeps = sweeps;
        t.lines_total = lines;
        t.pipelined = spec.sync == Sync::Pipeline && idx > 0;
        if lines > 0.0 {
            t.compute_per_line_s = compute_s / lines;
            t.compute_left_s = 0.0;
        } else {
            t.compute_per_line_s = 0.0;
            t.compute_left_s = compute_s;
        }
    }

    /// The node mix of a phase from 16 sampled page entries per access; pages not yet placed are
    /// counted where a first write would put them (reads of them cost nothing: zero page).
    fn estimate_mix(&self, tid: usize, sweeps: &[Sweep]) -> (Vec<f64>, Vec<f64>) {
        const K: usize = 16;
        let n = self.m.nodes.len();
        let (mut rd, mut wr) = (vec![0.0; n], vec![0.0; n]);
        let t = &self.threads[tid];
        let proc = &self.procs[t.pid];
        let cpu_node = self.sched.pu_node[self.sched.cpu[tid]];
        for s in sweeps {
            let r = &proc.regions[s.region as usize];
            let pol = r.policy.as_ref().unwrap_or(&proc.task_policy);
            let w = s.total_lines / K as f64;
            for u in s.sample_points(K, r.shift) {
                let node = match r.node.get(u as usize) {
                    Some(&x) if x != NONE => x as usize,
                    _ if s.writes() => pol.expected_node(r.ilx(u), cpu_node),
                    _ => continue,
                };
                rd[node] += w * s.rd_share();
                wr[node] += w * (1.0 - s.rd_share());
            }
        }
        (rd, wr)
    }

    fn sweeps_for(&self, pid: usize, phase: usize, idx: u64, seq: u64) -> Vec<Sweep> {
        let spec = &self.w.phases[phase];
        let nt = self.w.threads as u64;
        let regions = &self.procs[pid].regions;
        spec.accesses
            .iter()
            .map(|a| {
                let r = &regions[a.region];
                let order = if a.pattern == crate::input::Pattern::Dynamic {
                    // One shuffled chunk order per phase execution, shared by all its threads
                    // and accesses (a dynamic loop hands out the same chunk of every array).
                    let chunks = r.planes.div_ceil(a.chunk.max(1));
                    let mut order: Vec<u64> = (0..chunks).collect();
                    Rng::new(self.cfg.seed, (pid as u64) << 48 ^ seq << 8 ^ 0xd1a0).shuffle(&mut order);
                    order
                } else {
                    Vec::new()
                };
                Sweep::new(a, r, a.region as u32, idx, nt, &order, self.stride)
            })
            .collect()
    }

    /// Lines each thread moves in one execution of `phase` (computed once per phase).
    fn phase_lines(&mut self, pid: usize, phase: usize, seq: u64) -> Vec<f64> {
        if let Some(v) = &self.procs[pid].phase_lines[phase] {
            return v.clone();
        }
        let nt = self.w.threads as u64;
        let v: Vec<f64> = (0..nt).map(|i| self.sweeps_for(pid, phase, i, seq).iter().map(|s| s.total_lines).sum()).collect();
        self.procs[pid].phase_lines[phase] = Some(v.clone());
        v
    }

    fn rebalance(&mut self) {
        let live: Vec<bool> = self.threads.iter().map(|t| t.state != State::Done).collect();
        let before = self.numab.is_some().then(|| self.sched.cpu.clone());
        let moved = self.sched.balance(self.now, &live);
        for &tid in &moved {
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

fn progress(t: &Thread) -> f64 {
    if t.lines_total <= 0.0 {
        return 1.0;
    }
    t.sweeps.iter().map(|s| s.done_lines).sum::<f64>() / t.lines_total
}

/// The next visit of the access furthest behind, so a phase's accesses interleave in proportion.
/// The access furthest behind, so a phase's accesses interleave in proportion.
#[inline]
fn pick_sweep(t: &Thread) -> Option<usize> {
    if t.sweeps.len() == 1 {
        return (!t.sweeps[0].finished()).then_some(0);
    }
    let mut best: Option<usize> = None;
    for (i, s) in t.sweeps.iter().enumerate() {
        if !s.finished() && best.is_none_or(|b| s.progress() < t.sweeps[b].progress()) {
            best = Some(i);
        }
    }
    best
}

#[inline]
fn next_visit(t: &mut Thread, regions: &[Region]) -> Option<Visit> {
    let i = pick_sweep(t)?;
    let shift = regions[t.sweeps[i].region as usize].shift;
    t.sweeps[i].next(shift, &mut t.rng)
}

/// A page copy by a CPU of `cpu_node`: reads on `from`'s controller and the links back, writes
/// on `to`'s and the links there, taken from the slice budgets (which may go negative: the
/// copy happens regardless, later visits wait).
fn charge_copy(m: &Machine, budget_node: &mut [f64], budget_link: &mut [[f64; 2]], cpu_node: usize, from: usize, to: usize, lines: f64) {
    budget_node[from] -= lines;
    budget_node[to] -= lines;
    for h in &m.routes[from][cpu_node] {
        budget_link[h.link as usize][h.dir as usize] -= lines;
    }
    for h in &m.routes[cpu_node][to] {
        budget_link[h.link as usize][h.dir as usize] -= lines;
    }
}

fn oom_message(m: &Machine, p: &Resolved, region: &str, pages: u64) -> String {
    let nodes: Vec<String> = p.nodes.iter().map(|&n| m.nodes[n].os_index.to_string()).collect();
    let policy = if nodes.is_empty() { p.mode.name().to_string() } else { format!("{}:{}", p.mode.name(), nodes.join(",")) };
    format!("out of memory on node {} under {policy}: region '{region}' needs {} more KiB", nodes.join(","), pages * 4)
}
