//! The host that runs a guest's vCPUs (docs/scheduler.md §10.5): under QEMU's TCG a vCPU
//! computes only while a host core runs its thread, while the guest's clock (host time:
//! `QEMU_CLOCK_VIRTUAL` without icount) goes on. A vCPU that the host does not run keeps what it
//! ran when it stopped: its thread makes no progress, yet the guest charges the time to it (tick,
//! PELT, vruntime, the turn it holds). A halted vCPU (nothing to run in the guest) uses no host
//! time. Off unless a run asks for it (`SimConfig::vcpu_host`); then the engine asks `plan()`
//! at every round of its epochs (a quarter epoch) which vCPUs a host core runs, and charges them
//! with `charge()`.
//!
//! Two modes, as QEMU 7.2 has them:
//! - `rr` (`accel/tcg/tcg-accel-ops-rr.c: rr_cpu_thread_fn`): one host thread runs every vCPU in
//!   turn, in CPU order (`CPU_NEXT`), each until it halts (`cpu_thread_is_idle()`: skipped) or
//!   the kick timer fires (`rr_kick_next_cpu()` every `TCG_KICK_PERIOD` = 100 ms of
//!   `QEMU_CLOCK_VIRTUAL`, `accel/tcg/tcg-accel-ops-rr.h`). One host core, whatever `cores` says.
//! - `mttcg` (`accel/tcg/tcg-accel-ops-mttcg.c: mttcg_cpu_thread_fn`): one host thread per vCPU,
//!   the default for an x86 guest on an x86 host (`accel/tcg/tcg-all.c: mttcg_enabled` from
//!   `default_mttcg_enabled()`: `TARGET_SUPPORTS_MTTCG` and the guest's memory order
//!   `TCG_GUEST_DEFAULT_MO` within the host's). The host's scheduler, Linux 6.18's EEVDF
//!   (`eevdf.rs`, one run queue per core; `placement.rs`, which core a thread goes to), shares
//!   `cores` among the threads of the non-halted vCPUs; a halted vCPU's
//!   thread sleeps on its `halt_cond`, keeping its lag, and its wake-up may preempt the running
//!   thread (`kernel/sched/fair.c: check_preempt_wakeup_fair`).

mod bql;
mod eevdf;
mod main_loop;
mod placement;
mod spells;
mod wake_chain;

pub use bql::{BqlCfg, BqlStat};
pub use main_loop::Timer;
pub use spells::{HostSpellsOut, SpellDist, SpellsOut};
pub use wake_chain::{WakeChainDist, WakeChainFreed, WakeChainOut};

use serde::{Deserialize, Serialize};

/// How the host runs the guest's vCPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostMode {
    Rr,
    Mttcg,
}

/// The host: its cores for the guest's vCPU threads, the mode, and how long a vCPU keeps a core
/// before the next one's turn (`rr`: the kick period; `mttcg`: the host's tick, where a thread
/// past its deadline is switched out); `mttcg`'s request, the host's base slice
/// (`sysctl_sched_base_slice`: a deadline is a request after the vruntime), `slice_s` if absent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VcpuHost {
    pub cores: usize,
    pub mode: HostMode,
    pub slice_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_s: Option<f64>,
    /// `mttcg`: host time QEMU's main loop runs at each wake-up, holding the BQL. Present, the
    /// main loop is a host thread of its own that wakes for the vCPUs' timers
    /// (`main_loop.rs`, docs/scheduler.md §10.14); absent, the guest's tick is one instant
    /// (`eevdf.rs: Eevdf::bql_at_guest_tick`, §10.13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main_loop_s: Option<f64>,
    /// `mttcg`: the host's other threads, each always runnable at nice 0 (a busy loop beside
    /// QEMU), on the cores' EEVDF queues with the vCPU threads and balanced as they are: the
    /// kernel treats them as any nice-0 task (`kernel/sched/fair.c: place_entity()`,
    /// `update_curr()`, `__pick_eevdf()`, `detach_tasks()`). That is a thread in QEMU's own task group: a busy loop in another
    /// session (`SCHED_AUTOGROUP`) took a whole core of two on the measured host
    /// (docs/scheduler.md §10.18). None by default (an otherwise idle host).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub other_threads: usize,
    /// `mttcg` with `main_loop_s`: QEMU's big lock as one host-wide lock the vCPU threads take at
    /// their guest's events and clock reads and the main loop at its runs (`bql.rs`,
    /// docs/scheduler.md §10.37). Absent, only the main loop's kicks wait for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bql: Option<BqlCfg>,
    /// Guest time of one iteration of libgomp's spin (`openmp.rs: spin_s`): under TCG each
    /// iteration's PAUSE leaves translated code (`target/i386/tcg/misc_helper.c: helper_pause()`),
    /// a cost of this host, measured (docs/scheduler.md §10.57, §10.59). Absent, libgomp's
    /// estimate (10 ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_iteration_s: Option<f64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `VcpuHost::other_threads`' limit: a host's busy loops, not a second guest.
const MAX_OTHER_THREADS: usize = 64;

impl VcpuHost {
    /// `cores` running the vCPUs in `mode`, a vCPU keeping a core `slice_s` at a time; no main
    /// loop thread, lock, other threads or measured spin.
    pub fn new(cores: usize, mode: HostMode, slice_s: f64) -> Self {
        VcpuHost {
            cores,
            mode,
            slice_s,
            request_s: None,
            main_loop_s: None,
            other_threads: 0,
            bql: None,
            spin_iteration_s: None,
        }
    }

    /// `numalab: ...` one-line errors for values out of range.
    pub fn check(&self) -> Result<(), String> {
        if self.cores == 0 {
            return Err("vcpu_host.cores must be at least 1 (host cores running the guest's vCPUs)".into());
        }
        if !(self.slice_s.is_finite() && self.slice_s > 0.0) {
            return Err(format!("vcpu_host.slice_s must be a positive number of seconds, got {}", self.slice_s));
        }
        if let Some(r) = self.request_s.filter(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(format!("vcpu_host.request_s must be a positive number of seconds, got {r}"));
        }
        if let Some(r) = self.main_loop_s.filter(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(format!("vcpu_host.main_loop_s must be a positive number of seconds, got {r}"));
        }
        if let Some(r) = self.spin_iteration_s.filter(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(format!("vcpu_host.spin_iteration_s must be a positive number of seconds, got {r}"));
        }
        if self.other_threads > MAX_OTHER_THREADS {
            return Err(format!(
                "vcpu_host.other_threads must be at most {MAX_OTHER_THREADS} (always-runnable host threads), got {}",
                self.other_threads
            ));
        }
        if self.other_threads > 0 && self.mode != HostMode::Mttcg {
            return Err("vcpu_host.other_threads needs mode mttcg (rr's model has no host scheduler to share)".into());
        }
        if self.main_loop_s.is_some() && self.mode != HostMode::Mttcg {
            return Err(
                "vcpu_host.main_loop_s needs mode mttcg (rr's one thread runs the main loop's timers itself)".into()
            );
        }
        if let Some(b) = &self.bql {
            if self.main_loop_s.is_none() {
                return Err("vcpu_host.bql needs main_loop_s (the main loop's thread, one of the lock's takers)".into());
            }
            b.check()?;
        }
        Ok(())
    }
}

/// One vCPU thread's counters as the host kernel keeps them: `kernel/sched/stats.h:
/// sched_info_arrive()` adds a thread's queue wait to `run_delay` and counts `pcount` at each
/// switch to it; `kernel/sched/core.c: __schedule()` counts the switch away from it as
/// voluntary (`nvcsw`: it blocked, here its vCPU halted) or not (`nivcsw`: preempted, still
/// runnable).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadStat {
    pub wait_s: f64,
    pub slices: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    /// The waits that followed an involuntary switch, until the thread got a core again: their
    /// time and number (the part of `wait_s` a preempted thread spends queued; a newly idle
    /// balance the host stops waits so long, `sched/host_stop.rs`).
    pub preempted_wait_s: f64,
    pub preempted_waits: u64,
    /// Since its last involuntary switch the thread has not had a core, for `pending_s`.
    preempted: bool,
    pending_s: f64,
}

impl ThreadStat {
    /// A plan took the thread from holding a core (`was`) to `now`, its vCPU `busy` or halted.
    /// Returns the wait that ended here if it followed an involuntary switch.
    fn switched(&mut self, was: bool, now: bool, busy: bool) -> Option<f64> {
        match (was, now) {
            (false, true) => {
                self.slices += 1;
                if std::mem::take(&mut self.preempted) {
                    let w = std::mem::take(&mut self.pending_s);
                    self.preempted_wait_s += w;
                    self.preempted_waits += 1;
                    return Some(w);
                }
            }
            (true, false) if busy => {
                self.involuntary += 1;
                self.preempted = true;
                self.pending_s = 0.0;
            }
            (true, false) => self.voluntary += 1,
            _ => {}
        }
        None
    }

    /// The thread waited `dt` runnable without a core.
    fn waited(&mut self, dt: f64) {
        self.wait_s += dt;
        if self.preempted {
            self.pending_s += dt;
        }
    }
}

/// How late the host runs an idle vCPU whose kept tick has come (docs/scheduler.md §10.12,
/// §10.13): per vCPU, ticks first run within 0.25, 0.5, 1, 2, 4 ms of their due time and later,
/// and those never run while due (the vCPU got work first). Counted at host rounds, the model's
/// instants: a tick due within a round counts from the round after.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TickDelays {
    pub bins: [u64; 7],
    /// The due time of a tick seen due and not yet run, and of the last one counted.
    pending: Option<f64>,
    counted: Option<f64>,
}

/// `TickDelays`' bounds, seconds.
const TICK_DELAY_BOUNDS_S: [f64; 5] = [0.25e-3, 0.5e-3, 1e-3, 2e-3, 4e-3];

