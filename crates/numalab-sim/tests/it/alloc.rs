//! The C library's writes at allocation time (docs/allocation.md §3.5).

use numalab_model::PolicyMode;
use numalab_sim::input::{AllocSpec, Pattern};
use numalab_sim::malloc::{By, Kind, Why};
use numalab_sim::{simulate, SimOutput, WorkloadSpec};

use crate::common::*;

fn with_alloc(mut w: WorkloadSpec, kind: Kind, by: By, chunks: u64) -> WorkloadSpec {
    w.regions[0].alloc = Some(AllocSpec { kind, by, chunks, freed: false });
    w
}

fn run(w: &WorkloadSpec) -> SimOutput {
    let out = simulate(&machine4(), w, &pinned(policy(PolicyMode::Default, &[])), &cfg()).unwrap();
    assert_eq!(out.status, "ok", "{:?}", out.error);
    out
}

#[test]
fn rows_malloced_by_the_master_stay_on_its_node_when_written_in_parallel() {
    let w = stream_like(64, 16, Pattern::Block, 1);
    let rows = w.regions[0].bytes / 4096;
    let out = run(&with_alloc(w, Kind::Malloc, By::Master, rows));
    let master = out.threads[0].node as usize;
    let total: u64 = out.pages_per_node.iter().sum();
    // Rows of 4096 bytes are chunks of 4112: every page but one in 257 holds a header.
    assert!(out.pages_per_node[master] * 1000 >= total * 995, "{:?}", out.pages_per_node);
    assert!(total > 16384, "the chunks' headers make the region longer than its rows");
    let r = &out.alloc[0];
    assert_eq!((r.heap_chunks, r.mmap_chunks, r.arenas.clone()), (rows, 0, vec![0]));
    assert_eq!(r.touched.len(), 1);
    assert_eq!((r.touched[0].thread, r.touched[0].why), (0, Why::Header));
    assert_eq!(r.touched[0].per_node[master], r.touched[0].pages);
    // Faults taken at allocation are counted as the kernel counts any write fault.
    let hit: u64 = out.numastat.values().map(|s| s.numa_hit).sum();
    assert_eq!(hit, total);
}

#[test]
fn one_block_written_in_parallel_spreads() {
    let w = stream_like(64, 16, Pattern::Block, 1);
    let out = run(&with_alloc(w, Kind::Malloc, By::Master, 1));
    assert_eq!((out.alloc[0].mmap_chunks, out.alloc[0].touched[0].pages), (1, 1), "an mmapped chunk: its header page");
    for &p in &out.pages_per_node {
        assert!((p as f64 / 16385.0 - 0.25).abs() < 0.01, "{:?}", out.pages_per_node);
    }
}

#[test]
fn rows_malloced_by_a_worker_go_to_its_node() {
    let w = stream_like(16, 16, Pattern::Block, 1);
    let rows = w.regions[0].bytes / 4096;
    let out = run(&with_alloc(w, Kind::Malloc, By::Thread(5), rows));
    let node = out.threads[5].node as usize;
    assert_ne!(node, out.threads[0].node as usize, "spread placement puts thread 5 away from the master");
    assert_eq!(out.alloc[0].arenas, vec![1], "a worker's first malloc creates its own arena");
    let total: u64 = out.pages_per_node.iter().sum();
    assert!(out.pages_per_node[node] * 1000 >= total * 995, "{:?}", out.pages_per_node);
}

#[test]
fn calloc_of_reused_memory_is_written_by_the_caller() {
    let mut w = stream_like(1, 16, Pattern::Block, 1);
    // A scratch region of the same size, malloc'd and freed by thread 5 first.
    let mut tmp = w.regions[0].clone();
    tmp.name = "tmp".into();
    tmp.alloc = Some(AllocSpec { kind: Kind::Malloc, by: By::Thread(5), chunks: 16, freed: true });
    w.regions[0].alloc = Some(AllocSpec { kind: Kind::Calloc, by: By::Thread(5), chunks: 16, freed: false });
    w.regions.insert(0, tmp);
    w.phases.iter_mut().flat_map(|p| &mut p.accesses).for_each(|a| a.region = 1);
    let out = run(&w);
    let node = out.threads[5].node as usize;
    let r = &out.alloc[1];
    assert!(r.touched.iter().all(|t| t.thread == 5));
    assert!(r.touched.iter().any(|t| t.why == Why::Zeroing));
    assert_eq!(out.pages_per_node[node], r.pages, "{:?}", out.pages_per_node);
    assert_eq!(out.pages_per_node.iter().sum::<u64>(), r.pages, "the freed region holds no page");
}

#[test]
fn static_regions_behave_as_without_an_allocation() {
    let w = stream_like(16, 8, Pattern::Master, 2);
    let (a, b) = (run(&w), run(&with_alloc(w.clone(), Kind::Static, By::Master, 1)));
    assert_eq!((a.time_s, &a.pages_per_node, &a.access_map), (b.time_s, &b.pages_per_node, &b.access_map));
    assert!(b.alloc[0].touched.is_empty());
}

#[test]
fn huge_pages_written_by_two_threads_allocations_are_placed_whole() {
    // 16 threads each malloc their share of 4 KiB rows: each 2 MiB page holds headers of two or
    // more threads; the first to write it gets it whole, and every huge page is placed.
    let mut w = stream_like(64, 16, Pattern::Block, 0);
    w.regions[0].thp = true;
    let rows = w.regions[0].bytes / 4096;
    let out = run(&with_alloc(w, Kind::Malloc, By::EachThread, rows));
    let r = &out.alloc[0];
    let huge = r.bytes.div_ceil(2 << 20);
    assert_eq!(out.pages_per_node.iter().sum::<u64>(), huge * 512);
    assert_eq!(r.touched.iter().map(|t| t.pages).sum::<u64>(), huge * 512);
    assert_eq!(r.arenas, (0..16).collect::<Vec<u32>>());
}
