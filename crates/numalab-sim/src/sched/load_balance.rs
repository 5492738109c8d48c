//! The load balancer (`kernel/sched/fair.c` v3.13 / v6.13): `rebalance_domains()` runs each
//! domain of each CPU when `sd->last_balance + interval` has passed, the interval being
//! `get_sd_balance_interval()`: `sd->balance_interval`, times `sd->busy_factor` on a busy CPU,
//! in whole jiffies. `load_balance()` asks `should_we_balance()` (one CPU per group: its first
//! idle CPU, else its first CPU), finds the busiest group (`find_busiest_group()`, per version)
//! and its busiest CPU, and pulls queued tasks that `can_migrate_task()` allows (not running,
//! allowed on the destination, not cache hot unless balancing failed more than
//! `cache_nice_tries` times). Balanced: `balance_interval` doubles up to `max_interval`; moved:
//! back to `min_interval`. A busiest CPU whose tasks are all pinned away from the destination
//! (`LBF_ALL_PINNED`) leaves the search, which is redone; ending with none left, the domain
//! counts no failure and its interval doubles up to `MAX_PINNED_INTERVAL` (512 ms). After more than `cache_nice_tries + 2` failures, active balancing
//! pushes the running task (`need_active_balance()`, `active_load_balance_cpu_stop()`, which
//! needs at least two tasks on the busiest CPU). A CPU that just went idle balances at once
//! (`newidle_balance()`, `SD_BALANCE_NEWIDLE`, set on every level in both versions).

use super::lb_stats::{self, group_classify, Idle, LbStats, Migration, Spread};
use super::load::CpuSig;
use super::pelt::CAPACITY;
use super::wake::Why;
use super::{GroupLoad, Sched, MIGRATION_COST_S};
use crate::profile::{BalanceSignals, BusiestGroup, BusyInterval, IdleScan, NewidleGate, NohzIdle, TimeSlice};

/// `MAX_PINNED_INTERVAL` (`kernel/sched/fair.c`, v3.13 / v6.1 / v6.13; v2.6.32 `kernel/sched.c`):
/// the `balance_interval` (ms) a domain whose busiest tasks were all pinned may grow to, past
/// `max_interval` (`load_balance()`, label `out_one_pinned`).
pub(super) const MAX_PINNED_INTERVAL_MS: f64 = 512.0;

/// `get_update_sysctl_factor()` with `SCHED_TUNABLESCALING_LOG` (`kernel/sched/fair.c`,
/// v2.6.32 `kernel/sched.c: update_sysctl()`): `1 + ilog2(min(num_online_cpus(), 8))`, the
/// multiplier of the latency, granularity and slice sysctls.
pub(super) fn sysctl_factor(online_cpus: usize) -> f64 {
    f64::from(1 + online_cpus.clamp(1, 8).ilog2())
}

/// A domain's balance interval in jiffies (`rebalance_domains()`, v6.x
/// `get_sd_balance_interval()`): `msecs_to_jiffies(balance_interval)` (rounded up), times
/// `busy_factor` on a busy CPU, at least one jiffy; 6.x takes one jiffy off a busy CPU's.
pub(super) fn balance_interval_jiffies(
    balance_interval_ms: f64,
    busy_factor: Option<f64>,
    rule: BusyInterval,
    hz: f64,
) -> f64 {
    let ms = balance_interval_ms * busy_factor.unwrap_or(1.0);
    let jiffies = (ms * hz / 1000.0).ceil();
    let less = match (busy_factor, rule) {
        (Some(_), BusyInterval::ScaledLessOneJiffy) => 1.0,
        _ => 0.0,
    };
    (jiffies - less).max(1.0)
}

/// Time slice of each of `n` tasks sharing a CPU, `factor` = [`sysctl_factor`]: CFS
/// `sched_slice()` over `__sched_period()`, `max(latency, n x min_granularity) / n` (v3.13,
/// v6.1 on 8 CPUs: 24 ms, at least n x 3 ms); v6.13 EEVDF's `sysctl_sched_base_slice`.
pub(super) fn slice_s(slice: TimeSlice, n: usize, factor: f64) -> f64 {
    match slice {
        TimeSlice::CfsPeriod { latency_s, min_granularity_s } => {
            factor * latency_s.max(n as f64 * min_granularity_s) / n as f64
        }
        TimeSlice::Base { slice_s } => factor * slice_s,
    }
}

impl Sched {
    /// The run queues a balance at `now_s` sees, its time accounted: the threads on one
    /// (`runnable` less those still on a wake list, which no balancer counts or moves) and each
    /// CPU's count; each CPU's pending wake-ups noted.
    pub(super) fn run_queues(&mut self, now_s: f64, runnable: &[bool]) -> (Vec<bool>, Vec<usize>) {
        self.account(now_s, runnable);
        let live = self.enqueued(runnable);
        self.ttwu_pending = self.ttwu_pending_cpus();
        let nr = self.nr_running(&live, now_s);
        (live, nr)
    }

    /// Balancing at time `now_s` (an epoch end): newly-idle CPUs first, then every domain of
    /// every CPU whose interval has passed. Returns the threads moved.
    pub fn balance(&mut self, now_s: f64, live: &[bool]) -> Vec<usize> {
        let (live, mut nr) = self.run_queues(now_s, live);
        let live = &live;
        // Every CPU's signals, until a balance moves something (`cpu_signals_memo`).
        let mut sig = None;
        // weighted_cpuload() for the cpu_load[] tick: the signals' runnable_load (brought up to
        // date now, as cpu_signals() would), or NICE_0_LOAD per runnable task.
        match self.rules.load.balance {
            BalanceSignals::CpuLoadIndex { .. } => {
                let loads = self.runnable_loads(now_s, live);
                self.tick_cpu_load(now_s, &loads);
            }
            BalanceSignals::QueuedWeightIndex { .. } => {
                self.update_loads(now_s);
                let loads: Vec<u64> = nr.iter().map(|&n| n as u64 * CAPACITY).collect();
                self.tick_cpu_load(now_s, &loads);
            }
            BalanceSignals::LoadUtilRunnable => {}
        }
        let mut moved = Vec::new();
        let ncpu = nr.len();
        // The CPU the NOHZ kick would run the idle CPUs' balances on (`find_new_ilb()`: the
        // first idle CPU in nohz.idle_cpus_mask), their `SD_SERIALIZE` lock's holder.
        let ilb = (0..ncpu).find(|&c| nr[c] == 0 && !self.ttwu_pending[c] && self.nohz_idle(c)).unwrap_or(0);
        // Background work running now was woken there (ttwu_do_wakeup(), seen at the epoch's
        // end); the threads' wake-ups sample as they happen (`newidle.rs: ttwu_do_wakeup`).
        for cpu in 0..nr.len() {
            if self.noise.as_ref().is_some_and(|nz| nz.active_at(cpu, now_s)) {
                self.ttwu_do_wakeup(cpu, now_s);
            }
        }
        // Background work that ended on an idle CPU since the last point: an idle entry, and
        // a newly idle balance below (`bg_idle.rs`).
        self.background_idle_entries(now_s);
        // With the host model a vCPU balances newly idle at the round its last thread blocks
        // (`vcpu_newidle.rs: newidle_where_run`), not here.
        for cpu in 0..ncpu {
            if !self.newidle_when_run && self.was_busy[cpu] && nr[cpu] == 0 && !self.ttwu_pending[cpu] {
                moved.extend(self.newidle_balance(now_s, cpu, &mut nr, live, &mut sig));
                self.went_idle_if(cpu, now_s, &nr);
            }
        }
        // A busy CPU's tick leaves nohz.idle_cpus_mask (`idle_tick.rs`), before its kick.
        if let Some(it) = self.idle_tick.as_mut() {
            (0..ncpu).filter(|&c| nr[c] > 0).for_each(|c| it.busy_tick(c));
        }
        // Idle CPUs have their tick stopped (CONFIG_NO_HZ_IDLE): they are balanced only on a
        // busy CPU's kick (profile `sched.nohz_idle`), each at its own intervals as below. With
        // the host model the kicked vCPU balances them when the host runs it
        // (`vcpu_newidle.rs: nohz_where_run`). Where idle CPUs may keep their tick
        // (`idle_tick.rs`), the kick balances only those in the mask, none if it is empty
        // (`nohz_balancer_kick()`: "if (likely(!atomic_read(&nohz.nr_cpus))) return"), and one
        // that kept its tick balances itself at it.
        let idle_balanced = self.nohz_kick(&nr) && self.idle_tick.as_ref().is_none_or(|it| it.any_nohz());
        if self.newidle_when_run && idle_balanced {
            self.kick_ilb(now_s, &nr);
        }
        for cpu in 0..ncpu {
            if nr[cpu] == 0 && !self.newidle_when_run && !self.ttwu_pending[cpu] && self.idle_tick_due(cpu, now_s) {
                moved.extend(self.idle_tick_balance(now_s, cpu, &mut nr, live, &mut sig));
                continue;
            }
            if nr[cpu] == 0
                && (!idle_balanced || self.newidle_when_run || self.ttwu_pending[cpu] || !self.nohz_idle(cpu))
            {
                continue;
            }
            let executor = if nr[cpu] == 0 { ilb } else { cpu };
            moved.extend(self.rebalance_domains(now_s, cpu, executor, &mut nr, live, &mut sig));
        }
        if !self.newidle_when_run {
            for (w, &n) in self.was_busy.iter_mut().zip(&nr) {
                *w = n > 0;
            }
        }
        moved
    }

