//! THP after the first fault (docs/allocation.md §3.2, `numalab_sim::khugepaged`): the v6.13
//! rule that a THP fault tries the local node alone and otherwise falls back to 4 KiB pages
//! (unless the region is MADV_HUGEPAGE), v3.13's remote huge pages, and khugepaged collapsing
//! fallen-back ranges at its default rate (8 ranges of 2 MiB per 10 s).

use numalab_model::PolicyMode;
use numalab_sim::input::{Pattern, PhaseSpec, RegionSpec, StepSpec, Sync};
use numalab_sim::khugepaged::ThpRegionOut;
use numalab_sim::{simulate, Kernel, SimConfig, SimOutput, WorkloadSpec};

use crate::common::{access, machine4_with_gib, pinned, policy};

/// One thread on node 0 fills its node with a 4 KiB `filler`, then first-writes a 64 MiB THP
/// region `big`, then sweeps it `reps` times at one second of compute each.
fn run(kernel: Kernel, madvised: bool, reps: u64) -> SimOutput {
    let m = machine4_with_gib(1.0);
    let region = |name: &str, mib: u64, thp: bool| RegionSpec { thp, ..RegionSpec::anonymous(name, mib << 20, mib) };
    let phase = |name: &str, region: usize, cycles: f64, wr: f64| PhaseSpec {
        name: name.into(),
        cycles,
        mlp: None,
        chain: 0.0,
        sync: Sync::Barrier,
        pipeline_steps: 1,
        accesses: vec![access(region, Pattern::Block, 1.0, wr)],
    };
    let w = WorkloadSpec {
        name: "thp".into(),
        description: String::new(),
        params: Default::default(),
        processes: 1,
        threads: 1,
        regions: vec![region("filler", 1022, false), region("big", 64, true)],
        phases: vec![phase("fill", 0, 1e6, 1.0), phase("init", 1, 1e6, 1.0), phase("sweep", 1, 2e9, 0.0)],
        instructions: Vec::new(),
        program: vec![
            StepSpec { phases: vec![0, 1], repeat: 1, timed: false },
            StepSpec { phases: vec![2], repeat: reps, timed: false },
        ],
    };
    let cfg = SimConfig { kernel, thp_madvised: vec![false, madvised], ..SimConfig::default() };
    simulate(&m, &w, &pinned(policy(PolicyMode::Default, &[])), &cfg).unwrap()
}

fn big(out: &SimOutput) -> &ThpRegionOut {
    out.thp.iter().find(|r| r.region == "big").expect("THP report of region big")
}

#[test]
fn a_v6_13_thp_fault_on_a_full_node_falls_back_to_base_pages_elsewhere() {
    let out = run(Kernel::V6_13, false, 1);
    let b = big(&out);
    let fallback: u64 = b.fault_fallback.iter().sum();
    assert!(fallback >= 30, "{b:?}");
    assert_eq!(b.fault_fallback[0], 0, "never on the full node: {b:?}");
    assert_eq!(out.vmstat.thp_fault_fallback, fallback);
    assert_eq!(out.vmstat.thp_fault_alloc + fallback, 32);
    // Every page is still accounted for: 32 ranges of 512 base pages outside node 0 or huge.
    assert_eq!(out.pages_per_node.iter().sum::<u64>(), (1022 + 64) * 256);
}

#[test]
fn madvised_regions_and_v3_13_take_a_remote_huge_page() {
    for (kernel, madvised) in [(Kernel::V6_13, true), (Kernel::V3_13, false)] {
        let out = run(kernel, madvised, 1);
        let b = big(&out);
        assert_eq!(b.fault_fallback.iter().sum::<u64>(), 0, "{kernel:?}: {b:?}");
        assert_eq!(b.fault_alloc.iter().sum::<u64>(), 32);
        assert!(b.fault_alloc[1..].iter().sum::<u64>() >= 30, "remote huge pages: {b:?}");
    }
}

#[test]
fn khugepaged_collapses_eight_ranges_per_ten_seconds_on_their_node() {
    // 15 sweeps of one second: khugepaged wakes 10 s after the first THP fault, scans 4096
    // base pages' worth = 8 ranges of 2 MiB, and collapses those mapped by base pages into huge
    // pages on the node that holds them.
    let short = run(Kernel::V6_13, false, 5);
    assert_eq!(short.vmstat.thp_collapse_alloc, 0, "no wake-up before 10 s");
    let out = run(Kernel::V6_13, false, 15);
    assert!(out.time_s > 10.0 && out.time_s < 20.0, "{}", out.time_s);
    let b = big(&out);
    assert_eq!(out.vmstat.thp_collapse_alloc, 8, "{b:?}");
    assert_eq!(out.vmstat.thp_collapse_alloc_failed, 0);
    // Collapsed where the fallen-back base pages were, not back on the faulting thread's node.
    for (n, (&c, &f)) in b.collapse_alloc.iter().zip(&b.fault_fallback).enumerate() {
        assert!(c <= f, "node {n}: {b:?}");
    }
    assert_eq!(out.pages_per_node, short.pages_per_node, "a collapse moves no page");
}
