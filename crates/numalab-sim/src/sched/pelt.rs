//! Per-entity load tracking (PELT), with each kernel version's integer arithmetic.
//!
//! Time is cut into 1024 µs periods (the kernel's "µs" is 1024 ns: `delta >>= 10`); a period
//! `n` periods ago weighs `y^n` with `y^32 = 1/2`, so a contribution halves every 32 periods
//! (about 32 ms) and a task runnable forever sums to `LOAD_AVG_MAX` = 47742 (`1024 / (1 - y)`
//! with the kernel's floor rounding).
//!
//! - v6.13 (`kernel/sched/pelt.c`): [`SchedAvg`] — `___update_load_sum()` /
//!   `accumulate_sum()` / `__accumulate_pelt_segments()` / `___update_load_avg()`, giving
//!   `load_avg` (runnable fraction x weight), `runnable_avg` and `util_avg` (running fraction x
//!   1024). A new task starts from `init_entity_runnable_average()` (full load) and
//!   `post_init_entity_util_avg()` (half the CPU's spare capacity), attached to its run queue
//!   by `attach_entity_load_avg()` (`kernel/sched/fair.c`).
//! - v3.13 (`kernel/sched/fair.c`): [`RunnableAvg313`] — `__update_entity_runnable_avg()`
//!   with `runnable_avg_sum` / `runnable_avg_period` and `__compute_runnable_contrib()`, and
//!   `load_avg_contrib = sum x weight / (period + 1)` (`__update_task_entity_contrib()`),
//!   recomputed when a period boundary is crossed (`update_entity_load_avg()`). A new task
//!   starts from `init_task_runnable_average()`: sum = period = its first slice.
//!
//! Run queues' signals are the sums of their tasks' (the kernel's own invariant, stated in
//! v6.13 `pelt.c`: "cfs_rq: load_avg = \Sum se->avg.load_avg"), see `sched/mod.rs`.

/// `LOAD_AVG_PERIOD` (`kernel/sched/sched-pelt.h`; v3.13 `fair.c`): the half-life in periods.
pub const LOAD_AVG_PERIOD: u64 = 32;
/// `LOAD_AVG_MAX`: the largest sum of a series of full 1024 µs periods.
pub const LOAD_AVG_MAX: u64 = 47742;
/// v3.13 `LOAD_AVG_MAX_N`: periods after which the series has converged to `LOAD_AVG_MAX`.
const LOAD_AVG_MAX_N: u64 = 345;
/// `scale_load_down(NICE_0_LOAD)`: a nice-0 task's weight (every thread here is nice 0).
pub const NICE_0_WEIGHT: u64 = 1024;
/// `SCHED_CAPACITY_SCALE`: a full CPU's capacity (`arch_scale_cpu_capacity()` on x86).
pub const CAPACITY: u64 = 1024;
/// v6.13 `PELT_MIN_DIVIDER` (`kernel/sched/pelt.h`).
const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;

/// `runnable_avg_yN_inv[n]` = y^n x 2^32 (`kernel/sched/sched-pelt.h`, the same table in
/// v3.13 `fair.c`).
const RUNNABLE_AVG_YN_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796, 0xd744fcc9,
    0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581,
    0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9, 0x9837f050, 0x94f4efa8, 0x91c3d373,
    0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// v3.13 `runnable_avg_yN_sum[n]` = floor(1024 x (y + y^2 + ... + y^n)).
const RUNNABLE_AVG_YN_SUM: [u32; 33] = [
    0, 1002, 1982, 2941, 3880, 4798, 5697, 6576, 7437, 8279, 9103, 9909, 10698, 11470, 12226, 12966, 13690, 14398,
    15091, 15769, 16433, 17082, 17718, 18340, 18949, 19545, 20128, 20698, 21256, 21802, 22336, 22859, 23371,
];

/// `decay_load(val, n)`: val x y^n, rounded down as the kernel does (`val >>= n / 32`, then
/// `mul_u64_u32_shr(val, runnable_avg_yN_inv[n % 32], 32)`). `y^0` in the table is
/// 0xffffffff, so a multiple of 32 periods gives `val / 2^k - 1` (for a nonzero result),
/// not exactly `val / 2^k`. v3.13 returns `val` unchanged for `n == 0`; v6.13 never calls it
/// with 0.
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n == 0 {
        return val;
    }
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let mut val = val;
    let mut local_n = n;
    if local_n >= LOAD_AVG_PERIOD {
        val >>= local_n / LOAD_AVG_PERIOD;
        local_n %= LOAD_AVG_PERIOD;
    }
    ((val as u128 * RUNNABLE_AVG_YN_INV[local_n as usize] as u128) >> 32) as u64
}

