//! The latency-balanced allocation policy of study S4 (docs/allocation.md §12): a per-node
//! latency indicator, smoothed over a sliding window of periodic samples, picks the node a
//! process without an explicit policy allocates on.
//!
//! S4's indicator is the average residency of requests in each socket's uncore global queue
//! (occupancy / allocations of its trackers). Its analogue here is each node's memory-controller
//! residency as the contention solver has it: the node's idle local latency times its loaded-
//! latency factor at the controller's utilisation (docs/contention.md §3), which is what Little's
//! law makes occupancy / allocations. Nodes are sorted by the smoothed indicator; they are
//! balanced when max - min is below the threshold. A process without an explicit policy then
//! allocates on its current node when balanced and on the lowest-latency node otherwise, and that
//! node is recorded as its preferred node: its later pages go there too (node consistency) until
//! the node runs low (free pages at or below its `low` watermark), when the choice is made again.
//! Each allocation starts at the chosen node and falls back along its zonelist as the kernel's
//! `MPOL_PREFERRED` does.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::alloc::Allocator;
use crate::mempolicy::Resolved;

/// `MPOL_PREFERRED` on logical node `node` of `nodes`: the chosen node first, then its zonelist.
pub fn preferred(node: usize, nodes: usize) -> Resolved {
    let mut mask = vec![false; nodes];
    mask[node] = true;
    Resolved {
        mode: numalab_model::PolicyMode::Preferred,
        nodes: vec![node],
        mask,
        weights: vec![1],
        weight_sum: 1,
        numa_balancing: false,
    }
}

/// The policy's three parameters (`--latbal-threshold-ns`, `--latbal-window-ms`,
/// `--latbal-sample-us`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatBalConfig {
    /// Balanced when the smoothed indicators' max - min is below this (ns).
    pub threshold_ns: f64,
    /// The sliding window the indicator is averaged over (ms).
    pub window_ms: f64,
    /// The sampling period (µs); S4 sampled every 0.5 ms.
    pub sample_us: f64,
}

impl LatBalConfig {
    pub fn check(&self) -> Result<(), String> {
        let ok = |v: f64| v.is_finite() && v > 0.0;
        if !(self.threshold_ns.is_finite() && self.threshold_ns >= 0.0) {
            return Err(format!("--latbal-threshold-ns must be a number >= 0, got {}", self.threshold_ns));
        }
        if !ok(self.window_ms) || !ok(self.sample_us) {
            return Err(format!(
                "--latbal-window-ms and --latbal-sample-us must be > 0, got {} and {}",
                self.window_ms, self.sample_us
            ));
        }
        if self.sample_us * 1e-3 > self.window_ms {
            return Err(format!(
                "--latbal-sample-us ({}) is longer than --latbal-window-ms ({} ms): the window would hold no sample",
                self.sample_us, self.window_ms
            ));
        }
        Ok(())
    }
}

/// One allocation decision: a process's preferred node chosen (at its first allocation, or
/// again when its node ran low).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LatBalDecision {
    pub t_s: f64,
    pub pid: u32,
    /// The node (OS index) chosen, and the node the allocating thread's CPU was on.
    pub node: u32,
    pub cpu_node: u32,
    pub balanced: bool,
    /// `first` (no preferred node yet) or `low` (the preferred node ran low).
    pub why: &'static str,
    /// The smoothed indicator per node (ns) the decision read; empty before the first sample.
    pub indicator_ns: Vec<f64>,
}

/// What a run reports: the parameters, the smoothed indicator per node over time, decisions.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LatBalOut {
    pub threshold_ns: f64,
    pub window_ms: f64,
    pub sample_us: f64,
    /// `(t_s, smoothed indicator per node in ns)`, at most `SERIES_POINTS` points.
    pub series: Vec<(f64, Vec<f64>)>,
    pub decisions: Vec<LatBalDecision>,
}

/// Series points kept; when exceeded every other point goes and the spacing doubles.
const SERIES_POINTS: usize = 2000;

pub struct LatBal {
    cfg: LatBalConfig,
    /// Samples inside the window: `(t_s, indicator per node)`.
    samples: VecDeque<(f64, Vec<f64>)>,
    /// The index of the next sample (at `index x period`).
    next_sample: u64,
    /// Per process: its preferred node (logical), once chosen.
    preferred: Vec<Option<usize>>,
    series: Vec<(f64, Vec<f64>)>,
    series_every_s: f64,
    next_series_s: f64,
    decisions: Vec<LatBalDecision>,
}

impl LatBal {
    pub fn new(cfg: LatBalConfig, processes: usize) -> Self {
        LatBal {
            cfg,
            samples: VecDeque::new(),
            next_sample: 0,
            preferred: vec![None; processes],
            series: Vec::new(),
            series_every_s: cfg.window_ms * 1e-3,
            next_series_s: 0.0,
            decisions: Vec::new(),
        }
    }

