//! Whether an idle CPU stops its tick (docs/scheduler.md §10.10), where a run gives the share of
//! the idle loop's tries that stop it (`Background::tick_stop_share`, a guest's measured
//! `idle_sleeps / idle_calls`); without it every idle CPU is taken as tickless (§4).
//!
//! Linux 6.1, no cpuidle driver: each pass of `do_idle()`'s loop (`kernel/sched/idle.c`) calls
//! `cpuidle_idle_call()` → `tick_nohz_idle_stop_tick()` (`kernel/time/tick-sched.c:
//! __tick_nohz_idle_stop_tick()`), which does nothing while `can_stop_idle_tick()` says no and
//! stops the tick only when `tick_nohz_next_event()` finds nothing due within a tick (a timer,
//! `rcu_needs_cpu()`, irq work, a pending timer softirq); otherwise `tick_nohz_retain_tick()`
//! keeps it. The loop runs again after every interrupt that does not bring work, the kept tick's
//! own included, so a kept tick lasts one tick and the stop is tried again. The guest's vCPUs
//! never stopped the tick at the idle entry itself, only at a tick in idle (§10.10): so here
//! every idle period keeps its tick to the next jiffy and the tries come at the ticks. Only a stop calls `nohz_balance_enter_idle()` (into `nohz.idle_cpus_mask`); a
//! CPU leaves the mask at its first busy tick (`kernel/sched/fair.c: nohz_balancer_kick()` →
//! `nohz_balance_exit_idle()`), not when it wakes. A CPU that keeps its tick runs
//! `scheduler_tick()` → `trigger_load_balance()` each tick, which balances it as idle
//! (`run_rebalance_domains()` → `rebalance_domains(rq, CPU_IDLE)`) when `rq->next_balance` is
//! due. Whether a try stops the tick depends on the guest's timers and RCU state, which the model
//! does not have: each try stops it with the measured share, drawn from the run's seed. Not
//! modelled: a stopped tick's one-shot timer, set for the next timer event, also runs the tick's
//! handler when it expires (the guest's idle vCPUs handle a tick about once per idle period,
//! §10.10); the model has no timers.

use super::load::CpuSig;
use super::Sched;
use crate::rng::Rng;

/// The random stream of the tick's stops, apart from the background's (`noise.rs`).
const STREAM: u64 = 0x71c4_5709;

#[derive(Clone, Debug)]
pub(super) struct IdleTick {
    share: f64,
    /// A jiffy: the tick's period (1 / `CONFIG_HZ`).
    tick_s: f64,
    rng: Rng,
    /// Per CPU: idle with its tick kept, and when that tick next fires.
    kept: Vec<bool>,
    next_tick_s: Vec<f64>,
    /// Per CPU: in `nohz.idle_cpus_mask` (`rq->nohz_tick_stopped`).
    nohz: Vec<bool>,
}

impl IdleTick {
    /// `cpus` CPUs, idle with their tick stopped (as after boot), each try stopping it with
    /// `share`.
    pub(super) fn new(seed: u64, cpus: usize, share: f64, tick_s: f64) -> Self {
        IdleTick {
            share,
            tick_s,
            rng: Rng::new(seed, STREAM),
            kept: vec![false; cpus],
            next_tick_s: vec![f64::INFINITY; cpus],
            nohz: vec![true; cpus],
        }
    }

    /// One try to stop `cpu`'s tick at its tick `now_s` (`__tick_nohz_idle_stop_tick()`):
    /// stopped, the CPU joins the mask; kept, its next tick comes a jiffy later.
    fn try_stop(&mut self, cpu: usize, now_s: f64) {
        if self.rng.unit() < self.share {
            self.kept[cpu] = false;
            self.nohz[cpu] = true;
        } else {
            self.kept[cpu] = true;
            self.next_tick_s[cpu] = now_s + self.tick_s;
        }
    }

