//! When a guest's vCPU balances under the host model (`crate::vhost`, docs/scheduler.md §10.9):
//! only while the host runs it, since the balancing code runs on the vCPU itself.
//!
//! - `newidle_balance()` runs in `schedule()` on the CPU whose last task blocks (v6.1
//!   `kernel/sched/fair.c: pick_next_task_fair()`, label `idle`), at that moment and from that
//!   state. The engine acts at the host's rounds (`engine/host.rs`): a vCPU the host ran in a
//!   round and that has no task left at its end balances then, before the host's next vCPUs
//!   change the state; epoch ends (`Sched::balance()`) leave newly idle balancing out.
//! - An idle CPU's tick is stopped (`tick_nohz_idle_stop_tick()`), unless the run gives the share
//!   of stops (`idle_tick.rs`, §10.10: a vCPU that kept its tick balances itself at it, when the
//!   host runs it: `ticks_where_run()`), so idle CPUs are balanced by the NOHZ balance: a busy
//!   CPU's tick
//!   (`nohz_balancer_kick()`, at epoch ends as before) kicks the first idle CPU
//!   (`find_new_ilb()`) with an IPI (`kick_ilb()`); that vCPU leaves its halt, and when the host
//!   runs it `nohz_csd_func()` → `run_rebalance_domains()` → `nohz_idle_balance()` balances
//!   every idle CPU whose interval has passed (`_nohz_idle_balance()`), from the one after it,
//!   itself last. If it is no longer idle by then, nothing (`nohz_idle_balance()`: "if (idle !=
//!   CPU_IDLE) return false").

use super::Sched;

impl Sched {
    /// The host model is on: newly idle and NOHZ balancing only through `balance_where_run()`.
    pub fn newidle_at_host_rounds(&mut self) {
        self.newidle_when_run = true;
    }

    /// The host stops a vCPU inside a newly idle balance as its counts so far say
    /// (`host_stop.rs`), its draws from the run's `seed`.
    pub fn host_stops_inside_balances(&mut self, seed: u64) {
        self.host_stops = Some(super::host_stop::HostStops::new(seed, self.pu_node.len()));
    }

    /// The host's counts for `cpu`'s thread so far (`vhost.rs: ThreadStat`): host time run,
    /// involuntary switches, and the waits that followed them, in order.
    pub fn host_thread_seen(&mut self, cpu: usize, ran_s: f64, involuntary: u64, waits_s: &[f64]) {
        if let Some(h) = self.host_stops.as_mut() {
            h.observe(cpu, ran_s, involuntary, waits_s);
        }
    }

    /// Whether `cpu` was kicked to balance idle CPUs and waits for the host: it is not halted.
    pub fn nohz_kicked(&self, cpu: usize) -> bool {
        self.nohz_ilb == Some(cpu)
    }

    /// At `now_s`, the end of a host round in which the host ran the vCPUs `ran`: their newly
    /// idle balances, then the kicked vCPU's NOHZ balance. `runnable`: threads running or
    /// spinning. Returns the threads moved.
    pub fn balance_where_run(&mut self, now_s: f64, runnable: &[bool], ran: &[bool]) -> Vec<usize> {
        // Background work that ended on an idle vCPU: it balances too when run (`bg_idle.rs`).
        self.background_idle_entries(now_s);
        let mut moved = self.newidle_where_run(now_s, runnable, ran);
        moved.extend(self.ticks_where_run(now_s, runnable, ran));
        moved.extend(self.nohz_where_run(now_s, runnable, ran));
        moved
    }

    /// Each vCPU the host ran (`ran`) that had work before and has none now (a task on a wake
    /// list does not count, and a CPU with one waiting there is not idle) balances newly idle.
    pub fn newidle_where_run(&mut self, now_s: f64, runnable: &[bool], ran: &[bool]) -> Vec<usize> {
        let (live, mut nr) = self.run_queues(now_s, runnable);
        let live = &live;
        let mut sig = None;
        let mut moved = Vec::new();
        for cpu in 0..nr.len() {
            if ran[cpu] && self.was_busy[cpu] && nr[cpu] == 0 && !self.ttwu_pending[cpu] {
                moved.extend(self.newidle_balance(now_s, cpu, &mut nr, live, &mut sig));
                self.went_idle_if(cpu, now_s, &nr);
            }
        }
        // A vCPU the host did not run executed no `schedule()`: if it has no task left (one
        // pulled away while it was not run), it goes idle, and balances, when next run.
        for (cpu, &n) in nr.iter().enumerate() {
            if ran[cpu] || n > 0 {
                self.was_busy[cpu] = n > 0;
            }
            // Run with work, it has left the idle loop (`idle_tick.rs`).
            if let Some(it) = self.idle_tick.as_mut().filter(|_| ran[cpu] && n > 0) {
                it.left_idle(cpu);
            }
        }
        moved
    }

    /// `nohz_balancer_kick()` decided to kick at `now_s` (`nr`: tasks per CPU): if an idle CPU's
    /// balance is due (`nohz.next_balance`) and no kick waits, the first idle CPU
    /// (`find_new_ilb()`: `idle_cpu()`, which a task on its wake list rules out) is kicked.
    pub(super) fn kick_ilb(&mut self, now_s: f64, nr: &[usize]) {
        // Only CPUs in nohz.idle_cpus_mask (`find_new_ilb()`; `idle_tick.rs`).
        let idle = |c: usize| nr[c] == 0 && !self.ttwu_pending[c] && self.nohz_idle(c);
        if self.nohz_ilb.is_some() || !(0..nr.len()).any(|c| idle(c) && now_s + 1e-12 >= self.cpu_due_s[c][0]) {
            return;
        }
        let ilb = (0..nr.len()).find(|&c| idle(c));
        self.nohz_ilb = ilb;
    }

    /// The kicked vCPU, if the host ran it, balances every idle CPU whose interval has passed
    /// (`_nohz_idle_balance()`'s `for_each_cpu_wrap(balance_cpu, nohz.idle_cpus_mask,
    /// this_cpu+1)`), itself last.
    fn nohz_where_run(&mut self, now_s: f64, runnable: &[bool], ran: &[bool]) -> Vec<usize> {
        let Some(ilb) = self.nohz_ilb.filter(|&c| ran[c]) else { return Vec::new() };
        self.nohz_ilb = None;
        let (live, mut nr) = self.run_queues(now_s, runnable);
        let live = &live;
        let mut moved = Vec::new();
        if nr[ilb] > 0 || self.ttwu_pending[ilb] {
            return moved;
        }
        let mut sig = None;
        let n = nr.len();
        for cpu in (1..=n).map(|k| (ilb + k) % n) {
            if nr[cpu] == 0 && !self.ttwu_pending[cpu] && self.nohz_idle(cpu) {
                moved.extend(self.rebalance_domains(now_s, cpu, ilb, &mut nr, live, &mut sig));
            }
        }
        moved
    }
}
