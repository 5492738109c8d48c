//! Where the host's scheduler puts a thread among its CPUs (Linux 6.18 `kernel/sched/fair.c`,
//! docs/scheduler.md §10.41): the host has one run queue per CPU (`eevdf.rs`), all CPUs in one
//! last-level cache and no SMT, so one MC scheduling domain whose groups are single CPUs. Here
//! the decisions alone, on the queues' sizes; `eevdf.rs` applies them.
//!
//! Left out: PELT (a queue's load is its number of queued nice-0 threads, as an always-runnable
//! thread's `load_avg` converges to `NICE_0_LOAD`), the waker's CPU (`wake_affine()` is only asked
//! which of two busy CPUs, and keeps the previous one at equal loads), `recent_used_cpu`, active
//! balancing (after more than `cache_nice_tries + 2` failed balances) and the doubling of
//! `balance_interval` while balanced.

/// `sysctl_sched_migration_cost` (`kernel/sched/fair.c`, 500000 ns; this host's default, its
/// debugfs not readable): a thread that ran this recently on its CPU is cache hot (`task_hot()`).
pub(super) const MIGRATION_COST_NS: i64 = 500_000;

/// The MC domain's `cache_nice_tries` (`kernel/sched/topology.c: sd_init()`, 1): hot threads
/// migrate once more balances than this have failed in a row (`can_migrate_task()`).
const CACHE_NICE_TRIES: u32 = 1;

/// The MC domain's `busy_factor` (`sd_init()`, 16): a busy CPU balances that much less often
/// (`get_sd_balance_interval()`).
const BUSY_FACTOR: i64 = 16;

/// The MC domain's `imbalance_pct` (`sd_init()`, 117 for a domain sharing its LLC): two
/// overloaded queues within it count as balanced (`sched_balance_find_src_group()`).
const IMBALANCE_PCT: i64 = 117;

/// `NICE_0_LOAD` without its fixed-point shift (`SCHED_CAPACITY_SCALE`, 1024): one nice-0 thread.
const NICE_0_LOAD: i64 = 1024;

/// `select_task_rq_fair()` → `select_idle_sibling()` for a woken thread that last ran on `prev`,
/// given which CPUs are idle (nothing queued, `available_idle_cpu()`): `prev` if idle, else the
/// first idle CPU of the LLC from `prev + 1` on (`select_idle_cpu()`: `for_each_cpu_wrap(...,
/// target + 1)`), else `prev` (the target `wake_affine()` keeps at equal loads).
pub(super) fn wake_cpu(prev: usize, idle: &[bool]) -> usize {
    let n = idle.len();
    (0..n).map(|k| (prev + k) % n).find(|&q| idle[q]).unwrap_or(prev)
}

/// `get_sd_balance_interval()` in host ticks: the MC domain's `balance_interval`, its
/// `min_interval` (`sd_init()`: `sd_weight` ms, one per CPU), times `busy_factor` on a busy CPU,
/// in jiffies (`msecs_to_jiffies()`, rounded up), one less when busy, at least one.
pub(super) fn balance_interval_ticks(cpus: usize, tick_ns: i64, busy: bool) -> i64 {
    let ms = cpus as i64 * if busy { BUSY_FACTOR } else { 1 };
    let jiffies = (ms * 1_000_000 + tick_ns - 1) / tick_ns;
    (jiffies - i64::from(busy)).max(1)
}

/// What a balance may move (`calculate_imbalance()`'s `migration_type` and `imbalance`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Imbalance {
    /// `migrate_task`: that many threads.
    Tasks(i64),
    /// `migrate_load`: that much load (`NICE_0_LOAD` a thread).
    Load(i64),
}

/// A balance from a CPU with `local` threads queued (running one included) against the busiest
/// other one with `busiest`: `None` when balanced. An idle CPU has spare capacity and the busiest
/// single-CPU group is overloaded: half the difference in threads (`sibling_imbalance()`, then
/// halved). A busy one: the load above the average on either side (`migrate_load`), none if the
/// local queue is as long, or both are overloaded and within `imbalance_pct`.
pub(super) fn imbalance(local: usize, busiest: usize) -> Option<Imbalance> {
    let (l, b) = (local as i64, busiest as i64);
    if b <= 1 || l >= b {
        return None;
    }
    if l == 0 {
        return Some(Imbalance::Tasks((b - l) / 2));
    }
    if l > 1 && 100 * b <= IMBALANCE_PCT * l {
        return None;
    }
    Some(Imbalance::Load(NICE_0_LOAD * (b - l) / 2))
}

/// `detach_tasks()`: whether a waiting thread, this `hot` (`task_hot()`), may go with
/// `imbalance` left after `failed` balances that moved nothing (`can_migrate_task()`: a delayed
/// or running thread never; a hot one only after `cache_nice_tries` failures); its load counts
/// shifted down by `failed` (`shr_bound()`), so repeated failures let a larger share go.
pub(super) fn may_move(imbalance: Imbalance, hot: bool, failed: u32) -> bool {
    if hot && failed <= CACHE_NICE_TRIES {
        return false;
    }
    match imbalance {
        Imbalance::Tasks(n) => n > 0,
        Imbalance::Load(l) => l > 0 && NICE_0_LOAD >> failed.min(62) <= l,
    }
}

/// The imbalance left once a thread went (`detach_tasks()`: `imbalance--` or less its load).
pub(super) fn after_move(imbalance: Imbalance, failed: u32) -> Imbalance {
    match imbalance {
        Imbalance::Tasks(n) => Imbalance::Tasks(n - 1),
        Imbalance::Load(l) => Imbalance::Load(l - (NICE_0_LOAD >> failed.min(62))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_woken_thread_goes_to_its_previous_cpu_if_idle_else_an_idle_one_else_back() {
        assert_eq!(wake_cpu(0, &[true, true]), 0);
        assert_eq!(wake_cpu(0, &[false, true]), 1);
        assert_eq!(wake_cpu(1, &[false, false]), 1);
        assert_eq!(wake_cpu(2, &[true, false, false, true]), 3, "scanned from prev + 1, wrapping");
    }

    #[test]
    fn a_busy_cpu_balances_sixteen_times_less_often() {
        // Two CPUs, a 4 ms tick (CONFIG_HZ 250): 2 ms is one jiffy idle; 32 ms is 8, less one, busy.
        assert_eq!(balance_interval_ticks(2, 4_000_000, false), 1);
        assert_eq!(balance_interval_ticks(2, 4_000_000, true), 7);
        assert_eq!(balance_interval_ticks(1, 1_000_000, true), 15);
    }

    #[test]
    fn balances_move_half_the_difference_and_hot_threads_only_after_failures() {
        assert_eq!(imbalance(0, 1), None, "a lone running thread stays");
        assert_eq!(imbalance(0, 3), Some(Imbalance::Tasks(1)));
        assert_eq!(imbalance(2, 2), None);
        // 7 against 6: within 117 %; 6 against 5 not.
        assert_eq!(imbalance(6, 7), None);
        assert_eq!(imbalance(5, 6), Some(Imbalance::Load(512)));
        // 1 against 2: half a thread's load, a whole one moves only after a failed balance.
        let half = imbalance(1, 2).unwrap();
        assert_eq!(half, Imbalance::Load(512));
        assert!(!may_move(half, false, 0) && may_move(half, false, 1));
        // 1 against 3: one thread, unless it is hot and no balance has failed twice.
        let one = imbalance(1, 3).unwrap();
        assert!(may_move(one, false, 0) && !may_move(one, true, 1) && may_move(one, true, 2));
        assert!(!may_move(after_move(one, 0), false, 0));
    }
}
