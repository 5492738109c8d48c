//! Wake-up placement (`kernel/sched/fair.c: select_task_rq_fair()` with `SD_WAKE_AFFINE`, v3.13
//! and v6.13): a thread woken by another on CPU `waker` after sleeping on `prev`. If a domain
//! with `SD_WAKE_AFFINE` spans both, `wake_affine()` picks the target between them; then
//! `select_idle_sibling()` looks for an idle CPU in the target's LLC (the node here).

use super::{Sched, SchedEvent};
use crate::input::Kernel;

impl Sched {
    /// Place thread `tid`, woken at `now_s` by a thread on `waker`; `runnable` says which threads
    /// are runnable now. Returns the chosen CPU (the thread is placed there).
    pub fn wake(&mut self, now_s: f64, tid: usize, waker: usize, runnable: &[bool]) -> usize {
        let prev = self.cpu[tid];
        // The woken task itself is not yet on any runqueue.
        let mut nr = self.nr_running(runnable, now_s);
        if runnable[tid] {
            nr[prev] -= 1;
        }
        let idle = |c: usize| nr[c] == 0;
        let allowed = &self.allowed[tid];
        // The highest SD_WAKE_AFFINE domain of the waker that spans prev.
        let affine = (0..self.domains.len())
            .rev()
            .find(|&l| self.domains[l].wake_affine && self.domains[l].span_of[waker].contains(&prev));
        let mut why = Vec::new();
        let mut target = prev;
        if let Some(l) = affine.filter(|_| waker != prev && allowed.contains(&waker)) {
            let d = &self.domains[l];
            let share_cache = self.pu_node[waker] == self.pu_node[prev];
            // v6.13 wake_affine_idle(): an idle waker sharing the cache keeps prev if idle;
            // an idle prev wins; else wake_affine_weight(). v3.13 wake_affine(): load only.
            let by_idle = match self.kernel {
                Kernel::K6 if idle(waker) && share_cache => Some(if idle(prev) { prev } else { waker }),
                Kernel::K6 if idle(prev) => Some(prev),
                _ => None,
            };
            target = by_idle.unwrap_or_else(|| {
                // this_eff_load = (waker load + the task) x 100; prev_eff_load = prev load x
                // (100 + (imbalance_pct - 100) / 2) (WA_BIAS); v3.13 takes the waker when <=.
                let this = (nr[waker] + 1) as f64 * 100.0;
                let prev_eff = nr[prev] as f64 * (100.0 + (d.imbalance_pct - 100.0) / 2.0);
                let pick = match self.kernel {
                    Kernel::K313 => this <= prev_eff,
                    Kernel::K6 => this < prev_eff,
                };
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
        // select_idle_sibling(): the target if idle; v6.13 also prev if it shares the cache and
        // is idle; else the first idle CPU of the target's LLC (an idle core first), else target.
        let cpu = if idle(target) {
            target
        } else if self.kernel == Kernel::K6
            && prev != target
            && self.pu_node[prev] == self.pu_node[target]
            && idle(prev)
        {
            prev
        } else {
            let llc: Vec<usize> =
                allowed.iter().copied().filter(|&c| self.pu_node[c] == self.pu_node[target] && idle(c)).collect();
            if llc.is_empty() {
                target
            } else {
                self.idlest(&llc, &nr)
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
        }
        if cpu != prev {
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
