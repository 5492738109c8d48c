//! Phases: starting a thread's next phase (its sweeps, compute share and estimated memory
//! mix), and ending it (barriers, program position).

use std::rc::Rc;

use super::*;

impl Engine<'_> {
    pub(super) fn end_phase(&mut self, tid: usize) {
        let phase = self.current_phase(&self.threads[tid]).expect("a running thread has a phase");
        let pid = self.threads[tid].pid;
        let sync = self.wl(pid).phases[phase].sync;
        let seq = self.threads[tid].seq;
        if sync == Sync::None {
            self.advance(tid);
            self.start_next_phase(tid);
            return;
        }
        self.threads[tid].state = State::Waiting(seq);
        // It sleeps on the futex once libgomp's spin is over, unless released before.
        let spin = self.spin_s();
        self.sched.sleeps_at(tid, self.threads[tid].clock + spin);
        self.procs[pid].arrived += 1;
        if self.procs[pid].arrived < self.procs[pid].slot.threads as u64 {
            return;
        }
        // Last to arrive: release everyone at the latest arrival time. Threads that waited
        // longer than libgomp's spin slept on a futex: the last one wakes them, one by one, and
        // the wake-up path places them (docs/scheduler.md §5).
        self.procs[pid].arrived = 0;
        let first = self.procs[pid].slot.first_tid;
        // Woken in the order they went to sleep (`futex_wake()`'s FIFO: `sched/wake.rs`).
        let arrived: Vec<f64> = (first..first + self.procs[pid].slot.threads).map(|i| self.threads[i].clock).collect();
        let members: Vec<usize> = crate::sched::futex_wake_order(&arrived).into_iter().map(|k| first + k).collect();
        let release = members.iter().map(|&i| self.threads[i].clock).fold(0.0, f64::max);
        self.woke = true;
        let mut runnable: Vec<bool> =
            self.threads.iter().map(|t| t.state == State::Running || self.spinning(t, release, spin)).collect();
        // The waker is the thread that arrived last in time (the one whose clock is the release
        // time; the caller when it is one of them): it runs on and wakes the others.
        let waker = if self.threads[tid].clock >= release {
            tid
        } else {
            members.iter().copied().find(|&i| self.threads[i].clock >= release).unwrap_or(tid)
        };
        runnable[waker] = true;
        for i in members {
            let asleep = release - self.threads[i].clock > spin;
            let slept_at = self.threads[i].clock + spin;
            self.sched.ran_until(i, slept_at.min(release));
            self.sched.resumes(i, release);
            self.threads[i].clock = release;
            if asleep {
                // Off its run queue from its futex sleep to the wake-up (`sched/rq_trace.rs`).
                self.sched.rq_off(i, slept_at);
                let prev = self.sched.cpu[i];
                runnable[i] = true;
                let cpu = self.sched.wake(release, i, waker, &runnable);
                // Onto a vCPU the host does not run, a wake-up left to the target waits there
                // for the host (`sched/wakelist.rs`). Left to the target, it is an IPI the
                // waker's vCPU sends (its ICR write takes QEMU's BQL, `vhost/bql.rs`).
                let queued = self.host.as_ref().is_some_and(|(h, runs)| !runs[cpu] || h.bql_stats().is_some())
                    && self.sched.ttwu_queue_cond(i, waker, &runnable, release);
                if let Some((host, _)) = self.host.as_mut().filter(|_| queued) {
                    host.ipi_sent(self.sched.cpu[waker], release, cpu);
                }
                if queued && self.host.as_ref().is_some_and(|(_, runs)| !runs[cpu]) {
                    self.sched.queue_wakelist(i);
                } else {
                    self.sched.ttwu_do_wakeup(cpu, release);
                    self.sched.enqueued_on(cpu, &runnable, release);
                    self.sched.rq_on(i, cpu, release);
                }
                if let Some((host, _)) = self.host.as_mut() {
                    host.sleeper_woken(cpu, release, crate::openmp::WAKE_LATENCY_S);
                }
                let t = &mut self.threads[i];
                t.clock += crate::openmp::WAKE_LATENCY_S;
                if cpu != prev {
                    t.migrations += 1;
                    t.clock += self.cfg.costs.task_move_ns * 1e-9;
                    self.moved_member(i, prev);
                }
                // Queued behind the CPU's running thread unless it preempts it (`turns.rs`).
                if self.sched.turn_holder(cpu).is_some_and(|h| h != i) && self.sched.wake_preempts(cpu, i, release) {
                    self.sched.preempt(cpu, release);
                }
            }
            self.threads[i].state = State::Running;
            self.advance(i);
            self.start_next_phase(i);
        }
    }

    /// libgomp's spin before a waiting thread sleeps, for this run's threads on its CPUs
    /// (`openmp.rs: spin_s`; on a guest at its host's measured spin iteration).
    pub(super) fn spin_s(&self) -> f64 {
        self.cfg.spin_s(self.threads.len(), self.sched.available_cpus)
    }

    /// A thread waiting at a barrier at `now` that is still in libgomp's spin phase.
    pub(super) fn spinning(&self, t: &Thread, now: f64, spin: f64) -> bool {
        matches!(t.state, State::Waiting(_)) && now - t.clock <= spin
    }

    /// Move a thread's program position past the phase it finished.
    pub(super) fn advance(&mut self, tid: usize) {
        let steps = &self.wl(self.threads[tid].pid).program;
        let t = &mut self.threads[tid];
        // The phase just finished (its barrier included) counts to the timer when its step is timed.
        if steps[t.step].timed {
            t.timed_s += t.clock - t.mark_s;
        }
        t.mark_s = t.clock;
        t.seq += 1;
        t.pos += 1;
        if t.pos >= steps[t.step].phases.len() {
            t.pos = 0;
            t.rep += 1;
            if t.rep >= steps[t.step].repeat {
                t.rep = 0;
                t.step += 1;
            }
        }
    }

    pub(super) fn start_next_phase(&mut self, tid: usize) {
        self.threads[tid].mlp.0 = u32::MAX;
        // Skip steps repeated zero times or with no phases.
        loop {
            let t = &self.threads[tid];
            match self.wl(t.pid).program.get(t.step) {
                None => {
                    let t = &mut self.threads[tid];
                    t.state = State::Done;
                    t.finish_s = t.clock;
                    let at = t.clock;
                    self.sched.exits(tid, at);
                    self.sched.rq_off(tid, at);
                    return;
                }
                Some(s) if s.repeat == 0 || s.phases.is_empty() => {
                    let t = &mut self.threads[tid];
                    t.step += 1;
                    t.rep = 0;
                    t.pos = 0;
                }
                Some(_) => break,
            }
        }
        let phase = self.current_phase(&self.threads[tid]).expect("position checked above");
        let (pid, idx, seq) = {
            let t = &self.threads[tid];
            (t.pid, t.idx as u64, t.seq)
        };
        let spec = &self.wl(pid).phases[phase];
        let nt = self.procs[pid].slot.threads as u64;
        let old = std::mem::take(&mut self.threads[tid].sweeps);
        let sweeps = self.sweeps_for(pid, phase, idx, seq, old);
        let lines: f64 = sweeps.iter().map(|s| s.total_lines).sum();
        let total = self.phase_lines(pid, phase, seq);
        let share = if total > 0.0 { lines / total } else { 1.0 / nt as f64 };
        let freq = self.m.cores.first().map_or(2e9, |c| c.frequency_hz);
        // A reduction's chain takes one add latency per dependent add whatever the core's
        // throughput: the phase computes for at least that long (docs/contention.md §4).
        let add_s =
            self.m.cores.first().map_or(numalab_model::machine::ADD_LATENCY_CYCLES / freq, |c| c.add_latency_s());
        let chain_s = spec.chain * share * add_s;
        let compute_s = (spec.cycles * share / freq).max(chain_s);
        // The estimate is worked out in the thread's own vectors (not new ones every phase).
        let (mut est_rd, mut est_wr) =
            (std::mem::take(&mut self.threads[tid].est_rd), std::mem::take(&mut self.threads[tid].est_wr));
        self.estimate_mix(tid, &sweeps, &mut est_rd, &mut est_wr);
        let instructions = self.wl(pid).instructions.get(phase).copied().flatten();
        let t = &mut self.threads[tid];
        t.instructions_per_line = instructions.filter(|_| total > 0.0).map(|i| i / total);
        t.est_lines = est_rd.iter().chain(&est_wr).sum();
        t.est_rd = est_rd;
        t.est_wr = est_wr;
        t.mix_version += 1;
        t.cheapest_s = f64::NAN;
        t.sweeps = sweeps;
        t.lines_total = lines;
        t.pipelined = spec.sync == Sync::Pipeline && idx > 0;
        if lines > 0.0 {
            t.compute_per_line_s = compute_s / lines;
            t.chain_per_line_s = chain_s / lines;
            t.compute_left_s = 0.0;
        } else {
            t.compute_per_line_s = 0.0;
            t.chain_per_line_s = 0.0;
            t.compute_left_s = compute_s;
        }
    }

    /// The node mix of a phase from 16 sampled page entries per access, into `rd` and `wr` (one
    /// entry per node, zeroed first); pages not yet placed are counted where a first write would
    /// put them (reads of them cost nothing: zero page).
    pub(super) fn estimate_mix(&self, tid: usize, sweeps: &[Sweep], rd: &mut Vec<f64>, wr: &mut Vec<f64>) {
        const K: usize = 16;
        let n = self.m.nodes.len();
        reset(rd, n);
        reset(wr, n);
        let t = &self.threads[tid];
        let proc = &self.procs[t.pid];
        let cpu_node = self.sched.pu_node[self.sched.cpu[tid]];
        for s in sweeps {
            let r = &proc.regions[s.region as usize];
            let pol = r.policy.as_ref().unwrap_or(&proc.task_policy);
            let w = s.total_lines / K as f64;
            // Each point's read and written lines, the same products for every point.
            let (w_rd, w_wr, writes) = (w * s.rd_share(), w * (1.0 - s.rd_share()), s.writes());
            s.sample_points(K, r.shift, |u| {
                let node = match r.node.get(u as usize) {
                    Some(&x) if x != NONE => x as usize,
                    _ if writes => pol.expected_node(r.ilx(u), cpu_node),
                    _ => return,
                };
                rd[node] += w_rd;
                wr[node] += w_wr;
            });
        }
    }

    /// Thread `idx`'s sweeps of `phase` in execution `seq`, built in `old`'s vector and the range
    /// vectors of its sweeps (a thread's last phase's: they are rebuilt at every phase start).
    pub(super) fn sweeps_for(&self, pid: usize, phase: usize, idx: u64, seq: u64, old: Vec<Sweep>) -> Vec<Sweep> {
        let spec = &self.wl(pid).phases[phase];
        let nt = self.procs[pid].slot.threads as u64;
        let regions = &self.procs[pid].regions;
        let capacity = if spec.accesses.iter().any(|a| a.cached.is_some()) {
            self.cache_capacity(self.procs[pid].slot.first_tid + idx as usize)
        } else {
            (0.0, 0.0)
        };
        let mut out = old;
        let mut bufs: Vec<Vec<(u64, u64)>> = Vec::new();
        // The range vectors back in the order they were taken, so access i reuses access i's.
        while let Some(s) = out.pop() {
            bufs.push(s.into_buffer());
        }
        out.extend(spec.accesses.iter().map(|a| {
            // The traffic this thread's share of its caches leaves (docs/contention.md §4.1).
            let eff;
            let a = if a.cached.is_some() {
                eff = crate::cache::effective(a, capacity);
                &eff
            } else {
                a
            };
            let r = &regions[a.region];
            let dynamic;
            let order: &[u64] = if a.pattern == crate::input::Pattern::Dynamic {
                dynamic = self.chunk_order(pid, seq, r.planes.div_ceil(a.chunk.max(1)));
                &dynamic
            } else {
                &[]
            };
            let buf = bufs.pop().unwrap_or_default();
            Sweep::reusing(a, r, (a.region as u32, idx, nt), order, self.stride, buf)
        }));
        out
    }

    /// Cache capacity (per-thread window, shared window) of thread `tid` where it runs now,
    /// shared with the run's threads that have not finished.
    fn cache_capacity(&self, tid: usize) -> (f64, f64) {
        let pus = self.threads.iter().enumerate().map(|(i, t)| t.live().then(|| self.sched.cpu[i]));
        let sharers = self.caches.sharers(pus);
        self.caches.capacity(self.sched.cpu[tid], &sharers)
    }

    /// One shuffled chunk order per phase execution, shared by all its threads and accesses (a
    /// dynamic loop hands out the same chunk of every array). Every thread asks for it, so the
    /// last few are kept: shuffling once per thread would cost chunks x threads.
    fn chunk_order(&self, pid: usize, seq: u64, chunks: u64) -> Rc<Vec<u64>> {
        const KEEP: usize = 8;
        let key = (pid, seq, chunks);
        let mut cache = self.chunk_orders.borrow_mut();
        if let Some((_, order)) = cache.iter().find(|(k, _)| *k == key) {
            return order.clone();
        }
        let mut order: Vec<u64> = (0..chunks).collect();
        Rng::new(self.cfg.seed, (pid as u64) << 48 ^ seq << 8 ^ 0xd1a0).shuffle(&mut order);
        let order = Rc::new(order);
        if cache.len() == KEEP {
            cache.remove(0);
        }
        cache.push((key, order.clone()));
        order
    }

    /// Lines all threads move in one execution of `phase`: each thread's sum, then their sum in
    /// thread order (computed once per phase).
    pub(super) fn phase_lines(&mut self, pid: usize, phase: usize, seq: u64) -> f64 {
        if let Some(v) = self.procs[pid].phase_lines[phase] {
            return v;
        }
        let nt = self.procs[pid].slot.threads as u64;
        let v: Vec<f64> = (0..nt)
            .map(|i| self.sweeps_for(pid, phase, i, seq, Vec::new()).iter().map(|s| s.total_lines).sum())
            .collect();
        let total = v.iter().sum();
        self.procs[pid].phase_lines[phase] = Some(total);
        total
    }
}

/// `v` as `n` zeros, keeping its allocation.
fn reset(v: &mut Vec<f64>, n: usize) {
    v.clear();
    v.resize(n, 0.0);
}
