//! First touch, policies, fallback and out-of-memory.

use numalab_model::PolicyMode;
use numalab_sim::alloc::build_zonelists;
use numalab_sim::input::Pattern;
use numalab_sim::{simulate, Kernel};

use crate::common::*;

#[test]
fn parallel_init_block_access_is_local_with_equal_concentration() {
    let m = machine4();
    let w = stream_like(256, 16, Pattern::Block, 3);
    let out = simulate(&m, &w, &pinned(policy(PolicyMode::Default, &[])), &cfg()).unwrap();
    assert_eq!(out.status, "ok");
    assert!(local_share(&out.access_map) > 0.999, "{:?}", out.access_map);
    for c in concentration(&out.access_map) {
        assert!((c - 0.25).abs() < 0.01, "{c}");
    }
    assert_eq!(out.pages_per_node, vec![16384; 4]);
}

#[test]
fn serial_init_puts_every_page_on_the_masters_node() {
    let m = machine4();
    let w = stream_like(256, 16, Pattern::Master, 2);
    let out = simulate(&m, &w, &pinned(policy(PolicyMode::Default, &[])), &cfg()).unwrap();
    let master_node = out.threads[0].node as usize;
    assert_eq!(out.pages_per_node.iter().sum::<u64>(), 65536);
    assert_eq!(out.pages_per_node[master_node], 65536);
    let conc = concentration(&out.access_map);
    assert!(conc[master_node] > 0.999);
}

#[test]
fn interleave_spreads_pages_and_accesses_evenly() {
    let m = machine4();
    let w = stream_like(256, 16, Pattern::Master, 2);
    let out = simulate(&m, &w, &pinned(policy(PolicyMode::Interleave, &[0, 1, 2, 3])), &cfg()).unwrap();
    for &p in &out.pages_per_node {
        assert!((p as f64 / 65536.0 - 0.25).abs() < 0.01, "{:?}", out.pages_per_node);
    }
    for c in concentration(&out.access_map) {
        assert!((c - 0.25).abs() < 0.01, "{c}");
    }
    // Every allocation got the node interleave chose.
    let hits: u64 = out.numastat.values().map(|s| s.interleave_hit).sum();
    assert_eq!(hits, 65536);
}

#[test]
fn bind_to_a_node_smaller_than_the_data_runs_out_of_memory() {
    let m = machine4_with_gib(0.25);
    let w = stream_like(512, 4, Pattern::Block, 1);
    let out = simulate(&m, &w, &pinned(policy(PolicyMode::Bind, &[2])), &cfg()).unwrap();
    assert_eq!(out.status, "out-of-memory");
    assert!(out.time_s > 0.0, "the time the run stopped");
    let msg = out.error.unwrap();
    assert!(msg.contains("node 2") && msg.contains("bind"), "{msg}");
}

#[test]
fn preferred_falls_back_along_the_preferred_nodes_list_when_full() {
    let m = machine4_with_gib(0.25);
    let w = stream_like(384, 4, Pattern::Master, 1);
    let out = simulate(&m, &w, &pinned(policy(PolicyMode::Preferred, &[3])), &cfg()).unwrap();
    assert_eq!(out.status, "ok");
    // Node 3 fills to its low watermark, then node 3's fallback list continues: 1 (16, and
    // lower id wins the tie with 2 via the kernel's boot-order tie-break) before 0 (22).
    let zl = build_zonelists(&m, Kernel::V6_13);
    assert_eq!(zl[3][0], 3);
    let next = zl[3][1];
    assert!(out.pages_per_node[3] > 60000 && out.pages_per_node[next] > 30000, "{:?} {:?}", out.pages_per_node, zl[3]);
    assert!(out.numastat[&format!("node{next}")].numa_miss > 0);
}

#[test]
fn fallback_order_is_by_distance_and_starts_local() {
    let m = machine4();
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let zl = build_zonelists(&m, kernel);
        for (l, list) in zl.iter().enumerate() {
            assert_eq!(list[0], l);
            assert_eq!(list.len(), 4);
            let d: Vec<u32> = list.iter().map(|&n| m.distances[l][n]).collect();
            assert!(d.windows(2).all(|w| w[0] <= w[1]), "{kernel:?} node {l}: {list:?}");
        }
    }
}

#[test]
fn interleave_node_is_the_page_number_mod_the_node_count_whoever_touches() {
    let m = machine4();
    let pol = pinned(policy(PolicyMode::Interleave, &[1, 2, 3]));
    // The same pages land on the same nodes whether the master or every thread writes them.
    let a = simulate(&m, &stream_like(64, 16, Pattern::Master, 0), &pol, &cfg()).unwrap();
    let b = simulate(&m, &stream_like(64, 16, Pattern::Block, 0), &pol, &cfg()).unwrap();
    assert_eq!(a.pages_per_node, b.pages_per_node);
    assert_eq!(a.pages_per_node[0], 0);
    let per: Vec<u64> = a.pages_per_node[1..].to_vec();
    assert!(per.iter().max().unwrap() - per.iter().min().unwrap() <= 1, "{per:?}");
}

#[test]
fn a_first_read_allocates_nothing() {
    let m = machine4();
    let mut w = stream_like(64, 4, Pattern::Block, 1);
    w.phases[0].accesses[0].wr = 0.0; // the "init" only reads
    let out = simulate(&m, &w, &pinned(policy(PolicyMode::Default, &[])), &cfg()).unwrap();
    assert_eq!(out.pages_per_node.iter().sum::<u64>(), 0);
    assert_eq!(out.numastat.values().map(|s| s.numa_hit).sum::<u64>(), 0);
}

#[test]
fn local_first_touch_counts_numa_hit_and_local_node() {
    let m = machine4();
    let out = simulate(&m, &stream_like(16, 4, Pattern::Block, 0), &pinned(policy(PolicyMode::Default, &[])), &cfg())
        .unwrap();
    let hit: u64 = out.numastat.values().map(|s| s.numa_hit).sum();
    let local: u64 = out.numastat.values().map(|s| s.local_node).sum();
    assert_eq!(hit, 4096);
    assert_eq!(local, 4096);
}