/// v6.13 `__accumulate_pelt_segments()`: the end `d1` of the first period decayed over
/// `periods`, the full periods in between (`1024 x (y + ... + y^(p-1))`, from `LOAD_AVG_MAX`),
/// and the start `d3` of the current one.
fn accumulate_pelt_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    c1 + c2 + d3
}

/// v6.13 `struct sched_avg` of a task (`include/linux/sched.h`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    /// ns; advanced in whole 1024 ns units.
    pub last_update_time: u64,
    pub load_sum: u64,
    pub runnable_sum: u64,
    pub util_sum: u64,
    /// Position in the current 1024 µs period.
    pub period_contrib: u64,
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub util_avg: u64,
}

impl SchedAvg {
    /// `accumulate_sum()`: `delta` in 1024 ns units; `running` is the share of the time the
    /// task had the CPU, in 1024ths (the kernel's `running` is 0 or 1, i.e. 0 or 1024 here;
    /// a share stands for the turns of tasks time-sharing a CPU). Returns the periods crossed.
    fn accumulate_sum(&mut self, delta: u64, load: u64, runnable: u64, running: u64) -> u64 {
        let mut contrib = delta; // periods == 0: delta < 1024
        let delta = delta + self.period_contrib;
        let periods = delta / 1024;
        let mut rest = delta;
        if periods > 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            self.runnable_sum = decay_load(self.runnable_sum, periods);
            self.util_sum = decay_load(self.util_sum, periods);
            rest = delta % 1024;
            if load > 0 {
                contrib = accumulate_pelt_segments(periods, 1024 - self.period_contrib, rest);
            }
        }
        self.period_contrib = rest;
        if load > 0 {
            self.load_sum += load * contrib;
        }
        if runnable > 0 {
            self.runnable_sum += (runnable * contrib) << 10;
        }
        if running > 0 {
            self.util_sum += contrib * running;
        }
        periods
    }

    /// `___update_load_sum()`: true when a period boundary was crossed (the averages are then
    /// due for `___update_load_avg()`).
    fn update_load_sum(&mut self, now: u64, load: u64, runnable: u64, running: u64) -> bool {
        if now < self.last_update_time {
            self.last_update_time = now;
            return false;
        }
        let delta = (now - self.last_update_time) >> 10;
        if delta == 0 {
            return false;
        }
        self.last_update_time += delta << 10;
        // "running is a subset of runnable (weight)".
        let (runnable, running) = if load == 0 { (0, 0) } else { (runnable, running) };
        self.accumulate_sum(delta, load, runnable, running) > 0
    }

    /// `get_pelt_divider()`: the largest sum at the current position in the period.
    fn divider(&self) -> u64 {
        PELT_MIN_DIVIDER + self.period_contrib
    }

    /// `___update_load_avg()`.
    fn update_load_avg(&mut self, weight: u64) {
        let divider = self.divider();
        self.load_avg = weight * self.load_sum / divider;
        self.runnable_avg = self.runnable_sum / divider;
        self.util_avg = self.util_sum / divider;
    }

    /// `__update_load_avg_se()` for a nice-0 task up to `now` (ns): on a run queue (runnable)
    /// or not (blocked, `__update_load_avg_blocked_se()`), with `running` its share of the CPU
    /// in 1024ths.
    /// Returns whether the averages were recomputed (a period boundary was crossed).
    pub fn update(&mut self, now: u64, on_rq: bool, running: u64) -> bool {
        let r = u64::from(on_rq);
        if self.update_load_sum(now, r, r, running.min(1024) * r) {
            self.update_load_avg(NICE_0_WEIGHT);
            return true;
        }
        false
    }

    /// A task created at `now` (ns) and enqueued on a CPU whose run queue has `rq_util` and
    /// `rq_load` (`cfs_rq->avg.util_avg`, `load_avg`): `init_entity_runnable_average()`,
    /// `post_init_entity_util_avg()`, then `attach_entity_load_avg()` on that run queue
    /// (v6.13 `kernel/sched/fair.c`). Run queues share the clock, so their period starts at
    /// the multiples of 1024 x 1024 ns.
    pub fn new_task(now: u64, rq_util: u64, rq_load: u64) -> Self {
        // init_entity_runnable_average(): "Tasks are initialized with full load to be seen as
        // heavy tasks until they get a chance to stabilize to their real load level."
        let mut sa = SchedAvg { load_avg: NICE_0_WEIGHT, ..Default::default() };
        // post_init_entity_util_avg(): cap = (cpu_scale - cfs_rq->avg.util_avg) / 2.
        let cap = (CAPACITY as i64 - rq_util as i64) / 2;
        if cap > 0 {
            sa.util_avg =
                if rq_util != 0 { (rq_util * NICE_0_WEIGHT / (rq_load + 1)).min(cap as u64) } else { cap as u64 };
        }
        sa.runnable_avg = sa.util_avg;
        // attach_entity_load_avg(): the run queue's position in the period, sums from the
        // averages.
        sa.last_update_time = now & !1023;
        sa.period_contrib = (now >> 10) % 1024;
        let divider = sa.divider();
        sa.util_sum = sa.util_avg * divider;
        sa.runnable_sum = sa.runnable_avg * divider;
        sa.load_sum = sa.load_avg * divider;
        sa.load_sum = if NICE_0_WEIGHT < sa.load_sum { sa.load_sum / NICE_0_WEIGHT } else { 1 };
        sa
    }
}

