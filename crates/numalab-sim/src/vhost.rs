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
//!   `TCG_GUEST_DEFAULT_MO` within the host's). The host's scheduler shares `cores` among the
//!   threads of the non-halted vCPUs: each runs a slice, then the one that ran least goes next
//!   (`kernel/sched/fair.c: pick_eevdf`, simplified to least runtime first); a halted vCPU's
//!   thread sleeps on its `halt_cond` and comes back with no more runtime than the least of
//!   those waiting (`place_entity()`: a woken entity starts at the queue's average, lag 0).

use serde::{Deserialize, Serialize};

/// How the host runs the guest's vCPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostMode {
    Rr,
    Mttcg,
}

/// The host: its cores for the guest's vCPU threads, the mode, and how long a vCPU keeps a core
/// before the next one's turn (`rr`: the kick period; `mttcg`: the host scheduler's slice).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VcpuHost {
    pub cores: usize,
    pub mode: HostMode,
    pub slice_s: f64,
}

impl VcpuHost {
    /// `numalab: ...` one-line errors for values out of range.
    pub fn check(&self) -> Result<(), String> {
        if self.cores == 0 {
            return Err("vcpu_host.cores must be at least 1 (host cores running the guest's vCPUs)".into());
        }
        if !(self.slice_s.is_finite() && self.slice_s > 0.0) {
            return Err(format!("vcpu_host.slice_s must be a positive number of seconds, got {}", self.slice_s));
        }
        Ok(())
    }

    fn cores(&self) -> usize {
        match self.mode {
            HostMode::Rr => 1,
            HostMode::Mttcg => self.cores,
        }
    }
}

/// Which vCPUs hold a host core, and for how long they have.
pub struct HostRun {
    cfg: VcpuHost,
    /// Per vCPU: holds a host core now, seconds of its current slice used, host time received.
    holds: Vec<bool>,
    used_s: Vec<f64>,
    runtime_s: Vec<f64>,
    /// Per vCPU: host time actually received (`runtime_s` less the credit of `place_entity()`).
    received_s: Vec<f64>,
    /// Per vCPU: it was halted at the last plan (comes back placed, `mttcg`).
    halted: Vec<bool>,
    /// Per vCPU: halted, or back from a halt and not run since; `resumed`: given a core at the
    /// last plan in that state.
    asleep: Vec<bool>,
    resumed: Vec<bool>,
    /// `rr`: the vCPU after the last one given the core.
    next: usize,
}

impl HostRun {
    pub fn new(cfg: VcpuHost, vcpus: usize) -> Self {
        HostRun {
            cfg,
            holds: vec![false; vcpus],
            used_s: vec![0.0; vcpus],
            runtime_s: vec![0.0; vcpus],
            received_s: vec![0.0; vcpus],
            halted: vec![true; vcpus],
            asleep: vec![true; vcpus],
            resumed: vec![false; vcpus],
            next: 0,
        }
    }

    /// The longest epoch the engine may take: a slice.
    pub fn max_epoch_s(&self) -> f64 {
        self.cfg.slice_s
    }

    /// Which vCPUs a host core runs from now on, given which have something to run (`busy`;
    /// the others are halted and use no host time).
    pub fn plan(&mut self, busy: &[bool]) -> &[bool] {
        let n = self.holds.len();
        let least_waiting = (0..n)
            .filter(|&c| busy[c] && !self.halted[c])
            .map(|c| self.runtime_s[c])
            .reduce(f64::min)
            .unwrap_or_else(|| self.runtime_s.iter().copied().reduce(f64::min).unwrap_or(0.0));
        for (c, &b) in busy.iter().enumerate().take(n) {
            if b && self.halted[c] && self.cfg.mode == HostMode::Mttcg {
                self.runtime_s[c] = self.runtime_s[c].max(least_waiting);
            }
            self.halted[c] = !b;
            self.asleep[c] |= !b;
            // A halted vCPU gives its core up; one whose slice ran out goes to the back.
            if self.holds[c] && (!b || self.used_s[c] >= self.cfg.slice_s) {
                self.holds[c] = false;
                self.used_s[c] = 0.0;
            }
        }
        let mut free = self.cfg.cores().saturating_sub(self.holds.iter().filter(|&&h| h).count());
        while free > 0 {
            let pick = match self.cfg.mode {
                HostMode::Rr => (0..n).map(|k| (self.next + k) % n).find(|&c| busy[c] && !self.holds[c]),
                HostMode::Mttcg => (0..n)
                    .filter(|&c| busy[c] && !self.holds[c])
                    .min_by(|&a, &b| self.runtime_s[a].total_cmp(&self.runtime_s[b]).then(a.cmp(&b))),
            };
            let Some(c) = pick else { break };
            self.holds[c] = true;
            self.used_s[c] = 0.0;
            self.next = (c + 1) % n;
            free -= 1;
        }
        for c in 0..n {
            self.resumed[c] = self.holds[c] && self.asleep[c];
            self.asleep[c] &= !self.holds[c];
        }
        &self.holds
    }

