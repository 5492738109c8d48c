//! Turn-taking on a CPU (docs/scheduler.md §4): the kernel runs one task of a run queue at a
//! time. The next is the task that waited longest — CFS's leftmost vruntime
//! (`kernel/sched/fair.c` v3.13 `pick_next_entity()`), EEVDF's eligible task with the earliest
//! deadline (v6.13 `pick_eevdf()`), which for tasks of equal weight and slice is the one that
//! ran least recently. The running task keeps the CPU until it blocks, exits or its slice is
//! used up with another task queued (`sched_slice()` / `update_deadline()`, per profile), which
//! the tick notices (`scheduler_tick()`, `task_tick_fair()`: v3.13 `check_preempt_tick()`,
//! v6.13 `update_curr()`; `HRTICK` is off in `kernel/sched/features.h`), so a turn ends at the
//! first jiffy after its slice. A task woken on a busy CPU preempts only as the profile says
//! (`WakeupPreempt`).

use super::{Sched, HZ};
use crate::profile::WakeupPreempt;

/// Per CPU: who runs, since when and until when, and who ran last.
#[derive(Clone, Debug)]
pub(super) struct Turns {
    /// The thread running there (`rq->curr`), None while no turn is given.
    curr: Vec<Option<usize>>,
    start: Vec<f64>,
    /// When the running thread's turn ends: infinity while no other thread waits for the CPU.
    end: Vec<f64>,
    /// The thread that ran last, and when it gave the CPU up.
    last: Vec<Option<usize>>,
    free_at: Vec<f64>,
    /// Changes to any of the above so far (the engine's passes stop when nothing changes).
    changes: u64,
}

impl Turns {
    pub(super) fn new(cpus: usize) -> Self {
        Turns {
            curr: vec![None; cpus],
            start: vec![0.0; cpus],
            end: vec![f64::INFINITY; cpus],
            last: vec![None; cpus],
            free_at: vec![f64::NEG_INFINITY; cpus],
            changes: 0,
        }
    }
}

/// The first tick at or after `t_s` (ticks every jiffy from 0).
fn tick_at_or_after(t_s: f64) -> f64 {
    (t_s * HZ - 1e-9).ceil() / HZ
}

impl Sched {
    /// How many times a turn began, ended or got its end so far.
    pub fn turn_changes(&self) -> u64 {
        self.turns.changes
    }

    /// The thread holding `cpu`'s turn, if any.
    pub fn turn_holder(&self, cpu: usize) -> Option<usize> {
        self.turns.curr[cpu]
    }

    /// When the turn on `cpu` ends (infinity while nobody waits).
    pub fn turn_end(&self, cpu: usize) -> f64 {
        self.turns.end[cpu]
    }

    /// The thread that held `cpu` last, and when it gave it up.
    pub fn turn_last(&self, cpu: usize) -> (Option<usize>, f64) {
        (self.turns.last[cpu], self.turns.free_at[cpu])
    }

    /// The thread running on `cpu` at `at` by the turns: the holder once its turn has begun,
    /// else the last holder until it gave the CPU up.
    pub(super) fn running_at(&self, cpu: usize, at: f64) -> Option<usize> {
        let t = &self.turns;
        match t.curr[cpu] {
            Some(h) if t.start[cpu] <= at => Some(h),
            _ => t.last[cpu].filter(|_| t.free_at[cpu] > at),
        }
    }

    /// When thread `tid` last stopped running (`p->se.exec_start` of a queued task).
    pub fn stopped_at(&self, tid: usize) -> f64 {
        self.stopped_s[tid]
    }

    /// `tid` takes `cpu` at `at`; `queued` other runnable threads wait there.
    pub fn begin_turn(&mut self, cpu: usize, tid: usize, at: f64, queued: usize) {
        let t = &mut self.turns;
        t.changes += 1;
        t.curr[cpu] = Some(tid);
        t.start[cpu] = at;
        t.end[cpu] = f64::INFINITY;
        if queued > 0 {
            self.contend(cpu, at, queued + 1);
        }
    }

    /// A task became runnable at `at` beside `cpu`'s running one (`n` runnable in all): the
    /// running one's slice now counts. While alone its slice was renewed every slice
    /// (`update_deadline()`, `check_preempt_tick()` resched only with another task queued), so
    /// its turn ends at the end of the slice under way, seen at the next tick.
    pub fn contend(&mut self, cpu: usize, at: f64, n: usize) {
        if self.turns.curr[cpu].is_none() || self.turns.end[cpu].is_finite() {
            return;
        }
        let slice = super::load_balance::slice_s(self.rules.slice, n.max(2));
        let start = self.turns.start[cpu];
        let slices = ((at - start) / slice).floor().max(0.0) + 1.0;
        self.turns.end[cpu] = tick_at_or_after(start + slices * slice);
        self.turns.changes += 1;
    }

    /// `cpu`'s running thread gives it up at `at` (blocks, exits, or its slice ended).
    pub fn end_turn(&mut self, cpu: usize, at: f64) {
        let t = &mut self.turns;
        if let Some(tid) = t.curr[cpu].take() {
            t.changes += 1;
            t.last[cpu] = Some(tid);
            t.free_at[cpu] = at;
            t.end[cpu] = f64::INFINITY;
            self.stopped_s[tid] = at;
        }
    }

    /// `cpu`'s running thread was moved away at `at` while running: it runs on elsewhere (its
    /// `exec_start` goes with it), and `cpu` is free from then.
    pub fn vacate(&mut self, cpu: usize, at: f64) {
        let t = &mut self.turns;
        if t.curr[cpu].take().is_some() {
            t.changes += 1;
            t.last[cpu] = None;
            t.free_at[cpu] = at;
            t.end[cpu] = f64::INFINITY;
        }
    }

    /// `wakee`, woken at `at` on `cpu` where another thread runs: whether it takes the CPU at
    /// once. v3.13 `wakeup_preempt_entity()` compares the running task's vruntime with the
    /// wakee's: the running task's time on the CPU since the wakee last ran there (their lead),
    /// against `wakeup_gran()`; EEVDF's `RUN_TO_PARITY` lets the running task finish its slice.
    pub fn wake_preempts(&self, cpu: usize, wakee: usize, at: f64) -> bool {
        match self.rules.wakeup_preempt {
            WakeupPreempt::RunToParity => false,
            WakeupPreempt::Granularity { gran_s } => {
                let since = self.turns.start[cpu].max(self.stopped_s[wakee]);
                self.turns.curr[cpu].is_some() && at - since > gran_s
            }
        }
    }

    /// The running thread of `cpu` is preempted at `at` (the next turn goes to the wakee).
    pub fn preempt(&mut self, cpu: usize, at: f64) {
        if self.turns.curr[cpu].is_some() {
            self.turns.end[cpu] = self.turns.end[cpu].min(at.max(self.turns.start[cpu]));
            self.turns.changes += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_ends_at_the_first_tick_after_the_slice_under_way() {
        assert_eq!(tick_at_or_after(4e-3), 4e-3);
        assert_eq!(tick_at_or_after(3e-3), 4e-3);
        assert_eq!(tick_at_or_after(4.1e-3), 8e-3);
    }
}
