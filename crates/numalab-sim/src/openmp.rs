//! The OpenMP runtime's part in where threads run (docs/scheduler.md §5).
//!
//! libgomp starts a team at the first parallel region: the primary thread creates the workers
//! one by one (`libgomp/team.c: gomp_team_start()`, a `pthread_create()` per worker: stack
//! mapping, `clone()`, and the new thread's first run), so worker `i` starts `i` creations
//! after the region opens and the primary thread itself goes on after the last.

/// Cost of creating one worker thread, paid by the primary thread [est.: `pthread_create()`
/// with an 8 MiB stack mapping and `clone()` measure 10-30 us on current Linux; 20 us taken].
pub const THREAD_CREATE_S: f64 = 20e-6;

/// When each of a team's `threads` threads starts its first region (index 0 = primary).
pub fn start_times(threads: usize) -> Vec<f64> {
    let last = threads.saturating_sub(1) as f64 * THREAD_CREATE_S;
    (0..threads).map(|i| if i == 0 { last } else { i as f64 * THREAD_CREATE_S }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_primary_thread_starts_after_creating_every_worker() {
        let t = start_times(4);
        assert_eq!(t[1], THREAD_CREATE_S);
        assert_eq!(t[3], 3.0 * THREAD_CREATE_S);
        assert_eq!(t[0], t[3]);
        assert_eq!(start_times(1), vec![0.0]);
    }
}
