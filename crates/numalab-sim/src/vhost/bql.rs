//! QEMU's big lock (the BQL, `qemu_global_mutex`) as the host model's one host-wide lock
//! (docs/scheduler.md §10.34, §10.35, §10.37). Under `mttcg` a vCPU thread runs translated code
//! without it and takes it for the guest's events that reach a device or QEMU's own state: back
//! from a halt (`softmmu/cpus.c: qemu_wait_io_event()` sleeps in `qemu_cond_wait(halt_cond,
//! &qemu_global_mutex)` and retakes it), an interrupt's delivery (`accel/tcg/cpu-exec.c:
//! cpu_handle_interrupt()`) and its EOI, an IPI sent (the ICR write) and the tick's one-shot
//! timer programmed (the TMICT write: `hw/intc/apic.c: apic_mem_write()` through
//! `accel/tcg/cputlb.c: io_writex()`, which takes it for every region with `global_locking`),
//! and each clock read (the guest's clocksource is the HPET: `io_readx()` of `hpet_ram_ops`).
//! QEMU's main loop takes it after each poll (`util/main-loop.c: os_host_main_loop_wait()`).
//!
//! The lock is a `pthread_mutex_t` (`util/qemu-thread-posix.c: qemu_mutex_lock_impl()`): a taker
//! that finds it held sleeps on the futex, a voluntary switch, and glibc's unlock wakes one
//! waiter, which must win the lock again (it is not handed over). Here the waiter woken at the
//! release takes it then: nothing in the model takes it between a release and that waiter's
//! retry (a barging taker would need the waiter's wake-up latency, not modelled). A thread's own
//! takes are serialised (it cannot take the lock while it holds or waits for it).
//!
//! The holds are microseconds, below the engine's rounds (tens of µs): the takes of one round are
//! collected with their times, resolved in time order at the next plan, and a vCPU thread that
//! found the lock held blocks there on the host's queue (`eevdf.rs: Eevdf::block_on_bql`). Its
//! wait is counted, not taken from its progress.
//!
//! A hold lasts its length of the holder's own run, not of host time: the mutex stays held until
//! its holder runs `qemu_mutex_unlock_impl()`. A holder the host switches out mid-hold (it stays
//! runnable without a core: preempted, or not picked) keeps the lock (`suspend`) until a core runs
//! it again and it finishes the hold (`resume`); every take meanwhile finds it held and its thread
//! sleeps on the futex until that release (`waiting`), the waits counted up to it
//! (docs/scheduler.md §10.54).

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// The lock's inputs (docs/scheduler.md §10.35; holds estimated, not measured unprobed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BqlCfg {
    /// Seconds a vCPU thread holds the lock at each take.
    pub hold_vcpu_s: f64,
    /// Seconds QEMU's main loop holds it at each of its runs.
    pub hold_main_s: f64,
    /// Clock reads (each a take) per second a vCPU thread runs guest code on a host core.
    pub clock_reads_per_busy_s: f64,
}

impl BqlCfg {
    /// `numalab: ...` one-line errors for values out of range.
    pub fn check(&self) -> Result<(), String> {
        for (name, v) in [("hold_vcpu_s", self.hold_vcpu_s), ("hold_main_s", self.hold_main_s)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("vcpu_host.bql.{name} must be a positive number of seconds, got {v}"));
            }
        }
        let r = self.clock_reads_per_busy_s;
        if !(r.is_finite() && r >= 0.0) {
            return Err(format!("vcpu_host.bql.clock_reads_per_busy_s must be a number at least 0, got {r}"));
        }
        Ok(())
    }
}

/// One thread's takes of the lock: how many, how many found it held, the time it waited then,
/// the time it held it, its holds kept across its switch-out (`Bql::suspend`), and of those the
/// ones kept across the wake-up preemption their own write caused (`Bql::keep_across_wake`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BqlStat {
    pub takes: u64,
    pub waits: u64,
    pub wait_s: f64,
    pub held_s: f64,
    pub kept: u64,
    pub kept_wake: u64,
}

/// The draws' stream of the run's seed (`crate::rng::Rng`).
const STREAM: u64 = 0x6271_6c00;

