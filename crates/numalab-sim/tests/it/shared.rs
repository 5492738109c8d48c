//! Segments shared by the processes of a co-run (`numalab_sim::simulate_shared`, docs/corun.md §6).

use numalab_model::PolicyMode;
use numalab_sim::input::Pattern;
use numalab_sim::{simulate, simulate_groups, simulate_shared, simulate_split, Kernel, SimOutput, WorkloadSpec};

use crate::common::*;

/// Both groups map their region "a" from one segment.
fn share_a() -> Vec<Vec<String>> {
    vec![vec!["a".into()], vec!["a".into()]]
}

fn total(map: &[Vec<u64>]) -> u64 {
    map.iter().flatten().sum()
}

/// A process on node 0 and, once it has written its array, one on node 1 (CPU 8).
fn staggered(w: &WorkloadSpec) -> f64 {
    simulate(&machine2(), w, &on_cpus(&[0]), &cfg()).unwrap().processes[0].time_s * 0.5
}

#[test]
fn a_shared_segment_is_allocated_once_by_its_first_toucher_and_used_by_both() {
    let m = machine2();
    let w = stream_like(16, 1, Pattern::Block, 4);
    let (p0, p1, late) = (on_cpus(&[0]), on_cpus(&[8]), staggered(&w));
    let groups = || vec![group(&w, &p0, 0.0), group(&w, &p1, late)];
    let private = simulate_groups(&m, groups(), &cfg()).unwrap();
    assert_eq!(private.pages_per_node, [4096, 4096], "each process first-touches its own copy");
    let out = simulate_shared(&m, groups(), &share_a(), &cfg()).unwrap();
    assert_eq!(out.status, "ok", "{:?}", out.error);
    // One set of pages, on the node of the process that wrote them first.
    assert_eq!(out.pages_per_node, [4096, 0]);
    // Each process maps the whole segment (as its numa_maps would show it).
    assert_eq!(out.processes[0].pages_per_node, [4096, 0]);
    assert_eq!(out.processes[1].pages_per_node, [4096, 0]);
    // The second process's accesses all go from node 1 to node 0; both processes' accesses count.
    assert!(out.access_map[1][0] > 0 && out.access_map[1][1] == 0, "{:?}", out.access_map);
    assert_eq!(private.access_map[1][0], 0, "{:?}", private.access_map);
    let (t_shared, t_private) = (total(&out.access_map) as f64, total(&private.access_map) as f64);
    assert!((t_shared / t_private - 1.0).abs() < 0.01, "{t_shared} vs {t_private}");
    // Without the declaration the same groups keep their own pages.
    let none = simulate_shared(&m, groups(), &[], &cfg()).unwrap();
    assert_eq!(serde_json::to_string(&none).unwrap(), serde_json::to_string(&private).unwrap());
}

#[test]
fn a_shared_segment_follows_its_own_policy_by_page_offset_whoever_faults() {
    let m = machine2();
    let mut w = stream_like(16, 1, Pattern::Block, 2);
    w.regions[0].policy = Some(policy(PolicyMode::Interleave, &[0, 1]));
    let (p0, p1) = (on_cpus(&[0]), on_cpus(&[8]));
    // Both start together: which process faults a page depends on timing, its node does not.
    let out = simulate_shared(&m, vec![group(&w, &p0, 0.0), group(&w, &p1, 0.0)], &share_a(), &cfg()).unwrap();
    assert_eq!(out.pages_per_node, [2048, 2048]);
    assert_eq!(out.processes[0].pages_per_node, out.processes[1].pages_per_node);
}

#[test]
fn shared_memory_takes_4k_pages_whatever_the_thp_mode() {
    let m = machine2();
    let mut w = stream_like(16, 1, Pattern::Block, 2);
    w.regions[0].thp = true;
    let p0 = on_cpus(&[0]);
    let out = simulate_shared(&m, vec![group(&w, &p0, 0.0), group(&w, &p0, 0.0)], &share_a(), &cfg()).unwrap();
    assert_eq!(out.pages_per_node, [4096, 0]);
    assert_eq!(out.vmstat.thp_fault_alloc, 0);
    let private = simulate_groups(&m, vec![group(&w, &p0, 0.0), group(&w, &p0, 0.0)], &cfg()).unwrap();
    assert!(private.vmstat.thp_fault_alloc > 0, "anonymous private memory gets huge pages");
}