/// v3.13 `__compute_runnable_contrib(n)`: `1024 x (y + ... + y^n)`, from the table for
/// n <= 32, by halving for more, `LOAD_AVG_MAX` from `LOAD_AVG_MAX_N` on.
fn compute_runnable_contrib(n: u64) -> u64 {
    if n <= LOAD_AVG_PERIOD {
        return RUNNABLE_AVG_YN_SUM[n as usize] as u64;
    }
    if n >= LOAD_AVG_MAX_N {
        return LOAD_AVG_MAX;
    }
    let mut contrib: u64 = 0;
    let mut n = n;
    loop {
        contrib /= 2; // y^LOAD_AVG_PERIOD = 1/2
        contrib += RUNNABLE_AVG_YN_SUM[LOAD_AVG_PERIOD as usize] as u64;
        n -= LOAD_AVG_PERIOD;
        if n <= LOAD_AVG_PERIOD {
            break;
        }
    }
    decay_load(contrib, n) + RUNNABLE_AVG_YN_SUM[n as usize] as u64
}

/// v3.13 `struct sched_avg` of a task: the runnable time and the elapsed time, both decayed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunnableAvg313 {
    /// ns.
    pub last_runnable_update: u64,
    pub runnable_avg_sum: u64,
    pub runnable_avg_period: u64,
    /// The task's load (`se->avg.load_avg_contrib`).
    pub load_avg_contrib: u64,
}

impl RunnableAvg313 {
    /// `__update_entity_runnable_avg()`: true when a period boundary was crossed.
    fn update_runnable_avg(&mut self, now: u64, runnable: bool) -> bool {
        if now < self.last_runnable_update {
            self.last_runnable_update = now;
            return false;
        }
        let mut delta = (now - self.last_runnable_update) >> 10;
        if delta == 0 {
            return false;
        }
        self.last_runnable_update = now;
        let mut decayed = false;
        let delta_w = self.runnable_avg_period % 1024;
        if delta + delta_w >= 1024 {
            decayed = true;
            // Complete the current period, then decay over it and the full ones after.
            let delta_w = 1024 - delta_w;
            if runnable {
                self.runnable_avg_sum += delta_w;
            }
            self.runnable_avg_period += delta_w;
            delta -= delta_w;
            let periods = delta / 1024;
            delta %= 1024;
            self.runnable_avg_sum = decay_load(self.runnable_avg_sum, periods + 1);
            self.runnable_avg_period = decay_load(self.runnable_avg_period, periods + 1);
            let contrib = compute_runnable_contrib(periods);
            if runnable {
                self.runnable_avg_sum += contrib;
            }
            self.runnable_avg_period += contrib;
        }
        if runnable {
            self.runnable_avg_sum += delta;
        }
        self.runnable_avg_period += delta;
        decayed
    }

