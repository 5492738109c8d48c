//! Loads as Charm++'s load-balancing database records them: each entry method is timed by
//! `LBObj::StartTimer`/`StopTimer` (src/ck-ldb/LBObj.C), which read both `CmiWallTimer` and
//! `CmiCpuTimer`; `+LBUseCpuTime` (src/ck-ldb/LBDatabase.C, `_loadbalancerInit`) makes the
//! strategies see the CPU time instead of the wall time. The records add up over the period since
//! the last balancing step, and the strategy gets them at `AtSync` (`CentralLB::ReceiveStats`).
//!
//! What the timers see beyond the true load, per PE and iteration, while the PE's objects run:
//! - Timer resolution: with `CMK_TIMER_USE_GETRUSAGE` (Linux builds, src/conv-core/convcore.C)
//!   the wall timer reads `gettimeofday` and the CPU timer `getrusage`, both in whole
//!   microseconds; one entry method's time is the difference of two such readings, off by a
//!   triangular error within +-1 us. An object runs one entry method per iteration plus one per
//!   message it receives.
//! - Background work, the machine's noise as the scheduler simulation describes it
//!   (crates/numalab-sim/src/sched/noise.rs, docs/scheduler.md §6; the same estimates, repeated
//!   here since this crate does not depend on the simulator): the timer tick (250 Hz, 2 us),
//!   per-CPU kernel threads (20 wake-ups/s per CPU, exponential of mean 30 us) and daemons
//!   (4 wake-ups/s per machine on a random CPU, exponential of mean 1 ms, at most 20 ms). The
//!   tick is periodic from a random phase of the PE's busy span; the others land at uniform
//!   times of it; each inside the object running then.
//! - Wall or CPU timer: the wall timer counts every background microsecond inside the object's
//!   window; the CPU timer (`getrusage`) counts only the tick, whose interrupt time runs in the
//!   interrupted task's clock on kernels without `CONFIG_IRQ_TIME_ACCOUNTING` (the study's
//!   2.6.32-era kernels; kernel/sched/core.c: `update_rq_clock_task`), not the other tasks'
//!   time.
//!
//! The true loads, which the simulation runs on, are left as they are: noise changes what the
//! balancer believes, not the work.

use crate::error::TaskError;
use crate::gen::Params;
use crate::rng::Rng;

/// Which timer the database reads (`+LBUseCpuTime` chooses the CPU one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LbTimer {
    Wall,
    Cpu,
}

impl LbTimer {
    pub fn parse(s: &str) -> Result<Self, TaskError> {
        match s {
            "wall" => Ok(LbTimer::Wall),
            "cpu" => Ok(LbTimer::Cpu),
            other => Err(TaskError::param(format!("lb_timer = '{other}' (accepted: wall, cpu)"))),
        }
    }
}

/// The noise estimates (docs/scheduler.md §6), each scaled by `scale` (0: a quiet machine whose
/// measured loads are the true ones, 1: the estimates).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseParams {
    pub scale: f64,
    pub timer_resolution_ns: f64,
    pub tick_hz: f64,
    pub tick_ns: f64,
    pub kthread_hz: f64,
    pub kthread_mean_ns: f64,
    pub daemon_hz: f64,
    pub daemon_mean_ns: f64,
    pub daemon_max_ns: f64,
}

impl Default for NoiseParams {
    fn default() -> Self {
        NoiseParams {
            scale: 0.0,
            timer_resolution_ns: 1_000.0,
            tick_hz: 250.0,
            tick_ns: 2_000.0,
            kthread_hz: 20.0,
            kthread_mean_ns: 30_000.0,
            daemon_hz: 4.0,
            daemon_mean_ns: 1e6,
            daemon_max_ns: 20e6,
        }
    }
}

impl NoiseParams {
    /// `os_noise` (the scale, 0 to 100) from a parameter table.
    pub fn read(p: &mut Params<'_>) -> Result<Self, TaskError> {
        let scale = p.f64("os_noise", 0.0, 0.0)?;
        if scale > 100.0 {
            return Err(TaskError::param(format!(
                "os_noise = {scale} (accepted: 0 to 100, 1 = the machine's noise estimates)"
            )));
        }
        Ok(NoiseParams { scale, ..NoiseParams::default() })
    }

