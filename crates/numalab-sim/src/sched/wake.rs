//! Wake-up placement (`kernel/sched/fair.c: select_task_rq_fair()`, v3.13 and v6.13): a thread
//! woken by thread `waker` (running on the waker's CPU) after sleeping on `prev`.
//!
//! - `record_wakee()` counts the waker's `wakee_flips` (a different wakee than the last one: one
//!   flip), decayed every second (v3.13: reset to 0; v6.13: halved).
//! - `wake_wide()` (v3.12+, commit 62470419e993; v4.3+ symmetric form, 63b0e9edceec) detects a
//!   1:N waker such as a barrier's last thread: with it, the waker's CPU is not considered.
//! - The *lowest* domain of the waker's CPU with `SD_WAKE_AFFINE` spanning `prev` (the kernel's
//!   `for_each_domain()` walks up and stops at the first) gives `wake_affine()` its
//!   `imbalance_pct`: v6.13 `wake_affine_idle()` then `wake_affine_weight()`, v3.13 `wake_affine()`
//!   (which itself returns 0 when `wake_wide()`).
//! - `select_idle_sibling()` then looks for an idle CPU around the target in its LLC (the node).

use super::{Sched, SchedEvent};
use crate::profile::{IdleScan, IdleSibling, WakeAffine, WakeWide, WakeeDecay};

/// `record_wakee()`'s decay period: `HZ` jiffies, one second.
const WAKEE_FLIP_DECAY_S: f64 = 1.0;

/// Per thread, `task_struct`'s `wakee_flips`, `last_wakee` and `wakee_flip_decay_ts`.
#[derive(Clone, Debug, Default)]
pub struct Wakee {
    flips: u64,
    last: Option<usize>,
    decay_s: f64,
}

impl Sched {
    /// `record_wakee(p)` with `current` = `waker` (v3.13 `task_waking_fair()`, v6.13
    /// `select_task_rq_fair()`; both before the CPU is chosen).
    fn record_wakee(&mut self, now_s: f64, waker: usize, wakee: usize) {
        let decay = self.rules.wakee_decay;
        let w = &mut self.wakee[waker];
        if now_s > w.decay_s + WAKEE_FLIP_DECAY_S {
            w.flips = match decay {
                WakeeDecay::Untracked | WakeeDecay::Reset => 0,
                WakeeDecay::Halve => w.flips >> 1,
            };
            w.decay_s = now_s;
        }
        if w.last != Some(wakee) {
            w.last = Some(wakee);
            w.flips += 1;
        }
    }

    /// `wake_wide(p)`: `factor` is `sd_llc_size` of the waker's CPU (the PUs of its node here).
    fn wake_wide(&self, waker: usize, wakee: usize) -> bool {
        let factor = {
            let node = self.pu_node[self.cpu[waker]];
            self.pu_node.iter().filter(|&&n| n == node).count() as u64
        };
        let (current, p) = (self.wakee[waker].flips, self.wakee[wakee].flips);
        match self.rules.wake_wide {
            // v3.13: "if (p->wakee_flips > factor) if (current->wakee_flips > factor *
            // p->wakee_flips) return 1;"
            WakeWide::Absent => false,
            WakeWide::WakeeAboveFactor => p > factor && current > factor * p,
            // v6.13: master/slave = the larger/smaller of the two; "if (slave < factor ||
            // master < slave * factor) return 0;"
            WakeWide::MasterSlave => {
                let (master, slave) = (current.max(p), current.min(p));
                !(slave < factor || master < slave * factor)
            }
        }
    }

