//! A task's estimated utilisation (`UTIL_EST`, on in `kernel/sched/features.h` of 6.1 and
//! 6.13): the utilisation it had when it last went to sleep, smoothed on decreases. The run
//! queue sums the estimates of its queued tasks (`util_est_enqueue()`, `util_est_dequeue()`);
//! `cpu_util_cfs()` reads the larger of that sum and `util_avg`, and `detach_tasks()` moves a task
//! by `task_util_est()`, the larger of its estimate and its `util_avg`. So a task that waits on a
//! run queue, its `util_avg` decaying, still weighs what it used when it last ran.

use super::pelt::CAPACITY;
use crate::profile::UtilEst;

/// `UTIL_EST_MARGIN`: `SCHED_CAPACITY_SCALE / 100`.
const MARGIN: i64 = (CAPACITY / 100) as i64;
/// `UTIL_EST_WEIGHT_SHIFT` (`include/linux/sched.h`): a new sample weighs 1/4.
const WEIGHT_SHIFT: u32 = 2;

/// One task's `p->se.avg.util_est`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct TaskUtilEst {
    /// v6.1 `util_est.ewma`, v6.13 the single `util_est`.
    ewma: u64,
    /// v6.1 `util_est.enqueued`: `task_util()` at the last sleep.
    enqueued: u64,
    /// `UTIL_AVG_UNCHANGED`: set by an update, cleared when PELT recomputes the task's averages
    /// while it is on a run queue (`__update_load_avg_se()`: `cfs_se_util_change()`).
    unchanged: bool,
}

impl TaskUtilEst {
    /// `_task_util_est()`: v6.1 `max(ewma, enqueued)`, v6.13 the estimate; 0 without `UTIL_EST`.
    pub(super) fn estimate(&self, form: UtilEst) -> u64 {
        match form {
            UtilEst::Off => 0,
            UtilEst::EnqueuedEwma => self.ewma.max(self.enqueued),
            UtilEst::Ewma => self.ewma,
        }
    }

    /// The task's PELT averages were recomputed while it was queued.
    pub(super) fn util_changed(&mut self) {
        self.unchanged = false;
    }

    /// `util_est_update()` at a dequeue for sleep, the task's `task_util()` being `util` and
    /// `task_runnable()` `runnable`, on a CPU of capacity `CAPACITY`.
    pub(super) fn went_to_sleep(&mut self, form: UtilEst, util: u64, runnable: u64) {
        if form == UtilEst::Off || self.unchanged {
            return;
        }
        // The kernel works on a copy and writes it back only at `done:`.
        let mut next = *self;
        let done = match form {
            UtilEst::Off => return,
            UtilEst::EnqueuedEwma => next.update_61(util),
            UtilEst::Ewma => next.update_613(util, runnable),
        };
        if done {
            next.unchanged = true;
            *self = next;
        }
    }

    /// v6.1: `enqueued` takes `util`; an increase resets `ewma` (`UTIL_EST_FASTUP`); within 1 %
    /// of `ewma` nothing more (the flag set only if `enqueued` moved by 1 % or more); a task
    /// above the CPU's capacity is skipped; else `ewma += (util - ewma) / 4`. Returns whether
    /// the update reached `done:` (which sets `UTIL_AVG_UNCHANGED`).
    fn update_61(&mut self, util: u64) -> bool {
        let last_enqueued = self.enqueued as i64;
        self.enqueued = util;
        if self.ewma < util {
            self.ewma = util;
            return true;
        }
        let last_ewma_diff = util as i64 - self.ewma as i64;
        if last_ewma_diff.abs() < MARGIN {
            return (last_enqueued - util as i64).abs() >= MARGIN;
        }
        if util > CAPACITY {
            return false;
        }
        self.ewma = (((self.ewma << WEIGHT_SHIFT) as i64 + last_ewma_diff) >> WEIGHT_SHIFT) as u64;
        true
    }

