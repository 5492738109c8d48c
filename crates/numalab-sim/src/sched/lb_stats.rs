//! `find_busiest_group()`'s arithmetic (`kernel/sched/fair.c`, v3.13 and v6.13): each group's
//! `struct sg_lb_stats` as `update_sg_lb_stats()` sums it from PELT, the busiest group
//! (`update_sd_pick_busiest()`), and what to move (`calculate_imbalance()`), in the kernel's
//! integer units. Pure functions of the statistics: `load_balance.rs` gathers them and moves
//! the tasks.

use super::fork::adjust_numa_imbalance;
use super::pelt::CAPACITY;
use super::{Domain, GroupLoad};

/// The balancing CPU's state (`enum cpu_idle_type`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Idle {
    Busy,
    Now,
    Newly,
}

/// One group's `struct sg_lb_stats` (`group_runnable` only goes into `kind`).
#[derive(Clone, Copy, Debug)]
pub(super) struct LbStats {
    pub g: GroupLoad,
    /// `group_load`: v6.13 the sum of `cpu_load()`; v3.13 of `target_load()` (local group) or
    /// `source_load()` (the others) at the domain's load index.
    pub load: u64,
    /// v6.13 `group_util` (`cpu_util_cfs()`).
    pub util: u64,
    /// v3.13 `sum_weighted_load`: the sum of `weighted_cpuload()`.
    pub weighted: u64,
    /// `avg_load = group_load x SCHED_CAPACITY_SCALE / group_capacity` (v6.13 computes it for
    /// overloaded groups only: 0 for the others).
    pub avg_load: u64,
    /// v6.13 `group_type`: 0 has spare, 1 fully busy, 2 overloaded.
    pub kind: u8,
}

impl LbStats {
    /// `group_capacity` (v3.13 `group_power`): every CPU at full capacity.
    pub fn capacity(&self) -> u64 {
        CAPACITY * self.g.weight as u64
    }

    /// v3.13 `load_per_task = sum_weighted_load / sum_nr_running`.
    fn load_per_task(&self) -> u64 {
        if self.g.nr > 0 {
            self.weighted / self.g.nr as u64
        } else {
            0
        }
    }
}

/// What `detach_tasks()` (v3.13 `move_tasks()`) moves and how much (`env->migration_type`,
/// `env->imbalance`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Migration {
    Load(u64),
    Util(u64),
    Task(u64),
}

impl Migration {
    pub fn amount(self) -> u64 {
        match self {
            Migration::Load(x) | Migration::Util(x) | Migration::Task(x) => x,
        }
    }
}

/// v6.13 `group_classify()` (no misfit, asymmetric, imbalanced or SMT-balance types here): 2
/// overloaded (`group_is_overloaded()`: more tasks than CPUs and utilisation or runnable above
/// the capacity by `imbalance_pct`), 1 fully busy (`!group_has_capacity()`), 0 has spare (fewer
/// tasks than CPUs, or utilisation below the capacity by `imbalance_pct` and runnable not above).
pub(super) fn group_classify(pct: u64, nr: usize, weight: usize, util: u64, runnable: u64) -> u8 {
    let cap = CAPACITY * weight as u64;
    let runnable_high = cap * pct < runnable * 100;
    if nr > weight && (cap * 100 < util * pct || runnable_high) {
        2
    } else if nr < weight || (!runnable_high && cap * 100 > util * pct) {
        0
    } else {
        1
    }
}

/// `sds->avg_load = total_load x SCHED_CAPACITY_SCALE / total_capacity` over the domain's
/// groups (overlapping NUMA groups counted as often as they appear, "XXX broken for overlapping
/// NUMA groups").
fn domain_avg_load(groups: &[LbStats]) -> u64 {
    let load: u64 = groups.iter().map(|g| g.load).sum();
    let cap: u64 = groups.iter().map(|g| g.capacity()).sum();
    load * CAPACITY / cap.max(1)
}

