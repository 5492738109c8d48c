//! When a guest's vCPU balances newly idle under the host model (`crate::vhost`,
//! docs/scheduler.md §10.9). `newidle_balance()` runs in `schedule()` on the CPU whose last task
//! blocks (v6.1 `kernel/sched/fair.c: pick_next_task_fair()`, label `idle`), so a vCPU does it
//! while the host runs it, at that moment and from that state. The engine acts at the host's
//! rounds (`engine/host.rs`): a vCPU the host ran in a round and that has no task left at its
//! end balances then, before the host's next vCPUs change the state; epoch ends
//! (`Sched::balance()`) then leave newly idle balancing out.

use super::Sched;

impl Sched {
    /// The host model is on: newly idle balancing only through `newidle_where_run()`.
    pub fn newidle_at_host_rounds(&mut self) {
        self.newidle_when_run = true;
    }

    /// At `now_s`, the end of a host round: each vCPU the host ran in it (`ran`) that had work
    /// before and has none now (`runnable`: threads running or spinning; a task on a wake list
    /// does not count, and a CPU with one waiting there is not idle) balances newly idle.
    /// Returns the threads moved.
    pub fn newidle_where_run(&mut self, now_s: f64, runnable: &[bool], ran: &[bool]) -> Vec<usize> {
        self.account(now_s, runnable);
        let live = &self.enqueued(runnable);
        self.ttwu_pending = self.ttwu_pending_cpus();
        let mut nr = self.nr_running(live, now_s);
        let mut sig = None;
        let mut moved = Vec::new();
        for cpu in 0..nr.len() {
            if ran[cpu] && self.was_busy[cpu] && nr[cpu] == 0 && !self.ttwu_pending[cpu] {
                moved.extend(self.newidle_balance(now_s, cpu, &mut nr, live, &mut sig));
            }
        }
        // A vCPU the host did not run executed no `schedule()`: if it has no task left (one
        // pulled away while it was not run), it goes idle, and balances, when next run.
        for (cpu, &n) in nr.iter().enumerate() {
            if ran[cpu] || n > 0 {
                self.was_busy[cpu] = n > 0;
            }
        }
        moved
    }
}