    /// `rebalance_domains()` on `cpu`, run by `executor` (`cpu` itself, or the CPU a NOHZ kick
    /// runs it on): each level whose interval has passed (on an idle CPU or a busy one, as `nr`
    /// says), from the lowest, until `should_we_balance()` leaves it to another CPU of the
    /// group; a NUMA level another CPU's balance holds the lock of is skipped (`serialize.rs`).
    /// Returns the threads moved.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn rebalance_domains(
        &mut self,
        now_s: f64,
        cpu: usize,
        executor: usize,
        nr: &mut [usize],
        live: &[bool],
        sig: &mut Option<Vec<CpuSig>>,
    ) -> Vec<usize> {
        let mut moved = Vec::new();
        // No level due (the test below for each): nothing to do on this CPU.
        if now_s + 1e-12 < self.cpu_due_s[cpu][usize::from(nr[cpu] > 0)] {
            return moved;
        }
        // "need_decay = update_newidle_cost(sd, 0)" for every domain, before any is balanced.
        self.idle_avg.decay(cpu, now_s);
        for l in 0..self.domains.len() {
            let busy = nr[cpu] > 0;
            if now_s + 1e-12 < self.state[l][cpu].due_s[usize::from(busy)] {
                continue;
            }
            // SD_SERIALIZE (every SD_NUMA level): "if (!spin_trylock(&balancing)) goto out",
            // which leaves sd->last_balance, so the level stays due, and goes on to the next.
            let serialize = self.domains[l].numa;
            if serialize && self.balancing.busy(executor, now_s) {
                continue;
            }
            self.state[l][cpu].last_balance_s = now_s;
            self.refresh_due(l, cpu);
            let idle = if busy { Idle::Busy } else { Idle::Now };
            if !self.should_we_balance(cpu, l, nr) {
                // load_balance(): "goto out_balanced" and stop climbing for this CPU; the
                // call counted at its entry, then as balanced.
                let c = self.schedstat.at(l, cpu, idle);
                c.lb_count += 1;
                c.lb_balanced += 1;
                self.grow_interval(l, cpu, false);
                break;
            }
            // Held across this load_balance(), for what the guest measured one to take
            // (Background::lb_time_s).
            if serialize {
                let hold_s = self.balancing.hold_s(cpu, l);
                self.balancing.take(executor, now_s, hold_s);
            }
            let (got, done) = self.load_balance(now_s, cpu, l, idle, nr, live, sig);
            if done {
                *sig = None;
            }
            moved.extend(got);
        }
        moved
    }

    /// `newidle_balance()` on `cpu`, whose last task just blocked: its levels from the lowest
    /// while the gate (`newidle.rs`) allows, until one pulls. Returns the threads moved.
    pub(super) fn newidle_balance(
        &mut self,
        now_s: f64,
        cpu: usize,
        nr: &mut [usize],
        live: &[bool],
        sig: &mut Option<Vec<CpuSig>>,
    ) -> Vec<usize> {
        let gated = self.rules.newidle_gate == NewidleGate::AvgIdleAboveCost;
        self.idle_avg.went_idle(cpu, now_s);
        self.schedstat.newidle[cpu].calls += 1;
        let mut moved = Vec::new();
        // No CPU had two tasks at the last root balance, and none reached two since
        // (`overload.rs`): "goto out", after the idle stamp.
        if !self.rd_overloaded(now_s) {
            self.schedstat.newidle[cpu].no_overload += 1;
            return moved;
        }
        // curr_cost: what the levels balanced so far cost.
        let mut curr_cost_s = 0.0;
        // Whether a level the kernel attaches was passed: below it, levels of one group (which
        // `cpu_attach_domain()` drops, costing nothing here) are no `sd` of the kernel's, so the
        // first attached level's cut-off is its test on `this_rq->sd`, before the loop.
        let mut past_attached = false;
        for l in 0..self.domains.len() {
            if gated && !self.idle_avg.covers(cpu, curr_cost_s, l) {
                let gate = &mut self.schedstat.newidle[cpu];
                if past_attached {
                    gate.cost_break += 1;
                } else {
                    gate.avg_idle += 1;
                }
                break;
            }
            past_attached |= self.domains[l].groups_of[cpu].len() > 1;
            // NI_RANDOM's die (`ni_random.rs`), on the domains the kernel attaches (a level of
            // one group is none: `newidle.rs: level_costs()`).
            let weight = match self.ni_random.as_mut() {
                Some(ni) if self.domains[l].groups_of[cpu].len() > 1 => match ni.roll(l, cpu) {
                    Some(w) => Some(w),
                    None => {
                        self.schedstat.newidle[cpu].random_skip += 1;
                        continue;
                    }
                },
                _ => None,
            };
            let (got, done) = self.load_balance(now_s, cpu, l, Idle::Newly, nr, live, sig);
            if let (Some(ni), Some(w)) = (self.ni_random.as_mut(), weight) {
                ni.balanced(l, cpu, w, done);
            }
            // "domain_cost = t1 - t0; update_newidle_cost(sd, domain_cost); curr_cost +=
            // domain_cost": this balance's time, the level's typical one (`serialize.rs`), and
            // with the host model the host's wait if it stopped the vCPU inside (`host_stop.rs`).
            let time_s = self.balancing.hold_s(cpu, l);
            let cost_s = match self.host_stops.as_mut() {
                Some(h) => {
                    let (cost_s, stopped) = h.cost_s(cpu, time_s);
                    self.schedstat.newidle[cpu].host_stopped += u64::from(stopped);
                    cost_s
                }
                None => time_s,
            };
            self.idle_avg.balanced(cpu, l, cost_s, now_s);
            curr_cost_s += cost_s;
            if done {
                *sig = None;
            }
            moved.extend(got);
            if done {
                self.idle_avg.pulled(cpu);
                self.schedstat.newidle[cpu].pulled += 1;
                break;
            }
        }
        moved
    }

    /// Whether idle CPUs are balanced now: v3.13 `nohz_kick_needed()` / v6.13
    /// `nohz_balancer_kick()` on a busy CPU's tick (a CPU with two tasks or more, or an LLC —
    /// a node here — with more than one busy CPU), v2.6.32's idle load balancer while any CPU
    /// is busy. The kicked CPU balances every idle CPU whose interval has passed
    /// (`_nohz_idle_balance()`: `time_after_eq(jiffies, rq->next_balance)`), so the per-CPU
    /// intervals stay those of `rebalance_domains()`.
    fn nohz_kick(&self, nr: &[usize]) -> bool {
        match self.rules.nohz_idle {
            NohzIdle::OwnerWhileAnyBusy => nr.iter().any(|&n| n > 0),
            NohzIdle::KickWhenOverloadedOrLlcBusy => {
                if nr.iter().any(|&n| n >= 2) {
                    return true;
                }
                let nodes = self.nr_idle_scan.len();
                let mut busy = vec![0usize; nodes];
                for (c, &n) in nr.iter().enumerate() {
                    busy[self.pu_node[c]] += usize::from(n > 0);
                }
                nr.iter().any(|&n| n >= 2) || busy.iter().any(|&b| b > 1)
            }
        }
    }

    /// `load_balance()`, label `out_one_pinned`: "if ((env.flags & LBF_ALL_PINNED &&
    /// sd->balance_interval < MAX_PINNED_INTERVAL) || sd->balance_interval < sd->max_interval)
    /// sd->balance_interval *= 2".
    fn grow_interval(&mut self, l: usize, cpu: usize, all_pinned: bool) {
        let max = self.domains[l].max_interval_ms(cpu);
        let st = &mut self.state[l][cpu];
        if (all_pinned && st.balance_interval_ms < MAX_PINNED_INTERVAL_MS) || st.balance_interval_ms < max {
            st.balance_interval_ms *= 2.0;
            self.refresh_due(l, cpu);
        }
    }

    /// `state[l][cpu].due_s` from its interval and last balance: `last_balance + interval`
    /// (`balance_interval_jiffies()`) on an idle CPU and on a busy one.
    pub(super) fn refresh_due(&mut self, l: usize, cpu: usize) {
        let busy_factor = self.domains[l].busy_factor;
        let cap = self.max_load_balance_interval_jiffies();
        let hz = self.rules.hz;
        let st = &mut self.state[l][cpu];
        st.due_s = [None, Some(busy_factor)].map(|factor| {
            let jiffies =
                balance_interval_jiffies(st.balance_interval_ms, factor, self.rules.busy_interval, hz).min(cap);
            st.last_balance_s + jiffies / hz
        });
        self.cpu_due_s[cpu] =
            [0, 1].map(|busy| self.state.iter().map(|s| s[cpu].due_s[busy]).fold(f64::INFINITY, f64::min));
    }

    /// The longest balance interval in jiffies: v3.13 / v6.x `max_load_balance_interval` =
    /// `HZ x num_online_cpus() / 10` (`update_max_interval()`, applied by `rebalance_domains()` /
    /// `get_sd_balance_interval()`). v2.6.32 caps at `HZ x NR_CPUS / 10` (`kernel/sched.c:
    /// rebalance_domains()`), a build constant of at least the CPUs modelled: no cap here.
    /// Reached only past `max_interval` (`MAX_PINNED_INTERVAL` x `busy_factor`).
    fn max_load_balance_interval_jiffies(&self) -> f64 {
        match self.rules.busiest_group {
            BusiestGroup::CapacityPerTaskPull => f64::INFINITY,
            _ => (self.rules.hz * self.pu_node.len() as f64 / 10.0).floor(),
        }
    }

    /// `should_we_balance()`: the first idle CPU of the local group, else the group's first.
    fn should_we_balance(&self, cpu: usize, l: usize, nr: &[usize]) -> bool {
        let group = &self.domains[l].groups_of[cpu][0];
        match group.iter().find(|&&c| nr[c] == 0 && !self.ttwu_pending[c]) {
            Some(&first_idle) => first_idle == cpu,
            None => group.first() == Some(&cpu),
        }
    }

    /// Whether `tid` runs on `cpu` at `now_s`, and if queued how long ago it last ran
    /// (`task_hot()`: `rq_clock_task(src_rq) - p->se.exec_start`): tasks sharing a CPU take
    /// turns in thread order, and a task woken from a barrier sleep ran at least until it
    /// stopped to sleep (its `exec_start` is from then), however long ago its turn was.
    fn since_ran(&self, now_s: f64, cpu: usize, tid: usize, live: &[bool]) -> (bool, f64) {
        let (running, since) = self.since_turn(now_s, cpu, tid, live);
        let stopped = self.stopped_s[tid];
        if running || stopped > now_s {
            return (running, since);
        }
        (false, since.min(now_s - stopped))
    }

    /// `since_ran()` from the turn-taking alone.
    fn since_turn(&self, now_s: f64, cpu: usize, tid: usize, live: &[bool]) -> (bool, f64) {
        let mut on: Vec<usize> = (0..self.cpu.len()).filter(|&t| live[t] && self.cpu[t] == cpu).collect();
        on.sort();
        let me = on.iter().position(|&t| t == tid).unwrap_or(0);
        if let Some(nz) = &self.noise {
            if let Some(start) = nz.short_active_since(cpu, now_s) {
                // Short background work preempted the CPU's task at its start.
                return (false, now_s - start);
            }
            if let Some(start) = nz.agent_run_at(cpu, now_s) {
                // The periodic task, a CFS task, takes turns with the CPU's threads: it comes
                // first (woken after a long sleep, it preempts the running thread), the threads
                // after it in thread order.
                return turn(self.slice_s(on.len() + 1), on.len() + 1, me + 1, now_s - start, true);
            }
        }
        let n = on.len();
        if n <= 1 {
            return (true, 0.0);
        }
        // The engine's turns (`turns.rs`): the thread whose turn covers `now_s` runs (the one
        // holding the CPU, or the last one still spinning at a barrier there), a queued one last
        // ran when its last turn ended.
        if let Some(running) = self.running_at(cpu, now_s).filter(|r| on.contains(r)) {
            return if running == tid { (true, 0.0) } else { (false, (now_s - self.stopped_at(tid)).max(0.0)) };
        }
        // Without them (the scheduler on its own): turns as old as the run, no task waits for its first.
        turn(self.slice_s(n), n, me, now_s, false)
    }

    /// The periodic background task on `src` at `now_s`, if it runs there: whether it is
    /// running (its turn, `since_turn()`) and how long ago its last turn ended.
    fn agent_turn(&self, now_s: f64, src: usize, live: &[bool]) -> Option<(bool, f64)> {
        let nz = self.noise.as_ref()?;
        let start = nz.agent_run_at(src, now_s)?;
        if nz.short_active_since(src, now_s).is_some() {
            return Some((false, 0.0));
        }
        let n = (0..self.cpu.len()).filter(|&t| live[t] && self.cpu[t] == src).count();
        Some(turn(self.slice_s(n + 1), n + 1, 0, now_s - start, true))
    }

    /// The statistics of domain `l`'s groups seen from `dst`, in `groups_of[dst]` order
    /// (`update_sd_lb_stats()`, `update_sg_lb_stats()`): v3.13 sums each CPU's `target_load()` /
    /// `source_load()` at the load index of the balancing CPU's state, v6.13 `cpu_load()`, `cpu_util_cfs()` and
    /// `cpu_runnable()` into `group_classify()`. Only CPUs still in `env->cpus` count
    /// (`for_each_cpu_and(i, sched_group_span(group), env->cpus)`): not those in `cleared`; the
    /// group's weight and capacity stay whole (`sgs->group_weight = group->group_weight`).
    fn group_stats(
        &self,
        l: usize,
        dst: usize,
        idle: Idle,
        nr: &[usize],
        sig: &[CpuSig],
        cleared: &[usize],
    ) -> Vec<LbStats> {
        let d = &self.domains[l];
        let pct = d.imbalance_pct as u64;
        // v3.13 get_sd_load_idx().
        let idx = match idle {
            Idle::Busy => d.load_idx.busy,
            Idle::Now => d.load_idx.idle,
            Idle::Newly => d.load_idx.newidle,
        };
        d.groups_of[dst]
            .iter()
            .enumerate()
            .map(|(id, cpus)| {
                // GroupLoad::of() and the group's sums in one walk over its CPUs: the balancer
                // builds these for every group at every level it balances, and the sums are of
                // integers, so one walk gives the same values.
                let by_index = !matches!(self.rules.load.balance, BalanceSignals::LoadUtilRunnable);
                let (mut tasks, mut idle_cpus) = (0usize, 0usize);
                let (mut util, mut runnable, mut weighted, mut load) = (0u64, 0u64, 0u64, 0u64);
                for &c in cpus.iter().filter(|c| !cleared.contains(c)) {
                    tasks += nr[c];
                    // update_sg_lb_stats(): "if (!nr_running && idle_cpu(i)) sgs->idle_cpus++".
                    // idle_cpu() is false while "rq->curr != rq->idle": a newly idle balance runs
                    // in schedule() (pick_next_task_fair()) before the switch to the idle task,
                    // so its own CPU, empty, is not yet idle (kernel/sched/core.c: idle_cpu(),
                    // v2.6.32 to v6.13).
                    let switching = idle == Idle::Newly && c == dst;
                    idle_cpus += usize::from(nr[c] == 0 && !self.ttwu_pending[c] && !switching);
                    util += sig[c].util;
                    runnable += sig[c].runnable;
                    weighted += self.weighted_cpuload(c, sig, nr);
                    load += if by_index { self.biased_load(c, idx, sig, nr, id == 0) } else { sig[c].load };
                }
                let g =
                    GroupLoad { nr: tasks, weight: cpus.len(), idle: idle_cpus, cores: self.group_cores[l][dst][id] };
                let mut st = LbStats { g, load, util, weighted, avg_load: 0, kind: 0 };
                match self.rules.load.balance {
                    BalanceSignals::CpuLoadIndex { .. } | BalanceSignals::QueuedWeightIndex { .. } => {
                        st.avg_load = st.load * CAPACITY / st.capacity();
                    }
                    BalanceSignals::LoadUtilRunnable => {
                        st.kind = group_classify(pct, g.nr, g.weight, util, runnable);
                        // "Computing avg_load makes sense only when group is overloaded".
                        if st.kind == 2 {
                            st.avg_load = st.load * CAPACITY / st.capacity();
                        }
                    }
                }
                st
            })
            .collect()
    }

    /// `find_busiest_queue()` in the busiest group: v3.13 the highest `weighted_cpuload()`; v6.13
    /// by migration type, the highest `cpu_load()`, utilisation (of CPUs running more than one
    /// task) or number of tasks; the first CPU on ties. A CPU whose single task outweighs the
    /// imbalance is skipped when moving load. CPUs in `cleared` are out of `env->cpus`.
    fn busiest_queue(
        &self,
        cpus: &[usize],
        m: Migration,
        nr: &[usize],
        sig: &[CpuSig],
        cleared: &[usize],
    ) -> Option<usize> {
        let mut best: Option<(usize, u64)> = None;
        for &c in cpus.iter().filter(|c| !cleared.contains(c)) {
            let key = match (self.rules.busiest_group, m) {
                (
                    BusiestGroup::Capacity | BusiestGroup::CapacityPerTaskPull,
                    Migration::Load(imb) | Migration::Util(imb),
                ) => {
                    let wl = self.weighted_cpuload(c, sig, nr);
                    if nr[c] == 1 && wl > imb {
                        continue;
                    }
                    wl
                }
                (BusiestGroup::Capacity | BusiestGroup::CapacityPerTaskPull, Migration::Task(_)) => {
                    self.weighted_cpuload(c, sig, nr)
                }
                (BusiestGroup::GroupType | BusiestGroup::GroupTypeTaskDiff, Migration::Load(imb)) => {
                    if nr[c] == 0 || (nr[c] == 1 && sig[c].load > imb) {
                        continue;
                    }
                    sig[c].load
                }
                (BusiestGroup::GroupType | BusiestGroup::GroupTypeTaskDiff, Migration::Util(_)) => {
                    if nr[c] <= 1 {
                        continue;
                    }
                    sig[c].util
                }
                (BusiestGroup::GroupType | BusiestGroup::GroupTypeTaskDiff, Migration::Task(_)) => {
                    if nr[c] == 0 {
                        continue;
                    }
                    nr[c] as u64
                }
            };
            if best.is_none_or(|(_, k)| key > k) {
                best = Some((c, key));
            }
        }
        best.map(|(c, _)| c)
    }

    /// One `load_balance()` of domain `l` for destination `dst`; returns the threads pulled
    /// and whether anything moved (a thread or the periodic task). `sig`: every CPU's signals
    /// if known since the last move (`cpu_signals_memo`).
    #[allow(clippy::too_many_arguments)]
    fn load_balance(
        &mut self,
        now_s: f64,
        dst: usize,
        l: usize,
        idle: Idle,
        nr: &mut [usize],
        live: &[bool],
        sig: &mut Option<Vec<CpuSig>>,
    ) -> (Vec<usize>, bool) {
        let sig = self.cpu_signals_memo(now_s, live, sig);
        if l == 0 && idle != Idle::Newly && self.rules.load.idle_scan == IdleScan::SisUtil {
            self.update_idle_cpu_scan(dst, sig);
        }
        // env->cpus: the CPUs still searched. A busiest CPU whose tasks are all pinned away from
        // `dst` leaves it and the search is redone ("goto redo"); `all_pinned` then stays set
        // (LBF_ALL_PINNED, set again for each busiest CPU and cleared by a task allowed on `dst`).
        let mut cleared: Vec<usize> = Vec::new();
        let mut all_pinned = false;
        // "schedstat_inc(sd->lb_count[idle])", before "redo:".
        self.schedstat.at(l, dst, idle).lb_count += 1;
        loop {
            match self.pull_from_busiest(now_s, (l, dst, idle), nr, live, sig, &cleared) {
                Pulled::Some(got) => return got,
                Pulled::Balanced => {
                    // "goto out_balanced" (LBF_ALL_PINNED kept from an earlier busiest CPU).
                    self.schedstat.at(l, dst, idle).lb_balanced += 1;
                    self.balanced(l, dst, idle, all_pinned);
                    return (Vec::new(), false);
                }
                Pulled::AllPinned(src) => {
                    all_pinned = true;
                    cleared.push(src);
                    if !self.redo_after_all_pinned(l, dst, &cleared) {
                        // v6.x "goto out_all_pinned": as out_balanced for what is modelled
                        // (lb_balanced counted there too, lb_failed not).
                        self.schedstat.at(l, dst, idle).lb_balanced += 1;
                        self.balanced(l, dst, idle, true);
                        return (Vec::new(), false);
                    }
                }
            }
        }
    }

    /// After a busiest CPU whose tasks were all pinned (`load_balance()`, "if
    /// (unlikely(env.flags & LBF_ALL_PINNED))"): whether to search again. v2.6.32 / v3.13: "if
    /// (!cpumask_empty(cpus)) goto redo", `cpus` starting as `cpu_active_mask`: always (the
    /// search ends when no busiest group or CPU is left, "goto out_balanced"). v6.1 / v6.13: "if
    /// (!cpumask_subset(cpus, env.dst_grpmask)) goto redo", `cpus` the domain's span: while a
    /// CPU outside the local group is left.
    fn redo_after_all_pinned(&self, l: usize, dst: usize, cleared: &[usize]) -> bool {
        let d = &self.domains[l];
        match self.rules.busiest_group {
            BusiestGroup::Capacity | BusiestGroup::CapacityPerTaskPull => true,
            BusiestGroup::GroupType | BusiestGroup::GroupTypeTaskDiff => {
                let local = &d.groups_of[dst][0];
                d.span_of[dst].iter().any(|c| !cleared.contains(c) && !local.contains(c))
            }
        }
    }

    /// One search of `load_balance()` over `env->cpus` (all but `cleared`): the busiest group
    /// and CPU, then `detach_tasks()` / active balancing from it.
    #[allow(clippy::too_many_arguments)]
    fn pull_from_busiest(
        &mut self,
        now_s: f64,
        (l, dst, idle): (usize, usize, Idle),
        nr: &mut [usize],
        live: &[bool],
        sig: &[CpuSig],
        cleared: &[usize],
    ) -> Pulled {
        // The groups' CPUs are read in place from the domain (group_stats keeps their order).
        let stats = self.group_stats(l, dst, idle, nr, sig, cleared);
        self.rewrite_rd_overload(now_s, l, dst, nr, cleared);
        let d = &self.domains[l];
        let found = match self.rules.busiest_group {
            BusiestGroup::Capacity => lb_stats::busiest_313(&stats, d, idle),
            BusiestGroup::CapacityPerTaskPull => lb_stats::busiest_2632(&stats, d),
            BusiestGroup::GroupType => lb_stats::busiest_6(&stats, d, l == 0, idle, Spread::SiblingImbalance),
            BusiestGroup::GroupTypeTaskDiff => lb_stats::busiest_6(&stats, d, l == 0, idle, Spread::TaskDiff),
        };
        let Some((b, m)) = found else {
            self.schedstat.at(l, dst, idle).lb_nobusyg += 1;
            return Pulled::Balanced;
        };
        let (local, busiest) = (stats[0], stats[b]);
        let Some(src) = self.busiest_queue(&self.domains[l].groups_of[dst][b], m, nr, sig, cleared) else {
            self.schedstat.at(l, dst, idle).lb_nobusyq += 1;
            return Pulled::Balanced;
        };
        self.schedstat.imbalance(l, dst, idle, m);
        let failed = self.state[l][dst].nr_balance_failed;
        let tries = self.domains[l].cache_nice_tries;
        let path = match idle {
            Idle::Busy => "busy-balance",
            Idle::Now if self.tick_balancing => "idle-tick-balance",
            Idle::Now => "idle-balance",
            Idle::Newly => "newidle-balance",
        };
        let what = || match m {
            Migration::Load(x) => format!("load {x}"),
            Migration::Util(x) => format!("utilisation {x}"),
            Migration::Task(x) => format!("{x} task(s)"),
        };
        let mut pulled = Vec::new();
        // Reasons are written only when decisions are kept (`Why`).
        let mut blocked = Why::new(self.explain);
        let mut left = m.amount() as i64;
        // detach_tasks() (v3.13 move_tasks()): from the tail of the queue (highest thread
        // first here), only when the source runs more than one task.
        let mut cands: Vec<usize> = (0..self.cpu.len()).filter(|&t| live[t] && self.cpu[t] == src).collect();
        cands.sort_by(|a, b| b.cmp(a));
        if nr[src] <= 1 {
            cands.clear();
        }
        // LBF_ALL_PINNED: set when detach_tasks() runs ("if (busiest->nr_running > 1)"), cleared
        // by can_migrate_task() for the first task allowed on `dst` (running or cache hot
        // alike); the periodic background task, when on `src`, is allowed everywhere.
        let detaching = !cands.is_empty();
        let mut pullable = self.noise.as_ref().is_some_and(|nz| nz.agent_run_at(src, now_s).is_some());
        let agent_moved = self.pull_agent(now_s, (l, src, dst, idle), m, &cands, &mut left, nr, live, &mut blocked);
        if agent_moved && idle == Idle::Newly && self.rules.newidle_one_task {
            // The periodic task was the first task detached.
            cands.clear();
        }
        for t in cands {
            // "We only want to steal up to the prescribed amount of load/util/tasks."
            if left <= 0 {
                break;
            }
            // 6.x detach_tasks(): an idle destination never takes the source's last task.
            if idle != Idle::Busy && nr[src] <= 1 {
                break;
            }
            if !self.allowed[t].contains(&dst) {
                blocked.push(|| format!("thread {} pinned", t + 1));
                continue;
            }
            pullable = true;
            let (running, since) = self.since_ran(now_s, src, t, live);
            if running {
                blocked.push(|| format!("thread {} running", t + 1));
                continue;
            }
            // task_hot(): ran less than sysctl_sched_migration_cost ago (SMT siblings share
            // their caches: never hot at that level; no SMT level is modelled).
            if since < MIGRATION_COST_S && failed <= tries {
                blocked.push(|| format!("thread {} cache hot (ran {:.0} us ago)", t + 1, since * 1e6));
                continue;
            }
            let hot = since < MIGRATION_COST_S;
            let load = self.balance_load(t);
            let take = match m {
                Migration::Task(_) => 1,
                Migration::Util(_) => {
                    // v6.13: "util = task_util_est(p)", "shr_bound(util,
                    // env->sd->nr_balance_failed) > env->imbalance".
                    let util = self.task_util_est(t);
                    if (util >> failed.min(63)) as i64 > left {
                        blocked.push(|| format!("thread {} utilisation {util} above {left}", t + 1));
                        continue;
                    }
                    util as i64
                }
                Migration::Load(_) => {
                    let skip = match self.rules.busiest_group {
                        // v3.13 move_tasks(): "if ((load / 2) > env->imbalance) goto next;"
                        // (v2.6.32 balance_tasks(): "(p->se.load.weight >> 1) > rem_load_move").
                        BusiestGroup::Capacity | BusiestGroup::CapacityPerTaskPull => (load / 2) as i64 > left,
                        // v6.13 detach_tasks(): max(task_h_load(p), 1), relaxed by
                        // shr_bound(load, nr_balance_failed).
                        BusiestGroup::GroupType | BusiestGroup::GroupTypeTaskDiff => {
                            (load.max(1) >> failed.min(63)) as i64 > left
                        }
                    };
                    if skip {
                        blocked.push(|| format!("thread {} load {load} above {left}", t + 1));
                        continue;
                    }
                    match self.rules.busiest_group {
                        BusiestGroup::Capacity | BusiestGroup::CapacityPerTaskPull => load as i64,
                        BusiestGroup::GroupType | BusiestGroup::GroupTypeTaskDiff => load.max(1) as i64,
                    }
                }
            };
            left -= take;
            let why = self.explained(|| {
                format!(
                    "{} from CPU {} ({} runnable) to {} CPU {}: busiest group avg_load {} (load {}, util {}, {} tasks) vs local {} (load {}, util {}, {} tasks), imbalance {}",
                    d_name(self, l),
                    self.pu_os[src],
                    nr[src],
                    if idle == Idle::Busy { "busy" } else { "idle" },
                    self.pu_os[dst],
                    busiest.avg_load,
                    busiest.load,
                    busiest.util,
                    busiest.g.nr,
                    local.avg_load,
                    local.load,
                    local.util,
                    local.g.nr,
                    what(),
                )
            });
            nr[src] -= 1;
            nr[dst] += 1;
            self.add_nr_running(nr[dst] - 1, nr[dst]);
            self.migrate(now_s, t, dst, path, l, why);
            pulled.push(t);
            // can_migrate_task(): taken though hot, past cache_nice_tries failures.
            self.schedstat.at(l, dst, idle).lb_hot_gained += u64::from(hot);
            // A preemptible build's newly idle balance stops at its first task.
            if idle == Idle::Newly && self.rules.newidle_one_task {
                break;
            }
        }
        // detach_tasks(): "schedstat_add(env->sd->lb_gained[env->idle], detached)".
        self.schedstat.at(l, dst, idle).lb_gained += pulled.len() as u64 + u64::from(agent_moved);
        let st = &mut self.state[l][dst];
        if !pulled.is_empty() || agent_moved {
            st.nr_balance_failed = 0;
            st.balance_interval_ms = self.domains[l].min_interval_ms(dst);
            self.refresh_due(l, dst);
            return Pulled::Some((pulled, true));
        }
        if detaching && !pullable {
            return Pulled::AllPinned(src);
        }
        // "if (!ld_moved) { schedstat_inc(sd->lb_failed[idle])", before need_active_balance().
        self.schedstat.at(l, dst, idle).lb_failed += 1;
        if idle != Idle::Newly {
            st.nr_balance_failed += 1;
        }
        // need_active_balance(): too many failures; the stopper moves the running task when
        // the source still has at least two.
        let need_active = idle != Idle::Newly && self.state[l][dst].nr_balance_failed > tries + 2;
        let running = need_active
            .then(|| {
                (0..self.cpu.len()).find(|&t| live[t] && self.cpu[t] == src && self.since_ran(now_s, src, t, live).0)
            })
            .flatten();
        if let Some(t) = running.filter(|&t| !self.allowed[t].contains(&dst)) {
            // "Don't kick the active_load_balance_cpu_stop, if the curr task on busiest CPU
            // can't be moved to this_cpu": "goto out_one_pinned", the interval grown and not
            // reset, nr_balance_failed kept. v2.6.32 / v3.13 set LBF_ALL_PINNED there ("all_pinned
            // = 1" / "env.flags |= LBF_ALL_PINNED"); v6.1 / v6.13 keep the flag as detach_tasks()
            // left it: still set only when it did not run (one task on `src`).
            let flag = match self.rules.busiest_group {
                BusiestGroup::Capacity | BusiestGroup::CapacityPerTaskPull => true,
                BusiestGroup::GroupType | BusiestGroup::GroupTypeTaskDiff => !detaching,
            };
            blocked.push(|| format!("running thread {} pinned", t + 1));
            self.grow_interval(l, dst, flag);
            return Pulled::Some((Vec::new(), false));
        }
        let st = &mut self.state[l][dst];
        st.balance_interval_ms = self.domains[l].min_interval_ms(dst);
        self.refresh_due(l, dst);
        if nr[src] >= 2 {
            if let Some(t) = running {
                let why = self.explained(|| {
                    format!(
                        "{} after {} failed attempts ({}): CPU {} pushes its running thread to CPU {}",
                        d_name(self, l),
                        self.state[l][dst].nr_balance_failed,
                        blocked.join(", "),
                        self.pu_os[src],
                        self.pu_os[dst]
                    )
                });
                self.state[l][dst].nr_balance_failed = tries + 1;
                nr[src] -= 1;
                nr[dst] += 1;
                self.add_nr_running(nr[dst] - 1, nr[dst]);
                self.add_nr_running(nr[dst] - 1, nr[dst]);
                self.migrate(now_s, t, dst, "active-balance", l, why);
                return Pulled::Some((vec![t], true));
            }
        }
        Pulled::Some((Vec::new(), false))
    }

    /// `detach_tasks()` for the periodic background task (`noise.rs`), a CFS task like the
    /// threads: taken from `src` when it waits and has waited longest of the queued tasks (the
    /// tail of `cfs_tasks` is the least recently run), under `can_migrate_task()`'s tests (not
    /// running, `task_hot()` unless `nr_balance_failed > cache_nice_tries`) and the amount left.
    /// Returns whether it moved.
    #[allow(clippy::too_many_arguments)]
    fn pull_agent(
        &mut self,
        now_s: f64,
        (l, src, dst, idle): (usize, usize, usize, Idle),
        m: Migration,
        cands: &[usize],
        left: &mut i64,
        nr: &mut [usize],
        live: &[bool],
        blocked: &mut Why,
    ) -> bool {
        if nr[src] <= 1 || *left <= 0 {
            return false;
        }
        let Some((running, since)) = self.agent_turn(now_s, src, live) else {
            return false;
        };
        if running {
            blocked.push(|| "background task running".into());
            return false;
        }
        let lru = cands.iter().all(|&t| {
            let (r, s) = self.since_ran(now_s, src, t, live);
            r || s <= since
        });
        if !lru {
            return false;
        }
        let failed = self.state[l][dst].nr_balance_failed;
        if since < MIGRATION_COST_S && failed <= self.domains[l].cache_nice_tries {
            blocked.push(|| format!("background task cache hot (ran {:.0} us ago)", since * 1e6));
            return false;
        }
        // detach_tasks()'s migrate_util takes task_util_est(p): the larger of its utilisation
        // and its estimate (v6.1 kernel/sched/fair.c).
        let (load, util) = self
            .background_signals(src, now_s)
            .map_or((CAPACITY, 0), |(load, util, _)| (load, util.max(self.background_util_est(src, now_s))));
        let take = match m {
            Migration::Task(_) => 1,
            Migration::Util(_) if (util >> failed.min(63)) as i64 <= *left => util as i64,
            Migration::Load(_) if (load.max(1) >> failed.min(63)) as i64 <= *left => load.max(1) as i64,
            _ => {
                blocked.push(|| format!("background task load {load}, utilisation {util} above {left}"));
                return false;
            }
        };
        if !self.noise.as_mut().is_some_and(|nz| nz.move_agent(src, dst, now_s)) {
            return false;
        }
        *left -= take;
        nr[src] -= 1;
        nr[dst] += 1;
        self.add_nr_running(nr[dst] - 1, nr[dst]);
        // can_migrate_task(): taken though hot, past cache_nice_tries failures.
        self.schedstat.at(l, dst, idle).lb_hot_gained += u64::from(since < MIGRATION_COST_S);
        true
    }

    /// v6.13 `update_idle_cpu_scan()` (from `update_sd_lb_stats()` of the LLC domain, periodic
    /// balancing only): with `x = sum_util / llc_weight` and `pct` the domain's
    /// `imbalance_pct`, `nr_idle_scan = llc_weight x (1024 - min(x^2 x pct^2 / (10000 x
    /// 1024), 1024)) / 1024`: the whole LLC when idle, nothing from 85 % utilisation up.
    fn update_idle_cpu_scan(&mut self, dst: usize, sig: &[CpuSig]) {
        let llc = &self.domains[0].span_of[dst];
        let llc_weight = llc.len() as u64;
        let sum_util: u64 = llc.iter().map(|&c| sig[c].util).sum();
        let x = sum_util / llc_weight.max(1);
        let pct = self.domains[0].imbalance_pct as u64;
        let tmp = (x * x * pct * pct / (10000 * CAPACITY)).min(CAPACITY);
        let y = (CAPACITY - tmp) * llc_weight / CAPACITY;
        self.nr_idle_scan[self.pu_node[dst]] = y as usize;
    }

    /// `load_balance()`'s `out_balanced` / `out_all_pinned`: `nr_balance_failed` reset, then
    /// `out_one_pinned`'s interval growth (`grow_interval()`; past `max_interval` up to
    /// `MAX_PINNED_INTERVAL` when `all_pinned`).
    fn balanced(&mut self, l: usize, cpu: usize, idle: Idle, all_pinned: bool) {
        // Every idle type resets the failures ("sd->nr_balance_failed = 0" before "if
        // (env.idle == CPU_NEWLY_IDLE) goto out"; v2.6.32 load_balance_newidle()'s out_balanced
        // too); newidle_balance() disregards intervals: no growth for it.
        self.state[l][cpu].nr_balance_failed = 0;
        if idle != Idle::Newly {
            self.grow_interval(l, cpu, all_pinned);
        }
    }
}

