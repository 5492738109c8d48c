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
//!
//! v2.6.32 (`kernel/sched_fair.c: select_task_rq_fair()`) chooses in another order
//! (`candidate_then_affine()`): an idle candidate first, then `wake_affine()` takes it or keeps
//! `prev`, and nothing searches after that.

use super::{Sched, SchedEvent};
use crate::profile::{IdleScan, IdleSibling, WakeAffine, WakeOrder, WakeWide, WakeeDecay};

/// `record_wakee()`'s decay period: `HZ` jiffies, one second.
const WAKEE_FLIP_DECAY_S: f64 = 1.0;

/// v2.6.32 `include/linux/topology.h: SD_SIBLING_INIT`: `imbalance_pct` of the SMT level, which
/// carries `SD_WAKE_AFFINE` and not `SD_PREFER_SIBLING` (the engine builds no SMT domain).
const SIBLING_IMBALANCE_PCT: i64 = 110;

/// v2.6.32 and v3.13 `wake_affine()` for a wake-up that is not `sync` (futex wake-ups never are;
/// v2.6.32's `SYNC_MORE` is off, `kernel/sched_features.h`), with root-group `effective_load()`
/// (`wl` itself): balanced when the waker's CPU has no load or `100 x (this_load + weight) <=
/// bias x load`; else affine only if `this_load <= load && this_load + target_load(prev_cpu,
/// idx) <= tl_per_task` (the waker CPU's load per task, `cpu_avg_load_per_task()`), `wake_idx`
/// 0 at every level. `weight` is the task's `se.load.weight` (1024).
fn load_balanced(this_load: i64, prev_load: i64, nr_this: i64, bias: i64) -> bool {
    let weight = super::pelt::NICE_0_WEIGHT as i64;
    let balanced = this_load == 0 || 100 * (this_load + weight) <= bias * prev_load;
    let tl_per_task = if nr_this > 0 { this_load / nr_this } else { 0 };
    balanced || (this_load <= prev_load && this_load + prev_load <= tl_per_task)
}

/// A wake-up's or a balance's reasons, written out only when decisions are kept
/// (`--explain-sched`): the text of every wake-up cost more than the decision itself in runs
/// whose threads sleep at barriers.
pub(super) struct Why {
    on: bool,
    parts: Vec<String>,
}

impl Why {
    pub(super) fn new(on: bool) -> Self {
        Why { on, parts: Vec::new() }
    }

    pub(super) fn push(&mut self, reason: impl FnOnce() -> String) {
        if self.on {
            self.parts.push(reason());
        }
    }

    pub(super) fn join(&self, sep: &str) -> String {
        self.parts.join(sep)
    }
}

/// Per thread, `task_struct`'s `wakee_flips`, `last_wakee`, `wakee_flip_decay_ts` and
/// `recent_used_cpu` (set from a shared reference: `select_idle_sibling()` reads and writes it).
#[derive(Clone, Debug, Default)]
pub struct Wakee {
    flips: u64,
    last: Option<usize>,
    decay_s: f64,
    recent_used_cpu: std::cell::Cell<Option<usize>>,
}

/// Buffers a wake-up fills and a later one reuses: the runnable tasks per CPU, the target's LLC
/// in scan order, and marks over the CPUs for building that order.
#[derive(Clone, Debug, Default)]
pub(super) struct Scratch {
    nr: Vec<usize>,
    order: Vec<usize>,
    mark: Vec<bool>,
}

