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

use super::Sched;
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
    /// Per CPU, as `/proc/schedstat` counts them (kernel/sched/stats.h: `rq_sched_info_depart()`,
    /// kernel/sched/core.c: `schedstat_inc(rq->sched_goidle)` via `sched_info_switch()`): seconds
    /// a thread held the CPU (spinning at a barrier included, and a vCPU the host does not run
    /// whose thread holds its turn), and how often it went idle: after a turn (a gap before the
    /// next), or after background work with no thread runnable (`bg_idle.rs`).
    rq_cpu_time_s: Vec<f64>,
    sched_goidle: Vec<u64>,
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
            rq_cpu_time_s: vec![0.0; cpus],
            sched_goidle: vec![0; cpus],
        }
    }

    /// The turn on `cpu` ends at `at`: its time on the CPU.
    fn charge(&mut self, cpu: usize, at: f64) {
        self.rq_cpu_time_s[cpu] += (at - self.start[cpu]).max(0.0);
    }
}

/// The first tick at or after `t_s` (ticks every jiffy from 0).
fn tick_at_or_after(t_s: f64, hz: f64) -> f64 {
    (t_s * hz - 1e-9).ceil() / hz
}

impl Sched {
    /// How many times a turn began, ended or got its end so far.
    pub fn turn_changes(&self) -> u64 {
        self.turns.changes
    }

    /// Per CPU at the run's end `end_s`: seconds a thread held it and how often it went idle
    /// (`rq_cpu_time`, `sched_goidle`). A turn still held counts up to `end_s`; a spin that
    /// would have ended after it (workers spinning at the last barrier) only up to `end_s`.
    pub fn cpu_schedstat(&self, end_s: f64) -> Vec<(f64, u64)> {
        let t = &self.turns;
        (0..t.curr.len())
            .map(|c| {
                let open = if t.curr[c].is_some() { (end_s - t.start[c]).max(0.0) } else { 0.0 };
                let past = if t.free_at[c] > end_s { t.free_at[c] - end_s } else { 0.0 };
                ((t.rq_cpu_time_s[c] + open - past).max(0.0), t.sched_goidle[c])
            })
            .collect()
    }

    /// `cpu` went idle after background work (`bg_idle.rs`): one more idle entry.
    pub(super) fn count_goidle(&mut self, cpu: usize) {
        self.turns.sched_goidle[cpu] += 1;
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

    /// The vCPU `cpu`, halted when its current turn began, runs again at `at`: the turn's time
    /// on the CPU counts from then (`engine/host.rs: host_plan`).
    pub fn turn_switched_at(&mut self, cpu: usize, at: f64) {
        let t = &mut self.turns;
        if t.curr[cpu].is_some() && t.start[cpu] < at {
            t.start[cpu] = at;
        }
    }

    /// `tid` takes `cpu` at `at`; `queued` other runnable threads wait there.
    pub fn begin_turn(&mut self, cpu: usize, tid: usize, at: f64, queued: usize) {
        // A gap that began with a switch to background work is counted at that work's end.
        let from_idle = self.bg_turn_begun(cpu, at);
        let t = &mut self.turns;
        t.changes += 1;
        if t.free_at[cpu].is_finite() && at > t.free_at[cpu] {
            t.sched_goidle[cpu] += u64::from(from_idle);
        } else if at < t.free_at[cpu] {
            // The last holder, released while still spinning there, goes on: its spin was
            // charged up to a free_at it did not reach.
            t.rq_cpu_time_s[cpu] -= t.free_at[cpu] - at;
        }
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
        let slice = self.slice_s(n.max(2));
        let start = self.turns.start[cpu];
        let slices = ((at - start) / slice).floor().max(0.0) + 1.0;
        self.turns.end[cpu] = tick_at_or_after(start + slices * slice, self.rules.hz);
        self.turns.changes += 1;
    }

    /// `cpu`'s running thread gives it up at `at` (blocks, exits, or its slice ended).
    pub fn end_turn(&mut self, cpu: usize, at: f64) {
        let t = &mut self.turns;
        if let Some(tid) = t.curr[cpu].take() {
            t.changes += 1;
            t.charge(cpu, at);
            t.last[cpu] = Some(tid);
            t.free_at[cpu] = at;
            t.end[cpu] = f64::INFINITY;
            self.stopped_s[tid] = at;
            self.bg_turn_ended(cpu, at);
        }
    }

    /// `cpu`'s running thread was moved away at `at` while running: it runs on elsewhere (its
    /// `exec_start` goes with it), and `cpu` is free from then.
    pub fn vacate(&mut self, cpu: usize, at: f64) {
        let t = &mut self.turns;
        if t.curr[cpu].take().is_some() {
            t.changes += 1;
            t.charge(cpu, at);
            t.last[cpu] = None;
            t.free_at[cpu] = at;
            t.end[cpu] = f64::INFINITY;
            self.bg_turn_ended(cpu, at);
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
                self.turns.curr[cpu].is_some() && at - since > gran_s * self.sysctl_factor
            }
        }
    }

