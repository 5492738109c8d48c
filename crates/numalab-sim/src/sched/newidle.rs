//! Whether a newly idle CPU balances (profile `sched.newidle_gate`): v6.1
//! `kernel/sched/fair.c: newidle_balance()`, v6.13 `sched_balance_newidle()`. The kernel skips
//! the balance when the CPU's average idle spell (`rq->avg_idle`) is shorter than what a balance
//! of its lowest domain has cost (`sd->max_newidle_lb_cost`), and climbs a level only while
//! `avg_idle >= curr_cost + sd->max_newidle_lb_cost` (`curr_cost`: the levels balanced so far).
//! `avg_idle` is `update_avg()` of each idle spell, from the `idle_stamp` set when the CPU went
//! idle to its next wake-up (`kernel/sched/core.c: ttwu_do_wakeup()`), capped at
//! `2 x rq->max_idle_balance_cost`. A balance's cost per level is the host's (`Background`'s
//! `newidle_lb_cost_s`, the guest's measured `max_newidle_lb_cost`), each balance costing that
//! maximum, which is held: the kernel's decays by 1 % a second (`update_newidle_cost()`).

use super::domains::Domain;
use super::{Sched, MIGRATION_COST_S};

#[derive(Clone, Debug)]
pub(super) struct IdleAvg {
    /// Per CPU: `rq->avg_idle` in seconds.
    avg_idle_s: Vec<f64>,
    /// Per CPU: `rq->idle_stamp`, when it went idle (none once woken or after a pull).
    idle_stamp_s: Vec<Option<f64>>,
    /// Per CPU, per modelled level: one newly idle balance's cost there (`level_costs`).
    level_cost_s: Vec<Vec<f64>>,
}

impl IdleAvg {
    /// `sched_init()`: `rq->avg_idle = 2*sysctl_sched_migration_cost`; balancing free.
    pub(super) fn new(ncpu: usize) -> Self {
        IdleAvg {
            avg_idle_s: vec![2.0 * MIGRATION_COST_S; ncpu],
            idle_stamp_s: vec![None; ncpu],
            level_cost_s: vec![Vec::new(); ncpu],
        }
    }

    /// The levels' costs from the guest's measured ones (`level_costs`).
    pub(super) fn set_costs(&mut self, domains: &[Domain], given: &[f64]) {
        for (cpu, c) in self.level_cost_s.iter_mut().enumerate() {
            *c = level_costs(domains, cpu, given);
        }
    }

    /// `allows()` with `cpu`'s own level costs.
    #[cfg(test)]
    pub(super) fn allows_level(&self, cpu: usize, l: usize) -> bool {
        self.allows(cpu, l, &self.level_cost_s[cpu])
    }

    /// One newly idle balance of `cpu`'s level `l` (`level_costs`).
    pub(super) fn level_cost_s(&self, cpu: usize, l: usize) -> f64 {
        cost_of(&self.level_cost_s[cpu], l)
    }

    /// Whether level `l` is balanced after levels that cost `curr_cost_s` so far: not "if
    /// (this_rq->avg_idle < curr_cost + sd->max_newidle_lb_cost) break". `curr_cost` counts
    /// only the levels balanced (one NI_RANDOM skipped adds nothing, `ni_random.rs`); with
    /// every level below balanced this is `allows()`.
    pub(super) fn covers(&self, cpu: usize, curr_cost_s: f64, l: usize) -> bool {
        self.avg_idle_s[cpu] >= curr_cost_s + self.level_cost_s(cpu, l)
    }

    /// `cpu`'s domains all balanced once (`rebalance_domains()`'s `max_cost`).
    pub(super) fn full_cost_s(&self, cpu: usize) -> f64 {
        self.level_cost_s[cpu].iter().sum()
    }

    /// `newidle_balance()`: "this_rq->idle_stamp = rq_clock(this_rq)".
    pub(super) fn went_idle(&mut self, cpu: usize, now_s: f64) {
        self.idle_stamp_s[cpu] = Some(now_s);
    }

