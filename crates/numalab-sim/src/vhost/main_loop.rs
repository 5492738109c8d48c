//! QEMU's main loop as a host thread of its own (docs/scheduler.md §10.14), for `mttcg`.
//!
//! QEMU 7.2 `util/main-loop.c: main_loop_wait()` sleeps in `qemu_poll_ns()` with the timer
//! lists' next deadline as its timeout (`timerlistgroup_deadline_ns()`, `util/qemu-timer.c`);
//! `os_host_main_loop_wait()` releases the BQL only around that poll. Woken, it holds the BQL
//! through `qemu_clock_run_all_timers()`, which runs every timer expired by then: the vCPUs'
//! local APIC timers (`hw/intc/apic.c: apic_timer()` → `apic_local_deliver()` →
//! `cpu_interrupt()` → `softmmu/cpus.c: qemu_cpu_kick()`: `cpu_exit()` for a vCPU in its
//! translated code, the halt condition's broadcast for a halted one). A kicked vCPU thread takes
//! the BQL to handle the interrupt (`accel/tcg/cpu-exec.c: cpu_handle_interrupt()`,
//! `accel/tcg/tcg-accel-ops-mttcg.c: mttcg_cpu_thread_fn()`), so it goes on only once the main
//! loop has let the BQL go, back to its poll.
//!
//! Here: the guest's timers are its vCPUs' ticks (`Timer`): a vCPU whose tick runs has its APIC
//! timer (one-shot: TCG offers no TSC-deadline mode, docs/scheduler.md §10.14) at the next whole
//! jiffy, set again a jiffy on once it has fired and the vCPU has run
//! (`kernel/time/tick-sched.c: tick_sched_timer()`, `hrtimer_forward()`); an idle vCPU that kept
//! its tick, at that tick (`sched/idle_tick.rs`); an idle vCPU that stopped it has none (its next
//! event's one-shot timer is not modelled). The thread sleeps until the earliest (or a timer set
//! before every pending one), wakes on the host's EEVDF with its lag (`eevdf.rs`), runs `run_s`
//! of host time once a core picks it, and the timers expired when it started running are
//! delivered when it sleeps again (the BQL let go).

/// A vCPU's local APIC timer as the guest's kernel arms it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timer {
    /// Its tick runs: every whole jiffy.
    Tick,
    /// Idle with its tick kept: at that tick, `s` seconds.
    At(f64),
}

/// Where the main loop thread is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// In its poll, until its next timer.
    Asleep,
    /// Woken, runnable, not yet run.
    Woken,
    /// Running its timers from `since`, `left` seconds of its run to go.
    Running { since: f64, left: f64 },
}

pub(super) struct MainLoop {
    run_s: f64,
    tick_s: f64,
    state: State,
    /// Per vCPU: its APIC timer's expiry, if armed, and whether it is the periodic tick's.
    armed: Vec<Option<(f64, bool)>>,
    /// The timers expired by this time have been delivered (the BQL let go after running them).
    through_s: f64,
    /// The vCPUs whose timers the last finished run delivered.
    kicked: Vec<bool>,
    /// The vCPUs whose guest programmed their timer since the last plan (a TMICT write).
    programmed: Vec<bool>,
    /// At the last `arm`: the vCPUs whose write set a timer before every pending one (each
    /// notified the loop), and if that woke it, the earliest timer then expired (+inf if none):
    /// the write woke it only if made before (docs/scheduler.md §10.58).
    notifiers: Vec<bool>,
    woken_by_write: Option<f64>,
    /// Wake-ups, and of those by a timer newly set first (`qemu_notify_event()`).
    pub(super) wakes: u64,
    pub(super) notified: u64,
}

impl MainLoop {
    pub(super) fn new(run_s: f64, tick_s: f64, vcpus: usize) -> Self {
        MainLoop {
            run_s,
            tick_s,
            state: State::Asleep,
            armed: vec![None; vcpus],
            through_s: f64::NEG_INFINITY,
            kicked: vec![false; vcpus],
            programmed: vec![false; vcpus],
            notifiers: vec![false; vcpus],
            woken_by_write: None,
            wakes: 0,
            notified: 0,
        }
    }