/// The lock, for `vcpus` vCPU threads and QEMU's main loop (thread `vcpus`).
pub(super) struct Bql {
    cfg: BqlCfg,
    rng: Rng,
    /// When the lock is free again, and since when each thread is free to take it again.
    free_at: f64,
    own_free_at: Vec<f64>,
    /// Per vCPU thread: clock reads owed for its time run, a fraction carried to the next round;
    /// takes for its guest's events this round (`events`).
    reads_owed: Vec<f64>,
    events: Vec<u32>,
    /// The takes since the last resolve: (time, thread), in the order made.
    takes: Vec<(f64, usize)>,
    /// The last round: its start and end.
    round: (f64, f64),
    stats: Vec<BqlStat>,
    /// The last hold resolved: its thread and start (`holder_past`).
    last: Option<(usize, f64)>,
    /// A holder switched out mid-hold, and the hold it has left to run (`suspend`).
    suspended: Option<(usize, f64)>,
    /// The takes that found the lock held by a switched-out holder, in the order made, and the
    /// threads asleep on the futex for it until the release.
    pending: Vec<(f64, usize)>,
    waiting: Vec<bool>,
}

impl Bql {
    pub(super) fn new(cfg: BqlCfg, vcpus: usize, seed: u64) -> Self {
        Bql {
            cfg,
            rng: Rng::new(seed, STREAM),
            free_at: f64::NEG_INFINITY,
            own_free_at: vec![f64::NEG_INFINITY; vcpus + 1],
            reads_owed: vec![0.0; vcpus],
            events: vec![0; vcpus],
            takes: Vec::new(),
            round: (0.0, 0.0),
            stats: vec![BqlStat::default(); vcpus + 1],
            last: None,
            suspended: None,
            pending: Vec::new(),
            waiting: vec![false; vcpus + 1],
        }
    }

    /// The main loop's thread index.
    fn main(&self) -> usize {
        self.stats.len() - 1
    }

    /// Thread `c` takes the lock at `at_s` (not before the current round's start).
    pub(super) fn take_at(&mut self, c: usize, at_s: f64) {
        self.takes.push((at_s.max(self.round.0), c));
    }

    /// vCPU thread `c` takes the lock `k` times in the current round (once its length is known),
    /// at times drawn uniformly in it: an event the model places at a round's instant falls
    /// somewhere in that round.
    pub(super) fn take_in_round(&mut self, c: usize, k: u32) {
        for _ in 0..k {
            self.take_once_in_round(c);
        }
    }

    /// vCPU thread `c` takes the lock once in the current round, at a drawn time; returns it.
    pub(super) fn take_once_in_round(&mut self, c: usize) -> f64 {
        let (a, b) = self.round;
        let at = a + (b - a) * self.rng.unit();
        self.takes.push((at, c));
        at
    }

    /// A round starts at `from_s` (a plan).
    pub(super) fn begin(&mut self, from_s: f64) {
        self.round = (from_s, from_s);
    }

    /// The round lasted `dt`; vCPU thread `c` ran guest code for all of it if `ran[c]`: its
    /// clock reads (`clock_reads_per_busy_s`, the fraction carried) are taken in it.
    pub(super) fn ran(&mut self, dt: f64, ran: &[bool]) {
        self.round.1 = self.round.0 + dt;
        for c in 0..self.events.len() {
            let k = std::mem::take(&mut self.events[c]);
            self.take_in_round(c, k);
        }
        for (c, &r) in ran.iter().enumerate() {
            if !r {
                continue;
            }
            self.reads_owed[c] += self.cfg.clock_reads_per_busy_s * dt;
            // A round cut at the read's due time (`next_read_s`) owes it despite rounding.
            let k = (self.reads_owed[c] + 1e-9).floor();
            self.reads_owed[c] -= k;
            self.take_in_round(c, k as u32);
        }
    }

    /// The main loop's take at the start of its run, `at_s`.
    pub(super) fn main_loop_run(&mut self, at_s: f64) {
        let m = self.main();
        self.take_at(m, at_s);
    }

    /// The vCPU threads the main loop's run from `at_s` kicked while they ran (`kicked`): their
    /// interrupts' deliveries, which find the lock held by the main loop, then their EOIs.
    pub(super) fn kicked(&mut self, at_s: f64, kicked: &[bool]) {
        for (c, _) in kicked.iter().enumerate().filter(|(_, &k)| k) {
            self.take_at(c, at_s);
            self.take_at(c, at_s);
        }
    }