/// What one search of `load_balance()` came to.
enum Pulled {
    /// Done: the threads pulled and whether anything moved.
    Some((Vec<usize>, bool)),
    /// No busiest group or CPU ("goto out_balanced").
    Balanced,
    /// Every task on this busiest CPU is pinned away from the destination (LBF_ALL_PINNED).
    AllPinned(usize),
}

/// Task `me` of `n` taking turns of `slice` seconds in order, `elapsed` seconds after the first
/// turn began: whether it runs now, and else how long ago its last turn ended (with `fresh`,
/// since the first turn began when it has had none yet: it stopped running then).
fn turn(slice: f64, n: usize, me: usize, elapsed: f64, fresh: bool) -> (bool, f64) {
    let period = slice * n as f64;
    let pos = elapsed.rem_euclid(period);
    let cur = ((pos / slice) as usize).min(n - 1);
    if me == cur {
        return (true, 0.0);
    }
    if fresh && elapsed < (me + 1) as f64 * slice {
        return (false, elapsed);
    }
    (false, (pos - (me + 1) as f64 * slice).rem_euclid(period))
}

fn d_name(s: &Sched, l: usize) -> String {
    s.domains[l].name.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Kernel;

    fn sched(kernel: Kernel) -> Sched {
        sched_of(kernel, 1)
    }

    fn sched_of(kernel: Kernel, threads: usize) -> Sched {
        sched_on(2, kernel, threads)
    }

    /// `threads` unbound threads on two nodes of `cores` cores each.
    fn sched_on(cores: usize, kernel: Kernel, threads: usize) -> Sched {
        let m = crate::sched::test_machines::two_nodes_of(cores);
        let p = crate::sched::test_machines::unbound();
        Sched::new(&m, &p, kernel, 1, threads).unwrap()
    }

    /// Two threads of a 6.13 machine of two nodes of two cores, thread 0 beside a run of the
    /// periodic background task (one of 0.1 s every second, `noise.rs`), thread 1 on the other
    /// node; returns the machine, the shared CPU, its idle sibling and the run's start.
    fn beside_the_agent() -> (Sched, usize, usize, f64) {
        let mut s = sched_of(Kernel::V6_13, 2);
        s.set_background(7, crate::sched::Background::agent_only(1.0, 0.1));
        // Generated with no thread runnable, the run stays on its seeded CPU.
        s.background(0.0, 1.5, &[false, false]);
        let nz = s.noise.as_ref().unwrap();
        let (cpu, start) = (0..4)
            .flat_map(|c| (0..1500).map(move |k| (c, k as f64 * 1e-3)))
            .find_map(|(c, t)| nz.agent_run_at(c, t).map(|st| (c, st)))
            .expect("its first run, at 1 s");
        s.cpu[0] = cpu;
        s.cpu[1] = (cpu + 2) % 4;
        (s, cpu, cpu ^ 1, start)
    }

    /// For the tests that hold threads in place with affinity for a while: CPU `cpu`'s
    /// balancing then met only pinned tasks, backed off (LBF_ALL_PINNED: up to
    /// MAX_PINNED_INTERVAL) and counted no failure (nr_balance_failed = 0). Held in place
    /// otherwise, its balances would have failed: intervals back to min_interval and ten
    /// failures, enough for shr_bound(util or load, nr_balance_failed) to let any thread fit
    /// and for cache-hot threads to go (more than cache_nice_tries).
    fn as_if_held_without_affinity(s: &mut Sched, cpu: usize) {
        for l in 0..s.domains.len() {
            s.state[l][cpu].balance_interval_ms = s.domains[l].min_interval_ms(cpu);
            s.state[l][cpu].nr_balance_failed = 10;
            s.refresh_due(l, cpu);
        }
    }

    /// Threads 0 and 1 created on CPU 0 and thread 2 on CPU 1, each kept there for 300 ms of
    /// balancing (CPU 1's own balancing would take one), then free to move, as if never pinned.
    fn threads_0_and_1_on_cpu_0_for_300_ms(s: &mut Sched) {
        let mut live = [false; 3];
        for t in 0..3 {
            s.place_new(t, (t > 0).then_some(0), &live);
            live[t] = true;
        }
        s.cpu = vec![0, 0, 1];
        let both = s.allowed[0].clone();
        s.allowed = vec![vec![0], vec![0], vec![1]];
        for k in 1..=300 {
            assert!(s.balance(k as f64 * 1e-3, &live).is_empty());
        }
        s.allowed = vec![both; 3];
        as_if_held_without_affinity(s, 1);
    }

    /// Two nodes of one CPU: threads 0 and 1 share CPU 0, thread 2 runs on CPU 1 for 300 ms
    /// (CPU 0's utilisation full: an overloaded group), then ends; what CPU 1's newly idle
    /// balance pulls when one balance of a domain costs `newidle_lb_cost_s` (the only background):
    /// the threads moved and by which path.
    fn newly_idle_after_300_ms(kernel: Kernel, newidle_lb_cost_s: &[f64]) -> Vec<(usize, &'static str)> {
        let mut s = quiet_after_300_ms(kernel, newidle_lb_cost_s, None);
        let before = s.log.len();
        let moved = s.balance(300.2e-3, &[true, true, false]);
        assert_eq!(moved.len(), s.log.len() - before);
        s.log[before..].iter().map(|e| (e.tid, e.path)).collect()
    }

    /// threads_0_and_1_on_cpu_0_for_300_ms() with no background but newly idle balancing's cost
    /// per level and the idle tick's stop share (`idle_tick.rs`), decisions kept.
    fn quiet_after_300_ms(kernel: Kernel, newidle_lb_cost_s: &[f64], tick_stop_share: Option<f64>) -> Sched {
        let mut s = sched_on(1, kernel, 3);
        s.explain = true;
        // A periodic balance as long as a newly idle one's cost: the SD_SERIALIZE lock's hold.
        let bg = crate::sched::Background {
            tick_stop_share,
            ..crate::sched::Background::balancing_only(newidle_lb_cost_s.to_vec(), newidle_lb_cost_s.to_vec())
        };
        s.set_background(1, bg);
        threads_0_and_1_on_cpu_0_for_300_ms(&mut s);
        s
    }

    #[test]
    fn v61_an_idle_cpu_keeps_its_tick_to_the_next_jiffy_and_balances_itself_there_not_by_the_kick() {
        // As newly_idle_after_300_ms() with a 2 ms newly idle cost: CPU 1 goes idle at 300.2 ms
        // beside CPU 0's two threads, its newly idle balance gated. Taken as tickless (no
        // share), CPU 0's kick balances it at once.
        let live = [true, true, false];
        let mut s = quiet_after_300_ms(Kernel::V6_1, &[2e-3], None);
        assert_eq!(s.balance(300.2e-3, &live), vec![1]);
        assert_eq!(s.log.last().unwrap().path, "idle-balance");
        // Keeping its tick to the next jiffy (300.2 ms is jiffy 75.05 at HZ 250), whatever the
        // share: not in nohz.idle_cpus_mask, so the kick has no idle CPU to balance ("if
        // (likely(!atomic_read(&nohz.nr_cpus))) return"); CPU 1 balances itself at its tick
        // (trigger_load_balance() -> rebalance_domains(CPU_IDLE)).
        for share in [0.0, 1.0] {
            let mut s = quiet_after_300_ms(Kernel::V6_1, &[2e-3], Some(share));
            assert!(s.balance(300.2e-3, &live).is_empty());
            assert!(s.idle_tick_due(1, 304.0e-3) && !s.idle_tick_due(1, 303.9e-3));
            assert!(s.balance(302.2e-3, &live).is_empty());
            assert_eq!(s.balance(304.0e-3, &live), vec![1]);
            assert_eq!((s.log.last().unwrap().path, s.cpu[1]), ("idle-tick-balance", 1));
            // Busy now, its tick is no idle one.
            assert!(!s.idle_tick_due(1, 310e-3));
        }
    }

    #[test]
    fn v61_an_idle_cpu_joins_the_nohz_mask_when_a_try_at_its_tick_stops_it() {
        // As above, but all three threads pinned where they are until CPU 1's first tick in idle
        // (304 ms), whose balance so finds nothing to pull; there its idle loop tries to stop the
        // tick. Stopped (share 1), CPU 1 joins nohz.idle_cpus_mask and a later kick from CPU 0
        // balances it (idle-balance); kept (share 0), it is still out of the mask and balances
        // itself at its tick (idle-tick-balance). At 1 s CPU 0's own busy balance of the NUMA
        // level comes first and holds the SD_SERIALIZE lock for the 2 ms cost, so CPU 1's balance
        // skips the level (serialize.rs) and pulls at the next tick.
        let live = [true, true, false];
        let run = |share: f64| {
            let mut s = quiet_after_300_ms(Kernel::V6_1, &[2e-3], Some(share));
            let both = s.allowed[0].clone();
            s.allowed = vec![vec![0], vec![0], vec![1]];
            assert!(s.balance(300.2e-3, &live).is_empty());
            assert!(s.balance(304.0e-3, &live).is_empty());
            s.allowed = vec![both; 3];
            assert_eq!(s.idle_tick_due(1, 1.0), share == 0.0);
            assert!(s.balance(1.0, &live).is_empty());
            // One of CPU 0's two threads, whichever waits then.
            let moved = s.balance(1.004, &live);
            assert!(moved.len() == 1 && s.cpu[moved[0]] == 1 && moved[0] < 2, "{moved:?}");
            s.log.last().unwrap().path
        };
        assert_eq!(run(1.0), "idle-balance");
        assert_eq!(run(0.0), "idle-tick-balance");
    }

    #[test]
    fn with_the_host_model_a_vcpu_that_kept_its_tick_balances_at_it_when_the_host_runs_it() {
        // As above with the host model: CPU 1's last thread blocks in a round the host runs it
        // (newly idle balance gated), and it keeps its tick. Its tick at 304 ms is handled, and
        // balances, only in a round the host runs CPU 1; no kick is sent to it meanwhile
        // (find_new_ilb() searches nohz.idle_cpus_mask only).
        let live = [true, true, false];
        let mut s = quiet_after_300_ms(Kernel::V6_1, &[2e-3], Some(1.0));
        s.newidle_at_host_rounds();
        assert!(s.balance_where_run(300.1e-3, &live, &[false, true]).is_empty());
        assert!(s.balance(300.2e-3, &live).is_empty());
        assert!(!s.nohz_kicked(1));
        assert!(s.balance_where_run(304.2e-3, &live, &[true, false]).is_empty());
        assert!(s.idle_tick_due(1, 304.3e-3));
        assert_eq!(s.balance_where_run(304.3e-3, &live, &[false, true]), vec![1]);
        assert_eq!((s.log.last().unwrap().path, s.cpu[1]), ("idle-tick-balance", 1));
    }

    /// Two nodes of two CPUs (0-1, 2-3); `on[t]` each thread's CPU, `pinned[t]` whether it is
    /// allowed there only. 300 ms of balancing with every thread kept on its CPU gives the
    /// signals; then each thread gets its own affinity. Returns the machine and the NUMA level.
    fn pinned_after_300_ms(kernel: Kernel, on: &[usize], pinned: &[bool]) -> (Sched, usize, Vec<bool>) {
        let n = on.len();
        let mut s = sched_on(2, kernel, n);
        let mut live = vec![false; n];
        for t in 0..n {
            s.place_new(t, None, &live);
            live[t] = true;
        }
        s.cpu = on.to_vec();
        let all = s.allowed[0].clone();
        s.allowed = on.iter().map(|&c| vec![c]).collect();
        for k in 1..=300 {
            assert!(s.balance(k as f64 * 1e-3, &live).is_empty(), "{kernel:?}");
        }
        s.allowed = (0..n).map(|t| if pinned[t] { vec![on[t]] } else { all.clone() }).collect();
        let numa = s.domains.iter().position(|d| d.numa).unwrap();
        (s, numa, live)
    }

    #[test]
    fn a_cpu_whose_busiest_tasks_are_all_pinned_backs_off_to_512_ms() {
        // Four threads pinned to CPU 0. Idle CPU 2's NUMA balance (span 0-3, local group 2-3)
        // finds node 0 busiest and CPU 0 its busiest CPU, every task there pinned
        // (LBF_ALL_PINNED): CPU 0 leaves env->cpus and the search is redone over CPU 1, idle:
        // no busiest group ("goto out_balanced"; 6.x: CPU 1 is left outside the local group,
        // so it is redone too). kernel/sched/fair.c load_balance(), out_one_pinned: nr_balance_failed
        // = 0, balance_interval doubles past max_interval while under MAX_PINNED_INTERVAL, up to
        // 512 ms, then stays. Before this rule each call counted a failure and reset the
        // interval to min_interval. min / max_interval: 3.13 / 6.x the span's weight and twice
        // it (4, 8 ms); 2.6.32 SD_NODE_INIT 8, 32 ms.
        let from_4 = [8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 512.0, 512.0];
        let from_8 = [16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 512.0, 512.0, 512.0];
        for (kernel, min, max, grown) in [
            (Kernel::V2_6_32, 8.0, 32.0, from_8),
            (Kernel::V3_13, 4.0, 8.0, from_4),
            (Kernel::V6_1, 4.0, 8.0, from_4),
            (Kernel::V6_13, 4.0, 8.0, from_4),
        ] {
            let (mut s, numa, live) = pinned_after_300_ms(kernel, &[0, 0, 0, 0], &[true; 4]);
            assert_eq!(s.domains[numa].min_interval_ms(2), min, "{kernel:?}");
            assert_eq!(s.domains[numa].max_interval_ms(2), max, "{kernel:?}");
            s.state[numa][2].balance_interval_ms = min;
            s.state[numa][2].nr_balance_failed = 5;
            let mut seen = Vec::new();
            for k in 0..9 {
                let now = 0.301 + k as f64 * 1e-3;
                let mut nr = s.nr_running(&live, now);
                assert_eq!(s.load_balance(now, 2, numa, Idle::Now, &mut nr, &live, &mut None), (Vec::new(), false));
                assert_eq!(s.state[numa][2].nr_balance_failed, 0, "{kernel:?}");
                seen.push(s.state[numa][2].balance_interval_ms);
            }
            assert_eq!(seen, grown, "{kernel:?}");
            // The next balance is due an interval after this one (an idle CPU: 512 ms = 128
            // jiffies at HZ 250, under max_load_balance_interval = HZ x 4 / 10 = 100 jiffies in
            // 3.13 / 6.x: capped at 0.4 s; 2.6.32's HZ x NR_CPUS / 10 does not bind).
            let wait = s.state[numa][2].due_s[0] - s.state[numa][2].last_balance_s;
            let expect = if kernel == Kernel::V2_6_32 { 0.512 } else { 0.4 };
            assert!((wait - expect).abs() < 1e-9, "{kernel:?}: {wait}");
        }
    }

    #[test]
    fn a_newly_idle_balance_meeting_only_pinned_tasks_leaves_the_interval_and_resets_failures() {
        // As above through newidle_balance(): v6.x load_balance() "if (env.idle ==
        // CPU_NEWLY_IDLE) goto out" before the interval is grown, after out_balanced's
        // "sd->nr_balance_failed = 0" (which periodic balances' failures had raised).
        for kernel in [Kernel::V3_13, Kernel::V6_1, Kernel::V6_13] {
            let (mut s, numa, live) = pinned_after_300_ms(kernel, &[0, 0, 0, 0], &[true; 4]);
            s.state[numa][2].balance_interval_ms = 4.0;
            s.state[numa][2].nr_balance_failed = 5;
            let mut nr = s.nr_running(&live, 0.301);
            assert_eq!(s.load_balance(0.301, 2, numa, Idle::Newly, &mut nr, &live, &mut None), (Vec::new(), false));
            assert_eq!((s.state[numa][2].balance_interval_ms, s.state[numa][2].nr_balance_failed), (4.0, 0));
        }
    }

    #[test]
    fn after_an_all_pinned_cpu_the_balance_pulls_from_the_next_busiest() {
        // Threads 0-2 pinned to CPU 0, threads 3-5 free on CPU 1. Idle CPU 2's NUMA balance
        // picks CPU 0 (three tasks, the most load), finds all pinned, clears it from env->cpus
        // and redoes the search ("goto redo"): node 0 is now CPU 1 alone (its load, util and
        // tasks; weight and capacity still two CPUs'), still the busiest group, and CPU 1 gives
        // threads. Without the redo nothing moves (every task examined on CPU 0 is pinned). Tasks cache hot would stay: nr_balance_failed > cache_nice_tries lifts that.
        for kernel in [Kernel::V2_6_32, Kernel::V3_13, Kernel::V6_1, Kernel::V6_13] {
            let on = [0, 0, 0, 1, 1, 1];
            let (mut s, numa, live) = pinned_after_300_ms(kernel, &on, &[true, true, true, false, false, false]);
            s.state[numa][2].nr_balance_failed = s.domains[numa].cache_nice_tries + 1;
            let mut nr = s.nr_running(&live, 0.301);
            let (got, moved) = s.load_balance(0.301, 2, numa, Idle::Now, &mut nr, &live, &mut None);
            // (3.13 moves two: its imbalance, load-based, covers two threads' weight.)
            assert!(moved && !got.is_empty() && got.iter().all(|t| (3..6).contains(t)), "{kernel:?}: {got:?}");
            assert!(got.iter().all(|&t| s.cpu[t] == 2));
            // A move resets the interval and the failures.
            assert_eq!(s.state[numa][2].nr_balance_failed, 0);
            assert_eq!(s.state[numa][2].balance_interval_ms, s.domains[numa].min_interval_ms(2));
        }
    }

    #[test]
    fn v61_a_newly_idle_cpu_whose_idle_spells_are_shorter_than_a_balance_does_not_pull() {
        // kernel/sched/fair.c v6.1 newidle_balance(): "this_rq->avg_idle <
        // sd->max_newidle_lb_cost" skips the balance; rq->avg_idle starts at 2 x
        // sysctl_sched_migration_cost = 1 ms (kernel/sched/core.c: sched_init()). Free
        // balancing, or a balance of 0.4 ms (1 ms of average idleness covers it): CPU 1 pulls a
        // thread of CPU 0 (the overloaded group's, migrate_util).
        let newidle = vec![(1, "newidle-balance")];
        assert_eq!(newly_idle_after_300_ms(Kernel::V6_1, &[0.0]), newidle);
        assert_eq!(newly_idle_after_300_ms(Kernel::V6_1, &[0.4e-3]), newidle);
        // Costing 2 ms (the TCG guest's, docs/scheduler.md §10.4): no newly idle balance; the
        // idle CPU's periodic balance (due, kicked by CPU 0's two tasks) takes the thread
        // instead. 6.13's sched_balance_newidle() reads the same.
        let periodic = vec![(1, "idle-balance")];
        assert_eq!(newly_idle_after_300_ms(Kernel::V6_1, &[2e-3]), periodic);
        assert_eq!(newly_idle_after_300_ms(Kernel::V6_13, &[2e-3]), periodic);
        assert_eq!(newly_idle_after_300_ms(Kernel::V6_13, &[0.0]), newidle);
    }

    /// threads_0_and_1_on_cpu_0_for_300_ms() under 6.1 with the host model's balancing rounds.
    fn hosted_after_300_ms() -> Sched {
        let mut s = sched_on(1, Kernel::V6_1, 3);
        threads_0_and_1_on_cpu_0_for_300_ms(&mut s);
        s.newidle_at_host_rounds();
        s.explain = true;
        s
    }

    #[test]
    fn with_the_host_model_a_vcpu_balances_newly_idle_only_at_a_round_the_host_runs_it() {
        // As newly_idle_after_300_ms() (newly idle balancing free): thread 2 on CPU 1 has
        // blocked beside CPU 0's two threads. In the guest newidle_balance() runs in CPU 1's own
        // schedule() (pick_next_task_fair(), label idle), so only while the host runs CPU 1.
        let hosted = hosted_after_300_ms;
        let live = [true, true, false];
        // A round in which the host ran CPU 0 only: CPU 1 does not balance, and stays due.
        let mut s = hosted();
        assert!(s.newidle_where_run(300.1e-3, &live, &[true, false]).is_empty());
        // The next round runs CPU 1: it balances newly idle then and takes thread 1 (CPU 0's
        // queued one); the round after finds it busy and balances nothing more.
        assert_eq!(s.newidle_where_run(300.2e-3, &live, &[false, true]), vec![1]);
        assert_eq!((s.log.last().unwrap().path, s.cpu[1]), ("newidle-balance", 1));
        assert!(s.newidle_where_run(300.3e-3, &[true, true, false], &[false, true]).is_empty());
        // The epoch's end no longer balances newly idle: without the host model the newly idle
        // balance takes the thread there (newly_idle_after_300_ms()).
        let mut s = hosted();
        let before = s.log.len();
        s.balance(300.2e-3, &live);
        assert!(s.log[before..].iter().all(|e| e.path != "newidle-balance"));
        assert_eq!(newly_idle_after_300_ms(Kernel::V6_1, &[0.0]), vec![(1, "newidle-balance")]);
    }

    #[test]
    fn with_the_host_model_the_kicked_idle_vcpu_balances_the_idle_ones_when_the_host_runs_it() {
        // As newly_idle_after_300_ms() with a 2 ms newly idle cost: CPU 1's newly idle balance
        // is gated, and its due idle balance, on CPU 0's kick (nr_running >= 2), takes thread 1
        // at once without the host model. With it, nohz_balancer_kick() kicks CPU 1 (the first
        // idle CPU, find_new_ilb()) and the balance waits for the host to run CPU 1.
        let hosted = || {
            let mut s = hosted_after_300_ms();
            // CPU 1 went idle rounds ago: no newly idle balance pending.
            s.was_busy[1] = false;
            s
        };
        let live = [true, true, false];
        let mut s = hosted();
        assert!(s.balance(300.2e-3, &live).is_empty());
        assert!(s.nohz_kicked(1) && !s.nohz_kicked(0));
        // A round on CPU 0 only: nothing; then the host runs CPU 1, which takes thread 1 by its
        // idle balance, and the kick is spent.
        assert!(s.balance_where_run(300.3e-3, &live, &[true, false]).is_empty());
        assert_eq!(s.balance_where_run(300.4e-3, &live, &[false, true]), vec![1]);
        assert_eq!((s.log.last().unwrap().path, s.cpu[1]), ("idle-balance", 1));
        assert!(!s.nohz_kicked(1));
        // Kicked, CPU 1 gets a task of its own before the host runs it (thread 2 woken there):
        // no longer idle, it balances nothing (nohz_idle_balance(): "if (idle != CPU_IDLE)").
        let mut s = hosted();
        assert!(s.balance(300.2e-3, &live).is_empty());
        assert!(s.balance_where_run(300.4e-3, &[true, true, true], &[false, true]).is_empty());
        assert!(!s.nohz_kicked(1) && s.cpu[..2] == [0, 0]);
    }

    #[test]
    fn v61_a_task_on_a_wake_list_is_neither_pulled_nor_counted_until_its_cpu_takes_it() {
        // As newly_idle_after_300_ms(): CPU 1 goes newly idle beside CPU 0's two threads, but
        // thread 1 waits on CPU 0's wake list (kernel/sched/core.c: ttwu_queue_wakelist(); a
        // halted vCPU the host has not run since the wake-up). Not on CPU 0's run queue,
        // detach_tasks() cannot take it and CPU 0 runs one task: nothing moves, and CPU 0's
        // one task does not kick idle balancing (nohz_balancer_kick(): nr_running >= 2).
        let mut s = sched_on(1, Kernel::V6_1, 3);
        threads_0_and_1_on_cpu_0_for_300_ms(&mut s);
        s.queue_wakelist(1);
        assert!(s.balance(300.2e-3, &[true, true, false]).is_empty());
        assert!(s.balance(320e-3, &[true, true, false]).is_empty());
        // Those balances found CPU 1's domains balanced: out_balanced reset the failures the
        // setup gave it, newly idle or not ("sd->nr_balance_failed = 0").
        assert!(s.state.iter().all(|st| st[1].nr_balance_failed == 0));
        // CPU 0 handles its IPI: thread 1 is queued there, and idle CPU 1 takes it (with the
        // failures back, so that the thread it shared CPU 0 with moments ago is not hot).
        as_if_held_without_affinity(&mut s, 1);
        s.flush_wakelist(0, 340e-3, &[true, true, false]);
        assert_eq!(s.balance(340e-3, &[true, true, false]), vec![1]);
    }

    /// Two nodes of two CPUs under `kernel`: threads 0-3 on CPU 0, thread 4 on CPU 1, which it
    /// leaves at 300.2 ms; `setup` changes the scheduler before CPU 1 goes newly idle. Returns it
    /// after that balance.
    fn newly_idle_beside_four(kernel: Kernel, setup: impl FnOnce(&mut Sched)) -> Sched {
        let mut s = sched_on(2, kernel, 5);
        let mut live = [false; 5];
        for t in 0..5 {
            s.place_new(t, (t > 0).then_some(0), &live);
            live[t] = true;
        }
        s.cpu = vec![0, 0, 0, 0, 1];
        let all = s.allowed[0].clone();
        s.allowed = vec![vec![0], vec![0], vec![0], vec![0], vec![1]];
        for k in 1..=300 {
            assert!(s.balance(k as f64 * 1e-3, &live).is_empty());
        }
        s.allowed = vec![all; 5];
        // Those 300 ms cleared the root domain's overload flag (`overload.rs`): each NUMA balance
        // found CPU 0's tasks all pinned and redid its search without CPU 0, and
        // update_sd_lb_stats() over env->cpus saw no CPU with two tasks. So CPU 1's newly idle
        // balance would be skipped; the threads are taken as just woken onto CPU 0 (its run
        // queue from one task to two and on): the flag set.
        if s.rules.rd_overload {
            assert!(!s.rd_overload);
            s.rd_overload = true;
        }
        setup(&mut s);
        s.balance(300.2e-3, &[true, true, true, true, false]);
        s
    }

    #[test]
    fn a_newly_idle_cpu_is_not_yet_idle_in_its_own_groups_statistics() {
        // update_sg_lb_stats() counts idle_cpus by idle_cpu(), false while rq->curr is not the
        // idle task: in a newly idle balance (schedule() -> pick_next_task_fair() ->
        // newidle_balance(), before the switch) the balancing CPU is empty but not idle. Two
        // nodes of two CPUs; CPU 1 (empty) balances the NUMA level, CPU 3 is empty too.
        let s = sched_on(2, Kernel::V6_1, 1);
        let numa = s.domains.iter().position(|d| d.numa).unwrap();
        let nr = [1, 0, 2, 0];
        let sig = vec![CpuSig::default(); 4];
        let idle_of =
            |idle: Idle| s.group_stats(numa, 1, idle, &nr, &sig, &[]).iter().map(|g| g.g.idle).collect::<Vec<_>>();
        assert_eq!(idle_of(Idle::Newly), vec![0, 1]);
        // The same CPU balancing from the idle task (periodic or NOHZ balance) counts itself.
        assert_eq!(idle_of(Idle::Now), vec![1, 1]);
    }

    #[test]
    fn v61_schedstat_counts_a_newly_idle_pull_as_load_balance_does() {
        // CPU 1's newly idle balance at MC finds CPU 0 busiest and pulls one task (one per
        // newly idle balance, CONFIG_PREEMPTION): lb_count, lb_imbalance (calculate_imbalance():
        // (4 - 0) >> 1 = 2 tasks), lb_gained; nothing balanced, failed or hot; NUMA not tried.
        let s = newly_idle_beside_four(Kernel::V6_1, |_| {});
        let newly = |l: usize| s.schedstat.lb[l][1][2];
        assert_eq!(newly(0).as_array(), [1, 0, 0, 2, 1, 0, 0, 0]);
        assert_eq!(newly(1).lb_count, 0);
        let (domains, gate) = s.lb_schedstat(1);
        assert_eq!(domains.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(), ["MC", "NUMA21"]);
        assert_eq!(domains[0].1[2], [1, 0, 0, 2, 1, 0, 0, 0]);
        assert_eq!((gate.calls, gate.pulled, gate.no_overload, gate.random_skip), (1, 1, 0, 0));
    }

    /// Three nodes of one CPU (6.1): threads 0-5 on CPU 0 for 300 ms of balancing, held there,
    /// then free, CPUs 1 and 2 idle, each NUMA balance holding the SD_SERIALIZE lock for
    /// `cost_s` (the newly idle cost). CPU 1 then CPU 2, `gap_s` later, balance themselves as
    /// idle (as at their kept ticks, 10 ms on); returns the threads each pulled and CPU 2's
    /// NUMA `load_balance()` calls as idle in its balance.
    fn two_idle_cpus_balance_numa(cost_s: f64, gap_s: f64) -> (Vec<usize>, Vec<usize>, u64) {
        let m = crate::sched::test_machines::three_nodes_of_one();
        let p = crate::sched::test_machines::unbound();
        let mut s = Sched::new(&m, &p, Kernel::V6_1, 1, 6).unwrap();
        let mut live = [false; 6];
        for t in 0..6 {
            s.place_new(t, (t > 0).then_some(0), &live);
            live[t] = true;
        }
        s.cpu = vec![0; 6];
        let all = s.allowed[0].clone();
        s.allowed = vec![vec![0]; 6];
        for k in 1..=300 {
            assert!(s.balance(k as f64 * 1e-3, &live).is_empty());
        }
        s.allowed = vec![all; 6];
        as_if_held_without_affinity(&mut s, 1);
        as_if_held_without_affinity(&mut s, 2);
        s.balancing.set_holds(&s.domains, &[cost_s]);
        let numa = s.domains.iter().position(|d| d.numa).unwrap();
        let pulls = |s: &mut Sched, cpu: usize, t: f64| {
            let (live, mut nr) = s.run_queues(t, &live);
            assert_eq!(nr[cpu], 0);
            s.rebalance_domains(t, cpu, cpu, &mut nr, &live, &mut None)
        };
        let first = pulls(&mut s, 1, 0.31);
        let before = s.schedstat.lb[numa][2][0].lb_count;
        let second = pulls(&mut s, 2, 0.31 + gap_s);
        (first, second, s.schedstat.lb[numa][2][0].lb_count - before)
    }

    #[test]
    fn v61_a_numa_balance_within_another_cpus_hold_of_the_serialize_lock_is_skipped() {
        // rebalance_domains(): "if (!spin_trylock(&balancing)) goto out" on SD_SERIALIZE
        // (SD_NUMA) levels. Within CPU 1's 3 ms hold, CPU 2's balance skips the level: no
        // load_balance() call, no pull.
        let (first, second, calls) = two_idle_cpus_balance_numa(3e-3, 1e-3);
        assert!(!first.is_empty());
        assert_eq!((second.len(), calls), (0, 0));
        // After the hold, or with no cost (no run measured one), both balance and pull.
        for (cost_s, gap_s) in [(3e-3, 3.5e-3), (0.0, 0.0)] {
            let (first, second, calls) = two_idle_cpus_balance_numa(cost_s, gap_s);
            assert!(!first.is_empty() && !second.is_empty(), "cost {cost_s} gap {gap_s}");
            assert_eq!(calls, 1);
        }
    }

    #[test]
    fn the_serialize_locks_hold_is_the_backgrounds_balance_time_not_the_newly_idle_cost() {
        // The lock is held for Background::lb_time_s (the guest's typical balance), per attached
        // level; the newly idle max_newidle_lb_cost (a maximum with the host's preemptions in
        // it) does not hold it, and without a balance time no balance holds it at all.
        let held = |newidle_lb_cost_s: Vec<f64>, lb_time_s: Vec<f64>| {
            let mut s = sched_on(1, Kernel::V6_1, 3);
            let bg = crate::sched::Background::balancing_only(newidle_lb_cost_s, lb_time_s);
            s.set_background(1, bg);
            let numa = s.domains.iter().position(|d| d.numa).unwrap();
            (0..2).map(|cpu| s.balancing.hold_s(cpu, numa)).collect::<Vec<_>>()
        };
        assert_eq!(held(vec![3e-3], Vec::new()), [0.0, 0.0]);
        assert_eq!(held(vec![3e-3], vec![17e-6]), [17e-6, 17e-6]);
    }

    #[test]
    fn v61_the_lowest_attached_domains_cut_off_is_the_avg_idle_gate_on_one_cpu_nodes() {
        // Two nodes of one CPU (vm-4's shape): MC spans one CPU and is not attached
        // (sd_degenerate()), so this_rq->sd is the NUMA level and newidle_balance()'s first test,
        // "this_rq->avg_idle < sd->max_newidle_lb_cost" ("goto out"), is against its cost; the
        // explained counters call it the avg_idle gate, not a higher level's cost break. CPU 0
        // holds threads 0 and 1, CPU 1 has just emptied; avg_idle is its initial 1 ms.
        let newly_idle = |cost_s: f64| {
            let mut s = sched_on(1, Kernel::V6_1, 3);
            s.cpu = vec![0, 0, 1];
            s.rd_overload = true;
            s.ni_random = None;
            s.idle_avg.set_costs(&s.domains, &[cost_s]);
            let (mut nr, mut sig) = (vec![2, 0], None);
            s.newidle_balance(0.1, 1, &mut nr, &[true, true, false], &mut sig);
            let numa = s.domains.iter().position(|d| d.numa).unwrap();
            (s.schedstat.newidle[1], s.schedstat.lb[numa][1][2].lb_count)
        };
        // A 2 ms cost: skipped before any domain.
        let (gate, numa_calls) = newly_idle(2e-3);
        assert_eq!((gate.calls, gate.avg_idle, gate.cost_break, numa_calls), (1, 1, 0, 0));
        // A 0.5 ms cost: the NUMA level is balanced, no gate counted.
        let (gate, numa_calls) = newly_idle(0.5e-3);
        assert_eq!((gate.calls, gate.avg_idle, gate.cost_break, numa_calls), (1, 0, 0, 1));
    }

    #[test]
    fn v61_a_newly_idle_balance_raises_its_levels_cost_to_the_balance_time_and_the_next_call_is_gated() {
        // update_newidle_cost(sd, t1 - t0) after each newly idle load_balance(): the level's
        // max_newidle_lb_cost becomes the balance's time when larger. Two nodes of one CPU; CPU 0
        // holds threads 0 and 1, CPU 1 has just emptied, avg_idle its initial 1 ms; the NUMA
        // level starts at sd_init()'s 0 and one balance takes 1.5 ms (as one the host stops).
        let mut s = sched_on(1, Kernel::V6_1, 3);
        s.set_background(1, crate::sched::Background::balancing_only(Vec::new(), vec![1.5e-3]));
        s.ni_random = None;
        let numa = s.domains.iter().position(|d| d.numa).unwrap();
        let call = |s: &mut Sched, now_s: f64| {
            s.cpu = vec![0, 0, 1];
            s.rd_overload = true;
            let (mut nr, mut sig) = (vec![2, 0], None);
            s.newidle_balance(now_s, 1, &mut nr, &[true, true, false], &mut sig);
            (s.schedstat.newidle[1], s.schedstat.lb[numa][1][2].lb_count)
        };
        let (gate, numa_calls) = call(&mut s, 0.1);
        assert_eq!((gate.avg_idle, numa_calls), (0, 1));
        assert_eq!(s.idle_avg.level_cost_s(1, numa), 1.5e-3);
        // The next call finds avg_idle (1 ms) under the 1.5 ms cost: skipped before any domain.
        let (gate, numa_calls) = call(&mut s, 0.2);
        assert_eq!((gate.calls, gate.avg_idle, numa_calls), (2, 1, 1));
        // The other CPU's own domain keeps its cost.
        assert_eq!(s.idle_avg.level_cost_s(0, numa), 0.0);
    }

    #[test]
    fn v61_a_newly_idle_balance_the_host_stops_costs_its_time_plus_the_wait_and_shuts_the_gate() {
        // As above with a 16 us balance (vm-4's NUMA16): unstopped it raises the cost to 16 us
        // and the next call balances again; with the host model's counts for CPU 1's thread at
        // a switch every 0.1 us of running (a stop inside every 16 us window) and 3 ms waits
        // after them, the cost becomes 3.016 ms, counted as stopped, and the next call is
        // skipped against avg_idle's 1 ms (docs/scheduler.md §10.27).
        let run = |stops: bool| {
            let mut s = sched_on(1, Kernel::V6_1, 3);
            s.set_background(1, crate::sched::Background::balancing_only(Vec::new(), vec![16e-6]));
            s.ni_random = None;
            s.host_stops_inside_balances(1);
            if stops {
                s.host_thread_seen(1, 1.0, 10_000_000, &[3e-3; 1000]);
            }
            let numa = s.domains.iter().position(|d| d.numa).unwrap();
            for now_s in [0.1, 0.2] {
                s.cpu = vec![0, 0, 1];
                s.rd_overload = true;
                let (mut nr, mut sig) = (vec![2, 0], None);
                s.newidle_balance(now_s, 1, &mut nr, &[true, true, false], &mut sig);
                if now_s == 0.1 {
                    assert!((s.idle_avg.level_cost_s(1, numa) - if stops { 3.016e-3 } else { 16e-6 }).abs() < 1e-12);
                }
            }
            (s.schedstat.newidle[1], s.schedstat.lb[numa][1][2].lb_count)
        };
        let (gate, numa_calls) = run(false);
        assert_eq!((gate.avg_idle, gate.host_stopped, numa_calls), (0, 0, 2));
        let (gate, numa_calls) = run(true);
        assert_eq!((gate.avg_idle, gate.host_stopped, numa_calls), (1, 1, 1));
    }

    #[test]
    fn v61_ni_random_skips_mc_and_balances_numa_without_mcs_cost() {
        // sched_balance_newidle() with NI_RANDOM: MC's ratio at 0 (weight 1: the die skips it
        // unless it shows 0 or 1), the NUMA level's at 1023 (never skipped). Each level costs
        // 0.6 ms and avg_idle is its initial 1 ms: a skipped MC adds no cost ("continue" before
        // curr_cost += domain_cost), so NUMA is balanced. Node 0 holds CPU 1 and the busy CPU 0,
        // node 1 is idle: no busiest group there (lb_nobusyg), nothing pulled newly idle (the
        // periodic balances of the same moment do pull).
        let s = newly_idle_beside_four(Kernel::V6_1, |s| {
            s.idle_avg.set_costs(&s.domains, &[0.6e-3]);
            let mut ni = super::super::ni_random::NiRandom::new(s.domains.len(), 4, 11);
            ni.set_ratio(0, 1, 0);
            ni.set_ratio(1, 1, 1023);
            s.ni_random = Some(ni);
        });
        let newly = |l: usize| s.schedstat.lb[l][1][2];
        assert_eq!(newly(0).lb_count, 0);
        assert_eq!(newly(1).as_array(), [1, 1, 0, 0, 0, 0, 0, 1]);
        let gate = s.schedstat.newidle[1];
        assert_eq!((gate.calls, gate.random_skip, gate.cost_break, gate.pulled), (1, 1, 0, 0));
        // Without the die the same balance pulls at MC and stops there.
        let s = newly_idle_beside_four(Kernel::V6_1, |s| s.idle_avg.set_costs(&s.domains, &[0.6e-3]));
        assert_eq!((s.schedstat.lb[0][1][2].lb_gained, s.schedstat.lb[1][1][2].lb_count), (1, 0));
    }

    #[test]
    fn a_preemptible_build_pulls_one_task_per_newly_idle_balance() {
        // Two nodes of two CPUs: threads 0-3 share CPU 0 for 300 ms, thread 4 runs on CPU 1,
        // then sleeps. CPU 1's newly idle balance at MC (one CPU per group, SD_SHARE_PKG_RESOURCES)
        // finds CPU 0 overloaded against its spare capacity: calculate_imbalance() asks for
        // (4 - 0) >> 1 = 2 tasks. Under CONFIG_PREEMPTION (Debian's 6.1 and 6.12 builds, so the
        // 6.1 and 6.13 profiles) detach_tasks() stops after the first; the same 6.13 rules
        // built without it (PREEMPT_NONE or PREEMPT_VOLUNTARY, no PREEMPT_DYNAMIC) take both.
        let newly_idle_pulls = |kernel: Kernel, one_task: Option<bool>| {
            let s = newly_idle_beside_four(kernel, |s| {
                if let Some(one_task) = one_task {
                    let rules = crate::profile::SchedRules { newidle_one_task: one_task, ..s.rules.clone() };
                    s.rules = Box::leak(Box::new(rules));
                }
                s.explain = true;
            });
            s.log.iter().filter(|e| e.path == "newidle-balance").map(|e| (e.to, e.level.clone())).collect::<Vec<_>>()
        };
        assert_eq!(newly_idle_pulls(Kernel::V6_1, None), vec![(1, "MC".to_string())]);
        assert_eq!(newly_idle_pulls(Kernel::V6_13, None), vec![(1, "MC".to_string())]);
        assert_eq!(newly_idle_pulls(Kernel::V6_13, Some(false)), vec![(1, "MC".to_string()); 2]);
    }

    /// 6.1 on two nodes of one CPU, a thread on each.
    fn v61_one_thread_per_node() -> Sched {
        let m = crate::sched::test_machines::two_nodes_of(1);
        let mut s = Sched::new(&m, &crate::sched::test_machines::unbound(), Kernel::V6_1, 1, 2).unwrap();
        s.cpu = vec![0, 1];
        s
    }

    #[test]
    fn v61_short_idle_spells_bring_avg_idle_under_the_cost() {
        // A CPU idle 0.1 ms at a time: avg_idle falls from 1 ms by an eighth of the difference
        // per spell (kernel/sched/sched.h: update_avg()), under a 0.5 ms balance after 6 spells
        // (1 -> 0.888 -> 0.789 -> 0.703 -> 0.627 -> 0.561 -> 0.503 -> 0.453 ms: 7).
        let mut s = v61_one_thread_per_node();
        let mut t = 0.0;
        let mut spells = 0;
        while s.idle_avg.allows(1, 0, &[0.5e-3]) && spells < 100 {
            t += 5e-3;
            s.balance(t, &[true, true]);
            s.balance(t + 1e-3, &[true, false]);
            // Its thread woken onto it (kernel/sched/core.c: ttwu_do_wakeup()).
            s.ttwu_do_wakeup(1, t + 1.1e-3);
            s.balance(t + 1.1e-3, &[true, true]);
            spells += 1;
        }
        assert_eq!(spells, 7);
    }

    #[test]
    fn v61_a_cpu_given_work_without_a_wake_up_keeps_its_idle_spell_open() {
        // ttwu_do_wakeup() alone closes rq->idle_stamp: CPU 1 goes idle at 1 ms (newidle_balance()
        // sets the stamp), has its thread back at 1.1 ms without a wake-up (as when another CPU's
        // balance attaches a task): no sample, avg_idle stays 1 ms. A wake-up at 1.2 ms closes
        // the spell: 1 + (0.2 - 1) / 8 = 0.9 ms.
        let mut s = v61_one_thread_per_node();
        s.balance(0.5e-3, &[true, true]);
        s.balance(1e-3, &[true, false]);
        s.balance(1.1e-3, &[true, true]);
        assert_eq!(s.idle_avg.avg_idle_s(1), 1e-3);
        s.ttwu_do_wakeup(1, 1.2e-3);
        assert!((s.idle_avg.avg_idle_s(1) - 0.9e-3).abs() < 1e-12);
    }

    #[test]
    fn a_pull_is_the_same_whether_its_reasons_are_kept_or_not() {
        // The reasons (blocked threads, the move's why) are written only under --explain-sched:
        // the decision and the count of decisions are the same without them.
        let live = [true, true];
        let mut outcomes = Vec::new();
        for explain in [true, false] {
            let (mut s, _, idle, start) = beside_the_agent();
            s.explain = explain;
            let now = start + 6.0e-3;
            let mut nr = s.nr_running(&live, now);
            let out = s.load_balance(now, idle, 0, Idle::Newly, &mut nr, &live, &mut None);
            assert_eq!(s.log_total, 1);
            match s.log.last() {
                Some(e) => assert!(explain && e.why.contains("imbalance") && e.to == idle, "{}", e.why),
                None => assert!(!explain),
            }
            outcomes.push((out, s.cpu.clone(), nr));
        }
        assert_eq!(outcomes[0], outcomes[1]);
        assert_eq!(outcomes[0].0, (vec![0], true));
    }

    #[test]
    fn a_newly_idle_cpu_pulls_the_periodic_task_while_it_waits_its_turn() {
        // kernel/sched/fair.c detach_tasks(): the task is a CFS task like the threads; it and
        // the thread beside it take turns (6.13's base slice, 0.75 ms x update_sysctl()'s 3 on 4
        // CPUs = 2.25 ms, the task first: woken after a long sleep, it preempts the thread). In
        // the thread's turn (2.25-4.5 ms) the task waits, ran more than
        // sysctl_sched_migration_cost ago at 1.5 ms into it, and is taken; its run goes on on
        // the idle CPU.
        let live = [true, true];
        let (mut s, cpu, idle, start) = beside_the_agent();
        assert!((s.slice_s(2) - 2.25e-3).abs() < 1e-12);
        let now = start + 3.75e-3;
        let mut nr = s.nr_running(&live, now);
        assert_eq!((nr[cpu], nr[idle]), (2, 0));
        let (threads, moved) = s.load_balance(now, idle, 0, Idle::Newly, &mut nr, &live, &mut None);
        assert!(threads.is_empty() && moved);
        let nz = s.noise.as_ref().unwrap();
        assert_eq!((nz.agent_run_at(idle, now + 1e-3), nz.agent_run_at(cpu, now + 1e-3)), (Some(now), None));
        assert!(nz.active_at(idle, start + 0.099) && !nz.active_at(idle, start + 0.101));
        assert_eq!(s.cpu, vec![cpu, (cpu + 2) % 4]);
        // In the task's next turn (4.5-6.75 ms) the thread waits, 1.5 ms since its turn ended:
        // the thread is taken, not the running task.
        let (mut s, cpu, idle, start) = beside_the_agent();
        let now = start + 6.0e-3;
        let mut nr = s.nr_running(&live, now);
        let (threads, moved) = s.load_balance(now, idle, 0, Idle::Newly, &mut nr, &live, &mut None);
        assert!(moved && threads == vec![0], "{threads:?}");
        assert_eq!(s.noise.as_ref().unwrap().agent_run_at(cpu, now + 1e-3), Some(start));
        // Waiting only 0.2 ms (its turn ended at 2.25 ms): cache hot, and the thread runs.
        let (mut s, cpu, idle, start) = beside_the_agent();
        let now = start + 2.45e-3;
        let mut nr = s.nr_running(&live, now);
        assert_eq!(s.load_balance(now, idle, 0, Idle::Newly, &mut nr, &live, &mut None), (Vec::new(), false));
        assert_eq!(s.noise.as_ref().unwrap().agent_run_at(cpu, now), Some(start));
    }

    #[test]
    fn rhel6s_2632_balances_an_idle_cpu_every_ms_where_3_13_waits_a_4_ms_jiffy() {
        // The MC domain's boot balance_interval is 1 ms (SD_MC_INIT) in both: one jiffy, 1 ms at
        // RHEL 6's CONFIG_HZ=1000, 4 ms at Ubuntu 14.04's 250; busy (x64): 64 ms and 16 jiffies.
        for (k, idle_s, busy_s) in [(Kernel::V2_6_32, 1e-3, 64e-3), (Kernel::V3_13, 4e-3, 64e-3)] {
            let mut s = sched(k);
            s.state[0][0].last_balance_s = 0.5;
            s.state[0][0].balance_interval_ms = 1.0;
            s.refresh_due(0, 0);
            let [idle, busy] = s.state[0][0].due_s;
            assert!(
                (idle - (0.5 + idle_s)).abs() < 1e-12 && (busy - (0.5 + busy_s)).abs() < 1e-12,
                "{k:?}: {idle} {busy}"
            );
        }
    }

    #[test]
    fn v61_and_v613_take_a_jiffy_off_a_busy_cpus_interval_and_v313_does_not() {
        let rule = |k: Kernel| k.profile().sched.busy_interval;
        // A NUMA domain of 4 CPUs (balance_interval 4 ms, busy_factor 16): 64 ms, 16 jiffies.
        for (k, busy) in [(Kernel::V6_1, 15.0), (Kernel::V6_13, 15.0), (Kernel::V3_13, 16.0), (Kernel::V2_6_32, 16.0)] {
            assert_eq!(balance_interval_jiffies(4.0, Some(16.0), rule(k), 250.0), busy, "{k:?}");
            // An idle CPU's interval is not corrected: 4 ms is one jiffy.
            assert_eq!(balance_interval_jiffies(4.0, None, rule(k), 250.0), 1.0, "{k:?}");
        }
        // msecs_to_jiffies() rounds up (5 ms: 2 jiffies), and the clamp keeps one jiffy.
        assert_eq!(balance_interval_jiffies(5.0, None, BusyInterval::ScaledLessOneJiffy, 250.0), 2.0);
        assert_eq!(balance_interval_jiffies(1.0, Some(1.0), BusyInterval::ScaledLessOneJiffy, 250.0), 1.0);
    }

    #[test]
    fn tickless_idle_cpus_are_balanced_only_on_a_kick() {
        // Two nodes (LLCs) of two CPUs. 3.13/6.13: a busy CPU kicks the idle load balancer when
        // it runs two tasks or its LLC has another busy CPU; 2.6.32's idle load balancer
        // balances while any CPU is busy.
        for kernel in [Kernel::V3_13, Kernel::V6_13] {
            let s = sched(kernel);
            assert!(!s.nohz_kick(&[0, 0, 0, 0]), "{kernel:?}");
            assert!(!s.nohz_kick(&[1, 0, 1, 0]), "{kernel:?}: one busy CPU per LLC");
            assert!(s.nohz_kick(&[2, 0, 0, 0]), "{kernel:?}: nr_running >= 2");
            assert!(s.nohz_kick(&[1, 1, 0, 0]), "{kernel:?}: nr_busy_cpus > 1");
        }
        let s = sched(Kernel::V2_6_32);
        assert!(!s.nohz_kick(&[0, 0, 0, 0]));
        assert!(s.nohz_kick(&[1, 0, 0, 0]));
    }

    #[test]
    fn v313_cpu_load_indexes_follow_the_load_by_half_and_quarter_per_tick() {
        // kernel/sched/proc.c __update_cpu_load(): cpu_load[i] = (old x (2^i - 1) + new) >> i,
        // new rounded up by 2^i - 1 while rising. One CPU at 2046 (two new tasks) for 2 ticks.
        let mut s = sched(Kernel::V3_13);
        let mut sig = vec![CpuSig::default(); 4];
        sig[0].runnable_load = 2046;
        s.tick_cpu_load(2.0 / 250.0, &[2046, 0, 0, 0]);
        // idx 1: (0 + 2047) >> 1 = 1023, then (1023 + 2047) >> 1 = 1535; idx 2: (0 + 2049) >> 2 =
        // 512, then (512 x 3 + 2049) >> 2 = 896.
        assert_eq!(s.cpu_load_idx[0][..3], [2046, 1535, 896]);
        let nr = [2, 0, 0, 0];
        // source_load() (a CPU to pull from) takes the lower, target_load() the higher.
        assert_eq!(s.biased_load(0, 2, &sig, &nr, false), 1535);
        assert_eq!(s.biased_load(0, 2, &sig, &nr, true), 2046);
        assert_eq!(s.biased_load(0, 0, &sig, &nr, false), 2046);
        // The same jiffy again changes nothing; the load leaving decays the history.
        s.tick_cpu_load(2.5 / 250.0, &[2046, 0, 0, 0]);
        assert_eq!(s.cpu_load_idx[0][1], 1535);
        sig[0].runnable_load = 0;
        s.tick_cpu_load(3.0 / 250.0, &[0; 4]);
        assert_eq!(s.cpu_load_idx[0][..3], [0, 767, 672]);
        assert_eq!(s.biased_load(0, 2, &sig, &[0; 4], true), 767);
    }

    #[test]
    fn v2632_balances_on_the_decayed_history_of_the_queued_weight() {
        // kernel/sched.c update_cpu_load(): the same decay over rq->load.weight, NICE_0_LOAD
        // per queued task whatever its PELT average (2.6.32 has none).
        let mut s = sched(Kernel::V2_6_32);
        let mut sig = vec![CpuSig::default(); 4];
        sig[0].runnable_load = 700;
        let nr = [2, 0, 0, 0];
        assert_eq!(s.weighted_cpuload(0, &sig, &nr), 2048);
        // Two jiffies at RHEL 6's CONFIG_HZ=1000.
        s.tick_cpu_load(2.0 / 1000.0, &[2048, 0, 0, 0]);
        // idx 1: (0 + 2049) >> 1 = 1024, then (1024 + 2049) >> 1 = 1536; idx 2: (0 + 2051) >> 2
        // = 512, then (512 x 3 + 2051) >> 2 = 896.
        assert_eq!(s.cpu_load_idx[0][..3], [2048, 1536, 896]);
        // SD_NODE_INIT busy_idx 3: a busy CPU sees the remote CPU by source_load(cpu, 3) =
        // min(cpu_load[2], weighted_cpuload()), not the 2048 queued now.
        assert_eq!(s.biased_load(0, 3, &sig, &nr, false), 896);
        assert_eq!(s.biased_load(0, 3, &sig, &nr, true), 2048);
        let node = s.domains.iter().find(|d| d.numa).unwrap();
        assert_eq!((node.load_idx.busy, node.load_idx.idle, node.load_idx.newidle), (3, 2, 0));
        assert_eq!(s.domains[0].load_idx.busy, 2);
    }
}
