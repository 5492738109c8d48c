//! The host's EEVDF for `mttcg`'s vCPU threads (Linux 6.18 `kernel/sched/fair.c`,
//! docs/scheduler.md §10.5): every thread nice 0, so virtual time is host time
//! (`calc_delta_fair()` of a `NICE_0_LOAD` entity) and every weight is one. Integer nanoseconds,
//! as the kernel's, so its ties and eligibility tests come out exact.
//!
//! - A running thread's vruntime grows with the host time it gets; when it passes its deadline,
//!   the next `update_curr()` (the tick, or an event on its queue) gives it a new one a request
//!   later (`update_deadline()`) and asks for a pick.
//! - A vCPU thread that halts sleeps (`dequeue_entity()` with `DEQUEUE_SLEEP`): eligible, it
//!   keeps its lag, the queue's average less its vruntime, clamped to ±max(2 requests, a tick)
//!   (`update_entity_lag()`); not eligible, it stays queued, delayed (`DELAY_DEQUEUE`), until a
//!   pick chooses it, which dequeues it with lag 0 (`finish_delayed_dequeue_entity()`,
//!   `DELAY_ZERO`).
//! - Woken, it is placed at the average less its lag scaled by (W + w) / W (`place_entity()`,
//!   `PLACE_LAG`), its deadline a request later; a delayed one is requeued where it is, or at the
//!   average if it has become eligible meanwhile (`requeue_delayed_entity()`, `DELAY_ZERO`).
//!   Then `check_preempt_wakeup_fair()`: `update_curr()` of the running thread, and a switch
//!   when `__pick_eevdf()` with the running thread's slice protected (`RUN_TO_PARITY`; no
//!   `PREEMPT_SHORT`, every thread has the base slice) picks the woken one.
//! - A pick (`__pick_eevdf()`): the running thread while it is eligible (vruntime not past the
//!   queue's average) and protected (vruntime before `vprot`, its deadline when picked:
//!   `set_protect_slice()` with equal slices); else the eligible entity with the earliest
//!   deadline, the running one only if strictly earlier (`entity_before()`).
//!
//! Several host cores share one queue here (the kernel has one per CPU and balances them): a
//! free core picks from it, and a woken thread is checked against the running ones in core order
//! until one switches.

/// Nanoseconds of `s` seconds.
fn ns(s: f64) -> i64 {
    (s * 1e9).round() as i64
}

#[derive(Clone, Copy, Default, Debug)]
struct Entity {
    vruntime: i64,
    deadline: i64,
    vprot: i64,
    vlag: i64,
    /// On the queue (running, waiting or delayed).
    queued: bool,
    /// Halted while not eligible, kept on the queue (`sched_delayed`).
    delayed: bool,
}

pub(super) struct Eevdf {
    request: i64,
    tick: i64,
    cores: usize,
    e: Vec<Entity>,
    /// Host time so far and ticks seen: the tick comes every `tick` on every core.
    clock: i64,
    ticks: i64,
    /// The average of the last non-empty queue: where a thread waking onto an empty queue goes
    /// (`min_vruntime`'s role; a lone entity's lag is not applied).
    zero: i64,
    /// The guest's tick (1 / its `CONFIG_HZ`), if its interrupts make running vCPU threads wait
    /// for QEMU's BQL (`set_guest_tick`), and the guest ticks seen.
    guest_tick: Option<i64>,
    guest_ticks: i64,
    /// The vCPU threads, the first entities: only they block on the BQL at a guest tick (the
    /// host's other threads are not QEMU's).
    vcpus: usize,
}

impl Eevdf {
    /// `threads` entities, the first `vcpus` of them the guest's vCPU threads.
    pub(super) fn new(request_s: f64, tick_s: f64, cores: usize, threads: usize, vcpus: usize) -> Self {
        Eevdf {
            request: ns(request_s).max(1),
            tick: ns(tick_s).max(1),
            cores,
            e: vec![Entity::default(); threads],
            clock: 0,
            ticks: 0,
            zero: 0,
            guest_tick: None,
            guest_ticks: 0,
            vcpus,
        }
    }

    /// The guest's tick, every `tick_s` on every vCPU (`CONFIG_HZ`, the jiffy-aligned tick of
    /// `kernel/time/tick-sched.c: tick_init_jiffy_update()`): its local APIC timer fires in QEMU's
    /// main loop, which holds the BQL (docs/scheduler.md §10.13), so at each one a running vCPU
    /// thread blocks on the BQL and is woken when the main loop lets it go (`plan`).
    pub(super) fn set_guest_tick(&mut self, tick_s: f64) {
        self.guest_tick = Some(ns(tick_s).max(1));
    }

