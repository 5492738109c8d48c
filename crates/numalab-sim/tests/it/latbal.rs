//! The latency-balanced allocation policy (docs/allocation.md §12): on an idle machine it is
//! local allocation; node consistency keeps a process's pages on its preferred node until that
//! node runs low; the indicator is reported over time.

use numalab_model::PolicyMode;
use numalab_sim::input::Pattern;
use numalab_sim::latbal::LatBalConfig;
use numalab_sim::{simulate, SimConfig};

use crate::common::*;

fn latbal() -> SimConfig {
    let lb = LatBalConfig { threshold_ns: 10.0, window_ms: 1.0, sample_us: 500.0 };
    SimConfig { latency_balanced: Some(lb), ..SimConfig::default() }
}

#[test]
fn on_an_idle_machine_single_threaded_copies_allocate_locally() {
    let m = machine4();
    let mut w = stream_like(32, 1, Pattern::Block, 2);
    // Three copies on four nodes: one node stays without pages for the indicator's comparison
    // (imb_numa_nr is 1 on these 4-CPU nodes, so four copies would take a node each).
    w.processes = 3;
    let local = simulate(&m, &w, &unpinned(), &SimConfig::default()).unwrap();
    let lb = simulate(&m, &w, &unpinned(), &latbal()).unwrap();
    // Each copy allocates on the node it runs on, as the default policy does.
    assert_eq!(lb.pages_per_node, local.pages_per_node);
    assert!(lb.pages_per_node.iter().filter(|&&p| p > 0).count() > 1, "{:?}", lb.pages_per_node);
    let rep = lb.latency_balanced.expect("the policy reports");
    assert_eq!(rep.decisions.len(), 3);
    assert!(
        rep.decisions.iter().all(|d| d.balanced && d.node == d.cpu_node && d.why == "first"),
        "{:?}",
        rep.decisions
    );
    // The indicator per node over time: never below the idle local latency (100 ns here), and
    // higher on the node the copies load than on one they leave alone.
    assert!(!rep.series.is_empty());
    assert!(rep.series.iter().all(|(_, v)| v.len() == 4 && v.iter().all(|&x| x >= 100.0 - 1e-6)));
    let pages = &lb.pages_per_node;
    let busy = (0..4).max_by_key(|&k| pages[k]).unwrap();
    let idle = (0..4).find(|&k| pages[k] == 0).expect("a node without pages");
    let (_, mid) = &rep.series[rep.series.len() / 2];
    assert!(mid[busy] > mid[idle], "{mid:?}");
}

#[test]
fn node_consistency_keeps_a_process_on_one_node_until_it_runs_low() {
    // Four threads, one per node, each first-writing its quarter: the default policy spreads
    // the array over the four nodes; latency-balanced keeps it on the process's preferred node.
    let m = machine4();
    let w = stream_like(64, 4, Pattern::Block, 1);
    let p = pinned(policy(PolicyMode::Default, &[]));
    let spread = simulate(&m, &w, &p, &SimConfig::default()).unwrap();
    assert_eq!(spread.pages_per_node.iter().filter(|&&n| n > 0).count(), 4);
    let one = simulate(&m, &w, &p, &latbal()).unwrap();
    assert_eq!(one.pages_per_node.iter().filter(|&&n| n > 0).count(), 1, "{:?}", one.pages_per_node);
    assert_eq!(one.latency_balanced.as_ref().unwrap().decisions.len(), 1);

    // An array larger than a node: the preferred node fills to its low watermark, then the
    // choice is made again and the rest goes to another node.
    let small = machine4_with_gib(0.25);
    let w = stream_like(384, 4, Pattern::Block, 1);
    let out = simulate(&small, &w, &p, &latbal()).unwrap();
    let rep = out.latency_balanced.unwrap();
    let whys: Vec<&str> = rep.decisions.iter().map(|d| d.why).collect();
    assert_eq!(whys[0], "first");
    assert!(whys.contains(&"low"), "{whys:?}");
    let first = rep.decisions[0].node as usize;
    let node_pages = 256 * 256; // 0.25 GiB of 4 KiB pages
    assert!(out.pages_per_node[first] > node_pages * 9 / 10, "{:?}", out.pages_per_node);
    let used = out.pages_per_node.iter().filter(|&&n| n > 0).count();
    assert!(used <= 3, "pages follow the decisions, not the four threads: {:?}", out.pages_per_node);
}

#[test]
fn a_process_starting_on_a_loaded_node_allocates_on_the_lowest_latency_node() {
    use numalab_model::{CpuSet, MemPolicy};
    use numalab_sim::corun::Group;
    use numalab_sim::input::{Placement, Places, ProcBind};
    let on = |cpus: &[u32]| Placement {
        policy: MemPolicy::default_policy(),
        cpus: Some(CpuSet::from_indexes(cpus.iter().copied())),
        proc_bind: ProcBind::False,
        places: Places::Cores,
    };
    // Eight streaming threads on node 0's cores load its controller; 50 ms later a small
    // process starts on node 0 too (an SMT sibling).
    let m = machine2();
    let (big, small) = (stream_like(256, 8, Pattern::Block, 20), stream_like(16, 1, Pattern::Block, 2));
    let (pa, pb) = (on(&[0, 1, 2, 3, 4, 5, 6, 7]), on(&[16]));
    let groups = || {
        vec![
            Group { workload: &big, placement: &pa, start_s: 0.0, thp_madvised: &[] },
            Group { workload: &small, placement: &pb, start_s: 0.05, thp_madvised: &[] },
        ]
    };
    let default = numalab_sim::simulate_groups(&m, groups(), &SimConfig::default()).unwrap();
    assert_eq!(default.processes[1].pages_per_node, vec![16 * 256, 0], "first touch: its own node");
    let out = numalab_sim::simulate_groups(&m, groups(), &latbal()).unwrap();
    let rep = out.latency_balanced.unwrap();
    let late = rep.decisions.iter().find(|d| d.pid == 1).unwrap();
    assert!(!late.balanced && late.node == 1 && late.cpu_node == 0, "{late:?}");
    assert!(late.indicator_ns[0] > late.indicator_ns[1] + 10.0, "{late:?}");
    assert_eq!(out.processes[1].pages_per_node, vec![0, 16 * 256], "the lowest-latency node");
    // The big process decided at its start, on an idle machine: its own node.
    assert_eq!(out.processes[0].pages_per_node, default.processes[0].pages_per_node);
}
