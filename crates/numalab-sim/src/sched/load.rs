//! Each thread's PELT signals (`sched/pelt.rs`) as it runs, sleeps at barriers and moves, and
//! the run queues' signals the decisions read (docs/scheduler.md §9).
//!
//! A thread is runnable from its creation or wake-up until it falls asleep at a barrier
//! (arrival plus libgomp's spin, `sleeps_at`) or exits; while runnable it has `1/n` of its CPU
//! when `n` runnable threads share it (its `running` share). The signals are brought up to date
//! at the events that read or change them (creation, release from a barrier, wake-up, exit),
//! not at every epoch: between them a thread's state is known (runnable until `sleep_at`), so
//! one update over the whole stretch gives the same sums; the `running` share is cut where
//! another thread on the CPU falls asleep inside the stretch (`running_pieces`), so a CPU's
//! utilisation does not depend on when it is read. A run queue's signals are the
//! sums of the threads attached to it, sleeping ones included with their decaying values in
//! v6.13 (`cfs_rq->avg` keeps a blocked task's load and utilisation until it migrates or exits:
//! `attach/detach_entity_load_avg()`, `remove_entity_load_avg()`); v3.13's
//! `cfs_rq->runnable_load_avg` counts the tasks on the run queue only (a sleeper moves to
//! `blocked_load_avg`, `dequeue_entity_load_avg()`).

use super::pelt::{RunnableAvg313, SchedAvg, CAPACITY};
use super::util_est::TaskUtilEst;
use super::Sched;
use crate::profile::{BalanceSignals, CpuLoad, PeltForm};

/// The pieces of a runnable thread's stretch up to `end` on a CPU where `nr` threads were
/// runnable at the stretch's start and others fell asleep at `asleep` (ascending): `piece(at,
/// share)` for each piece's end and the thread's running share in it, `CAPACITY` over the
/// threads still runnable. The CPU runs while any of them is runnable, so their shares add up
/// to `CAPACITY` for all of its busy time whenever the signals are read, as the run queue's
/// `util_sum` accrues in v6.1 (`kernel/sched/pelt.c: __update_load_avg_cfs_rq()`, running
/// "`cfs_rq->curr != NULL`"). Each thread's own split stays an even one among the runnable
/// threads, where the kernel's `__update_load_avg_se()` credits the running task
/// ("`cfs_rq->curr == se`") and the turns (`turns.rs`) are not consulted.
fn running_pieces(end: f64, nr: u64, asleep: impl Iterator<Item = f64>, mut piece: impl FnMut(f64, u64)) {
    let mut left = nr.max(1);
    for at in asleep.take_while(|&at| at < end) {
        piece(at, CAPACITY / left);
        left = (left - 1).max(1);
    }
    piece(end, CAPACITY / left);
}

/// A thread's PELT state in its version's form.
#[derive(Clone, Copy, Debug)]
pub(super) enum TaskPelt {
    V6(SchedAvg),
    V313(RunnableAvg313),
}

impl TaskPelt {
    /// The task's load: v6.13 `se->avg.load_avg` (`task_h_load()` without groups), v3.13
    /// `se->avg.load_avg_contrib`.
    pub(super) fn load(&self) -> u64 {
        match self {
            TaskPelt::V6(sa) => sa.load_avg,
            TaskPelt::V313(sa) => sa.load_avg_contrib,
        }
    }

    fn util(&self) -> u64 {
        match self {
            TaskPelt::V6(sa) => sa.util_avg,
            TaskPelt::V313(_) => 0,
        }
    }

    /// Returns whether v6's averages were recomputed (always false for v3.13's form).
    fn update(&mut self, now_ns: u64, runnable: bool, running: u64) -> bool {
        match self {
            TaskPelt::V6(sa) => sa.update(now_ns, runnable, running),
            TaskPelt::V313(sa) => {
                sa.update(now_ns, runnable);
                false
            }
        }
    }

    /// v6 `task_runnable()`: `se.avg.runnable_avg` (0 in v3.13's form, which reads none).
    fn runnable(&self) -> u64 {
        match self {
            TaskPelt::V6(sa) => sa.runnable_avg,
            TaskPelt::V313(_) => 0,
        }
    }
}