    pub fn is_on(&self) -> bool {
        self.scale > 0.0
    }
}

/// The database's timers over one run: seeded, one stream of its own.
pub struct Meter {
    params: NoiseParams,
    timer: LbTimer,
    rng: Rng,
    /// Objects of each PE, rebuilt when the mapping changes.
    by_pe: Vec<Vec<u32>>,
}

impl Meter {
    pub fn new(params: NoiseParams, timer: LbTimer, seed: u64) -> Self {
        Meter { params, timer, rng: Rng::new(seed, 13), by_pe: Vec::new() }
    }

    /// The mapping changed (or is new): regroup the objects by PE.
    pub fn remap(&mut self, map: &[u32], n_pes: usize) {
        self.by_pe = vec![Vec::new(); n_pes];
        for (i, &p) in map.iter().enumerate() {
            self.by_pe[p as usize].push(i as u32);
        }
    }

    fn normal(&mut self) -> f64 {
        // Box-Muller; 1 - unit() is in (0, 1].
        let (u, v) = (1.0 - self.rng.unit(), self.rng.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    fn exp(&mut self, mean: f64) -> f64 {
        -(1.0 - self.rng.unit()).ln() * mean
    }

    /// Poisson count of mean `m` (Knuth's product for small means, a rounded normal for large).
    fn poisson(&mut self, m: f64) -> u64 {
        if m <= 0.0 {
            return 0;
        }
        if m > 30.0 {
            return (m + m.sqrt() * self.normal()).round().max(0.0) as u64;
        }
        let (limit, mut prod, mut k) = ((-m).exp(), self.rng.unit(), 0u64);
        while prod > limit {
            prod *= self.rng.unit();
            k += 1;
        }
        k
    }

    /// Add one iteration's measurement of `true_obj` (each object's true time this iteration,
    /// compute and its own messaging) to `acc`; `entries[i]` = entry methods object `i` ran.
    pub fn record(&mut self, true_obj: &[f64], entries: &[f64], acc: &mut [f64]) {
        if !self.params.is_on() {
            for (a, t) in acc.iter_mut().zip(true_obj) {
                *a += t;
            }
            return;
        }
        let p = self.params;
        let s = p.scale;
        let n_pes = self.by_pe.len().max(1);
        let res_sd = p.timer_resolution_ns * (s / 6.0).sqrt();
        let mut measured: Vec<f64> = true_obj.to_vec();
        for (i, m) in measured.iter_mut().enumerate() {
            *m += res_sd * entries[i].sqrt() * self.normal();
        }
        let by_pe = std::mem::take(&mut self.by_pe);
        let mut prefix = Vec::new();
        for objs in &by_pe {
            if objs.is_empty() {
                continue;
            }
            prefix.clear();
            let mut busy = 0.0;
            for &i in objs {
                busy += true_obj[i as usize];
                prefix.push(busy);
            }
            if busy <= 0.0 {
                continue;
            }
            let busy_s = busy / 1e9;
            // The tick, on both timers: periodic with a random phase, so the object running
            // from a to b takes the ticks falling in [a, b), counted without visiting each (a
            // PE busy for seconds sees hundreds of thousands a run).
            let per_ns = p.tick_hz * s / 1e9;
            let phase = self.rng.unit();
            let mut start = 0.0;
            for (k, &end) in prefix.iter().enumerate() {
                let ticks = (end * per_ns + phase).floor() - (start * per_ns + phase).floor();
                measured[objs[k] as usize] += ticks * p.tick_ns;
                start = end;
            }
            let mut events: Vec<f64> = Vec::new();
            if self.timer == LbTimer::Wall {
                for _ in 0..self.poisson(busy_s * p.kthread_hz * s) {
                    events.push(self.exp(p.kthread_mean_ns));
                }
                for _ in 0..self.poisson(busy_s * p.daemon_hz * s / n_pes as f64) {
                    events.push(self.exp(p.daemon_mean_ns).min(p.daemon_max_ns));
                }
            }
            for len in events {
                let at = self.rng.unit() * busy;
                let k = prefix.partition_point(|&c| c <= at).min(objs.len() - 1);
                measured[objs[k] as usize] += len;
            }
        }
        self.by_pe = by_pe;
        for (a, m) in acc.iter_mut().zip(&measured) {
            *a += m.max(0.0);
        }
    }
}