    /// vCPU thread `c` takes the lock `k` times for its guest's events at the current round's
    /// instant; their times are drawn when the round's length is known (`ran`).
    pub(super) fn events(&mut self, c: usize, k: u32) {
        self.events[c] += k;
    }

    /// The takes so far in time order (a tie in the order made): which threads found the lock
    /// held (they block; the main loop's last). While a switched-out holder keeps it, every take
    /// waits for the release: its thread sleeps (`waiting`) and its later takes this round,
    /// drawn as if it ran on, are not made. The waiters of a release are resolved first, in the
    /// order they came (their takes are the earliest), and wake.
    pub(super) fn resolve(&mut self) -> Vec<bool> {
        let mut blocked = vec![false; self.stats.len()];
        let mut takes = std::mem::take(&mut self.takes);
        takes.sort_by(|a, b| a.0.total_cmp(&b.0));
        if self.suspended.is_some() {
            for (at, c) in takes {
                if !self.waiting[c] {
                    self.waiting[c] = true;
                    self.pending.push((at, c));
                }
                blocked[c] = true;
            }
            return blocked;
        }
        self.waiting.fill(false);
        for (at, c) in takes {
            let hold = if c == self.main() { self.cfg.hold_main_s } else { self.cfg.hold_vcpu_s };
            let at = at.max(self.own_free_at[c]);
            let start = at.max(self.free_at);
            let s = &mut self.stats[c];
            s.takes += 1;
            s.held_s += hold;
            if start > at {
                s.waits += 1;
                s.wait_s += start - at;
                blocked[c] = true;
            }
            self.free_at = start + hold;
            self.own_free_at[c] = self.free_at;
            self.last = Some((c, start));
        }
        blocked
    }

    /// The thread whose hold runs across `at_s` (it began by then and ends after), and what is
    /// left of it; None if the lock is free then, suspended, or held by a waiter that took it
    /// after `at_s` (a release's waiter keeps the model's wake-up at the release).
    pub(super) fn holder_past(&self, at_s: f64) -> Option<(usize, f64)> {
        let (c, start) = self.last.filter(|_| self.suspended.is_none())?;
        (start <= at_s + 1e-12 && self.free_at > at_s + 1e-12).then_some((c, self.free_at - at_s))
    }

    /// Holder `c`, switched out with `left_s` of its hold to run, keeps the lock until `resume`.
    pub(super) fn suspend(&mut self, c: usize, left_s: f64) {
        self.suspended = Some((c, left_s));
        self.stats[c].kept += 1;
        self.free_at = f64::INFINITY;
        self.own_free_at[c] = f64::INFINITY;
    }

    /// vCPU thread `c`'s write that woke a thread (an IPI's ICR write, a TMICT write that
    /// notified the main loop) was preempted by that thread at its wake-up: it keeps the lock
    /// with its whole hold still to run (the wake-up is at the take's instant, docs/scheduler.md
    /// §10.58).
    pub(super) fn keep_across_wake(&mut self, c: usize) {
        self.suspend(c, self.cfg.hold_vcpu_s);
        self.stats[c].kept_wake += 1;
    }

    /// The switched-out holder, if any, and the hold it has left.
    pub(super) fn suspended(&self) -> Option<(usize, f64)> {
        self.suspended
    }

    /// The switched-out holder got a core at `at_s`: it runs the rest of its hold and lets the
    /// lock go then; the waiters' takes are resolved at the next plan (`resolve`). The release.
    pub(super) fn resume(&mut self, at_s: f64) -> f64 {
        let Some((c, left)) = self.suspended.take() else { return self.free_at };
        self.free_at = at_s + left;
        self.own_free_at[c] = self.free_at;
        self.last = Some((c, at_s));
        let mut pending = std::mem::take(&mut self.pending);
        pending.append(&mut self.takes);
        self.takes = pending;
        self.free_at
    }

    /// Per thread: asleep on the futex for a switched-out holder's release (or, released, until
    /// the next plan resolves its take).
    pub(super) fn waiting(&self) -> &[bool] {
        &self.waiting
    }

    /// vCPU thread `c`, given a core at `at_s` back from a halt, found the lock held by a
    /// switched-out holder at its retake (`qemu_wait_io_event()`) and sleeps for the release;
    /// its take is resolved then.
    pub(super) fn wait_from(&mut self, c: usize, at_s: f64) {
        if !self.waiting[c] {
            self.waiting[c] = true;
            self.pending.push((at_s, c));
        }
    }