    /// The timers expired by this time have been delivered to their vCPUs.
    pub(super) fn through_s(&self) -> f64 {
        self.through_s
    }

    /// At a plan from `now_s`, the vCPUs' timers as the guest arms them now; a vCPU changes its
    /// timer only if the host ran it since the last plan (`ran`: its kernel wrote the APIC's
    /// count, `hw/intc/apic.c: apic_mem_write()` → `apic_timer_update()` → `timer_mod()`, or
    /// `timer_del()` for a stopped tick). A tick the main loop fired is gone (`apic_timer()`'s
    /// own `apic_timer_update()` deletes an expired one-shot timer) until its vCPU has run and
    /// set the next jiffy (`tick_sched_timer()`); one restarted (the vCPU left idle) likewise. A timer set before every other pending one wakes the main loop
    /// (`util/qemu-timer.c: timer_mod_ns()` → `timerlist_rearm()` → `timerlist_notify()` →
    /// `softmmu/cpu-timers.c: qemu_timer_notify_cb()` → `qemu_notify_event()`: its poll returns to take
    /// the new deadline); so does an expired one. Whether the thread is runnable.
    pub(super) fn arm(&mut self, timers: &[Option<Timer>], ran: &[bool], now_s: f64) -> bool {
        let (tick, through) = (self.tick_s, self.through_s);
        let mut notified = false;
        self.programmed.fill(false);
        self.notifiers.fill(false);
        self.woken_by_write = None;
        for c in (0..self.armed.len()).filter(|&c| ran[c]) {
            let old = self.armed[c];
            let new = match (timers[c], old) {
                (Some(Timer::Tick), Some((s, true))) if s > through => Some((s, true)),
                (Some(Timer::Tick), _) => Some((jiffy_after(now_s, tick), true)),
                (Some(Timer::At(s)), _) => Some((s, false)),
                (None, _) => None,
            };
            if new == old {
                continue;
            }
            self.armed[c] = new;
            self.programmed[c] = new.is_some();
            // `timer_mod_ns_locked()` puts it after the pending timers expiring no later: it heads
            // the list only if strictly earlier than all of them.
            if let Some((s, _)) = new.filter(|&(s, _)| s > through) {
                let head = (0..self.armed.len())
                    .filter(|&o| o != c)
                    .filter_map(|o| self.armed[o].map(|(x, _)| x))
                    .filter(|&x| x > through)
                    .min_by(f64::total_cmp);
                let first = head.is_none_or(|h| s < h);
                self.notifiers[c] = first;
                notified |= first;
            }
        }
        let expired = self.next_timer().filter(|&s| s <= now_s + 1e-12);
        if self.state == State::Asleep && (notified || expired.is_some()) {
            self.state = State::Woken;
            self.woken_by_write = notified.then(|| expired.unwrap_or(f64::INFINITY));
            self.wakes += 1;
            self.notified += u64::from(notified);
        }
        self.state != State::Asleep
    }

    /// The earliest armed timer not yet delivered: the poll's timeout.
    fn next_timer(&self) -> Option<f64> {
        self.armed.iter().flatten().map(|&(s, _)| s).filter(|&s| s > self.through_s).min_by(f64::total_cmp)
    }

    /// The plan from `now_s` gave the thread a core (`holds`) or not; true if its run starts.
    pub(super) fn planned(&mut self, holds: bool, now_s: f64) -> bool {
        let starts = holds && self.state == State::Woken;
        if starts {
            self.state = State::Running { since: now_s, left: self.run_s };
        }
        starts
    }

    /// Woken from its poll and not yet run: its first step takes the BQL.
    pub(super) fn woken(&self) -> bool {
        self.state == State::Woken
    }

    /// If the last `arm` woke the thread with a write that notified it: the vCPUs whose write
    /// did, and the earliest timer expired then (+inf if none), which would have woken it anyway.
    pub(super) fn woken_by_write(&self) -> Option<(&[bool], f64)> {
        self.woken_by_write.map(|e| (&self.notifiers[..], e))
    }