/// A CPU's run-queue signals at the last update (sums over its threads, `load.rs` header).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CpuSig {
    /// v6.13 `cpu_load()`: every attached thread's `load_avg`, sleepers included.
    pub load: u64,
    /// v6.13 `cpu_util_cfs()`: `util_avg` or, if larger, the queued tasks' estimates
    /// (`util_est.rs`), capped at the capacity.
    pub util: u64,
    /// v6.13 `cpu_runnable()`: `cfs_rq->avg.runnable_avg`.
    pub runnable: u64,
    /// v3.13 `weighted_cpuload()`: `runnable_load_avg`, queued threads only.
    pub runnable_load: u64,
}

/// Per thread: the PELT state and what decides it.
#[derive(Clone, Debug)]
pub(super) struct LoadTrack {
    /// None before the thread is created.
    pub pelt: Vec<Option<TaskPelt>>,
    /// When the thread falls (fell) asleep at the barrier it waits at; infinity while it runs.
    sleep_at: Vec<f64>,
    /// Its load when it fell asleep (what `task_h_load()` reads at its wake-up: a sleeping
    /// task's own average is not updated until it is enqueued again).
    load_at_sleep: Vec<u64>,
    /// Its estimated utilisation (`util_est.rs`), updated when it falls asleep.
    util_est: Vec<TaskUtilEst>,
    exited: Vec<bool>,
    /// Counts the changes of `pelt` and `exited` (what `LoadSums` depends on besides the CPUs).
    version: u64,
}

/// Every CPU's `cpu_load()` over its threads (sleeping ones included, the background task
/// not), as summed for the threads' loads at `version` on the CPUs `cpu`: kept while both
/// hold, as the wake-ups of a barrier's release read it for each woken thread and move few.
/// Sums of the same integers: the same values as a walk each time.
#[derive(Clone, Debug, Default)]
pub(super) struct LoadSums {
    version: Option<u64>,
    cpu: Vec<usize>,
    sums: Vec<u64>,
}

fn ns(t_s: f64) -> u64 {
    (t_s.max(0.0) * 1e9).round() as u64
}

impl LoadTrack {
    pub(super) fn new(threads: usize) -> Self {
        LoadTrack {
            pelt: vec![None; threads],
            sleep_at: vec![f64::INFINITY; threads],
            load_at_sleep: vec![0; threads],
            util_est: vec![TaskUtilEst::default(); threads],
            exited: vec![false; threads],
            version: 0,
        }
    }

    fn runnable_at(&self, t: usize, now_s: f64) -> bool {
        self.pelt[t].is_some() && !self.exited[t] && now_s < self.sleep_at[t]
    }
}

impl Sched {
    /// Runnable threads per CPU at `now_s`, by the threads' own states.
    fn runnable_per_cpu(&self, now_s: f64) -> Vec<u64> {
        let mut n = vec![0u64; self.pu_node.len()];
        // `runnable_at()` over zipped columns (every balancing point walks them).
        let l = &self.load;
        for (((&cpu, p), &exited), &sleep) in self.cpu.iter().zip(&l.pelt).zip(&l.exited).zip(&l.sleep_at) {
            n[cpu] += u64::from(p.is_some() && !exited && now_s < sleep);
        }
        n
    }

    /// Bring every created thread's signals up to `now_s`: runnable until it fell asleep, then
    /// blocked (`update_load_avg()`, `__update_load_avg_blocked_se()`; v3.13
    /// `update_entity_load_avg()`).
    pub(super) fn update_loads(&mut self, now_s: f64) {
        // Never backwards, and nothing to do at the same instant (a barrier's release resumes
        // and wakes every member at one time).
        if now_s <= self.loads_at_s {
            return;
        }
        self.load.version += 1;
        // Each runnable thread's share over the interval: from the states at its start.
        let nr = self.runnable_per_cpu(self.loads_at_s);
        // The same for every thread: once.
        let (now_ns, form) = (ns(now_s), self.rules.load.util_est);
        let from_s = self.loads_at_s;
        let asleep = self.asleep_within(from_s, now_s, &nr);
        // Zipped columns, each thread's state updated in place.
        let LoadTrack { pelt, sleep_at, load_at_sleep, util_est, exited, .. } = &mut self.load;
        let threads = self.cpu.iter().zip(pelt.iter_mut()).zip(exited.iter()).zip(sleep_at.iter());
        for ((((&cpu, p), &exited), &sleep), (at_sleep, est)) in threads.zip(load_at_sleep.iter_mut().zip(util_est)) {
            let Some(p) = p.as_mut() else { continue };
            if exited {
                continue;
            }
            if sleep > from_s {
                // Runnable from the stretch's start until its sleep or now, its share rising
                // as the CPU's other threads fall asleep.
                let end = sleep.min(now_s);
                let others = &asleep[asleep.partition_point(|a| a.0 < cpu)..];
                let others = others.iter().take_while(|a| a.0 == cpu).map(|a| a.1);
                running_pieces(end, nr[cpu], others, |at, share| {
                    if p.update(ns(at), true, share) {
                        est.util_changed();
                    }
                });
                if sleep < now_s {
                    *at_sleep = p.load();
                    est.went_to_sleep(form, p.util(), p.runnable());
                }
            }
            if sleep < now_s {
                p.update(now_ns, false, 0);
            }
        }
        self.loads_at_s = self.loads_at_s.max(now_s);
    }

