//! A CPU goes idle when background work ends there with nothing else runnable
//! (docs/scheduler.md §10.19): the kernel switches to its idle task, counting an idle entry,
//! and balances newly idle first, whatever the task that left was (a kworker, ksoftirqd, a
//! daemon, the measuring agent; CFS, RT or stop class alike).
//!
//! - v6.1 `kernel/sched/core.c: __schedule()` → `pick_next_task()`: with prev a fair task and
//!   `rq->nr_running == rq->cfs.h_nr_running`, `pick_next_task_fair()`, whose label `idle`
//!   calls `newidle_balance()`; otherwise `put_prev_task_balance()` runs each class's
//!   `balance()` from prev's down, `balance_fair()` calling `newidle_balance()` when
//!   `rq->nr_running` is 0. The idle task is then set up by `set_next_task_idle()`
//!   (`kernel/sched/idle.c`), which counts `schedstat_inc(rq->sched_goidle)`.
//! - v6.13: the same, `sched_balance_newidle()` (renamed) from `pick_next_task_fair()` or
//!   `balance_fair()` (via `prev_balance()`), `set_next_task_idle()` counting `sched_goidle`.
//! - v3.13 `kernel/sched/core.c: __schedule()`: "if (unlikely(!rq->nr_running))
//!   idle_balance(cpu, rq)" after prev is dequeued, whatever its class, then
//!   `pick_next_task()` falls to `pick_next_task_idle()` (`kernel/sched/idle_task.c`), which
//!   counts `schedstat_inc(rq, sched_goidle)`.
//!
//! So each profile takes the same path here. The engine balances at its balancing points (epoch
//! ends; with the host model the host's rounds), where a thread's last block is handled too
//! (`load_balance.rs: balance()`, `vcpu_newidle.rs: newidle_where_run()`): a background run
//! that ended on an idle CPU since the last point counts its idle entry at its end and marks the
//! CPU as having had work (`was_busy`), so that point runs the newly idle balance through the
//! same code and gates (`avg_idle`, the root domain's overload flag, NI_RANDOM, a vCPU balancing
//! only while the host runs it), if the CPU is still idle then. Idle at the run's end means no
//! other background work running there and no thread holding a turn (running, waiting at a
//! barrier in libgomp's spin, or held by a vCPU the host does not run: `turns.rs`). A thread
//! whose turn ends while background work runs on its CPU switches to that work, not to idle:
//! the work's end counts the idle entry instead of the gap after the turn (`begin_turn`).
//! Nothing here draws a random number.

use super::Sched;

/// What the idle entries after background work need of the turns, kept only with background.
#[derive(Clone, Debug)]
pub(super) struct BgIdle {
    /// Background runs ending up to here have been handled.
    checked_s: f64,
    /// Per CPU: when the turn held now was given (`turn_switched_at()` does not move it).
    begun_s: Vec<f64>,
    /// Per CPU: turns given up that may cover a run's end not handled yet, (given, given up).
    held: Vec<Vec<(f64, f64)>>,
    /// Per CPU: background work ran there when its last turn was given up.
    to_background: Vec<bool>,
}

impl BgIdle {
    pub(super) fn new(cpus: usize) -> Self {
        BgIdle {
            checked_s: 0.0,
            begun_s: vec![0.0; cpus],
            held: vec![Vec::new(); cpus],
            to_background: vec![false; cpus],
        }
    }
}

impl Sched {
    /// A turn is given on `cpu` at `at`: whether the gap before it, if any, began with a switch
    /// to idle (not to background work running there then).
    pub(super) fn bg_turn_begun(&mut self, cpu: usize, at: f64) -> bool {
        let Some(b) = self.bg_idle.as_mut() else { return true };
        b.begun_s[cpu] = at;
        !b.to_background[cpu]
    }

    /// The turn on `cpu` is given up at `at`.
    pub(super) fn bg_turn_ended(&mut self, cpu: usize, at: f64) {
        let busy = self.background_at(cpu, at);
        if let Some(b) = self.bg_idle.as_mut() {
            b.held[cpu].push((b.begun_s[cpu], at));
            b.to_background[cpu] = busy;
        }
    }

