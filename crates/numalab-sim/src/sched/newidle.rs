//! Whether a newly idle CPU balances (profile `sched.newidle_gate`): v6.1
//! `kernel/sched/fair.c: newidle_balance()`, v6.13 `sched_balance_newidle()`. The kernel skips
//! the balance when the CPU's average idle spell (`rq->avg_idle`) is shorter than what a balance
//! of its lowest domain has cost (`sd->max_newidle_lb_cost`), and climbs a level only while
//! `avg_idle >= curr_cost + sd->max_newidle_lb_cost` (`curr_cost`: what the levels balanced so
//! far cost this time). `avg_idle` is `update_avg()` of each idle spell, from the `idle_stamp`
//! set when the CPU went idle to its next wake-up (`kernel/sched/core.c: ttwu_do_wakeup()`),
//! capped at `2 x rq->max_idle_balance_cost`.
//!
//! `sd->max_newidle_lb_cost` is state, per CPU and domain (`update_newidle_cost()`, v6.1 and
//! v6.13 alike): each newly idle balance of the domain raises it to that balance's time ("if
//! (cost > sd->max_newidle_lb_cost) { sd->max_newidle_lb_cost = cost;
//! sd->last_decay_max_lb_cost = jiffies; }"), and `rebalance_domains()` decays it, calling
//! `update_newidle_cost(sd, 0)` for every domain ("else if (time_after(jiffies,
//! sd->last_decay_max_lb_cost + HZ)) { sd->max_newidle_lb_cost = (sd->max_newidle_lb_cost *
//! 253) / 256; ...}": 1 % once a second at most). It starts at the value the command found
//! (`Background`'s `newidle_lb_cost_s`, what the guest's boot left; none: `sd_init()`'s 0), the
//! next decay a second after the start. A balance's time is the level's typical `load_balance()`
//! (`Background`'s `lb_time_s`, as `serialize.rs` holds the lock for); the guest's also counts
//! any time the host does not run the vCPU inside it (`sched_clock_cpu()` differences), which
//! `host_stop.rs` adds with the host model.
use super::domains::Domain;
use super::{Sched, MIGRATION_COST_S};

#[derive(Clone, Debug)]
pub(super) struct IdleAvg {
    /// Per CPU: `rq->avg_idle` in seconds.
    avg_idle_s: Vec<f64>,
    /// Per CPU: `rq->idle_stamp`, when it went idle (none once woken or after a pull).
    idle_stamp_s: Vec<Option<f64>>,
    /// Per CPU, per modelled level: `sd->max_newidle_lb_cost` (`level_costs` for the start).
    max_cost_s: Vec<Vec<f64>>,
    /// Per CPU, per modelled level: `sd->last_decay_max_lb_cost`, when it was last raised or
    /// decayed.
    last_decay_s: Vec<Vec<f64>>,
}

/// `update_newidle_cost()`'s decay: "(sd->max_newidle_lb_cost * 253) / 256" ...
const DECAY: f64 = 253.0 / 256.0;
/// ... at most once per `HZ` jiffies, a second.
const DECAY_PERIOD_S: f64 = 1.0;

impl IdleAvg {
    /// `sched_init()`: `rq->avg_idle = 2*sysctl_sched_migration_cost`; balancing free.
    pub(super) fn new(ncpu: usize) -> Self {
        IdleAvg {
            avg_idle_s: vec![2.0 * MIGRATION_COST_S; ncpu],
            idle_stamp_s: vec![None; ncpu],
            max_cost_s: vec![Vec::new(); ncpu],
            last_decay_s: vec![Vec::new(); ncpu],
        }
    }

    /// The levels' costs at the start from the guest's measured ones (`level_costs`), the
    /// next decay a second later.
    pub(super) fn set_costs(&mut self, domains: &[Domain], given: &[f64]) {
        for (cpu, c) in self.max_cost_s.iter_mut().enumerate() {
            *c = level_costs(domains, cpu, given);
            self.last_decay_s[cpu] = vec![0.0; c.len()];
        }
    }

    /// `update_newidle_cost(sd, domain_cost)` after a newly idle balance of `cpu`'s level `l`
    /// that took `cost_s`: the maximum, and its decay restarts.
    pub(super) fn balanced(&mut self, cpu: usize, l: usize, cost_s: f64, now_s: f64) {
        if let Some(max) = self.max_cost_s[cpu].get_mut(l) {
            if cost_s > *max {
                *max = cost_s;
                self.last_decay_s[cpu][l] = now_s;
            }
        }
    }

