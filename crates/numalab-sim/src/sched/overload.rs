//! The root domain's overload flag (profile `sched.rd_overload`; docs/scheduler.md §10.11): v6.1
//! `rd->overload`, v6.13 `rd->overloaded`, from v3.16's "sched: Fast idling of CPU when system
//! is partially loaded". A newly idle CPU balances only while it is set (v6.1
//! `kernel/sched/fair.c: newidle_balance()`: "if (!READ_ONCE(this_rq->rd->overload) || (sd &&
//! this_rq->avg_idle < sd->max_newidle_lb_cost))", v6.13 `sched_balance_newidle()` with
//! `get_rd_overloaded()`).
//!
//! - Set when a run queue goes from fewer than two tasks to two or more (`kernel/sched/sched.h:
//!   add_nr_running()`: "if (prev_nr < 2 && rq->nr_running >= 2)"), whatever enqueues: a
//!   wake-up, a wake list's flush, a fork, a balancer's or NUMA balancing's move, background
//!   work waking (`noise.rs`).
//! - Rewritten by every balance of the root domain, the domain with no parent, which spans every
//!   CPU (`update_sd_lb_stats()`: "if (!env->sd->parent) ... WRITE_ONCE(rd->overload, sg_status &
//!   SG_OVERLOAD)"; v6.13 `set_rd_overloaded(env->dst_rq->rd, sg_overloaded)`), from its
//!   CPUs still searched (`env->cpus`): set if one has more than one task
//!   (`update_sg_lb_stats()`: "if (nr_running > 1) *sg_status |= SG_OVERLOAD"; the misfit
//!   part needs asymmetric CPU capacities, which no modelled machine has). That balance is
//!   any kind (busy, idle, newly idle, NOHZ), once `should_we_balance()` let it through to
//!   `find_busiest_group()`.
//!
//! The flag starts clear (the root domain is allocated zeroed: `kernel/sched/topology.c:
//! alloc_rootdomain()`). When it skips a balance, `newidle_balance()` moves `rq->next_balance`
//! to its lowest domain's next balance (`update_next_balance()`); the model keeps no
//! `rq->next_balance` of its own (each level's due time is asked directly, `cpu_due_s`), so
//! nothing is needed for it.

use super::Sched;

impl Sched {
    /// `add_nr_running()` on a run queue that had `prev` tasks and has `now`.
    pub(super) fn add_nr_running(&mut self, prev: usize, now: usize) {
        if self.rules.rd_overload && prev < 2 && now >= 2 {
            self.rd_overload = true;
        }
    }

    /// A task was enqueued on `cpu` at `now_s` (`runnable`: the threads runnable, it among
    /// them): the run queue's count before and after it, for `add_nr_running()`.
    pub fn enqueued_on(&mut self, cpu: usize, runnable: &[bool], now_s: f64) {
        let now = self.run_queue_len(cpu, runnable, now_s);
        self.add_nr_running(now.saturating_sub(1), now);
    }

    /// `k` tasks were enqueued on `cpu` one after another (a wake list's flush): the flag is set
    /// if one of them took the count from under two to two or more.
    pub(super) fn enqueued_many_on(&mut self, cpu: usize, k: usize, runnable: &[bool], now_s: f64) {
        let now = self.run_queue_len(cpu, runnable, now_s);
        self.add_nr_running(now.saturating_sub(k), now);
    }

    /// NUMA balancing moved a task onto a run queue that had `prev` tasks
    /// (`kernel/sched/core.c: migrate_task_to()`, `__migrate_swap_task()`: `activate_task()`).
    pub fn numa_moved_onto(&mut self, prev: usize) {
        self.add_nr_running(prev, prev + 1);
    }

    /// Tasks on `cpu`'s run queue at `now_s`: threads runnable and not on a wake list, and
    /// background work running there.
    pub(super) fn run_queue_len(&self, cpu: usize, runnable: &[bool], now_s: f64) -> usize {
        let threads =
            (0..self.cpu.len()).filter(|&t| runnable[t] && !self.on_wakelist[t] && self.cpu[t] == cpu).count();
        threads + usize::from(self.background_at(cpu, now_s))
    }

    /// Background work that woke onto a CPU running one task up to `now_s` set the flag then
    /// (`noise.rs`). Called before the flag is read or rewritten at `now_s`, and at each epoch
    /// start (so the instants are not kept when the profile has no flag).
    pub(super) fn background_enqueues(&mut self, now_s: f64) {
        let took = self.noise.as_mut().is_some_and(|nz| nz.took_second_task_by(now_s));
        if took {
            self.add_nr_running(1, 2);
        }
    }

    /// Whether newly idle balancing may run at `now_s`: the flag is set, or the profile has none.
    pub(super) fn rd_overloaded(&mut self, now_s: f64) -> bool {
        if !self.rules.rd_overload {
            return true;
        }
        self.background_enqueues(now_s);
        self.rd_overload
    }

    /// The root level: the lowest domain spanning every CPU (the kernel drops a parent with the
    /// same span as its child, `sd_parent_degenerate()`, so that one has no parent).
    pub(super) fn root_level(&self) -> usize {
        let ncpu = self.pu_node.len();
        self.domains.iter().position(|d| d.span_of[0].len() == ncpu).unwrap_or(self.domains.len().saturating_sub(1))
    }