    /// `cpu` enters the idle loop at `now_s` (its last task blocked, no pull brought one): its
    /// tick runs on to the next jiffy. The guest's vCPUs never stopped it before their first
    /// tick in idle (8,162 idle periods traced, §10.10: no `tick_stop` event there, and
    /// `idle_calls` fewer than the idle entries, so `can_stop_idle_tick()` said no; why is not
    /// traced); the tries come at the ticks (`ticked()`).
    pub(super) fn went_idle(&mut self, cpu: usize, now_s: f64) {
        self.kept[cpu] = true;
        self.next_tick_s[cpu] = ((now_s / self.tick_s + 1e-9).floor() + 1.0) * self.tick_s;
    }

    /// `cpu` has work: it left the idle loop (`tick_nohz_idle_exit()`); it stays in the mask.
    pub(super) fn left_idle(&mut self, cpu: usize) {
        self.kept[cpu] = false;
    }

    /// `cpu`'s tick while it has work: out of the mask (`nohz_balance_exit_idle()`).
    pub(super) fn busy_tick(&mut self, cpu: usize) {
        self.kept[cpu] = false;
        self.nohz[cpu] = false;
    }

    /// Whether `cpu` is idle with its tick kept and that tick has come by `now_s`.
    pub(super) fn tick_due(&self, cpu: usize, now_s: f64) -> bool {
        self.kept[cpu] && now_s + 1e-12 >= self.next_tick_s[cpu]
    }

    /// After `cpu`'s kept tick (due at `now_s`): the idle loop tries to stop it again, once per
    /// tick that has come since (a model's instant may come several jiffies after the tick).
    pub(super) fn ticked(&mut self, cpu: usize, now_s: f64) {
        let ticks = ((now_s + 1e-12 - self.next_tick_s[cpu]) / self.tick_s).floor() as u64 + 1;
        let last = self.next_tick_s[cpu] + (ticks - 1) as f64 * self.tick_s;
        for _ in 0..ticks {
            self.try_stop(cpu, last);
            if !self.kept[cpu] {
                return;
            }
        }
    }

    /// Whether `cpu` is in `nohz.idle_cpus_mask`.
    pub(super) fn nohz_idle(&self, cpu: usize) -> bool {
        self.nohz[cpu]
    }

    /// `nohz.nr_cpus`: whether any CPU is in the mask.
    pub(super) fn any_nohz(&self) -> bool {
        self.nohz.iter().any(|&n| n)
    }
}

impl Sched {
    /// `cpu`, whose last task blocked at `now_s`, enters the idle loop if its newly idle
    /// balance left it idle (`nr`).
    pub(super) fn went_idle_if(&mut self, cpu: usize, now_s: f64, nr: &[usize]) {
        if let Some(it) = self.idle_tick.as_mut().filter(|_| nr[cpu] == 0) {
            it.went_idle(cpu, now_s);
        }
    }

    /// Whether `cpu` is idle with its tick kept and that tick has come by `now_s` (with the host
    /// model the tick's interrupt brings the vCPU out of its halt: `engine/host.rs`).
    pub fn idle_tick_due(&self, cpu: usize, now_s: f64) -> bool {
        self.idle_tick.as_ref().is_some_and(|it| it.tick_due(cpu, now_s))
    }

    /// When `cpu`'s kept tick came, if it is idle with its tick kept and that tick has come by
    /// `now_s` (the host model times how late the host runs it: `vhost.rs: TickDelays`).
    pub fn idle_tick_due_since(&self, cpu: usize, now_s: f64) -> Option<f64> {
        self.idle_tick.as_ref().filter(|it| it.tick_due(cpu, now_s)).map(|it| it.next_tick_s[cpu])
    }

    /// Whether `cpu` is in `nohz.idle_cpus_mask`: every idle CPU where none keeps its tick.
    pub(super) fn nohz_idle(&self, cpu: usize) -> bool {
        self.idle_tick.as_ref().is_none_or(|it| it.nohz_idle(cpu))
    }

