//! Co-runs (`numalab_sim::corun`): several process groups in one run.

use numalab_sim::input::Pattern;
use numalab_sim::{simulate, simulate_groups};

use crate::common::*;

#[test]
fn two_groups_of_one_copy_run_as_one_group_of_two_copies() {
    let m = machine2();
    let one = stream_like(16, 2, Pattern::Block, 3);
    let mut two = one.clone();
    two.processes = 2;
    let (p, c) = (unpinned(), cfg());
    let copies = serde_json::to_string(&simulate(&m, &two, &p, &c).unwrap()).unwrap();
    let groups = vec![group(&one, &p, 0.0), group(&one, &p, 0.0)];
    let grouped = serde_json::to_string(&simulate_groups(&m, groups, &c).unwrap()).unwrap();
    assert_eq!(copies, grouped);
}

#[test]
fn a_mix_reports_each_process_with_its_name_threads_and_pages() {
    let m = machine2();
    let small = stream_like(8, 1, Pattern::Block, 2);
    let mut big = stream_like(32, 2, Pattern::Block, 2);
    big.name = "big".into();
    let (p0, p1) = (on_cpus(&[0]), on_cpus(&[8, 9]));
    let out = simulate_groups(&m, vec![group(&small, &p0, 0.0), group(&big, &p1, 0.0)], &cfg()).unwrap();
    let procs = &out.processes;
    assert_eq!(procs.iter().map(|p| (p.name.as_str(), p.threads)).collect::<Vec<_>>(), [("toy", 1), ("big", 2)]);
    // Each process first-touched its own array on the node it runs on (default policy).
    assert_eq!(procs[0].pages_per_node, [8 << 8, 0]);
    assert_eq!(procs[1].pages_per_node, [0, 32 << 8]);
    assert_eq!(out.threads.iter().map(|t| t.pid).collect::<Vec<_>>(), [1, 2, 2]);
    assert!(procs.iter().all(|p| p.time_s > 0.0));
}

#[test]
fn a_staggered_process_counts_its_time_from_its_start_and_shares_less() {
    let m = machine2();
    let w = stream_like(16, 1, Pattern::Block, 4);
    let p = on_cpus(&[0, 1]);
    let alone = simulate(&m, &w, &on_cpus(&[0]), &cfg()).unwrap().processes[0].time_s;
    let together = simulate_groups(&m, vec![group(&w, &p, 0.0), group(&w, &p, 0.0)], &cfg()).unwrap();
    let late = alone * 0.9;
    let staggered = simulate_groups(&m, vec![group(&w, &p, 0.0), group(&w, &p, late)], &cfg()).unwrap();
    let second = &staggered.processes[1];
    assert_eq!(second.start_s, late);
    // It starts when the first is nearly done: it shares the node's controller less than
    // when both start together, and its time counts from its start.
    assert!(second.time_s < together.processes[1].time_s, "{} vs {}", second.time_s, together.processes[1].time_s);
    assert!(staggered.time_s >= late + second.time_s * 0.999);
    assert!(staggered.threads[1].time_s > late);
}

#[test]
fn a_start_time_that_is_not_finite_is_refused() {
    let m = machine2();
    let w = stream_like(8, 1, Pattern::Block, 1);
    let p = unpinned();
    let err = simulate_groups(&m, vec![group(&w, &p, f64::NAN)], &cfg()).unwrap_err().to_string();
    assert!(err.contains("start time must be finite"), "{err}");
}

#[test]
fn the_engines_bounds_hold_over_all_groups() {
    let m = machine2();
    let mut w = stream_like(1, 1, Pattern::Block, 1);
    w.processes = 1500; // each group alone is within the engine's bounds, the nine together not
    let p = unpinned();
    let groups = (0..9).map(|_| group(&w, &p, 0.0)).collect();
    let err = simulate_groups(&m, groups, &cfg()).unwrap_err().to_string();
    assert!(err.contains("the co-run's processes together") && err.contains("13500 threads"), "{err}");
}
