//! Tiered memory (docs/tiering.md): the kernel's memory tiers ([`tiers`]), reclaim-driven
//! demotion by kswapd and direct reclaim ([`demote`]), NUMA balancing's memory-tiering
//! promotion state ([`promote`], used by `crate::numa_balancing`), and weighted interleave's default
//! weights ([`weights`]).
//!
//! What the engine cannot represent exactly, and what it does instead:
//! - The LRU lists: the engine keeps no accessed bits, so reclaim takes a node's pages in the
//!   order of a clock hand over the address space (regions in address order, pages in order).
//!   For workloads whose pages are all in use (every numalab phase touches its regions each
//!   pass), the kernel's inactive-list tail is the oldest allocation, which this matches for
//!   data first written in address order.
//! - kswapd, one thread per node, runs beside the allocating threads from its wake-up until the
//!   node is balanced, at the copy rate of one thread (`migrate_copy_gbps` scaled by distance);
//!   the engine catches it up to the present before each general-path visit and at epoch ends.
//!   Its copies do not load the controllers nor take CPU time.
//! - `next_demotion_node()` picks at random among the preferred targets; the engine takes them
//!   in turn, which gives the same shares deterministically.

pub mod demote;
pub mod promote;
pub mod tiers;
pub mod weights;

pub use demote::Demotion;
pub use tiers::Tiers;

/// Whether a run needs the tiering machinery at all (keeps runs without it on their old path).
pub fn needed(b: &crate::input::Balancing) -> bool {
    b.demotion_enabled || b.memory_tiering
}