    /// Thread `c` waited `wait_s` for the lock outside its takes: the main loop, back from its
    /// poll, asleep on it until the release; its take comes when it runs.
    pub(super) fn waited(&mut self, c: usize, wait_s: f64) {
        self.stats[c].waits += 1;
        self.stats[c].wait_s += wait_s;
    }

    /// The time a running vCPU thread `c` next reads the clock if it runs on from now: when its
    /// owed reads reach a whole one (None if it reads none).
    pub(super) fn next_read_s(&self, c: usize, now_s: f64) -> Option<f64> {
        let r = self.cfg.clock_reads_per_busy_s;
        (r > 0.0).then(|| now_s + (1.0 - self.reads_owed[c]).max(0.0) / r)
    }

    /// Each thread's takes so far, the vCPU threads' then the main loop's.
    pub(super) fn stats(&self) -> &[BqlStat] {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bql(vcpus: usize) -> Bql {
        Bql::new(BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 8e-6, clock_reads_per_busy_s: 0.0 }, vcpus, 1)
    }

    #[test]
    fn a_held_lock_blocks_a_second_taker_until_the_release() {
        let mut b = bql(2);
        b.begin(0.0);
        b.ran(60e-6, &[false, false]);
        b.take_at(0, 10e-6);
        b.take_at(1, 11e-6);
        // vCPU 1 finds vCPU 0's hold (to 12 µs): it blocks and waits 1 µs, then holds to 14.
        assert_eq!(b.resolve(), vec![false, true, false]);
        let s = b.stats();
        assert_eq!((s[0].takes, s[0].waits, s[1].takes, s[1].waits), (1, 0, 1, 1));
        assert!((s[1].wait_s - 1e-6).abs() < 1e-15, "{s:?}");
        // A third taker at 13 µs waits for vCPU 1's hold, which began at the release (12).
        b.take_at(0, 13e-6);
        assert_eq!(b.resolve(), vec![true, false, false]);
        assert!((b.stats()[0].wait_s - 1e-6).abs() < 1e-15, "{:?}", b.stats());
    }

    #[test]
    fn takes_that_never_overlap_block_nobody() {
        let mut b = bql(2);
        b.begin(0.0);
        b.ran(60e-6, &[false, false]);
        for (c, at) in [(0, 1e-6), (1, 5e-6), (0, 9e-6), (1, 30e-6)] {
            b.take_at(c, at);
        }
        assert_eq!(b.resolve(), vec![false; 3]);
        assert!(b.stats().iter().all(|s| s.waits == 0 && s.wait_s == 0.0));
    }

    #[test]
    fn a_threads_own_takes_follow_one_another_and_every_hold_is_counted() {
        // vCPU 0 takes twice at one instant (an interrupt, then its EOI): the second after the
        // first's release, not a wait. Held 2 x 2 µs; the main loop's one take, 8 µs.
        let mut b = bql(1);
        b.begin(0.0);
        b.ran(60e-6, &[false]);
        b.take_at(0, 1e-6);
        b.take_at(0, 1e-6);
        b.take_at(1, 40e-6);
        assert_eq!(b.resolve(), vec![false, false]);
        let s = b.stats();
        assert_eq!((s[0].takes, s[0].waits, s[1].takes), (2, 0, 1));
        assert!((s[0].held_s - 4e-6).abs() < 1e-15 && (s[1].held_s - 8e-6).abs() < 1e-15, "{s:?}");
    }

    #[test]
    fn the_main_loops_kicks_find_the_lock_held_by_it() {
        let mut b = bql(2);
        b.begin(0.0);
        b.ran(16e-6, &[false, false]);
        b.main_loop_run(0.0);
        b.kicked(0.0, &[true, false]);
        // vCPU 0's delivery waits the main loop's 8 µs, its EOI follows its own hold.
        assert_eq!(b.resolve(), vec![true, false, false]);
        let s = b.stats();
        assert_eq!((s[0].takes, s[0].waits, s[2].takes, s[2].waits), (2, 1, 1, 0));
        assert!((s[0].wait_s - 8e-6).abs() < 1e-15, "{s:?}");
    }