    /// A newly idle balance pulled a task: "if (pulled_task) this_rq->idle_stamp = 0" (no sample).
    pub(super) fn pulled(&mut self, cpu: usize) {
        self.idle_stamp_s[cpu] = None;
    }

    /// The CPU has work again (`ttwu_do_wakeup()`): the idle spell is a sample of
    /// `update_avg()` (`*avg += (sample - *avg) / 8`), the average capped at `2 x
    /// max_idle_balance_cost` (that is `max(sysctl_sched_migration_cost, the balances' cost)`:
    /// `newidle_balance()` raises it to `curr_cost`, `rebalance_domains()` brings it back to
    /// the larger of the two).
    pub(super) fn woke(&mut self, cpu: usize, now_s: f64, full_cost_s: f64) {
        if let Some(stamp) = self.idle_stamp_s[cpu].take() {
            let avg = &mut self.avg_idle_s[cpu];
            *avg += ((now_s - stamp).max(0.0) - *avg) / 8.0;
            *avg = avg.min(2.0 * MIGRATION_COST_S.max(full_cost_s));
        }
    }

    /// Whether level `l` (0 the lowest) is balanced: `avg_idle >= curr_cost +
    /// max_newidle_lb_cost`, the levels below `l` balanced before (`cost_of`).
    #[cfg(test)]
    pub(super) fn allows(&self, cpu: usize, l: usize, cost_s: &[f64]) -> bool {
        self.avg_idle_s[cpu] >= (0..=l).map(|k| cost_of(cost_s, k)).sum::<f64>()
    }

    #[cfg(test)]
    pub(super) fn avg_idle_s(&self, cpu: usize) -> f64 {
        self.avg_idle_s[cpu]
    }
}

impl Sched {
    /// A task was woken onto `cpu`'s run queue at `now_s` (`kernel/sched/core.c:
    /// ttwu_do_wakeup()`, also from `sched_ttwu_pending()` for a wake list): the CPU's idle
    /// spell, if one is open, is a sample of `rq->avg_idle`. Only a wake-up samples: a task a
    /// balance pulls onto an idle CPU leaves `rq->idle_stamp` set, so the spell closes at the
    /// CPU's next wake-up, however long it has been busy meanwhile (under the cap).
    pub fn ttwu_do_wakeup(&mut self, cpu: usize, now_s: f64) {
        let full = self.idle_avg.full_cost_s(cpu);
        self.idle_avg.woke(cpu, now_s, full);
    }

    /// The newly idle costs per level from the background's (`Background::newidle_lb_cost_s`).
    pub(super) fn refresh_newidle_costs(&mut self) {
        let given = self.noise.as_ref().map_or(&[][..], |nz| nz.newidle_lb_cost_s());
        self.idle_avg.set_costs(&self.domains, given);
    }
}

/// Level `l`'s cost: its own, else the highest level's given, else 0.
pub(super) fn cost_of(cost_s: &[f64], l: usize) -> f64 {
    cost_s.get(l).or(cost_s.last()).copied().unwrap_or(0.0)
}