    /// Sum of the queued vruntimes and their number (`avg_vruntime()`'s sums).
    fn sums(&self) -> (i128, i128) {
        self.e.iter().filter(|x| x.queued).fold((0, 0), |(s, n), x| (s + x.vruntime as i128, n + 1))
    }

    /// `avg_vruntime()`: the weighted (here plain) mean, rounded down; an empty queue's zero.
    fn avg(&self) -> i64 {
        let (s, n) = self.sums();
        if n == 0 {
            self.zero
        } else {
            s.div_euclid(n) as i64
        }
    }

    /// `vruntime_eligible()`: not past the average, tested without division.
    fn eligible(&self, c: usize) -> bool {
        let (s, n) = self.sums();
        s >= self.e[c].vruntime as i128 * n
    }

    fn note_zero(&mut self) {
        if self.e.iter().any(|x| x.queued) {
            self.zero = self.avg();
        }
    }

    /// `update_curr()` of running thread `c`: a new deadline once past it; whether it asks for a
    /// pick (its deadline renewed or its protection over, with another entity queued).
    fn update_curr(&mut self, c: usize) -> bool {
        let x = &mut self.e[c];
        let renewed = x.vruntime >= x.deadline;
        if renewed {
            x.deadline = x.vruntime + self.request;
        }
        let others = self.e.iter().filter(|y| y.queued).count() > 1;
        others && (renewed || self.e[c].vruntime >= self.e[c].vprot)
    }

    /// `__pick_eevdf()` among the queued entities no core runs, and `curr` (this core's running
    /// thread, if still queued); `protect`: `RUN_TO_PARITY`'s slice protection.
    fn pick(&self, holds: &[bool], curr: Option<usize>, protect: bool) -> Option<usize> {
        let waiting = |c: usize| self.e[c].queued && !holds[c] && Some(c) != curr;
        let curr = curr.filter(|&c| self.e[c].queued);
        if !(0..self.e.len()).any(waiting) {
            return curr;
        }
        let curr = curr.filter(|&c| self.eligible(c));
        if let Some(c) = curr.filter(|&c| protect && self.e[c].vruntime < self.e[c].vprot) {
            return Some(c);
        }
        // The tree is ordered by deadline, an equal one after those already there; CPU order
        // stands in for queueing order.
        let best = (0..self.e.len())
            .filter(|&c| waiting(c) && self.eligible(c))
            .min_by(|&a, &b| self.e[a].deadline.cmp(&self.e[b].deadline).then(a.cmp(&b)));
        match (best, curr) {
            (Some(b), Some(c)) if self.e[c].deadline < self.e[b].deadline => Some(c),
            // A free core with threads waiting, none eligible against the one shared queue
            // (the running ones on the other cores pull its average down): the kernel's cores
            // have a queue each, where a lone entity is always eligible, and an idle one pulls
            // a waiting thread (`sched_balance_newidle()`), so it runs the earliest deadline.
            (None, None) => (0..self.e.len())
                .filter(|&c| waiting(c))
                .min_by(|&a, &b| self.e[a].deadline.cmp(&self.e[b].deadline).then(a.cmp(&b))),
            (None, c) => c,
            (b, _) => b,
        }
    }

    /// Halted thread `c` sleeps (`dequeue_entity()`, `DEQUEUE_SLEEP`).
    fn sleep(&mut self, c: usize) {
        let lag = self.avg() - self.e[c].vruntime;
        if !self.eligible(c) {
            self.e[c].delayed = true;
            return;
        }
        let limit = (2 * self.request).max(self.tick);
        self.e[c].vlag = lag.clamp(-limit, limit);
        self.e[c].queued = false;
        self.note_zero();
    }

    /// Thread `c` wakes (`enqueue_entity()`: `requeue_delayed_entity()` or `place_entity()`).
    fn wake(&mut self, c: usize) {
        if self.e[c].delayed {
            self.e[c].delayed = false;
            if self.avg() - self.e[c].vruntime <= 0 {
                return;
            }
            self.e[c].vlag = 0;
        }
        self.e[c].queued = false;
        let (_, n) = self.sums();
        let avg = self.avg();
        let lag = if n > 0 { (self.e[c].vlag as i128 * (n + 1) / n) as i64 } else { 0 };
        let x = &mut self.e[c];
        x.vruntime = avg - lag;
        x.deadline = x.vruntime + self.request;
        x.queued = true;
    }