    /// The slice of each of `n` tasks sharing a CPU on this machine (`sched_slice()` /
    /// `sysctl_sched_base_slice` at the machine's `update_sysctl()` factor).
    pub fn slice_s(&self, n: usize) -> f64 {
        super::load_balance::slice_s(self.rules.slice, n, self.sysctl_factor)
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

    fn sched_on(kernel: crate::input::Kernel, m: &numalab_model::Machine) -> Sched {
        let p = crate::input::Placement {
            policy: numalab_model::MemPolicy::new(numalab_model::PolicyMode::Default, Default::default()).unwrap(),
            cpus: None,
            proc_bind: crate::input::ProcBind::False,
            places: crate::input::Places::Cores,
        };
        Sched::new(m, &p, kernel, 1, 2).unwrap()
    }

    #[test]
    fn rq_cpu_time_counts_held_turns_and_sched_goidle_the_gaps_between_them() {
        let m = crate::sched::test_machines::two_nodes_of(2);
        let mut s = sched_on(crate::input::Kernel::V6_1, &m);
        // CPU 0: thread 0 holds it 0-1 s, then (idle 1-2 s) thread 1 2-3 s, handed straight to
        // thread 0 3-3.5 s (no idle entry); thread 0 spins until 4.5 s at a barrier but is
        // released at 4 s and goes on (the spin past 4 s is not counted twice), exits at 5 s.
        s.begin_turn(0, 0, 0.0, 0);
        s.end_turn(0, 1.0);
        s.begin_turn(0, 1, 2.0, 0);
        s.end_turn(0, 3.0);
        s.begin_turn(0, 0, 3.0, 0);
        s.end_turn(0, 4.5);
        s.begin_turn(0, 0, 4.0, 0);
        s.end_turn(0, 5.0);
        // CPU 1: one turn from 0.5 s still held at the run's end (6 s); CPU 2: a spin at the last
        // barrier that would end at 7 s counts up to 6 s.
        s.begin_turn(1, 1, 0.5, 0);
        s.begin_turn(2, 0, 1.0, 0);
        s.end_turn(2, 7.0);
        let st = s.cpu_schedstat(6.0);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(st[0].0, 4.0) && st[0].1 == 1, "{:?}", st[0]);
        assert!(close(st[1].0, 5.5) && st[1].1 == 0, "{:?}", st[1]);
        assert!(close(st[2].0, 5.0) && st[2].1 == 0, "{:?}", st[2]);
        assert_eq!(st[3], (0.0, 0));
    }

    #[test]
    fn cfs_slices_and_wakeup_granularity_scale_with_the_cpu_count() {
        use crate::input::Kernel;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // update_sysctl(): 1 + ilog2(min(num_online_cpus(), 8)).
        let factors: Vec<f64> = [1, 2, 3, 4, 7, 8, 64].map(super::super::load_balance::sysctl_factor).to_vec();
        assert_eq!(factors, [1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]);
        let four = crate::sched::test_machines::two_nodes_of(2);
        let eight = crate::sched::test_machines::two_nodes_of(4);
        assert_eq!((four.pus.len(), eight.pus.len()), (4, 8));
        for kernel in [Kernel::V3_13, Kernel::V6_1] {
            let (s4, s8) = (sched_on(kernel, &four), sched_on(kernel, &eight));
            // sched_slice(): latency 6 ms x 3 = 18 ms over 2 tasks on 4 CPUs; 24 ms on 8.
            assert!(close(s4.slice_s(2), 9e-3) && close(s8.slice_s(2), 12e-3), "{kernel:?}");
            // Beyond sched_nr_latency (8) tasks: min_granularity 0.75 ms x 3 (x 4) each.
            assert!(close(s4.slice_s(16), 2.25e-3) && close(s8.slice_s(16), 3e-3), "{kernel:?}");
        }
        // EEVDF's base slice scales the same way.
        assert!(close(sched_on(Kernel::V6_13, &four).slice_s(2), 2.25e-3));
        assert!(close(sched_on(Kernel::V6_13, &eight).slice_s(2), 3e-3));
        // wakeup_gran(): 1 ms x 3 on 4 CPUs, x 4 on 8. Thread 0 runs on CPU 0 from 0; thread 1
        // wakes there 3.5 ms later: it preempts with 4 CPUs, not with 8.
        for (m, preempts) in [(&four, true), (&eight, false)] {
            let mut s = sched_on(Kernel::V6_1, m);
            s.begin_turn(0, 0, 0.0, 0);
            assert!(!s.wake_preempts(0, 1, 2.9e-3));
            assert_eq!(s.wake_preempts(0, 1, 3.5e-3), preempts);
            assert!(s.wake_preempts(0, 1, 4.1e-3));
        }
        // EEVDF's RUN_TO_PARITY: never at wake-up.
        let mut s = sched_on(Kernel::V6_13, &four);
        s.begin_turn(0, 0, 0.0, 0);
        assert!(!s.wake_preempts(0, 1, 10e-3));
    }

    #[test]
    fn a_turn_ends_at_the_first_tick_after_the_slice_under_way() {
        assert_eq!(tick_at_or_after(4e-3, 250.0), 4e-3);
        assert_eq!(tick_at_or_after(3e-3, 250.0), 4e-3);
        assert_eq!(tick_at_or_after(4.1e-3, 250.0), 8e-3);
    }
}
