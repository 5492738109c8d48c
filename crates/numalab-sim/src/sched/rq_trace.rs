//! The workload's runnable threads per CPU over a run, for `--explain-sched` (docs/scheduler.md
//! §10.25), counted as `vm check --moves` counts the guest's (`python/numalab/vm/sched_trace.py`:
//! `RQ_AWK`): a thread is on its CPU's run queue from its wake-up (or fork) to when it sleeps
//! or exits, queued or running; a move takes it from one CPU to the other. The kernel's events
//! that awk reads are `sched_wakeup` / `sched_wakeup_new` (kernel/sched/core.c:
//! `ttwu_do_wakeup()`, `wake_up_new_task()`), `sched_migrate_task` (`set_task_cpu()`) and
//! `sched_switch` with a sleeping `prev_state` (`__schedule()`); here the model's own: a fork's
//! placement, a barrier's sleep after libgomp's spin and the futex wake-up (or the wake list's
//! flush), an exit, and the balancers' and NUMA balancing's moves. The model runs its threads
//! on clocks of their own, so the changes are kept with their times and replayed in time order
//! at the end; nothing here feeds back into a decision.

/// One change of a thread's run-queue state.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Change {
    /// Runnable on this CPU (woken or forked there; moved there if already runnable).
    On(usize),
    /// Asleep or exited.
    Off,
    /// Set onto this CPU (runnable or not).
    Move(usize),
}

/// The changes and the idle ticks taken, kept only when asked (`--explain-sched`).
#[derive(Clone, Debug, Default)]
pub(super) struct RqTrace {
    on: bool,
    changes: Vec<(f64, usize, Change)>,
    /// (time, CPU) of each kept tick an idle CPU handled (`idle_tick.rs: idle_tick_balance`).
    ticks: Vec<(f64, usize)>,
}

/// The run queues over the span from the first change to the last, as `RQ_AWK` prints them.
#[derive(Clone, Debug, PartialEq)]
pub struct RqStats {
    /// Per CPU (logical order): seconds with 0, 1, 2 and 3 or more runnable threads.
    pub time_s: Vec<[f64; 4]>,
    /// Idle ticks by (longest count over the CPUs, the ticking CPU's own), 3 standing for 3+.
    pub ticks: Vec<([u8; 2], u64)>,
    /// Seconds some CPU had 2+ while another had none, of `span_s`.
    pub imbalanced_s: f64,
    pub span_s: f64,
    /// Such stretches by length: up to 0.5 ms * 2^b, b = 5 longer than 8 ms.
    pub episodes: [u64; 6],
    /// Idle ticks on a CPU with none, by whole jiffies since its last thread left (5: 5+).
    pub since: [u64; 6],
}

impl RqTrace {
    pub(super) fn new(on: bool) -> Self {
        RqTrace { on, ..Default::default() }
    }

    pub(super) fn is_on(&self) -> bool {
        self.on
    }

    pub(super) fn on(&mut self, t_s: f64, tid: usize, cpu: usize) {
        if self.on {
            self.changes.push((t_s, tid, Change::On(cpu)));
        }
    }

    pub(super) fn off(&mut self, t_s: f64, tid: usize) {
        if self.on {
            self.changes.push((t_s, tid, Change::Off));
        }
    }

    pub(super) fn moved(&mut self, t_s: f64, tid: usize, cpu: usize) {
        if self.on {
            self.changes.push((t_s, tid, Change::Move(cpu)));
        }
    }

    pub(super) fn tick(&mut self, t_s: f64, cpu: usize) {
        if self.on {
            self.ticks.push((t_s, cpu));
        }
    }