    /// The threads that fall asleep inside the stretch `from_s..now_s` with v6's signals on a
    /// CPU that `nr` says others share (alone, a thread's share is whole throughout), as (CPU,
    /// time) in ascending order; none for v3.13's form, which tracks no running time.
    fn asleep_within(&self, from_s: f64, now_s: f64, nr: &[u64]) -> Vec<(usize, f64)> {
        if self.rules.load.tracking != PeltForm::LoadRunnableUtil {
            return Vec::new();
        }
        let l = &self.load;
        let shared = |t: usize| nr[self.cpu[t]] > 1;
        let mut out: Vec<(usize, f64)> = (0..self.cpu.len())
            .filter(|&t| l.sleep_at[t] > from_s && l.sleep_at[t] < now_s && shared(t))
            .filter(|&t| l.pelt[t].is_some() && !l.exited[t])
            .map(|t| (self.cpu[t], l.sleep_at[t]))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        out
    }

    /// A new thread on `cpu` at `now_s` (`wake_up_new_task()`): v6.13
    /// `init_entity_runnable_average()` and `post_init_entity_util_avg()` from the CPU's
    /// utilisation; v3.13 `init_task_runnable_average()` with its first slice among the CPU's
    /// runnable tasks.
    pub(super) fn start_load(&mut self, now_s: f64, tid: usize) {
        self.update_loads(now_s);
        let cpu = self.cpu[tid];
        let p = match self.rules.load.tracking {
            PeltForm::LoadRunnableUtil => {
                TaskPelt::V6(SchedAvg::new_task(ns(now_s), self.cpu_util(cpu), self.cpu_load_all(cpu)))
            }
            // 2.6.32 has no averages; 3.13's are kept as the engine's bookkeeping only.
            PeltForm::None | PeltForm::RunnableAvgSum => {
                let n = self.runnable_per_cpu(now_s)[cpu] as usize + 1;
                TaskPelt::V313(RunnableAvg313::new_task(ns(now_s), ns(self.slice_s(n))))
            }
        };
        self.load.pelt[tid] = Some(p);
        self.load.version += 1;
    }

    /// Thread `tid`, arriving at a barrier, falls asleep at `t_s` unless released before.
    pub fn sleeps_at(&mut self, tid: usize, t_s: f64) {
        self.load.sleep_at[tid] = t_s;
        // Already past (the signals were brought beyond it): its load as it stands.
        if t_s <= self.loads_at_s {
            if let Some(p) = self.load.pelt[tid] {
                self.load.load_at_sleep[tid] = p.load();
                self.load.util_est[tid].went_to_sleep(self.rules.load.util_est, p.util(), p.runnable());
            }
        }
    }

    /// Thread `tid` runs again from `now_s` (released from a barrier, awake or woken).
    pub fn resumes(&mut self, tid: usize, now_s: f64) {
        self.update_loads(now_s);
        self.load.sleep_at[tid] = f64::INFINITY;
    }

    /// Thread `tid`, just woken (`resumes`), waits on its CPU's wake list (`wakelist.rs`): on
    /// no run queue, its signals stay blocked until the CPU enqueues it (`enqueued_at`). The
    /// kernel's first PELT update after the sleep is the enqueue's (v6.1 kernel/sched/core.c:
    /// `sched_ttwu_pending()` → `ttwu_do_activate()` → `activate_task()`; fair.c:
    /// `enqueue_entity()` → `update_load_avg()`, where `__update_load_avg_se()` sees `se->on_rq`
    /// still 0): the time on the list decays as sleep, neither runnable nor running.
    pub(super) fn waits_off_runqueue(&mut self, tid: usize) {
        // resumes() brought the signals to the wake-up: asleep from there on.
        self.load.sleep_at[tid] = self.load.sleep_at[tid].min(self.loads_at_s);
        self.load.version += 1;
    }