/// v3.13 `find_busiest_group()` and `calculate_imbalance()` (kernel/sched/fair.c as in
/// v3.13.10): Some(index of the busiest group, load to move), None when balanced.
pub(super) fn busiest_313(groups: &[LbStats], d: &Domain, idle: Idle) -> Option<(usize, Migration)> {
    let local = groups[0];
    // update_sg_lb_stats(): group_capacity = DIV_ROUND_CLOSEST(group_power, SCHED_POWER_SCALE),
    // its cores; group_has_free_capacity = group_capacity > sum_nr_running.
    let has_free = |g: &LbStats| g.g.cores > g.g.nr;
    // update_sd_lb_stats(): "In case the child domain prefers tasks go to siblings first, lower
    // the sg capacity to one" while the local group has free capacity.
    let capacity = |g: &LbStats| {
        if d.groups_prefer_sibling && has_free(&local) {
            g.g.cores.min(1)
        } else {
            g.g.cores
        }
    };
    let b = pick_busiest(groups, capacity)?;
    let busiest = groups[b];
    if busiest.g.nr == 0 {
        return None;
    }
    let sds_avg = domain_avg_load(groups);
    // "SD_BALANCE_NEWIDLE trumps SMP nice when underutilized".
    let force = idle == Idle::Newly && has_free(&local) && !has_free(&busiest);
    if !force {
        if local.avg_load >= busiest.avg_load || local.avg_load >= sds_avg {
            return None;
        }
        if idle == Idle::Now {
            if local.g.idle < busiest.g.idle && busiest.g.nr <= busiest.g.weight {
                return None;
            }
        } else if 100 * busiest.avg_load <= d.imbalance_pct as u64 * local.avg_load {
            return None;
        }
    }
    Some((b, Migration::Load(imbalance_313(local, busiest, capacity(&busiest), sds_avg))))
}

/// `update_sd_pick_busiest()` of v3.13 and v2.6.32: the first group (after the local one) with a
/// strictly higher `avg_load` than the busiest so far (0 at the start) and more tasks than its
/// capacity.
fn pick_busiest(groups: &[LbStats], capacity: impl Fn(&LbStats) -> usize) -> Option<usize> {
    let mut busiest: Option<usize> = None;
    for (i, g) in groups.iter().enumerate().skip(1) {
        let best = busiest.map_or(0, |b| groups[b].avg_load);
        if g.avg_load > best && g.g.nr > capacity(g) {
            busiest = Some(i);
        }
    }
    busiest
}

/// v2.6.32 `find_busiest_group()` and `calculate_imbalance()` (`kernel/sched.c`): as v3.13 but
/// `update_sd_lb_stats()` lowers every group's capacity to one under a child's
/// `SD_PREFER_SIBLING` whatever the local group holds, no newly-idle `force` and no `CPU_IDLE`
/// case (`imbalance_pct` decides in every state), balanced when the busiest group's `avg_load`
/// is not above its load per task, and `max_pull = min(max_load - avg_load, max_load -
/// busiest_load_per_task)`.
pub(super) fn busiest_2632(groups: &[LbStats], d: &Domain) -> Option<(usize, Migration)> {
    let local = groups[0];
    let capacity = |g: &LbStats| if d.groups_prefer_sibling { g.g.cores.min(1) } else { g.g.cores };
    let b = pick_busiest(groups, capacity)?;
    let busiest = groups[b];
    if busiest.g.nr == 0 || local.avg_load >= busiest.avg_load {
        return None;
    }
    let sds_avg = domain_avg_load(groups);
    if local.avg_load >= sds_avg || 100 * busiest.avg_load <= d.imbalance_pct as u64 * local.avg_load {
        return None;
    }
    let blpt = busiest.load_per_task();
    if busiest.avg_load <= blpt {
        return None;
    }
    let small = |imb: u64| fix_small_imbalance(local, busiest, false).unwrap_or(imb);
    if busiest.avg_load < sds_avg {
        return Some((b, Migration::Load(small(0))));
    }
    let max_pull = (busiest.avg_load - sds_avg).min(busiest.avg_load - blpt);
    let imb = (max_pull * busiest.capacity()).min((sds_avg - local.avg_load) * local.capacity()) / CAPACITY;
    Some((b, Migration::Load(if imb < blpt { small(imb) } else { imb })))
}

