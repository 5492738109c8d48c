//! Background activity (docs/scheduler.md §6): what else runs on a real machine while a
//! benchmark does, seeded so that runs with different seeds differ as repeated runs do.
//!
//! - The timer tick: `HZ` = 250 interrupts per second on every busy CPU, ~2 us each (tick
//!   handler, `scheduler_tick`, RCU and timer softirqs) [est.].
//! - Per-CPU kernel threads (`kworker/N`, `ksoftirqd/N`, `rcuc`, `migration/N`): Poisson,
//!   20 wake-ups per second per CPU, exponential duration of mean 30 us [est.]; bound to their
//!   CPU.
//! - Daemons (journald, irqbalance, sshd, cron, monitoring agents): Poisson, 4 wake-ups per
//!   second per machine, exponential duration of mean 1 ms (at most 20 ms) [est.], on a random
//!   CPU, moved to an idle CPU of the same node (LLC) when there is one, as
//!   `select_idle_sibling()` does on wake-up.
//!
//! - A periodic task (a measuring agent, `Background::agent_period_s`): one run a period, as
//!   numalab-agent samples (`crates/numalab-agent/src/run.rs`: `next = start + interval`, then
//!   `next += interval` while `next <= now`): the first one period after the run's start, the
//!   others on that grid. A run's CPU time is the sample's base part plus its numa_maps read when
//!   `Sampler::sample()`'s budget allows one (`crates/numalab-agent/src/sample.rs`: read when
//!   `t_s >= next_maps_t_s`, then `next_maps_t_s = t_s + cost / maps_budget`), and on its first
//!   run a measured extra (`agent_first_extra_s`: under TCG each agent process translates its
//!   code anew at its first sample, docs/scheduler.md §10.36, §10.38). It is woken where
//!   it last ran, or on an idle CPU of that node when that one is busy (`select_idle_sibling()`);
//!   none in the estimates above. Unlike the short work above it
//!   is a CFS task whose runs last PELT half-lives: it carries v6.13's signals
//!   (`agent_signals`), which the balancer's `group_classify()` reads.
//!
//! A run may carry another `Background` than these estimates: `numalab vm check` gives the
//! guest's, measured there (docs/scheduler.md §10.3).
//!
//! Background work is runnable on its CPU while it runs: the balancer sees it, and the threads
//! there share the CPU fairly with it (each of `n` threads gets `1/(n+1)` meanwhile).

use serde::{Deserialize, Serialize};

use super::pelt::{SchedAvg, CAPACITY};
use super::util_est::TaskUtilEst;
use crate::profile::UtilEst;
use crate::rng::Rng;

const TICK_COST_S: f64 = 2e-6;
const DAEMON_MAX_S: f64 = 20e-3;

