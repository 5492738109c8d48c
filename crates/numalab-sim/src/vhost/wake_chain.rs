//! The guest's wake-up chain as the host delays it (issue 22, docs/scheduler.md §10.48): per
//! wake-up of a team thread asleep on its futex, the time from the waker's `try_to_wake_up()`
//! (kernel/sched/core.c) to the woken thread running, which on a vCPU the host does not run is
//! the wait for the host to run that vCPU's thread (`kernel/sched/core.c:
//! ttwu_queue_wakelist()`: the wake-up is left to the target, which handles it only when it runs).
//! `bench/vm_idle_spells.py` measures the guest's as `sched_waking` to the switch-in.
//!
//! Each wake-up that waited for its vCPU is also put under what gave that vCPU a host core
//! (`Freed`, docs/scheduler.md §10.52): the first plan after the wake-up, or, later, what made a
//! core free: a running vCPU that halted, one that blocked on QEMU's BQL, the main loop's run
//! ending, a running vCPU preempted.
//!
//! Kept only under `--explain-sched` on an `mttcg` host: one number per wake-up.

use serde::Serialize;

/// What gave a woken thread's vCPU a host core, for a wake-up that waited for one: the first
/// host plan after the wake-up (the engine's round: a free core, or the wake-up's preemption),
/// else what freed a core at the plan that ran it, the first that applies in this order: a vCPU
/// that ran before it halted (its thread slept: its barrier work was done), QEMU's main loop
/// left its core (its run ended; the running vCPUs it kicked retake the BQL then), a running
/// vCPU blocked on the BQL (a lock wait), one was preempted (the host's tick or a wake-up),
/// none of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freed {
    FirstPlan,
    RunnerHalted,
    MainLoop,
    Bql,
    Preempted,
    Other,
}

/// The intervals so far, and the wake-ups still waiting for their vCPU to run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WakeChain {
    /// Per vCPU: (wake-up time, onto a halted vCPU, shortest interval, a host plan passed it
    /// over) of each wake-up waiting for the host to run the vCPU.
    pending: Vec<Vec<(f64, bool, f64, bool)>>,
    /// (wake-up time, interval s, onto a halted vCPU, what gave its vCPU a core if it waited)
    /// per wake-up completed, in completion order.
    done: Vec<(f64, f64, bool, Option<Freed>)>,
}

/// Over 2 ms and over 4 ms: the bounds `bench/vm_idle_spells.py` counts the guest's tail by.
const TAIL_S: [f64; 2] = [2e-3, 4e-3];

/// A set of intervals' order statistics (nearest rank below, as `bench/vm_idle_spells.py`
/// takes the guest's: element `floor(q * n)` of the sorted list) and tail.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct WakeChainDist {
    pub n: u64,
    pub p10_s: f64,
    pub median_s: f64,
    pub p90_s: f64,
    pub p99_s: f64,
    pub max_s: f64,
    pub mean_s: f64,
    pub over_2ms: u64,
    pub over_4ms: u64,
}

/// The wake-ups onto a halted vCPU by what gave it a core (`Freed`); those onto a vCPU the
/// host ran at the wake-up are in none.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct WakeChainFreed {
    pub first_plan: WakeChainDist,
    pub runner_halted: WakeChainDist,
    pub main_loop: WakeChainDist,
    pub bql: WakeChainDist,
    pub preempted: WakeChainDist,
    pub other: WakeChainDist,
}

/// `WakeChain` as output: all sleepers' wake-ups, those onto a halted vCPU, those split by what
/// gave their vCPU a core, and those whose vCPU was never run again before the run's end (not
/// in the distributions). `by_order`: the releases (wake-ups at one time: one barrier's
/// `futex_wake()`) of the most common size, `release_size`, their number `releases`, and per
/// place in the order the wake-ups ran, first to last, that place's distribution, as
/// `bench/vm_idle_spells.py --parse` takes the guest's.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct WakeChainOut {
    pub all: WakeChainDist,
    pub onto_halted: WakeChainDist,
    pub onto_halted_by_freed: WakeChainFreed,
    pub release_size: u64,
    pub releases: u64,
    pub by_order: Vec<WakeChainDist>,
    pub never_run: u64,
}

impl WakeChain {
    pub fn new(vcpus: usize) -> Self {
        WakeChain { pending: vec![Vec::new(); vcpus], done: Vec::new() }
    }

    /// A sleeping thread was woken onto vCPU `c` at `at_s`; the vCPU `holds` a host core now or
    /// not, and was `halted` (not run since it halted). `min_s`: the wake-up's own latency, the
    /// interval when the vCPU runs.
    pub fn woken(&mut self, c: usize, at_s: f64, holds: bool, halted: bool, min_s: f64) {
        if holds {
            self.done.push((at_s, min_s, halted, None));
        } else {
            self.pending[c].push((at_s, halted, min_s, false));
        }
    }

