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
//! One queue per host core, as the kernel has one per CPU (docs/scheduler.md §10.41): a woken
//! thread goes to a CPU (`placement.rs: wake_cpu`, `select_task_rq_fair()`) and is checked
//! against that CPU's running thread only; a core left with nothing pulls a waiting thread from
//! the busiest other (`sched_balance_newidle()`), and at the tick each core balances every
//! `balance_interval` (`sched_balance_rq()`). A thread moved keeps its lag and its deadline's
//! distance (`dequeue_entity()`: `update_entity_lag()`, `PLACE_REL_DEADLINE`; `place_entity()`).
//! Vruntimes compare only within a queue.

use super::placement;

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
    /// The CPU whose queue it is on, or was last on (`task_cpu()`: `prev_cpu` when woken).
    cpu: usize,
    /// Host time it last ran to (`se.exec_start`, for `task_hot()`); never run: None.
    ran_to: Option<i64>,
    /// When it was last queued or picked: the queue's `cfs_tasks` list is most recent first,
    /// and a balance takes from its tail (`detach_tasks()`).
    listed: u64,
}

pub(super) struct Eevdf {
    request: i64,
    tick: i64,
    cores: usize,
    e: Vec<Entity>,
    /// Host time so far and ticks seen: the tick comes every `tick` on every core.
    clock: i64,
    ticks: i64,
    /// Per core: the average of its queue when last non-empty, where a thread waking onto it
    /// empty goes (`min_vruntime`'s role; a lone entity's lag is not applied).
    zero: Vec<i64>,
    /// The guest's tick (1 / its `CONFIG_HZ`), if its interrupts make running vCPU threads wait
    /// for QEMU's BQL (`set_guest_tick`), and the guest ticks seen.
    guest_tick: Option<i64>,
    guest_ticks: i64,
    /// The vCPU threads, the first entities: only they block on the BQL at a guest tick (the
    /// host's other threads are not QEMU's).
    vcpus: usize,
    /// Per core: the tick of its next periodic balance (`rq->next_balance`) and the balances in
    /// a row that moved nothing (`sd->nr_balance_failed`).
    next_balance: Vec<i64>,
    failed: Vec<u32>,
    /// Queueings and picks so far, for `Entity::listed`.
    listings: u64,
    /// Per core: it ran a thread at the end of the last plan (left with none, it is newly idle).
    ran: Vec<bool>,
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
            zero: vec![0; cores],
            guest_tick: None,
            guest_ticks: 0,
            vcpus,
            next_balance: vec![0; cores],
            failed: vec![0; cores],
            listings: 0,
            ran: vec![false; cores],
        }
    }

    /// The guest's tick, every `tick_s` on every vCPU (`CONFIG_HZ`, the jiffy-aligned tick of
    /// `kernel/time/tick-sched.c: tick_init_jiffy_update()`): its local APIC timer fires in QEMU's
    /// main loop, which holds the BQL (docs/scheduler.md §10.13), so at each one a running vCPU
    /// thread blocks on the BQL and is woken when the main loop lets it go (`plan`).
    pub(super) fn set_guest_tick(&mut self, tick_s: f64) {
        self.guest_tick = Some(ns(tick_s).max(1));
    }

    /// Whether thread `c` is on core `q`'s queue.
    fn on(&self, c: usize, q: usize) -> bool {
        self.e[c].queued && self.e[c].cpu == q
    }

    /// Threads on core `q`'s queue (`cfs_rq->nr_queued`, delayed ones included).
    fn nr(&self, q: usize) -> usize {
        (0..self.e.len()).filter(|&c| self.on(c, q)).count()
    }

    /// Sum of core `q`'s queued vruntimes and their number (`avg_vruntime()`'s sums).
    fn sums(&self, q: usize) -> (i128, i128) {
        (0..self.e.len()).filter(|&c| self.on(c, q)).fold((0, 0), |(s, n), c| (s + self.e[c].vruntime as i128, n + 1))
    }

    /// `avg_vruntime()` of core `q`: the weighted (here plain) mean, rounded down; empty, its zero.
    fn avg(&self, q: usize) -> i64 {
        let (s, n) = self.sums(q);
        if n == 0 {
            self.zero[q]
        } else {
            s.div_euclid(n) as i64
        }
    }

    /// `vruntime_eligible()` on its queue: not past the average, tested without division.
    fn eligible(&self, c: usize) -> bool {
        let (s, n) = self.sums(self.e[c].cpu);
        s >= self.e[c].vruntime as i128 * n
    }

    fn note_zero(&mut self, q: usize) {
        if self.nr(q) > 0 {
            self.zero[q] = self.avg(q);
        }
    }

    /// The thread core `q` runs, if any.
    fn curr_of(&self, holds: &[bool], q: usize) -> Option<usize> {
        (0..self.e.len()).find(|&c| holds[c] && self.e[c].cpu == q)
    }

    fn list(&mut self, c: usize) {
        self.listings += 1;
        self.e[c].listed = self.listings;
    }

    /// `update_curr()` of running thread `c`: a new deadline once past it; whether it asks for a
    /// pick (its deadline renewed or its protection over, with another entity on its queue).
    fn update_curr(&mut self, c: usize) -> bool {
        let x = &mut self.e[c];
        let renewed = x.vruntime >= x.deadline;
        if renewed {
            x.deadline = x.vruntime + self.request;
        }
        let others = self.nr(self.e[c].cpu) > 1;
        others && (renewed || self.e[c].vruntime >= self.e[c].vprot)
    }

    /// `__pick_eevdf()` on core `q` among its queued entities not running, and `curr` (its
    /// running thread, if still queued); `protect`: `RUN_TO_PARITY`'s slice protection.
    fn pick(&self, q: usize, holds: &[bool], curr: Option<usize>, protect: bool) -> Option<usize> {
        let waiting = |c: usize| self.on(c, q) && !holds[c] && Some(c) != curr;
        let curr = curr.filter(|&c| self.e[c].queued);
        if !(0..self.e.len()).any(waiting) {
            return curr;
        }
        let curr = curr.filter(|&c| self.eligible(c));
        if let Some(c) = curr.filter(|&c| protect && self.e[c].vruntime < self.e[c].vprot) {
            return Some(c);
        }
        // The tree is ordered by deadline, an equal one after those already there; thread order
        // stands in for queueing order.
        let best = (0..self.e.len())
            .filter(|&c| waiting(c) && self.eligible(c))
            .min_by(|&a, &b| self.e[a].deadline.cmp(&self.e[b].deadline).then(a.cmp(&b)));
        match (best, curr) {
            (Some(b), Some(c)) if self.e[c].deadline < self.e[b].deadline => Some(c),
            (None, c) => c,
            (b, _) => b,
        }
    }

    /// Halted thread `c` sleeps (`dequeue_entity()`, `DEQUEUE_SLEEP`).
    fn sleep(&mut self, c: usize) {
        let q = self.e[c].cpu;
        let lag = self.avg(q) - self.e[c].vruntime;
        if !self.eligible(c) {
            self.e[c].delayed = true;
            return;
        }
        self.e[c].vlag = self.clamp_lag(lag);
        self.e[c].queued = false;
        self.note_zero(q);
    }

    /// `update_entity_lag()`'s limit: ±max(2 requests, a tick).
    fn clamp_lag(&self, lag: i64) -> i64 {
        let limit = (2 * self.request).max(self.tick);
        lag.clamp(-limit, limit)
    }

    /// Thread `c` wakes (`enqueue_entity()`: `requeue_delayed_entity()` or `place_entity()`) on
    /// the queue of its `cpu`.
    fn wake(&mut self, c: usize) {
        if self.e[c].delayed {
            self.e[c].delayed = false;
            if self.avg(self.e[c].cpu) - self.e[c].vruntime <= 0 {
                return;
            }
            self.e[c].vlag = 0;
        }
        self.e[c].queued = false;
        let vruntime = self.placed(c);
        let x = &mut self.e[c];
        x.vruntime = vruntime;
        x.deadline = x.vruntime + self.request;
        x.queued = true;
        self.list(c);
    }

    /// `place_entity()` of `c`, not queued, onto its `cpu`'s queue: the average less its lag
    /// scaled by (W + w) / W.
    fn placed(&self, c: usize) -> i64 {
        let q = self.e[c].cpu;
        let (_, n) = self.sums(q);
        let lag = if n > 0 { (self.e[c].vlag as i128 * (n + 1) / n) as i64 } else { 0 };
        self.avg(q) - lag
    }

    /// Waiting thread `c` moves to core `to` (`detach_task()` → `dequeue_entity()` without
    /// `DEQUEUE_SLEEP`: its lag kept, clamped, its deadline made relative, `PLACE_REL_DEADLINE`;
    /// `attach_task()` → `place_entity()` there, the deadline as far after as it was).
    fn migrate(&mut self, c: usize, to: usize) {
        let from = self.e[c].cpu;
        let lag = self.clamp_lag(self.avg(from) - self.e[c].vruntime);
        let rel_deadline = self.e[c].deadline - self.e[c].vruntime;
        self.e[c].vlag = lag;
        self.e[c].queued = false;
        self.note_zero(from);
        self.e[c].cpu = to;
        let vruntime = self.placed(c);
        let x = &mut self.e[c];
        x.vruntime = vruntime;
        x.deadline = vruntime + rel_deadline;
        x.queued = true;
        self.list(c);
    }

    /// Whether waiting thread `c` ran on its core within `sysctl_sched_migration_cost`.
    fn hot(&self, c: usize) -> bool {
        self.e[c].ran_to.is_some_and(|t| self.clock - t < placement::MIGRATION_COST_NS)
    }

    /// A balance of core `q` against the busiest other (`sched_balance_find_src_rq()`: the most
    /// threads queued, the first on ties): moves waiting, not delayed threads from its
    /// `cfs_tasks` tail while `placement::may_move` lets them, at most one if `newly_idle`
    /// (`detach_tasks()` under `CONFIG_PREEMPTION`). The threads moved.
    fn balance(&mut self, q: usize, holds: &[bool], newly_idle: bool) -> Vec<usize> {
        let Some(src) =
            (0..self.cores).filter(|&p| p != q).max_by(|&a, &b| self.nr(a).cmp(&self.nr(b)).then(b.cmp(&a)))
        else {
            return Vec::new();
        };
        let Some(mut imb) = placement::imbalance(self.nr(q), self.nr(src)) else {
            if !newly_idle {
                self.failed[q] = 0;
            }
            return Vec::new();
        };
        let mut tail: Vec<usize> =
            (0..self.e.len()).filter(|&c| self.on(c, src) && !holds[c] && !self.e[c].delayed).collect();
        tail.sort_by_key(|&c| self.e[c].listed);
        let mut moved = Vec::new();
        for c in tail {
            if !placement::may_move(imb, self.hot(c), self.failed[q]) {
                continue;
            }
            self.migrate(c, q);
            imb = placement::after_move(imb, self.failed[q]);
            moved.push(c);
            if newly_idle {
                break;
            }
        }
        if !moved.is_empty() {
            self.failed[q] = 0;
        } else if !newly_idle {
            self.failed[q] += 1;
        }
        moved
    }

    /// At a tick, each core whose next balance is due balances (`sched_balance_trigger()` →
    /// `sched_balance_domains()`; an idle core's by the busy one's kick, `nohz_balancer_kick()`),
    /// and sets its next one `balance_interval` on, busy or idle as it is after it. A thread
    /// moved may preempt the core's running one (`attach_task()` → `wakeup_preempt()`).
    fn periodic_balance(&mut self, holds: &[bool], resched: &mut [bool]) {
        for q in 0..self.cores {
            if self.ticks < self.next_balance[q] {
                continue;
            }
            for c in self.balance(q, holds, false) {
                self.check_preempt(c, holds, resched);
            }
            let busy = self.nr(q) > 0;
            self.next_balance[q] = self.ticks + placement::balance_interval_ticks(self.cores, self.tick, busy);
        }
    }

    /// `check_preempt_wakeup_fair()` of thread `c`, just queued, against its core's running
    /// thread: `update_curr()` of that, and a switch if a pick with its slice protected takes `c`.
    fn check_preempt(&mut self, c: usize, holds: &[bool], resched: &mut [bool]) {
        let Some(r) = self.curr_of(holds, self.e[c].cpu) else { return };
        if resched[r] {
            return;
        }
        resched[r] |= self.update_curr(r);
        if !resched[r] && self.pick(self.e[r].cpu, holds, Some(r), true) == Some(c) {
            resched[r] = true;
        }
    }

    /// The cores' threads from now on (`holds`, updated), given which vCPUs have work; returns
    /// the threads that left their core for the BQL at a guest tick (`set_guest_tick`).
    pub(super) fn plan(&mut self, busy: &[bool], holds: &mut [bool]) -> Vec<bool> {
        let n = self.e.len();
        let mut resched = vec![false; n];
        // The tick on every core since the last plan, then its balancing (the softirq it raises).
        let ticks = self.clock / self.tick;
        if ticks > self.ticks {
            self.ticks = ticks;
            for c in 0..n {
                if holds[c] && busy[c] {
                    resched[c] |= self.update_curr(c);
                }
            }
            self.periodic_balance(holds, &mut resched);
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
                // A delayed thread is still queued where it was (`ttwu_runnable()`); another
                // goes where `select_task_rq_fair()` puts it.
                if !self.e[c].delayed {
                    let idle: Vec<bool> = (0..self.cores).map(|q| self.nr(q) == 0).collect();
                    self.e[c].cpu = placement::wake_cpu(self.e[c].cpu, &idle);
                }
                self.wake(c);
                self.check_preempt(c, holds, &mut resched);
            }
        }
        self.pick_cores(holds, &resched);
        for q in 0..self.cores {
            self.note_zero(q);
        }
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

    /// Picks, core by core: those asked to (`resched`, their running thread given up) and the
    /// free ones; a core left with nothing that ran a thread at the last plan is newly idle and
    /// pulls one (`sched_balance_newidle()`: `avg_idle`, at least a round here, is far above a
    /// balance's cost, so it always tries).
    fn pick_cores(&mut self, holds: &mut [bool], resched: &[bool]) {
        for q in 0..self.cores {
            let mut curr = self.curr_of(holds, q);
            match curr {
                Some(r) if !resched[r] => {
                    self.ran[q] = true;
                    continue;
                }
                Some(r) => holds[r] = false,
                None => {}
            }
            let mut pulled = false;
            loop {
                match self.pick(q, holds, curr, true) {
                    Some(p) if self.e[p].delayed => {
                        // `pick_next_entity()` dequeues a delayed entity it picks, lag 0.
                        self.e[p].delayed = false;
                        self.e[p].queued = false;
                        self.e[p].vlag = 0;
                    }
                    Some(p) => {
                        if Some(p) != curr {
                            self.e[p].vprot = self.e[p].deadline;
                            self.list(p);
                        }
                        holds[p] = true;
                        break;
                    }
                    None if self.ran[q] && !pulled && self.cores > 1 => {
                        pulled = true;
                        curr = None;
                        if self.balance(q, holds, true).is_empty() {
                            break;
                        }
                    }
                    None => break,
                }
            }
            self.ran[q] = self.curr_of(holds, q).is_some();
        }
    }

    /// The core whose queue thread `c` is on (or was on last).
    pub(super) fn core_of(&self, c: usize) -> usize {
        self.e[c].cpu
    }

    /// The running threads ran `dt` seconds of host time.
    pub(super) fn charge(&mut self, holds: &[bool], dt: f64) {
        let d = ns(dt);
        self.clock += d;
        for (x, &h) in self.e.iter_mut().zip(holds) {
            if h {
                x.vruntime += d;
                x.ran_to = Some(self.clock);
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
    fn a_thread_woken_while_its_cpu_is_busy_runs_at_once_on_the_idle_one() {
        // Two cores, two threads: 0 runs on core 0; 1 last ran on core 0 too and wakes. Core 1
        // is idle: `select_idle_sibling()` puts it there and it runs now, no preemption of 0.
        let mut e = Eevdf::new(1.5e-3, 4e-3, 2, 2, 2);
        let mut holds = [false, false];
        e.plan(&[true, false], &mut holds);
        assert_eq!((holds, e.e[0].cpu), ([true, false], 0));
        e.charge(&holds, 1e-3);
        e.e[1].cpu = 0;
        e.plan(&[true, true], &mut holds);
        assert_eq!(holds, [true, true]);
        assert_eq!(e.e[1].cpu, 1);
    }

    #[test]
    fn a_core_going_idle_pulls_a_waiting_thread_unless_it_ran_there_just_now() {
        // Two cores, three busy threads: 0 on core 0, 1 on core 1, 2 queued behind 0 on core 0.
        // Thread 1 halts: core 1 is newly idle and pulls 2 (never run, so not cache hot).
        let setup = || {
            let mut e = Eevdf::new(1.5e-3, 4e-3, 2, 3, 3);
            let mut holds = [false; 3];
            e.plan(&[true, true, true], &mut holds);
            assert_eq!((holds, e.e[2].cpu), ([true, true, false], 0));
            (e, holds)
        };
        let (mut e, mut holds) = setup();
        e.charge(&holds, 0.3e-3);
        e.plan(&[true, false, true], &mut holds);
        assert_eq!(holds, [true, false, true]);
        assert_eq!(e.e[2].cpu, 1);
        // Had 2 run on core 0 within `sysctl_sched_migration_cost` (0.5 ms), it would stay.
        let (mut e, mut holds) = setup();
        e.e[2].ran_to = Some(0);
        e.charge(&holds, 0.3e-3);
        e.plan(&[true, false, true], &mut holds);
        assert_eq!(holds, [true, false, false]);
        assert_eq!(e.e[2].cpu, 0);
    }

    #[test]
    fn an_idle_core_takes_a_waiting_thread_at_the_ticks_balance() {
        // As above with thread 2 hot, so core 1 stays idle when 1 halts; at the next tick its
        // balance moves 2 (no longer hot: 0 ran 4 ms since), and it runs there.
        let mut e = Eevdf::new(1.5e-3, 4e-3, 2, 3, 3);
        let mut holds = [false; 3];
        e.plan(&[true, true, true], &mut holds);
        e.e[2].ran_to = Some(0);
        e.charge(&holds, 0.3e-3);
        e.plan(&[true, false, true], &mut holds);
        assert_eq!(holds, [true, false, false]);
        e.charge(&holds, 3.7e-3);
        e.plan(&[true, false, true], &mut holds);
        assert_eq!((holds, e.e[2].cpu), ([true, false, true], 1));
    }

    #[test]
    fn each_core_runs_at_most_one_thread_and_none_idles_beside_its_own_waiting_ones() {
        // Two cores, five threads halting and waking in a fixed pattern, rounds of 0.3 ms: at
        // every plan a core runs at most one thread, its own queue's, and a core with threads
        // waiting on its queue runs one of them.
        let mut e = Eevdf::new(1.5e-3, 4e-3, 2, 5, 5);
        let mut holds = [false; 5];
        for r in 0..2000usize {
            let busy: Vec<bool> = (0..5).map(|c| (r / (3 + 2 * c) + c) % 4 != 0).collect();
            e.plan(&busy, &mut holds);
            for q in 0..2 {
                let running = (0..5).filter(|&c| holds[c] && e.e[c].cpu == q).count();
                assert!(running <= 1, "round {r}: core {q} runs {running}");
                let waiting = (0..5).any(|c| e.on(c, q) && !holds[c] && !e.e[c].delayed);
                assert!(running == 1 || !waiting, "round {r}: core {q} idle beside its queue");
            }
            assert!((0..5).all(|c| !holds[c] || (busy[c] && e.e[c].queued)), "round {r}");
            e.charge(&holds, 0.3e-3);
        }
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