impl TickDelays {
    /// At a round from `now_s`: the vCPU's tick due since `due` (None: no tick due), `run` by the
    /// host or not.
    fn note(&mut self, due: Option<f64>, run: bool, now_s: f64) {
        if self.pending.is_some() && self.pending != due {
            self.bins[6] += 1;
            self.pending = None;
        }
        let Some(d) = due.filter(|&d| Some(d) != self.counted) else { return };
        if run {
            let late = now_s - d;
            self.bins[TICK_DELAY_BOUNDS_S.iter().position(|&b| late < b - 1e-12).unwrap_or(5)] += 1;
            self.counted = Some(d);
            self.pending = None;
        } else {
            self.pending = Some(d);
        }
    }
}

/// Which vCPUs hold a host core, and for how long they have.
pub struct HostRun {
    cfg: VcpuHost,
    /// Per vCPU: holds a host core now; `rr`: seconds of its kick period used.
    holds: Vec<bool>,
    used_s: Vec<f64>,
    /// Per vCPU: host time received.
    received_s: Vec<f64>,
    /// Per vCPU thread, as the host's `/proc/<pid>/task/<tid>/schedstat` and `status` count
    /// them (docs/scheduler.md §10.13): time runnable but not run (`run_delay`), times given a
    /// core (`pcount`), and times it left one halting (`nvcsw`) or still runnable (`nivcsw`).
    threads: Vec<ThreadStat>,
    /// Per vCPU thread, each of its waits after an involuntary switch, in order (their sum and
    /// number are `ThreadStat::preempted_wait_s`, `preempted_waits`; `sched/host_stop.rs`
    /// charges a balance the host stops one of them, docs/scheduler.md §10.28).
    preempted_waits_s: Vec<Vec<f64>>,
    /// The last plan's non-halted vCPUs: their threads are runnable until the next plan.
    busy: Vec<bool>,
    tick_delays: Vec<TickDelays>,
    /// Per vCPU: halted, or back from a halt and not run since; `resumed`: given a core at the
    /// last plan in that state.
    asleep: Vec<bool>,
    resumed: Vec<bool>,
    /// `rr`: the vCPU after the last one given the core.
    next: usize,
    /// `mttcg`: the host's scheduler.
    eevdf: Option<eevdf::Eevdf>,
    /// `mttcg` with `main_loop_s`: QEMU's main loop thread (the host's last entity), whether it
    /// holds a core and is runnable, its counts and host time, and its run just ended.
    main: Option<main_loop::MainLoop>,
    main_holds: bool,
    main_runnable: bool,
    main_stat: ThreadStat,
    main_received_s: f64,
    main_ended: bool,
    /// `other_threads`: the host's always-runnable threads (the entities after the main
    /// loop's), whether each holds a core and the host time each received.
    others_hold: Vec<bool>,
    others_received_s: Vec<f64>,
    /// The time of the last plan (`arm_main_loop`).
    now_s: f64,
    /// `bql`: the lock, and when the main loop's run in progress took it.
    bql: Option<bql::Bql>,
    main_run_at: f64,
    /// `bql`: per vCPU thread, asleep on the lock for a switched-out holder (not runnable), and
    /// back from a halt with its retake made that way (`bql.rs: Bql::wait_from`); since when the
    /// main loop, back from its poll, has been asleep on it; the release the last plan set going.
    lock_wait: Vec<bool>,
    retaken: Vec<bool>,
    main_lock_since: Option<f64>,
    release_at: Option<f64>,
    /// `bql`: the writes since the last plan that woke a thread (an IPI to a halted vCPU, a
    /// timer that notified the sleeping main loop): time, writer, woken thread (docs/scheduler.md
    /// §10.58).
    wakes_by_write: Vec<(f64, usize, usize)>,
    idle: HostIdle,
    /// `mttcg` under `--explain-sched`: the sleepers' wake-ups until their vCPU runs.
    wake_chain: Option<wake_chain::WakeChain>,
    /// `mttcg` under `--explain-sched`: each vCPU thread's waits and runs (`spells.rs`).
    spells: Option<spells::HostSpells>,
}

/// `mttcg`: the host cores' idle time, split as `bench/host_idle.py` splits the measured host's
/// (docs/scheduler.md §10.46): core-seconds idle while some thread is runnable without a core
/// (queued on a busy core's queue), and while none is, by how many vCPUs are halted then.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostIdle {
    pub queued_s: f64,
    pub none_queued_s_by_halted: Vec<f64>,
}

/// One plan's working state (`HostRun::plan`): the threads' cores before it and as it goes (the
/// vCPU threads, then the main loop's and the other threads'), which vCPU threads left their
/// core for the BQL (`lock`, `blocked` before the host's plan, `cycled` by it), and the BQL hold
/// that runs across the plan's instant, if any: its thread and what is left of it; the writes
/// since the last plan that woke a thread (`HostRun::wakes_by_write`).
struct PlanLock {
    held_before: Vec<bool>,
    main_held_before: bool,
    before: Vec<bool>,
    lock: Vec<bool>,
    busy_x: Vec<bool>,
    holds_x: Vec<bool>,
    blocked: Vec<bool>,
    cycled: Vec<bool>,
    past: Option<(usize, f64)>,
    wakes: Vec<(f64, usize, usize)>,
}

impl HostRun {
    pub fn new(cfg: VcpuHost, vcpus: usize) -> Self {
        // The main loop's thread is one more entity on the host's queue, the other threads after it.
        let others = cfg.other_threads;
        let threads = vcpus + usize::from(cfg.main_loop_s.is_some()) + others;
        let eevdf = (cfg.mode == HostMode::Mttcg)
            .then(|| eevdf::Eevdf::new(cfg.request_s.unwrap_or(cfg.slice_s), cfg.slice_s, cfg.cores, threads, vcpus));
        HostRun {
            holds: vec![false; vcpus],
            used_s: vec![0.0; vcpus],
            received_s: vec![0.0; vcpus],
            threads: vec![ThreadStat::default(); vcpus],
            preempted_waits_s: vec![Vec::new(); vcpus],
            busy: vec![false; vcpus],
            tick_delays: vec![TickDelays::default(); vcpus],
            asleep: vec![true; vcpus],
            resumed: vec![false; vcpus],
            next: 0,
            eevdf,
            main: None,
            main_holds: false,
            main_runnable: false,
            main_stat: ThreadStat::default(),
            main_received_s: 0.0,
            main_ended: false,
            others_hold: vec![false; others],
            others_received_s: vec![0.0; others],
            now_s: 0.0,
            bql: cfg.bql.clone().filter(|_| cfg.mode == HostMode::Mttcg).map(|b| bql::Bql::new(b, vcpus, 0)),
            main_run_at: 0.0,
            lock_wait: vec![false; vcpus],
            retaken: vec![false; vcpus],
            main_lock_since: None,
            release_at: None,
            wakes_by_write: Vec::new(),
            idle: HostIdle { queued_s: 0.0, none_queued_s_by_halted: vec![0.0; vcpus + 1] },
            wake_chain: None,
            spells: None,
            cfg,
        }
    }

    /// The run's seed, for the lock's draws (`bql.rs`).
    pub fn with_seed(mut self, seed: u64) -> Self {
        if let Some(b) = self.cfg.bql.clone().filter(|_| self.bql.is_some()) {
            self.bql = Some(bql::Bql::new(b, self.holds.len(), seed));
        }
        self
    }

    /// Time the sleepers' wake-ups until their vCPU runs (`wake_chain.rs`), if `on` and `mttcg`.
    pub fn with_wake_chain(mut self, on: bool) -> Self {
        self.wake_chain = (on && self.eevdf.is_some()).then(|| wake_chain::WakeChain::new(self.holds.len()));
        self
    }

    /// Keep each vCPU thread's waits and runs (`spells.rs`), if `on` and `mttcg`.
    pub fn with_spells(mut self, on: bool) -> Self {
        self.spells = (on && self.eevdf.is_some()).then(|| spells::HostSpells::new(self.holds.len()));
        self
    }

    /// Each vCPU thread's waits and runs so far as distributions, if kept.
    pub fn spells(&self) -> Option<HostSpellsOut> {
        self.spells.as_ref().map(spells::HostSpells::out)
    }

    /// A thread asleep on its futex was woken onto vCPU `c` at `at_s`, `min_s` its wake-up's own
    /// latency: timed until the host runs `c` (`wake_chain.rs`).
    pub fn sleeper_woken(&mut self, c: usize, at_s: f64, min_s: f64) {
        if let Some(w) = self.wake_chain.as_mut() {
            w.woken(c, at_s, self.holds[c], self.asleep[c], min_s);
        }
    }

    /// The sleepers' wake-up chains so far, if timed.
    pub fn wake_chain(&self) -> Option<WakeChainOut> {
        self.wake_chain.as_ref().map(wake_chain::WakeChain::out)
    }

    /// vCPU `c`'s guest sent an IPI to vCPU `to` at `at_s` (its ICR write takes the BQL,
    /// `bql.rs`). A halted target's thread is woken inside the hold (`hw/intc/apic.c:
    /// apic_deliver_irq()` → `cpu_interrupt()` → `softmmu/cpus.c: qemu_cpu_kick()` →
    /// `qemu_cond_broadcast(halt_cond)`), which the host sees at the next plan.
    pub fn ipi_sent(&mut self, c: usize, at_s: f64, to: usize) {
        if let Some(b) = self.bql.as_mut() {
            b.take_at(c, at_s);
            if to != c && !self.busy[to] {
                self.wakes_by_write.push((at_s, c, to));
            }
        }
    }

    /// With `bql`: each thread's takes of the lock so far, the vCPU threads' then the main
    /// loop's.
    pub fn bql_stats(&self) -> Option<&[BqlStat]> {
        self.bql.as_ref().map(|b| b.stats())
    }