    /// Thread `tid` exited at `t_s`: its load leaves its run queue (`task_dead_fair()`,
    /// `remove_entity_load_avg()`; v3.13 `dequeue_entity_load_avg()`).
    pub fn exits(&mut self, tid: usize, t_s: f64) {
        self.update_loads(t_s);
        self.load.exited[tid] = true;
        self.load.version += 1;
    }

    /// Thread `tid`'s load at the last update (None before it is created).
    pub fn pelt_load(&self, tid: usize) -> Option<u64> {
        self.load.pelt[tid].map(|p| p.load())
    }

    /// `cpu`'s `cfs_rq` load average at the last update, sleeping threads included (v6.13
    /// `cpu_load()`; in v3.13, `runnable_load_avg` plus `blocked_load_avg`).
    pub fn cpu_load_avg(&self, cpu: usize) -> u64 {
        self.cpu_load_all(cpu)
    }

    /// Every CPU's signals at `now_s` (brought up to date first); `queued`: the threads on a
    /// run queue now.
    pub(super) fn cpu_signals(&mut self, now_s: f64, queued: &[bool]) -> Vec<CpuSig> {
        self.update_loads(now_s);
        let mut out = vec![CpuSig::default(); self.pu_node.len()];
        // util_est_enqueue(): the queued tasks' estimates, per CPU.
        let mut est = vec![0u64; out.len()];
        for t in 0..self.cpu.len() {
            let Some(p) = self.load.pelt[t].filter(|_| !self.load.exited[t]) else { continue };
            if queued[t] {
                est[self.cpu[t]] += self.load.util_est[t].estimate(self.rules.load.util_est);
            }
            let c = &mut out[self.cpu[t]];
            c.load += p.load();
            c.util += p.util();
            if let TaskPelt::V6(sa) = p {
                c.runnable += sa.runnable_avg;
            }
            if queued[t] {
                c.runnable_load += p.load();
            }
        }
        for (cpu, c) in out.iter_mut().enumerate() {
            if let Some((load, util, runnable)) = self.background_signals(cpu, now_s) {
                c.load += load;
                c.util += util;
                c.runnable += runnable;
                // util_est_enqueue() adds every queued CFS task's estimate, the periodic task's
                // too (v6.1 kernel/sched/fair.c: enqueue_task_fair()).
                est[cpu] += self.background_util_est(cpu, now_s);
            }
            c.util = c.util.max(est[cpu]).min(CAPACITY);
        }
        out
    }

    /// Every CPU's `runnable_load` at `now_s` (brought up to date first), as `cpu_signals`
    /// gives it, without the other signals: what v2.6.32 / v3.13's `cpu_load[]` ticks read at
    /// every balancing point, where a pass seldom goes on to `load_balance()`.
    pub(super) fn runnable_loads(&mut self, now_s: f64, queued: &[bool]) -> Vec<u64> {
        self.update_loads(now_s);
        let mut out = vec![0u64; self.pu_node.len()];
        for (t, &cpu) in self.cpu.iter().enumerate() {
            if let Some(p) = self.load.pelt[t].filter(|_| queued[t] && !self.load.exited[t]) {
                out[cpu] += p.load();
            }
        }
        out
    }