    /// The cores' threads from now on (`holds`, updated), given which vCPUs have work; returns
    /// the threads that left their core for the BQL at a guest tick (`set_guest_tick`).
    pub(super) fn plan(&mut self, busy: &[bool], holds: &mut [bool]) -> Vec<bool> {
        let n = self.e.len();
        let mut resched = vec![false; n];
        // The tick on every core since the last plan.
        let ticks = self.clock / self.tick;
        if ticks > self.ticks {
            self.ticks = ticks;
            for c in 0..n {
                if holds[c] && busy[c] {
                    resched[c] |= self.update_curr(c);
                }
            }
        }
        let cycled = self.bql_at_guest_tick(busy, holds, &mut resched);
        for c in 0..n {
            if !busy[c] && self.e[c].queued && !self.e[c].delayed {
                // `dequeue_entity()` updates the sleeper's time first.
                if holds[c] {
                    self.update_curr(c);
                }
                self.sleep(c);
                holds[c] = false;
            }
        }
        for (c, &b) in busy.iter().enumerate() {
            if b && (!self.e[c].queued || self.e[c].delayed) {
                self.wake(c);
                if holds.iter().filter(|&&h| h).count() < self.cores {
                    continue;
                }
                // `check_preempt_wakeup_fair()` against the running threads in core order.
                for r in 0..n {
                    if !holds[r] || resched[r] {
                        continue;
                    }
                    resched[r] |= self.update_curr(r);
                    if !resched[r] && self.pick(holds, Some(r), true) == Some(c) {
                        resched[r] = true;
                    }
                    if resched[r] {
                        break;
                    }
                }
            }
        }
        self.pick_cores(holds, &resched);
        self.note_zero();
        cycled
    }

    /// At a guest tick since the last plan: the main loop runs the vCPUs' APIC timers holding the
    /// BQL (QEMU 7.2 `util/main-loop.c: os_host_main_loop_wait()` takes it after its poll,
    /// `qemu_clock_run_all_timers()` → `hw/intc/apic.c: apic_timer()` → `cpu_interrupt()` →
    /// `qemu_cpu_kick()`); a running vCPU thread, kicked out of its translated code, takes the
    /// BQL to handle the interrupt (`accel/tcg/cpu-exec.c: cpu_handle_interrupt()`, then
    /// `accel/tcg/tcg-accel-ops-mttcg.c: mttcg_cpu_thread_fn()` after `tcg_cpus_exec()`), so it
    /// blocks on the futex (`dequeue_entity()`, `DEQUEUE_SLEEP`: lag kept or delayed) and the
    /// main loop's unlock wakes it (`place_entity()` with its lag, or requeued if delayed). Taken
    /// as one instant with the wake-ups of the vCPUs whose timers fired at the same jiffy: the
    /// core's next thread is then picked among all of them (`__pick_eevdf()`, nothing protected).
    /// Left out: the main loop's own run (18 µs a wake-up, measured) and the BQL's handing on
    /// from thread to thread.
    fn bql_at_guest_tick(&mut self, busy: &[bool], holds: &mut [bool], resched: &mut [bool]) -> Vec<bool> {
        let mut cycled = vec![false; self.e.len()];
        let Some(gt) = self.guest_tick else { return cycled };
        let ticks = self.clock / gt;
        if ticks <= self.guest_ticks {
            return cycled;
        }
        self.guest_ticks = ticks;
        for c in 0..self.vcpus {
            if holds[c] && busy[c] && self.block_on_bql(c, holds) {
                resched[c] = false;
                cycled[c] = true;
            }
        }
        cycled
    }

    /// Running thread `c` blocks on the BQL (`dequeue_entity()`, `DEQUEUE_SLEEP`: its lag kept,
    /// or delayed if not eligible) and leaves its core; the plan that sees it busy wakes it when
    /// the BQL is let go. False if it was not on the queue to block.
    pub(super) fn block_on_bql(&mut self, c: usize, holds: &mut [bool]) -> bool {
        if !self.e[c].queued || self.e[c].delayed {
            return false;
        }
        self.update_curr(c);
        self.sleep(c);
        holds[c] = false;
        true
    }