    /// The statistics over `cpus` CPUs and `threads` threads with ticks `jiffy_s` apart, None
    /// with nothing kept. Changes at one instant apply in the order they were kept; a tick sees
    /// the state before the changes at its own instant (the pulls its balance makes come after
    /// it, as in the guest's trace); ticks before the first change is made or after the last
    /// are left out (awk counts a tick once a barrier event has come and another comes after).
    pub fn stats(&self, cpus: usize, threads: usize, jiffy_s: f64) -> Option<RqStats> {
        let mut changes = self.changes.clone();
        changes.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut ticks = self.ticks.clone();
        ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (t0, t1) = (changes.first()?.0, changes.last()?.0);
        let mut s = Sweep::new(cpus, threads, t0);
        let mut next_tick = ticks.iter().peekable();
        for (i, &(t, tid, ch)) in changes.iter().enumerate() {
            while let Some(&&(tt, cpu)) = next_tick.peek() {
                if tt > t {
                    break;
                }
                if i > 0 {
                    s.tick(tt, cpu, jiffy_s);
                }
                next_tick.next();
            }
            s.change(t, tid, ch);
        }
        Some(s.finish(t1))
    }
}

/// `RQ_AWK`'s state while it reads the trace.
struct Sweep {
    n: Vec<usize>,
    /// Per CPU: when its count last changed, and when it last fell to 0.
    last: Vec<f64>,
    zero_at: Vec<f64>,
    time_s: Vec<[f64; 4]>,
    runnable: Vec<bool>,
    at: Vec<Option<usize>>,
    imbalanced: bool,
    since_change: f64,
    imbalanced_s: f64,
    stretch_s: f64,
    episodes: [u64; 6],
    since: [u64; 6],
    ticks: std::collections::BTreeMap<[u8; 2], u64>,
    t0: f64,
}

impl Sweep {
    fn new(cpus: usize, threads: usize, t0: f64) -> Self {
        Sweep {
            n: vec![0; cpus],
            last: vec![t0; cpus],
            zero_at: vec![t0; cpus],
            time_s: vec![[0.0; 4]; cpus],
            runnable: vec![false; threads],
            at: vec![None; threads],
            imbalanced: false,
            since_change: t0,
            imbalanced_s: 0.0,
            stretch_s: 0.0,
            episodes: [0; 6],
            since: [0; 6],
            ticks: Default::default(),
            t0,
        }
    }

    /// `acc()` then `add()`: the CPU's time at its count so far, then the count changes.
    fn add(&mut self, cpu: usize, up: bool, t: f64) {
        self.time_s[cpu][self.n[cpu].min(3)] += t - self.last[cpu];
        self.last[cpu] = t;
        if up {
            self.n[cpu] += 1;
        } else {
            self.n[cpu] -= 1;
            if self.n[cpu] == 0 {
                self.zero_at[cpu] = t;
            }
        }
    }

    fn change(&mut self, t: f64, tid: usize, ch: Change) {
        // gacc(): an imbalanced stretch goes on up to now.
        if self.imbalanced {
            self.imbalanced_s += t - self.since_change;
            self.stretch_s += t - self.since_change;
        }
        self.since_change = t;
        match ch {
            Change::On(cpu) => {
                if !self.runnable[tid] {
                    self.runnable[tid] = true;
                    self.add(cpu, true, t);
                } else if let Some(from) = self.at[tid].filter(|&f| f != cpu) {
                    self.add(from, false, t);
                    self.add(cpu, true, t);
                }
                self.at[tid] = Some(cpu);
            }
            Change::Off => {
                if let (true, Some(from)) = (self.runnable[tid], self.at[tid]) {
                    self.runnable[tid] = false;
                    self.add(from, false, t);
                }
            }
            Change::Move(cpu) => {
                if let (true, Some(from)) = (self.runnable[tid], self.at[tid]) {
                    if from != cpu {
                        self.add(from, false, t);
                        self.add(cpu, true, t);
                    }
                }
                self.at[tid] = Some(cpu);
            }
        }
        // gset(), ep(): some CPU at 2+ while another at 0; a stretch ends when that stops.
        let most = self.n.iter().copied().max().unwrap_or(0);
        let least = self.n.iter().copied().min().unwrap_or(0);
        self.imbalanced = most >= 2 && least == 0;
        if !self.imbalanced {
            self.end_stretch();
        }
    }