/// What runs beside the workload, in the run's seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Background {
    /// Per-CPU kernel threads: wake-ups per second per CPU and their mean run.
    pub kthread_hz: f64,
    pub kthread_mean_s: f64,
    /// Daemons: wake-ups per second per machine and their mean run.
    pub daemon_hz: f64,
    pub daemon_mean_s: f64,
    /// The periodic task's period (0: none) and the CPU time of each of its runs without the
    /// numa_maps read.
    #[serde(default)]
    pub agent_period_s: f64,
    #[serde(default)]
    pub agent_cost_s: f64,
    /// The CPU time of one numa_maps read, added to a run that reads it (0: none), and the share
    /// of a CPU those reads may take (`numalab-agent run --maps-budget-pct` over 100; its default
    /// 0.5 %, `DEFAULT_MAPS_BUDGET_PCT` in `crates/numalab-agent/src/cli.rs`).
    #[serde(default)]
    pub agent_maps_cost_s: f64,
    #[serde(default = "default_maps_budget")]
    pub agent_maps_budget: f64,
    /// CPU time the periodic task's first run takes beyond the others (0: none). A measured
    /// input, not a mechanism: under TCG each numalab-agent process translates its own sampling
    /// code anew at its first sample (docs/scheduler.md §10.36).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub agent_first_extra_s: f64,
    /// Each domain level's `sd->max_newidle_lb_cost` at the run's start, lowest first (a
    /// guest's measured; `newidle.rs` raises it to each newly idle balance's `lb_time_s` and
    /// decays it), the last standing for the levels above; none: 0, as `sd_init()` leaves it.
    #[serde(default)]
    pub newidle_lb_cost_s: Vec<f64>,
    /// How long one periodic or NOHZ `load_balance()` of each domain level takes, lowest first,
    /// debugfs's order as for `newidle_lb_cost_s` (a guest's measured typical balance, not the
    /// maximum: `serialize.rs` holds the `SD_SERIALIZE` lock for it); none: no time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lb_time_s: Vec<f64>,
    /// Of the idle loop's tries to stop the tick at an idle CPU's ticks, the share that stop it
    /// (a guest's measured `idle_sleeps / idle_calls`; `idle_tick.rs`: the tick runs on to the
    /// next jiffy after each idle entry); none: every idle CPU is tickless.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_stop_share: Option<f64>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// numalab-agent's default numa_maps budget: 0.5 % of one CPU (`DEFAULT_MAPS_BUDGET_PCT`).
fn default_maps_budget() -> f64 {
    0.005
}

impl Default for Background {
    /// The estimates of the module's header.
    fn default() -> Self {
        Background {
            kthread_hz: 20.0,
            kthread_mean_s: 30e-6,
            daemon_hz: 4.0,
            daemon_mean_s: 1e-3,
            agent_period_s: 0.0,
            agent_cost_s: 0.0,
            agent_maps_cost_s: 0.0,
            agent_maps_budget: default_maps_budget(),
            agent_first_extra_s: 0.0,
            newidle_lb_cost_s: Vec::new(),
            lb_time_s: Vec::new(),
            tick_stop_share: None,
        }
    }
}

pub struct Noise {
    rng: Rng,
    pu_node: Vec<usize>,
    bg: Background,
    /// (cpu, start, end), in order of start.
    events: Vec<(usize, f64, f64)>,
    next_arrival_s: f64,
    /// The periodic task's next run and the CPU it last ran on.
    next_agent_s: f64,
    agent_cpu: usize,
    /// The earliest run that reads numa_maps (`Sampler::next_maps_t_s`, 0 at the start).
    next_maps_s: f64,
    /// Its runs: (cpu, start, end, its PELT signals at the start, its `util_est` at the
    /// start), the last two kept.
    agent_runs: Vec<(usize, f64, f64, SchedAvg, TaskUtilEst)>,
    /// The kernel's `util_est` form, which the periodic task's estimate follows
    /// (`set_util_est`; `Off` until set).
    util_est: UtilEst,
    /// Starts of background work woken onto a CPU that had one task runnable (its threads at
    /// generation, or other background work): each took a run queue from one task to two
    /// (`sched/overload.rs`), in order, until `Sched` takes them.
    second_task_s: Vec<f64>,
}

fn ns(t_s: f64) -> u64 {
    (t_s.max(0.0) * 1e9).round() as u64
}

/// `select_idle_sibling()` for background work woken at `t` on `cpu`: that CPU if idle, else the
/// first idle CPU of its node (LLC), else that CPU.
fn idle_sibling(pu_node: &[usize], load: &[usize], events: &[(usize, f64, f64)], t: f64, cpu: usize) -> usize {
    let busy = |c: usize| load[c] > 0 || events.iter().any(|e| e.0 == c && e.1 <= t && t < e.2);
    if !busy(cpu) {
        return cpu;
    }
    (0..pu_node.len()).find(|&q| pu_node[q] == pu_node[cpu] && !busy(q)).unwrap_or(cpu)
}

impl Noise {
    pub fn new(seed: u64, pu_node: Vec<usize>) -> Self {
        Noise::with(seed, pu_node, Background::default())
    }