    /// The guest's tick (`tick_s`, 1 / its `CONFIG_HZ`): with `mttcg` a running vCPU thread
    /// blocks on QEMU's BQL at each (`eevdf.rs: Eevdf::set_guest_tick`, docs/scheduler.md §10.13).
    /// With `main_loop_s`, QEMU's main loop thread wakes for the guest's timers instead
    /// (`main_loop.rs`, §10.14).
    pub fn with_guest_tick(mut self, tick_s: f64) -> Self {
        match (self.eevdf.as_mut(), self.cfg.main_loop_s) {
            (Some(_), Some(run_s)) => self.main = Some(main_loop::MainLoop::new(run_s, tick_s, self.holds.len())),
            (Some(e), None) => e.set_guest_tick(tick_s),
            _ => {}
        }
        self
    }

    /// With the main loop thread: the vCPUs' timers expired by this time have been delivered
    /// (their vCPUs kicked); without, every timer at once (+inf).
    pub fn timers_through_s(&self) -> f64 {
        self.main.as_ref().map_or(f64::INFINITY, |m| m.through_s())
    }

    /// Before the plan from `now_s`: the vCPUs' timers as the guest arms them (`Timer`); the
    /// main loop thread wakes if one has expired.
    pub fn arm_main_loop(&mut self, timers: &[Option<Timer>], now_s: f64) {
        self.now_s = now_s;
        if let Some(m) = self.main.as_mut() {
            // A vCPU thread the main loop kicked while running beside it has not handled the
            // interrupt yet: it waits for the BQL the loop has just let go (`plan`).
            let ran: Vec<bool> =
                (0..self.holds.len()).map(|c| self.holds[c] && !(self.main_ended && m.kicked()[c])).collect();
            self.main_runnable = m.arm(timers, &ran, now_s);
            // Each timer the guest programmed in the round just run is a TMICT write. One that
            // set a timer before every pending one notified the main loop inside its hold
            // (`util/qemu-timer.c: timerlist_rearm()` → `qemu_notify_event()`): the first such
            // write woke it, if before any timer expired.
            if let Some(b) = self.bql.as_mut() {
                let woken = m.woken_by_write();
                let mut first: Option<(f64, usize)> = None;
                for (c, _) in m.programmed().iter().enumerate().filter(|(_, &p)| p) {
                    let at = b.take_once_in_round(c);
                    if woken.is_some_and(|(w, expired)| w[c] && at < expired) && first.is_none_or(|(t, _)| at < t) {
                        first = Some((at, c));
                    }
                }
                if let Some((at, c)) = first {
                    self.wakes_by_write.push((at, c, self.holds.len()));
                }
            }
        }
    }

    /// When the host's next event comes after the last plan (the main loop's run ends or its
    /// next timer expires), if the main loop thread is modelled: the engine ends its round there.
    pub fn next_event_s(&self) -> Option<f64> {
        let main = self.main.as_ref().and_then(|m| m.next_event_s(self.main_holds, self.now_s));
        main.into_iter().chain(self.lock_event_s()).min_by(f64::total_cmp)
    }

    /// `bql`: while a switched-out holder keeps the lock, the first clock read of a running vCPU
    /// thread (it blocks there: a pick point on its core); once it runs again, its release (the
    /// waiters wake). Docs/scheduler.md §10.54.
    fn lock_event_s(&self) -> Option<f64> {
        let b = self.bql.as_ref()?;
        if b.suspended().is_none() {
            return self.release_at;
        }
        (0..self.holds.len())
            .filter(|&c| self.holds[c])
            .filter_map(|c| b.next_read_s(c, self.now_s))
            .min_by(f64::total_cmp)
    }

    /// The main loop thread's counts and host time received, if modelled.
    pub fn main_loop_thread(&self) -> Option<(ThreadStat, f64)> {
        self.main.as_ref().map(|_| (self.main_stat, self.main_received_s))
    }

    /// The longest epoch the engine may take: a slice.
    pub fn max_epoch_s(&self) -> f64 {
        self.cfg.slice_s
    }

    /// Which vCPUs a host core runs from now on, given which have something to run (`busy`;
    /// the others are halted and use no host time).
    pub fn plan(&mut self, busy: &[bool]) -> &[bool] {
        let n = self.holds.len();
        for (c, &b) in busy.iter().enumerate().take(n) {
            self.asleep[c] |= !b;
        }
        let mut p = PlanLock {
            held_before: self.holds.clone(),
            main_held_before: self.main_holds,
            before: self.holds.clone(),
            lock: vec![false; n],
            busy_x: Vec::new(),
            holds_x: self.holds.clone(),
            blocked: vec![false; n],
            cycled: Vec::new(),
            past: None,
            wakes: std::mem::take(&mut self.wakes_by_write),
        };
        self.release_at = None;
        if let Some(mut e) = self.eevdf.take() {
            p.busy_x = busy[..n].to_vec();
            if self.main.is_some() {
                // The main loop let the BQL go: a vCPU thread it kicked while running on another
                // core took the BQL to handle the interrupt and waited for it
                // (`cpu_handle_interrupt()`).
                if let (true, Some(m)) = (std::mem::take(&mut self.main_ended), self.main.as_ref()) {
                    for c in 0..n {
                        if m.kicked()[c] && p.holds_x[c] && p.busy_x[c] {
                            p.blocked[c] = e.block_on_bql(c, &mut p.holds_x);
                        }
                    }
                }
                let main_runnable = self.lock_before_plan(&mut e, &mut p);
                p.busy_x.push(main_runnable);
                p.holds_x.push(self.main_holds);
            }
            // The host's other threads never block.
            p.busy_x.extend(self.others_hold.iter().map(|_| true));
            p.holds_x.extend_from_slice(&self.others_hold);
            // A thread that blocked on the BQL left its core (voluntarily) even if picked again.
            p.cycled = e.plan(&p.busy_x, &mut p.holds_x);
            if self.bql.is_some() && self.main.is_some() {
                self.lock_after_plan(&mut e, &mut p, busy);
            }
            for c in 0..n {
                if p.blocked[c] || p.cycled[c] {
                    self.threads[c].voluntary += 1;
                    p.before[c] = false;
                    p.lock[c] = true;
                }
            }
            if let Some(m) = self.main.as_mut() {
                let now = p.holds_x[n];
                self.main_stat.switched(self.main_holds, now, self.main_runnable);
                self.main_holds = now;
                if m.planned(now, self.now_s) {
                    self.main_run_at = self.now_s;
                    if let Some(b) = self.bql.as_mut() {
                        b.main_loop_run(self.now_s);
                    }
                }
            }
            self.holds.copy_from_slice(&p.holds_x[..n]);
            let others = p.holds_x.len() - self.others_hold.len();
            self.others_hold.copy_from_slice(&p.holds_x[others..]);
            self.eevdf = Some(e);
        } else {
            self.plan_rr(busy);
        }
        let PlanLock { held_before, main_held_before, before, lock, .. } = p;
        let freed = self.wake_chain.is_some().then(|| self.freed(&held_before, &before, busy, main_held_before));
        for (c, &was) in before.iter().enumerate() {
            let b = busy.get(c).copied().unwrap_or(false);
            if let Some(w) = self.threads[c].switched(was, self.holds[c], b) {
                self.preempted_waits_s[c].push(w);
            }
            if let Some(s) = self.spells.as_mut() {
                s.planned(c, self.now_s, was, self.holds[c], b, lock[c]);
            }
            self.busy[c] = b;
            self.resumed[c] = self.holds[c] && self.asleep[c];
            self.asleep[c] &= !self.holds[c];
            if let (Some(w), Some(f)) = (self.wake_chain.as_mut(), freed) {
                if self.holds[c] {
                    w.runs(c, self.now_s, f);
                } else {
                    w.passed_over(c);
                }
            }
            // Back from a halt: the BQL retaken after `qemu_wait_io_event()`, then the interrupt
            // that ended the halt delivered and its EOI written.
            if let Some(bq) = self.bql.as_mut().filter(|_| self.resumed[c]) {
                // The retake made already if it slept on the lock for it (§10.54).
                bq.events(c, if std::mem::take(&mut self.retaken[c]) { 2 } else { 3 });
            }
        }
        &self.holds
    }

    /// `bql`, before the host's plan: the last round's takes of the lock resolved. A vCPU
    /// thread that found it held blocked and is woken at the release (the main loop's wait, at
    /// most a few µs, is only counted); one asleep on the futex for a switched-out holder is
    /// not runnable, while the holder stays runnable. Notes the hold that runs across this plan
    /// (`PlanLock::past`). Returns whether the main loop thread is runnable.
    fn lock_before_plan(&mut self, e: &mut eevdf::Eevdf, p: &mut PlanLock) -> bool {
        let (Some(b), Some(m)) = (self.bql.as_mut(), self.main.as_ref()) else { return self.main_runnable };
        let n = self.holds.len();
        let waited = b.resolve();
        p.past = b.holder_past(self.now_s);
        for (c, &w) in waited.iter().enumerate().take(n) {
            if w && !p.blocked[c] && p.holds_x[c] && p.busy_x[c] {
                p.blocked[c] = e.block_on_bql(c, &mut p.holds_x);
            }
            // Asleep on the futex for a switched-out holder: not runnable.
            p.busy_x[c] &= !b.waiting()[c];
        }
        // A switched-out holder stays runnable until it lets the lock go, whatever its guest
        // does meanwhile (it cannot halt without running).
        let kept_by = b.suspended().map(|(h, _)| h);
        if let Some(h) = kept_by.filter(|&h| h < n) {
            p.busy_x[h] = true;
        }
        b.begin(self.now_s);
        match kept_by {
            // The main loop keeping it too (it cannot be back from its poll while it holds it).
            Some(h) if h == n => true,
            // Back from its poll it takes the lock first (`os_host_main_loop_wait()`): kept by
            // another, it sleeps.
            Some(_) if m.woken() => false,
            _ => self.main_runnable,
        }
    }