/// v3.13 `calculate_imbalance()`: `max_pull = min(busiest avg_load - domain avg_load, load above
/// capacity)`, the imbalance `min(max_pull x busiest power, (domain avg - local avg) x local
/// power) / SCHED_POWER_SCALE`; below one task's load, `fix_small_imbalance()`.
fn imbalance_313(local: LbStats, busiest: LbStats, busiest_capacity: usize, sds_avg: u64) -> u64 {
    if busiest.avg_load <= sds_avg || local.avg_load >= sds_avg {
        return fix_small_imbalance(local, busiest, true).unwrap_or(0);
    }
    // load_above_capacity = (sum_nr_running - group_capacity) x SCHED_LOAD_SCALE x
    // SCHED_POWER_SCALE / group_power.
    let above = (busiest.g.nr.saturating_sub(busiest_capacity)) as u64 * CAPACITY * CAPACITY / busiest.capacity();
    let max_pull = (busiest.avg_load - sds_avg).min(above);
    let imb = (max_pull * busiest.capacity()).min((sds_avg - local.avg_load) * local.capacity()) / CAPACITY;
    if imb < busiest.load_per_task() {
        return fix_small_imbalance(local, busiest, true).unwrap_or(imb);
    }
    imb
}

/// v3.13 `fix_small_imbalance()`: one of the busiest group's tasks (`load_per_task`) when that
/// brings the two groups closer, or when it raises the power used; None leaves the imbalance as
/// it was. An empty local group takes the destination CPU's `cpu_avg_load_per_task()`, 0 here
/// (an idle CPU has no queued load). `scaled`: v3.13 scales the busiest group's load per task by
/// its power in the first test; v2.6.32 compares `max_load - this_load + busiest_load_per_task
/// >= busiest_load_per_task x imbn` unscaled.
fn fix_small_imbalance(mut local: LbStats, busiest: LbStats, scaled: bool) -> Option<u64> {
    let mut imbn = 2;
    let local_lpt = if local.g.nr == 0 {
        0
    } else {
        if busiest.load_per_task() > local.load_per_task() {
            imbn = 1;
        }
        local.load_per_task()
    };
    let blpt = busiest.load_per_task();
    let step = if scaled { blpt * CAPACITY / busiest.capacity() } else { blpt };
    if busiest.avg_load + step >= local.avg_load + step * imbn {
        return Some(blpt);
    }
    // "we may be able to increase total CPU power used by moving them".
    let (bp, lp) = (busiest.capacity(), local.capacity());
    let pwr_now = (bp * blpt.min(busiest.avg_load) + lp * local_lpt.min(local.avg_load)) / CAPACITY;
    let mut pwr_move = 0;
    let tmp = blpt * CAPACITY / bp;
    if busiest.avg_load > tmp {
        pwr_move += bp * blpt.min(busiest.avg_load - tmp);
    }
    let tmp = if busiest.avg_load * bp < blpt * CAPACITY { busiest.avg_load * bp / lp } else { blpt * CAPACITY / lp };
    local.avg_load += tmp;
    pwr_move += lp * local_lpt.min(local.avg_load);
    pwr_move /= CAPACITY;
    (pwr_move > pwr_now).then_some(blpt)
}

/// v6.13 `sibling_imbalance()`: the running-task difference, normalised by the groups' cores
/// when they differ (rounded), at least 2 toward an empty local group when the busiest runs more
/// than one; 0 for a busy destination.
fn sibling_imbalance(idle: Idle, local: GroupLoad, busiest: GroupLoad) -> usize {
    if idle == Idle::Busy || busiest.nr == 0 {
        return 0;
    }
    if busiest.cores == local.cores {
        return busiest.nr.saturating_sub(local.nr);
    }
    let imb = (local.cores * busiest.nr).saturating_sub(busiest.cores * local.nr);
    let imb = (2 * imb + local.cores + busiest.cores) / (local.cores + busiest.cores);
    if imb <= 1 && local.nr == 0 && busiest.nr > 1 {
        2
    } else {
        imb
    }
}

/// How v5.5+ spreads tasks between groups under `SD_PREFER_SIBLING` (`BusiestGroup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Spread {
    /// v5.5-v6.5: the plain running-task difference, whatever the destination's state.
    TaskDiff,
    /// v6.6+ `sibling_imbalance()`.
    SiblingImbalance,
}

impl Spread {
    /// The tasks to even out between `local` and `busiest` (before halving).
    fn imbalance(self, idle: Idle, local: GroupLoad, busiest: GroupLoad) -> usize {
        match self {
            // v6.1 calculate_imbalance(): "lsub_positive(&nr_diff, local->sum_nr_running)".
            Spread::TaskDiff => busiest.nr.saturating_sub(local.nr),
            Spread::SiblingImbalance => sibling_imbalance(idle, local, busiest),
        }
    }