    /// The vCPUs whose guest set their timer at the last `arm` (not a `timer_del()`).
    pub(super) fn programmed(&self) -> &[bool] {
        &self.programmed
    }

    /// The thread ran `dt` seconds holding a core: its run over, it delivers the timers expired
    /// when it started (the vCPUs' kicks) and sleeps at the next plan. True if it just ended.
    pub(super) fn charge(&mut self, dt: f64) -> bool {
        let State::Running { since, left } = self.state else { return false };
        let left = left - dt;
        if left > 1e-12 {
            self.state = State::Running { since, left };
            return false;
        }
        self.state = State::Asleep;
        self.through_s = since;
        for (k, a) in self.kicked.iter_mut().zip(&self.armed) {
            *k = a.is_some_and(|(s, _)| s <= since + 1e-12);
        }
        true
    }

    /// The vCPUs its last finished run kicked.
    pub(super) fn kicked(&self) -> &[bool] {
        &self.kicked
    }

    /// When the engine's next round should start, from a plan at `now_s` (the thread holding a
    /// core or not): the end of its run, or its next timer.
    pub(super) fn next_event_s(&self, holds: bool, now_s: f64) -> Option<f64> {
        match self.state {
            State::Running { left, .. } if holds => Some(now_s + left),
            State::Asleep => self.next_timer(),
            _ => None,
        }
    }
}

/// The first whole jiffy (`tick_s`) after `s`, as `sched/idle_tick.rs` places a restarted tick.
fn jiffy_after(s: f64, tick_s: f64) -> f64 {
    ((s / tick_s + 1e-9).floor() + 1.0) * tick_s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arm, and if woken run to the end of its 16 µs at once; whether it woke.
    fn arm_and_run(m: &mut MainLoop, timers: &[Option<Timer>], ran: &[bool], now_s: f64) -> bool {
        if !m.arm(timers, ran, now_s) {
            return false;
        }
        m.planned(true, now_s);
        assert!(m.charge(16e-6));
        true
    }

    #[test]
    fn the_loop_wakes_for_an_expired_timer_or_one_set_before_every_other_pending_one() {
        let tick = Some(Timer::Tick);
        let mut m = MainLoop::new(16e-6, 4e-3, 2);
        // A vCPU that has not run sets nothing.
        assert!(!m.arm(&[tick, tick], &[false, false], 0.5e-3));
        // vCPU 0 sets its tick (4 ms) onto an empty list: `timer_mod_ns()` notifies. vCPU 1's,
        // set to the same expiry after it, does not head the list.
        assert!(arm_and_run(&mut m, &[tick, tick], &[true, true], 1e-3));
        assert_eq!((m.wakes, m.notified), (1, 1));
        // Nothing due at the run (1 ms): nothing delivered; the poll's timeout is the ticks.
        assert_eq!(m.kicked(), &[false, false]);
        assert_eq!(m.next_event_s(false, 1.016e-3), Some(4e-3));
        assert!(!m.arm(&[tick, tick], &[true, true], 2e-3));
        // The jiffy: both ticks run, delivered when the loop's run ends.
        assert!(arm_and_run(&mut m, &[tick, tick], &[true, true], 4e-3));
        assert_eq!((m.wakes, m.notified, m.through_s()), (2, 1, 4e-3));
        assert_eq!(m.kicked(), &[true, true]);
        // vCPU 0 ran and re-armed at the next jiffy, first of all: it wakes the loop again.
        // vCPU 1 did not run: its fired tick waits.
        assert!(arm_and_run(&mut m, &[tick, tick], &[true, false], 4.1e-3));
        assert_eq!((m.wakes, m.notified), (3, 2));
        // vCPU 1 re-arms at the same jiffy, behind vCPU 0's: no wake-up.
        assert!(!m.arm(&[tick, tick], &[true, true], 4.2e-3));
        // vCPU 1 idles with its tick stopped (`timer_del()`): no wake-up either.
        assert!(!m.arm(&[tick, None], &[true, true], 4.3e-3));
        assert_eq!(m.next_event_s(false, 4.3e-3), Some(8e-3));
    }
}