    /// The controllers held `indicator_ns` over `(t0, t1]` (one epoch of the solver): take the
    /// periodic samples falling in it (a sample at `s` measures the time just before `s`, as a
    /// counter read at `s` does), drop those older than the window.
    pub fn observe(&mut self, t0: f64, t1: f64, indicator_ns: &[f64]) {
        let period = self.cfg.sample_us * 1e-6;
        // Sample k is at k x period (no drift from repeated sums).
        while (self.next_sample as f64) * period <= t0 {
            self.next_sample += 1;
        }
        while (self.next_sample as f64) * period <= t1 {
            self.samples.push_back((self.next_sample as f64 * period, indicator_ns.to_vec()));
            self.next_sample += 1;
        }
        // Keep what a decision in this epoch (from t0 on) may still read.
        let horizon = t0 - self.cfg.window_ms * 1e-3 - period;
        while self.samples.front().is_some_and(|(t, _)| *t < horizon) {
            self.samples.pop_front();
        }
        while self.next_series_s <= t1 {
            let at = self.next_series_s;
            let s = self.smoothed(at);
            if !s.is_empty() {
                self.series.push((at, s));
            }
            self.next_series_s += self.series_every_s;
            if self.series.len() > SERIES_POINTS {
                self.series = self.series.iter().step_by(2).cloned().collect();
                self.series_every_s *= 2.0;
            }
        }
    }

    /// The mean of the samples in `(t - window, t]` per node; empty when there are none yet.
    pub fn smoothed(&self, t: f64) -> Vec<f64> {
        let from = t - self.cfg.window_ms * 1e-3;
        let inside: Vec<&Vec<f64>> =
            self.samples.iter().filter(|(s, _)| *s > from && *s <= t).map(|(_, v)| v).collect();
        let Some(first) = inside.first() else { return Vec::new() };
        let n = inside.len() as f64;
        (0..first.len()).map(|k| inside.iter().map(|v| v[k]).sum::<f64>() / n).collect()
    }

    /// The node process `pid` allocates on now, its thread's CPU being on `cpu_node`; `os` maps
    /// logical nodes to OS indexes for the record.
    pub fn node_for(&mut self, pid: usize, cpu_node: usize, now: f64, alloc: &Allocator, os: &[u32]) -> usize {
        let why = match self.preferred[pid] {
            Some(n) if alloc.free[n] > alloc.marks[n].low => return n,
            Some(_) => "low",
            None => "first",
        };
        let ind = self.smoothed(now);
        // Lowest first; ties to the lower node, so the choice is deterministic.
        let lowest = (0..ind.len()).min_by(|&a, &b| ind[a].total_cmp(&ind[b]).then(a.cmp(&b)));
        let spread =
            ind.iter().copied().fold(f64::NEG_INFINITY, f64::max) - ind.iter().copied().fold(f64::INFINITY, f64::min);
        let balanced = ind.is_empty() || spread < self.cfg.threshold_ns;
        let mut node = if balanced { cpu_node } else { lowest.unwrap_or(cpu_node) };
        // A node that has run low is no choice while another is not.
        if alloc.free[node] <= alloc.marks[node].low {
            let roomy = |k: &usize| alloc.free[*k] > alloc.marks[*k].low;
            let mut order: Vec<usize> = (0..alloc.free.len()).collect();
            order.sort_by(|&a, &b| ind.get(a).unwrap_or(&0.0).total_cmp(ind.get(b).unwrap_or(&0.0)).then(a.cmp(&b)));
            node = order.into_iter().find(roomy).unwrap_or(node);
        }
        self.preferred[pid] = Some(node);
        self.decisions.push(LatBalDecision {
            t_s: now,
            pid: pid as u32,
            node: os[node],
            cpu_node: os[cpu_node],
            balanced,
            why,
            indicator_ns: ind,
        });
        node
    }

    pub fn report(self) -> LatBalOut {
        LatBalOut {
            threshold_ns: self.cfg.threshold_ns,
            window_ms: self.cfg.window_ms,
            sample_us: self.cfg.sample_us,
            series: self.series,
            decisions: self.decisions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> LatBalConfig {
        LatBalConfig { threshold_ns: 10.0, window_ms: 2.0, sample_us: 500.0 }
    }

    #[test]
    fn the_indicator_is_the_mean_of_the_samples_in_the_window() {
        let mut lb = LatBal::new(cfg(), 1);
        lb.observe(0.0, 0.002, &[100.0, 60.0]); // samples at 0.5, 1, 1.5, 2 ms
        lb.observe(0.002, 0.004, &[60.0, 60.0]); // 2.5, 3, 3.5, 4 ms

        // (2.1 ms, 4.1 ms]: all 60.
        assert_eq!(lb.smoothed(0.0041), vec![60.0, 60.0]);
        // (0.6 ms, 2.6 ms]: 1, 1.5, 2 at 100 and 2.5 at 60 on node 0.
        assert_eq!(lb.smoothed(0.0026), vec![90.0, 60.0]);
        // Nothing is known before the first sample: a decision at 0 sees no indicator.
        assert!(lb.smoothed(0.0).is_empty());
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(cfg().check().is_ok());
        assert!(LatBalConfig { threshold_ns: -1.0, ..cfg() }.check().is_err());
        assert!(LatBalConfig { window_ms: 0.0, ..cfg() }.check().is_err());
        assert!(LatBalConfig { sample_us: 5000.0, ..cfg() }.check().unwrap_err().contains("no sample"));
    }
}