    pub fn with(seed: u64, pu_node: Vec<usize>, bg: Background) -> Self {
        let mut n = Noise {
            rng: Rng::new(seed, 0x5c4ed_u64),
            pu_node,
            bg,
            events: Vec::new(),
            next_arrival_s: 0.0,
            next_agent_s: f64::INFINITY,
            agent_cpu: 0,
            next_maps_s: 0.0,
            agent_runs: Vec::new(),
            util_est: UtilEst::Off,
            second_task_s: Vec::new(),
        };
        n.next_arrival_s = n.arrival_after(0.0);
        if n.bg.agent_period_s > 0.0 && n.bg.agent_cost_s + n.bg.agent_maps_cost_s + n.bg.agent_first_extra_s > 0.0 {
            // run.rs: `next = start + interval`, the run's start standing for the agent's (it
            // spawns the command right after taking `start`). Its first CPU is where its start-up
            // last ran (the guest's traces: the one its first sample woke on, a different one
            // run to run, docs/scheduler.md §10.31): the seed's.
            n.next_agent_s = n.bg.agent_period_s;
            n.agent_cpu = n.rng.below(n.pu_node.len() as u64) as usize;
        }
        n
    }

    fn rate(&self) -> f64 {
        self.bg.kthread_hz * self.pu_node.len() as f64 + self.bg.daemon_hz
    }

    fn arrival_after(&mut self, t: f64) -> f64 {
        let r = self.rate();
        if r > 0.0 {
            t + self.exp(r)
        } else {
            f64::INFINITY
        }
    }