    /// `cpu`'s kept tick at `now_s` (`scheduler_tick()` → `trigger_load_balance()`): it balances
    /// itself as idle where an interval has passed (`rebalance_domains(rq, CPU_IDLE)`), then the
    /// idle loop tries to stop the tick again, unless a pull gave it work.
    pub(super) fn idle_tick_balance(
        &mut self,
        now_s: f64,
        cpu: usize,
        nr: &mut [usize],
        live: &[bool],
        sig: &mut Option<Vec<CpuSig>>,
    ) -> Vec<usize> {
        self.rq.tick(now_s, cpu);
        self.tick_balancing = true;
        let moved = self.rebalance_domains(now_s, cpu, cpu, nr, live, sig);
        self.tick_balancing = false;
        if let Some(it) = self.idle_tick.as_mut() {
            if nr[cpu] == 0 {
                it.ticked(cpu, now_s);
            } else {
                it.left_idle(cpu);
            }
        }
        moved
    }

    /// With the host model, at the end of a round at `now_s`: each idle vCPU the host ran
    /// (`ran`) whose kept tick has come runs it (`idle_tick_balance()`). `runnable`: threads
    /// running or spinning. Returns the threads moved.
    pub(super) fn ticks_where_run(&mut self, now_s: f64, runnable: &[bool], ran: &[bool]) -> Vec<usize> {
        if !(0..ran.len()).any(|c| ran[c] && self.idle_tick_due(c, now_s)) {
            return Vec::new();
        }
        let (live, mut nr) = self.run_queues(now_s, runnable);
        let live = &live;
        let mut sig = None;
        let mut moved = Vec::new();
        for cpu in 0..nr.len() {
            if ran[cpu] && nr[cpu] == 0 && !self.ttwu_pending[cpu] && self.idle_tick_due(cpu, now_s) {
                moved.extend(self.idle_tick_balance(now_s, cpu, &mut nr, live, &mut sig));
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A jiffy at the guest's `CONFIG_HZ=250`.
    const TICK_S: f64 = 1.0 / 250.0;

    #[test]
    fn a_kept_tick_fires_a_jiffy_later_and_is_retried_at_every_tick_until_it_stops() {
        // Share 0: every try keeps it; share 1: every try stops it.
        let mut t = IdleTick::new(1, 2, 0.0, TICK_S);
        t.left_idle(0);
        assert!(t.nohz_idle(0), "woken, a CPU stays in the mask until a busy tick");
        t.busy_tick(0);
        assert!(!t.nohz_idle(0) && t.nohz_idle(1), "boot: idle CPUs tickless, a busy one out of the mask");
        // Idle a quarter jiffy past a tick: the tick runs on to the next jiffy, untried.
        let at = 250.25 * TICK_S;
        t.went_idle(0, at);
        assert!(!t.nohz_idle(0), "a kept tick does not join nohz.idle_cpus_mask");
        assert!(!t.tick_due(0, 250.9 * TICK_S) && t.tick_due(0, 251.0 * TICK_S));
        // Three jiffies after that tick: three tries, all kept; the next tick is the one after.
        t.ticked(0, 253.2 * TICK_S);
        assert!(!t.tick_due(0, 253.9 * TICK_S) && t.tick_due(0, 254.0 * TICK_S));
        t.share = 1.0;
        t.ticked(0, 254.0 * TICK_S);
        assert!(t.nohz_idle(0) && !t.tick_due(0, 2.0), "stopped at the retry: tickless, in the mask");
        // Work, then idle again before any busy tick: nohz_balance_exit_idle() runs only at a
        // busy tick, so a CPU that woke and went idle again stays in the mask, its tick kept
        // to the next jiffy whatever the share.
        t.left_idle(0);
        t.went_idle(0, 3.0);
        assert!(t.nohz_idle(0) && t.tick_due(0, 3.0 + TICK_S));
    }

    #[test]
    fn the_share_of_tries_that_stop_the_tick_is_the_given_one_and_the_seeds() {
        // The first tick in each idle period tries once.
        let stops = |seed: u64| {
            let mut t = IdleTick::new(seed, 1, 0.87, TICK_S);
            (0..10_000)
                .filter(|&i| {
                    t.went_idle(0, i as f64);
                    t.ticked(0, i as f64 + TICK_S);
                    !t.kept[0]
                })
                .count()
        };
        assert_eq!(stops(7), stops(7));
        assert_ne!(stops(7), stops(8));
        assert!((8_550..8_850).contains(&stops(7)), "{}", stops(7));
    }
}
