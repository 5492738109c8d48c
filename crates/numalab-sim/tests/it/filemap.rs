//! File mappings (docs/allocation.md §3.6): a fault fills the page cache with its read-around
//! window on the faulting node, so a thread reading its own block of a file also places the edge
//! of its neighbour's block; MADV_RANDOM reads only the faulting page.

use numalab_model::PolicyMode;
use numalab_sim::input::{FileSpec, Pattern};
use numalab_sim::simulate;

use crate::common::*;

/// Four threads, one per node, each reading its quarter of a 64 MiB file mapping (4096 pages
/// each): the threads start together, so each one's first fault comes long before its
/// neighbour reaches the end of its own block.
fn run(file: Option<FileSpec>) -> numalab_sim::SimOutput {
    let mut w = stream_like(64, 4, Pattern::Block, 1);
    w.regions[0].file = file;
    w.phases[0].accesses = vec![access(0, Pattern::Block, 1.0, 0.0)];
    simulate(&machine4(), &w, &pinned(policy(PolicyMode::Default, &[])), &cfg()).unwrap()
}

fn remote(out: &numalab_sim::SimOutput) -> u64 {
    let m = &out.access_map;
    (0..m.len()).flat_map(|i| (0..m.len()).map(move |j| (i, j))).filter(|(i, j)| i != j).map(|(i, j)| m[i][j]).sum()
}

#[test]
fn read_around_puts_a_neighbours_pages_on_the_faulting_node() {
    let out = run(Some(FileSpec { random: false }));
    assert_eq!(out.pages_per_node.iter().sum::<u64>(), 16384, "every page read into the page cache");
    // The first fault of each later thread reads 16 pages (half the 32-page window) back into
    // its neighbour's block: node 0 loses 16, node 3 gains 16.
    assert_eq!(out.pages_per_node, vec![4080, 4096, 4096, 4112]);
    assert!(remote(&out) > 0);
}

#[test]
fn madv_random_reads_each_page_on_its_reader_node() {
    let out = run(Some(FileSpec { random: true }));
    assert_eq!(out.pages_per_node, vec![4096; 4]);
    assert_eq!(remote(&out), 0);
}

#[test]
fn an_anonymous_region_read_first_maps_the_zero_page() {
    let out = run(None);
    assert_eq!(out.pages_per_node.iter().sum::<u64>(), 0);
}
