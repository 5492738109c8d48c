//! The host stopping a vCPU inside a newly idle balance (docs/scheduler.md §10.27). The guest
//! times each level's balance with its own clock (v6.1 `kernel/sched/fair.c: newidle_balance()`:
//! "t1 = sched_clock_cpu(this_cpu); domain_cost = t1 - t0; update_newidle_cost(sd,
//! domain_cost)"), and under TCG that clock is host time: if the host switches the vCPU's QEMU
//! thread out inside the balance, the wait until it runs again is part of the cost, and the
//! decaying maximum (`newidle.rs`) keeps it for seconds.
//!
//! The balance runs with the guest's interrupts off (`__schedule()`'s `local_irq_disable()`
//! holds through `pick_next_task_fair()` → `newidle_balance()`), so QEMU handles no guest timer
//! inside it and its thread does not block on the BQL there: only the host's involuntary switches
//! stop it, the host's tick finding the thread past its deadline or another thread's wake-up
//! preempting it (Linux 6.18 `kernel/sched/fair.c: update_curr()`, `check_preempt_wakeup_fair()`;
//! the host model's `vhost.rs: ThreadStat::involuntary`). Neither is tied to where the guest's
//! code is, so a window of `t` seconds of the thread's running holds one with probability
//! `1 - exp(-rate t)`, `rate` the thread's involuntary switches per second of host time it has
//! received so far in the run. Stopped, it waits as long as one of the thread's waits after its
//! involuntary switches so far, drawn uniformly (`vhost.rs: HostRun::preempted_waits_s`, the
//! part of `run_delay` a preempted thread spends queued, `kernel/sched/stats.h:
//! sched_info_arrive()`): the model's newly idle balance is an instant at the end of a host
//! round (`vcpu_newidle.rs`), so the actual wait is not known there. One wait, not their mean:
//! the kernel charges each balance its own time and keeps the largest (`update_newidle_cost()`),
//! and the host's waits run from microseconds to milliseconds (docs/scheduler.md §10.28, `vm-4`
//! on the measured host: median 0.01-0.03 ms, mean 0.23-0.35 ms, longest 3-7 ms), so the mean
//! would cap every stopped balance's cost near the mean.
use crate::rng::Rng;

/// The draws' stream of the run's seed (`crate::rng::Rng`).
const STREAM: u64 = 0x686f_7374_7374_6f70;

#[derive(Clone, Debug)]
pub(super) struct HostStops {
    rng: Rng,
    /// Per vCPU: the host's involuntary switches of its thread per second run, and its waits
    /// after them, as of the last host round.
    rate_per_s: Vec<f64>,
    waits_s: Vec<Vec<f64>>,
}

impl HostStops {
    pub(super) fn new(seed: u64, ncpu: usize) -> Self {
        HostStops { rng: Rng::new(seed, STREAM), rate_per_s: vec![0.0; ncpu], waits_s: vec![Vec::new(); ncpu] }
    }

    /// The host's counts for `cpu`'s thread so far: host time run, involuntary switches, and
    /// the waits that followed them, in order (`vhost.rs: ThreadStat`,
    /// `HostRun::preempted_waits_s`; only those not seen before are copied).
    pub(super) fn observe(&mut self, cpu: usize, ran_s: f64, involuntary: u64, waits_s: &[f64]) {
        self.rate_per_s[cpu] = if ran_s > 0.0 { involuntary as f64 / ran_s } else { 0.0 };
        let seen = &mut self.waits_s[cpu];
        if waits_s.len() > seen.len() {
            seen.extend_from_slice(&waits_s[seen.len()..]);
        }
    }

    /// A balance that runs `time_s` on `cpu`: its time on the guest's clock, and whether the
    /// host stopped the thread inside it. No time, no window: no draw.
    pub(super) fn cost_s(&mut self, cpu: usize, time_s: f64) -> (f64, bool) {
        let rate = self.rate_per_s[cpu];
        if time_s <= 0.0 || rate <= 0.0 {
            return (time_s, false);
        }
        let p = 1.0 - (-rate * time_s).exp();
        if self.rng.unit() < p {
            let waits = &self.waits_s[cpu];
            // No wait over yet (the only switch's wait still runs): nothing known to add.
            let wait = if waits.is_empty() { 0.0 } else { waits[self.rng.below(waits.len() as u64) as usize] };
            (time_s + wait, true)
        } else {
            (time_s, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_never_switched_out_is_never_stopped_inside_a_balance() {
        let mut h = HostStops::new(1, 2);
        // Run 1 s with no involuntary switch (only halts): every balance takes its time.
        h.observe(0, 1.0, 0, &[]);
        assert!((0..10_000).all(|_| h.cost_s(0, 16e-6) == (16e-6, false)));
        // Never run yet: no rate either.
        assert!((0..10_000).all(|_| h.cost_s(1, 16e-6) == (16e-6, false)));
    }

    #[test]
    fn the_share_stopped_follows_the_switch_rate_and_a_stop_costs_one_of_the_waits() {
        let mut h = HostStops::new(7, 1);
        // 250 involuntary switches a second of running (a 4 ms host tick, each past the
        // deadline), 200 of whose waits are over: 150 of 0.02 ms, 50 of 4 ms (mean 1.015 ms).
        let waits: Vec<f64> = (0..200).map(|i| if i % 4 == 3 { 4e-3 } else { 0.02e-3 }).collect();
        h.observe(0, 1.0, 250, &waits);
        let n = 200_000;
        let costs: Vec<(f64, bool)> = (0..n).map(|_| h.cost_s(0, 16e-6)).collect();
        let stopped = costs.iter().filter(|c| c.1).count() as f64 / n as f64;
        // 1 - exp(-250 x 16e-6) = 0.399 %.
        let p = 1.0 - (-250.0f64 * 16e-6).exp();
        assert!((stopped - p).abs() < 0.0005, "{stopped} against {p}");
        // A stop costs one wait, never their mean: a quarter of them 4 ms, the rest 0.02 ms.
        let long = costs.iter().filter(|&&(c, s)| s && (c - 4.016e-3).abs() < 1e-12).count() as f64;
        let short = costs.iter().filter(|&&(c, s)| s && (c - 0.036e-3).abs() < 1e-12).count() as f64;
        let stops = costs.iter().filter(|c| c.1).count() as f64;
        assert_eq!(long + short, stops);
        assert!((long / stops - 0.25).abs() < 0.03, "{long} of {stops}");
        assert!(costs.iter().all(|&(c, s)| s || c == 16e-6));
        // A longer window is stopped more often (6 us against 16 us).
        let short = (0..n).filter(|_| h.cost_s(0, 6e-6).1).count() as f64 / n as f64;
        assert!(short < stopped * 0.6, "{short} against {stopped}");
    }

    #[test]
    fn the_same_seed_stops_the_same_balances() {
        let draws = |seed| {
            let mut h = HostStops::new(seed, 1);
            let waits: Vec<f64> = (1..=100).map(|i| f64::from(i) * 1e-5).collect();
            h.observe(0, 1.0, 2_000, &waits);
            (0..1000).map(|_| h.cost_s(0, 16e-6)).collect::<Vec<_>>()
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
    }
}
