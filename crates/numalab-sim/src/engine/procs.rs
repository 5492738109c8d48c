//! Processes of a co-run (`crate::corun`): starting staggered ones, and what each reports.

use super::*;
use crate::output::ProcessOut;

impl Thread {
    /// Started and not finished: it counts for the scheduler and the caches.
    pub(super) fn live(&self) -> bool {
        !matches!(self.state, State::Done | State::Pending)
    }
}

impl Engine<'_> {
    /// Exec the processes whose start time falls before `until`: each thread is placed now
    /// (fork/exec placement among the threads running then) and begins at its own start time.
    pub(super) fn start_pending(&mut self, until: f64) {
        for pid in 0..self.procs.len() {
            let slot = self.procs[pid].slot;
            if self.procs[pid].start_s >= until || self.threads[slot.first_tid].state != State::Pending {
                continue;
            }
            for tid in slot.first_tid..slot.first_tid + slot.threads {
                let live: Vec<bool> = self.threads.iter().map(Thread::live).collect();
                let parent = (tid != slot.first_tid).then_some(slot.first_tid);
                self.sched.place_new_at(self.now, tid, parent, &live);
                self.threads[tid].state = State::Running;
                self.start_next_phase(tid);
            }
        }
    }

    /// Per process: its name, start, the timer's reading if its program has one, and the base
    /// pages of its regions on each node at the end.
    pub(super) fn process_outputs(&self) -> Vec<ProcessOut> {
        let n = self.m.nodes.len();
        self.procs
            .iter()
            .enumerate()
            .map(|(pid, p)| {
                let w = self.wl(pid);
                let mut pages = vec![0u64; n];
                for r in &p.regions {
                    let mut i = 0;
                    while i < r.node.len() {
                        let run = r.node.run(i, usize::MAX);
                        for &x in run.iter().filter(|&&x| x != NONE) {
                            pages[x as usize] += r.base_pages();
                        }
                        i += run.len();
                    }
                }
                // The program's timer runs in its main thread.
                let timer_s = w.has_timer().then(|| self.threads[p.slot.first_tid].timed_s);
                ProcessOut {
                    pid: pid as u32 + 1,
                    name: w.name.clone(),
                    threads: p.slot.threads as u32,
                    start_s: p.start_s,
                    time_s: 0.0,
                    reported_time_s: 0.0,
                    timer_s,
                    pages_per_node: pages,
                }
            })
            .collect()
    }
}