#[test]
fn a_first_read_of_shared_memory_allocates_its_page() {
    let m = machine2();
    // The init phase only reads: private anonymous memory maps the zero page, shared memory
    // allocates (mm/shmem.c: shmem_fault).
    let mut w = stream_like(16, 1, Pattern::Block, 0);
    w.phases[0].accesses[0].wr = 0.0;
    let p0 = on_cpus(&[0]);
    let alone = simulate(&m, &w, &p0, &cfg()).unwrap();
    assert_eq!(alone.pages_per_node, [0, 0]);
    let out = simulate_shared(&m, vec![group(&w, &p0, 0.0), group(&w, &p0, 0.0)], &share_a(), &cfg()).unwrap();
    assert_eq!(out.pages_per_node, [4096, 0]);
}

fn balanced(kernel: Kernel, w: &WorkloadSpec, user: &WorkloadSpec, late: f64) -> SimOutput {
    let mut c = balancing(kernel);
    c.balancing.scan_delay_ms = 100;
    c.balancing.scan_period_min_ms = 100;
    let (p0, p1) = (on_cpus(&[0]), on_cpus(&[8]));
    let out = simulate_shared(&machine2(), vec![group(w, &p0, 0.0), group(user, &p1, late)], &share_a(), &c).unwrap();
    assert_eq!(out.status, "ok", "{:?}", out.error);
    out
}

#[test]
fn balancing_migrates_a_shared_page_once_for_every_mapping() {
    // Process 1 writes the segment on node 0 and ends; process 2 on node 1 then reads it for
    // long: its hinting faults move the pages to node 1, once each, and both mappings follow.
    let writer = stream_like(16, 1, Pattern::Block, 1);
    let user = stream_like(16, 1, Pattern::Block, 1500);
    let late = staggered(&writer) * 4.0;
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let out = balanced(kernel, &writer, &user, late);
        let v = &out.vmstat;
        assert_eq!(out.pages_per_node.iter().sum::<u64>(), 4096, "{kernel:?}: one set of pages");
        assert!(out.pages_per_node[1] > 2048, "{kernel:?}: {:?}", out.pages_per_node);
        assert_eq!(v.numa_pages_migrated, out.pages_per_node[1], "{kernel:?}: each page moved once");
        assert_eq!(out.processes[0].pages_per_node, out.pages_per_node, "{kernel:?}");
        assert_eq!(out.processes[1].pages_per_node, out.pages_per_node, "{kernel:?}");
    }
}

#[test]
fn a_shared_region_must_be_mapped_alike_and_named_in_each_workload() {
    let m = machine2();
    let w = stream_like(16, 1, Pattern::Block, 1);
    let p = on_cpus(&[0]);
    let run = |a: &WorkloadSpec, b: &WorkloadSpec, shared: &[Vec<String>]| {
        simulate_shared(&m, vec![group(a, &p, 0.0), group(b, &p, 0.0)], shared, &cfg()).unwrap_err().to_string()
    };
    let err = run(&w, &w, &[vec!["b".into()], vec![]]);
    assert!(err.contains("shared region 'b': workload toy has no such region (its regions: a)"), "{err}");
    let small = stream_like(8, 1, Pattern::Block, 1);
    let err = run(&w, &small, &share_a());
    assert!(err.contains("same size and kind") && err.contains("16777216 bytes"), "{err}");
    let mut bound = w.clone();
    bound.regions[0].policy = Some(policy(PolicyMode::Bind, &[1]));
    let err = run(&w, &bound, &share_a());
    assert!(err.contains("its policy is the segment's"), "{err}");
    let err = run(&w, &w, &[vec!["a".into(), "a".into()], vec![]]);
    assert!(err.contains("listed twice"), "{err}");
}