    /// A host plan left vCPU `c` without a core: its waiting wake-ups were passed over.
    pub fn passed_over(&mut self, c: usize) {
        for p in &mut self.pending[c] {
            p.3 = true;
        }
    }

    /// The host gives vCPU `c` a core from `now_s`, `freed` what made one free at this plan:
    /// its waiting wake-ups complete (those no plan passed over, at their first plan).
    pub fn runs(&mut self, c: usize, now_s: f64, freed: Freed) {
        for (at, halted, min_s, passed) in self.pending[c].drain(..) {
            let by = if passed { freed } else { Freed::FirstPlan };
            self.done.push((at, (now_s - at).max(min_s), halted, Some(by)));
        }
    }

    pub fn out(&self) -> WakeChainOut {
        let all: Vec<f64> = self.done.iter().map(|&(_, d, _, _)| d).collect();
        let halted = |f: Option<Freed>| -> WakeChainDist {
            dist(
                self.done
                    .iter()
                    .filter(|&&(_, _, h, by)| h && (f.is_none() || by == f))
                    .map(|&(_, d, _, _)| d)
                    .collect(),
            )
        };
        let (release_size, order) = self.by_order();
        WakeChainOut {
            all: dist(all),
            onto_halted: halted(None),
            onto_halted_by_freed: WakeChainFreed {
                first_plan: halted(Some(Freed::FirstPlan)),
                runner_halted: halted(Some(Freed::RunnerHalted)),
                main_loop: halted(Some(Freed::MainLoop)),
                bql: halted(Some(Freed::Bql)),
                preempted: halted(Some(Freed::Preempted)),
                other: halted(Some(Freed::Other)),
            },
            release_size: release_size as u64,
            releases: order.first().map_or(0, |o| o.len() as u64),
            by_order: order.into_iter().map(dist).collect(),
            never_run: self.pending.iter().map(|p| p.len() as u64).sum(),
        }
    }

    /// The completed wake-ups grouped by their time (a release wakes its sleepers at one
    /// instant), those of the most common size (the larger on a tie), and per place in the order
    /// they ran their intervals.
    fn by_order(&self) -> (usize, Vec<Vec<f64>>) {
        let mut groups: std::collections::BTreeMap<u64, Vec<f64>> = std::collections::BTreeMap::new();
        for &(at, d, _, _) in &self.done {
            groups.entry(at.to_bits()).or_default().push(d);
        }
        let mut sizes: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
        for g in groups.values() {
            *sizes.entry(g.len()).or_default() += 1;
        }
        let Some((&size, _)) = sizes.iter().max_by_key(|&(&k, &n)| (n, k)) else { return (0, Vec::new()) };
        let mut order = vec![Vec::new(); size];
        for g in groups.values_mut().filter(|g| g.len() == size) {
            g.sort_by(f64::total_cmp);
            for (k, &d) in g.iter().enumerate() {
                order[k].push(d);
            }
        }
        (size, order)
    }
}