    /// `cpu_signals`, computed once into `memo` and read from there until the caller empties
    /// it: a balancing pass reads them for every CPU and domain level, and they change only
    /// when a thread or the periodic task moves (`load_balance` says so).
    pub(super) fn cpu_signals_memo<'m>(
        &mut self,
        now_s: f64,
        queued: &[bool],
        memo: &'m mut Option<Vec<CpuSig>>,
    ) -> &'m [CpuSig] {
        if memo.is_none() {
            *memo = Some(self.cpu_signals(now_s, queued));
        }
        memo.as_deref().unwrap_or_default()
    }

    /// The periodic background task's v6.13 signals on `cpu` at `now_s` (`noise.rs`), sharing
    /// the CPU with the threads runnable there; None without one or in another version's form.
    pub(super) fn background_signals(&self, cpu: usize, now_s: f64) -> Option<(u64, u64, u64)> {
        if self.rules.load.tracking != PeltForm::LoadRunnableUtil {
            return None;
        }
        let noise = self.noise.as_ref().filter(|n| n.has_agent())?;
        // The task is attached to one CPU: the others' threads are not counted for nothing.
        if noise.agent_cpu(now_s) != Some(cpu) {
            return None;
        }
        let n = (0..self.cpu.len()).filter(|&t| self.cpu[t] == cpu && self.load.runnable_at(t, now_s)).count() as u64;
        noise.agent_signals(cpu, now_s, CAPACITY / (n + 1))
    }

    /// The periodic background task's `_task_util_est()` while it is queued on `cpu` at
    /// `now_s` (`noise.rs: agent_util_est`), 0 otherwise.
    pub(super) fn background_util_est(&self, cpu: usize, now_s: f64) -> u64 {
        self.noise.as_ref().and_then(|nz| nz.agent_util_est(cpu, now_s)).unwrap_or(0)
    }

    /// The load of thread `tid` when it fell asleep.
    pub(super) fn load_at_sleep(&self, tid: usize) -> u64 {
        self.load.load_at_sleep[tid]
    }

    /// Sum of the load of every thread attached to `cpu`, sleeping ones included, and the
    /// periodic background task's.
    fn cpu_load_all(&self, cpu: usize) -> u64 {
        let bg = self.background_signals(cpu, self.loads_at_s).map_or(0, |s| s.0);
        self.attached(cpu).map(|(_, p)| p.load()).sum::<u64>() + bg
    }

    fn attached(&self, cpu: usize) -> impl Iterator<Item = (usize, &TaskPelt)> + '_ {
        (0..self.cpu.len()).filter(move |&t| self.cpu[t] == cpu && !self.load.exited[t]).filter_map(|t| {
            let p = self.load.pelt[t].as_ref()?;
            Some((t, p))
        })
    }

    /// `cpu_load()` of `a` and of `b` with thread `off` taken off its run queue (a woken
    /// task is on none while `wake_affine()` runs), in one walk over the threads: a wake-up
    /// reads both, and the sums are of integers, so one walk gives the same values.
    pub(super) fn cpu_load_pair(
        &self,
        a: usize,
        b: usize,
        runnable: &[bool],
        off: usize,
        which: CpuLoad,
    ) -> (u64, u64) {
        // Queued threads only: their load, or NICE_0_LOAD each (`rq->load.weight`).
        let by_load = match which {
            CpuLoad::LoadAvgWithBlocked => {
                let sums = self.cpu_load_sums();
                let bg = |c: usize| self.background_signals(c, self.loads_at_s).map_or(0, |s| s.0);
                return (sums[a] + bg(a), sums[b] + bg(b));
            }
            CpuLoad::RqWeight => false,
            CpuLoad::RunnableLoadAvg => true,
        };
        let (mut la, mut lb) = (0u64, 0u64);
        // Zipped, not indexed: the walk runs at every wake-up, over every thread.
        let threads = self.cpu.iter().zip(&self.load.exited).zip(&self.load.pelt).enumerate();
        for (t, ((&cpu, &exited), p)) in threads {
            if (cpu != a && cpu != b) || exited || !runnable[t] || t == off {
                continue;
            }
            let Some(p) = p else { continue };
            let v = if by_load { p.load() } else { CAPACITY };
            if cpu == a {
                la += v;
            }
            if cpu == b {
                lb += v;
            }
        }
        (la, lb)
    }

    /// Every CPU's sum of its threads' loads (`LoadSums`), summed again only when a thread's load
    /// or CPU changed since.
    fn cpu_load_sums(&self) -> std::cell::Ref<'_, [u64]> {
        {
            let mut c = self.load_sums.borrow_mut();
            if c.version != Some(self.load.version) || c.cpu != self.cpu {
                let LoadSums { version, cpu, sums } = &mut *c;
                *version = Some(self.load.version);
                cpu.clone_from(&self.cpu);
                sums.clear();
                sums.resize(self.pu_node.len(), 0);
                for ((&cpu, &exited), p) in self.cpu.iter().zip(&self.load.exited).zip(&self.load.pelt) {
                    if let Some(p) = p.as_ref().filter(|_| !exited) {
                        sums[cpu] += p.load();
                    }
                }
            }
        }
        std::cell::Ref::map(self.load_sums.borrow(), |c| c.sums.as_slice())
    }

    /// `cfs_rq->avg.util_avg` of `cpu`: the utilisation of every thread attached to it, sleeping
    /// ones included, capped at the CPU's capacity, as `post_init_entity_util_avg()` reads it
    /// (without the estimates `cpu_signals()` adds for `cpu_util_cfs()`).
    pub(super) fn cpu_util(&self, cpu: usize) -> u64 {
        let bg = self.background_signals(cpu, self.loads_at_s).map_or(0, |s| s.1);
        (self.attached(cpu).map(|(_, p)| p.util()).sum::<u64>() + bg).min(CAPACITY)
    }
}