    /// `find_busiest_group()`'s "try to move all excess tasks to child's sibling domain".
    fn forces(self, idle: Idle, local: GroupLoad, busiest: GroupLoad) -> bool {
        match self {
            // v6.1: "busiest->sum_nr_running > local->sum_nr_running + 1".
            Spread::TaskDiff => busiest.nr > local.nr + 1,
            Spread::SiblingImbalance => sibling_imbalance(idle, local, busiest) > 1,
        }
    }
}

/// v6.13 `update_sd_pick_busiest()` over the groups in order: a higher type wins; overloaded: a
/// strictly higher `avg_load`; fully busy: at least as high (0 for both: the later group; no
/// SMT flag here; v6.1: strictly higher, so the first stays); has spare: fewer idle CPUs, or as
/// many and strictly more tasks.
fn pick_busiest_6(groups: &[LbStats], spread: Spread) -> Option<usize> {
    let mut busiest: Option<usize> = None;
    for (i, g) in groups.iter().enumerate().skip(1) {
        // "Make sure that there is at least one task to pull".
        if g.g.nr == 0 {
            continue;
        }
        let wins = match busiest.map(|b| groups[b]) {
            None => true,
            Some(b) => match g.kind.cmp(&b.kind) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => match g.kind {
                    2 => g.avg_load > b.avg_load,
                    1 if spread == Spread::TaskDiff => g.avg_load > b.avg_load,
                    1 => g.avg_load >= b.avg_load,
                    _ => g.g.idle < b.g.idle || (g.g.idle == b.g.idle && g.g.nr > b.g.nr),
                },
            },
        };
        if wins {
            busiest = Some(i);
        }
    }
    busiest
}

/// v6.13 `sched_balance_find_src_group()` (`find_busiest_group()` before 6.10) for a system
/// without asymmetric capacity or energy model: Some(index of the busiest group, what to move),
/// None when balanced or the imbalance is 0. `llc`: the domain shares the LLC (`SD_SHARE_LLC`).
pub(super) fn busiest_6(
    groups: &[LbStats],
    d: &Domain,
    llc: bool,
    idle: Idle,
    spread: Spread,
) -> Option<(usize, Migration)> {
    let b = pick_busiest_6(groups, spread)?;
    let (local, busiest) = (groups[0], groups[b]);
    if local.kind > busiest.kind {
        return None;
    }
    let pct = d.imbalance_pct as u64;
    let sds_avg = domain_avg_load(groups);
    if local.kind == 2
        && (local.avg_load >= busiest.avg_load
            || local.avg_load >= sds_avg
            || 100 * busiest.avg_load <= pct * local.avg_load)
    {
        return None;
    }
    // "Try to move all excess tasks to a sibling domain of the busiest group's child domain":
    // sds.prefer_sibling is the busiest group's SD_PREFER_SIBLING (its child domain's flag).
    let prefer_sibling = d.groups_prefer_sibling;
    let force = prefer_sibling && local.kind == 0 && spread.forces(idle, local.g, busiest.g);
    if busiest.kind != 2 && !force {
        // "this CPU is already busy, let another idle CPU try to pull task"
        if idle == Idle::Busy {
            return None;
        }
        if busiest.g.weight > 1 && local.g.idle <= busiest.g.idle + 1 {
            return None;
        }
        if busiest.g.nr == 1 {
            return None;
        }
    }
    let m = imbalance_6(d, llc, idle, spread, local, busiest, sds_avg);
    (m.amount() > 0).then_some((b, m))
}

