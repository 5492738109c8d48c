//! Each vCPU thread's spells on the host as `bench/host_trace.py report` takes the measured
//! host's from its scheduler trace (issue 22, docs/scheduler.md §10.51): the wait from a wake-up
//! to the switch-in (after a halt, or after a block on the BQL), the wait of a thread switched out
//! still runnable (`kernel/sched/core.c: __schedule()` with `preempt`) until it runs again, and
//! the length of each run between a switch-in and the next switch-out.
//!
//! The model switches threads only at its host plans, so a spell here is a whole number of
//! rounds and a wake-up the next plan serves at once waits 0. Kept only under `--explain-sched`
//! on an `mttcg` host: a few numbers per plan.

use serde::Serialize;

/// Where a vCPU thread is between two plans.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Spell {
    /// Its vCPU halted: the thread sleeps on its `halt_cond` (or has not run yet).
    Halted,
    /// Holding a core since.
    Running(f64),
    /// Runnable without a core since, switched out still runnable.
    Preempted(f64),
    /// Runnable without a core since its wake-up: after a halt (`true`) or a block on the BQL.
    Woken(f64, bool),
}

/// Over 1, 2 and 4 ms: the bounds the report counts the measured host's tails by.
const TAIL_S: [f64; 3] = [1e-3, 2e-3, 4e-3];

/// A set of spells' order statistics (nearest rank below: element `floor(q * n)` of the sorted
/// list, as `bench/host_trace.py` takes the measured host's) and tail.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SpellDist {
    pub n: u64,
    pub median_s: f64,
    pub p90_s: f64,
    pub p99_s: f64,
    pub max_s: f64,
    pub mean_s: f64,
    pub over_1ms: u64,
    pub over_2ms: u64,
    pub over_4ms: u64,
}

/// One thread's (or all vCPU threads') spells as distributions.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SpellsOut {
    pub woken_after_halt: SpellDist,
    pub woken_after_lock: SpellDist,
    pub preempted: SpellDist,
    pub run: SpellDist,
}

/// Per vCPU thread, then pooled over them.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct HostSpellsOut {
    pub vcpus: Vec<SpellsOut>,
    pub all: SpellsOut,
}

/// The spells so far: per vCPU thread its state and its completed spells by kind.
#[derive(Clone, Debug, PartialEq)]
pub struct HostSpells {
    at: Vec<Spell>,
    /// Per vCPU: woken after a halt, after a lock block, preempted, run (seconds each).
    done: Vec<[Vec<f64>; 4]>,
}

impl HostSpells {
    pub fn new(vcpus: usize) -> Self {
        HostSpells { at: vec![Spell::Halted; vcpus], done: vec![Default::default(); vcpus] }
    }

    /// The plan from `now_s` gave vCPU thread `c` a core (`holds`) or not; it `kept` the core
    /// it held without leaving it (a thread that blocked on the BQL left it even if picked
    /// again: `lock`), and its vCPU is `busy` (not halted).
    pub fn planned(&mut self, c: usize, now_s: f64, kept: bool, holds: bool, busy: bool, lock: bool) {
        let done = &mut self.done[c];
        if let Spell::Running(since) = self.at[c] {
            if kept && holds {
                return;
            }
            done[3].push(now_s - since);
            self.at[c] = if !busy {
                Spell::Halted
            } else if lock {
                Spell::Woken(now_s, false)
            } else {
                Spell::Preempted(now_s)
            };
        } else if self.at[c] == Spell::Halted && busy {
            self.at[c] = Spell::Woken(now_s, true);
        }
        match self.at[c] {
            Spell::Woken(since, halt) if holds => done[if halt { 0 } else { 1 }].push(now_s - since),
            Spell::Preempted(since) if holds => done[2].push(now_s - since),
            // A wait the thread left without a core: its vCPU halted again (a spin ran out).
            _ if !busy => {
                self.at[c] = Spell::Halted;
                return;
            }
            _ => return,
        }
        self.at[c] = Spell::Running(now_s);
    }

    pub fn out(&self) -> HostSpellsOut {
        let one = |k: usize, cs: &[usize]| dist(cs.iter().flat_map(|&c| self.done[c][k].iter().copied()).collect());
        let spells = |cs: &[usize]| SpellsOut {
            woken_after_halt: one(0, cs),
            woken_after_lock: one(1, cs),
            preempted: one(2, cs),
            run: one(3, cs),
        };
        let all: Vec<usize> = (0..self.done.len()).collect();
        HostSpellsOut { vcpus: all.iter().map(|&c| spells(&[c])).collect(), all: spells(&all) }
    }
}