/// Each modelled level's cost for `cpu`, from `given`, the guest's measured costs per domain as
/// debugfs lists them (`/sys/kernel/debug/sched/domains/cpuN/domainM`, M counting the domains
/// the CPU is attached to, lowest first: `kernel/sched/debug.c: update_sched_domain_debugfs()` over
/// `for_each_domain()`). The kernel attaches no domain with a single group (v6.1
/// `kernel/sched/topology.c: cpu_attach_domain()` drops what `sd_degenerate()` and
/// `sd_parent_degenerate()` find: one CPU, or the span of the level below), such as `MC` over a
/// node of one CPU: such a level costs nothing and the next one takes `domain0`'s cost.
pub(super) fn level_costs(domains: &[Domain], cpu: usize, given: &[f64]) -> Vec<f64> {
    let mut attached = 0;
    domains
        .iter()
        .map(|d| {
            if d.groups_of[cpu].len() <= 1 {
                return 0.0;
            }
            attached += 1;
            cost_of(given, attached - 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avg_idle_moves_an_eighth_toward_each_idle_spell_and_is_capped() {
        let mut a = IdleAvg::new(2);
        assert_eq!(a.avg_idle_s(0), 1e-3);
        // A 0.2 ms spell: 1 ms + (0.2 - 1) / 8 = 0.9 ms.
        a.went_idle(0, 1.0);
        a.woke(0, 1.0 + 0.2e-3, 0.0);
        assert!((a.avg_idle_s(0) - 0.9e-3).abs() < 1e-12);
        // Woken again without an idle spell in between: no sample.
        a.woke(0, 2.0, 0.0);
        assert!((a.avg_idle_s(0) - 0.9e-3).abs() < 1e-12);
        // A 1 s spell: capped at 2 x max(sysctl_sched_migration_cost, cost) = 1 ms ...
        a.went_idle(0, 3.0);
        a.woke(0, 4.0, 0.0);
        assert_eq!(a.avg_idle_s(0), 1e-3);
        // ... or twice a 3 ms balance.
        a.went_idle(0, 5.0);
        a.woke(0, 6.0, 3e-3);
        assert_eq!(a.avg_idle_s(0), 6e-3);
        // A pull ends the spell without a sample; the other CPU is untouched.
        a.went_idle(0, 7.0);
        a.pulled(0);
        a.woke(0, 8.0, 3e-3);
        assert_eq!((a.avg_idle_s(0), a.avg_idle_s(1)), (6e-3, 1e-3));
    }

    #[test]
    fn a_level_the_kernel_drops_as_degenerate_costs_nothing_and_the_next_takes_domain0s_cost() {
        use crate::input::Kernel;
        use crate::sched::test_machines::{two_nodes_of, unbound};
        // Two nodes of one CPU: MC spans one CPU (sd_degenerate()), so the NUMA level is the
        // guest's domain0 and takes its cost.
        let one = Sched::new(&two_nodes_of(1), &unbound(), Kernel::V6_1, 1, 1).unwrap();
        assert_eq!(level_costs(one.domains(), 0, &[0.6e-3, 0.2e-3]), vec![0.0, 0.6e-3]);
        // So with avg_idle at its initial 1 ms a newly idle CPU balances the NUMA level (0.6 ms
        // so far), where MC's 0.6 ms before it would have stopped it (1.2 ms); the cap on
        // avg_idle is twice max(0.5 ms, 0.6 ms).
        let mut a = IdleAvg::new(2);
        a.set_costs(one.domains(), &[0.6e-3]);
        assert!(a.allows_level(0, 1) && !a.allows(0, 1, &[0.6e-3, 0.6e-3]));
        assert!((a.full_cost_s(1) - 0.6e-3).abs() < 1e-15);
        // Two CPUs per node: MC balances two groups and keeps domain0's cost.
        let two = Sched::new(&two_nodes_of(2), &unbound(), Kernel::V6_1, 1, 1).unwrap();
        assert_eq!(level_costs(two.domains(), 0, &[0.6e-3, 0.2e-3]), vec![0.6e-3, 0.2e-3]);
        // Fewer costs given than levels: the last given for the rest; none: free.
        assert_eq!(level_costs(two.domains(), 3, &[0.6e-3]), vec![0.6e-3, 0.6e-3]);
        assert_eq!(level_costs(one.domains(), 1, &[]), vec![0.0, 0.0]);
    }

    #[test]
    fn a_level_is_balanced_only_while_avg_idle_covers_the_cost_so_far() {
        let a = IdleAvg::new(1);
        // avg_idle 1 ms: at 0.4 ms a balance, levels 0 and 1 (0.4, 0.8 ms) but not 2 (1.2 ms).
        let c = [0.4e-3];
        assert!(a.allows(0, 0, &c) && a.allows(0, 1, &c) && !a.allows(0, 2, &c));
        // Per level: 0.3 ms then 0.8 ms: level 1 needs 1.1 ms.
        assert!(a.allows(0, 0, &[0.3e-3, 0.8e-3]) && !a.allows(0, 1, &[0.3e-3, 0.8e-3]));
        // Costlier than the average idle spell: not even the lowest level.
        assert!(!a.allows(0, 0, &[1.5e-3]));
        // Free balancing (the default): every level.
        assert!(a.allows(0, 5, &[]));
    }
}
