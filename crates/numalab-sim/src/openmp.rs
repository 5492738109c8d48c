//! The OpenMP runtime's part in where threads run (docs/scheduler.md §5).
//!
//! libgomp starts a team at the first parallel region: the primary thread creates the workers
//! one by one (`libgomp/team.c: gomp_team_start()`, a `pthread_create()` per worker: stack
//! mapping, `clone()`, and the new thread's first run), so worker `i` starts `i` creations
//! after the region opens and the primary thread itself goes on after the last.
//!
//! Threads that arrive at a barrier spin, then sleep in the kernel, and are woken by the last
//! to arrive (`spin_s`; the wake-up placement is `sched/wake.rs`).

use crate::input::WaitPolicy;

/// Cost of creating one worker thread, paid by the primary thread [est.: `pthread_create()`
/// with an 8 MiB stack mapping and `clone()` measure 10-30 us on current Linux; 20 us taken].
pub const THREAD_CREATE_S: f64 = 20e-6;

/// When each of a team's `threads` threads starts its first region (index 0 = primary).
pub fn start_times(threads: usize) -> Vec<f64> {
    let last = threads.saturating_sub(1) as f64 * THREAD_CREATE_S;
    (0..threads).map(|i| if i == 0 { last } else { i as f64 * THREAD_CREATE_S }).collect()
}

/// How long a thread waiting at a barrier spins before it sleeps on a futex
/// (`libgomp/config/linux/wait.h: do_spin()` counts down `gomp_spin_count_var`, or
/// `gomp_throttled_spin_count_var` when libgomp runs more threads than CPUs), from
/// `libgomp/env.c: initialize_env()` without `GOMP_SPINCOUNT`: unset 300,000 spins (throttled
/// 100), `active` 30,000,000,000 (throttled 1,000), `passive` 0; each spin taking
/// `iteration_s` (a measured cost of one iteration, docs/scheduler.md §10.59), or `None` at
/// libgomp's own "rough estimation of 100000 spins per msec", so the default spins about 3 ms.
pub fn spin_s(policy: WaitPolicy, threads: usize, cpus: usize, iteration_s: Option<f64>) -> f64 {
    let throttled = threads > cpus;
    let spins = match (policy, throttled) {
        (WaitPolicy::Unset, false) => 300_000.0,
        (WaitPolicy::Unset, true) => 100.0,
        (WaitPolicy::Active, false) => 30e9,
        (WaitPolicy::Active, true) => 1_000.0,
        (WaitPolicy::Passive, _) => 0.0,
    };
    match iteration_s {
        Some(s) => spins * s,
        // Divided, not multiplied by 1e-8: the estimate's figures stay bit for bit as they were.
        None => spins / SPINS_PER_S,
    }
}

/// libgomp's estimate (`env.c`): 100,000 spins per millisecond.
pub const SPINS_PER_S: f64 = 1e8;

impl crate::input::SimConfig {
    /// `spin_s` for a team of `threads` on `cpus` under this run's wait policy and, on a guest,
    /// its host's measured spin iteration (`vcpu_host.spin_iteration_s`).
    pub fn spin_s(&self, threads: usize, cpus: usize) -> f64 {
        let iteration_s = self.vcpu_host.as_ref().and_then(|h| h.spin_iteration_s);
        spin_s(self.omp_wait_policy, threads, cpus, iteration_s)
    }
}

/// From the futex wake to the woken thread running again [est.: futex wake-up and context
/// switch, a few microseconds].
pub const WAKE_LATENCY_S: f64 = 5e-6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_spin_is_about_3_ms_and_oversubscription_throttles_it() {
        assert!((spin_s(WaitPolicy::Unset, 4, 8, None) - 3e-3).abs() < 1e-12);
        assert!((spin_s(WaitPolicy::Unset, 16, 8, None) - 1e-6).abs() < 1e-12);
        assert_eq!(spin_s(WaitPolicy::Passive, 4, 8, None), 0.0);
        assert!(spin_s(WaitPolicy::Active, 4, 8, None) > 100.0);
    }

    #[test]
    fn a_measured_iteration_times_libgomps_count() {
        // docs/scheduler.md §10.57: one PAUSE under TCG, 140 ns.
        let it = Some(140e-9);
        assert!((spin_s(WaitPolicy::Unset, 8, 8, it) - 42e-3).abs() < 1e-12);
        assert!((spin_s(WaitPolicy::Unset, 16, 8, it) - 14e-6).abs() < 1e-15);
        assert!((spin_s(WaitPolicy::Active, 16, 8, it) - 140e-6).abs() < 1e-15);
        assert_eq!(spin_s(WaitPolicy::Passive, 8, 8, it), 0.0);
        assert_eq!(spin_s(WaitPolicy::Passive, 16, 8, it), 0.0);
    }

    #[test]
    fn the_primary_thread_starts_after_creating_every_worker() {
        let t = start_times(4);
        assert_eq!(t[1], THREAD_CREATE_S);
        assert_eq!(t[3], 3.0 * THREAD_CREATE_S);
        assert_eq!(t[0], t[3]);
        assert_eq!(start_times(1), vec![0.0]);
    }
}
