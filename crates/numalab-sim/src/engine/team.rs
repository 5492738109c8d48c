//! A team's start as libgomp runs it (docs/scheduler.md §5): the primary thread creates the
//! workers one by one (`libgomp/team.c: gomp_team_start()`, a `pthread_create()` each); each
//! new worker enters `gomp_thread_start()` and waits on the pool's dock
//! (`gomp_simple_barrier_wait(&pool->threads_dock)`, `libgomp/config/linux/bar.c`), spinning
//! `GOMP_SPINCOUNT` times (`libgomp/config/linux/wait.h: do_spin()`) and then sleeping on the
//! futex. The primary thread arrives after creating the last worker; the last of the team to
//! arrive (the primary, or a worker still on its way to the dock) releases it with
//! `futex_wake()`: the threads that fell asleep are woken, and the kernel's wake-up path places
//! each of them (`Sched::wake`), so where a thread first runs, and where its first touches land,
//! follows from the kernel's placement of these wake-ups.
//!
//! Between its fork and the dock a new worker is runnable on its CPU: `wake_up_new_task()`
//! (`kernel/sched/core.c`) enqueues it there after `select_task_rq()` with `WF_FORK`
//! (`select_task_rq_fair()`, `SD_BALANCE_FORK`: `sched_balance_find_dst_cpu()` in 6.13,
//! `find_idlest_cpu()` in 6.1), and it counts in that CPU's `nr_running` until it blocks in the
//! dock, through the CPU's exit from idle, `ret_from_fork`, glibc's `start_thread()` and
//! `gomp_thread_start()`. The forks that come meanwhile see it running; the ones after see it
//! asleep (its PELT signals decaying from then).

use super::Thread;
use crate::openmp::WAKE_LATENCY_S;
use crate::sched::Sched;

/// From its enqueue by `wake_up_new_task()` until it blocks in the dock, a new worker runs the
/// return from `clone()` (`ret_from_fork`), glibc's `start_thread()` (rseq and robust-list
/// registration, restoring the signal mask: three system calls) and `gomp_thread_start()` up to
/// `gomp_simple_barrier_wait()` [est.: 5 µs, a few system calls and stack page faults].
pub(crate) const THREAD_START_S: f64 = 5e-6;
/// A worker enqueued on an idle CPU first waits for that CPU to leave its idle state: a CPU
/// idle since boot sits in its deepest C-state, whose exit latency the idle driver states
/// [est.: 133 µs, `drivers/idle/intel_idle.c`: `skx_cstates` C6 `exit_latency` 133 µs; C1E
/// 10 µs].
pub(crate) const IDLE_EXIT_S: f64 = 133e-6;

/// Create and release one team: `first` is its primary thread's id, `threads` its threads (the
/// primary first), `offsets` each one's start from the process's exec (`openmp::start_times`:
/// worker `i` is created at `i` creations, the primary arrives at the dock after the last),
/// `spin_s` libgomp's spin before sleeping. `live` marks the threads created so far (other
/// processes' included); `move_cost_s` is what a woken thread pays for landing on another CPU.
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
    // A program without a parallel region starts no team (`openmp::start_times`: every offset
    // 0): its threads are placed at the exec and start at once.
    let team = offsets.iter().any(|&o| o > 0.0);
    // When each thread of the team reaches the dock, and when it falls asleep there (never
    // before its arrival plus the spin; infinity for threads not waiting).
    let mut arrive = vec![0.0; n];
    let mut asleep_at = vec![f64::INFINITY; live.len()];
    let runnable = |live: &[bool], asleep_at: &[f64], at: f64| -> Vec<bool> {
        live.iter().zip(asleep_at).map(|(&l, &s)| l && at < s).collect()
    };
    for (idx, &at) in offsets.iter().enumerate() {
        let tid = first + idx;
        // The exec happens at 0; worker i is cloned at its creation time.
        let (at, parent) = if idx == 0 { (0.0, None) } else { (at, Some(first)) };
        let before = runnable(live, &asleep_at, at);
        if sched.place_new_at(at, tid, parent, &before) {
            threads[idx].migrations += 1;
        }
        live[tid] = true;
        if idx > 0 {
            let cpu = sched.cpu[tid];
            let idle = !(0..before.len()).any(|t| before[t] && sched.cpu[t] == cpu);
            arrive[idx] = if team { at + THREAD_START_S + if idle { IDLE_EXIT_S } else { 0.0 } } else { at };
            asleep_at[tid] = arrive[idx] + spin_s;
            sched.sleeps_at(tid, asleep_at[tid]);
        }
    }
    // The primary thread arrives after creating the last worker.
    arrive[0] = offsets[0];
    asleep_at[first] = arrive[0] + spin_s;
    sched.sleeps_at(first, asleep_at[first]);
    // The last to arrive releases the team (the primary on a tie: it arrived first).
    let waker = (1..n).fold(0, |w, i| if arrive[i] > arrive[w] { i } else { w });
    let release = arrive[waker];
    // The sleepers are woken in the order they fell asleep (futex_wake's queue order).
    let mut order: Vec<usize> = (0..n).filter(|&i| i != waker).collect();
    order.sort_by(|&a, &b| asleep_at[first + a].total_cmp(&asleep_at[first + b]).then(a.cmp(&b)));
    asleep_at[first + waker] = f64::INFINITY;
    sched.resumes(first + waker, release);
    sched.ran_until(first + waker, release);
    threads[waker].clock = release;
    if waker > 0 {
        threads[waker].mark_s = release;
    }
    for idx in order {
        let tid = first + idx;
        sched.ran_until(tid, (arrive[idx] + spin_s).min(release));
        let asleep = release - arrive[idx] > spin_s;
        // Runnable at the release: the waker, threads still spinning and those already woken.
        let mut now_runnable = runnable(live, &asleep_at, release);
        sched.resumes(tid, release);
        asleep_at[tid] = f64::INFINITY;
        let t = &mut threads[idx];
        t.clock = release;
        // From the exec for the primary thread (openmp::start_times), from the release for workers.
        if idx > 0 {
            t.mark_s = release;
        }
        if asleep {
            // Off its run queue from its sleep in the dock to the wake-up (`sched/rq_trace.rs`).
            sched.rq_off(tid, arrive[idx] + spin_s);
            let prev = sched.cpu[tid];
            now_runnable[tid] = true;
            let cpu = sched.wake(release, tid, first + waker, &now_runnable);
            sched.ttwu_do_wakeup(cpu, release);
            sched.enqueued_on(cpu, &now_runnable, release);
            sched.rq_on(tid, cpu, release);
            t.clock += WAKE_LATENCY_S;
            if cpu != prev {
                t.migrations += 1;
                t.clock += move_cost_s;
            }
        }
    }
}