#[test]
fn threads_of_two_processes_faulting_on_a_shared_segment_join_one_numa_group() {
    // Both processes sweep the whole segment at once from two nodes: their hinting faults find
    // the other process's thread in the page's last_cpupid, and TNF_SHARED lets them group.
    let w = stream_like(16, 1, Pattern::Block, 1500);
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let out = balanced(kernel, &w, &w, 0.0);
        let ids: Vec<u32> = out.threads.iter().map(|t| t.sched.as_ref().map_or(0, |s| s.numa_group_id)).collect();
        assert!(ids[0] != 0 && ids[0] == ids[1], "{kernel:?}: {ids:?}");
    }
}

#[test]
fn processes_splitting_a_segment_each_first_touch_their_own_block() {
    let m = machine2();
    let w = stream_like(16, 2, Pattern::Block, 2);
    let (p0, p1) = (on_cpus(&[0, 1]), on_cpus(&[8, 9]));
    let groups = || vec![group(&w, &p0, 0.0), group(&w, &p1, 0.0)];
    let out = simulate_split(&m, groups(), &share_a(), &["a".into()], &cfg()).unwrap();
    assert_eq!(out.status, "ok", "{:?}", out.error);
    // Process 0 (node 0) initialises the first half, process 1 (node 1) the second.
    assert_eq!(out.pages_per_node, [2048, 2048]);
    // Each still maps the whole segment.
    assert_eq!(out.processes[0].pages_per_node, [2048, 2048]);
    assert_eq!(out.processes[1].pages_per_node, [2048, 2048]);
    // Every access is local, and together they sweep the segment once (not once each).
    assert_eq!(local_share(&out.access_map), 1.0, "{:?}", out.access_map);
    let whole = simulate_shared(&m, groups(), &share_a(), &cfg()).unwrap();
    let ratio = total(&out.access_map) as f64 / total(&whole.access_map) as f64;
    assert!((ratio - 0.5).abs() < 0.01, "{ratio}");
    // Deterministic.
    let again = simulate_split(&m, groups(), &share_a(), &["a".into()], &cfg()).unwrap();
    assert_eq!(serde_json::to_string(&out).unwrap(), serde_json::to_string(&again).unwrap());
}

#[test]
fn a_split_segment_gives_process_k_of_p_slice_k_in_group_order() {
    let m = machine2();
    let mut two = stream_like(16, 1, Pattern::Block, 1);
    two.processes = 2;
    let one = stream_like(16, 1, Pattern::Block, 1);
    let (p0, p1) = (on_cpus(&[0, 1]), on_cpus(&[8]));
    // Processes 0 and 1 on node 0, process 2 on node 1: 4096 pages in thirds. A page two
    // slices share goes to the process whose slice starts in it (it faults there first): 1365,
    // 1365, 1366.
    let out = simulate_split(&m, vec![group(&two, &p0, 0.0), group(&one, &p1, 0.0)], &share_a(), &["a".into()], &cfg())
        .unwrap();
    assert_eq!(out.pages_per_node, [2730, 1366]);
    // The other order: the node-1 process is first and takes the first third (1365 pages).
    let out = simulate_split(&m, vec![group(&one, &p1, 0.0), group(&two, &p0, 0.0)], &share_a(), &["a".into()], &cfg())
        .unwrap();
    assert_eq!(out.pages_per_node, [2731, 1365]);
}

#[test]
fn a_split_must_name_a_shared_segment() {
    let m = machine2();
    let w = stream_like(16, 1, Pattern::Block, 1);
    let p = on_cpus(&[0]);
    let err = simulate_split(&m, vec![group(&w, &p, 0.0), group(&w, &p, 0.0)], &share_a(), &["b".into()], &cfg())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("split segment 'b': no process maps a shared region of that name (shared segments: a)"),
        "{err}"
    );
}