    /// `bql`, after the host's plan (docs/scheduler.md §10.54): a holder the plan leaves
    /// runnable without a core keeps the lock; threads that come to a kept lock as they get a
    /// core block at once and their cores are picked again; a kept holder given a core sets its
    /// release going; the main loop's sleep on the lock is timed.
    fn lock_after_plan(&mut self, e: &mut eevdf::Eevdf, p: &mut PlanLock, busy: &[bool]) {
        let (Some(b), Some(m)) = (self.bql.as_mut(), self.main.as_ref()) else { return };
        let n = self.holds.len();
        // Not one that blocked on it here (the model's waiter takes it at the release however
        // it is run) nor one whose vCPU halted (it let the lock go to halt).
        if let Some((k, left)) = p.past {
            let out = if k < n {
                p.held_before[k] && busy[k] && !p.blocked[k] && !p.holds_x[k]
            } else {
                p.main_held_before && self.main_runnable && !p.holds_x[n]
            };
            if out {
                b.suspend(k, left);
            }
        }
        if b.suspended().is_none() {
            if let Some(w) = Self::preempting_wake(e, p, busy, m.woken()) {
                b.keep_across_wake(w);
            }
        }
        if let Some((h, _)) = b.suspended().filter(|&(h, _)| !p.holds_x[h]) {
            // Threads that come to the lock as they get their core find it held and block at
            // once: the main loop starting its run, a vCPU back from a halt (its retake in
            // `qemu_wait_io_event()`). Their cores are picked again.
            let mut again = false;
            if h != n && p.holds_x[n] && m.woken() {
                e.block_on_bql(n, &mut p.holds_x);
                p.busy_x[n] = false;
                self.main_stat.slices += 1;
                self.main_stat.voluntary += 1;
                again = true;
            }
            let back: Vec<usize> =
                (0..n).filter(|&c| c != h && p.holds_x[c] && !p.held_before[c] && self.asleep[c]).collect();
            for c in back {
                e.block_on_bql(c, &mut p.holds_x);
                b.wait_from(c, self.now_s);
                p.busy_x[c] = false;
                self.retaken[c] = true;
                self.threads[c].slices += 1;
                p.before[c] = false;
                p.lock[c] = true;
                self.threads[c].voluntary += 1;
                again = true;
            }
            if again {
                let more = e.plan(&p.busy_x, &mut p.holds_x);
                p.cycled.iter_mut().zip(more).for_each(|(x, y)| *x |= y);
            }
        }
        if b.suspended().is_some_and(|(h, _)| p.holds_x[h]) {
            self.release_at = Some(b.resume(self.now_s));
        }
        for c in 0..n {
            self.lock_wait[c] = b.waiting()[c];
        }
        // The main loop asleep on the lock: since when, its wait counted once it wakes.
        let asleep = !p.busy_x[n] && self.main_runnable;
        match (asleep, self.main_lock_since) {
            (true, None) => self.main_lock_since = Some(self.now_s),
            (false, Some(since)) => {
                b.waited(n, self.now_s - since);
                self.main_lock_since = None;
            }
            _ => {}
        }
    }

    /// The writer of the earliest write since the last plan whose woken thread this plan gives
    /// its writer's core while the writer, still running guest code, is left runnable without
    /// one: the wake-up preempted it (`kernel/sched/fair.c: check_preempt_wakeup_fair()`, the
    /// host's plan) inside the hold, so it keeps the lock (docs/scheduler.md §10.58). A thread
    /// woken twice counts its first wake-up; the main loop (thread `n`) only if it is about to
    /// start its run (`main_woken`).
    fn preempting_wake(e: &eevdf::Eevdf, p: &PlanLock, busy: &[bool], main_woken: bool) -> Option<usize> {
        let n = p.held_before.len();
        let mut wakes = p.wakes.clone();
        wakes.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut seen = vec![false; n + 1];
        for (_, w, k) in wakes {
            if std::mem::replace(&mut seen[k], true) {
                continue;
            }
            let woken = p.holds_x[k] && if k < n { !p.held_before[k] } else { main_woken };
            let out = p.held_before[w] && busy[w] && !p.blocked[w] && !p.holds_x[w];
            if woken && out && e.core_of(k) == e.core_of(w) {
                return Some(w);
            }
        }
        None
    }

    /// What made a host core free at this plan (`wake_chain::Freed`), from the vCPUs that `held`
    /// one before it, those of them that `kept` it through the BQL's blocks (a thread that
    /// blocked left its core even if picked again), which are `busy`, and whether the main loop
    /// held one.
    fn freed(&self, held: &[bool], kept: &[bool], busy: &[bool], main_held: bool) -> wake_chain::Freed {
        use wake_chain::Freed;
        let busy_at = |k: usize| busy.get(k).copied().unwrap_or(false);
        let ran = |k: usize| held[k] && busy_at(k);
        if (0..held.len()).any(|k| held[k] && !busy_at(k)) {
            Freed::RunnerHalted
        } else if main_held && !self.main_holds {
            Freed::MainLoop
        } else if (0..held.len()).any(|k| ran(k) && !kept[k]) {
            Freed::Bql
        } else if (0..held.len()).any(|k| ran(k) && !self.holds[k]) {
            Freed::Preempted
        } else {
            Freed::Other
        }
    }

    /// `rr`: one vCPU at a time in CPU order, until it halts or its kick period ends.
    fn plan_rr(&mut self, busy: &[bool]) {
        let n = self.holds.len();
        for (c, &b) in busy.iter().enumerate().take(n) {
            if self.holds[c] && (!b || self.used_s[c] >= self.cfg.slice_s) {
                self.holds[c] = false;
                self.used_s[c] = 0.0;
            }
        }
        if self.holds.iter().any(|&h| h) {
            return;
        }
        if let Some(c) = (0..n).map(|k| (self.next + k) % n).find(|&c| busy[c]) {
            self.holds[c] = true;
            self.used_s[c] = 0.0;
            self.next = (c + 1) % n;
        }
    }

    /// The vCPUs the last plan runs for the first time since they halted: only now can the
    /// guest's kernel there switch to a thread woken onto it while halted.
    pub fn resumed(&self) -> &[bool] {
        &self.resumed
    }

    /// The vCPUs that hold a core ran `dt` seconds of host time.
    pub fn charge(&mut self, dt: f64) {
        if let Some(e) = self.eevdf.as_mut() {
            let mut holds_x = self.holds.clone();
            if self.main.is_some() {
                holds_x.push(self.main_holds);
            }
            holds_x.extend_from_slice(&self.others_hold);
            e.charge(&holds_x, dt);
        }
        for (r, &h) in self.others_received_s.iter_mut().zip(&self.others_hold) {
            if h {
                *r += dt;
            }
        }
        if let Some(b) = self.bql.as_mut() {
            b.ran(dt, &self.holds);
        }
        if let Some(m) = self.main.as_mut() {
            if self.main_holds {
                self.main_received_s += dt;
                let ended = m.charge(dt);
                self.main_ended |= ended;
                if let Some(b) = self.bql.as_mut().filter(|_| ended) {
                    let running: Vec<bool> = (0..self.holds.len()).map(|c| m.kicked()[c] && self.holds[c]).collect();
                    b.kicked(self.main_run_at, &running);
                }
            } else if self.main_runnable && self.main_lock_since.is_none() {
                self.main_stat.wait_s += dt;
            }
        }
        for (c, &h) in self.holds.iter().enumerate() {
            if h {
                self.used_s[c] += dt;
                self.received_s[c] += dt;
            } else if self.busy[c] && !self.lock_wait[c] {
                self.threads[c].waited(dt);
            }
        }
        if self.eevdf.is_some() {
            self.count_idle(dt);
        }
    }

    /// `mttcg`: the cores no thread holds for `dt`, split into `HostIdle`'s classes.
    fn count_idle(&mut self, dt: f64) {
        let held = self.holds.iter().chain(&self.others_hold).filter(|&&h| h).count() + usize::from(self.main_holds);
        let idle = self.cfg.cores.saturating_sub(held) as f64 * dt;
        if idle == 0.0 {
            return;
        }
        let queued = (0..self.holds.len()).any(|c| self.busy[c] && !self.holds[c] && !self.lock_wait[c])
            || (self.main_runnable && !self.main_holds && self.main_lock_since.is_none());
        if queued {
            self.idle.queued_s += idle;
        } else {
            self.idle.none_queued_s_by_halted[self.busy.iter().filter(|&&b| !b).count()] += idle;
        }
    }

    /// The host runs each vCPU on a thread of its own under its scheduler (`mttcg`).
    pub fn is_mttcg(&self) -> bool {
        self.eevdf.is_some()
    }

    /// `mttcg`: the host cores' idle time so far, by class.
    pub fn idle(&self) -> &HostIdle {
        &self.idle
    }

    /// At the plan from `now_s`: each vCPU's kept tick due since when (None: none due), to time
    /// how late the host runs it.
    pub fn note_ticks(&mut self, due: &[Option<f64>], now_s: f64) {
        for (c, d) in due.iter().enumerate() {
            self.tick_delays[c].note(*d, self.holds[c], now_s);
        }
    }

    /// Each vCPU's `TickDelays` so far.
    pub fn tick_delays(&self) -> &[TickDelays] {
        &self.tick_delays
    }

    /// Each vCPU thread's counts so far, as the host's schedstat and status give them.
    pub fn threads(&self) -> &[ThreadStat] {
        &self.threads
    }

    /// Each vCPU thread's waits after its involuntary switches so far, in order.
    pub fn preempted_waits_s(&self) -> &[Vec<f64>] {
        &self.preempted_waits_s
    }

    /// Host time each of the host's other threads (`other_threads`) received so far.
    pub fn others_received_s(&self) -> &[f64] {
        &self.others_received_s
    }