/// v3.13 `CPU_LOAD_IDX_MAX`.
const CPU_LOAD_IDX_MAX: usize = 5;
/// Ticks applied at most in one catch-up: by then `cpu_load[4]` (1/16 per tick) has kept under
/// 0.03 % of its old value (v3.13 `decay_load_missed()` zeroes it after 128 missed ticks).
const MAX_PENDING_TICKS: u64 = 128;

impl Sched {
    /// v3.13 `update_cpu_load_active()` / `__update_cpu_load()` (`kernel/sched/proc.c`), once
    /// per jiffy per CPU up to `now_s`: `cpu_load[0]` is `weighted_cpuload()`, `cpu_load[i]`
    /// moves toward it by `1/2^i` a tick, rounded up while the load rises. The load of every
    /// jiffy since the last call is the one at `now_s` (the engine balances at epoch ends, a few
    /// ms apart at most); for an idle CPU that is `decay_load_missed()`'s zero load.
    /// `loads`: each CPU's `weighted_cpuload()` now (v2.6.32 `update_cpu_load()` applies the same
    /// arithmetic to `rq->load.weight`).
    pub(super) fn tick_cpu_load(&mut self, now_s: f64, loads: &[u64]) {
        let jiffy = (now_s * self.rules.hz).floor().max(0.0) as u64;
        let pending = jiffy.saturating_sub(self.cpu_load_jiffy).min(MAX_PENDING_TICKS);
        self.cpu_load_jiffy = self.cpu_load_jiffy.max(jiffy);
        for (cl, &this_load) in self.cpu_load_idx.iter_mut().zip(loads) {
            for _ in 0..pending {
                cl[0] = this_load;
                for (i, v) in cl.iter_mut().enumerate().take(CPU_LOAD_IDX_MAX).skip(1) {
                    let scale = 1u64 << i;
                    let new = if this_load > *v { this_load + scale - 1 } else { this_load };
                    *v = (*v * (scale - 1) + new) >> i;
                }
            }
        }
    }

    /// v3.13 `source_load(cpu, type)`: a low guess of a CPU to pull from, `min(cpu_load[type -
    /// 1], weighted_cpuload())`; `target_load()` the high guess (`max`) for the local group.
    /// Type 0 is `weighted_cpuload()` itself.
    pub(super) fn biased_load(&self, cpu: usize, idx: usize, sig: &[CpuSig], nr: &[usize], local: bool) -> u64 {
        let total = self.weighted_cpuload(cpu, sig, nr);
        if idx == 0 {
            return total;
        }
        let hist = self.cpu_load_idx[cpu][idx - 1];
        if local {
            hist.max(total)
        } else {
            hist.min(total)
        }
    }

    /// `weighted_cpuload()` as the balancer reads it: v3.13 `runnable_load_avg`; v2.6.32
    /// (`QueuedWeightIndex`) `rq->load.weight`, NICE_0_LOAD per runnable task.
    pub(super) fn weighted_cpuload(&self, cpu: usize, sig: &[CpuSig], nr: &[usize]) -> u64 {
        match self.rules.load.balance {
            BalanceSignals::QueuedWeightIndex { .. } => nr[cpu] as u64 * CAPACITY,
            BalanceSignals::CpuLoadIndex { .. } | BalanceSignals::LoadUtilRunnable => sig[cpu].runnable_load,
        }
    }

    /// A thread's load as the balancer moves it (`task_h_load()`): its PELT load; v2.6.32
    /// (`QueuedWeightIndex`) its weight, NICE_0_LOAD.
    pub(super) fn balance_load(&self, tid: usize) -> u64 {
        match self.rules.load.balance {
            BalanceSignals::QueuedWeightIndex { .. } => CAPACITY,
            BalanceSignals::CpuLoadIndex { .. } | BalanceSignals::LoadUtilRunnable => self.pelt_load(tid).unwrap_or(0),
        }
    }