    fn end_stretch(&mut self) {
        if self.stretch_s > 0.0 {
            let mut b = 0;
            let mut w = 0.0005;
            while self.stretch_s > w && b < 5 {
                b += 1;
                w *= 2.0;
            }
            self.episodes[b] += 1;
        }
        self.stretch_s = 0.0;
    }

    fn tick(&mut self, t: f64, cpu: usize, jiffy_s: f64) {
        let most = self.n.iter().copied().max().unwrap_or(0);
        *self.ticks.entry([most.min(3) as u8, self.n[cpu].min(3) as u8]).or_insert(0) += 1;
        if self.n[cpu] == 0 {
            let j = ((t - self.zero_at[cpu]) / jiffy_s).floor() as usize;
            self.since[j.min(5)] += 1;
        }
    }

    fn finish(mut self, t1: f64) -> RqStats {
        for c in 0..self.n.len() {
            self.time_s[c][self.n[c].min(3)] += t1 - self.last[c];
        }
        if self.imbalanced {
            self.imbalanced_s += t1 - self.since_change;
            self.stretch_s += t1 - self.since_change;
        }
        self.end_stretch();
        RqStats {
            time_s: self.time_s,
            ticks: self.ticks.into_iter().collect(),
            imbalanced_s: self.imbalanced_s,
            span_s: t1 - self.t0,
            episodes: self.episodes,
            since: self.since,
        }
    }
}

impl super::Sched {
    /// Thread `tid` became runnable on `cpu` at `t_s` (a barrier's wake-up; `--explain-sched`).
    pub fn rq_on(&mut self, tid: usize, cpu: usize, t_s: f64) {
        self.rq.on(t_s, tid, cpu);
    }

    /// Thread `tid` fell asleep or exited at `t_s` (`--explain-sched`).
    pub fn rq_off(&mut self, tid: usize, t_s: f64) {
        self.rq.off(t_s, tid);
    }

    /// Whether run-queue changes are kept (`--explain-sched`): a caller with work to find them
    /// skips it otherwise.
    pub fn rq_kept(&self) -> bool {
        self.rq.is_on()
    }

    /// Thread `tid` was set onto `cpu` at `t_s` by NUMA balancing (`migrate_task_to()`,
    /// `migrate_swap()`).
    pub fn rq_moved(&mut self, tid: usize, cpu: usize, t_s: f64) {
        self.rq.moved(t_s, tid, cpu);
    }