fn dist(mut v: Vec<f64>) -> SpellDist {
    if v.is_empty() {
        return SpellDist::default();
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let at = |q: f64| v[((q * n as f64) as usize).min(n - 1)];
    let over = |b: f64| v.iter().filter(|&&d| d > b).count() as u64;
    SpellDist {
        n: n as u64,
        median_s: at(0.5),
        p90_s: at(0.9),
        p99_s: at(0.99),
        max_s: v[n - 1],
        mean_s: v.iter().sum::<f64>() / n as f64,
        over_1ms: over(TAIL_S[0]),
        over_2ms: over(TAIL_S[1]),
        over_4ms: over(TAIL_S[2]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_wait_ends_at_the_switch_in_and_runs_end_at_the_switch_out() {
        let mut s = HostSpells::new(2);
        // vCPU 0 wakes from its halt at 0 and runs at once: a wait of 0.
        s.planned(0, 0.0, false, true, true, false);
        // vCPU 1 wakes at 0 without a core, gets one at 1.5 ms.
        s.planned(1, 0.0, false, false, true, false);
        s.planned(1, 1.5e-3, false, true, true, false);
        // vCPU 0 keeps its core at 1.5 ms, is preempted at 4 ms, runs again at 9 ms.
        s.planned(0, 1.5e-3, true, true, true, false);
        s.planned(0, 4e-3, true, false, true, false);
        s.planned(0, 9e-3, false, true, true, false);
        // vCPU 1 blocks on the BQL at 2 ms, is not picked, runs again at 2.5 ms; halts at 3 ms.
        s.planned(1, 2e-3, true, false, true, true);
        s.planned(1, 2.5e-3, false, true, true, false);
        s.planned(1, 3e-3, true, false, false, false);
        let o = s.out();
        let near = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert_eq!((o.all.woken_after_halt.n, o.all.woken_after_lock.n, o.all.preempted.n), (2, 1, 1));
        assert!(near(o.vcpus[0].woken_after_halt.max_s, 0.0) && near(o.vcpus[1].woken_after_halt.max_s, 1.5e-3));
        assert!(near(o.all.woken_after_lock.max_s, 0.5e-3) && near(o.all.preempted.max_s, 5e-3));
        assert_eq!((o.all.preempted.over_1ms, o.all.preempted.over_2ms, o.all.preempted.over_4ms), (1, 1, 1));
        // Runs: vCPU 0 from 0 to 4 ms (kept at 1.5 ms: one run), vCPU 1 1.5-2 ms and 2.5-3 ms;
        // vCPU 0's run from 9 ms has not ended.
        assert_eq!(o.all.run.n, 3);
        assert!(near(o.vcpus[0].run.max_s, 4e-3) && near(o.vcpus[1].run.max_s, 0.5e-3), "{o:?}");
    }

    #[test]
    fn a_thread_picked_again_after_a_lock_block_ends_a_run_and_waits_nothing() {
        let mut s = HostSpells::new(1);
        s.planned(0, 0.0, false, true, true, false);
        // Blocked on the BQL at 1 ms and picked again at once: `kept` false, holds.
        s.planned(0, 1e-3, false, true, true, true);
        s.planned(0, 3e-3, true, false, false, false);
        let o = s.out();
        assert_eq!((o.all.run.n, o.all.woken_after_lock.n), (2, 1));
        assert_eq!(o.all.woken_after_lock.max_s, 0.0);
    }

    #[test]
    fn a_wait_left_by_a_halt_is_not_counted() {
        let mut s = HostSpells::new(1);
        s.planned(0, 0.0, false, false, true, false);
        s.planned(0, 1e-3, false, false, false, false);
        s.planned(0, 2e-3, false, false, true, false);
        s.planned(0, 2.5e-3, false, true, true, false);
        let o = s.out();
        assert_eq!(o.all.woken_after_halt.n, 1);
        assert!((o.all.woken_after_halt.max_s - 0.5e-3).abs() < 1e-12);
    }

    #[test]
    fn quantiles_are_ordered_and_tails_nested() {
        let mut s = HostSpells::new(1);
        let mut t = 0.0;
        for k in 0..1000u32 {
            // A deterministic spread of waits up to 9.99 ms after each halt.
            s.planned(0, t, false, false, true, false);
            t += f64::from((k * 7919) % 1000) * 1e-5;
            s.planned(0, t, false, true, true, false);
            t += 1e-4;
            s.planned(0, t, true, false, false, false);
        }
        let d = s.out().all.woken_after_halt;
        assert_eq!(d.n, 1000);
        assert!(d.median_s <= d.p90_s && d.p90_s <= d.p99_s && d.p99_s <= d.max_s, "{d:?}");
        assert!(d.over_4ms <= d.over_2ms && d.over_2ms <= d.over_1ms && d.over_1ms <= d.n, "{d:?}");
    }
}