    /// `rebalance_domains()` on `cpu`: "update_newidle_cost(sd, 0)" for each of its domains, each
    /// decayed if its last raise or decay is more than a second ago.
    pub(super) fn decay(&mut self, cpu: usize, now_s: f64) {
        for (max, last) in self.max_cost_s[cpu].iter_mut().zip(&mut self.last_decay_s[cpu]) {
            if now_s > *last + DECAY_PERIOD_S {
                *max *= DECAY;
                *last = now_s;
            }
        }
    }

    /// `allows()` with `cpu`'s own level costs.
    #[cfg(test)]
    pub(super) fn allows_level(&self, cpu: usize, l: usize) -> bool {
        self.allows(cpu, l, &self.max_cost_s[cpu])
    }

    /// `cpu`'s level `l`'s `sd->max_newidle_lb_cost` now.
    pub(super) fn level_cost_s(&self, cpu: usize, l: usize) -> f64 {
        cost_of(&self.max_cost_s[cpu], l)
    }

    /// Whether level `l` is balanced after levels that cost `curr_cost_s` so far: not "if
    /// (this_rq->avg_idle < curr_cost + sd->max_newidle_lb_cost) break". `curr_cost` counts
    /// only the levels balanced, each for its time this once (one NI_RANDOM skipped adds
    /// nothing, `ni_random.rs`).
    pub(super) fn covers(&self, cpu: usize, curr_cost_s: f64, l: usize) -> bool {
        self.avg_idle_s[cpu] >= curr_cost_s + self.level_cost_s(cpu, l)
    }

    /// `cpu`'s domains' costs summed (`rebalance_domains()`'s `max_cost`).
    pub(super) fn full_cost_s(&self, cpu: usize) -> f64 {
        self.max_cost_s[cpu].iter().sum()
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

    /// The newly idle costs per level at the start, from the background's
    /// (`Background::newidle_lb_cost_s`).
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
    fn a_balance_raises_the_cost_to_its_time_and_a_periodic_visit_decays_it_once_a_second() {
        use crate::input::Kernel;
        use crate::sched::test_machines::{two_nodes_of, unbound};
        let s = Sched::new(&two_nodes_of(2), &unbound(), Kernel::V6_1, 1, 1).unwrap();
        let mut a = IdleAvg::new(4);
        a.set_costs(s.domains(), &[0.3e-3, 2e-3]);
        // A cheaper balance leaves the maximum; a dearer one raises it.
        a.balanced(0, 0, 0.1e-3, 0.2);
        assert_eq!(a.level_cost_s(0, 0), 0.3e-3);
        a.balanced(0, 0, 0.8e-3, 0.5);
        assert_eq!(a.level_cost_s(0, 0), 0.8e-3);
        // Only that CPU's level: the other level and CPU keep their start.
        assert_eq!((a.level_cost_s(0, 1), a.level_cost_s(1, 0)), (2e-3, 0.3e-3));
        // Within a second of the start (level 1) or of the raise (level 0): no decay.
        a.decay(0, 1.0);
        assert_eq!((a.level_cost_s(0, 0), a.level_cost_s(0, 1)), (0.8e-3, 2e-3));
        // Past it: level 1 decays by 253/256, level 0 not yet (raised at 0.5 s).
        a.decay(0, 1.01);
        assert_eq!((a.level_cost_s(0, 0), a.level_cost_s(0, 1)), (0.8e-3, 2e-3 * 253.0 / 256.0));
        // The decay restarts the second: not again at 1.5 s; level 0's turn at 1.51 s.
        a.decay(0, 1.51);
        assert_eq!((a.level_cost_s(0, 0), a.level_cost_s(0, 1)), (0.8e-3 * 253.0 / 256.0, 2e-3 * 253.0 / 256.0));
        // Decayed costs sum into the avg_idle cap (rebalance_domains()'s max_cost).
        assert!((a.full_cost_s(0) - 2.8e-3 * 253.0 / 256.0).abs() < 1e-15);
    }

    #[test]
    fn the_gate_opens_once_the_cost_decays_below_avg_idle_and_a_costly_balance_shuts_it() {
        let mut a = IdleAvg::new(1);
        // One level (as `level_costs` gives a node of one CPU's NUMA level alone).
        a.max_cost_s[0] = vec![1.005e-3];
        a.last_decay_s[0] = vec![0.0];
        // avg_idle 1 ms under a 1.005 ms cost: shut.
        assert!(!a.covers(0, 0.0, 0));
        // One decay (1.005 x 253/256 = 0.993 ms): open.
        a.decay(0, 1.1);
        assert!(a.covers(0, 0.0, 0));
        // A balance the host stopped for 3 ms: shut again, for every later call.
        a.balanced(0, 0, 3e-3, 1.2);
        assert!(!a.covers(0, 0.0, 0) && !a.allows_level(0, 0));
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
