//! `/proc/schedstat`'s load balancer counters (version 15, v6.1 `kernel/sched/stats.c:
//! show_schedstat()`), per CPU and domain level, per idle type, counted where the simulator's
//! `load_balance()` takes the kernel's branches (v6.1 `kernel/sched/fair.c: load_balance()`,
//! `can_migrate_task()`, `detach_tasks()`), and the newly idle gate's outcomes
//! (`newidle_balance()`), which the kernel does not count. Counting never changes a decision:
//! the figures go out under `--explain-sched` only (docs/scheduler.md §10.15).

use super::lb_stats::{Idle, Migration};
use super::Sched;

/// The eight counters `show_schedstat()` prints per domain and idle type, in its order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbCounts {
    /// `schedstat_inc(sd->lb_count[idle])`: every `load_balance()` call, at its entry.
    pub lb_count: u64,
    /// `out_balanced` / `out_all_pinned`: `schedstat_inc(sd->lb_balanced[idle])`.
    pub lb_balanced: u64,
    /// A busiest queue found and nothing detached: "if (!ld_moved) { schedstat_inc(sd->lb_failed[idle])".
    pub lb_failed: u64,
    /// `schedstat_add(sd->lb_imbalance[idle], env.imbalance)` for each busiest queue found (in
    /// the migration type's units: load, utilisation or tasks).
    pub lb_imbalance: u64,
    /// `detach_tasks()`: `schedstat_add(env->sd->lb_gained[env->idle], detached)`.
    pub lb_gained: u64,
    /// `can_migrate_task()`: a cache hot task taken because `nr_balance_failed >
    /// cache_nice_tries` (`schedstat_inc(env->sd->lb_hot_gained[env->idle])`).
    pub lb_hot_gained: u64,
    /// `find_busiest_queue()` found none: `schedstat_inc(sd->lb_nobusyq[idle])`.
    pub lb_nobusyq: u64,
    /// `find_busiest_group()` found none: `schedstat_inc(sd->lb_nobusyg[idle])`.
    pub lb_nobusyg: u64,
}

impl LbCounts {
    /// In `show_schedstat()`'s order.
    pub fn as_array(&self) -> [u64; 8] {
        [
            self.lb_count,
            self.lb_balanced,
            self.lb_failed,
            self.lb_imbalance,
            self.lb_gained,
            self.lb_hot_gained,
            self.lb_nobusyq,
            self.lb_nobusyg,
        ]
    }
}

/// What one `newidle_balance()` came to before or while climbing the domains (v6.1
/// `kernel/sched/fair.c: newidle_balance()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NewidleGate {
    /// Calls: a CPU's last task left it (`pick_next_task_fair()`, label `idle`).
    pub calls: u64,
    /// "if (!READ_ONCE(this_rq->rd->overload) ...) goto out": no CPU had two tasks.
    pub no_overload: u64,
    /// "... || (sd && this_rq->avg_idle < sd->max_newidle_lb_cost)": the lowest level's cost
    /// above the average idle spell.
    pub avg_idle: u64,
    /// "if (this_rq->avg_idle < curr_cost + sd->max_newidle_lb_cost) break" at a higher level,
    /// after a lower one balanced without a pull.
    pub cost_break: u64,
    /// Levels NI_RANDOM's die skipped (`ni_random.rs`; "if (d1k > weight) { ...; continue; }").
    pub random_skip: u64,
    /// A level pulled a task ("if (pulled_task || this_rq->nr_running > 0) break").
    pub pulled: u64,
    /// Levels whose balance the host stopped inside (`host_stop.rs`); written only when some
    /// were, so documents without the host model keep their form.
    #[serde(skip_serializing_if = "is_zero")]
    pub host_stopped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The counters of every CPU: `lb[level][cpu][idle type]`, idle types as `enum cpu_idle_type`
/// (`CPU_IDLE`, `CPU_NOT_IDLE`, `CPU_NEWLY_IDLE`), and the newly idle gate per CPU.
#[derive(Clone, Debug)]
pub(super) struct Schedstat {
    pub lb: Vec<Vec<[LbCounts; 3]>>,
    pub newidle: Vec<NewidleGate>,
}

/// `enum cpu_idle_type`'s index (v6.1 `include/linux/sched/idle.h`).
pub(super) fn idle_index(idle: Idle) -> usize {
    match idle {
        Idle::Now => 0,
        Idle::Busy => 1,
        Idle::Newly => 2,
    }
}

impl Schedstat {
    pub fn new(levels: usize, ncpu: usize) -> Self {
        Schedstat {
            lb: vec![vec![[LbCounts::default(); 3]; ncpu]; levels],
            newidle: vec![NewidleGate::default(); ncpu],
        }
    }

    /// `cpu`'s counters at `l` for `idle`.
    pub fn at(&mut self, l: usize, cpu: usize, idle: Idle) -> &mut LbCounts {
        &mut self.lb[l][cpu][idle_index(idle)]
    }

    /// A busiest queue was found with `m` to move (`schedstat_add(sd->lb_imbalance[idle],
    /// env.imbalance)`).
    pub fn imbalance(&mut self, l: usize, cpu: usize, idle: Idle, m: Migration) {
        self.at(l, cpu, idle).lb_imbalance += m.amount();
    }
}

/// One domain's level name and its counters per idle type (`LbCounts::as_array()`).
pub type DomainCounts = (String, [[u64; 8]; 3]);

impl Sched {
    /// `cpu`'s domains as `/proc/schedstat` lists them (`domain0` the lowest attached: a level
    /// of one group, which v6.1 `kernel/sched/topology.c: cpu_attach_domain()` drops as
    /// degenerate, left out), each with its level's name and its counters per idle type in
    /// `show_schedstat()`'s order; and `cpu`'s newly idle gate.
    pub fn lb_schedstat(&self, cpu: usize) -> (Vec<DomainCounts>, NewidleGate) {
        let domains = (0..self.domains.len())
            .filter(|&l| self.domains[l].groups_of[cpu].len() > 1)
            .map(|l| (self.domains[l].name.clone(), self.schedstat.lb[l][cpu].map(|c| c.as_array())))
            .collect();
        (domains, self.schedstat.newidle[cpu])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_types_are_indexed_as_the_kernel_prints_them() {
        // show_schedstat() loops itype from CPU_IDLE to CPU_MAX_IDLE_TYPES: idle, busy, newly idle.
        assert_eq!([Idle::Now, Idle::Busy, Idle::Newly].map(idle_index), [0, 1, 2]);
        let mut s = Schedstat::new(2, 3);
        s.at(1, 2, Idle::Newly).lb_count += 1;
        s.imbalance(1, 2, Idle::Newly, Migration::Task(2));
        assert_eq!(s.lb[1][2][2].as_array(), [1, 0, 0, 2, 0, 0, 0, 0]);
        assert_eq!(s.lb[0][2][2], LbCounts::default());
    }
}