    /// v6.13: an increase resets the estimate; a decrease under 1 % keeps it; a task above the
    /// capacity is skipped (flag not set); one that waited for the CPU (`util + 1 % <
    /// runnable`) keeps it; else `ewma -= (ewma - util) / 4`.
    fn update_613(&mut self, util: u64, runnable: u64) -> bool {
        if self.ewma <= util {
            self.ewma = util;
            return true;
        }
        let last_ewma_diff = self.ewma - util;
        if (last_ewma_diff as i64) < MARGIN {
            return true;
        }
        if util > CAPACITY {
            return false;
        }
        if util as i64 + MARGIN < runnable as i64 {
            return true;
        }
        self.ewma = ((self.ewma << WEIGHT_SHIFT) - last_ewma_diff) >> WEIGHT_SHIFT;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slept(form: UtilEst, samples: &[(u64, u64)]) -> TaskUtilEst {
        let mut ue = TaskUtilEst::default();
        for &(util, runnable) in samples {
            ue.went_to_sleep(form, util, runnable);
            ue.util_changed();
        }
        ue
    }

    #[test]
    fn an_increase_is_taken_at_once_a_decrease_a_quarter_at_a_time() {
        // 6.1: 400 then 200: enqueued 200, ewma (3 x 400 + 200) / 4 = 350; the estimate 350.
        let ue = slept(UtilEst::EnqueuedEwma, &[(400, 400), (200, 200)]);
        assert_eq!((ue.ewma, ue.enqueued), (350, 200));
        assert_eq!(ue.estimate(UtilEst::EnqueuedEwma), 350);
        // Then 600: FASTUP resets ewma, and enqueued is 600.
        let ue = slept(UtilEst::EnqueuedEwma, &[(400, 400), (200, 200), (600, 600)]);
        assert_eq!(ue.estimate(UtilEst::EnqueuedEwma), 600);
        // 6.13: the same samples with the task never waiting: 400 - 200 / 4 = 350.
        let ue = slept(UtilEst::Ewma, &[(400, 400), (200, 200)]);
        assert_eq!(ue.estimate(UtilEst::Ewma), 350);
        assert_eq!(ue.estimate(UtilEst::Off), 0);
    }

    #[test]
    fn v613_keeps_the_estimate_of_a_task_that_waited_for_the_cpu() {
        // runnable 500 above util 200 + 1 %: it did not get the CPU it wanted.
        let ue = slept(UtilEst::Ewma, &[(400, 400), (200, 500)]);
        assert_eq!(ue.estimate(UtilEst::Ewma), 400);
        // v6.1 has no such test.
        let ue = slept(UtilEst::EnqueuedEwma, &[(400, 400), (200, 500)]);
        assert_eq!(ue.estimate(UtilEst::EnqueuedEwma), 350);
    }

    #[test]
    fn a_sleep_without_new_pelt_averages_leaves_the_estimate() {
        let mut ue = TaskUtilEst::default();
        ue.went_to_sleep(UtilEst::EnqueuedEwma, 400, 400);
        // UTIL_AVG_UNCHANGED: woken and asleep again within one PELT period.
        ue.went_to_sleep(UtilEst::EnqueuedEwma, 100, 100);
        assert_eq!(ue.estimate(UtilEst::EnqueuedEwma), 400);
        ue.util_changed();
        ue.went_to_sleep(UtilEst::EnqueuedEwma, 100, 100);
        assert_eq!(ue.estimate(UtilEst::EnqueuedEwma), (3 * 400 + 100) / 4);
    }

    #[test]
    fn within_one_percent_the_ewma_stays() {
        // 6.1: 400 then 395: within the margin of ewma and of enqueued: nothing is written.
        let mut ue = slept(UtilEst::EnqueuedEwma, &[(400, 400)]);
        ue.went_to_sleep(UtilEst::EnqueuedEwma, 395, 395);
        assert_eq!((ue.ewma, ue.enqueued, ue.unchanged), (400, 400, false));
        // 6.13: a decrease under the margin is written back as it was, flag set.
        let mut ue = slept(UtilEst::Ewma, &[(400, 400)]);
        ue.went_to_sleep(UtilEst::Ewma, 395, 395);
        assert_eq!((ue.ewma, ue.unchanged), (400, true));
    }
}