/// v6.13 `calculate_imbalance()` for the group types modelled.
fn imbalance_6(
    d: &Domain,
    llc: bool,
    idle: Idle,
    spread: Spread,
    local: LbStats,
    busiest: LbStats,
    sds_avg: u64,
) -> Migration {
    if local.kind == 0 {
        if busiest.kind > 1 && !llc {
            // "If busiest is overloaded, try to fill spare capacity": migrate_util; an idle
            // destination with no spare utilisation left still pulls one task.
            let imb = local.capacity().max(local.util) - local.util;
            if idle != Idle::Busy && imb == 0 {
                return Migration::Task(1);
            }
            return Migration::Util(imb);
        }
        let imb = if busiest.g.weight == 1 || d.groups_prefer_sibling {
            spread.imbalance(idle, local.g, busiest.g)
        } else {
            // "If there is no overload, we just want to even the number of idle CPUs."
            local.g.idle.saturating_sub(busiest.g.idle)
        };
        let imb = if d.numa { adjust_numa_imbalance(imb, local.g.nr + 1, d.imb_numa_nr) } else { imb };
        // "Number of tasks to move to restore balance".
        return Migration::Task((imb >> 1) as u64);
    }
    let mut local_avg = local.avg_load;
    if local.kind < 2 {
        // "Local will become overloaded so the avg_load metrics are finally needed."
        local_avg = local.load * CAPACITY / local.capacity();
        if local_avg >= busiest.avg_load || local_avg >= sds_avg {
            return Migration::Load(0);
        }
    }
    // migrate_load: min((busiest avg - domain avg) x busiest capacity, (domain avg - local avg)
    // x local capacity) / SCHED_CAPACITY_SCALE, in unsigned long as the kernel computes it.
    let a = busiest.avg_load.wrapping_sub(sds_avg).wrapping_mul(busiest.capacity());
    let b = sds_avg.wrapping_sub(local_avg).wrapping_mul(local.capacity());
    Migration::Load(a.min(b) / CAPACITY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(nr: usize, weight: usize, load: u64, util: u64, runnable: u64) -> LbStats {
        let g = GroupLoad { nr, weight, idle: weight.saturating_sub(nr), cores: weight };
        let kind = group_classify(117, nr, weight, util, runnable);
        let avg_load = if kind == 2 { load * CAPACITY / (CAPACITY * weight as u64) } else { 0 };
        LbStats { g, load, util, weighted: load, avg_load, kind }
    }

    #[test]
    fn group_classify_reads_utilisation_not_only_task_counts() {
        // Two tasks on two CPUs, each busy a tenth of the time (passive threads between
        // barriers): spare capacity, not fully busy.
        assert_eq!(group_classify(117, 2, 2, 200, 210), 0);
        // The same two tasks running all the time: fully busy.
        assert_eq!(group_classify(117, 2, 2, 2000, 2040), 1);
        // Three tasks on two CPUs, runnable beyond capacity x 1.17: overloaded.
        assert_eq!(group_classify(117, 3, 2, 2048, 3072), 2);
        // Three tasks on two CPUs that hardly run: neither utilisation nor runnable says
        // overloaded, and more tasks than CPUs is not spare.
        assert_eq!(group_classify(117, 3, 2, 300, 300), 0);
    }

    #[test]
    fn v313_fix_small_imbalance_moves_one_tasks_load() {
        // Busiest: 2 tasks of load 1000 on one CPU (avg 2000); local: idle CPU. The domain
        // average 1000: max_pull = min(1000, 1 task above capacity = 1024) = 1000, imbalance
        // min(1000 x 1024, 1000 x 1024) / 1024 = 1000, not below load_per_task 1000.
        let local = stats(0, 1, 0, 0, 0);
        let mut busiest = stats(2, 1, 2000, 0, 0);
        busiest.avg_load = 2000;
        assert_eq!(imbalance_313(local, busiest, 1, 1000), 1000);
        // Busiest 3 tasks (3000), local 2 tasks (2000), 1 CPU each: domain avg 2500, imbalance
        // min(500 x 1024, 500 x 1024) / 1024 = 500 < load_per_task 1000: fix_small_imbalance
        // compares 3000 + 1000 >= 2000 + 1000 (imbn 2, equal per-task loads) and moves one task.
        let mut local = stats(2, 1, 2000, 0, 0);
        local.avg_load = 2000;
        let mut busiest = stats(3, 1, 3000, 0, 0);
        busiest.avg_load = 3000;
        assert_eq!(imbalance_313(local, busiest, 1, 2500), 1000);
    }

    #[test]
    fn v2632_prefer_sibling_lowers_the_capacity_even_when_the_local_node_is_full() {
        // NODE level, 2 CPUs a node, MC groups with SD_PREFER_SIBLING. Both nodes queue 2 tasks
        // (weight 2048), the remote one's history reads higher (source_load 3072).
        let node = |load: u64| {
            let mut g = stats(2, 2, load, 0, 0);
            g.weighted = 2048;
            g.avg_load = load / 2;
            g
        };
        let (local, busiest) = (node(2048), node(3072));
        let mut d = test_domain(true);
        d.groups_prefer_sibling = true;
        d.imbalance_pct = 110.0;
        // v3.13 keeps the capacity (2 cores) while the local node has no free core: 2 tasks are
        // not above it.
        assert_eq!(busiest_313(&[local, busiest], &d, Idle::Busy), None);
        // v2.6.32 lowers it to one. Domain avg 1280: max_pull = min(1536 - 1280, 1536 - 1024) =
        // 256, imbalance min(256 x 2048, 256 x 2048) / 1024 = 512 < one task; fix_small_imbalance:
        // 1536 + 1024 < 1024 + 2 x 1024 and no power gained (4096 both), so 512 stays.
        assert_eq!(busiest_2632(&[local, busiest], &d), Some((1, Migration::Load(512))));
        // imbalance_pct decides whatever the CPU's state: 100 x 1536 <= 150 x 1024.
        d.imbalance_pct = 150.0;
        assert_eq!(busiest_2632(&[local, busiest], &d), None);
    }

    #[test]
    fn v613_an_overloaded_remote_group_fills_the_local_spare_utilisation() {
        // NUMA level: local node of 2 CPUs with one task at util 300, busiest node overloaded
        // (5 tasks on 2 CPUs): migrate_util, 2048 - 300.
        let local = stats(1, 2, 400, 300, 310);
        let busiest = stats(5, 2, 5000, 2048, 5000);
        let d = test_domain(true);
        assert_eq!(
            busiest_6(&[local, busiest], &d, false, Idle::Now, Spread::SiblingImbalance),
            Some((1, Migration::Util(1748)))
        );
    }

    #[test]
    fn v61_spreads_the_plain_task_difference_even_toward_a_busy_cpu() {
        // First NUMA level (its groups carry SD_PREFER_SIBLING), 2 CPUs a node: the local node
        // runs 1 task, the other 3 that hardly run (has spare, no idle CPU). The balancing CPU
        // is busy.
        let local = stats(1, 2, 400, 300, 310);
        let busiest = stats(3, 2, 900, 300, 300);
        let mut d = test_domain(true);
        d.groups_prefer_sibling = true;
        // v6.13 sibling_imbalance() is 0 toward a busy CPU: nothing forces the balance, and a
        // busy CPU does not pull from a group that is not overloaded.
        assert_eq!(busiest_6(&[local, busiest], &d, false, Idle::Busy, Spread::SiblingImbalance), None);
        // v6.1 find_busiest_group(): 3 > 1 + 1 forces it; calculate_imbalance(): nr_diff 2,
        // adjust_numa_imbalance() keeps it (2 tasks would run, imb_numa_nr 0), halved: 1 task.
        assert_eq!(
            busiest_6(&[local, busiest], &d, false, Idle::Busy, Spread::TaskDiff),
            Some((1, Migration::Task(1)))
        );
        // Idle, both move the same: the difference 2, halved.
        for spread in [Spread::TaskDiff, Spread::SiblingImbalance] {
            assert_eq!(busiest_6(&[local, busiest], &d, false, Idle::Now, spread), Some((1, Migration::Task(1))));
        }
    }

    #[test]
    fn fully_busy_groups_of_equal_load_v61_keeps_the_first_v613_takes_the_last() {
        // update_sd_pick_busiest(), group_fully_busy, avg_load 0 for both: v6.1 "if
        // (sgs->avg_load <= busiest->avg_load) return false"; v6.13 only "<" (no SMT here).
        let local = stats(0, 2, 0, 0, 0);
        let busy = stats(2, 2, 2000, 2000, 2040);
        assert_eq!(busy.kind, 1);
        let groups = [local, busy, busy];
        assert_eq!(pick_busiest_6(&groups, Spread::TaskDiff), Some(1));
        assert_eq!(pick_busiest_6(&groups, Spread::SiblingImbalance), Some(2));
    }

    fn test_domain(numa: bool) -> Domain {
        let mut d =
            super::super::domains::build(&crate::sched::test_machines::two_nodes_of(2), crate::input::Kernel::V6_13)
                .into_iter()
                .find(|d| d.numa == numa)
                .unwrap();
        d.imb_numa_nr = 0;
        d
    }
}