    /// Picks: the cores asked to (`resched`, their running thread given up) and the free ones.
    fn pick_cores(&mut self, holds: &mut [bool], resched: &[bool]) {
        let n = self.e.len();
        let mut currs: Vec<Option<usize>> = (0..n).filter(|&c| resched[c]).map(Some).collect();
        for c in 0..n {
            holds[c] &= !resched[c];
        }
        let free = self.cores.saturating_sub(holds.iter().filter(|&&h| h).count() + currs.len());
        currs.extend((0..free).map(|_| None));
        for curr in currs {
            while let Some(p) = self.pick(holds, curr, true) {
                if self.e[p].delayed {
                    // `pick_next_entity()` dequeues a delayed entity it picks, lag 0.
                    self.e[p].delayed = false;
                    self.e[p].queued = false;
                    self.e[p].vlag = 0;
                    continue;
                }
                if Some(p) != curr {
                    self.e[p].vprot = self.e[p].deadline;
                }
                holds[p] = true;
                break;
            }
        }
    }

    /// The running threads ran `dt` seconds of host time.
    pub(super) fn charge(&mut self, holds: &[bool], dt: f64) {
        let d = ns(dt);
        self.clock += d;
        for (x, &h) in self.e.iter_mut().zip(holds) {
            if h {
                x.vruntime += d;
            }
        }
    }

    /// Each thread's vruntime, lag kept over its last halt and deadline, in seconds.
    #[cfg(test)]
    pub(super) fn state_s(&self, c: usize) -> (f64, f64, f64) {
        let x = &self.e[c];
        (x.vruntime as f64 * 1e-9, x.vlag as f64 * 1e-9, x.deadline as f64 * 1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_core_runs_a_waiting_thread_even_when_none_is_eligible_in_the_shared_queue() {
        // Two cores, three threads: thread 0 runs far behind (vruntime 0), so the queue's
        // average (10 ms) sits below threads 1 and 2 (15 ms each), neither eligible. A real host's
        // second CPU would run one of them from its own queue; core 2 must not stay idle.
        let mut e = Eevdf::new(1.5e-3, 4e-3, 2, 3, 3);
        for (x, (v, d)) in e.e.iter_mut().zip([(0, 1_500_000), (15_000_000, 17_000_000), (15_000_000, 16_500_000)]) {
            (x.vruntime, x.deadline, x.queued) = (v, d, true);
        }
        let mut holds = [true, false, false];
        assert!(!e.eligible(1) && !e.eligible(2));
        e.pick_cores(&mut holds, &[false, false, false]);
        assert_eq!(holds, [true, false, true], "the earliest deadline of the waiting threads runs");
    }

    #[test]
    fn at_a_guest_tick_only_the_vcpu_threads_block_on_the_bql() {
        // Two cores, a vCPU thread and one of the host's other threads, both running: at the
        // guest's tick the vCPU's thread waits for QEMU's BQL, the other thread is not QEMU's.
        let mut e = Eevdf::new(1.5e-3, 4e-3, 2, 2, 1);
        e.set_guest_tick(4e-3);
        let mut holds = [false, false];
        e.plan(&[true, true], &mut holds);
        assert_eq!(holds, [true, true]);
        e.charge(&holds, 4e-3);
        assert_eq!(e.plan(&[true, true], &mut holds), vec![true, false]);
    }

    #[test]
    fn a_sleepers_lag_is_clamped_to_two_requests_or_a_tick() {
        // Two queued threads 20 ms apart (average 10): the one behind sleeps with lag 10 ms,
        // kept as max(2 x 1.5, 4) = 4 ms (`update_entity_lag()`); with 3 ms requests, 6 ms.
        for (request_s, kept) in [(1.5e-3, 4_000_000), (3e-3, 6_000_000)] {
            let mut e = Eevdf::new(request_s, 4e-3, 1, 2, 2);
            for (x, v) in e.e.iter_mut().zip([20_000_000, 0]) {
                x.vruntime = v;
                x.queued = true;
            }
            e.sleep(1);
            assert_eq!(e.e[1].vlag, kept);
            assert!(!e.e[1].queued);
        }
    }

    #[test]
    fn a_lag_is_scaled_by_the_queue_it_joins() {
        // `place_entity()`: lag 3 ms onto a queue of two at 10 ms: 10 - 3 x (2 + 1) / 2.
        let mut e = Eevdf::new(1.5e-3, 4e-3, 1, 3, 3);
        for (x, v) in e.e.iter_mut().zip([10_000_000, 10_000_000]) {
            x.vruntime = v;
            x.queued = true;
        }
        e.e[2].vlag = 3_000_000;
        e.wake(2);
        assert_eq!(e.e[2].vruntime, 5_500_000);
        assert_eq!(e.e[2].deadline, 7_000_000);
    }
}
