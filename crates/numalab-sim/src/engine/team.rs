//! A team's start as libgomp runs it (docs/scheduler.md §5): the primary thread creates the
//! workers one by one (`libgomp/team.c: gomp_team_start()`, a `pthread_create()` each); each
//! new worker enters `gomp_thread_start()` and waits on the pool's dock
//! (`gomp_barrier_wait(&pool->threads_dock)`, `libgomp/config/linux/bar.c`), spinning
//! `GOMP_SPINCOUNT` times (`libgomp/config/linux/wait.h: do_spin()`) and then sleeping on the
//! futex. The primary thread arrives last, after creating the last worker, and its
//! `futex_wake()` releases the team: the workers that fell asleep are woken, and the kernel's
//! wake-up path places each of them (`Sched::wake`), so where a worker first runs, and where its
//! first touches land, follows from the kernel's placement of these wake-ups.
//!
//! The fork of each worker sees the ones created before it as the kernel does: spinning ones
//! are runnable, sleeping ones are not (their PELT signals decay from when they fell asleep).

use super::Thread;
use crate::openmp::WAKE_LATENCY_S;
use crate::sched::Sched;

/// Create and release one team: `first` is its primary thread's id, `threads` its threads (the
/// primary first), `offsets` each one's start from the process's exec (`openmp::start_times`:
/// worker `i` is created at `i` creations, the primary goes on after the last), `spin_s`
/// libgomp's spin before sleeping. `live` marks the threads created so far (other processes'
/// included); `move_cost_s` is what a woken worker pays for landing on another CPU.
pub(super) fn start(
    sched: &mut Sched,
    threads: &mut [Thread],
    first: usize,
    offsets: &[f64],
    spin_s: f64,
    live: &mut [bool],
    move_cost_s: f64,
) {
    let n = threads.len();
    // When each created worker falls asleep in the dock (never for the primary thread).
    let mut asleep_at = vec![f64::INFINITY; live.len()];
    let runnable = |live: &[bool], asleep_at: &[f64], at: f64| -> Vec<bool> {
        live.iter().zip(asleep_at).map(|(&l, &s)| l && at < s).collect()
    };
    for (idx, &at) in offsets.iter().enumerate() {
        let tid = first + idx;
        // The exec happens at 0; worker i is cloned at its creation time.
        let (at, parent) = if idx == 0 { (0.0, None) } else { (at, Some(first)) };
        sched.place_new_at(at, tid, parent, &runnable(live, &asleep_at, at));
        live[tid] = true;
        if idx > 0 {
            asleep_at[tid] = at + spin_s;
            sched.sleeps_at(tid, at + spin_s);
        }
    }
    // The primary thread arrives at the dock after creating the last worker and releases it.
    let release = offsets[0];
    for idx in 1..n {
        let tid = first + idx;
        let created = offsets[idx];
        sched.ran_until(tid, (created + spin_s).min(release));
        let asleep = release - created > spin_s;
        // Runnable at the release: the primary, workers still spinning and those already woken.
        let mut now_runnable = runnable(live, &asleep_at, release);
        sched.resumes(tid, release);
        asleep_at[tid] = f64::INFINITY;
        let t = &mut threads[idx];
        t.clock = release;
        t.mark_s = release;
        if asleep {
            let prev = sched.cpu[tid];
            now_runnable[tid] = true;
            let cpu = sched.wake(release, tid, first, &now_runnable);
            t.clock += WAKE_LATENCY_S;
            if cpu != prev {
                t.migrations += 1;
                t.clock += move_cost_s;
            }
        }
    }
}