    /// Place thread `tid`, woken at `now_s` by thread `waker`; `runnable` says which threads
    /// are runnable now. Returns the chosen CPU (the thread is placed there).
    pub fn wake(&mut self, now_s: f64, tid: usize, waker: usize, runnable: &[bool]) -> usize {
        self.update_loads(now_s);
        self.record_wakee(now_s, waker, tid);
        let wide = self.wake_wide(waker, tid);
        let waker_tid = waker;
        let waker = self.cpu[waker_tid];
        let prev = self.cpu[tid];
        // The woken task itself is not yet on any runqueue.
        let mut nr = self.nr_running(runnable, now_s);
        if runnable[tid] {
            nr[prev] -= 1;
        }
        let idle = |c: usize| nr[c] == 0;
        let allowed = &self.allowed[tid];
        // v6.13: want_affine = !wake_wide(p) && the waker's CPU is allowed; v3.13 asks only the
        // latter here and wake_wide() inside wake_affine().
        let wide_refuses = match self.rules.wake_affine {
            WakeAffine::LoadBalanced => false,
            WakeAffine::IdleThenWeight => wide,
        };
        let want_affine = allowed.contains(&waker) && !wide_refuses;
        // for_each_domain(cpu, tmp): the lowest SD_WAKE_AFFINE domain spanning prev.
        let affine = (0..self.domains.len())
            .find(|&l| self.domains[l].wake_affine && self.domains[l].span_of[waker].contains(&prev))
            .filter(|_| want_affine);
        let mut why = Vec::new();
        if wide {
            why.push(format!(
                "wake_wide (waker thread {} wakee_flips {}, woken {})",
                waker_tid + 1,
                self.wakee[waker_tid].flips,
                self.wakee[tid].flips
            ));
        }
        let mut target = prev;
        if let Some(l) = affine.filter(|_| waker != prev) {
            let d = &self.domains[l];
            let share_cache = self.pu_node[waker] == self.pu_node[prev];
            // v6.13 wake_affine_idle(): an idle waker sharing the cache keeps prev if idle;
            // an idle prev wins; else wake_affine_weight().
            let by_idle = match self.rules.wake_affine {
                WakeAffine::IdleThenWeight if idle(waker) && share_cache => Some(if idle(prev) { prev } else { waker }),
                WakeAffine::IdleThenWeight if idle(prev) => Some(prev),
                WakeAffine::IdleThenWeight | WakeAffine::LoadBalanced => None,
            };
            let bias = 100 + (d.imbalance_pct as i64 - 100) / 2;
            target = by_idle.unwrap_or_else(|| {
                // The loads are PELT's (load.rs), as the profile's `load.wake_affine` says; the
                // woken task is on no run queue (`on_rq` 0) while this runs.
                let mut queued = runnable.to_vec();
                queued[tid] = false;
                let this_load = self.cpu_load(waker, &queued, self.rules.load.wake_affine) as i64;
                let prev_load = self.cpu_load(prev, &queued, self.rules.load.wake_affine) as i64;
                let pick = match self.rules.wake_affine {
                    // v3.13 kernel/sched/fair.c: wake_affine(): with this_load > 0,
                    // this_eff_load = 100 x (this_load + weight) and prev_eff_load =
                    // (100 + (imbalance_pct - 100) / 2) x load, "balanced" when <=; balanced
                    // too when this_load is 0; else affine only if "this_load <= load &&
                    // this_load + target_load(prev_cpu, idx) <= tl_per_task" (the waker CPU's
                    // load per task, cpu_avg_load_per_task()). weight is the task's
                    // se.load.weight (1024), not its average. wake_wide() refuses.
                    WakeAffine::LoadBalanced => {
                        let weight = super::pelt::NICE_0_WEIGHT as i64;
                        let balanced = this_load == 0 || 100 * (this_load + weight) <= bias * prev_load;
                        let nr_this = nr[waker] as i64;
                        let tl_per_task = if nr_this > 0 { this_load / nr_this } else { 0 };
                        !wide && (balanced || (this_load <= prev_load && this_load + prev_load <= tl_per_task))
                    }
                    // v6.13 kernel/sched/fair.c: wake_affine_weight(): this_eff_load =
                    // (cpu_load(this) + task_h_load(p)) x 100, prev_eff_load = (cpu_load(prev) -
                    // task_h_load(p)) x (100 + (imbalance_pct - 100) / 2) (WA_BIAS; equal
                    // capacities); the waker's CPU when strictly lower. cpu_load(prev) still holds
                    // the sleeper's decaying load; task_h_load(p) is its load when it slept.
                    WakeAffine::IdleThenWeight => {
                        let task_load = self.load_at_sleep(tid) as i64;
                        (this_load + task_load) * 100 < (prev_load - task_load) * bias
                    }
                };
                why.push(format!("wake_affine load {this_load} (waker CPU) vs {prev_load} (prev CPU), bias {bias}%"));
                if pick {
                    waker
                } else {
                    prev
                }
            });
            why.push(format!(
                "{}: wake_affine -> CPU {} ({} by the waker's CPU {})",
                d.name,
                self.pu_os[target],
                if target == waker { "pulled" } else { "kept" },
                self.pu_os[waker]
            ));
        }
        // select_idle_sibling() (both versions): the target if idle; prev if it shares the
        // cache and is idle; else the first idle core of the target's LLC after the target
        // (v3.13: the LLC domain's groups, cores, from the target's; v6.13 select_idle_core()/
        // select_idle_cpu(): for_each_cpu_wrap from target + 1); else see below; else the target.
        let cpu = if idle(target) {
            target
        } else if prev != target && self.pu_node[prev] == self.pu_node[target] && idle(prev) {
            prev
        } else {
            let n = self.pu_node.len();
            // The target's LLC in for_each_cpu_wrap() order from target + 1.
            let order: Vec<usize> = (1..=n)
                .map(|k| (target + k) % n)
                .filter(|&c| allowed.contains(&c) && self.pu_node[c] == self.pu_node[target])
                .collect();
            let llc: Vec<usize> = order.iter().copied().filter(|&c| idle(c)).collect();
            let core_idle =
                |c: usize| (0..nr.len()).filter(|&q| self.pu_core[q] == self.pu_core[c]).all(|q| nr[q] == 0);
            // v6.13 select_idle_cpu(): select_idle_core() (no limit) only with SMT active and an
            // idle core; otherwise SIS_UTIL's limit: "nr = sd_share->nr_idle_scan + 1; if (nr
            // == 1) return -1;" and "if (--nr <= 0) return -1;" before each CPU looked at.
            let sis_util = self.rules.load.idle_scan == IdleScan::SisUtil;
            let idle_core = if sis_util && !self.smt { None } else { llc.iter().copied().find(|&c| core_idle(c)) };
            match idle_core {
                Some(c) => c,
                // No idle core: v6.13 select_idle_cpu() takes the first idle CPU of the LLC it
                // looks at; v3.13 goes down to the SMT domain of the target, whose groups are its
                // own core's threads.
                None => match self.rules.idle_sibling {
                    IdleSibling::FirstIdleInLlc if sis_util => {
                        let limit = self.nr_idle_scan[self.pu_node[target]];
                        why.push(format!("SIS_UTIL scans {limit} CPU(s)"));
                        order.iter().take(limit).copied().find(|&c| idle(c)).unwrap_or(target)
                    }
                    IdleSibling::FirstIdleInLlc => llc.first().copied().unwrap_or(target),
                    IdleSibling::TargetCoreSibling => {
                        llc.iter().copied().find(|&c| self.pu_core[c] == self.pu_core[target]).unwrap_or(target)
                    }
                },
            }
        };
        let cpu = if allowed.contains(&cpu) { cpu } else { prev };
        why.push(format!(
            "select_idle_sibling: CPU {} ({})",
            self.pu_os[cpu],
            if idle(cpu) { "idle" } else { "no idle CPU in the LLC" }
        ));
        if cpu != prev {
            self.cpu[tid] = cpu;
            if self.history[tid].len() < super::HISTORY_MAX {
                self.history[tid].push((now_s, cpu));
            }
            // Only wake-ups that move a thread are decisions worth explaining.
            let level = affine.map(|l| self.domains[l].name.clone()).unwrap_or_default();
            self.record(SchedEvent {
                t_s: now_s,
                tid,
                from: Some(prev),
                to: cpu,
                path: "wake",
                level,
                why: why.join("; "),
            });
        }
        cpu
    }
}