    /// The vCPUs the last plan runs for the first time since they halted: only now can the
    /// guest's kernel there switch to a thread woken onto it while halted.
    pub fn resumed(&self) -> &[bool] {
        &self.resumed
    }

    /// The vCPUs that hold a core ran `dt` seconds of host time.
    pub fn charge(&mut self, dt: f64) {
        for (c, &h) in self.holds.iter().enumerate() {
            if h {
                self.used_s[c] += dt;
                self.runtime_s[c] += dt;
                self.received_s[c] += dt;
            }
        }
    }

    /// Each vCPU's runtime in the host scheduler's order: host time received, raised to the
    /// least of those waiting when it came back from a halt (`mttcg`).
    pub fn runtime_s(&self) -> &[f64] {
        &self.runtime_s
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
        HostRun::new(VcpuHost { cores, mode, slice_s }, vcpus)
    }

    fn held(h: &mut HostRun, busy: &[bool]) -> Vec<usize> {
        h.plan(busy).iter().enumerate().filter(|(_, &x)| x).map(|(c, _)| c).collect()
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
        assert_eq!(h.runtime_s()[2], 0.0);
    }

    #[test]
    fn mttcg_shares_the_cores_least_runtime_first_and_a_woken_vcpu_gets_no_credit() {
        let mut h = host(HostMode::Mttcg, 2, 1.5e-3, 4);
        let all = [true; 4];
        assert_eq!(held(&mut h, &all), vec![0, 1]);
        h.charge(1.5e-3);
        assert_eq!(held(&mut h, &all), vec![2, 3]);
        h.charge(1.5e-3);
        assert_eq!(held(&mut h, &all), vec![0, 1]);
        h.charge(1.5e-3);
        // vCPU 3 halts for a while; on waking it starts at the least runtime of those waiting,
        // not with the host time it missed.
        for _ in 0..6 {
            held(&mut h, &[true, true, true, false]);
            h.charge(1.5e-3);
        }
        let before = h.runtime_s().to_vec();
        held(&mut h, &all);
        let least = before[..3].iter().copied().reduce(f64::min).unwrap();
        assert!(before[3] < least, "{before:?}");
        assert_eq!(h.runtime_s()[3], least);
        // The credit orders the host's queue; it is not host time the vCPU ran.
        assert_eq!(h.received_s()[3], before[3]);
    }

    #[test]
    fn a_vcpu_resumes_when_first_run_after_a_halt() {
        let mut h = host(HostMode::Mttcg, 1, 1e-3, 2);
        held(&mut h, &[true, false]);
        assert_eq!(h.resumed(), &[true, false]);
        h.charge(1e-3);
        // vCPU 1 gets work but waits for the core (placed level with vCPU 0, which wins the
        // tie): not resumed until it gets the core, once.
        assert_eq!(held(&mut h, &[true, true]), vec![0]);
        assert_eq!(h.resumed(), &[false, false]);
        h.charge(1e-3);
        assert_eq!(held(&mut h, &[true, true]), vec![1]);
        assert_eq!(h.resumed(), &[false, true]);
        h.charge(1e-3);
        assert_eq!(held(&mut h, &[true, true]), vec![0]);
        assert_eq!(h.resumed(), &[false, false]);
    }

    #[test]
    fn a_vcpu_woken_mid_slice_waits_for_the_running_ones_slice_to_end() {
        // Linux 6.18 `kernel/sched/fair.c: check_preempt_wakeup_fair()` preempts only when
        // `__pick_eevdf()` picks the woken entity, which it does not while the running one is
        // eligible and in its protected slice (`RUN_TO_PARITY`); placed without lag, level with
        // the running vCPU, the woken one is never picked early (docs/scheduler.md §10.5).
        let mut h = host(HostMode::Mttcg, 1, 4e-3, 2);
        for _ in 0..3 {
            assert_eq!(held(&mut h, &[true, false]), vec![0]);
            h.charge(1e-3);
        }
        assert_eq!(held(&mut h, &[true, true]), vec![0]);
        assert_eq!(h.resumed(), &[false, false]);
        assert_eq!(h.runtime_s()[1], 3e-3);
        h.charge(1e-3);
        // The slice ends: the woken vCPU, now behind, runs.
        assert_eq!(held(&mut h, &[true, true]), vec![1]);
        assert_eq!(h.resumed(), &[false, true]);
    }

    #[test]
    fn a_vcpu_not_run_gets_no_host_time() {
        let mut h = host(HostMode::Mttcg, 1, 1.5e-3, 2);
        for _ in 0..10 {
            held(&mut h, &[true, true]);
            h.charge(1e-3);
        }
        // One core, two vCPUs: 10 ms of host time between them, about half each.
        let r = h.runtime_s();
        assert!((r[0] + r[1] - 10e-3).abs() < 1e-12);
        assert_eq!(h.received_s(), r);
        assert!((r[0] - r[1]).abs() <= 2e-3, "{r:?}");
    }
}