    /// Host time each vCPU actually received so far.
    pub fn received_s(&self) -> &[f64] {
        &self.received_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(mode: HostMode, cores: usize, slice_s: f64, vcpus: usize) -> HostRun {
        HostRun::new(VcpuHost::new(cores, mode, slice_s), vcpus)
    }

    /// `mttcg` as `GUEST_HOST` has it: a 4 ms tick, 1.5 ms requests.
    fn guest_host(cores: usize) -> VcpuHost {
        VcpuHost { request_s: Some(1.5e-3), ..VcpuHost::new(cores, HostMode::Mttcg, 4e-3) }
    }

    fn eevdf_host(cores: usize, vcpus: usize) -> HostRun {
        HostRun::new(guest_host(cores), vcpus)
    }

    fn held(h: &mut HostRun, busy: &[bool]) -> Vec<usize> {
        h.plan(busy).iter().enumerate().filter(|(_, &x)| x).map(|(c, _)| c).collect()
    }

    /// vruntime, lag kept and deadline of vCPU `c`'s thread, in milliseconds.
    fn ms(h: &HostRun, c: usize) -> (f64, f64, f64) {
        let (v, l, d) = h.eevdf.as_ref().unwrap().state_s(c);
        (v * 1e3, l * 1e3, d * 1e3)
    }

    fn close(a: (f64, f64, f64), b: (f64, f64, f64)) -> bool {
        (a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9 && (a.2 - b.2).abs() < 1e-9
    }

    #[test]
    fn idle_cores_are_split_by_whether_a_thread_waits_and_how_many_vcpus_halt() {
        let mut h = eevdf_host(2, 3);
        // One vCPU busy of three: one core idle, nothing waits, two halted.
        assert_eq!(held(&mut h, &[true, false, false]).len(), 1);
        h.charge(1e-3);
        // All three busy on two cores: none idle.
        held(&mut h, &[true, true, true]);
        h.charge(1e-3);
        // All halted: both cores idle, three halted.
        held(&mut h, &[false, false, false]);
        h.charge(2e-3);
        let i = h.idle();
        assert_eq!(i.queued_s, 0.0);
        assert!((i.none_queued_s_by_halted[2] - 1e-3).abs() < 1e-15, "{i:?}");
        assert!((i.none_queued_s_by_halted[3] - 4e-3).abs() < 1e-15, "{i:?}");
        assert_eq!(i.none_queued_s_by_halted[0] + i.none_queued_s_by_halted[1], 0.0);
    }

    #[test]
    fn round_robin_runs_one_vcpu_at_a_time_in_cpu_order_for_a_kick_period() {
        let mut h = host(HostMode::Rr, 4, 0.1, 3);
        let busy = [true; 3];
        let mut order = Vec::new();
        for _ in 0..12 {
            let now = held(&mut h, &busy);
            // rr is one host thread: one vCPU at a time, whatever the cores.
            assert_eq!(now.len(), 1);
            order.push(now[0]);
            h.charge(0.04);
        }
        // 0.04 s epochs against a 0.1 s kick: three epochs each, in CPU order, round and round.
        assert_eq!(order, vec![0, 0, 0, 1, 1, 1, 2, 2, 2, 0, 0, 0]);
    }

    #[test]
    fn round_robin_skips_halted_vcpus_and_a_halt_ends_the_turn() {
        let mut h = host(HostMode::Rr, 1, 0.1, 4);
        assert_eq!(held(&mut h, &[false, true, false, true]), vec![1]);
        h.charge(0.01);
        // vCPU 1 halts before its kick: the next non-halted one in CPU order runs.
        assert_eq!(held(&mut h, &[false, false, false, true]), vec![3]);
        h.charge(0.01);
        assert_eq!(held(&mut h, &[true, true, false, true]), vec![3]);
        h.charge(0.2);
        assert_eq!(held(&mut h, &[true, true, false, true]), vec![0]);
        // A halted vCPU uses no host time.
        assert_eq!(h.received_s()[2], 0.0);
    }

    #[test]
    fn a_vcpu_halted_half_way_through_its_request_comes_back_with_its_lag_and_preempts() {
        // Linux 6.18 `kernel/sched/fair.c`, by hand (ms; one core, 4 ms tick, 1.5 ms requests).
        let mut h = eevdf_host(1, 2);
        // Both placed at 0 (`place_entity()`, no lag), deadlines 1.5: the tie goes to vCPU 0.
        assert_eq!(held(&mut h, &[true, true]), vec![0]);
        h.charge(4e-3);
        // The tick: vCPU 0 is past its deadline (new one 4 + 1.5) and, at 4 against the
        // average 2, not eligible: vCPU 1 runs.
        assert_eq!(held(&mut h, &[true, true]), vec![1]);
        assert!(close(ms(&h, 0), (4.0, 0.0, 5.5)), "{:?}", ms(&h, 0));
        h.charge(0.75e-3);
        // vCPU 1 halts half-way through its request: the average is (4 + 0.75) / 2 = 2.375, so it
        // sleeps keeping lag 1.625 (under the clamp, max(2 x 1.5, 4) = 4).
        assert_eq!(held(&mut h, &[true, false]), vec![0]);
        assert!(close(ms(&h, 1), (0.75, 1.625, 1.5)), "{:?}", ms(&h, 1));
        h.charge(0.5e-3);
        // Woken while vCPU 0 runs (4.5, protected up to its deadline 5.5): placed at the average
        // 4.5 less its lag scaled by (1 + 1) / 1, i.e. 1.25, deadline 2.75. The new average is
        // 2.875: vCPU 0 is past it, not eligible, so its protection does not count and
        // `__pick_eevdf()` picks the woken vCPU: it preempts.
        assert_eq!(held(&mut h, &[true, true]), vec![1]);
        assert!(close(ms(&h, 1), (1.25, 1.625, 2.75)), "{:?}", ms(&h, 1));
        assert_eq!(h.resumed(), &[false, true]);
    }

    #[test]
    fn a_vcpu_halted_after_running_ahead_is_kept_delayed_and_does_not_preempt() {
        // By hand as above, three vCPUs.
        let mut h = eevdf_host(1, 3);
        assert_eq!(held(&mut h, &[true, true, true]), vec![0]);
        h.charge(4e-3);
        // The tick: vCPU 0 at 4 (deadline 5.5) against the average 4/3; vCPUs 1 and 2 tie at
        // deadline 1.5, CPU order.
        assert_eq!(held(&mut h, &[true, true, true]), vec![1]);
        h.charge(3e-3);
        // vCPU 1 halts at 3, past the average 7/3: not eligible, it stays queued, delayed
        // (`DELAY_DEQUEUE`), its deadline renewed on the way (3 + 1.5). Of the others only vCPU 2
        // (0) is eligible.
        assert_eq!(held(&mut h, &[true, false, true]), vec![2]);
        assert!(close(ms(&h, 1), (3.0, 0.0, 4.5)), "{:?}", ms(&h, 1));
        h.charge(1.75e-3);
        // Woken while delayed: still right of the average (4 + 3 + 1.75) / 3 = 2.917, it is
        // requeued where it stands. vCPU 2 is past its request (1.75 against 1.5): a new deadline
        // (3.25) and a pick, which keeps vCPU 2, the only eligible one.
        assert_eq!(held(&mut h, &[true, true, true]), vec![2]);
        assert!(close(ms(&h, 1), (3.0, 0.0, 4.5)), "{:?}", ms(&h, 1));
        assert!(close(ms(&h, 2), (1.75, 0.0, 3.25)), "{:?}", ms(&h, 2));
    }

    #[test]
    fn a_vcpu_woken_with_no_lag_waits_for_the_running_ones_protected_request() {
        // With lag 0 (never run) and requests as long as the tick (4 ms), the woken vCPU is
        // placed level with the running one, which stays eligible and protected up to its
        // deadline: no preemption until the tick there.
        let mut h = host(HostMode::Mttcg, 1, 4e-3, 2);
        for _ in 0..3 {
            assert_eq!(held(&mut h, &[true, false]), vec![0]);
            h.charge(1e-3);
        }
        assert_eq!(held(&mut h, &[true, true]), vec![0]);
        assert_eq!(h.resumed(), &[false, false]);
        h.charge(1e-3);
        assert_eq!(held(&mut h, &[true, true]), vec![1]);
        assert_eq!(h.resumed(), &[false, true]);
    }

    #[test]
    fn a_vcpu_woken_after_the_running_ones_request_ran_out_preempts_at_the_wake_up() {
        // The same with 1.5 ms requests: at the wake-up `update_curr()` finds vCPU 0 past its
        // deadline (3 against 1.5), renews it (4.5) and picks; the woken vCPU, placed at the
        // average 3 with deadline 4.5, wins the tie (the running one only if strictly earlier).
        let mut h = eevdf_host(1, 2);
        for _ in 0..3 {
            assert_eq!(held(&mut h, &[true, false]), vec![0]);
            h.charge(1e-3);
        }
        assert_eq!(held(&mut h, &[true, true]), vec![1]);
        assert!(close(ms(&h, 0), (3.0, 0.0, 4.5)), "{:?}", ms(&h, 0));
        assert!(close(ms(&h, 1), (3.0, 0.0, 4.5)), "{:?}", ms(&h, 1));
    }

    #[test]
    fn a_vcpu_that_waited_and_halts_keeps_its_lag() {
        // vCPU 1 waits behind vCPU 0's first 4 ms, then halts without having run: the average
        // is 2, its lag 2 (under the clamp, 4), kept for its next wake-up.
        let mut h = eevdf_host(1, 2);
        held(&mut h, &[true, true]);
        h.charge(4e-3);
        assert_eq!(held(&mut h, &[true, false]), vec![0]);
        assert!(close(ms(&h, 1), (0.0, 2.0, 1.5)), "{:?}", ms(&h, 1));
    }

    #[test]
    fn mttcg_shares_the_cores_among_busy_vcpus() {
        let mut h = eevdf_host(2, 4);
        let all = [true; 4];
        assert_eq!(held(&mut h, &all), vec![0, 1]);
        h.charge(4e-3);
        assert_eq!(held(&mut h, &all), vec![2, 3]);
        h.charge(4e-3);
        assert_eq!(held(&mut h, &all), vec![0, 1]);
        for _ in 0..40 {
            held(&mut h, &all);
            h.charge(1e-3);
        }
        // 2 cores x 48 ms among four: 24 ms each, give or take a tick.
        for &r in h.received_s() {
            assert!((r - 24e-3).abs() <= 4e-3 + 1e-12, "{:?}", h.received_s());
        }
    }

    #[test]
    fn the_hosts_other_threads_take_their_fair_share_and_leave_a_free_core_alone() {
        // One always-runnable host thread beside busy vCPU threads, all nice 0 on the host's
        // EEVDF: with three vCPUs on two cores each of the four gets half a core; with one vCPU
        // on two cores neither waits; with one core the vCPU gets half of it.
        for (cores, vcpus, share) in [(2, 3, 0.5), (2, 1, 1.0), (1, 1, 0.5)] {
            let mut h = HostRun::new(VcpuHost { other_threads: 1, ..guest_host(cores) }, vcpus);
            let busy = vec![true; vcpus];
            for _ in 0..400 {
                held(&mut h, &busy);
                h.charge(1e-3);
            }
            // 400 ms; a tick (4 ms) either way.
            for &r in h.received_s().iter().chain(h.others_received_s()) {
                assert!(
                    (r - share * 0.4).abs() <= 4e-3 + 1e-12,
                    "{cores} cores, {vcpus} vCPUs: {:?} {:?}",
                    h.received_s(),
                    h.others_received_s()
                );
            }
        }
    }

    #[test]
    fn other_threads_need_mttcg_and_a_bound() {
        let cfg = |mode, other_threads| VcpuHost {
            cores: 1,
            mode,
            slice_s: 4e-3,
            request_s: None,
            main_loop_s: None,
            other_threads,
            bql: None,
            spin_iteration_s: None,
        };
        assert!(cfg(HostMode::Mttcg, 1).check().is_ok());
        assert!(cfg(HostMode::Rr, 1).check().unwrap_err().contains("other_threads needs mode mttcg"));
        assert!(cfg(HostMode::Rr, 0).check().is_ok());
        assert!(cfg(HostMode::Mttcg, MAX_OTHER_THREADS + 1).check().unwrap_err().contains("at most"));
    }

    #[test]
    fn a_config_without_other_threads_parses_and_writes_none() {
        // Old configs and documents have no `other_threads`: zero, and a zero is not written, so
        // a run without other threads serializes as before.
        let h: VcpuHost = serde_json::from_str(r#"{"cores": 2, "mode": "mttcg", "slice_s": 0.004}"#).unwrap();
        assert_eq!(h.other_threads, 0);
        assert!(!serde_json::to_string(&h).unwrap().contains("other_threads"));
        let h = VcpuHost { other_threads: 1, ..h };
        assert!(serde_json::to_string(&h).unwrap().contains(r#""other_threads":1"#));
    }

    #[test]
    fn a_vcpu_resumes_when_first_run_after_a_halt() {
        let mut h = host(HostMode::Mttcg, 1, 1e-3, 2);
        held(&mut h, &[true, false]);
        assert_eq!(h.resumed(), &[true, false]);
        h.charge(0.5e-3);
        // vCPU 1 gets work but waits for the core (placed level with vCPU 0, which is eligible
        // and protected): not resumed until it gets the core, once.
        assert_eq!(held(&mut h, &[true, true]), vec![0]);
        assert_eq!(h.resumed(), &[false, false]);
        h.charge(0.5e-3);
        assert_eq!(held(&mut h, &[true, true]), vec![1]);
        assert_eq!(h.resumed(), &[false, true]);
        h.charge(1e-3);
        assert_eq!(held(&mut h, &[true, true]), vec![0]);
        assert_eq!(h.resumed(), &[false, false]);
    }

    #[test]
    fn a_vcpu_not_run_gets_no_host_time() {
        let mut h = host(HostMode::Mttcg, 1, 1.5e-3, 2);
        for _ in 0..10 {
            held(&mut h, &[true, true]);
            h.charge(1e-3);
        }
        // One core, two vCPUs: 10 ms of host time between them, about half each.
        let r = h.received_s();
        assert!((r[0] + r[1] - 10e-3).abs() < 1e-12);
        assert!((r[0] - r[1]).abs() <= 2e-3, "{r:?}");
    }

    #[test]
    fn each_vcpu_thread_counts_its_wait_its_slices_and_how_each_ended() {
        // The steps of `a_vcpu_halted_half_way_through_its_request_...` above: vCPU 1 waits the
        // first 4 ms, then preempts vCPU 0 (involuntary for 0), which waits 0.75 ms and gets the
        // core back when vCPU 1 halts (voluntary for 1); a halted vCPU does not wait.
        let mut h = eevdf_host(1, 2);
        held(&mut h, &[true, true]);
        h.charge(4e-3);
        held(&mut h, &[true, true]);
        h.charge(0.75e-3);
        held(&mut h, &[true, false]);
        h.charge(0.5e-3);
        let [a, b] = [h.threads()[0], h.threads()[1]];
        assert_eq!((a.slices, a.voluntary, a.involuntary), (2, 0, 1));
        assert_eq!((b.slices, b.voluntary, b.involuntary), (1, 1, 0));
        assert!((a.wait_s - 0.75e-3).abs() < 1e-12 && (b.wait_s - 4e-3).abs() < 1e-12, "{a:?} {b:?}");
        // vCPU 0's 0.75 ms followed its preemption; vCPU 1's 4 ms wait did not.
        assert!((a.preempted_wait_s - 0.75e-3).abs() < 1e-12 && a.preempted_waits == 1, "{a:?}");
        assert_eq!((b.preempted_wait_s, b.preempted_waits), (0.0, 0));
        // Each such wait is kept on its own, for a stopped balance to cost one of them.
        let waits = h.preempted_waits_s();
        assert!(waits[0].len() == 1 && (waits[0][0] - 0.75e-3).abs() < 1e-12 && waits[1].is_empty(), "{waits:?}");
    }

    #[test]
    fn an_idle_vcpus_tick_counts_once_by_how_late_the_host_first_runs_it_or_as_never_run() {
        let mut d = TickDelays::default();
        // Due at 4 ms, not run at the round from 4.1, run at the round from 4.7: 0.7 ms late.
        d.note(Some(4e-3), false, 4.1e-3);
        d.note(Some(4e-3), true, 4.7e-3);
        // Still due at the next round (a thread queued there kept it from balancing): not again.
        d.note(Some(4e-3), true, 4.8e-3);
        assert_eq!(d.bins, [0, 0, 1, 0, 0, 0, 0]);
        // Due at 8 ms, the vCPU gets work before the host runs it: never run while due.
        d.note(Some(8e-3), false, 8.2e-3);
        d.note(None, true, 9e-3);
        // Due at 12 ms and run in the round it is first seen: within 0.25 ms.
        d.note(Some(12e-3), true, 12.1e-3);
        assert_eq!(d.bins, [1, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn at_the_guests_tick_the_running_vcpu_thread_waits_for_the_bql_and_the_host_picks_afresh() {
        // As `a_vcpu_woken_with_no_lag_...` (4 ms requests and tick), with a guest tick of 1 ms:
        // both placed at 0 (deadlines 4); vCPU 0 runs 1 ms; at the guest's tick it blocks on the
        // BQL, past the average (1 against 0.5): not eligible, kept queued (delayed), requeued
        // where it stands when woken; the pick, nothing protected, takes the eligible vCPU 1.
        let mut h = host(HostMode::Mttcg, 1, 4e-3, 2).with_guest_tick(1e-3);
        assert_eq!(held(&mut h, &[true, true]), vec![0]);
        h.charge(1e-3);
        assert_eq!(held(&mut h, &[true, true]), vec![1]);
        assert_eq!((h.threads()[0].voluntary, h.threads()[0].involuntary), (1, 0));
        // Alone, the blocked thread gets the core back: a new slice, ended voluntarily.
        let mut h = host(HostMode::Mttcg, 1, 4e-3, 2).with_guest_tick(1e-3);
        held(&mut h, &[true, false]);
        h.charge(1e-3);
        assert_eq!(held(&mut h, &[true, false]), vec![0]);
        assert_eq!((h.threads()[0].slices, h.threads()[0].voluntary), (2, 1));
        // A guest tick with no round since changes nothing more.
        assert_eq!(held(&mut h, &[true, false]), vec![0]);
        assert_eq!(h.threads()[0].slices, 2);
    }

    #[test]
    fn a_request_or_main_loop_run_that_is_not_a_positive_number_is_refused() {
        let mut c = VcpuHost {
            cores: 1,
            mode: HostMode::Mttcg,
            slice_s: 4e-3,
            request_s: Some(0.0),
            main_loop_s: None,
            other_threads: 0,
            bql: None,
            spin_iteration_s: None,
        };
        assert!(c.check().unwrap_err().contains("vcpu_host.request_s"));
        c.request_s = Some(1.5e-3);
        assert!(c.check().is_ok());
        c.main_loop_s = Some(-1e-6);
        assert!(c.check().unwrap_err().contains("vcpu_host.main_loop_s"));
        // `rr`'s one thread runs the timers between vCPUs itself: no main loop thread to model.
        c.main_loop_s = Some(16e-6);
        c.mode = HostMode::Rr;
        assert!(c.check().unwrap_err().contains("needs mode mttcg"));
    }

    /// `GUEST_HOST` with its main loop thread, `cores` cores, and the BQL `bql`.
    fn bql_host(cores: usize, vcpus: usize, bql: Option<BqlCfg>) -> HostRun {
        let cfg = VcpuHost { main_loop_s: Some(16e-6), bql, ..guest_host(cores) };
        HostRun::new(cfg, vcpus).with_guest_tick(4e-3).with_seed(1)
    }

    /// One round of 60 µs from `t` (ms) with the vCPUs' `busy` and ticks running while busy.
    fn round(h: &mut HostRun, t_ms: f64, busy: &[bool]) -> Vec<usize> {
        let timers: Vec<Option<Timer>> = busy.iter().map(|&b| b.then_some(Timer::Tick)).collect();
        h.arm_main_loop(&timers, t_ms * 1e-3);
        let run = held(h, busy);
        h.charge(60e-6);
        run
    }

    #[test]
    fn with_the_lock_never_contended_the_host_runs_as_without_it() {
        // Holds of a femtosecond: no two takes overlap (the main loop's kicks aside, which wait
        // with the lock as without it), so every plan and count is the lock-free host's, up to
        // the first write whose wake-up preempts its writer: that one keeps even this hold
        // (§10.58).
        let tiny = BqlCfg { hold_vcpu_s: 1e-15, hold_main_s: 1e-15, clock_reads_per_busy_s: 5000.0 };
        let (mut a, mut b) = (bql_host(1, 3, None), bql_host(1, 3, Some(tiny)));
        let mut rounds = 0;
        for r in 0..400 {
            // Each vCPU halts for a stretch now and then, so it comes back from halts.
            let busy: Vec<bool> = (0..3).map(|c| (r / (7 + 3 * c)) % 3 != 0).collect();
            let (x, y) = (round(&mut a, r as f64 * 0.06, &busy), round(&mut b, r as f64 * 0.06, &busy));
            if b.bql_stats().unwrap().iter().any(|s| s.kept_wake > 0) {
                break;
            }
            assert_eq!(x, y, "round {r}");
            assert_eq!(a.threads(), b.threads());
            rounds += 1;
        }
        assert!(rounds >= 40, "{rounds}");
        let s = b.bql_stats().unwrap();
        // The vCPU threads took it (halts, EOIs, clock reads), the main loop at each run.
        assert!(s[..3].iter().all(|x| x.takes > 5) && s[3].takes > 0, "{s:?}");
        assert_eq!(s[3].waits, 0);
    }

    #[test]
    fn a_vcpu_thread_that_finds_the_lock_held_blocks_and_is_woken_at_the_release() {
        // Two cores, two busy vCPUs, no clock reads, their ticks stopped (the main loop stays
        // asleep). In the fourth round vCPU 0's guest sends an IPI 10 µs in (an ICR write: 2 µs
        // held), vCPU 1's 1 µs later: vCPU 1 waits 1 µs. At the next plan it blocks (a
        // voluntary switch) and, woken at the release, takes its core again (a new slice);
        // vCPU 0 is not switched.
        let cfg = BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 8e-6, clock_reads_per_busy_s: 0.0 };
        let mut h = bql_host(2, 2, Some(cfg));
        let round = |h: &mut HostRun, t_ms: f64, ipis: &[(usize, f64)]| {
            h.arm_main_loop(&[None, None], t_ms * 1e-3);
            let run = held(h, &[true, true]);
            for &(c, at_ms) in ipis {
                h.ipi_sent(c, at_ms * 1e-3, 1 - c);
            }
            h.charge(60e-6);
            run
        };
        for r in 0..3 {
            assert_eq!(round(&mut h, r as f64 * 0.06, &[]), vec![0, 1]);
        }
        let (threads, locks) = (h.threads().to_vec(), h.bql_stats().unwrap().to_vec());
        assert_eq!(round(&mut h, 0.18, &[(0, 0.19), (1, 0.191)]), vec![0, 1]);
        assert_eq!(h.threads(), &threads[..], "resolved only at the next plan");
        assert_eq!(round(&mut h, 0.24, &[]), vec![0, 1]);
        let s = h.bql_stats().unwrap();
        assert_eq!((s[0].takes - locks[0].takes, s[0].waits - locks[0].waits), (1, 0));
        assert_eq!((s[1].takes - locks[1].takes, s[1].waits - locks[1].waits), (1, 1));
        assert!((s[1].wait_s - locks[1].wait_s - 1e-6).abs() < 1e-12, "{s:?}");
        let (a, b) = (h.threads()[0], h.threads()[1]);
        assert_eq!((a.voluntary, a.slices), (threads[0].voluntary, threads[0].slices));
        assert_eq!((b.voluntary, b.slices), (threads[1].voluntary + 1, threads[1].slices + 1));
        assert_eq!(b.involuntary, threads[1].involuntary);
    }

    /// One core, two vCPUs, no clock reads, their ticks stopped (ms): vCPU 1 runs alone from 0;
    /// vCPU 0 wakes at 1 and gets the core at the host's tick at 4 (vCPU 1 past its deadline);
    /// it takes the lock (an IPI) at `at_ms`, 2 µs held; the tick at 8 switches it out for
    /// vCPU 1 (vruntimes 5 and 4), which sends an IPI at 8.1. The plans up to the one at 8.2.
    fn straddle(at_ms: f64) -> HostRun {
        let cfg = BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 8e-6, clock_reads_per_busy_s: 0.0 };
        let mut h = bql_host(1, 2, Some(cfg));
        let plan = |h: &mut HostRun, t_ms: f64, busy: &[bool]| {
            h.arm_main_loop(&[None, None], t_ms * 1e-3);
            held(h, busy)
        };
        assert_eq!(plan(&mut h, 0.0, &[false, true]), vec![1]);
        h.charge(1e-3);
        assert_eq!(plan(&mut h, 1.0, &[true, true]), vec![1]);
        h.charge(3e-3);
        assert_eq!(plan(&mut h, 4.0, &[true, true]), vec![0]);
        h.ipi_sent(0, at_ms * 1e-3, 1);
        h.charge(4e-3);
        assert_eq!(plan(&mut h, 8.0, &[true, true]), vec![1]);
        h.ipi_sent(1, 8.1e-3, 0);
        h.charge(0.2e-3);
        plan(&mut h, 8.2, &[true, true]);
        h
    }

    /// The plan at the kept hold's release `at_s` (two busy vCPUs, no timers): vCPU 1, asleep on
    /// the lock, has taken it and is awake. The lock's counts then.
    fn vcpu_1_at_the_release(h: &mut HostRun, at_s: f64) -> Vec<BqlStat> {
        h.arm_main_loop(&[None, None], at_s);
        h.plan(&[true, true]);
        assert!(!h.lock_wait[1]);
        h.bql_stats().unwrap().to_vec()
    }

    #[test]
    fn a_hold_straddling_its_holders_switch_out_blocks_a_later_taker_until_the_holder_ran_again() {
        // vCPU 0's take at 7.999 ms holds to 8.001: at the tick it leaves its core 1 µs short of
        // its unlock and keeps the lock. vCPU 1's take at 8.1 finds it held: at the plan at 8.2 it
        // sleeps on the futex (voluntary, not runnable), so the core goes back to vCPU 0, which
        // runs the rest of its hold: the round ends at the release, 8.201.
        let mut h = straddle(7.999);
        assert_eq!(h.holds, vec![true, false]);
        assert!(h.lock_wait[1]);
        assert_eq!(h.bql_stats().unwrap()[0].kept, 1);
        // (Its involuntary switch is the tick's at 4.)
        assert_eq!((h.threads()[1].voluntary, h.threads()[1].involuntary), (1, 1));
        assert!((h.next_event_s().unwrap() - 8.201e-3).abs() < 1e-12, "{:?}", h.next_event_s());
        // Asleep, vCPU 1 is not waiting for a core: no run delay.
        let before = h.threads()[1].wait_s;
        h.charge(1e-6);
        assert_eq!(h.threads()[1].wait_s, before);
        // At the release vCPU 1 takes the lock: 101 µs waited; it wakes.
        let s = vcpu_1_at_the_release(&mut h, 8.201e-3);
        // (Its other three takes: back from its halt at 0.)
        assert_eq!((s[1].takes, s[1].waits), (4, 1));
        assert!((s[1].wait_s - 0.101e-3).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn a_hold_that_ends_before_its_holders_switch_out_blocks_nobody() {
        // vCPU 0's take at 7.997 ms is over at 7.999: vCPU 1's take at 8.1 finds the lock free
        // and vCPU 1 keeps its core.
        let h = straddle(7.997);
        assert_eq!(h.holds, vec![false, true]);
        assert!(!h.lock_wait[1]);
        assert_eq!(h.threads()[1].voluntary, 0);
        assert!(h.bql_stats().unwrap().iter().all(|s| s.waits == 0 && s.kept == 0));
        assert_eq!(h.next_event_s(), None);
    }

    #[test]
    fn switched_out_holders_run_the_same_for_the_same_seed() {
        // One core, three vCPUs and a busy host thread, the lock's inputs as `vm check`'s, rounds
        // of up to 60 µs cut at the host's events as the engine cuts them: some holds are kept
        // across a switch-out (a wait far longer than any hold), and a seed gives the same counts.
        let run = |seed| {
            let cfg = BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 7e-6, clock_reads_per_busy_s: 5300.0 };
            let host = VcpuHost { main_loop_s: Some(16e-6), bql: Some(cfg), other_threads: 1, ..guest_host(1) };
            let mut h = HostRun::new(host, 3).with_guest_tick(4e-3).with_seed(seed);
            let mut t = 0.0;
            for r in 0..20_000 {
                let busy: Vec<bool> = (0..3).map(|c| (r / (70 + 30 * c)) % 4 != 0).collect();
                let timers: Vec<Option<Timer>> = busy.iter().map(|&b| b.then_some(Timer::Tick)).collect();
                h.arm_main_loop(&timers, t);
                h.plan(&busy);
                let end = h.next_event_s().filter(|&e| e > t + 1e-12 && e < t + 60e-6 - 1e-12).unwrap_or(t + 60e-6);
                h.charge(end - t);
                t = end;
            }
            (h.threads().to_vec(), h.bql_stats().unwrap().to_vec())
        };
        let (threads, locks) = run(5);
        assert_eq!((threads.clone(), locks.clone()), run(5));
        assert!(locks[..3].iter().any(|s| s.waits > 0 && s.wait_s / s.waits as f64 > 20e-6), "{locks:?}");
        // Some kept across the wake-up of the main loop their timer write caused (§10.58).
        assert!(locks[..3].iter().any(|s| s.kept_wake > 0), "{locks:?}");
        assert_ne!(locks, run(6).1);
    }

    #[test]
    fn a_main_loop_that_keeps_the_lock_runs_again_and_lets_it_go() {
        // One core, two busy vCPUs ticking every 4 ms. The main loop, switched out mid-hold with
        // 5 µs of it to run (as `lock_after_plan` leaves it), keeps the lock: it stays runnable
        // until it lets it go (it cannot sleep on a lock it holds itself, even when a timer is
        // due for it), so within a few of the host's requests it runs again and releases.
        let cfg = BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 16e-6, clock_reads_per_busy_s: 5300.0 };
        let mut h = bql_host(1, 2, Some(cfg));
        let busy = [true, true];
        let timers = [Some(Timer::Tick), Some(Timer::Tick)];
        let mut t = 0.0;
        let step = |h: &mut HostRun, t: &mut f64| {
            h.arm_main_loop(&timers, *t);
            h.plan(&busy);
            let end = h.next_event_s().filter(|&e| e > *t + 1e-12 && e < *t + 60e-6 - 1e-12).unwrap_or(*t + 60e-6);
            h.charge(end - *t);
            *t = end;
        };
        while t < 3.99e-3 {
            step(&mut h, &mut t);
        }
        h.bql.as_mut().unwrap().suspend(2, 5e-6);
        let kept_at = t;
        while h.bql.as_ref().unwrap().suspended().is_some() {
            assert!(t - kept_at < 20e-3, "the main loop's hold kept from {kept_at} s to {t} s");
            step(&mut h, &mut t);
        }
        assert!(h.main_received_s > 0.0);
    }

    /// One core, two vCPUs, no clock reads, the ticks stopped (ms), `request_s` the host's
    /// request: vCPU 1 halted, vCPU 0 runs 3 ms in rounds of 1 ms and at 2.5 sends vCPU 1 an IPI
    /// (2 µs held); the plan at 3 sees vCPU 1 woken. Returns the host and that plan's cores.
    fn ipi_wake(request_s: f64) -> (HostRun, Vec<usize>) {
        let cfg = BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 8e-6, clock_reads_per_busy_s: 0.0 };
        let host = VcpuHost { main_loop_s: Some(16e-6), bql: Some(cfg), request_s: Some(request_s), ..guest_host(1) };
        let mut h = HostRun::new(host, 2).with_guest_tick(4e-3).with_seed(1);
        for r in 0..3 {
            h.arm_main_loop(&[None, None], r as f64 * 1e-3);
            assert_eq!(held(&mut h, &[true, false]), vec![0]);
            if r == 2 {
                h.ipi_sent(0, 2.5e-3, 1);
            }
            h.charge(1e-3);
        }
        h.arm_main_loop(&[None, None], 3e-3);
        let run = held(&mut h, &[true, true]);
        (h, run)
    }

    #[test]
    fn an_ipi_whose_wake_up_preempts_its_writer_keeps_the_lock_and_the_woken_vcpu_blocks_on_it() {
        // With 1.5 ms requests vCPU 1's wake-up preempts vCPU 0 (as in
        // `a_vcpu_woken_after_the_running_ones_request_ran_out_preempts_at_the_wake_up`). The
        // ICR write woke it inside its hold, so vCPU 0 keeps the lock with its 2 µs to run;
        // vCPU 1, given the core, retakes the lock (`qemu_wait_io_event()`), finds it held and
        // sleeps (a voluntary switch), and the core goes back to vCPU 0, which lets the lock go
        // at 3.002. vCPU 1 then takes it: 2 µs waited.
        let (mut h, run) = ipi_wake(1.5e-3);
        assert_eq!(run, vec![0]);
        let s = h.bql_stats().unwrap();
        assert_eq!((s[0].kept, s[0].kept_wake, s[1].kept), (1, 1, 0));
        assert!(h.lock_wait[1]);
        assert_eq!((h.threads()[1].slices, h.threads()[1].voluntary), (1, 1));
        assert!((h.next_event_s().unwrap() - 3.002e-3).abs() < 1e-12, "{:?}", h.next_event_s());
        h.charge(2e-6);
        let s = vcpu_1_at_the_release(&mut h, 3.002e-3);
        // Its retake waited from 3 to the release.
        assert_eq!((s[1].takes, s[1].waits), (1, 1));
        assert!((s[1].wait_s - 2e-6).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn an_ipi_whose_wake_up_does_not_preempt_its_writer_keeps_nothing() {
        // With 4 ms requests vCPU 0 stays protected to its deadline: vCPU 1 queues, the write's
        // hold ended at 2.502, nobody waits.
        let (h, run) = ipi_wake(4e-3);
        assert_eq!(run, vec![0]);
        assert!(h.bql_stats().unwrap().iter().all(|s| s.kept == 0 && s.waits == 0));
        assert!(!h.lock_wait[1]);
        assert_eq!(h.next_event_s(), None);
    }

    #[test]
    fn a_timer_write_whose_wake_up_of_the_main_loop_preempts_its_writer_keeps_the_lock() {
        // One core, one vCPU running from 0 with its tick (4 ms jiffies); the main loop wakes
        // for it at 4 and delivers it; the vCPU sets the next jiffy (a TMICT write, the only
        // pending timer: it notifies the main loop) and the main loop, woken with the lag it
        // kept, preempts it at the plan (its request long over). It blocks on the kept lock at
        // once; the vCPU runs its hold's rest and lets it go; the main loop then runs.
        let cfg = BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 8e-6, clock_reads_per_busy_s: 0.0 };
        let mut h = bql_host(1, 1, Some(cfg));
        let mut t: f64 = 0.0;
        let mut kept_at = None;
        while t < 12e-3 && kept_at.is_none() {
            h.arm_main_loop(&[Some(Timer::Tick)], t);
            h.plan(&[true]);
            if h.bql_stats().unwrap()[0].kept_wake > 0 {
                kept_at = Some(t);
                break;
            }
            let end = h.next_event_s().filter(|&e| e > t + 1e-12 && e < t + 60e-6 - 1e-12).unwrap_or(t + 60e-6);
            h.charge(end - t);
            t = end;
        }
        assert!(kept_at.is_some(), "no wake-up preempted the writer");
        assert_eq!(h.holds, vec![true]);
        assert!(!h.main_holds && h.main_lock_since.is_some());
        let release = h.next_event_s().unwrap();
        assert!((release - t - 2e-6).abs() < 1e-12, "{release} {t}");
        h.charge(release - t);
        h.arm_main_loop(&[Some(Timer::Tick)], release);
        h.plan(&[true]);
        assert!(h.main_lock_since.is_none());
        assert_eq!(h.bql_stats().unwrap()[1].waits, 1);
    }

    #[test]
    fn a_bql_needs_the_main_loop_thread() {
        let bql = Some(BqlCfg { hold_vcpu_s: 2e-6, hold_main_s: 8e-6, clock_reads_per_busy_s: 5000.0 });
        assert!(VcpuHost { bql: bql.clone(), ..guest_host(1) }.check().unwrap_err().contains("needs main_loop_s"));
        assert!(VcpuHost { bql, main_loop_s: Some(16e-6), ..guest_host(1) }.check().is_ok());
    }

    #[test]
    fn the_main_loop_thread_waits_for_the_running_vcpus_request_then_runs_and_only_then_delivers() {
        // Linux 6.18 `kernel/sched/fair.c` by hand (ms; one core, 4 ms tick, 1.5 ms requests,
        // QEMU's main loop running 16 µs a wake-up).
        let cfg = VcpuHost {
            cores: 1,
            mode: HostMode::Mttcg,
            slice_s: 4e-3,
            request_s: Some(1.5e-3),
            main_loop_s: Some(16e-6),
            other_threads: 0,
            bql: None,
            spin_iteration_s: None,
        };
        let mut h = HostRun::new(cfg, 2).with_guest_tick(4e-3);
        let timers = [Some(Timer::Tick), None];
        let at = |h: &mut HostRun, t: f64| {
            h.arm_main_loop(&timers, t);
            held(h, &[true, false])
        };
        assert_eq!(at(&mut h, 0.0), vec![0]);
        h.charge(1e-3);
        // vCPU 0 has run and set its tick (4 ms) onto an empty timer list: the main loop wakes
        // (`qemu_notify_event()`), placed level with vCPU 0 (no lag yet, vruntime 1); vCPU 0 is
        // eligible and protected up to its deadline 1.5: no preemption.
        assert_eq!(at(&mut h, 1e-3), vec![0]);
        assert_eq!(h.next_event_s(), None);
        h.charge(3e-3);
        // The host's tick at 4: vCPU 0 past its deadline (renewed to 5.5) and, at 4 against the
        // average 2.5, not eligible; the main loop (1, deadline 2.5) takes the core, vCPU 0
        // preempted. Nothing delivered yet: the loop has not run.
        assert_eq!(at(&mut h, 4e-3), Vec::<usize>::new());
        assert_eq!(h.threads()[0].involuntary, 1);
        assert_eq!(h.timers_through_s(), f64::NEG_INFINITY);
        assert!((h.next_event_s().unwrap() - 4.016e-3).abs() < 1e-12);
        h.charge(16e-6);
        // Its run over: vCPU 0's tick, expired when it started (4), is delivered; it sleeps
        // (voluntary) and vCPU 0 gets the core back.
        assert_eq!(h.timers_through_s(), 4e-3);
        assert_eq!(at(&mut h, 4.016e-3), vec![0]);
        let (main, run_s) = h.main_loop_thread().unwrap();
        assert_eq!((main.slices, main.voluntary, main.involuntary), (1, 1, 0));
        assert!((main.wait_s - 3e-3).abs() < 1e-12 && (run_s - 16e-6).abs() < 1e-12, "{main:?} {run_s}");
    }
}