    #[test]
    fn clock_reads_follow_the_time_run_and_carry_the_fraction() {
        // 5,000 reads a second run: 60 µs rounds give 0.3 each, 100 rounds 30 (the last may
        // fall a rounding short); a thread that did not run reads nothing.
        let mut b = Bql::new(BqlCfg { hold_vcpu_s: 1e-9, hold_main_s: 1e-9, clock_reads_per_busy_s: 5000.0 }, 2, 7);
        for r in 0..100 {
            b.begin(r as f64 * 60e-6);
            b.ran(60e-6, &[true, false]);
            b.resolve();
        }
        let s = b.stats();
        assert!((29..=30).contains(&s[0].takes) && s[1].takes == 0, "{s:?}");
    }

    #[test]
    fn the_same_seed_draws_the_same_times() {
        let run = |seed| {
            let mut b = Bql::new(BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 8e-6, clock_reads_per_busy_s: 2e5 }, 2, seed);
            for r in 0..50 {
                b.begin(r as f64 * 60e-6);
                b.ran(60e-6, &[true, true]);
                b.resolve();
            }
            b.stats().to_vec()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn a_hold_its_holder_is_switched_out_in_keeps_the_lock_until_it_runs_again() {
        // vCPU 0 takes at 59 µs of a round that ends at 60: 1 µs of its 2 µs hold runs across
        // the plan. Switched out there, it keeps the lock: vCPU 1's take at 70 µs waits, asleep,
        // through the rounds in which vCPU 0 has no core; vCPU 0 gets one at 200 µs and lets the
        // lock go at 201, where vCPU 1 takes it: a wait of 131 µs.
        let mut b = bql(2);
        b.begin(0.0);
        b.ran(60e-6, &[false, false]);
        b.take_at(0, 59e-6);
        assert_eq!(b.resolve(), vec![false; 3]);
        let (c, left) = b.holder_past(60e-6).unwrap();
        assert!(c == 0 && (left - 1e-6).abs() < 1e-12, "{left}");
        b.suspend(0, left);
        b.begin(60e-6);
        b.ran(60e-6, &[false, true]);
        b.take_at(1, 70e-6);
        assert_eq!(b.resolve(), vec![false, true, false]);
        assert!(b.waiting()[1] && b.stats()[1].waits == 0, "counted at the release");
        b.begin(120e-6);
        b.ran(80e-6, &[false, false]);
        assert_eq!(b.resolve(), vec![false; 3]);
        assert!(b.waiting()[1]);
        assert!((b.resume(200e-6) - 201e-6).abs() < 1e-12);
        b.begin(200e-6);
        b.ran(1e-6, &[true, false]);
        assert_eq!(b.resolve(), vec![false, true, false]);
        assert!(!b.waiting()[1]);
        let s = b.stats();
        assert_eq!((s[1].takes, s[1].waits), (1, 1));
        assert!((s[1].wait_s - 131e-6).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn a_hold_that_ends_by_the_plan_leaves_nothing_to_keep() {
        let mut b = bql(2);
        b.begin(0.0);
        b.ran(60e-6, &[false, false]);
        b.take_at(0, 58e-6);
        b.resolve();
        assert_eq!(b.holder_past(60e-6), None);
        b.begin(60e-6);
        b.ran(60e-6, &[false, true]);
        b.take_at(1, 60e-6);
        assert_eq!(b.resolve(), vec![false; 3]);
        assert!(b.stats().iter().all(|s| s.waits == 0));
    }

    #[test]
    fn a_running_threads_next_clock_read_is_when_its_owed_reads_make_a_whole_one() {
        // 5,000 reads a second: from nothing owed, 200 µs of running; a round cut there owes it.
        let mut b = Bql::new(BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 8e-6, clock_reads_per_busy_s: 5000.0 }, 1, 1);
        let at = b.next_read_s(0, 1e-3).unwrap();
        assert!((at - 1.2e-3).abs() < 1e-12, "{at}");
        b.begin(1e-3);
        b.ran(at - 1e-3, &[true]);
        b.resolve();
        assert_eq!(b.stats()[0].takes, 1);
    }

    #[test]
    fn holds_that_are_not_positive_are_refused() {
        let mut c = BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 8e-6, clock_reads_per_busy_s: 5000.0 };
        assert!(c.check().is_ok());
        c.hold_main_s = 0.0;
        assert!(c.check().unwrap_err().contains("vcpu_host.bql.hold_main_s"));
        c.hold_main_s = 8e-6;
        c.clock_reads_per_busy_s = f64::NAN;
        assert!(c.check().unwrap_err().contains("clock_reads_per_busy_s"));
    }
}
