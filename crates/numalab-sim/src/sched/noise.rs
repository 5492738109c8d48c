//! Background activity (docs/scheduler.md §6): what else runs on a real machine while a
//! benchmark does, seeded so that runs with different seeds differ as repeated runs do.
//!
//! - The timer tick: `HZ` = 250 interrupts per second on every busy CPU, ~2 us each (tick
//!   handler, `scheduler_tick`, RCU and timer softirqs) [est.].
//! - Per-CPU kernel threads (`kworker/N`, `ksoftirqd/N`, `rcuc`, `migration/N`): Poisson,
//!   20 wake-ups per second per CPU, exponential duration of mean 30 us [est.]; bound to their
//!   CPU.
//! - Daemons (journald, irqbalance, sshd, cron, monitoring agents): Poisson, 4 wake-ups per
//!   second per machine, exponential duration of mean 1 ms (at most 20 ms) [est.], on a random
//!   CPU, moved to an idle CPU of the same node (LLC) when there is one, as
//!   `select_idle_sibling()` does on wake-up.
//!
//! Background work is runnable on its CPU while it runs: the balancer sees it, and the threads
//! there share the CPU fairly with it (each of `n` threads gets `1/(n+1)` meanwhile).

use crate::rng::Rng;

const TICK_COST_S: f64 = 2e-6;
const KTHREAD_HZ: f64 = 20.0;
const KTHREAD_MEAN_S: f64 = 30e-6;
const DAEMON_HZ: f64 = 4.0;
const DAEMON_MEAN_S: f64 = 1e-3;
const DAEMON_MAX_S: f64 = 20e-3;

pub struct Noise {
    rng: Rng,
    pu_node: Vec<usize>,
    /// (cpu, start, end), in order of start.
    events: Vec<(usize, f64, f64)>,
    next_arrival_s: f64,
}

impl Noise {
    pub fn new(seed: u64, pu_node: Vec<usize>) -> Self {
        let mut n = Noise { rng: Rng::new(seed, 0x5c4ed_u64), pu_node, events: Vec::new(), next_arrival_s: 0.0 };
        n.next_arrival_s = n.exp(n.rate());
        n
    }

    fn rate(&self) -> f64 {
        KTHREAD_HZ * self.pu_node.len() as f64 + DAEMON_HZ
    }

    fn uniform(&mut self) -> f64 {
        // (0, 1]
        ((self.rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    fn exp(&mut self, rate: f64) -> f64 {
        -self.uniform().ln() / rate
    }

    /// Generate the arrivals before `until`, placing daemons with the current load.
    fn generate(&mut self, until: f64, load: &[usize]) {
        let ncpu = self.pu_node.len();
        while self.next_arrival_s < until {
            let t = self.next_arrival_s;
            let pick = self.uniform() * self.rate();
            let cpu0 = self.rng.below(ncpu as u64) as usize;
            let busy =
                |c: usize, ev: &[(usize, f64, f64)]| load[c] > 0 || ev.iter().any(|e| e.0 == c && e.1 <= t && t < e.2);
            let (cpu, dur) = if pick < KTHREAD_HZ * ncpu as f64 {
                (cpu0, self.exp(1.0 / KTHREAD_MEAN_S))
            } else {
                let node = self.pu_node[cpu0];
                let cpu = if busy(cpu0, &self.events) {
                    (0..ncpu).find(|&c| self.pu_node[c] == node && !busy(c, &self.events)).unwrap_or(cpu0)
                } else {
                    cpu0
                };
                (cpu, self.exp(1.0 / DAEMON_MEAN_S).min(DAEMON_MAX_S))
            };
            self.events.push((cpu, t, t + dur));
            self.next_arrival_s = t + self.exp(self.rate());
        }
    }

    /// Fraction of `[a, b)` each CPU spends on background work; `load` = threads per CPU.
    pub fn busy_fraction(&mut self, a: f64, b: f64, load: &[usize]) -> Vec<f64> {
        self.generate(b, load);
        self.events.retain(|e| e.2 > a);
        let len = (b - a).max(1e-12);
        let mut f: Vec<f64> = load.iter().map(|&n| if n > 0 { TICK_COST_S * super::HZ } else { 0.0 }).collect();
        for &(c, s, e) in &self.events {
            let o = e.min(b) - s.max(a);
            if o > 0.0 {
                f[c] += o / len;
            }
        }
        f.iter_mut().for_each(|v| *v = v.min(1.0));
        f
    }

    /// The start of background work running on `cpu` at `t`, if any.
    pub fn active_since(&self, cpu: usize, t: f64) -> Option<f64> {
        self.events.iter().filter(|e| e.0 == cpu && e.1 <= t && t < e.2).map(|e| e.1).reduce(f64::min)
    }

    pub fn active_at(&self, cpu: usize, t: f64) -> bool {
        self.active_since(cpu, t).is_some()
    }
}