    /// Thread `tid`'s utilisation as `detach_tasks()` moves it: `task_util_est()`, the larger
    /// of `task_util()` and its estimate (`util_est.rs`; 0 in v3.13, which has neither).
    pub(super) fn task_util_est(&self, tid: usize) -> u64 {
        let util = self.load.pelt[tid].map_or(0, |p| p.util());
        util.max(self.load.util_est[tid].estimate(self.rules.load.util_est))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Kernel;
    use crate::profile::UtilEst;

    /// Two nodes of one CPU, thread 0 on CPU 0, thread 1 asleep on CPU 1; `util_est` replaces
    /// the profile's form when given.
    fn alone(kernel: Kernel, util_est: Option<UtilEst>) -> Sched {
        let m = crate::sched::test_machines::two_nodes_of(1);
        let p = crate::sched::test_machines::unbound();
        let mut s = Sched::new(&m, &p, kernel, 1, 2).unwrap();
        if let Some(form) = util_est {
            let mut rules = s.rules.clone();
            rules.load.util_est = form;
            s.rules = Box::leak(Box::new(rules));
        }
        let mut live = [false; 2];
        for t in 0..2 {
            s.place_new_at(0.0, t, (t > 0).then_some(0), &live);
            live[t] = true;
        }
        s.cpu = vec![0, 1];
        s.sleeps_at(1, 0.0);
        s
    }

    /// Thread 0 runs alone 200 ms, sleeps 200 ms and is woken: CPU 0's `cpu_util_cfs()` while
    /// it sleeps (at 300 ms) and once it is queued again, and its `util_avg` and
    /// `task_util_est()` then.
    fn after_a_sleep(kernel: Kernel, util_est: Option<UtilEst>) -> (u64, u64, u64, u64) {
        let mut s = alone(kernel, util_est);
        s.sleeps_at(0, 0.2);
        let asleep = s.cpu_signals(0.3, &[false, false])[0].util;
        s.resumes(0, 0.4);
        let queued = s.cpu_signals(0.4, &[true, false])[0].util;
        (asleep, queued, s.load.pelt[0].map_or(0, |p| p.util()), s.task_util_est(0))
    }

    #[test]
    fn a_wake_ups_pair_of_loads_is_each_cpus_own_without_the_woken_thread() {
        let mut s = alone(Kernel::V6_13, None);
        s.update_loads(0.1);
        let (l0, l1) = (s.cpu_load_avg(0), s.cpu_load_avg(1));
        assert!(l0 > 0 && l1 > 0, "loads {l0} {l1}");
        let which = CpuLoad::LoadAvgWithBlocked;
        assert_eq!(s.cpu_load_pair(0, 1, &[true, false], 1, which), (l0, l1));
        assert_eq!(s.cpu_load_pair(1, 0, &[true, false], 1, which), (l1, l0));
        assert_eq!(s.cpu_load_pair(0, 0, &[true, false], 1, which), (l0, l0));
        // Queued threads only: the woken one (`off`) is on no run queue.
        let q = CpuLoad::RqWeight;
        assert_eq!(s.cpu_load_pair(0, 1, &[true, true], 1, q), (CAPACITY, 0));
        assert_eq!(s.cpu_load_pair(0, 1, &[true, true], 0, q), (0, CAPACITY));
        let r = CpuLoad::RunnableLoadAvg;
        assert_eq!(s.cpu_load_pair(0, 1, &[true, true], 1, r), (l0, 0));
        // The sums follow a thread that moves (however its CPU is set) and loads that change.
        s.cpu[1] = 0;
        assert_eq!(s.cpu_load_pair(0, 1, &[true, false], 1, which), (l0 + l1, 0));
        s.update_loads(0.2);
        assert_ne!(s.cpu_load_avg(0), l0 + l1);
        assert_eq!(s.cpu_load_pair(1, 0, &[true, false], 1, which), (0, s.cpu_load_avg(0)));
    }

    #[test]
    fn a_task_on_a_wake_list_decays_as_asleep_until_its_cpu_enqueues_it() {
        // Thread 0 runs alone 200 ms, sleeps, is woken at 300 ms onto a wake list and enqueued
        // at 350 ms (sched_ttwu_pending() → enqueue_entity()'s first update_load_avg()): its
        // signals at 350 ms and after are those of a thread asleep until 350 ms, and below
        // those of one enqueued at the wake-up.
        let run = |listed: bool, woken_s: f64| {
            let mut s = alone(Kernel::V6_1, None);
            s.sleeps_at(0, 0.2);
            s.resumes(0, woken_s);
            if listed {
                s.queue_wakelist(0);
                s.update_loads(0.34);
                s.flush_wakelist(0, 0.35, &[true, false]);
            }
            // The task's own util_avg (the CPU's reads util_est's larger estimate), and the
            // CPU's runnable_avg.
            let at = s.cpu_signals(0.35, &[true, false])[0].runnable;
            let util = s.load.pelt[0].map_or(0, |p| p.util());
            let later = s.cpu_signals(0.36, &[true, false])[0].runnable;
            (util, at, s.load.pelt[0].map_or(0, |p| p.util()), later)
        };
        let (listed, asleep, woken) = (run(true, 0.3), run(false, 0.35), run(false, 0.3));
        assert_eq!(listed, asleep);
        // 200 ms alone bring util_avg near 1024, 150 ms asleep to a 26th (y^150, y^32 = 1/2):
        // about 40; 50 ms runnable from 300 ms bring it back above half.
        assert!(listed.0 < 60 && woken.0 > 500, "listed {listed:?}, woken {woken:?}");
        assert!(listed.1 < 60 && woken.1 > 500, "listed {listed:?}, woken {woken:?}");
        // Enqueued, it runs: 10 ms more raise both.
        assert!(listed.2 > listed.0 + 100 && listed.3 > listed.1 + 100, "{listed:?}");
    }

    #[test]
    fn a_cpus_utilisation_counts_its_busy_time_however_seldom_it_is_read() {
        // Two threads on CPU 0 from 0; one sleeps at 20 ms, the other at 40 ms. The CPU ran
        // 40 ms whether or not a balance read its signals at 30 ms (v6.1 pelt.c:
        // __update_load_avg_cfs_rq(), running while cfs_rq->curr is set): the sums at 50 ms
        // are the same either way. With each share fixed at the stretch's start (half each)
        // the two differed: util 691 read only at 50 ms, 769 read at 30 ms too.
        let run = |read_between: bool| {
            let m = crate::sched::test_machines::two_nodes_of(1);
            let p = crate::sched::test_machines::unbound();
            let mut s = Sched::new(&m, &p, Kernel::V6_1, 1, 2).unwrap();
            let mut live = [false; 2];
            for t in 0..2 {
                s.place_new_at(0.0, t, (t > 0).then_some(0), &live);
                live[t] = true;
            }
            s.cpu = vec![0, 0];
            s.sleeps_at(0, 0.02);
            s.sleeps_at(1, 0.04);
            if read_between {
                s.update_loads(0.03);
            }
            s.update_loads(0.05);
            let util: Vec<u64> = (0..2).map(|t| s.load.pelt[t].map_or(0, |p| p.util())).collect();
            (util.iter().sum::<u64>(), s.cpu_signals(0.05, &[false, false])[0].runnable)
        };
        let ((read, run_read), (unread, run_unread)) = (run(true), run(false));
        assert!(read.abs_diff(unread) <= 2, "util sums {read} (read at 30 ms) and {unread}");
        assert!(run_read.abs_diff(run_unread) <= 2, "runnable {run_read} and {run_unread}");
        // 40 ms of running then 10 ms asleep: well above half the capacity.
        assert!(unread > 600, "util sum {unread}");
    }

    #[test]
    fn running_pieces_share_the_cpu_among_the_threads_still_runnable() {
        let mut got = Vec::new();
        running_pieces(4.0, 3, [1.0, 2.0, 4.0, 5.0].into_iter(), |at, share| got.push((at, share)));
        assert_eq!(got, vec![(1.0, CAPACITY / 3), (2.0, CAPACITY / 2), (4.0, CAPACITY)]);
    }

    #[test]
    fn a_woken_task_weighs_what_it_used_before_it_slept() {
        // kernel/sched/sched.h (6.1) cpu_util_cfs(): max(util_avg, util_est.enqueued); 6.13
        // cpu_util(): max(util, util_est). 200 ms alone bring util_avg near 1024; 200 ms asleep
        // take it under 20 (32 ms half-life), but the estimate taken at the sleep stays.
        for kernel in [Kernel::V6_1, Kernel::V6_13] {
            let (asleep, queued, util, est) = after_a_sleep(kernel, None);
            assert!(util < 20, "{kernel:?}: util_avg {util}");
            assert!(queued > 950 && est > 950, "{kernel:?}: cpu {queued}, task {est}");
            // A sleeping task's estimate is not on the run queue (util_est_dequeue()).
            assert!(asleep < 150, "{kernel:?}: asleep {asleep}");
            // Without UTIL_EST the woken task's CPU reads its decayed util_avg.
            let (_, queued, _, est) = after_a_sleep(kernel, Some(UtilEst::Off));
            assert!(queued < 20 && est < 20, "{kernel:?}: cpu {queued}, task {est}");
        }
    }
}
