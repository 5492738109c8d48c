//! Threads sharing a CPU take turns (docs/scheduler.md §4, `sched/turns.rs`): one runs at the
//! CPU's full speed while the others wait, so threads with less work than a slice between two
//! barriers reach the barrier one after the other. A thread alone on its CPU runs as before.

use super::*;

impl Engine<'_> {
    /// The threads on each CPU at the start of an epoch (wake-ups keep it up to date after).
    pub(super) fn refresh_members(&mut self) {
        let cpus = self.sched.pu_node.len();
        self.on_cpu.resize_with(cpus, Vec::new);
        self.on_cpu.iter_mut().for_each(Vec::clear);
        for (tid, t) in self.threads.iter().enumerate() {
            if matches!(t.state, State::Running | State::Waiting(_)) {
                self.on_cpu[self.sched.cpu[tid]].push(tid);
            }
        }
    }

    /// Thread `tid` moved from `from` to its CPU now (a wake-up).
    pub(super) fn moved_member(&mut self, tid: usize, from: usize) {
        let to = self.sched.cpu[tid];
        if let Some(i) = self.on_cpu[from].iter().position(|&t| t == tid) {
            self.on_cpu[from].remove(i);
        }
        if !self.on_cpu[to].contains(&tid) {
            self.on_cpu[to].push(tid);
        }
    }

    /// The share of its CPU each thread gets while it runs: all of it (beside the background)
    /// where threads take turns; their costs per line follow. The solver's shares stay the
    /// average over the epoch, which is what the memory system sees of the CPU's threads.
    pub(super) fn turn_shares(&self, costs: &mut [Vec<f64>], shares: &[f64], background: &[f64]) -> Vec<f64> {
        let mut run = shares.to_vec();
        // Each CPU's runnable count once, not once per thread on it.
        let runnable: Vec<usize> = (0..self.on_cpu.len()).map(|cpu| self.runnable_on(cpu)).collect();
        for (tid, t) in self.threads.iter().enumerate() {
            let cpu = self.sched.cpu[tid];
            if t.state != State::Running || runnable[cpu] < 2 {
                continue;
            }
            let alone = (1.0 - background[cpu]) + background[cpu] / 2.0;
            let scale = shares[tid] / alone;
            costs[tid].iter_mut().for_each(|c| *c *= scale);
            run[tid] = alone;
        }
        run
    }

    /// Threads running (not waiting at a barrier) on `cpu`.
    fn runnable_on(&self, cpu: usize) -> usize {
        self.on_cpu[cpu]
            .iter()
            .filter(|&&t| self.threads[t].state == State::Running && self.sched.cpu[t] == cpu)
            .count()
    }

    /// Whether a thread runs (waits for its turn or holds it) on `cpu`: `runnable_on(cpu) > 0`,
    /// stopping at the first.
    fn any_runnable_on(&self, cpu: usize) -> bool {
        self.on_cpu[cpu].iter().any(|&t| self.threads[t].state == State::Running && self.sched.cpu[t] == cpu)
    }

    /// Until when `tid` may run in this pass (at most `until`): the end of its turn, or None
    /// while another thread holds its CPU. A free CPU goes to the thread that waited longest.
    pub(super) fn turn_until(&mut self, tid: usize, until: f64) -> Option<f64> {
        if self.threads[tid].state != State::Running {
            return Some(until);
        }
        let cpu = self.sched.cpu[tid];
        if let Some(h) = self.sched.turn_holder(cpu) {
            if h == tid {
                return Some(until.min(self.sched.turn_end(cpu)));
            }
            if self.sched.cpu[h] == cpu && self.threads[h].state == State::Running {
                // contend() changes nothing once the turn has an end: the queue is counted
                // only before (each waiting thread asks at every pass).
                if !self.sched.turn_end(cpu).is_finite() {
                    let n = self.runnable_on(cpu);
                    self.sched.contend(cpu, self.threads[tid].clock, n);
                }
                return None;
            }
            // The holder left between epochs (moved by a balancer, running on): free since then.
            self.sched.vacate(cpu, self.now);
        }
        let next = self.pick_next(cpu)?;
        let (last, free_at) = self.sched.turn_last(cpu);
        let clock = self.threads[next].clock;
        // The last holder released while it still spun on the CPU goes on at once.
        let start = if last == Some(next) { clock } else { clock.max(free_at) };
        if start >= until {
            // The CPU is still taken (the last thread spins there) beyond this round.
            return None;
        }
        self.threads[next].clock = start;
        let queued = self.runnable_on(cpu) - 1;
        self.sched.begin_turn(cpu, next, start, queued);
        if next != tid {
            self.woke = true;
            return None;
        }
        Some(until.min(self.sched.turn_end(cpu)))
    }

    /// The running thread of `cpu` that waited longest: the last holder if a release found it
    /// still spinning there, else the one that stopped running earliest (thread order on ties).
    fn pick_next(&self, cpu: usize) -> Option<usize> {
        let ready = |&&t: &&usize| self.threads[t].state == State::Running && self.sched.cpu[t] == cpu;
        let (last, free_at) = self.sched.turn_last(cpu);
        if let Some(l) = last.filter(|&l| self.on_cpu[cpu].contains(&l)) {
            if ready(&&l) && self.threads[l].clock < free_at {
                return Some(l);
            }
        }
        self.on_cpu[cpu]
            .iter()
            .filter(ready)
            .min_by(|&&a, &&b| self.sched.stopped_at(a).total_cmp(&self.sched.stopped_at(b)).then(a.cmp(&b)))
            .copied()
    }

    /// After `tid` ran: it gives its CPU up if it reached a barrier (after libgomp's spin, or
    /// when its turn ends first), exited, or used up its turn.
    pub(super) fn after_turn(&mut self, tid: usize) {
        let cpu = self.sched.cpu[tid];
        if self.sched.turn_holder(cpu) != Some(tid) {
            return;
        }
        let end = self.sched.turn_end(cpu);
        let t = &self.threads[tid];
        let free = match t.state {
            State::Running if t.clock >= end => end,
            State::Waiting(_) => {
                let spin = self.spin_s();
                (t.clock + spin).min(end)
            }
            State::Done => t.clock,
            _ => return,
        };
        self.sched.end_turn(cpu, free);
        if self.any_runnable_on(cpu) {
            self.woke = true;
        }
    }
}
