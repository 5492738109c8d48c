//! From the policy in force to an allocation (docs/allocation.md §4): which node
//! the walk starts at, which nodes it may use, and the interleave index rule
//! `node = (ilx mod w)`-th set bit, with `ilx = vm_pgoff + offset = address >> page_shift`.

use numalab_model::{Machine, MemPolicy, PolicyMode};

use crate::alloc::{Allocator, Walk};

/// A policy with node sets translated to logical indexes once, for the hot path.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub mode: PolicyMode,
    /// Logical node indexes of the policy's nodes, ascending (= ascending OS index).
    pub nodes: Vec<usize>,
    pub mask: Vec<bool>,
    /// Weighted interleave: weight per entry of `nodes`, and their sum.
    pub weights: Vec<u64>,
    pub weight_sum: u64,
    /// `MPOL_F_NUMA_BALANCING` (bind only): NUMA balancing may migrate inside the mask (5.12+).
    pub numa_balancing: bool,
}

impl Resolved {
    pub fn new(p: &MemPolicy, m: &Machine) -> Self {
        let nodes: Vec<usize> = p.nodes.iter().filter_map(|os| m.node_logical(os)).collect();
        let mut mask = vec![false; m.nodes.len()];
        for &n in &nodes {
            mask[n] = true;
        }
        let weights: Vec<u64> = nodes.iter().map(|&n| p.weight(m.nodes[n].os_index) as u64).collect();
        let weight_sum = weights.iter().sum();
        Resolved {
            mode: p.mode,
            nodes,
            mask,
            weights,
            weight_sum,
            numa_balancing: p.flags.numa_balancing && p.mode == PolicyMode::Bind,
        }
    }

    /// The node interleave (or weighted interleave) gives to interleave index `ilx`.
    pub fn interleave_node(&self, ilx: u64) -> usize {
        match self.mode {
            PolicyMode::WeightedInterleave => {
                let mut t = ilx % self.weight_sum;
                for (i, &w) in self.weights.iter().enumerate() {
                    if t < w {
                        return self.nodes[i];
                    }
                    t -= w;
                }
                self.nodes[self.nodes.len() - 1]
            }
            _ => self.nodes[(ilx % self.nodes.len() as u64) as usize],
        }
    }

    /// Where a first write would most likely land (ignoring full nodes): for estimating mixes.
    pub fn expected_node(&self, ilx: u64, cpu_node: usize) -> usize {
        match self.mode {
            PolicyMode::Default | PolicyMode::Local => cpu_node,
            PolicyMode::Preferred => self.nodes[0],
            PolicyMode::Bind | PolicyMode::PreferredMany => {
                if self.mask[cpu_node] {
                    cpu_node
                } else {
                    self.nodes[0]
                }
            }
            PolicyMode::Interleave | PolicyMode::WeightedInterleave => self.interleave_node(ilx),
        }
    }

    /// Allocate `npages` for a fault at interleave index `ilx` by a CPU of node `cpu_node`.
    /// `None` = no node could supply the pages under this policy (an OOM for bind).
    pub fn allocate(&self, a: &mut Allocator, ilx: u64, cpu_node: usize, npages: u64) -> Option<usize> {
        match self.mode {
            PolicyMode::Default | PolicyMode::Local => a.alloc(cpu_node, None, cpu_node, npages, Walk::Normal, None),
            PolicyMode::Preferred => a.alloc(self.nodes[0], None, cpu_node, npages, Walk::Normal, None),
            PolicyMode::Bind => a.alloc(cpu_node, Some(&self.mask), cpu_node, npages, Walk::Normal, None),
            PolicyMode::PreferredMany => a
                .alloc(cpu_node, Some(&self.mask), cpu_node, npages, Walk::NoReclaim, None)
                .or_else(|| a.alloc(cpu_node, None, cpu_node, npages, Walk::Normal, None)),
            PolicyMode::Interleave | PolicyMode::WeightedInterleave => {
                let node = self.interleave_node(ilx);
                a.alloc(node, None, cpu_node, npages, Walk::Normal, Some(node))
            }
        }
    }
}