    /// `__update_task_entity_contrib()`: "avoid overflowing a 32-bit type".
    fn update_contrib(&mut self) {
        self.load_avg_contrib = self.runnable_avg_sum * NICE_0_WEIGHT / (self.runnable_avg_period + 1);
    }

    /// `update_entity_load_avg()` up to `now` (ns): the contribution follows only when a period
    /// boundary was crossed. A sleeping task's time counts as not runnable when it is enqueued
    /// again (`enqueue_entity_load_avg()` with `se->on_rq` still 0).
    pub fn update(&mut self, now: u64, runnable: bool) {
        if self.update_runnable_avg(now, runnable) {
            self.update_contrib();
        }
    }

    /// `init_task_runnable_average()` (from `wake_up_new_task()`, on the chosen CPU): sum and
    /// period are the task's first slice in 1024 ns units (`sched_slice() >> 10`), so it
    /// starts at nearly its full weight.
    pub fn new_task(now: u64, slice_ns: u64) -> Self {
        let slice = slice_ns >> 10;
        let mut sa = RunnableAvg313 {
            last_runnable_update: now,
            runnable_avg_sum: slice,
            runnable_avg_period: slice,
            load_avg_contrib: 0,
        };
        sa.update_contrib();
        sa
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    /// One PELT period, 1024 x 1024 ns.
    const PERIOD_NS: u64 = 1024 * 1024;

    #[test]
    fn the_tables_are_the_series_they_claim() {
        for (n, &inv) in RUNNABLE_AVG_YN_INV.iter().enumerate() {
            let y_n = 0.5f64.powf(n as f64 / 32.0) * 4294967296.0;
            assert!((inv as f64 - y_n).abs() <= 8.0, "y^{n}: {inv} vs {y_n}");
        }
        let y = 0.5f64.powf(1.0 / 32.0);
        for (n, &s) in RUNNABLE_AVG_YN_SUM.iter().enumerate() {
            let exact: f64 = (1..=n).map(|k| 1024.0 * y.powi(k as i32)).sum();
            // The generator floors at every step (sched-pelt: "sum = sum*y + 1024*y" in integers).
            assert!(s as f64 <= exact && exact - (s as f64) < 12.0, "sum to {n}: {s} vs {exact}");
        }
        // 1024 / (1 - y) = 47788.6; the kernel's LOAD_AVG_MAX is the fixed point of its floored
        // "max = max*y + 1024" in integers.
        let exact_max = 1024.0 / (1.0 - y);
        assert!(LOAD_AVG_MAX as f64 <= exact_max && exact_max - (LOAD_AVG_MAX as f64) < 50.0);
        let mut max = 1024u64;
        for _ in 0..LOAD_AVG_MAX_N * 2 {
            let next = decay_load(max, 1) + 1024;
            if next == max {
                break;
            }
            max = next;
        }
        assert!(max.abs_diff(LOAD_AVG_MAX) <= 2, "{max}");
    }

    #[test]
    fn decay_load_is_the_kernels_integer_arithmetic() {
        // y^32 is 1/2 by a shift, then y^0 = 0xffffffff / 2^32 rounds down once more.
        assert_eq!(decay_load(1024, 32), 511);
        assert_eq!(decay_load(LOAD_AVG_MAX, 32), 23870);
        assert_eq!(decay_load(1 << 20, 64), (1 << 18) - 1);
        // One period: 1024 x 0xfa83b2da / 2^32 = 1002.03 -> 1002 (runnable_avg_yN_sum[1]).
        assert_eq!(decay_load(1024, 1), 1002);
        assert_eq!(decay_load(12345, 0), 12345);
        assert_eq!(decay_load(u64::MAX, 32 * 63 + 1), 0);
        // Within 1 of the real value for every n below 63 half-lives.
        for n in [3u64, 31, 33, 100, 500] {
            let exact = 1e9 * 0.5f64.powf(n as f64 / 32.0);
            assert!((decay_load(1_000_000_000, n) as f64 - exact).abs() < 2.0 + exact * 1e-9, "n={n}");
        }
    }

    #[test]
    fn v313_runnable_contrib_matches_the_series() {
        assert_eq!(compute_runnable_contrib(32), 23371);
        assert_eq!(compute_runnable_contrib(400), LOAD_AVG_MAX);
        let y = 0.5f64.powf(1.0 / 32.0);
        for n in [40u64, 64, 100, 200, 344] {
            let exact: f64 = (1..=n).map(|k| 1024.0 * y.powi(k as i32)).sum();
            let got = compute_runnable_contrib(n) as f64;
            assert!(got <= exact + 1.0 && exact - got < 40.0, "n={n}: {got} vs {exact}");
        }
    }

    /// 1024 x (y^a + ... + y^b), by hand.
    fn series(a: i32, b: i32) -> f64 {
        let y = 0.5f64.powf(1.0 / 32.0);
        (a..=b).map(|k| 1024.0 * y.powi(k)).sum()
    }

    /// A task runnable and running from an empty history (no initial load, to follow the
    /// bare series).
    fn run_6(ms: u64) -> SchedAvg {
        let mut sa = SchedAvg::default();
        sa.update(ms * MS, true, 1024);
        sa
    }

    #[test]
    fn v613_a_task_running_32_periods_reaches_half_of_the_maximum() {
        // 32 full periods: sum = 1024 x (1 + y + ... + y^31) = LOAD_AVG_MAX x (1 - 1/2).
        // The kernel weighs the period just completed y^1 (the current one, empty, is y^0), so
        // the sum is 1024 x (y + ... + y^32) = y x LOAD_AVG_MAX / 2, and load_avg, divided by
        // LOAD_AVG_MAX - 1024 = y x LOAD_AVG_MAX, is exactly half the weight.
        let mut sa = SchedAvg::default();
        sa.update(32 * PERIOD_NS, true, 1024);
        assert!((sa.load_sum as f64 - series(1, 32)).abs() < 30.0, "load_sum {} vs {}", sa.load_sum, series(1, 32));
        assert_eq!(sa.util_sum, sa.load_sum << 10);
        assert_eq!(sa.runnable_sum, sa.load_sum << 10);
        // load_avg = 1024 x load_sum / (LOAD_AVG_MAX - 1024 + 0): a little above 512.
        assert_eq!(sa.load_avg, NICE_0_WEIGHT * sa.load_sum / (LOAD_AVG_MAX - 1024));
        assert_eq!(sa.load_avg, 512);
        assert_eq!(sa.util_avg, sa.load_avg);
        // 32 ms of wall time: 31250 units, 30 full periods and 530 units into the current one:
        // 1024 x (1024 x (y + ... + y^30) + 530) / (LOAD_AVG_MAX - 1024 + 530).
        let ms32 = run_6(32);
        let expect = 1024.0 * (series(1, 30) + 530.0) / (LOAD_AVG_MAX - 1024 + 530) as f64;
        assert!((ms32.load_avg as f64 - expect).abs() < 2.0, "{} vs {expect}", ms32.load_avg);
        // A long run saturates.
        let long = run_6(1000);
        assert!((1000..=1024).contains(&long.load_avg), "{}", long.load_avg);
        assert!((1000..=1024).contains(&long.util_avg), "{}", long.util_avg);
    }

    #[test]
    fn v613_sleep_halves_the_load_every_32_periods() {
        let mut sa = run_6(1000);
        let t0 = sa.last_update_time;
        let (load, util) = (sa.load_avg, sa.util_avg);
        sa.update(t0 + 32 * PERIOD_NS, false, 0);
        // Decayed by y^32 = 1/2 (rounded down by the kernel's arithmetic).
        assert!(sa.load_avg.abs_diff(load / 2) <= 2, "{} vs {}", sa.load_avg, load / 2);
        assert!(sa.util_avg.abs_diff(util / 2) <= 2, "{} vs {}", sa.util_avg, util / 2);
        sa.update(t0 + 64 * PERIOD_NS, false, 0);
        assert!(sa.load_avg.abs_diff(load / 4) <= 2);
        // Blocked for long enough, nothing is left.
        sa.update(t0 + 63 * 32 * PERIOD_NS + 2 * PERIOD_NS, false, 0);
        assert_eq!((sa.load_avg, sa.util_avg, sa.runnable_avg), (0, 0, 0));
    }

    #[test]
    fn v613_time_sharing_halves_util_not_load() {
        let mut sa = SchedAvg::default();
        sa.update(1000 * MS, true, 512);
        assert!((1000..=1024).contains(&sa.load_avg));
        assert!((500..=512).contains(&sa.util_avg), "util {}", sa.util_avg);
        assert!((1000..=1024).contains(&sa.runnable_avg));
    }

    #[test]
    fn v613_updates_inside_one_unit_do_nothing() {
        let mut sa = SchedAvg::default();
        sa.update(1000, true, 1024);
        assert_eq!(sa, SchedAvg::default());
        // Split updates give the same sums as one update over the same time.
        let mut a = SchedAvg::default();
        let mut b = SchedAvg::default();
        for k in 1..=50u64 {
            a.update(k * 700_000, true, 1024);
        }
        b.update(50 * 700_000, true, 1024);
        assert!(a.load_sum.abs_diff(b.load_sum) <= 60, "{} vs {}", a.load_sum, b.load_sum);
        assert_eq!(a.last_update_time, b.last_update_time);
    }

    #[test]
    fn v613_new_task_full_load_and_half_the_spare_capacity() {
        // An idle CPU: util = (1024 - 0) / 2.
        let sa = SchedAvg::new_task(0, 0, 0);
        assert_eq!((sa.load_avg, sa.util_avg, sa.runnable_avg), (1024, 512, 512));
        // A CPU with util 400 and load 800: min(400 x 1024 / 801, (1024 - 400) / 2 = 312).
        let sa = SchedAvg::new_task(5 * MS, 400, 800);
        assert_eq!(sa.util_avg, 312);
        let sa = SchedAvg::new_task(5 * MS, 100, 1000);
        assert_eq!(sa.util_avg, 100 * 1024 / 1001);
        // A full CPU leaves the new task no utilisation.
        assert_eq!(SchedAvg::new_task(0, 1024, 1024).util_avg, 0);
        // Attached with consistent sums: the next period keeps the averages where they were.
        let mut sa = SchedAvg::new_task(3 * MS, 0, 0);
        let start = sa.last_update_time;
        assert_eq!(sa.load_sum, (LOAD_AVG_MAX - 1024 + sa.period_contrib) * 1024 / 1024);
        sa.update(start + PERIOD_NS, true, 1024);
        assert!(sa.load_avg >= 1000, "{}", sa.load_avg);
        assert!(sa.util_avg > 512, "{}", sa.util_avg);
    }

    #[test]
    fn v313_runnable_ratio_and_new_task() {
        // init_task_runnable_average(): a 24 ms slice on an idle CPU -> 23437 / 23438 x 1024.
        let sa = RunnableAvg313::new_task(0, 24 * MS);
        assert_eq!(sa.runnable_avg_sum, 23437);
        assert_eq!(sa.load_avg_contrib, 23437 * 1024 / 23438);
        assert_eq!(sa.load_avg_contrib, 1023);
        // Sharing a CPU with one task: a 12 ms slice, still 1023.
        assert_eq!(RunnableAvg313::new_task(0, 12 * MS).load_avg_contrib, 1023);
        // Runnable half the time over a long stretch: about half the weight.
        let mut sa = RunnableAvg313::new_task(0, 24 * MS);
        for k in 0..200u64 {
            sa.update((2 * k + 1) * 4 * MS, true);
            sa.update((2 * k + 2) * 4 * MS, false);
        }
        assert!((450..=560).contains(&sa.load_avg_contrib), "{}", sa.load_avg_contrib);
        // Asleep 32 periods after a long run: the ratio halves (sum decays, period grows).
        let mut sa = RunnableAvg313::default();
        sa.update(1000 * PERIOD_NS, true);
        assert!(sa.load_avg_contrib >= 1020);
        sa.update(1032 * PERIOD_NS, false);
        assert!((505..=520).contains(&sa.load_avg_contrib), "{}", sa.load_avg_contrib);
        // 32 periods runnable from nothing: sum = period, the ratio is full from the start.
        // (v3.13 weighs the completed periods y^1 .. y^32 too.)
        let mut sa = RunnableAvg313::default();
        sa.update(32 * PERIOD_NS, true);
        assert!((sa.runnable_avg_sum as f64 - series(1, 32)).abs() < 30.0, "{}", sa.runnable_avg_sum);
        assert_eq!(sa.runnable_avg_sum, sa.runnable_avg_period);
    }
}