/// The order in which a barrier's release wakes its sleeping threads: libgomp's last thread
/// wakes them all with one `futex_wake(&bar->generation, INT_MAX)`
/// (`libgomp/config/linux/bar.c: gomp_barrier_wait_end`), and `futex_wake()`
/// (`kernel/futex/waitwake.c`; `kernel/futex.c` before 5.16) walks the hash bucket's `plist` of
/// waiters, which `futex_queue()` appends to by priority, FIFO among equals (every thread is
/// nice 0): they wake in the order they went to sleep, each through `select_task_rq_fair()`.
/// `arrived[k]` is member k's arrival at the barrier (its sleep begins one spin later, the same
/// spin for all); simultaneous arrivals in member order.
pub fn futex_wake_order(arrived: &[f64]) -> Vec<usize> {
    // Sorted on (key, member) pairs, the key ordered as `f64::total_cmp` orders the times (its
    // own bit transform): the same order as a stable sort by time, without its comparisons
    // through the slice (a release sorts its whole team).
    let key = |t: f64| {
        let bits = t.to_bits() as i64;
        bits ^ ((((bits >> 63) as u64) >> 1) as i64)
    };
    let mut keyed: Vec<(i64, usize)> = arrived.iter().enumerate().map(|(k, &t)| (key(t), k)).collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, k)| k).collect()
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
        let factor = self.node_pus[self.pu_node[self.cpu[waker]]].len() as u64;
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
        let mut scratch = std::mem::take(&mut self.wake_scratch);
        self.nr_running_into(runnable, now_s, &mut scratch.nr);
        if runnable[tid] {
            scratch.nr[prev] -= 1;
        }
        let mut why = Why { on: self.explain, parts: Vec::new() };
        if wide {
            why.push(|| {
                format!(
                    "wake_wide (waker thread {} wakee_flips {}, woken {})",
                    waker_tid + 1,
                    self.wakee[waker_tid].flips,
                    self.wakee[tid].flips
                )
            });
        }
        let (cpu, level) = match self.rules.wake_order {
            WakeOrder::CandidateThenAffine => {
                self.candidate_then_affine(tid, waker, prev, &scratch.nr, runnable, &mut why)
            }
            WakeOrder::AffineThenIdleSibling => {
                let (cpu, level) =
                    self.affine_then_idle_sibling(tid, waker, prev, wide, runnable, &mut scratch, &mut why);
                // The level's name is for the log, which only a move reaches.
                (cpu, level.filter(|_| cpu != prev).map(|l| self.domains[l].name.clone()).unwrap_or_default())
            }
        };
        self.wake_scratch = scratch;
        if cpu != prev {
            self.cpu[tid] = cpu;
            if self.history[tid].len() < super::HISTORY_MAX {
                self.history[tid].push((now_s, cpu));
            }
            // Only wake-ups that move a thread are decisions worth explaining.
            self.record(SchedEvent {
                t_s: now_s,
                tid,
                from: Some(prev),
                to: cpu,
                path: "wake",
                level,
                why: why.parts.join("; "),
            });
        }
        cpu
    }

    /// v6.13 `select_idle_sibling()` once neither the target nor prev is idle:
    /// `recent_used_cpu = p->recent_used_cpu; p->recent_used_cpu = prev;` (so since v5.15,
    /// "sched/fair: Use prev instead of new target as recent_used_cpu"). None before the first
    /// such wake-up and in versions without it.
    fn recent_used_cpu(&self, tid: usize, prev: usize) -> Option<usize> {
        if !self.rules.recent_used_cpu {
            return None;
        }
        self.wakee[tid].recent_used_cpu.replace(Some(prev))
    }

    /// v3.13 / v6.13 (`WakeOrder::AffineThenIdleSibling`): `wake_affine()` between the waker's
    /// CPU and `prev`, then `select_idle_sibling()` around the target. Returns the CPU and the
    /// affine domain's level (None when none). `scratch.nr`: the runnable tasks per CPU.
    #[allow(clippy::too_many_arguments, reason = "the wake-up's inputs and its explanation")]
    fn affine_then_idle_sibling(
        &self,
        tid: usize,
        waker: usize,
        prev: usize,
        wide: bool,
        runnable: &[bool],
        scratch: &mut Scratch,
        why: &mut Why,
    ) -> (usize, Option<usize>) {
        let Scratch { nr, order, mark } = scratch;
        let nr: &[usize] = nr;
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
                let (this_load, prev_load) =
                    self.cpu_load_pair(waker, prev, runnable, tid, self.rules.load.wake_affine);
                let (this_load, prev_load) = (this_load as i64, prev_load as i64);
                let pick = match self.rules.wake_affine {
                    // v3.13 kernel/sched/fair.c: wake_affine(): with this_load > 0,
                    // this_eff_load = 100 x (this_load + weight) and prev_eff_load =
                    // (100 + (imbalance_pct - 100) / 2) x load, "balanced" when <=; balanced
                    // too when this_load is 0; else affine only if "this_load <= load &&
                    // this_load + target_load(prev_cpu, idx) <= tl_per_task" (the waker CPU's
                    // load per task, cpu_avg_load_per_task()). weight is the task's
                    // se.load.weight (1024), not its average. wake_wide() refuses.
                    WakeAffine::LoadBalanced => !wide && load_balanced(this_load, prev_load, nr[waker] as i64, bias),
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
                why.push(|| {
                    format!("wake_affine load {this_load} (waker CPU) vs {prev_load} (prev CPU), bias {bias}%")
                });
                if pick {
                    waker
                } else {
                    prev
                }
            });
            why.push(|| {
                format!(
                    "{}: wake_affine -> CPU {} ({} by the waker's CPU {})",
                    d.name,
                    self.pu_os[target],
                    if target == waker { "pulled" } else { "kept" },
                    self.pu_os[waker]
                )
            });
        }
        // select_idle_sibling() (both versions): the target if idle; prev if it shares the
        // cache and is idle; else the first idle core of the target's LLC after the target
        // (v3.13: the LLC domain's groups, cores, from the target's; v6.13 select_idle_core()/
        // select_idle_cpu(): for_each_cpu_wrap from target + 1); else see below; else the target.
        let cpu = if idle(target) {
            target
        } else if prev != target && self.pu_node[prev] == self.pu_node[target] && idle(prev) {
            prev
        } else if let Some(r) = self.recent_used_cpu(tid, prev).filter(|&r| {
            r != prev && r != target && self.pu_node[r] == self.pu_node[target] && idle(r) && allowed.contains(&r)
        }) {
            // v6.13: the task's recently used CPU, idle, in the target's LLC (not limited by
            // SIS_UTIL: it comes before select_idle_cpu()).
            why.push(|| format!("recent_used_cpu CPU {}", self.pu_os[r]));
            r
        } else {
            self.llc_order(allowed, target, mark, order);
            let order: &[usize] = order;
            // The LLC's idle CPUs in that order.
            let llc = || order.iter().copied().filter(|&c| idle(c));
            // Without SMT a core is its one CPU.
            let core_idle = |c: usize| {
                if self.smt {
                    (0..nr.len()).filter(|&q| self.pu_core[q] == self.pu_core[c]).all(|q| nr[q] == 0)
                } else {
                    idle(c)
                }
            };
            // v6.13 select_idle_cpu(): select_idle_core() (no limit) only with SMT active and an
            // idle core; otherwise SIS_UTIL's limit: "nr = sd_share->nr_idle_scan + 1; if (nr
            // == 1) return -1;" and "if (--nr <= 0) return -1;" before each CPU looked at.
            let sis_util = self.rules.load.idle_scan == IdleScan::SisUtil;
            let idle_core = if sis_util && !self.smt { None } else { llc().find(|&c| core_idle(c)) };
            match idle_core {
                Some(c) => c,
                // No idle core: v6.13 select_idle_cpu() takes the first idle CPU of the LLC it
                // looks at; v3.13 goes down to the SMT domain of the target, whose groups are its
                // own core's threads.
                None => match self.rules.idle_sibling {
                    IdleSibling::FirstIdleInLlc if sis_util => {
                        let limit = self.nr_idle_scan[self.pu_node[target]];
                        why.push(|| format!("SIS_UTIL scans {limit} CPU(s)"));
                        order.iter().take(limit).copied().find(|&c| idle(c)).unwrap_or(target)
                    }
                    IdleSibling::FirstIdleInLlc => llc().next().unwrap_or(target),
                    IdleSibling::TargetCoreSibling => {
                        llc().find(|&c| self.pu_core[c] == self.pu_core[target]).unwrap_or(target)
                    }
                },
            }
        };
        let cpu = if allowed.contains(&cpu) { cpu } else { prev };
        why.push(|| {
            format!(
                "select_idle_sibling: CPU {} ({})",
                self.pu_os[cpu],
                if idle(cpu) { "idle" } else { "no idle CPU in the LLC" }
            )
        });
        (cpu, affine)
    }

    /// The target's LLC in `for_each_cpu_wrap()` order from `target + 1`, into `order`: the
    /// allowed CPUs of the target's node, each once, by their distance `(c - target - 1) mod n`
    /// after the target (the node's CPUs above the target, then from its first up to the
    /// target). `mark` (all false, left so) marks the allowed ones on the way.
    fn llc_order(&self, allowed: &[usize], target: usize, mark: &mut Vec<bool>, order: &mut Vec<usize>) {
        let node = self.pu_node[target];
        mark.resize(self.pu_node.len(), false);
        for &c in allowed {
            mark[c] |= self.pu_node[c] == node;
        }
        let pus = &self.node_pus[node];
        let split = pus.partition_point(|&c| c <= target);
        order.clear();
        for &c in pus[split..].iter().chain(&pus[..split]) {
            if std::mem::take(&mut mark[c]) {
                order.push(c);
            }
        }
    }

    /// v2.6.32 `kernel/sched_fair.c: select_task_rq_fair()` for `SD_BALANCE_WAKE`
    /// (`WakeOrder::CandidateThenAffine`), called by `kernel/sched.c: try_to_wake_up()` on the
    /// waker's CPU. `want_affine` needs only the waker's CPU in `cpus_allowed`
    /// (`AFFINE_WAKEUPS` on). `for_each_domain(cpu, tmp)` walks up from the waker's CPU; in each
    /// `SD_WAKE_AFFINE` domain the candidate is the waker's CPU when the span holds `prev`, and
    /// in an `SD_PREFER_SIBLING` domain (MC: `sd_balance_for_mc_power()`) `prev` if it has no CFS
    /// task ("!cpu_rq(prev_cpu)->cfs.nr_running"), else, when there is no candidate or it is the
    /// waker's CPU, the first allowed CPU of the span with none, in CPU order. The first domain
    /// with a candidate is `affine_sd`; "if (affine_sd && wake_affine(affine_sd, p, sync))
    /// new_cpu = cpu;" else `new_cpu` stays `prev_cpu`: no level has `SD_BALANCE_WAKE`
    /// (`SD_SIBLING_INIT`, `SD_MC_INIT`, `SD_CPU_INIT`, `SD_NODE_INIT`), so
    /// `find_idlest_group()` is never reached. `wake_affine()` compares the waker's CPU
    /// (`smp_processor_id()`, not the candidate) with `prev` at `affine_sd`'s `imbalance_pct`.
    fn candidate_then_affine(
        &self,
        tid: usize,
        waker: usize,
        prev: usize,
        nr: &[usize],
        runnable: &[bool],
        why: &mut Why,
    ) -> (usize, String) {
        let allowed = &self.allowed[tid];
        if !allowed.contains(&waker) {
            why.push(|| "waker's CPU not allowed: prev".into());
            return (prev, String::new());
        }
        let idle = |c: usize| nr[c] == 0;
        // The SD_WAKE_AFFINE levels from the waker's CPU up: (name, span in CPU order,
        // imbalance_pct, SD_PREFER_SIBLING). With SMT the SIBLING level comes first.
        let in_cpu_order = |mut span: Vec<usize>| {
            span.sort_by_key(|&c| self.pu_os[c]);
            span
        };
        let siblings: Vec<usize> =
            (0..self.pu_core.len()).filter(|&c| self.pu_core[c] == self.pu_core[waker]).collect();
        let smt =
            (siblings.len() > 1).then(|| ("SIBLING".to_string(), in_cpu_order(siblings), SIBLING_IMBALANCE_PCT, false));
        let levels = smt.into_iter().chain(self.domains.iter().filter(|d| d.wake_affine).map(|d| {
            // The LLC level is MC, whose own flags carry SD_PREFER_SIBLING; NODE's do not.
            (d.name.clone(), in_cpu_order(d.span_of[waker].clone()), d.imbalance_pct as i64, !d.numa)
        }));
        for (name, span, imbalance_pct, prefer_sibling) in levels {
            let mut candidate = span.contains(&prev).then_some(waker);
            if prefer_sibling {
                if candidate == Some(waker) && idle(prev) {
                    candidate = Some(prev);
                }
                if candidate.is_none() || candidate == Some(waker) {
                    if let Some(c) = span.iter().copied().find(|&c| allowed.contains(&c) && idle(c)) {
                        candidate = Some(c);
                    }
                }
            }
            let Some(candidate) = candidate else { continue };
            // wake_affine(): rq->load.weight of each CPU (wake_idx 0); the woken task is on no
            // run queue, the waker is on its CPU's.
            let (this_load, prev_load) = self.cpu_load_pair(waker, prev, runnable, tid, self.rules.load.wake_affine);
            let (this_load, prev_load) = (this_load as i64, prev_load as i64);
            let bias = 100 + (imbalance_pct - 100) / 2;
            let affine = load_balanced(this_load, prev_load, nr[waker] as i64, bias);
            let cpu = if affine { candidate } else { prev };
            why.push(|| {
                format!(
                "{name}: candidate CPU {} ({}); wake_affine load {this_load} (waker CPU {}) vs {prev_load} (prev CPU), \
                 bias {bias}% -> CPU {} ({})",
                self.pu_os[candidate],
                if candidate == waker { "the waker's" } else if idle(candidate) { "idle" } else { "busy" },
                self.pu_os[waker],
                self.pu_os[cpu],
                if affine { "affine" } else { "prev kept" }
            )
            });
            return (cpu, name);
        }
        why.push(|| "no SD_WAKE_AFFINE domain with a candidate: prev".into());
        (prev, String::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Kernel;

    use crate::sched::test_machines::unbound;

    /// Threads created (their loads tracked from then on), then thread `k` on `cpus[k]`; only
    /// later decisions are logged.
    fn placed(m: &numalab_model::Machine, kernel: Kernel, cpus: &[usize]) -> Sched {
        let n = cpus.len();
        let mut s = Sched::new(m, &unbound(), kernel, 1, n).unwrap();
        let mut live = vec![false; n];
        for t in 0..n {
            s.place_new(t, (t > 0).then_some(0), &live);
            live[t] = true;
        }
        s.set_options(None, true);
        s.cpu = cpus.to_vec();
        s
    }

    /// Two nodes of two cores (CPUs 0-1 and 2-3).
    fn sched(kernel: Kernel, cpus: &[usize]) -> Sched {
        placed(&crate::sched::test_machines::two_nodes_of(2), kernel, cpus)
    }

    #[test]
    fn v613_a_wakee_takes_its_recently_used_cpu_where_sis_util_scans_nothing() {
        // kernel/sched/fair.c select_idle_sibling() (v6.13): with the target and prev busy,
        // "recent_used_cpu = p->recent_used_cpu; p->recent_used_cpu = prev;", then the recent CPU
        // if idle and in the target's LLC, before select_idle_cpu() (whose SIS_UTIL limit, 0
        // here, looks at no CPU). Thread 1 first woken on busy CPU 1 (by thread 3 there): stays,
        // and remembers CPU 1. Then woken on busy CPU 0 (by thread 2 there), CPU 1 idle: goes
        // there; without the rule it stays on CPU 0.
        for (recent, second) in [(true, 1), (false, 0)] {
            let mut s = sched(Kernel::V6_13, &[2, 1, 0, 1]);
            s.rules = Box::leak(Box::new(crate::profile::SchedRules { recent_used_cpu: recent, ..s.rules.clone() }));
            s.nr_idle_scan = vec![0, 0];
            assert_eq!(s.wake(1e-3, 1, 3, &[true; 4]), 1);
            s.cpu = vec![2, 0, 0, 3];
            assert_eq!(s.wake(2e-3, 1, 2, &[true; 4]), second, "recent_used_cpu {recent}");
        }
        assert!(sched(Kernel::V6_13, &[0]).rules.recent_used_cpu && !sched(Kernel::V3_13, &[0]).rules.recent_used_cpu);
    }

    /// A barrier's release on two nodes of two CPUs with two sleeping threads per CPU (threads
    /// 2k and 2k+1 on CPU k, asleep since 5 ms), woken at 6 ms one by one in thread order by
    /// thread 7, still running on CPU 3 (`engine/phases.rs`), with `nr_idle_scan` CPUs to scan
    /// per LLC. Where threads 0-6 land, and the scheduler.
    fn release(kernel: Kernel, nr_idle_scan: usize) -> (Vec<usize>, Sched) {
        let mut s = sched(kernel, &[0, 0, 1, 1, 2, 2, 3, 3]);
        s.nr_idle_scan = vec![nr_idle_scan; 2];
        for t in 0..7 {
            s.sleeps_at(t, 5e-3);
        }
        let mut runnable = [false, false, false, false, false, false, false, true];
        let cpus = (0..7)
            .map(|t| {
                s.resumes(t, 6e-3);
                runnable[t] = true;
                s.wake(6e-3, t, 7, &runnable)
            })
            .collect();
        (cpus, s)
    }

    #[test]
    fn v61_on_idle_cpus_a_cpus_second_wakee_goes_to_the_idle_cpu_beside_it() {
        // kernel/sched/fair.c (v6.1) select_idle_sibling(): thread 0 finds CPU 0 idle and stays;
        // thread 1, kept on prev CPU 0 by wake_affine_weight(), finds it taken and, with
        // SIS_UTIL's scan open (an LLC of low util_avg: update_idle_cpu_scan()),
        // select_idle_cpu() gives it CPU 1, idle until its own threads wake; they then find no
        // idle CPU in the node and stay. The wake-up moves inside a node that make most of the 6.1
        // guest's moves, whose vCPUs are idle most of the time (docs/scheduler.md §10.4). With
        // the scan closed (nr_idle_scan 0, a busy LLC) thread 1 stays queued on CPU 0.
        let (open, s) = release(Kernel::V6_1, 2);
        assert_eq!(open, [0, 1, 1, 1, 2, 2, 3]);
        let e = s.log.last().unwrap();
        assert_eq!((e.tid, e.from, e.to, e.path), (1, Some(0), 1, "wake"));
        assert!(e.why.contains("kept") && e.why.ends_with("select_idle_sibling: CPU 1 (idle)"), "{}", e.why);
        assert_eq!(s.log.len(), 1, "one move");
        let (closed, s) = release(Kernel::V6_1, 0);
        assert_eq!(closed, [0, 0, 1, 1, 2, 2, 3]);
        assert!(s.log.is_empty());
    }

    #[test]
    fn the_llc_is_scanned_from_the_cpu_after_the_target_round_to_it() {
        // for_each_cpu_wrap(cpu, sched_domain_span(sd), target + 1): the allowed CPUs of the
        // target's node, each once, whatever the order of the thread's list.
        let m = crate::sched::test_machines::two_nodes_of(4);
        let s = Sched::new(&m, &unbound(), Kernel::V6_13, 1, 1).unwrap();
        let (mut mark, mut order) = (Vec::new(), Vec::new());
        let cases: [(&[usize], usize, &[usize]); 4] = [
            (&[0, 1, 2, 3, 4, 5, 6, 7], 1, &[2, 3, 0, 1]),
            (&[7, 5, 3, 1, 5, 6], 5, &[6, 7, 5]),
            (&[2, 0, 4], 3, &[0, 2]),
            (&[4], 0, &[]),
        ];
        for (allowed, target, want) in cases {
            s.llc_order(allowed, target, &mut mark, &mut order);
            assert_eq!(order, want, "allowed {allowed:?}, target {target}");
        }
        assert!(mark.iter().all(|&m| !m), "the marks are left clear");
    }

    #[test]
    fn futex_wake_wakes_in_sleep_order() {
        // FIFO among nice-0 waiters: the first to sleep wakes first; equal times in member order.
        assert_eq!(futex_wake_order(&[3e-3, 1e-3, 2e-3, 1e-3]), [1, 3, 2, 0]);
        assert_eq!(futex_wake_order(&[]), Vec::<usize>::new());
        // Signs, zeros and infinities in f64::total_cmp's order, ties in member order.
        let times = [0.5, -0.0, 0.0, -1.0, f64::INFINITY, 0.5, f64::NEG_INFINITY, 1e-300, -0.0];
        let mut stable: Vec<usize> = (0..times.len()).collect();
        stable.sort_by(|&a, &b| times[a].total_cmp(&times[b]));
        assert_eq!(futex_wake_order(&times), stable);
        assert_eq!(stable, [6, 3, 1, 8, 2, 7, 0, 5, 4]);
    }

    #[test]
    fn v61_sleep_order_sends_a_cpus_second_sleeper_to_the_idle_cpu_beside_it() {
        // Threads 0 and 2 on CPU 0, 1 and 3 on CPU 1 (one node), 4 the waker on CPU 2; CPU 0's
        // pair slept first. Woken in sleep order (0, 2, 1, 3) with SIS_UTIL's scan open, thread 2
        // finds CPU 0 taken (its first wakee queued: idle_cpu() is false) and CPU 1 idle: it
        // moves there (kernel/sched/fair.c v6.1 select_idle_sibling()). Thread 1 then finds CPU 1
        // holding thread 2 and thread 3's blocked load, wake_affine_weight() takes it to the
        // waker's CPU 2, and select_idle_sibling() to idle CPU 3 beside it; thread 3 finds no
        // idle CPU and stays. In thread order (0, 1, 2, 3) each thread finds its CPU idle or
        // taken by its partner, the sibling taken too: nothing moves.
        let moves = |order: &[usize]| {
            let mut s = sched(Kernel::V6_1, &[0, 1, 0, 1, 2]);
            s.nr_idle_scan = vec![2, 2];
            for t in 0..4 {
                s.sleeps_at(t, 5e-3);
            }
            let mut runnable = [false, false, false, false, true];
            for &t in order {
                s.resumes(t, 6e-3);
                runnable[t] = true;
                s.wake(6e-3, t, 4, &runnable);
            }
            s.log.iter().map(|e| (e.tid, e.to)).collect::<Vec<_>>()
        };
        assert_eq!(moves(&futex_wake_order(&[1e-3, 4e-3, 2e-3, 5e-3])), [(2, 1), (1, 3)]);
        assert_eq!(moves(&[0, 1, 2, 3]), []);
    }

    #[test]
    fn v2632_an_idle_cpu_of_the_wakers_mc_is_the_candidate_and_wake_affine_takes_it() {
        // Thread 0 wakes thread 1 from CPU 0; thread 1 slept on CPU 2, where threads 2 and 3
        // queue (rq->load.weight 2048); CPU 1 is idle. MC of CPU 0 does not span CPU 2, but it
        // has SD_PREFER_SIBLING: its first CPU with no CFS task, CPU 1, is the candidate.
        // wake_affine(MC): 100 x (1024 + 1024) <= 112 x 2048: balanced, the candidate wins.
        let mut s = sched(Kernel::V2_6_32, &[0, 2, 2, 2]);
        assert_eq!(s.wake(1e-3, 1, 0, &[true; 4]), 1);
        let e = s.log.last().unwrap();
        assert_eq!((e.level.as_str(), e.from, e.to), ("MC", Some(2), 1));
        assert!(e.why.contains("candidate CPU 1 (idle)") && e.why.ends_with("(affine)"), "{}", e.why);
    }

    #[test]
    fn v2632_wake_affine_refusing_keeps_prev_where_3_13_finds_an_idle_sibling() {
        // Thread 1 slept on CPU 2, where thread 2 now runs; CPU 1 and CPU 3 are idle. 2.6.32:
        // MC's candidate is CPU 1, but wake_affine(MC) refuses (100 x 2048 > 112 x 1024; the
        // waker's CPU is not below prev's per task): prev_cpu as it is, beside idle CPU 3.
        // 3.13 keeps prev too, then select_idle_sibling() moves it to CPU 3 in prev's LLC.
        let runnable = [true, true, true];
        let mut s = sched(Kernel::V2_6_32, &[0, 2, 2]);
        assert_eq!(s.wake(1e-3, 1, 0, &runnable), 2);
        assert!(s.log.is_empty(), "a stay is not logged");
        let mut s = sched(Kernel::V3_13, &[0, 2, 2]);
        assert_eq!(s.wake(1e-3, 1, 0, &runnable), 3);
    }

    #[test]
    fn v2632_a_wakee_on_the_wakers_cpu_stays_there_beside_an_idle_cpu() {
        // Thread 1 slept on CPU 0, where its waker runs; CPU 1 is idle. 2.6.32 still asks
        // wake_affine() (only "cpu == prev_cpu" skips it in later releases): MC's candidate is
        // CPU 1 (CPU 0 has the waker), this_load = load = 1024 is not balanced and 2 x 1024 is
        // above the 1024 per task: prev kept, stacked on the waker's CPU. 3.13 skips
        // wake_affine() and select_idle_sibling() takes CPU 1.
        let runnable = [true, true];
        assert_eq!(sched(Kernel::V2_6_32, &[0, 0]).wake(1e-3, 1, 0, &runnable), 0);
        assert_eq!(sched(Kernel::V3_13, &[0, 0]).wake(1e-3, 1, 0, &runnable), 1);
    }

    #[test]
    fn v2632_an_idle_prev_in_the_wakers_mc_is_the_candidate_and_no_cpu_of_another_node_is() {
        // Thread 1 slept on CPU 1, idle, in the waker's MC: MC's candidate is prev itself.
        let mut s = sched(Kernel::V2_6_32, &[0, 1]);
        assert_eq!(s.wake(1e-3, 1, 0, &[true, true]), 1);
        // Node 0 full (threads 0 and 2), thread 1 slept on CPU 2, where threads 3 and 4 queue;
        // CPU 3 is idle. MC has no idle CPU and does not span prev; NODE spans it and its
        // candidate is the waker's CPU (NODE has no SD_PREFER_SIBLING, so CPU 3 is never looked
        // at). wake_affine(NODE): 100 x (1024 + 1024) <= 112 x 2048: to CPU 0, stacked.
        let mut s = sched(Kernel::V2_6_32, &[0, 2, 1, 2, 2]);
        assert_eq!(s.wake(1e-3, 1, 0, &[true; 5]), 0);
        let e = s.log.last().unwrap();
        assert_eq!(e.level, "NODE");
        assert!(e.why.contains("candidate CPU 0 (the waker's)"), "{}", e.why);
    }

    #[test]
    fn v2632_a_waker_outside_the_wakees_cpus_leaves_it_on_prev() {
        // want_affine needs the waker's CPU in cpus_allowed; no level has SD_BALANCE_WAKE.
        let mut s = sched(Kernel::V2_6_32, &[0, 2, 2]);
        s.allowed[1] = vec![2, 3];
        assert_eq!(s.wake(1e-3, 1, 0, &[true; 3]), 2);
    }

    #[test]
    fn v2632_an_smt_sibling_prev_makes_the_sibling_level_affine() {
        // One node of two cores with two threads each. Thread 1 slept on the SMT sibling of
        // the waker's CPU, where threads 2 and 3 queue. SD_SIBLING_INIT has SD_WAKE_AFFINE and
        // not SD_PREFER_SIBLING: the candidate is the waker's CPU, and wake_affine at
        // imbalance_pct 110 (bias 105) takes it: 100 x 2048 <= 105 x 2048. (With MC first,
        // its idle CPU of the other core would have been the candidate.)
        let spec = r#"{"name": "smt", "description": "one node, two cores of two threads",
            "topology": {"packages": 1, "nodes_per_package": 1, "cores_per_node": 2, "threads_per_core": 2},
            "memory": {"node_gib": 1},
            "distances": [[10]],
            "latency": {"local_ns": 100},
            "bandwidth": {"node_gbps": 10},
            "core": {"frequency_ghz": 2.0, "mlp": 10}}"#;
        let m = numalab_model::MachineSpec::from_json(spec).unwrap().resolve().unwrap();
        let sibling = (1..4).find(|&c| m.pus[c].core == m.pus[0].core).unwrap();
        let mut s = placed(&m, Kernel::V2_6_32, &[0, sibling, sibling, sibling]);
        assert_eq!(s.wake(1e-3, 1, 0, &[true; 4]), 0);
        assert_eq!(s.log.last().unwrap().level, "SIBLING");
    }
}