    /// Background runs that ended after the last balancing point and up to `now_s`: each on a CPU
    /// idle then is an idle entry (`sched_goidle`), and leaves the CPU to balance newly idle at
    /// this point (`was_busy`) if it is idle now.
    pub(super) fn background_idle_entries(&mut self, now_s: f64) {
        let (Some(b), Some(noise)) = (self.bg_idle.as_ref(), self.noise.as_ref()) else { return };
        if now_s <= b.checked_s {
            return;
        }
        let ends = noise.ends_in(b.checked_s, now_s);
        for (cpu, end) in ends {
            let b = self.bg_idle.as_ref().expect("checked above");
            let held = self.turn_holder(cpu).is_some() && b.begun_s[cpu] <= end
                || b.held[cpu].iter().any(|&(s, e)| s <= end && end < e);
            if held || self.background_at(cpu, end) {
                continue;
            }
            self.count_goidle(cpu);
            self.was_busy[cpu] = true;
        }
        let b = self.bg_idle.as_mut().expect("checked above");
        b.held.iter_mut().for_each(|h| h.retain(|&(_, e)| e > now_s));
        b.checked_s = now_s;
    }
}

#[cfg(test)]
mod tests {
    use super::super::noise::Background;
    use super::super::test_machines::{two_nodes_of, unbound};
    use super::*;
    use crate::input::Kernel;

    /// Two nodes of two CPUs, 6.1 (NI_RANDOM's die left out: every level is balanced), threads
    /// 0 and 1 on CPU 0, thread 2 on CPU 2, the agent's 1 ms runs every 10 s; its first run
    /// (at 10 s), generated over the first 10.5 s: (cpu, start, end).
    fn with_agent() -> (Sched, (usize, f64, f64)) {
        let mut s = Sched::new(&two_nodes_of(2), &unbound(), Kernel::V6_1, 1, 3).unwrap();
        s.set_background(6, Background::agent_only(10.0, 1e-3));
        s.ni_random = None;
        s.explain = true;
        s.cpu = vec![0, 0, 2];
        s.background(0.0, 10.5, &[true, true, true]);
        let runs = s.noise.as_ref().unwrap().ends_in(0.0, 10.5);
        assert_eq!(runs.len(), 1);
        let (cpu, end) = runs[0];
        (s, (cpu, end - 1e-3, end))
    }

    #[test]
    fn background_work_ending_on_an_idle_cpu_is_an_idle_entry_and_a_newly_idle_balance_pulls() {
        let (mut s, (cpu, _, end)) = with_agent();
        // The agent woke on an idle CPU of its own (select_idle_sibling(): CPUs 1 and 3 are).
        assert!(cpu == 1 || cpu == 3, "{cpu}");
        // The root domain is overloaded (CPU 0 runs two threads): a newly idle balance may run.
        s.enqueued_on(0, &[true, true, true], 0.0);
        let live = [true, true, true];
        let before = s.cpu_schedstat(end + 1e-3)[cpu].1;
        let moved = s.balance(end + 1e-3, &live);
        // One idle entry, and the newly idle balance takes CPU 0's waiting thread.
        assert_eq!(s.cpu_schedstat(end + 1e-3)[cpu].1, before + 1);
        let pulled: Vec<_> = s.log.iter().filter(|e| e.path == "newidle-balance").collect();
        assert_eq!(pulled.len(), 1, "{:?}", s.log);
        assert_eq!((pulled[0].from, pulled[0].to), (Some(0), cpu));
        assert!(moved.contains(&pulled[0].tid));
        // Counted once: the next balancing point finds nothing new.
        s.balance(end + 2e-3, &live);
        assert_eq!(s.cpu_schedstat(end + 2e-3)[cpu].1, before + 1);
    }

    #[test]
    fn background_work_ending_beside_a_thread_is_no_idle_entry_and_no_newly_idle_balance() {
        let (mut s, (cpu, start, end)) = with_agent();
        s.enqueued_on(0, &[true, true, true], 0.0);
        // A thread of the workload (thread 2, moved there) holds the CPU's turn from before the
        // agent's run to after it: the CPU never goes idle.
        s.cpu[2] = cpu;
        s.begin_turn(cpu, 2, start - 1e-3, 0);
        let before = s.cpu_schedstat(end + 1e-3)[cpu].1;
        s.balance(end + 1e-3, &[true, true, true]);
        assert_eq!(s.cpu_schedstat(end + 1e-3)[cpu].1, before);
        // (CPU 2, left without a thread, may pull at its idle balance: not a newly idle one.)
        assert!(!s.log.iter().any(|e| e.path == "newidle-balance"), "{:?}", s.log);
        // A turn that ended during the agent's run switched to it: the gap after it is no idle
        // entry of its own, the run's end is (the CPU idle then, no thread runnable).
        let (mut s, (cpu, start, end)) = with_agent();
        s.cpu[2] = cpu;
        s.begin_turn(cpu, 2, start - 1e-3, 0);
        s.end_turn(cpu, start + 0.5e-3);
        s.balance(end + 1e-3, &[true, true, false]);
        s.begin_turn(cpu, 2, end + 2e-3, 0);
        assert_eq!(s.cpu_schedstat(end + 3e-3)[cpu].1, 1);
    }
}