    fn uniform(&mut self) -> f64 {
        // (0, 1]
        ((self.rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    fn exp(&mut self, rate: f64) -> f64 {
        -self.uniform().ln() / rate
    }

    /// Generate the arrivals before `until`, placing daemons and the periodic task with the
    /// current load.
    fn generate(&mut self, until: f64, load: &[usize]) {
        let ncpu = self.pu_node.len();
        loop {
            let t = self.next_arrival_s.min(self.next_agent_s);
            if t >= until {
                break;
            }
            if self.next_agent_s <= self.next_arrival_s {
                let cpu = idle_sibling(&self.pu_node, load, &self.events, t, self.agent_cpu);
                let end = t + self.sample_cost_s(t);
                self.note_second_task(cpu, t, load);
                self.events.push((cpu, t, end));
                // Its signals at this wake-up: the last run's, run through (with the CPU to
                // itself) and decayed over the sleep since.
                // Its estimate: util_est_update() at the last run's end, a dequeue for sleep
                // (v6.1 kernel/sched/fair.c: dequeue_task_fair() -> util_est_update(cfs_rq, p,
                // task_sleep)), its averages having changed while it ran.
                let (avg, est) = match self.agent_runs.last() {
                    Some(&(_, _, e0, a0, est0)) => {
                        let mut a = a0;
                        a.update(ns(e0), true, CAPACITY);
                        let mut est = est0;
                        est.util_changed();
                        est.went_to_sleep(self.util_est, a.util_avg, a.runnable_avg);
                        a.update(ns(t), false, 0);
                        (a, est)
                    }
                    None => (SchedAvg { last_update_time: ns(t), ..Default::default() }, TaskUtilEst::default()),
                };
                self.agent_runs.push((cpu, t, end, avg, est));
                if self.agent_runs.len() > 2 {
                    self.agent_runs.remove(0);
                }
                self.agent_cpu = cpu;
                // run.rs: after a sample, `while next <= now { next += interval }`: the next
                // grid point after its end (those it outlasted skipped), not a period after it.
                while self.next_agent_s <= end {
                    self.next_agent_s += self.bg.agent_period_s;
                }
                continue;
            }
            let pick = self.uniform() * self.rate();
            let cpu0 = self.rng.below(ncpu as u64) as usize;
            let (cpu, dur) = if pick < self.bg.kthread_hz * ncpu as f64 {
                (cpu0, self.exp(1.0 / self.bg.kthread_mean_s))
            } else {
                let dur = self.exp(1.0 / self.bg.daemon_mean_s).min(DAEMON_MAX_S);
                (idle_sibling(&self.pu_node, load, &self.events, t, cpu0), dur)
            };
            self.note_second_task(cpu, t, load);
            self.events.push((cpu, t, t + dur));
            self.next_arrival_s = self.arrival_after(t);
        }
    }

    /// The CPU time of the periodic task's run at `t`: its base part, the numa_maps read when
    /// `Sampler::sample()` reads it (`t_s >= next_maps_t_s`; the next read then no earlier than
    /// the read's cost over the budget), and on its first run the measured first-run extra.
    fn sample_cost_s(&mut self, t: f64) -> f64 {
        let first = if self.agent_runs.is_empty() { self.bg.agent_first_extra_s } else { 0.0 };
        let maps = self.bg.agent_maps_cost_s;
        if maps > 0.0 && t >= self.next_maps_s {
            self.next_maps_s = t + maps / self.bg.agent_maps_budget;
            self.bg.agent_cost_s + maps + first
        } else {
            self.bg.agent_cost_s + first
        }
    }

    /// Work woken at `t` onto `cpu` (not yet in `events`): `add_nr_running()`'s "prev_nr < 2 &&
    /// rq->nr_running >= 2" when one task was runnable there (`load`: threads per CPU).
    fn note_second_task(&mut self, cpu: usize, t: f64, load: &[usize]) {
        let before = load[cpu] + self.events.iter().filter(|e| e.0 == cpu && e.1 <= t && t < e.2).count();
        if before == 1 {
            self.second_task_s.push(t);
        }
    }

    /// Whether background work took a run queue to two tasks at or before `t` since the last
    /// call (those instants are then forgotten).
    pub fn took_second_task_by(&mut self, t: f64) -> bool {
        let n = self.second_task_s.partition_point(|&s| s <= t);
        self.second_task_s.drain(..n);
        n > 0
    }

    /// Fraction of `[a, b)` each CPU spends on background work; `load` = threads per CPU.
    pub fn busy_fraction(&mut self, a: f64, b: f64, load: &[usize], hz: f64) -> Vec<f64> {
        self.generate(b, load);
        self.events.retain(|e| e.2 > a);
        let len = (b - a).max(1e-12);
        let mut f: Vec<f64> = load.iter().map(|&n| if n > 0 { TICK_COST_S * hz } else { 0.0 }).collect();
        for &(c, s, e) in &self.events {
            let o = e.min(b) - s.max(a);
            if o > 0.0 {
                f[c] += o / len;
            }
        }
        f.iter_mut().for_each(|v| *v = v.min(1.0));
        f
    }

    /// Ends of background runs in `(a, b]`, as (cpu, end) in order of end (then CPU), each once.
    pub fn ends_in(&self, a: f64, b: f64) -> Vec<(usize, f64)> {
        let mut ends: Vec<(usize, f64)> =
            self.events.iter().filter(|e| a < e.2 && e.2 <= b).map(|e| (e.0, e.2)).collect();
        ends.sort_by(|x, y| x.1.total_cmp(&y.1).then(x.0.cmp(&y.0)));
        ends.dedup();
        ends
    }

    /// The start of background work running on `cpu` at `t`, if any.
    pub fn active_since(&self, cpu: usize, t: f64) -> Option<f64> {
        self.events.iter().filter(|e| e.0 == cpu && e.1 <= t && t < e.2).map(|e| e.1).reduce(f64::min)
    }

    /// One newly idle balance's cost per domain level (`Background::newidle_lb_cost_s`).
    pub fn newidle_lb_cost_s(&self) -> &[f64] {
        &self.bg.newidle_lb_cost_s
    }

    /// One periodic balance's time per domain level (`Background::lb_time_s`).
    pub fn lb_time_s(&self) -> &[f64] {
        &self.bg.lb_time_s
    }

    /// Whether a periodic task has run yet.
    pub fn has_agent(&self) -> bool {
        !self.agent_runs.is_empty()
    }

    /// The CPU the periodic task is attached to at `t` (where it runs or last ran), None
    /// before its first run.
    pub fn agent_cpu(&self, t: f64) -> Option<usize> {
        self.agent_runs.iter().rev().find(|r| r.1 <= t).map(|r| r.0)
    }

    /// The periodic task's v6.13 PELT signals (`load_avg`, `util_avg`, `runnable_avg`) on `cpu`
    /// at `t`, where it runs (or last ran: a blocked task's load stays on its run queue) and
    /// while it runs has `running` 1024ths of the CPU; None where it is not attached.
    pub fn agent_signals(&self, cpu: usize, t: f64, running: u64) -> Option<(u64, u64, u64)> {
        let &(c, _, end, a0, _) = self.agent_runs.iter().rev().find(|r| r.1 <= t)?;
        if c != cpu {
            return None;
        }
        let mut a = a0;
        if t < end {
            a.update(ns(t), true, running);
        } else {
            a.update(ns(end), true, running);
            a.update(ns(t), false, 0);
        }
        Some((a.load_avg, a.util_avg, a.runnable_avg))
    }

    /// The kernel's `util_est` form (`Sched`'s profile), for the periodic task's estimate.
    pub fn set_util_est(&mut self, form: UtilEst) {
        self.util_est = form;
    }

    /// The periodic task's `_task_util_est()` while it is queued on `cpu` at `t` (its estimate
    /// from its last sleep, which `util_est_enqueue()` added to the run queue's sum at its
    /// wake-up), None where it is not queued then.
    pub fn agent_util_est(&self, cpu: usize, t: f64) -> Option<u64> {
        let r = self.agent_runs.iter().find(|r| r.0 == cpu && r.1 <= t && t < r.2)?;
        Some(r.4.estimate(self.util_est))
    }

    pub fn active_at(&self, cpu: usize, t: f64) -> bool {
        self.active_since(cpu, t).is_some()
    }

    /// The start of the periodic task's run on `cpu` at `t`, if it runs there then.
    pub fn agent_run_at(&self, cpu: usize, t: f64) -> Option<f64> {
        self.agent_runs.iter().find(|r| r.0 == cpu && r.1 <= t && t < r.2).map(|r| r.1)
    }

    /// The start of the short background work (kernel threads, daemons) on `cpu` at `t`, if
    /// any: the periodic task's run left out.
    pub fn short_active_since(&self, cpu: usize, t: f64) -> Option<f64> {
        let agent = self.agent_run_at(cpu, t);
        self.events
            .iter()
            .filter(|e| e.0 == cpu && e.1 <= t && t < e.2 && Some(e.1) != agent)
            .map(|e| e.1)
            .reduce(f64::min)
    }

    /// The balancer moves the periodic task, a CFS task (`detach_task()`, `attach_task()`), from
    /// `from` to `to` at `t`: the rest of its run is on `to`, its signals leave `from` with it
    /// (`migrate_task_rq_fair()` detaches its load) and its next wake-up starts from `to`.
    pub fn move_agent(&mut self, from: usize, to: usize, t: f64) -> bool {
        let Some(start) = self.agent_run_at(from, t) else {
            return false;
        };
        let Some(k) = self.agent_runs.iter().position(|r| r.0 == from && r.1 == start) else {
            return false;
        };
        let (_, _, end, a0, est) = self.agent_runs[k];
        let mut a = a0;
        a.update(ns(t), true, CAPACITY);
        self.agent_runs[k].2 = t;
        // A migration is no sleep: the estimate goes with it unchanged (util_est_dequeue()
        // and util_est_enqueue() move it between the run queues' sums).
        self.agent_runs.insert(k + 1, (to, t, end, a, est));
        while self.agent_runs.len() > 2 {
            self.agent_runs.remove(0);
        }
        if let Some(e) = self.events.iter_mut().find(|e| e.0 == from && e.1 == start && e.2 == end) {
            e.2 = t;
        }
        let at = self.events.iter().position(|e| e.1 > t).unwrap_or(self.events.len());
        self.events.insert(at, (to, t, end));
        self.agent_cpu = to;
        true
    }
}

#[cfg(test)]
impl Background {
    /// Only the periodic task (a run of `cost_s` every `period_s`): no kernel threads, no daemons.
    pub(crate) fn agent_only(period_s: f64, cost_s: f64) -> Background {
        Background {
            kthread_hz: 0.0,
            kthread_mean_s: 0.0,
            daemon_hz: 0.0,
            daemon_mean_s: 0.0,
            agent_period_s: period_s,
            agent_cost_s: cost_s,
            agent_maps_cost_s: 0.0,
            agent_maps_budget: default_maps_budget(),
            agent_first_extra_s: 0.0,
            newidle_lb_cost_s: Vec::new(),
            lb_time_s: Vec::new(),
            tick_stop_share: None,
        }
    }

    /// No background work, only a guest's measured balancing: newly idle balancing's cost and a
    /// periodic balance's time per level.
    pub(crate) fn balancing_only(newidle_lb_cost_s: Vec<f64>, lb_time_s: Vec<f64>) -> Background {
        Background {
            agent_period_s: 0.0,
            agent_cost_s: 0.0,
            newidle_lb_cost_s,
            lb_time_s,
            ..Background::agent_only(0.0, 0.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_woken_beside_one_task_is_a_second_task_and_each_instant_is_taken_once() {
        // The periodic task's ten runs on one CPU (0.1 s each, a second apart: never two at
        // once). Beside a thread each makes two tasks there (add_nr_running(): 1 -> 2); on an
        // idle CPU one; beside two threads three (no "prev_nr < 2").
        let runs = |threads: usize| {
            let mut n = Noise::with(7, vec![0], Background::agent_only(1.0, 0.1));
            n.generate(10.5, &[threads]);
            n
        };
        assert!(runs(0).second_task_s.is_empty() && runs(2).second_task_s.is_empty());
        let mut n = runs(1);
        let starts: Vec<f64> = n.events.iter().map(|e| e.1).collect();
        assert_eq!(n.second_task_s, starts);
        // Taken up to an instant: those at or before it, once.
        assert!(!n.took_second_task_by(starts[0] - 1e-9));
        assert!(n.took_second_task_by(starts[3]));
        assert!(!n.took_second_task_by(starts[3]));
        assert_eq!(n.second_task_s.len(), 6);
    }

    #[test]
    fn the_periodic_task_runs_its_cost_once_a_period_from_one_period_after_the_start() {
        let mut n = Noise::with(7, vec![0, 0, 1, 1], Background::agent_only(1.0, 0.1));
        n.generate(10.5, &[0; 4]);
        // run.rs' `next = start + interval`: the first run at 1 s whatever the seed, then one a
        // period, each its cost long, all on one CPU (it stays where it ran while that is idle).
        assert_eq!(n.events.len(), 10);
        for (k, e) in n.events.iter().enumerate() {
            assert!((e.1 - (k + 1) as f64).abs() < 1e-9 && (e.2 - e.1 - 0.1).abs() < 1e-12, "{e:?}");
            assert_eq!(e.0, n.events[0].0);
        }
        let mut other = Noise::with(8, vec![0, 0, 1, 1], Background::agent_only(1.0, 0.1));
        other.generate(1.5, &[0; 4]);
        assert_eq!(other.events[0].1, 1.0);
    }

    #[test]
    fn the_periodic_tasks_grid_stays_when_a_run_outlasts_its_period() {
        // A run longer than the period (1.5 s every second): the next starts at the first grid
        // point after its end (run.rs: `next += interval` while `next <= now`), the one it
        // outlasted skipped; not a period after its end (2.5 s), nor at 2 s beside it.
        let mut n = Noise::with(7, vec![0, 0], Background::agent_only(1.0, 1.5));
        n.generate(6.5, &[0; 2]);
        let starts: Vec<f64> = n.events.iter().map(|e| e.1).collect();
        assert_eq!(starts, vec![1.0, 3.0, 5.0]);
    }

    #[test]
    fn the_periodic_task_reads_numa_maps_as_its_budget_allows() {
        // 10 ms base, 20 ms numa_maps read, a period of 1 s.
        let costs = |budget: f64| {
            let bg =
                Background { agent_maps_cost_s: 0.02, agent_maps_budget: budget, ..Background::agent_only(1.0, 0.01) };
            let mut n = Noise::with(7, vec![0, 0], bg);
            n.generate(8.5, &[0; 2]);
            n.events.iter().map(|e| ((e.2 - e.1) * 1e3).round() as u32).collect::<Vec<_>>()
        };
        // The default 0.5 %: after a read at t the next is due at t + 0.02 / 0.005 = t + 4 s, so
        // the samples at 1 and 5 s read it (sample.rs: `t_s >= next_maps_t_s`), not those between.
        assert_eq!(costs(0.005), vec![30, 10, 10, 10, 30, 10, 10, 10]);
        // 100 % (`--maps-budget-pct=100`, the guest's): every sample reads it.
        assert_eq!(costs(1.0), vec![30; 8]);
        // No read cost: every run its base.
        let mut n = Noise::with(7, vec![0, 0], Background::agent_only(1.0, 0.01));
        n.generate(3.5, &[0; 2]);
        assert!(n.events.iter().all(|e| ((e.2 - e.1) - 0.01).abs() < 1e-12));
    }

    #[test]
    fn the_periodic_tasks_first_run_alone_is_longer_by_its_extra() {
        // 10 ms base, a 20 ms read at every sample (the guest's 100 % budget), 35 ms extra.
        let runs = |extra: f64| {
            let bg = Background {
                agent_maps_cost_s: 0.02,
                agent_maps_budget: 1.0,
                agent_first_extra_s: extra,
                ..Background::agent_only(1.0, 0.01)
            };
            let mut n = Noise::with(7, vec![0, 0, 1, 1], bg);
            n.generate(4.5, &[0; 4]);
            n.events.iter().map(|e| (e.1, ((e.2 - e.1) * 1e3).round() as u32)).collect::<Vec<_>>()
        };
        // Only the first sample (the agent process's first) pays it; the grid is unchanged.
        assert_eq!(runs(0.035), vec![(1.0, 65), (2.0, 30), (3.0, 30), (4.0, 30)]);
        // No extra: every run its base and read, as before the field existed.
        assert_eq!(runs(0.0), vec![(1.0, 30), (2.0, 30), (3.0, 30), (4.0, 30)]);
        // A background without the field has none, and writing it out leaves it out.
        let bg: Background =
            serde_json::from_str(r#"{"kthread_hz": 0, "kthread_mean_s": 0, "daemon_hz": 0, "daemon_mean_s": 0}"#)
                .unwrap();
        assert_eq!(bg.agent_first_extra_s, 0.0);
        assert!(!serde_json::to_string(&bg).unwrap().contains("agent_first_extra_s"));
    }

    #[test]
    fn the_periodic_task_wakes_on_an_idle_cpu_of_its_node_when_its_own_is_busy() {
        let mut n = Noise::with(7, vec![0, 0, 1, 1], Background::agent_only(1.0, 0.1));
        n.busy_fraction(0.0, 1.0, &[0; 4], 250.0);
        let home = n.agent_cpu;
        let sibling = if home % 2 == 0 { home + 1 } else { home - 1 };
        let mut load = [0; 4];
        load[home] = 1;
        n.busy_fraction(1.0, 3.0, &load, 250.0);
        assert_eq!(n.agent_cpu, sibling);
        // Its whole node busy: it stays.
        load[sibling] = 1;
        n.busy_fraction(3.0, 5.0, &load, 250.0);
        assert_eq!(n.agent_cpu, sibling);
    }

    #[test]
    fn the_periodic_tasks_utilisation_rises_while_it_runs_and_decays_after() {
        let mut n = Noise::with(3, vec![0, 0], Background::agent_only(1.0, 0.1));
        n.busy_fraction(0.0, 2.0, &[0; 2], 250.0);
        let (cpu, start, end, _, _) = *n.agent_runs.last().unwrap();
        let util = |t: f64| n.agent_signals(cpu, t, CAPACITY).unwrap().1;
        let (early, late, after) = (util(start + 0.01), util(end - 1e-3), util(end + 0.1));
        // 32 ms half-life: ~20 % after 10 ms, ~88 % after 100 ms, then halving every 32 ms.
        assert!(early > 150 && early < 300, "{early}");
        assert!(late > 850 && late < 950, "{late}");
        assert!(after > late / 10 && after < late / 6, "{after} after {late}");
        assert!(n.agent_signals(1 - cpu, start + 0.05, CAPACITY).is_none());
    }

    #[test]
    fn the_periodic_tasks_estimate_is_its_utilisation_at_its_last_sleep_and_counts_only_while_queued() {
        let runs = |form: UtilEst| {
            let mut n = Noise::with(3, vec![0, 0], Background::agent_only(1.0, 0.1));
            n.set_util_est(form);
            n.busy_fraction(0.0, 2.5, &[0; 2], 250.0);
            n
        };
        let n = runs(UtilEst::EnqueuedEwma);
        let [(c0, s0, e0, _, _), (c1, s1, e1, _, _)] = [n.agent_runs[0], n.agent_runs[1]];
        assert_eq!(c0, c1);
        // Its first run follows no sleep: no estimate yet.
        assert_eq!(n.agent_util_est(c0, s0 + 0.01), Some(0));
        // The second carries util_est_update() of the first run's end: util_avg then (~88 %
        // after 100 ms run), FASTUP taking an increase at once.
        let at_sleep = n.agent_signals(c0, e0 - 1e-9, CAPACITY).unwrap().1;
        let est = n.agent_util_est(c1, s1 + 1e-3).unwrap();
        assert!(est.abs_diff(at_sleep) <= 2 && est > 850, "{est} vs {at_sleep}");
        // Early in that run its util_avg has decayed over the sleep; cpu_util_cfs() takes the
        // larger estimate.
        assert!(n.agent_signals(c1, s1 + 1e-3, CAPACITY).unwrap().1 < est / 4);
        // Dequeued for sleep, util_est_dequeue() took it off the run queue's sum: none after
        // the run's end, nor on another CPU.
        assert_eq!(n.agent_util_est(c1, e1 + 1e-3), None);
        assert_eq!(n.agent_util_est(1 - c1, s1 + 1e-3), None);
        // Without UTIL_EST (3.13) there is no estimate.
        assert_eq!(runs(UtilEst::Off).agent_util_est(c1, s1 + 1e-3), Some(0));
    }

    #[test]
    fn the_default_background_has_no_periodic_task() {
        let mut n = Noise::new(1, vec![0; 4]);
        n.busy_fraction(0.0, 5.0, &[0; 4], 250.0);
        assert!(!n.has_agent());
        assert_eq!(Background::default().agent_period_s, 0.0);
        // A background given without a budget has the agent's default, 0.5 % of one CPU.
        let bg: Background = serde_json::from_str(
            r#"{"kthread_hz": 0, "kthread_mean_s": 0, "daemon_hz": 0, "daemon_mean_s": 0, "agent_maps_cost_s": 0.01}"#,
        )
        .unwrap();
        assert_eq!((bg.agent_maps_cost_s, bg.agent_maps_budget), (0.01, 0.005));
    }
}