    /// `update_sd_lb_stats()` of level `l` at `now_s` (`nr`: tasks per CPU, `cleared`: CPUs out
    /// of `env->cpus`): at the root, the flag becomes whether a CPU searched has two tasks.
    pub(super) fn rewrite_rd_overload(&mut self, now_s: f64, l: usize, dst: usize, nr: &[usize], cleared: &[usize]) {
        if !self.rules.rd_overload || l != self.root_level() {
            return;
        }
        self.background_enqueues(now_s);
        self.rd_overload = self.domains[l].span_of[dst].iter().any(|c| nr[*c] > 1 && !cleared.contains(c));
    }

    #[cfg(test)]
    pub(super) fn rd_overload_flag(&self) -> bool {
        self.rd_overload
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_machines::{two_nodes_of, unbound};
    use super::*;
    use crate::input::Kernel;

    /// Two nodes of one CPU each (MC spans one CPU, so the NUMA level is the root), 3 threads.
    fn two_cpus(kernel: Kernel) -> Sched {
        Sched::new(&two_nodes_of(1), &unbound(), kernel, 1, 3).unwrap()
    }

    #[test]
    fn a_second_task_on_a_run_queue_sets_the_flag_and_the_profiles_without_it_never_do() {
        let mut s = two_cpus(Kernel::V6_1);
        assert!(!s.rd_overload_flag(), "the root domain starts zeroed");
        s.cpu = vec![0, 1, 0];
        // One task on each CPU: 0 -> 1 twice, no run queue reaches two.
        s.enqueued_on(0, &[true, false, false], 0.0);
        s.enqueued_on(1, &[true, true, false], 0.0);
        assert!(!s.rd_overload_flag());
        // Thread 2 joins thread 0 on CPU 0: 1 -> 2.
        s.enqueued_on(0, &[true, true, true], 0.0);
        assert!(s.rd_overload_flag());
        // A wake list of two flushed onto an empty CPU: 0 -> 1 -> 2, set too.
        let mut s = two_cpus(Kernel::V6_1);
        s.cpu = vec![0, 1, 1];
        s.queue_wakelist(1);
        s.queue_wakelist(2);
        s.flush_wakelist(1, 0.0, &[true, true, true]);
        assert!(s.rd_overload_flag());
        // 3.13 (no rd->overload before v3.16): nothing is tracked, newly idle is never gated.
        let mut s = two_cpus(Kernel::V3_13);
        s.cpu = vec![0, 1, 0];
        s.enqueued_on(0, &[true, true, true], 0.0);
        assert!(!s.rd_overload_flag() && s.rd_overloaded(0.0));
    }

    #[test]
    fn a_root_balance_rewrites_the_flag_from_the_run_queues_it_sees() {
        let mut s = two_cpus(Kernel::V6_1);
        s.cpu = vec![0, 1, 0];
        s.enqueued_on(0, &[true, true, true], 0.0);
        assert!(s.rd_overload_flag());
        // Thread 2 sleeps: one task per CPU. At 1 s both CPUs' NUMA (root) balance is due and
        // CPU 0 passes should_we_balance() (no idle CPU in its group, it is the first):
        // update_sd_lb_stats() finds no CPU with two tasks and clears the flag.
        assert!(s.balance(1.0, &[true, true, false]).is_empty());
        assert!(!s.rd_overload_flag());
        // Thread 2 back on CPU 0 without an enqueue seen (set by hand): the next root balance
        // finds CPU 0's two tasks and sets it.
        assert!(s.balance(2.0, &[true, true, true]).len() <= 1);
        assert!(s.rd_overload_flag());
    }

    /// CPU 1's newly idle balance at 1 s, thread 0 alone on CPU 0, with the flag as `flag` and
    /// the root level's `nr_balance_failed` at 3 before: the flag and the failures after.
    fn newly_idle_on_cpu_1(kernel: Kernel, flag: bool) -> (bool, u32) {
        let mut s = two_cpus(kernel);
        s.cpu = vec![0, 1, 1];
        s.rd_overload = flag;
        let root = s.root_level();
        assert_eq!(root, 1);
        s.state[root][1].nr_balance_failed = 3;
        let live = [true, false, false];
        let mut nr = s.nr_running(&live, 1.0);
        assert!(s.newidle_balance(1.0, 1, &mut nr, &live, &mut None).is_empty());
        (s.rd_overload_flag(), s.state[root][1].nr_balance_failed)
    }

    #[test]
    fn newly_idle_balancing_is_skipped_while_the_flag_is_clear_and_runs_while_it_is_set() {
        // Set (stale: CPU 0 has one task): the balance runs to the root level (MC has one
        // group), finds it balanced ("out_balanced": nr_balance_failed = 0) and, being at the
        // root, clears the flag.
        assert_eq!(newly_idle_on_cpu_1(Kernel::V6_1, true), (false, 0));
        assert_eq!(newly_idle_on_cpu_1(Kernel::V6_13, true), (false, 0));
        // Clear: "goto out" before any domain, the failures untouched.
        assert_eq!(newly_idle_on_cpu_1(Kernel::V6_1, false), (false, 3));
        assert_eq!(newly_idle_on_cpu_1(Kernel::V6_13, false), (false, 3));
        // 3.13 has no flag: the balance runs whatever the field holds.
        assert_eq!(newly_idle_on_cpu_1(Kernel::V3_13, false).1, 0);
    }
}