fn dist(mut v: Vec<f64>) -> WakeChainDist {
    if v.is_empty() {
        return WakeChainDist::default();
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let at = |q: f64| v[((q * n as f64) as usize).min(n - 1)];
    WakeChainDist {
        n: n as u64,
        p10_s: at(0.1),
        median_s: v[n / 2],
        p90_s: at(0.9),
        p99_s: at(0.99),
        max_s: v[n - 1],
        mean_s: v.iter().sum::<f64>() / n as f64,
        over_2ms: v.iter().filter(|&&d| d > TAIL_S[0]).count() as u64,
        over_4ms: v.iter().filter(|&&d| d > TAIL_S[1]).count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_onto_a_vcpu_not_run_lasts_until_the_host_runs_it() {
        let mut w = WakeChain::new(2);
        // Onto running vCPU 0: only the wake-up's own latency.
        w.woken(0, 1e-3, true, false, 5e-6);
        // Onto halted vCPU 1 at 1 ms and 3 ms: both complete when the host runs it at 6.5 ms.
        w.woken(1, 1e-3, false, true, 5e-6);
        w.woken(1, 3e-3, false, true, 5e-6);
        w.runs(0, 6.5e-3, Freed::Other);
        assert_eq!(w.out().all.n, 1, "running vCPU 0 again completes nothing of vCPU 1's");
        w.runs(1, 6.5e-3, Freed::Other);
        // Onto vCPU 1 again, preempted (not halted), never run again before the end.
        w.woken(1, 7e-3, false, false, 5e-6);
        let o = w.out();
        assert_eq!((o.all.n, o.onto_halted.n, o.never_run), (3, 2, 1));
        assert!((o.onto_halted.max_s - 5.5e-3).abs() < 1e-12 && (o.onto_halted.median_s - 5.5e-3).abs() < 1e-12);
        assert_eq!((o.all.over_2ms, o.all.over_4ms), (2, 1));
        assert_eq!((o.onto_halted.over_2ms, o.onto_halted.over_4ms), (2, 1));
        assert!((o.all.median_s - 3.5e-3).abs() < 1e-12 && o.all.p90_s == o.all.max_s, "{o:?}");
    }

    #[test]
    fn a_vcpu_run_before_the_wake_up_time_gives_the_wake_ups_own_latency() {
        // The engine may wake a thread at a time past the host's next plan: never negative.
        let mut w = WakeChain::new(1);
        w.woken(0, 3e-3, false, true, 5e-6);
        w.runs(0, 2e-3, Freed::Other);
        assert_eq!(w.out().all.max_s, 5e-6);
    }

    #[test]
    fn quantiles_are_ordered_and_counts_bounded() {
        let mut w = WakeChain::new(1);
        for k in 0..1000u32 {
            let at = f64::from(k) * 1e-2;
            w.woken(0, at, false, k % 2 == 0, 5e-6);
            // A deterministic spread of host delays, up to 9.99 ms.
            w.runs(0, at + f64::from((k * 7919) % 1000) * 1e-5, Freed::Other);
        }
        for d in [w.out().all, w.out().onto_halted] {
            assert!(d.median_s <= d.p90_s && d.p90_s <= d.p99_s && d.p99_s <= d.max_s, "{d:?}");
            assert!(d.over_4ms <= d.over_2ms && d.over_2ms <= d.n, "{d:?}");
        }
        assert_eq!(w.out().all.n, 1000);
        assert_eq!(w.out().onto_halted.n, 500);
    }

    #[test]
    fn a_wake_up_run_at_the_first_plan_is_told_apart_from_one_a_freed_core_ended() {
        // vCPU 0 woken at 1 ms, run at the next plan (1.06 ms): the first plan whatever freed a
        // core. vCPU 1 woken at 1 ms, passed over at 1.06, run at 2.1 when a runner halted.
        // vCPU 1 again, woken at 3 ms onto a running vCPU: in no class.
        let mut w = WakeChain::new(2);
        w.woken(0, 1e-3, false, true, 5e-6);
        w.woken(1, 1e-3, false, true, 5e-6);
        w.runs(0, 1.06e-3, Freed::Preempted);
        w.passed_over(1);
        w.runs(1, 2.1e-3, Freed::RunnerHalted);
        w.woken(1, 3e-3, true, false, 5e-6);
        let by = w.out().onto_halted_by_freed;
        assert_eq!((by.first_plan.n, by.runner_halted.n, by.preempted.n, by.bql.n), (1, 1, 0, 0), "{by:?}");
        assert!((by.first_plan.max_s - 0.06e-3).abs() < 1e-12 && (by.runner_halted.max_s - 1.1e-3).abs() < 1e-12);
        // The classes split the wake-ups onto a halted vCPU, no more.
        let o = w.out();
        assert_eq!((o.all.n, o.onto_halted.n), (3, 2));
    }

    #[test]
    fn a_releases_wake_ups_are_ranked_by_the_order_they_ran() {
        // Two releases of three wake-ups (at 1 and 4 ms) and one of one (7 ms): the releases of
        // three are the common size; the first to run waited 0.05 and 0.06 ms, the last 1.1 and
        // 1.2 ms.
        let mut w = WakeChain::new(3);
        for (at, waits) in [(1e-3, [0.05e-3, 1.1e-3, 0.9e-3]), (4e-3, [1.2e-3, 0.06e-3, 1e-3])] {
            for c in 0..3 {
                w.woken(c, at, false, true, 5e-6);
            }
            for (c, d) in waits.iter().enumerate() {
                w.runs(c, at + d, Freed::Other);
            }
        }
        w.woken(0, 7e-3, true, false, 5e-6);
        let o = w.out();
        assert_eq!((o.release_size, o.releases, o.by_order.len()), (3, 2, 3));
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(o.by_order[0].max_s, 0.06e-3) && close(o.by_order[0].median_s, 0.06e-3), "{o:?}");
        assert!(close(o.by_order[2].max_s, 1.2e-3) && close(o.by_order[1].max_s, 1e-3), "{o:?}");
    }
}
