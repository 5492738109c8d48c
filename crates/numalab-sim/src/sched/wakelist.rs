//! Wake-ups left to the target CPU (profile `sched.ttwu_queue`): `kernel/sched/core.c:
//! ttwu_queue()` puts the woken task on the target's wake list (`__ttwu_queue_wakelist()`, an
//! IPI) instead of enqueueing it when `ttwu_queue_cond()` says so; the target enqueues it
//! (`sched_ttwu_pending()` → `ttwu_do_activate()`) when it handles the IPI. Until then the task
//! is on no run queue: `nr_running`, the load balancer's group statistics and `detach_tasks()`'s
//! `cfs_tasks` list do not have it, though the target is not idle (`idle_cpu()`:
//! `rq->ttwu_pending`). On hardware the IPI is handled within microseconds; a guest's halted
//! vCPU handles it only when the host runs the vCPU again (docs/scheduler.md §10.5), so the
//! engine queues a wake-up here only for a vCPU the host does not run (`engine/phases.rs`) and
//! flushes a vCPU's list when the host runs it (`engine/host.rs`).

use super::Sched;
use crate::profile::TtwuQueue;

impl Sched {
    /// `ttwu_queue_cond()` for thread `tid`, just placed on `cpu` by the thread `waker`
    /// (`runnable`: which threads are runnable, `tid` among them): across LLCs (the nodes here)
    /// always, in v6.x also inside one to a CPU whose run queue is otherwise empty; never to
    /// the waker's own CPU.
    pub fn ttwu_queue_cond(&self, tid: usize, waker: usize, runnable: &[bool], now_s: f64) -> bool {
        let (cpu, from) = (self.cpu[tid], self.cpu[waker]);
        let share_cache = self.pu_node[cpu] == self.pu_node[from];
        match self.rules.ttwu_queue {
            TtwuQueue::Absent => false,
            TtwuQueue::CrossLlc => !share_cache,
            TtwuQueue::CrossLlcOrIdle if !share_cache => true,
            TtwuQueue::CrossLlcOrIdle => {
                // "Note that we can only get here with (wakee) p->on_rq=0": the wakee and the
                // tasks still on the wake list are not in nr_running.
                let mut queued = self.enqueued(runnable);
                queued[tid] = false;
                cpu != from && self.nr_running(&queued, now_s)[cpu] == 0
            }
        }
    }

    /// `tid` waits on its CPU's wake list, its PELT signals blocked until then (`load.rs`).
    pub fn queue_wakelist(&mut self, tid: usize) {
        self.on_wakelist[tid] = true;
        self.waits_off_runqueue(tid);
    }

    /// `cpu` handles its IPI at `now_s`: the tasks on its wake list join its run queue
    /// (`sched_ttwu_pending()` → `ttwu_do_activate()`, a wake-up of the run queue).
    /// `runnable`: the threads runnable (those listed among them).
    pub fn flush_wakelist(&mut self, cpu: usize, now_s: f64, runnable: &[bool]) {
        let mut flushed = 0;
        for t in 0..self.on_wakelist.len() {
            if self.on_wakelist[t] && self.cpu[t] == cpu {
                self.on_wakelist[t] = false;
                // sched_wakeup fires here, at ttwu_do_activate() on the target (`rq_trace.rs`).
                self.rq.on(now_s, t, cpu);
                // enqueue_entity()'s update_load_avg(): runnable from here.
                self.resumes(t, now_s);
                flushed += 1;
            }
        }
        if flushed > 0 {
            self.ttwu_do_wakeup(cpu, now_s);
            self.enqueued_many_on(cpu, flushed, runnable, now_s);
        }
    }

    /// Per CPU: a task waits on its wake list. Such a CPU runs nothing yet is not idle
    /// (`idle_cpu()`: "if (rq->ttwu_pending) return 0;"): it does not balance (it does not run;
    /// `_nohz_idle_balance()` skips a CPU that is not idle), nor is it the idle CPU
    /// `should_we_balance()` looks for or one of a group's `idle_cpus`.
    pub(super) fn ttwu_pending_cpus(&self) -> Vec<bool> {
        let mut p = vec![false; self.pu_node.len()];
        for (&w, &c) in self.on_wakelist.iter().zip(&self.cpu) {
            p[c] |= w;
        }
        p
    }

    /// The threads on a run queue: runnable and not waiting on a wake list.
    pub(super) fn enqueued(&self, runnable: &[bool]) -> Vec<bool> {
        runnable.iter().zip(&self.on_wakelist).map(|(&r, &w)| r && !w).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_machines::*;
    use super::super::*;

    /// Waker thread 0 on CPU 0 of two nodes of two CPUs (CPUs 0-1, 2-3) wakes thread 1 onto
    /// `to`; thread 2 runnable on CPU 1 when `busy`, on CPU 1's wake list when `listed`.
    fn cond(kernel: Kernel, to: usize, busy: bool, listed: bool) -> bool {
        let mut s = Sched::new(&two_nodes_of(2), &unbound(), kernel, 1, 3).unwrap();
        s.cpu = vec![0, to, 1];
        if listed {
            s.queue_wakelist(2);
        }
        s.ttwu_queue_cond(1, 0, &[true, true, busy || listed], 0.0)
    }

    #[test]
    fn a_wake_up_goes_on_the_wake_list_across_llcs_and_from_v6_onto_an_empty_run_queue() {
        // Another node (LLC): v3.13 ttwu_queue()'s !cpus_share_cache(), as v6.x ttwu_queue_cond().
        assert!(cond(Kernel::V3_13, 2, false, false));
        assert!(cond(Kernel::V6_1, 2, false, false) && cond(Kernel::V6_13, 2, false, false));
        // 2.6.32 has no wake list.
        assert!(!cond(Kernel::V2_6_32, 2, false, false));
        // The waker's node, an empty run queue: v6.x "if (!cpu_rq(cpu)->nr_running) return true",
        // not v3.13.
        assert!(cond(Kernel::V6_1, 1, false, false) && cond(Kernel::V6_13, 1, false, false));
        assert!(!cond(Kernel::V3_13, 1, false, false));
        // A task runnable there: the waker enqueues the wakee itself.
        assert!(!cond(Kernel::V6_1, 1, true, false));
        // A task still on the wake list is not in nr_running: the run queue is empty.
        assert!(cond(Kernel::V6_1, 1, false, true));
        // The waker's own CPU: never ("if (cpu == smp_processor_id()) return false").
        assert!(!cond(Kernel::V6_1, 0, false, false));
    }

    #[test]
    fn a_cpu_with_a_task_on_its_wake_list_is_not_idle_and_its_list_joins_the_run_queue_at_a_flush() {
        let mut s = Sched::new(&two_nodes_of(2), &unbound(), Kernel::V6_1, 1, 3).unwrap();
        s.cpu = vec![0, 1, 1];
        s.queue_wakelist(1);
        s.queue_wakelist(2);
        assert_eq!(s.ttwu_pending_cpus(), vec![false, true, false, false]);
        assert_eq!(s.enqueued(&[true, true, false]), vec![true, false, false]);
        // Another CPU's flush leaves them listed; CPU 1's enqueues both.
        s.flush_wakelist(0, 0.0, &[true; 3]);
        assert_eq!(s.enqueued(&[true, true, true]), vec![true, false, false]);
        s.flush_wakelist(1, 0.0, &[true; 3]);
        assert_eq!(s.enqueued(&[true, true, true]), vec![true, true, true]);
        assert_eq!(s.ttwu_pending_cpus(), vec![false; 4]);
    }
}