    /// The run queues over the run (`--explain-sched`), None without it.
    pub fn rq_stats(&self) -> Option<RqStats> {
        self.rq.stats(self.pu_node.len(), self.cpu.len(), 1.0 / self.rules.hz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JIFFY: f64 = 0.004;

    #[test]
    fn seconds_at_each_count_imbalance_and_ticks_follow_the_changes_in_time_order() {
        // Two CPUs, three threads; kept out of order, as the engine's thread clocks keep them.
        let mut r = RqTrace::new(true);
        r.on(0.0, 0, 0);
        r.on(0.0, 1, 1);
        r.off(0.010, 1); // CPU 1 idle from 10 ms
        r.on(0.002, 2, 0); // CPU 0 at 2 from 2 ms: imbalanced from 10 ms
        r.moved(0.0106, 2, 1); // pulled: 0.6 ms imbalanced, one stretch up to 1 ms
        r.on(0.012, 1, 0); // CPU 0 at 2 again beside CPU 1's one: not imbalanced
        r.tick(0.0103, 1); // CPU 1 idle 0.3 ms, CPU 0 at 2
        r.tick(0.0106, 1); // before the pull at its instant: CPU 1 still idle
        r.tick(0.001, 1); // CPU 1 at 1, the longest 1
        r.tick(0.0, 1); // at the first change, before any: left out
        r.tick(0.030, 0); // after the last change: left out
        r.moved(0.015, 0, 0); // no move (already there)
        r.off(0.020, 2);
        r.off(0.020, 1);
        r.off(0.020, 0);
        let s = r.stats(2, 3, JIFFY).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // CPU 0: 1 over 0-2 ms, 2 over 2-10.6, 1 over 10.6-12, 2 over 12-20.
        let want0 = [0.0, 0.0034, 0.0166, 0.0];
        // CPU 1: 1 over 0-10, 0 over 10-10.6, 1 over 10.6-20.
        let want1 = [0.0006, 0.0194, 0.0, 0.0];
        for (got, want) in s.time_s.iter().zip([want0, want1]) {
            assert!(got.iter().zip(want).all(|(&g, w)| close(g, w)), "{got:?} against {want:?}");
        }
        assert!(close(s.imbalanced_s, 0.0006) && close(s.span_s, 0.020), "{s:?}");
        assert_eq!(s.episodes, [0, 1, 0, 0, 0, 0]);
        assert_eq!(s.ticks, vec![([1, 1], 1), ([2, 0], 2)]);
        assert_eq!(s.since, [2, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn three_or_more_share_one_bin_and_a_long_stretch_the_last() {
        let mut r = RqTrace::new(true);
        for tid in 0..4 {
            r.on(0.0, tid, 0);
        }
        r.tick(0.021, 1);
        r.tick(0.0164, 1);
        for tid in 0..4 {
            r.off(0.010 * (1 + tid / 3) as f64, tid);
        }
        let s = r.stats(2, 4, JIFFY).unwrap();
        // CPU 0: 4 for 10 ms (3+), then 1 for 10 ms; CPU 1 idle throughout: imbalanced 10 ms.
        assert_eq!(s.time_s[0], [0.0, 0.010, 0.0, 0.010]);
        assert_eq!(s.time_s[1], [0.020, 0.0, 0.0, 0.0]);
        assert_eq!((s.imbalanced_s, s.episodes), (0.010, [0, 0, 0, 0, 0, 1]));
        // Ticks only up to the last change (20 ms): the one at 21 ms is left out; the one at
        // 16.4 ms finds CPU 1 idle since the first change, 4 whole jiffies before.
        assert_eq!(s.ticks, vec![([1, 0], 1)]);
        assert_eq!(s.since, [0, 0, 0, 0, 1, 0]);
    }

    #[test]
    fn the_model_counts_the_guest_traces_timeline_as_rq_awk_does() {
        // tests/python/test_vm_sched_trace.py's RQ_TRACE, whose RQ_AWK output that test checks:
        // threads 101 and 102 (here 0 and 1) forked onto CPU 1 at 10 s, 102 moved to CPU 0 at
        // 10.2, 101 asleep at 10.5, 102 exits at 12; idle ticks at 9.9, 10.1, 11.5 and 13.5.
        let mut r = RqTrace::new(true);
        r.tick(9.9, 1);
        r.on(10.0, 0, 1);
        r.on(10.0, 1, 1);
        r.tick(10.1, 0);
        r.moved(10.2, 1, 0);
        r.off(10.5, 0);
        r.tick(11.5, 1);
        r.off(12.0, 1);
        r.tick(13.5, 1);
        let s = r.stats(2, 2, JIFFY).unwrap();
        let want = [[0.2, 1.8, 0.0, 0.0], [1.5, 0.3, 0.2, 0.0]];
        for (got, want) in s.time_s.iter().zip(want) {
            assert!(got.iter().zip(want).all(|(&g, w)| (g - w).abs() < 1e-9), "{got:?} against {want:?}");
        }
        assert_eq!(s.ticks, vec![([1, 0], 1), ([2, 0], 1)]);
        assert!((s.imbalanced_s - 0.2).abs() < 1e-9 && (s.span_s - 2.0).abs() < 1e-9);
        assert_eq!((s.episodes, s.since), ([0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 2]));
    }

    #[test]
    fn kept_only_when_asked() {
        let mut r = RqTrace::new(false);
        r.on(0.0, 0, 0);
        r.tick(0.0, 0);
        assert!(r.stats(1, 1, JIFFY).is_none());
    }
}
