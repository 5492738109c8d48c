//! `rebalance_domains()`'s machine-wide lock on the `SD_SERIALIZE` levels (docs/scheduler.md
//! §10.22). v6.1 `kernel/sched/fair.c: rebalance_domains()` (v3.13 the same; v6.13
//! `sched_balance_domains()` with the `sched_balance_running` flag in its place):
//! "need_serialize = sd->flags & SD_SERIALIZE; if (need_serialize) { if
//! (!spin_trylock(&balancing)) goto out; }", the lock held across that level's `load_balance()`
//! and released after it. `SD_SERIALIZE` is on every `SD_NUMA` level (v6.1
//! `kernel/sched/topology.c: sd_init()`). `goto out` skips the level's `load_balance()` and
//! leaves `sd->last_balance` as it was, so the level is still due at the CPU's next balance; the
//! loop goes on to the next level. Periodic, kept-tick and NOHZ balances (`_nohz_idle_balance()`
//! calls `rebalance_domains()` for each idle CPU) take it; `newidle_balance()` does not.
//!
//! The model's balances take no time, so how long the lock is held is the level's balance time
//! in guest time: the guest's measured typical `load_balance()` of the level (`Background`'s
//! `lb_time_s`: the median of its periodic and NOHZ balances, kprobe / kretprobe timestamps,
//! docs/scheduler.md §10.22), zero where the run has none (then no balance is ever skipped). Not
//! the newly idle `max_newidle_lb_cost`: a decayed maximum, which holds the balances the host
//! preempted (milliseconds, against tens of microseconds). Each holder is a CPU executing the
//! balance: a NOHZ balance of several idle CPUs runs them one after the other on the kicked CPU,
//! so its own holds follow each other rather than collide. With the host model, a holder the host
//! stops inside the balance is not modelled: it keeps the lock only for the typical time.

use super::domains::Domain;
use super::newidle::{cost_of, level_costs};
use super::Sched;

/// `static DEFINE_SPINLOCK(balancing)`: who holds it, over which time.
#[derive(Clone, Debug, Default)]
pub(super) struct Balancing {
    /// The CPU executing the balance that holds it (None: never taken for a time).
    by: Option<usize>,
    from_s: f64,
    until_s: f64,
    /// Per CPU, per modelled level: how long one of its balances holds the lock (`set_holds`).
    hold_s: Vec<Vec<f64>>,
}

impl Balancing {
    /// Whether `spin_trylock(&balancing)` fails for a balance `executor` runs at `now_s`:
    /// another CPU's balance holds it then.
    pub(super) fn busy(&self, executor: usize, now_s: f64) -> bool {
        self.by.is_some_and(|b| b != executor) && self.from_s <= now_s && now_s < self.until_s
    }

    /// `executor` takes the lock at `now_s` for a `load_balance()` lasting `hold_s`; after its
    /// own earlier hold, if that is not over (its balances run one after another).
    pub(super) fn take(&mut self, executor: usize, now_s: f64, hold_s: f64) {
        if hold_s <= 0.0 {
            return;
        }
        if self.by == Some(executor) && self.from_s <= now_s && now_s < self.until_s {
            self.until_s += hold_s;
        } else {
            (self.by, self.from_s, self.until_s) = (Some(executor), now_s, now_s + hold_s);
        }
    }

    /// The levels' hold times from the guest's measured balance times per attached domain
    /// (debugfs's order, as `newidle.rs: level_costs()` maps the newly idle costs).
    pub(super) fn set_holds(&mut self, domains: &[Domain], given: &[f64]) {
        let ncpu = domains.first().map_or(0, |d| d.groups_of.len());
        self.hold_s = (0..ncpu).map(|cpu| level_costs(domains, cpu, given)).collect();
    }

    /// How long `cpu`'s balance of level `l` holds the lock (0: not measured).
    pub(super) fn hold_s(&self, cpu: usize, l: usize) -> f64 {
        self.hold_s.get(cpu).map_or(0.0, |h| cost_of(h, l))
    }
}

impl Sched {
    /// The hold times from the background's (`Background::lb_time_s`).
    pub(super) fn refresh_lb_times(&mut self) {
        let given = self.noise.as_ref().map_or(&[][..], |nz| nz.lb_time_s());
        self.balancing.set_holds(&self.domains, given);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_cpu_finds_the_lock_held_for_the_hold_time_and_the_holder_chains_its_own() {
        let mut b = Balancing::default();
        assert!(!b.busy(1, 0.0), "never taken: free");
        b.take(0, 1.0, 0.003);
        assert!(b.busy(1, 1.0) && b.busy(1, 1.0029), "within the hold");
        assert!(!b.busy(1, 1.003) && !b.busy(1, 0.999), "outside it");
        assert!(!b.busy(0, 1.001), "the holder's next balance follows its own");
        b.take(0, 1.001, 0.002);
        assert!(b.busy(1, 1.0045) && !b.busy(1, 1.005), "chained: held on to 1.005");
        // No cost: the lock is never held for any time.
        let mut free = Balancing::default();
        free.take(0, 1.0, 0.0);
        assert!(!free.busy(1, 1.0));
    }
}
