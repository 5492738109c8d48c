//! The host model's hooks (`crate::vhost`, docs/scheduler.md §10.5): at each round of a slice
//! (`visits.rs: run_slice`) the host gives its cores to some of the guest's non-halted vCPUs; a thread whose vCPU it does not run
//! stands still while its clock, its turn and everything the guest's kernel times go on.

use super::*;

impl Engine<'_> {
    /// Which CPUs the host runs from `t` (a round of a slice: the host switches vCPUs at
    /// rounds). A vCPU is halted when none of its threads runs or spins at a barrier and no
    /// background work runs there.
    pub(super) fn host_plan(&mut self, t: f64) {
        let spin = self.spin_s();
        let Some((host, runs)) = self.host.as_mut() else { return };
        let mut busy: Vec<bool> = (0..runs.len()).map(|c| self.sched.background_at(c, t)).collect();
        for (tid, th) in self.threads.iter().enumerate() {
            if live_at(th, t, spin) {
                busy[self.sched.cpu[tid]] = true;
            }
        }
        // A vCPU kicked to balance the idle ones leaves its halt (the IPI, `vcpu_newidle.rs`).
        // So does an idle vCPU whose kept tick has come (its timer interrupt, `idle_tick.rs`),
        // once QEMU's main loop has run the timer (at once without its thread, `vhost.rs`).
        let through = host.timers_through_s();
        for (c, b) in busy.iter_mut().enumerate() {
            let tick = self.sched.idle_tick_due_since(c, t).is_some_and(|d| d <= through + 1e-12);
            *b |= self.sched.nohz_kicked(c) || tick;
        }
        // The vCPUs' APIC timers for the main loop's poll: a running vCPU's tick, an idle one's
        // kept tick (`idle_tick_due_since` at no limit: when it comes), none if stopped.
        let timers: Vec<Option<crate::vhost::Timer>> = (0..runs.len())
            .map(|c| match busy[c] {
                true => Some(crate::vhost::Timer::Tick),
                false => self.sched.idle_tick_due_since(c, f64::INFINITY).map(crate::vhost::Timer::At),
            })
            .collect();
        host.arm_main_loop(&timers, t);
        runs.copy_from_slice(host.plan(&busy));
        let due: Vec<Option<f64>> = (0..runs.len()).map(|c| self.sched.idle_tick_due_since(c, t)).collect();
        host.note_ticks(&due, t);
        // A vCPU the host runs handles its IPIs: its wake list joins its run queue.
        let runnable: Vec<bool> = self.threads.iter().map(|th| live_at(th, t, spin)).collect();
        for (c, _) in runs.iter().enumerate().filter(|(_, &r)| r) {
            self.sched.flush_wakelist(c, t, &runnable);
        }
        // A thread woken onto a halted vCPU is switched to only when the vCPU runs again (the
        // wake-up's IPI, `kernel/sched/core.c: ttwu_queue_wakelist` / `resched_curr`); the
        // guest's `rq_cpu_time` counts from that switch (`kernel/sched/stats.h: sched_info_arrive`).
        for (c, _) in host.resumed().iter().enumerate().filter(|(_, &r)| r) {
            self.sched.turn_switched_at(c, t);
        }
    }

    /// At `t`, the end of a round: a vCPU the host ran whose last thread blocked in it balances
    /// newly idle now, from this state, before the host's next vCPUs change it, and a kicked
    /// idle vCPU the host ran balances the idle ones (`sched/vcpu_newidle.rs`). A pulled thread
    /// joins its new CPU's turns at once.
    pub(super) fn host_round_end(&mut self, t: f64) {
        let Some((host, runs)) = self.host.as_ref() else { return };
        let ran = runs.clone();
        // The host's counts so far, for a stop inside a newly idle balance (`sched/host_stop.rs`).
        for (c, ((th, &run_s), waits)) in
            host.threads().iter().zip(host.received_s()).zip(host.preempted_waits_s()).enumerate()
        {
            self.sched.host_thread_seen(c, run_s, th.involuntary, waits);
        }
        let spin = self.spin_s();
        let live: Vec<bool> = self.threads.iter().map(|th| live_at(th, t, spin)).collect();
        let from = self.sched.cpu.clone();
        let moved = self.sched.balance_where_run(t, &live, &ran);
        for &tid in &moved {
            self.moved_member(tid, from[tid]);
        }
        self.balanced_moves(&moved, self.numab.is_some().then_some(from));
    }

    /// Thread `tid` runs on a vCPU the host does not run now.
    pub(super) fn host_stopped(&self, tid: usize) -> bool {
        self.host
            .as_ref()
            .is_some_and(|(_, runs)| self.threads[tid].state == State::Running && !runs[self.sched.cpu[tid]])
    }

    /// Its vCPU not run, `tid` makes no progress up to `until`, though the guest counts the
    /// time as its own (it holds its turn, `turns.rs`).
    pub(super) fn stand_still(&mut self, tid: usize, until: f64) -> bool {
        let t = &mut self.threads[tid];
        let moved = t.clock < until;
        t.clock = t.clock.max(until);
        moved
    }

    /// The round's host time to the vCPUs that held a core.
    pub(super) fn host_charge(&mut self, dt: f64) {
        if let Some((host, _)) = self.host.as_mut() {
            host.charge(dt);
        }
    }

    /// The earliest time inside (`start`, `end`) at which a vCPU the host runs halts: no thread
    /// runs there and the last barrier spin ends (its threads sleep on the futex, the vCPU
    /// executes `hlt`). QEMU's vCPU thread then sleeps in `qemu_wait_io_event()`
    /// (`system/cpus.c`) and the host's `__schedule()` (`kernel/sched/core.c`) gives the core
    /// to the next runnable thread at once, not at the end of a round (docs/scheduler.md §10.60).
    pub(super) fn host_halt_in(&self, start: f64, end: f64) -> Option<f64> {
        let (_, runs) = self.host.as_ref()?;
        let spin = self.spin_s();
        let mut halt = vec![f64::NEG_INFINITY; runs.len()];
        let mut live = vec![false; runs.len()];
        for (tid, th) in self.threads.iter().enumerate() {
            let c = self.sched.cpu[tid];
            match th.state {
                State::Running => live[c] = true,
                State::Waiting(_) => halt[c] = halt[c].max(th.clock + spin),
                _ => {}
            }
        }
        (0..runs.len())
            .filter(|&c| runs[c] && !live[c] && !self.sched.background_at(c, start))
            .map(|c| halt[c])
            .filter(|&h| h > start + 1e-12 && h < end - 1e-12)
            .min_by(f64::total_cmp)
    }

    /// Where a round from `start` (ending at `round_end`) ends: at the host's next event inside
    /// it (QEMU's main loop thread waking or ending its run, `vhost.rs`), else at `round_end`.
    pub(super) fn host_round_split(&self, start: f64, round_end: f64) -> f64 {
        self.host
            .as_ref()
            .and_then(|(host, _)| host.next_event_s())
            .filter(|&e| e > start + 1e-12 && e < round_end - 1e-12)
            .unwrap_or(round_end)
    }

    /// The longest epoch: a host slice with the host model, else no limit.
    pub(super) fn host_max_epoch(&self) -> f64 {
        self.host.as_ref().map_or(f64::INFINITY, |(host, _)| host.max_epoch_s())
    }
}

/// A thread that keeps its vCPU busy at `t`: running, or waiting at a barrier inside libgomp's
/// spin. A spin that ends at `t` is over, so a vCPU halting at a round's end (`host_halt_in`)
/// is halted at the next round's plan.
fn live_at(th: &Thread, t: f64, spin: f64) -> bool {
    th.state == State::Running || (matches!(th.state, State::Waiting(_)) && t - th.clock < spin - 1e-12)
}
